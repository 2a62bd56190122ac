"""The feed's promise with issue #14's rules on (Hypothesis over random floors, caps and
bookings): when partners are shown k open spots for n, k partner bookings of n at that slot
all succeed and the next fails, whatever the host booked there before (walk-in tables
included, over pacing included)."""

from __future__ import annotations

import tempfile
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from feed.service.days import Applied, DayBook
from feed.venue import calendar
from feed.venue.restaurant import Restaurant, parse_restaurant
from store.sqlite import SQLiteStore

DAY = date(2026, 12, 3)
NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
HOURS = [{"open": "18:00", "close": "23:00", "last_seating": "21:00"}]


def restaurant(
    tables: list[tuple[int, bool]],
    combos: list[tuple[int, int]],
    covers: int | None,
    parties: int | None,
    online_limit: int,
) -> Restaurant:
    data: dict[str, Any] = {
        "merchant_id": "prop",
        "name": "Prop",
        "timezone": "Europe/Dublin",
        "telephone": "+353 1 555 0100",
        "url": "https://prop.example.ie/",
        "address": {
            "street_address": "1 Quay",
            "locality": "Dublin",
            "country": "IE",
            "postal_code": "D02",
        },
        "geo": {"latitude": 53.3, "longitude": -6.2},
        "hours": {day: HOURS for day in ("thursday",)},
        "max_online_party_size": online_limit,  # max_party_size: the default, 10
        "tables": [
            {"id": f"T{i}", "seats": seats, "walk_in_only": walk_in}
            for i, (seats, walk_in) in enumerate(tables)
        ],
        "combos": [
            {"tables": [f"T{a}", f"T{b}"]}
            for a, b in {(min(a, b), max(a, b)) for a, b in combos if a != b}
            if a < len(tables) and b < len(tables)
        ],
        "pacing": {
            k: v
            for k, v in (("max_covers_per_slot", covers), ("max_parties_per_slot", parties))
            if v is not None
        },
    }
    return parse_restaurant(data, "property")


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    tables=st.lists(st.tuples(st.integers(2, 6), st.booleans()), min_size=1, max_size=6),
    combos=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=3),
    covers=st.one_of(st.none(), st.integers(1, 24)),
    parties=st.one_of(st.none(), st.integers(1, 6)),
    online_limit=st.integers(1, 10),
    before=st.lists(
        st.tuples(st.integers(1, 10), st.sampled_from(["18:00", "18:15", "18:30"]), st.booleans()),
        max_size=6,
    ),
    n=st.integers(1, 10),
    at=st.sampled_from(["18:00", "18:15", "18:30"]),
)
def test_k_open_spots_take_exactly_k_partner_bookings_with_the_rules_on(
    tables: list[tuple[int, bool]],
    combos: list[tuple[int, int]],
    covers: int | None,
    parties: int | None,
    online_limit: int,
    before: list[tuple[int, str, bool]],
    n: int,
    at: str,
) -> None:
    r = restaurant(tables, combos, covers, parties, online_limit)
    with tempfile.TemporaryDirectory() as folder, SQLiteStore(Path(folder) / "p.db") as store:
        book = DayBook(store, r)

        def slot(hhmm: str) -> calendar.Slot:
            found = calendar.slot_at(r, datetime.fromisoformat(f"{DAY.isoformat()}T{hhmm}"))
            assert found is not None
            return found[1]

        for size, when, by_host in before:  # whatever the host and partners booked before
            book.book(DAY, slot(when), size, NOW, host=by_host, over_pacing=by_host)
        s = slot(at)
        k = book.spots(DAY, s, n, NOW)
        shown = {(start, size): spots for start, size, spots, _ in book.rows(DAY, NOW)}
        assert shown.get((s.start_sec, n), 0) == k  # the feed and the lookup agree
        for i in range(k):
            outcome = book.book(DAY, s, n, NOW)
            assert isinstance(outcome, Applied), (i, k, outcome)
            assert outcome.operation[3].split("+")[0] not in r.walk_in_only
            assert not set(outcome.operation[3].split("+")) & r.walk_in_only
        assert not isinstance(book.book(DAY, s, n, NOW), Applied)
        assert book.spots(DAY, s, n, NOW) == 0
