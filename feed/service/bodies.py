"""Request bodies as JSON values, read strictly and within bounds, or refused with a reason.

Every route that takes JSON (webhooks, v3, the host API) reads it here, so a body either
becomes a value every later step can handle (echo, validate, store, write back) or is
refused up front as malformed: nothing deeper than MAX_DEPTH (the parser and the
validators recurse), no integer longer than MAX_DIGITS, no float that is not finite, no
NaN or Infinity, no text with an unpaired surrogate (it cannot be written as UTF-8), and
no text with a NUL character (\\u0000): ids in it become keys of the store, and PostgreSQL's
text cannot hold a NUL, so one store would keep what the other fails on (a 500 there).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

MAX_DEPTH = 32  # the partner's deepest real body nests 4 levels
MAX_DIGITS = 40  # an int64 is 19 digits; anything far longer is not a number we use

_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")  # a surrogate escape: look closer
_NUL_ESCAPE = b"\\u0000"  # the only way a JSON text holds a NUL (raw ones are refused)
# orjson reads an integer beyond 64 bits as a float (-9999999999999999999 is -1e+19):
# a body with a run of 19 digits anywhere (a long token in a string included) is read by
# the standard library's parser, which keeps every integer exact.
_ZERO_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGIT_RUN = b"0" * 19


class BadBody(ValueError):
    """The body is not JSON we accept; the message says why, after "body is "."""


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise BadBody(f"holding a number of {len(text.lstrip('-'))} digits (at most {MAX_DIGITS})")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadBody(f"holding a number out of range ({text[:20]})")
    return value


def _constant(name: str) -> Any:
    raise BadBody(f"holding {name}, which is not a JSON number")


def _too_deep(body: bytes, value: Any) -> bool:
    """Does the value nest arrays and objects deeper than MAX_DEPTH? (Walked a level at a
    time, without recursion, and only when the text has enough brackets to be that deep.)"""
    if body.count(b"[") + body.count(b"{") <= MAX_DEPTH:
        return False  # cannot be that deep: the usual case costs two counts
    level = [value]  # the arrays and objects at depth 1, then 2, ...
    for _ in range(MAX_DEPTH):
        level = [
            child
            for node in level
            for child in (node.values() if type(node) is dict else node)
            if type(child) is dict or type(child) is list
        ]
        if not level:
            return False
    return True  # something sits at depth MAX_DEPTH + 1


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def _no_nul(body: bytes, value: Any) -> Any:
    """`value`, or BadBody if a text in it holds a NUL (looked for only when the body has
    the escape: "\\\\u0000" is a backslash and "u0000", no NUL)."""
    if _NUL_ESCAPE in body and _has_nul(value):
        raise BadBody("holding text with a NUL character (\\u0000)")
    return value


def loads(body: bytes, empty: Any = None) -> Any:
    """The JSON value of `body` (`empty` for an empty body when given), or BadBody.

    JSON over HTTP is UTF-8 (RFC 8259); other encodings are refused rather than guessed."""
    if not body.strip() and empty is not None:
        return empty
    if _LONG_DIGIT_RUN not in body.translate(_ZERO_DIGITS):
        # orjson refuses whatever the reader below refuses (invalid UTF-8, a lone
        # surrogate, NaN and Infinity, a float that overflows, a BOM, control characters
        # in strings) and reads the rest to the same values (tests/unit/test_bodies.py
        # holds the two to that, over random bodies), in a fifth of the time. What it
        # refuses goes on to the reader below, for its verdict and its reason.
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
        else:
            if _too_deep(body, value):
                raise BadBody(f"nested deeper than {MAX_DEPTH} levels")
            return _no_nul(body, value)
    return _strict_loads(body)


def _strict_loads(body: bytes) -> Any:
    """`loads` by the standard library's parser, with hooks that refuse what we do not
    accept and say why."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadBody(f"not JSON: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        value = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except BadBody:
        raise
    except RecursionError:  # the C parser's own limit, far above ours
        raise BadBody(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise BadBody(f"not JSON: {exc}") from None
    if _too_deep(body, value):
        raise BadBody(f"nested deeper than {MAX_DEPTH} levels")
    if _LONE_SURROGATE.search(text) and _has_lone_surrogate(value):
        raise BadBody("holding text with an unpaired surrogate")
    return _no_nul(body, value)
