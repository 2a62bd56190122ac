"""A host booking refused for a full slot names the day's nearest open times (the caller is
on the phone: "19:30 is full, I can do 20:30"). Real SQLite files; the times named are
checked by booking them, and the ones left out by trying them too."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from feed.http.statuses import status_of
from feed.service import days
from feed.service.days import Applied, DayBook, Refused
from feed.service.receiver import Receiver
from feed.settings import Settings
from feed.venue import calendar
from feed.venue.restaurant import Restaurant, load_restaurant
from store.sqlite import SQLiteStore
from tests.integration.slots import slot

REPO = Path(__file__).resolve().parents[2]
FRIDAY = date(2026, 12, 4)  # Marlowe's: lunch 12:00-14:00, dinner 17:30-21:30 (last seatings)
THURSDAY = date(2026, 12, 3)  # The Harbour Room: lunch paced at 12 covers, 4 parties a slot
BEFORE = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
OFFER = re.compile(r"; open for (\d+) that day: (\d\d:\d\d(?:, \d\d:\d\d)*)$")
NOTHING = "; nothing else open that day"

Booking = tuple[str, int]  # ("HH:MM", party size)


@pytest.fixture(scope="module")
def marlowes() -> Restaurant:
    return load_restaurant(REPO / "samples" / "marlowes.toml")


@pytest.fixture(scope="module")
def harbour() -> Restaurant:
    return load_restaurant(REPO / "samples" / "harbour.toml")


def day_with(
    path: Path, r: Restaurant, day: date, bookings: Sequence[Booking], now: datetime = BEFORE
) -> tuple[SQLiteStore, DayBook]:
    """A new file with these host bookings made one after another (refused ones too: a
    refusal writes nothing, so the same list always gives the same floor)."""
    store = SQLiteStore(path)
    book = DayBook(store, r)
    for at, n in bookings:
        book.book(day, slot(r, day, at), n, now, host=True)
    return store, book


def offered(outcome: Applied | Refused) -> list[str]:
    assert isinstance(outcome, Refused), outcome
    found = OFFER.search(outcome.message)
    if found is None:
        assert outcome.message.endswith(NOTHING), outcome.message
        return []
    return found.group(2).split(", ")


def minutes(hh_mm: str) -> int:
    hh, mm = hh_mm.split(":")
    return int(hh) * 60 + int(mm)


def test_a_full_slot_names_the_nearest_open_times_in_time_order(
    tmp_path: Path, marlowes: Restaurant
) -> None:
    store, book = day_with(tmp_path / "a.db", marlowes, FRIDAY, [("19:00", 6)])
    with store:
        refused = book.book(FRIDAY, slot(marlowes, FRIDAY, "19:30"), 6, BEFORE, host=True)
        assert isinstance(refused, Refused) and refused.code == days.SLOT_UNAVAILABLE
        # T3, the only table for 6, is taken 19:00-20:30 (a 90-minute turn). 17:30 (done by
        # 19:00) is open too, but farther from 19:30 than 21:00.
        assert refused.message == (
            "no table for 6 at 2026-12-04 19:30; open for 6 that day: 20:30, 20:45, 21:00"
        )


def test_partners_are_not_offered_times_their_refusal_stays_as_it_was(
    tmp_path: Path, marlowes: Restaurant
) -> None:
    store, book = day_with(tmp_path / "a.db", marlowes, FRIDAY, [("19:00", 6)])
    with store:
        refused = book.book(FRIDAY, slot(marlowes, FRIDAY, "19:30"), 6, BEFORE)
        assert isinstance(refused, Refused)
        assert refused.message == "no table for 6 at 2026-12-04 19:30"


def test_when_nothing_else_is_open_that_day_the_host_is_told_so(
    tmp_path: Path, marlowes: Restaurant
) -> None:
    # Late on Friday only 21:15 and 21:30 are still ahead; T1+T3, the only unit for 10,
    # is taken from 21:15.
    late = datetime(2026, 12, 4, 21, 5, tzinfo=UTC)
    store, book = day_with(tmp_path / "a.db", marlowes, FRIDAY, [("21:15", 10)], late)
    with store:
        assert book.rows(FRIDAY, late, range(10, 11), host=True)  # the day is still on
        refused = book.book(FRIDAY, slot(marlowes, FRIDAY, "21:30"), 10, late, host=True)
        assert isinstance(refused, Refused) and refused.code == days.SLOT_UNAVAILABLE
        assert refused.message == f"no table for 10 at 2026-12-04 21:30{NOTHING}"


@pytest.mark.parametrize("seed", range(8))
def test_every_time_named_books_and_every_nearer_time_left_out_is_refused(
    tmp_path: Path, marlowes: Restaurant, seed: int
) -> None:
    """Random Fridays: whatever the floor, the times named are bookable for the party (each
    booked on its own copy of the day), and none nearer the asked slot was left out."""
    rng = random.Random(seed)
    times = [s.local.strftime("%H:%M") for s in calendar.slots(marlowes, FRIDAY)]
    bookings = [(rng.choice(times), rng.choice([2, 2, 4, 4, 5, 6, 8, 10])) for _ in range(14)]
    store, book = day_with(tmp_path / "state.db", marlowes, FRIDAY, bookings)
    with store:
        full = None
        for at in rng.sample(times, len(times)):
            n = rng.choice([2, 4, 6, 8, 10])
            outcome = book.book(FRIDAY, slot(marlowes, FRIDAY, at), n, BEFORE, host=True)
            if isinstance(outcome, Refused):
                full = at, n, outcome
                break
            bookings.append((at, n))
    assert full is not None, "no slot filled up: the test needs a fuller floor"
    at, n, outcome = full
    assert outcome.code == days.SLOT_UNAVAILABLE, outcome
    named = offered(outcome)
    assert len(named) <= days.NEARBY_OFFERED and named == sorted(named)
    assert at not in named

    def bookable(when: str, k: int) -> bool:
        path = tmp_path / f"try-{k}.db"
        trial, trial_book = day_with(path, marlowes, FRIDAY, bookings)
        with trial:
            again = trial_book.book(FRIDAY, slot(marlowes, FRIDAY, when), n, BEFORE, host=True)
            return isinstance(again, Applied)

    for k, when in enumerate(named):
        assert bookable(when, k), f"{when} was named for {n} but cannot be booked"
    reach = max((abs(minutes(t) - minutes(at)) for t in named), default=None)
    nearer = [
        t
        for t in times
        if t != at and t not in named and (reach is None or abs(minutes(t) - minutes(at)) < reach)
    ]
    for k, when in enumerate(nearer, start=len(named)):
        assert not bookable(when, k), f"{when} is open for {n} and nearer than {named}"


def test_over_pacing_names_times_within_pacing(tmp_path: Path, harbour: Restaurant) -> None:
    lunch = [("12:00", 4)] * 3  # 12 covers: The Harbour Room's lunch cap per slot
    store, book = day_with(tmp_path / "a.db", harbour, THURSDAY, lunch)
    with store:
        refused = book.book(THURSDAY, slot(harbour, THURSDAY, "12:00"), 2, BEFORE, host=True)
        assert isinstance(refused, Refused) and refused.code == days.OVER_PACING
        named = offered(refused)
        assert named and "12:00" not in named
        host_rows = book.rows(THURSDAY, BEFORE, range(2, 3), host=True)
        open_at = {start for start, _n, spots, _t in host_rows if spots > 0}
        for when in named:
            assert slot(harbour, THURSDAY, when).start_sec in open_at


@pytest.fixture
def rec(tmp_path: Path, marlowes: Restaurant) -> Iterator[Receiver]:
    """Marlowe's host API (the receiver the server runs) on a real file, at BEFORE."""
    with SQLiteStore(tmp_path / "api.db") as store:
        yield Receiver([marlowes], store, Settings(), lambda: BEFORE)


