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


# What a host can dial from the restaurant's own phone: a number written in digits (with the
# same separators), 6 to 15 of them, "+" and the country code for one abroad.
_DIALLABLE = re.compile(r"\+?[0-9]{6,15}")


def diallable(text: str) -> str:
    """`text` kept as written when it is a number the host can dial from the restaurant
    (national, or international in E.164 once reduced: `e164`'s checks), or ValueError.
    Looser than `e164` on purpose: a national number is callable from the restaurant, and a
    partner's booking is not refused for the way its guest wrote a good number."""
    if text.lstrip().startswith("+"):
        e164(text)
        return text
    if not _DIALLABLE.fullmatch(_SEPARATORS.sub("", text)):
        raise ValueError(
            "must be a telephone number the host can call: 6 to 15 digits, written with"
            " spaces, dashes, dots or brackets if you like, '+' and the country code for a"
            f" number abroad, such as '020 7946 0000' or '+44 20 7946 0000' (got {text!r})"
        )
    return text
