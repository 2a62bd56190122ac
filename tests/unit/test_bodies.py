"""Request bodies read by orjson, and replies written by it, against the standard library.

`bodies.loads` reads most bodies with orjson and hands the rest to the standard library's
parser with our hooks (`_strict_loads`, the reader it replaced): the two must agree on
every body, on the verdict and on the value (types and key order included), and a
refusal must keep its reason. `render` must write what the standard library writes, but
for a float's exponent.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feed.http.responses import render
from feed.service import bodies
from feed.service.bodies import BadBody


def verdict(read: Any, body: bytes) -> tuple[str, str]:
    """("ok", the value's repr: it tells 1 from 1.0 and True, and keeps key order) or
    ("refused", the reason)."""
    try:
        return "ok", repr(read(body))
    except BadBody as exc:
        return "refused", str(exc)


def same(body: bytes) -> None:
    assert verdict(bodies.loads, body) == verdict(bodies._strict_loads, body), body


# Values as JSON holds them: ints of any size, finite floats, any text (lone surrogates too).
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**45), max_value=10**45)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_a_json_value_reads_the_same_both_ways(value: Any) -> None:
    text = json.dumps(value)  # ASCII, surrogates as escapes: lone ones included
    same(text.encode())
    same(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


@settings(max_examples=400, deadline=None)
@given(values, st.binary(max_size=3), st.integers(min_value=0))
def test_a_damaged_body_gets_the_same_verdict_and_reason_both_ways(
    value: Any, junk: bytes, where: int
) -> None:
    body = json.dumps(value).encode()
    at = where % (len(body) + 1)
    same(body[:at] + junk + body[at:])
    same(body[:at] + body[at + 1 :])


@pytest.mark.parametrize(
    "body",
    [
        b"-9999999999999999999",  # beyond int64: orjson would read -1e+19
        b"18446744073709551616",
        b"9" * 41,  # too long a number: refused, with the digits counted
        b'{"token": "12345678901234567890123"}',  # a long digit run in a string
        b"1e400",  # overflows to infinity: refused
        b"[NaN]",
        b"-Infinity",
        b'"\\ud800"',  # a lone surrogate: refused
        b'"\\ud83d\\ude00"',  # a pair is a character
        b"\xef\xbb\xbf{}",  # a BOM
        b"\xff",  # not UTF-8
        b"",
        b"  ",
        b'{"a": 1, "b": 2, "a": 3}',  # the last duplicate wins, in the first one's place
        b"[" * 33 + b"]" * 33,  # one level too deep
        b"[" * 32 + b"]" * 32,
        b"[" * 2000 + b"]" * 2000,  # past orjson's own limit
        b'"\x01"',  # a control character inside a string
        b"1.0",
        b"-0",
        b"4.9406564584124654e-324",
    ],
)
def test_edges_read_the_same_both_ways(body: bytes) -> None:
    same(body)


def test_the_usual_lookup_body_is_read_by_orjson_and_a_long_number_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    strict: list[bytes] = []
    original = bodies._strict_loads

    def counted(body: bytes) -> Any:
        strict.append(body)
        return original(body)

    monkeypatch.setattr(bodies, "_strict_loads", counted)
    slot = {"merchant_id": "m", "start_sec": "1764950400", "resource_ids": {"party_size": 4}}
    body = json.dumps({"merchant_id": "m", "slot_time": [slot] * 50}).encode()
    assert bodies.loads(body)["slot_time"][0] == slot
    assert strict == []
    assert bodies.loads(b"[-9999999999999999999]") == [-9999999999999999999]
    assert strict == [b"[-9999999999999999999]"]


def stdlib(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":")
    ).encode("utf-8")


def has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(has_float(v) for v in value)
    return False


@settings(max_examples=400, deadline=None)
@given(values)
def test_a_reply_is_written_as_the_standard_library_writes_it(value: Any) -> None:
    try:
        expected = stdlib(value)
    except UnicodeEncodeError:  # a lone surrogate cannot be UTF-8: refused both ways
        with pytest.raises(UnicodeEncodeError):
            render(value)
        return
    written = render(value)
    if has_float(value):  # the same value; a float's exponent may be written "1e-7"
        assert json.loads(written) == json.loads(expected)
        assert repr(json.loads(written)) == repr(json.loads(expected))
    else:
        assert written == expected
    assert render(json.loads(written)) == written  # a stored reply replays byte for byte


def test_a_reply_orjson_will_not_write_is_written_by_the_standard_library() -> None:
    assert render({"n": 2**70, "b": [1]}) == b'{"b":[1],"n":1180591620717411303424}'
    assert render({2: "x", 1: "y"}) == b'{"1":"y","2":"x"}'
    assert render({"z": 1, "é": 2, "a": 3}) == '{"a":3,"z":1,"é":2}'.encode()
    assert math.isclose(json.loads(render({"f": 1e-7}))["f"], 1e-7)