def test_the_host_api_and_a_changed_booking_carry_the_offer(rec: Receiver) -> None:
    mid = "marlowes-kitchen"
    assert rec.host_book(mid, 6, "2026-12-04T19:00", "Ann", "1").code is None
    refused = rec.host_book(mid, 6, "2026-12-04T19:30", "Bo", "2")
    assert status_of(refused) == 409 and refused.code == days.SLOT_UNAVAILABLE
    message = refused.body["error"]["message"]
    assert message.endswith("; open for 6 that day: 20:30, 20:45, 21:00")
    # Bo books 21:00 and then asks for 19:15: T3 is Ann's until 20:30.
    moved = rec.host_book(mid, 6, "2026-12-04T21:00", "Bo", "2")
    assert moved.code is None, moved.body
    change = rec.host_change(mid, moved.body["reservation_id"], None, "2026-12-04T19:15")
    assert status_of(change) == 409 and change.code == days.SLOT_UNAVAILABLE
    # Named as if Bo's 21:00 were already given up: 20:30 and 20:45 are open only then
    # (T3 would be Bo's from 21:00). 17:30 and 21:00 are as near to 19:15: the earlier.
    assert change.body["error"]["message"] == (
        "no table for 6 at 2026-12-04 19:15; open for 6 that day: 17:30, 20:30, 20:45"
    )
    assert (
        rec.host_reservations(mid, FRIDAY)
        .body["reservations"][1]["start"]
        .endswith("21:00:00+00:00")
    )  # the refused change left Bo's booking as it was


