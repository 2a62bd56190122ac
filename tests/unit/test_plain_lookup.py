"""feed.service.partner_api reads lookups in the plain shape without pydantic; the verdict must stay
pydantic's. Whenever `_plain_lookup` answers, `LookupRequest` (after snake_case) accepts the
same payload and reads the same merchant and, per slot, the same echo, service, start,
duration and party size (same values of the same types); and `PartnerApi.lookup` replies
exactly as it does with the plain reader switched off.

Payloads are generated from the plain shape (either spelling of every key, ints and digit
strings in range) with a few things made odd: a value of another kind (digit strings with
leading zeros, non-ASCII digits, floats, bools, None, negatives, out of range), both
spellings of one key, an unknown key, a missing field, the wrong container.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import feed.service.partner_api
from feed.service.days import DayBook
from feed.service.partner_api import LookupRequest, PartnerApi, _plain_lookup, parse, snake_case
from feed.service.replies import Reply
from feed.settings import Partner
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)  # Friday, dinner running (London = UTC)
MARLOWES = "marlowes-kitchen"
SERVICE = "1000"
PARTNER = Partner(id="tablefinder", secret=None, merchants=None)
TURNS = {2: 2700, 4: 4200, 6: 5400, 8: 7200}


def camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(word.title() for word in rest)


def at(day: int, hhmm: str) -> int:
    hour, minute = (int(part) for part in hhmm.split(":"))
    return int(datetime(2026, 12, day, hour, minute, tzinfo=UTC).timestamp())


# Starts the restaurant publishes (and a few it does not): on the grid of 15 minutes, lunch
# and dinner, the 4th (already started or past) to the 12th; also off the grid and closed days.
REAL_STARTS = [
    *sorted(
        {
            int((datetime(2026, 12, d, 12, 0, tzinfo=UTC) + timedelta(minutes=15 * i)).timestamp())
            for d in range(4, 13)
            for i in range(0, 40)
        }
    ),
    at(7, "19:07"),
    at(25, "19:00"),
    at(4, "17:45"),
    0,
]
FULL_SLOT = at(7, "19:00")  # every table taken by the fixture's bookings

# -- values -----------------------------------------------------------------------------------

NON_ASCII_DIGITS = [  # str.isdigit() says yes to all of these; int() to most
    "\u0661\u0662",  # Arabic-Indic 12
    "\u0665",  # Arabic-Indic 5
    "\u06f1\u06f2",  # Extended Arabic-Indic 12
    "\u0967\u0968",  # Devanagari 12
    "\uff11\uff12",  # fullwidth 12
    "\u00b2",  # superscript two
    "\u07c1",  # NKo one
    "1\u0662",
]
ODD_NUMBERS = ["", " 5", "5 ", "+5", "-0", "-1", "5_000", "1e3", "5.0", "0x10", "½", "0 "]
WRONG = st.one_of(
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(
        st.sampled_from(["a", "partySize", "start_sec"]), st.integers(0, 3), max_size=2
    ),
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=2)
        | st.dictionaries(st.sampled_from(["a", "deepKey", "party_size"]), inner, max_size=2)
    ),
    max_leaves=4,
)
UNKNOWN_KEYS = st.sampled_from(
    [
        "MerchantId",
        "merchant_Id",
        "merchantID",
        "SlotTime",
        "slot_times",
        "StartSec",
        "start_Sec",
        "startsec",
        "start_sec ",
        "resources",
        "PartySize",
        "partysize",
        "serviceID",
        "",
        "x",
    ]
)
# Strings, lone surrogates included: the slots' optional strs take them, merchant_id does not.
SLOT_TEXT = st.one_of(
    st.sampled_from([SERVICE, "999", "", "\u0661\u0662", "\ud800", "a\udc00b", "1000 "]),
    st.text(max_size=5),
)
ASCII_TEXT = st.text(st.characters(codec="ascii"), max_size=5)
KNOWN_MERCHANTS = [MARLOWES, "merch1", "nowhere", "Marlowes-Kitchen", "marlowes-kitchen "]
MERCHANTS = st.one_of(
    st.sampled_from([*KNOWN_MERCHANTS, "\ud800", "caf\u00e9"]), st.text(min_size=1, max_size=5)
)


def in_range(numbers: st.SearchStrategy[int]) -> st.SearchStrategy[int | str]:
    """A plain int: the number or its digits."""
    return numbers.flatmap(lambda n: st.sampled_from([n, str(n)]))


def maybe_in_range(numbers: st.SearchStrategy[int | None]) -> st.SearchStrategy[int | str | None]:
    return numbers.flatmap(lambda n: st.just(None) if n is None else st.sampled_from([n, str(n)]))


def any_number(high: int) -> st.SearchStrategy[Any]:
    """Anything a partner might send for an int in 0..high, right or wrong; near misses
    (just out of range, bools, whole floats, padded or foreign digits) half the time."""
    near = [high + 1, str(high + 1), -5, "-5", True, False, 2.0, "0012", "\u0661", " 5", "5.0"]
    return st.sampled_from(near) | st.one_of(
        st.integers(-1000, high + 1000),
        st.integers(-1000, -2),  # (-1 is also the reader's "no int")
        st.integers(-(2**70), 2**70),
        st.sampled_from(
            [-1, 0, 1, high, high + 1, 1000, 1001, 10**9, 10**9 + 1, 10**11, 10**11 + 1]
        ),
        st.integers(0, 10**13).map(str),
        st.text("0123456789", min_size=1, max_size=14),  # leading zeros, "0", "00", long
        st.sampled_from(["0", "00", "0012", "007", "9" * 12, str(high), str(high + 1), "9" * 40]),
        st.sampled_from(NON_ASCII_DIGITS + ODD_NUMBERS),
        st.floats(),
        st.sampled_from([0.0, -0.0, 1.0, 2.0, 5.5, float(high), float(high + 1)]),
        st.booleans(),
        st.none(),
        WRONG,
        st.text(max_size=4),
    )


def other_text() -> st.SearchStrategy[Any]:
    """Not a plain text field: another type, or text that is not ASCII."""
    return st.one_of(
        st.booleans(),
        st.integers(-2, 2),
        st.floats(),
        WRONG,
        st.sampled_from(["\ud800", "a\udc00b", "caf\u00e9", "\u0661\u0662"]),
    )


def anything() -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.floats(), SLOT_TEXT, WRONG)


ONE_ODD_THING = -1  # an oddness: exactly one thing made odd
FIELD_KINDS = ("absent", "both spellings", "value")


@dataclass(frozen=True)
class Plain:
    """What the plain values of a payload are drawn from."""

    merchants: st.SearchStrategy[str]
    services: st.SearchStrategy[str | None]
    texts: st.SearchStrategy[str]  # availability tags, room and staff ids
    starts: st.SearchStrategy[int]
    durations: st.SearchStrategy[int | None]
    sizes: st.SearchStrategy[int | None]
    slot_counts: st.SearchStrategy[int]  # slots per lookup
    oddness: st.SearchStrategy[int]  # how many decisions in 30 make something odd (or -1)
    required: frozenset[str]  # fields always there (unless made odd), at any level


# The plain shape as feed.service.partner_api describes it: known keys in either spelling, ints or
# digit strings in range; strings in ASCII (other text is left to pydantic since e923b68).
WIDE = Plain(
    merchants=st.sampled_from(KNOWN_MERCHANTS) | ASCII_TEXT.filter(bool),
    services=st.none() | st.sampled_from([SERVICE, "999", ""]) | ASCII_TEXT,
    texts=ASCII_TEXT,
    starts=st.one_of(st.sampled_from(REAL_STARTS), st.integers(0, 10**11)),
    durations=st.none() | st.sampled_from([0, 60, *TURNS.values()]) | st.integers(0, 10**9),
    sizes=st.none() | st.integers(0, 12) | st.integers(0, 1000),
    slot_counts=st.integers(0, 4),
    oddness=st.sampled_from([ONE_ODD_THING] * 6 + [0, 3, 12]),
    required=frozenset({"merchant_id", "start_sec"}),
)
REAL = Plain(  # mostly slots Marlowe's publishes, so that some are open and some full
    merchants=st.sampled_from([MARLOWES] * 9 + ["merch1"]),
    services=st.sampled_from([SERVICE, SERVICE, None, "999"]),
    texts=ASCII_TEXT,
    starts=st.one_of(
        st.sampled_from([FULL_SLOT, at(7, "21:30"), at(8, "13:00"), at(4, "19:00")]),
        st.sampled_from(REAL_STARTS),
        WIDE.starts,
    ),
    durations=st.one_of(st.none(), st.sampled_from(sorted(TURNS.values())), WIDE.durations),
    sizes=st.one_of(st.integers(1, 8), st.integers(1, 8), WIDE.sizes),
    slot_counts=st.integers(1, 6),
    oddness=st.sampled_from([0, 0, ONE_ODD_THING, ONE_ODD_THING, 1, 2]),
    required=frozenset({"merchant_id", "slot_time", "start_sec", "resource_ids", "party_size"}),
)

Fields = dict[str, tuple[Callable[[], Any], Callable[[], Any]]]  # name -> (plain, odd) makers


LEVELS = {  # the objects of a lookup and their fields
    "lookup": ("merchant_id", "slot_time"),
    "slot": ("service_id", "start_sec", "duration_sec", "availability_tag", "resource_ids"),
    "resources": ("party_size", "room_id", "staff_id"),
}
# Where a near miss (ONE_ODD_THING) makes its one odd thing: a field left out (or put in),
# given in both spellings or given another value; an object of the wrong type or with an
# unknown key; a slot list at or past its limit.
SITES = [
    *((name, kind) for names in LEVELS.values() for name in names for kind in FIELD_KINDS),
    *((name, "value") for names in LEVELS.values() for name in names),  # values more often
    *((name, "value") for name in ("start_sec", "duration_sec", "party_size") for _ in range(3)),
    *((level, kind) for level in LEVELS for kind in ("container", "unknown key")),
    ("slot_time", "limit"),
]


@st.composite
def payloads(draw: st.DrawFn, values: Plain = WIDE, plain_only: bool = False) -> Any:
    """A lookup in the plain shape, or (unless `plain_only`) one with some things made odd:
    either exactly one (a near miss) or each decision with a chance of `rate` in 30."""
    rate = 0 if plain_only else draw(values.oddness)
    site, nth, seen = ("", ""), 0, 0
    forced: set[str] = set()  # the fields on the way to the odd thing, always there
    if rate == ONE_ODD_THING:
        site, nth = draw(st.sampled_from(SITES)), draw(st.integers(0, 1))
        forced.add(site[0])
        if site[0] in ("slot", "resources", *LEVELS["slot"], *LEVELS["resources"]):
            forced.add("slot_time")
        if site[0] in ("resources", *LEVELS["resources"]):
            forced.add("resource_ids")

    def odd(where: str, kind: str) -> bool:
        nonlocal seen
        if rate == ONE_ODD_THING:
            if (where, kind) != site:
                return False
            seen += 1  # the nth slot (the lookup and its fields come once)
            return seen == nth + 1 or (seen == 1 and where in ("lookup", *LEVELS["lookup"]))
        # Not at the ends, which Hypothesis favours; shrinking (towards 0) makes things plain.
        return 0 < draw(st.integers(0, 29)) <= rate

    def obj(level: str, fields: Fields) -> Any:
        if odd(level, "container"):
            return draw(anything())
        items: list[tuple[str, Any]] = []
        for name in LEVELS[level]:
            plain, other = fields[name]
            present = name in values.required or name in forced or draw(st.booleans())
            if odd(name, "absent"):
                present = not present
            if not present:
                continue
            spellings = [draw(st.sampled_from([name, camel(name)]))]
            if odd(name, "both spellings"):
                spellings = draw(st.permutations([name, camel(name)]))
            for key in spellings:
                items.append((key, other() if odd(name, "value") else plain()))
        if odd(level, "unknown key"):
            items.append((draw(UNKNOWN_KEYS), draw(JSON)))
        return dict(draw(st.permutations(items)))

    def optional(strategy: st.SearchStrategy[Any]) -> Callable[[], Any]:
        return lambda: draw(st.none() | strategy)

    def resources() -> Any:
        return obj(
            "resources",
            {
                "party_size": (
                    lambda: draw(maybe_in_range(values.sizes)),
                    lambda: draw(any_number(1000)),
                ),
                "room_id": (optional(values.texts), lambda: draw(other_text())),
                "staff_id": (optional(values.texts), lambda: draw(other_text())),
            },
        )

    def slot() -> Any:
        return obj(
            "slot",
            {
                "service_id": (lambda: draw(values.services), lambda: draw(other_text())),
                "start_sec": (
                    lambda: draw(in_range(values.starts)),
                    lambda: draw(any_number(10**11)),
                ),
                "duration_sec": (
                    lambda: draw(maybe_in_range(values.durations)),
                    lambda: draw(any_number(10**9)),
                ),
                "availability_tag": (optional(values.texts), lambda: draw(other_text())),
                "resource_ids": (resources, lambda: draw(anything())),
            },
        )

    def slots() -> list[Any]:
        if odd("slot_time", "limit") and (rate == ONE_ODD_THING or draw(st.integers(0, 4)) == 0):
            return [slot()] * draw(st.sampled_from([1000, 1001]))
        count = draw(values.slot_counts)
        if "slot_time" in forced and site[0] != "slot_time":
            count = max(count, nth + 1)  # the odd thing is in slot `nth`: let it be there
        return [slot() for _ in range(count)]

    return obj(
        "lookup",
        {
            "merchant_id": (lambda: draw(values.merchants), lambda: draw(anything() | MERCHANTS)),
            "slot_time": (slots, lambda: draw(anything())),
        },
    )


NEAR_NUMBERS: list[Any] = [
    *(True, False, 2.0, 2.5, -0.0, -5, "-5", "+5", " 5", "5 ", "5.0", "1_000", ""),
    *("0012", "00", "9" * 13, "\u0661\u0662", "\uff11", "\u00b2", [], {}, [2], None),
]
NEAR_TEXTS = [5, 0, True, 1.5, [], {}, ["1000"], "caf\u00e9", "\ud800", "a\udc00b", "\u0661"]
NEAR_FIELDS = {  # where a near miss goes: (level, field) -> its near-miss values
    ("slot", "start_sec"): st.sampled_from([10**11 + 1, str(10**11 + 1), *NEAR_NUMBERS]),
    ("slot", "duration_sec"): st.sampled_from([10**9 + 1, str(10**9 + 1), *NEAR_NUMBERS]),
    ("resources", "party_size"): st.sampled_from([1001, "1001", *NEAR_NUMBERS]),
    ("slot", "service_id"): st.sampled_from(NEAR_TEXTS),
    ("slot", "availability_tag"): st.sampled_from(NEAR_TEXTS),
    ("resources", "room_id"): st.sampled_from(NEAR_TEXTS),
    ("resources", "staff_id"): st.sampled_from(NEAR_TEXTS),
    ("lookup", "merchant_id"): st.sampled_from(["", *NEAR_TEXTS]),
}


@st.composite
def near_misses(draw: st.DrawFn) -> Any:
    """A lookup in the plain shape with one field of one slot (or the merchant) given a value
    just outside it: out of range by one, a bool, a whole float, padded or foreign digits,
    another type, text that is not ASCII."""
    payload = draw(payloads(plain_only=True))
    level, name = draw(st.sampled_from(list(NEAR_FIELDS)))
    value = draw(NEAR_FIELDS[level, name])
    if level == "lookup":
        target = payload
    else:
        slots = payload.setdefault("slotTime" if "slotTime" in payload else "slot_time", [])
        if not slots:
            slots.append({"start_sec": draw(in_range(WIDE.starts))})
        target = draw(st.sampled_from(slots))
        if level == "resources":
            key = "resourceIds" if "resourceIds" in target else "resource_ids"
            target = target.setdefault(key, {})
    for key in (name, camel(name)):  # the same spelling as the plain payload, if it has one
        if key in target:
            target[key] = value
            break
    else:
        target[draw(st.sampled_from([name, camel(name)]))] = value
    return payload


# -- comparing --------------------------------------------------------------------------------


def strict(value: Any) -> Any:
    """`value` as nested tuples that also say each type: True is not 1, 5.0 is not 5."""
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), strict(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("list", tuple(strict(v) for v in value))
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def assert_same_reading(payload: Any) -> bool:
    """If the plain reader reads `payload`, pydantic reads the same; whether it read it."""
    before = strict(copy.deepcopy(payload))
    plain = _plain_lookup(payload)
    assert strict(payload) == before  # the payload is not changed
    if plain is None:
        return False
    normalised = snake_case(payload)
    parsed = parse(LookupRequest, normalised, normalised=True)
    assert not isinstance(parsed, Reply), (plain, parsed)
    merchant_id, slots = plain
    assert strict(merchant_id) == strict(parsed.merchant_id)
    echoes = normalised.get("slot_time", [])
    assert len(slots) == len(parsed.slot_time) == len(echoes)
    for (echo, service_id, start, duration, size), want, t in zip(
        slots, echoes, parsed.slot_time, strict=True
    ):
        party_size = t.resource_ids.party_size if t.resource_ids else None
        assert strict(echo) == strict(want)
        assert strict(service_id) == strict(t.service_id)
        assert strict(start) == strict(t.start_sec)
        assert strict(duration) == strict(t.duration_sec)
        assert strict(size) == strict(party_size)
    return True


# -- the reading ------------------------------------------------------------------------------


def slow_lookup(payload: Any) -> None:
    return None


@settings(max_examples=300, deadline=None)
@given(payloads())
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": "0012"}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": "0"}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": "100000000000"}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": "100000000001"}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": "9" * 40}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": "\u0661\u0662"}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": True}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": 5.0}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": None}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": -1}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": -5}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": 10**11 + 1}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "duration_sec": 10**9 + 1}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "duration_sec": False}]})
@example(
    {"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "resource_ids": {"party_size": 1001}}]}
)
@example(
    {"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "resource_ids": {"partySize": "01"}}]}
)
@example(
    {"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "resource_ids": {"party_size": True}}]}
)
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "startSec": 2}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "resource_ids": None}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "resource_ids": []}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "service_id": 1000}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "availability_tag": 1.5}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "resource_ids": {"room_id": 5}}]})
@example(
    {"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "resourceIds": {"staffId": True}}]}
)
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": 1, "note": "x"}]})
@example({"merchant_id": MARLOWES, "merchantId": "merch1"})
@example({"merchant_id": MARLOWES, "slot_time": [], "slotTime": []})
@example({"merchant_id": MARLOWES, "slot_time": {"start_sec": 1}})
@example({"merchant_id": MARLOWES, "slot_time": [[1]]})
@example({"merchant_id": 7})
@example({"merchant_id": ""})
@example({"MerchantId": MARLOWES})
@example({"slot_time": []})
@example([{"merchant_id": MARLOWES}])
def test_whatever_the_plain_reader_reads_pydantic_reads_the_same(payload: Any) -> None:
    read = assert_same_reading(payload)
    event("read by the plain reader" if read else "left to pydantic")


@settings(max_examples=100, deadline=None)
@given(payloads(plain_only=True))
@example({"merchantId": MARLOWES, "slotTime": [{"startSec": "0", "resourceIds": {}}]})
@example(
    {"merchant_id": MARLOWES, "slot_time": [{"start_sec": 10**11, "duration_sec": "1000000000"}]}
)
@example(
    {
        "merchant_id": MARLOWES,
        "slot_time": [{"start_sec": 1, "resource_ids": {"party_size": "1000"}}],
    }
)
def test_a_lookup_in_the_plain_shape_is_read_by_the_plain_reader(payload: Any) -> None:
    assert assert_same_reading(payload), payload  # not merely agreed: actually read


@settings(max_examples=300, deadline=None)
@given(near_misses())
def test_a_near_miss_is_read_as_pydantic_reads_it(payload: Any) -> None:
    read = assert_same_reading(payload)
    event("read by the plain reader" if read else "left to pydantic")


def test_a_thousand_slots_are_read_plainly_and_one_more_is_left_to_pydantic() -> None:
    one = {"startSec": str(FULL_SLOT), "resourceIds": {"partySize": 2}}
    assert assert_same_reading({"merchantId": MARLOWES, "slotTime": [one] * 1000})
    too_many = {"merchantId": MARLOWES, "slotTime": [one] * 1001}
    assert _plain_lookup(too_many) is None
    assert isinstance(parse(LookupRequest, snake_case(too_many), normalised=True), Reply)


# -- the whole reply --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def api() -> Iterator[PartnerApi]:
    """Marlowe's over a fresh store in a temporary directory, every table booked at Monday
    7 December 19:00, the clock at Friday 4 December 18:00."""
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "hoststand.db")
        try:
            book = DayBook(store, load_restaurant(REPO / "samples" / "marlowes.toml"))
            partner_api = PartnerApi({MARLOWES: book}, store, lambda: NOW)
            for i, size in enumerate([6, 4, 4, 4, 2, 2]):
                slot = {
                    "merchant_id": MARLOWES,
                    "start_sec": str(FULL_SLOT),
                    "resources": {"party_size": size},
                }
                user = {"user_id": f"fill-{i}"}
                reply = partner_api.create_booking(
                    PARTNER, {"slot": slot, "user_information": user}
                )
                assert reply.body["booking"]["status"] == "CONFIRMED", reply
            yield partner_api
        finally:
            store.close()


def both_replies(api: PartnerApi, payload: Any) -> tuple[Reply, Reply]:
    fast = api.lookup(PARTNER, payload)
    with mock.patch.object(feed.service.partner_api, "_plain_lookup", slow_lookup):
        slow = api.lookup(PARTNER, payload)
    return fast, slow


def test_the_fixture_has_open_and_full_slots(api: PartnerApi) -> None:
    asked = [
        {"start_sec": str(FULL_SLOT), "resource_ids": {"party_size": 2}},
        {"start_sec": str(at(7, "21:30")), "resource_ids": {"party_size": 2}},
    ]
    fast, slow = both_replies(api, {"merchant_id": MARLOWES, "slot_time": asked})
    assert fast == slow
    assert [a["available"] for a in fast.body["slot_time_availability"]] == [False, True]


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(payloads(REAL))
@example(
    {
        "merchantId": MARLOWES,
        "slotTime": [{"startSec": str(FULL_SLOT), "resourceIds": {"partySize": 2}}],
    }
)
@example(
    {
        "merchant_id": MARLOWES,
        "slot_time": [{"start_sec": at(7, "21:30"), "resource_ids": {"party_size": "2"}}],
    }
)
@example(
    {
        "merchant_id": MARLOWES,
        "slot_time": [
            {
                "start_sec": str(at(7, "21:30")),
                "duration_sec": 60,
                "resource_ids": {"party_size": 2},
            }
        ],
    }
)
@example(
    {
        "merchant_id": MARLOWES,
        "slot_time": [{"start_sec": True, "resource_ids": {"party_size": True}}],
    }
)
@example({"merchant_id": "merch1", "slot_time": [{"start_sec": 1}]})
@example({"merchant_id": MARLOWES, "slot_time": [{"start_sec": -1}]})
def test_lookup_replies_the_same_with_or_without_the_plain_reader(
    api: PartnerApi, payload: Any
) -> None:
    fast, slow = both_replies(api, payload)
    assert fast.code == slow.code
    assert strict(fast.body) == strict(slow.body)
    event("read by the plain reader" if _plain_lookup(payload) else "left to pydantic")
    answers = fast.body.get("slot_time_availability", []) if fast.code is None else []
    event(f"{fast.code or 'ok'}, some available: {any(a['available'] for a in answers)}")


# -- lone surrogates ---------------------------------------------------------------------------
# json.loads turns the escape "\ud800" into a str holding a lone surrogate. LookupRequest's
# merchant_id (a str with min_length) refuses it, while the slots' optional strs take it. At
# commit 67051fb the plain reader took any non-empty str as merchant_id, so it answered where
# pydantic would not and the 400 named an "unknown merchant" instead of pydantic's message;
# these tests (and now and then the first property) failed there.

SURROGATE_MERCHANT = {"merchant_id": "\ud800", "slot_time": []}


def test_a_merchant_id_pydantic_refuses_is_not_read_plainly() -> None:
    assert isinstance(parse(LookupRequest, SURROGATE_MERCHANT, normalised=True), Reply)
    assert _plain_lookup(SURROGATE_MERCHANT) is None


def test_a_lone_surrogate_merchant_gets_the_same_reply_either_way(api: PartnerApi) -> None:
    fast, slow = both_replies(api, SURROGATE_MERCHANT)
    assert fast == slow
    assert "merchant_id" in fast.body["error"]["message"]


@pytest.mark.parametrize("key", ["service_id", "availability_tag", "room_id", "staff_id"])
def test_a_lone_surrogate_in_a_slot_is_read_as_pydantic_reads_it(api: PartnerApi, key: str) -> None:
    slot: dict[str, Any] = {"start_sec": str(FULL_SLOT), "resource_ids": {"party_size": 2}}
    if key in ("room_id", "staff_id"):
        slot["resource_ids"][key] = "a\udc00"
    else:
        slot[key] = "a\udc00"
    payload = {"merchant_id": MARLOWES, "slot_time": [slot]}
    assert_same_reading(payload)
    fast, slow = both_replies(api, payload)
    assert strict(fast.body) == strict(slow.body) and fast.code is None and slow.code is None
