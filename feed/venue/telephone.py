"""A telephone number as partners take it: E.164, a "+" and 7 to 15 digits, the first not 0.

Written forms reduce to it by dropping spaces and punctuation only; a number that does not
reduce (national, too short or long, or with a national trunk "(0)") is refused with why,
never sent on as something the partner would refuse or dial wrongly."""

from __future__ import annotations

import re

E164 = re.compile(r"\+[1-9][0-9]{6,14}")
_SEPARATORS = re.compile(r"[\s\-.()/]")
# "+44 (0)20 7946 0000": the (0) is dialled at home only; kept, it would give +44020...
_TRUNK = re.compile(r"\(\s*0")


def e164(text: str) -> str:
    """`text` reduced to E.164 ("+44 20 7946 0000" -> "+442079460000"), or ValueError."""
    if _TRUNK.search(text):
        raise ValueError(
            f"leave out the national trunk prefix in brackets, as in '+44 20 7946 0000' "
            f"(got {text!r})"
        )
    reduced = _SEPARATORS.sub("", text)
    if not E164.fullmatch(reduced):
        raise ValueError(
            "must be an international number in E.164 form: '+', the country code and the "
            f"number, 7 to 15 digits in all, such as '+44 20 7946 0000' (got {text!r})"
        )
    return reduced