def test_a_time_that_is_not_a_slot_names_the_nearest_slots_or_the_days_hours(
    rec: Receiver,
) -> None:
    mid = "marlowes-kitchen"
    off_grid = rec.host_book(mid, 2, "2026-12-04T19:05", "Ann", "1")
    assert status_of(off_grid) == 409 and off_grid.code == days.NOT_A_SLOT
    assert off_grid.body["error"]["message"] == (
        "2026-12-04T19:05:00 is not a slot at Marlowe's Kitchen:"
        " slots are every 15 minutes: the nearest are 19:00 and 19:15"
    )
    between = rec.host_book(mid, 2, "2026-12-04T16:10", "Ann", "1")
    assert between.body["error"]["message"].endswith(
        ": that day's slots run 12:00-14:00 and 17:30-21:30"
    )
    assert rec.host_reservations(mid, FRIDAY).body["reservations"] == []
    # A time the clocks skip (2027-03-28, 01:00 GMT -> 02:00 BST) is told as such.
    skipped = rec.host_book(mid, 2, "2027-03-28T01:30", "Ann", "1")
    assert status_of(skipped) == 409 and skipped.code == days.NOT_A_SLOT
    assert skipped.body["error"]["message"] == (
        "2027-03-28T01:30:00 is not a slot at Marlowe's Kitchen: 01:30 does not exist on"
        " 2027-03-28 in Europe/London: clocks go forward; that day's slots run 12:00-14:00"
        " and 17:30-21:30"
    )


def test_the_host_apis_list_says_where_a_booking_moved_to_another_day_went(
    rec: Receiver,
) -> None:
    mid = "marlowes-kitchen"
    bo = rec.host_book(mid, 2, "2026-12-04T19:00", "Bo", "1").body["reservation_id"]
    assert rec.host_change(mid, bo, None, "2026-12-05T20:00").code is None
    (friday,) = rec.host_reservations(mid, FRIDAY).body["reservations"]
    assert (friday["status"], friday["moved_to"]) == ("cancelled", "2026-12-05 20:00")
    (saturday,) = rec.host_reservations(mid, date(2026, 12, 5)).body["reservations"]
    assert (saturday["reservation_id"], saturday["moved_to"]) == (bo, None)
