"""Availability is the truth of the floor (PRODUCT.md 3): turn times, the live floor, one
rule for every path, and time acting by itself. Real SQLite files, Marlowe's sample."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from feed.http.serving import AvailabilityWatch, sweep_no_shows
from feed.service import days
from feed.service.days import Applied, DayBook, Refused
from feed.service.notify import AVAILABILITY, Notifier
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue.restaurant import Restaurant, load_restaurant
from store.log import StoreUnwritable
from store.sqlite import SQLiteStore
from tests.integration.full_disk import FullDiskStore
from tests.integration.slots import slot

REPO = Path(__file__).resolve().parents[2]
SATURDAY = date(2026, 12, 5)  # Marlowe's, London (GMT): lunch 12:00-15:00, dinner 17:30-23:00
BEFORE = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def marlowes() -> Restaurant:
    return load_restaurant(REPO / "samples" / "marlowes.toml")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        yield store


def at(day: date, hhmm: str) -> datetime:
    return datetime.fromisoformat(f"{day.isoformat()}T{hhmm}").replace(tzinfo=UTC)


def test_a_party_of_six_keeps_its_table_for_its_whole_turn(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    book = DayBook(store, marlowes)
    first = book.book(SATURDAY, slot(marlowes, SATURDAY, "19:00"), 6, BEFORE)
    assert isinstance(first, Applied) and first.operation[3] == "T3"
    for hhmm in ("19:30", "20:00", "20:15"):  # T3 is the only table for 6: one turn, one party
        outcome = book.book(SATURDAY, slot(marlowes, SATURDAY, hhmm), 6, BEFORE)
        assert isinstance(outcome, Refused) and outcome.code == days.SLOT_UNAVAILABLE, hhmm
        assert book.spots(SATURDAY, slot(marlowes, SATURDAY, hhmm), 6, BEFORE) == 0
    after = book.book(SATURDAY, slot(marlowes, SATURDAY, "20:30"), 6, BEFORE)  # 90 min later
    assert isinstance(after, Applied) and after.operation[3] == "T3"


def test_parties_seated_now_take_their_tables_out_of_the_next_slots(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    book = DayBook(store, marlowes)
    now = at(SATURDAY, "17:30")
    for i, size in enumerate((4, 2, 6, 2, 4, 4)):  # every table
        outcome = book.operate(SATURDAY, now, "walk_in", f"W{i}", size, meta={"party_size": size})
        assert isinstance(outcome, Applied) and str(outcome.result).startswith("seated")
    for hhmm, n in (("17:45", 4), ("18:30", 4), ("18:00", 2), ("18:45", 6)):
        assert book.spots(SATURDAY, slot(marlowes, SATURDAY, hhmm), n, now) == 0, (hhmm, n)
    refused = book.book(SATURDAY, slot(marlowes, SATURDAY, "17:45"), 4, now)
    assert isinstance(refused, Refused) and refused.code == days.SLOT_UNAVAILABLE
    # A party of 2 keeps T2 45 minutes, a party of 4 keeps T1 70: then they are bookable.
    assert book.spots(SATURDAY, slot(marlowes, SATURDAY, "18:15"), 2, now) == 2
    assert book.spots(SATURDAY, slot(marlowes, SATURDAY, "18:45"), 4, now) == 3


def test_a_party_past_its_turn_keeps_its_table_until_now_plus_overstay(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    book = DayBook(store, marlowes)
    seated = book.operate(SATURDAY, at(SATURDAY, "17:30"), "walk_in", "W", 6, meta={})
    assert isinstance(seated, Applied) and seated.result == "seated T3"
    # At 19:20 the party of 6 is 20 minutes past its 90-minute turn: it still sits there,
    # expected to leave within overstay_minutes (15), so T3 is taken until 19:35.
    late = at(SATURDAY, "19:20")
    assert book.spots(SATURDAY, slot(marlowes, SATURDAY, "19:30"), 6, late) == 0
    assert book.spots(SATURDAY, slot(marlowes, SATURDAY, "19:45"), 6, late) == 1
    assert marlowes.overstay_minutes == 15


def test_bookings_beyond_the_horizon_are_refused_and_shown_closed(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    book = DayBook(store, marlowes)
    far = BEFORE.date() + timedelta(days=50)
    far_slot = slot(marlowes, far, "19:00")
    outcome = book.book(far, far_slot, 2, BEFORE)
    assert isinstance(outcome, Refused) and outcome.code == days.BEYOND_HORIZON
    assert "30 days" in outcome.message
    assert book.spots(far, far_slot, 2, BEFORE) == 0
    last = BEFORE.date() + timedelta(days=marlowes.horizon_days - 1)
    assert isinstance(book.book(last, slot(marlowes, last, "19:00"), 2, BEFORE), Applied)


def test_a_booking_closer_than_min_advance_is_refused(store: SQLiteStore) -> None:
    r = load_restaurant(REPO / "samples" / "marlowes.toml")
    strict = Restaurant(**{**r.__dict__, "min_advance_minutes": 60, "memo": {}})
    book = DayBook(store, strict)
    now = at(SATURDAY, "18:15")
    soon = book.book(SATURDAY, slot(strict, SATURDAY, "19:00"), 2, now)
    assert isinstance(soon, Refused) and soon.code == days.TOO_SOON
    assert "call the restaurant" in soon.message  # a partner's guest is told whom to ask
    by_host = book.book(SATURDAY, slot(strict, SATURDAY, "19:00"), 2, now, host=True)
    assert isinstance(by_host, Refused) and by_host.code == days.TOO_SOON  # one rule
    assert "walk-ins" in by_host.message and "call the restaurant" not in by_host.message
    assert book.spots(SATURDAY, slot(strict, SATURDAY, "19:00"), 2, now) == 0
    assert book.spots(SATURDAY, slot(strict, SATURDAY, "19:15"), 2, now) == 5
    assert isinstance(book.book(SATURDAY, slot(strict, SATURDAY, "19:15"), 2, now), Applied)


def test_availability_rows_close_a_slot_at_its_last_bookable_instant_to_the_microsecond(
    store: SQLiteStore,
) -> None:
    r = load_restaurant(REPO / "samples" / "marlowes.toml")
    strict = Restaurant(**{**r.__dict__, "min_advance_minutes": 60, "memo": {}})
    book = DayBook(store, strict)
    seven = slot(strict, SATURDAY, "19:00")
    last_bookable = at(SATURDAY, "18:00")  # last_bookable_sec: start - min_advance

    def open_at_seven(now: datetime, **how: bool) -> int:
        rows = book.rows(SATURDAY, now, **how)
        return next(o for start, n, o, _ in rows if start == seven.start_sec and n == 2)

    for how in ({}, {"host": True}):
        assert open_at_seven(last_bookable, **how) > 0  # at last_bookable_sec: still open
        assert open_at_seven(last_bookable + timedelta(microseconds=1), **how) == 0, how
    late = last_bookable + timedelta(microseconds=1)
    assert isinstance(book.book(SATURDAY, seven, 2, late), Refused)  # as the rows say
    block = book.day_block(SATURDAY, late, [2])
    assert block[1][block[0].index(seven.start_sec)] == [0]


def receiver_at(
    store: SQLiteStore, r: Restaurant, clock: list[datetime], notifier: Notifier | None = None
) -> Receiver:
    return Receiver([r], store, Settings(), lambda: clock[0], notifier)


def test_a_walk_in_between_services_is_refused_with_the_next_opening(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    clock = [at(SATURDAY, "16:10")]
    reply = receiver_at(store, marlowes, clock).host_operation(
        marlowes.merchant_id, "walk_in", "W1", 2
    )
    assert reply.code == "no service now"
    assert "17:30" in reply.body["error"]["message"]
    assert store.entries(marlowes.merchant_id, SATURDAY) == []


def test_reading_the_board_or_a_quote_writes_nothing(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    clock = [at(SATURDAY, "18:00")]
    receiver = receiver_at(store, marlowes, clock)
    assert receiver.host_operation(marlowes.merchant_id, "walk_in", "W1", 2).code is None
    before = store.entries(marlowes.merchant_id, SATURDAY)
    board = receiver.host_operation(marlowes.merchant_id, "board")
    quote = receiver.host_operation(marlowes.merchant_id, "quote", 4)
    assert board.body["result"]["tables"]["T2"] == "W1" and quote.body["result"] == 0
    assert store.entries(marlowes.merchant_id, SATURDAY) == before


def test_the_clock_seats_a_party_whose_wait_reaches_30_minutes(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    clock = [at(SATURDAY, "18:00")]
    receiver = receiver_at(store, marlowes, clock)
    book = receiver.books[marlowes.merchant_id]
    for i, size in enumerate((2, 2)):  # both 2-tops
        receiver.host_operation(marlowes.merchant_id, "walk_in", f"W{i}", size)
    receiver.host_operation(marlowes.merchant_id, "walk_in", "SOLO", 1)  # a 4-top is too roomy
    assert "SOLO" in book.stand(SATURDAY).waiting
    clock[0] = at(SATURDAY, "18:29")
    assert sweep_no_shows(receiver) == 0
    clock[0] = at(SATURDAY, "18:30")  # waited 30 minutes: T1 is no longer too roomy
    assert sweep_no_shows(receiver) == 1
    assert book.stand(SATURDAY).seated()["T1"].id == "SOLO"
    last = store.entries(marlowes.merchant_id, SATURDAY)[-1]
    assert last.operation[0] == "board" and last.meta == {"source": "clock"}


def partner_notifier() -> Notifier:
    partner = Partner(id="p1", secret=None, merchants=None, notify_url="http://127.0.0.1:9/n")
    return Notifier({"p1": partner}, coalesce_seconds=0)


def test_seating_a_walk_in_tells_partners_todays_availability_changed(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    clock = [at(SATURDAY, "18:00")]
    receiver = receiver_at(store, marlowes, clock, partner_notifier())
    receiver.host_operation(marlowes.merchant_id, "walk_in", "W1", 4)
    kinds = [item.kind for item in store.pending(10**12)]
    assert kinds == [AVAILABILITY]


def test_time_alone_moving_availability_tells_partners(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    clock = [at(SATURDAY, "17:30")]
    receiver = receiver_at(store, marlowes, clock, partner_notifier())
    receiver.host_operation(marlowes.merchant_id, "walk_in", "W1", 6)
    for item in store.pending(10**12):
        store.delivered(item.id, 0)
    watch = AvailabilityWatch(receiver)
    # The first look tells too: what partners heard before it is not known (a start).
    assert watch.sweep() == 1
    for item in store.pending(10**12):
        store.delivered(item.id, 0)
    clock[0] = at(SATURDAY, "17:31")
    assert watch.sweep() == 0  # nothing published moved in a minute
    clock[0] = at(SATURDAY, "17:46")  # the 17:45 slot has started: it closes
    assert watch.sweep() == 1
    assert [item.kind for item in store.pending(10**12)] == [AVAILABILITY]


def test_a_change_whose_replace_the_store_refused_is_told_at_the_next_sweep(
    tmp_path: Path, marlowes: Restaurant
) -> None:
    with FullDiskStore(tmp_path / "full.db") as store:
        clock = [at(SATURDAY, "17:30")]
        receiver = receiver_at(store, marlowes, clock, partner_notifier())
        receiver.host_operation(marlowes.merchant_id, "walk_in", "W1", 6)
        for item in store.pending(10**12):
            store.delivered(item.id, 0)
        watch = AvailabilityWatch(receiver)
        assert watch.sweep() == 1  # the first look tells too (a start)
        for item in store.pending(10**12):
            store.delivered(item.id, 0)
        clock[0] = at(SATURDAY, "17:46")  # the 17:45 slot has started: it closes
        store.room = 0  # the disk is full: the replace cannot be queued
        with pytest.raises(StoreUnwritable):
            watch.sweep()
        store.room = None
        assert watch.sweep() == 1  # not lost: told once the store takes it
        assert [item.kind for item in store.pending(10**12)] == [AVAILABILITY]


def test_the_tablets_tables_say_the_booking_due_next_and_whether_the_party_will_be_done(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    """A free table kept from the waitlist says for whom and when; a seated party that
    would still be eating when the table's next booking is due is flagged by the page
    (turn_left > in_minutes). A held table shows its hold instead."""
    from feed.service.floorview import FloorViews

    book = DayBook(store, marlowes)
    ann = book.book(SATURDAY, slot(marlowes, SATURDAY, "19:00"), 2, BEFORE, {"name": "Ann"})
    assert isinstance(ann, Applied)
    table = ann.operation[3]
    now = at(SATURDAY, "18:15")
    tables = {t["id"]: t for t in FloorViews(book).floor(SATURDAY, now)["tables"]}
    assert tables[table]["occupant"] is None and tables[table]["hold"] is None
    assert tables[table]["next"] == {
        "reservation_id": ann.operation[2],
        "name": "Ann",
        "size": 2,
        "at": "19:00",
        "in_minutes": 45,
        "arrived": False,
        "arrived_minute": None,
    }
    assert all(t["next"] is None for t in tables.values() if t["id"] != table)
    # The host moves a walk-in there anyway (the host is not stopped by protection): it
    # would still be eating at 19:00, which the document lets the page say.
    later = at(SATURDAY, "18:30")
    walk_in = book.operate(SATURDAY, later, "walk_in", "w-1", 2)
    assert isinstance(walk_in, Applied) and walk_in.result.startswith("seated ")  # not here
    moved = book.operate(SATURDAY, later, "move", "w-1", table)
    assert isinstance(moved, Applied) and moved.result == []
    tight = {t["id"]: t for t in FloorViews(book).floor(SATURDAY, later)["tables"]}[table]
    assert tight["occupant"]["party_id"] == "w-1"
    assert tight["occupant"]["turn_left"] == 45 > tight["next"]["in_minutes"] == 30
    # Still there when Ann is due, and when she is at the door: her table says so all along.
    for hh_mm, due, arrived in (("18:50", 10, False), ("19:05", -5, False), ("19:10", -10, True)):
        if arrived:
            assert isinstance(
                book.operate(SATURDAY, at(SATURDAY, "19:06"), "arrive", ann.operation[2]), Applied
            )
        shown = {
            t["id"]: t for t in FloorViews(book).floor(SATURDAY, at(SATURDAY, hh_mm))["tables"]
        }
        assert shown[table]["occupant"]["party_id"] == "w-1"
        assert shown[table]["next"]["name"] == "Ann"
        assert (shown[table]["next"]["in_minutes"], shown[table]["next"]["arrived"]) == (
            due,
            arrived,
        )
    back = book.operate(SATURDAY, at(SATURDAY, "19:11"), "move", "w-1", walk_in.result[7:])
    assert isinstance(back, Applied) and back.result == []
    held = {t["id"]: t for t in FloorViews(book).floor(SATURDAY, at(SATURDAY, "19:12"))["tables"]}
    assert held[table]["hold"]["name"] == "Ann" and held[table]["next"] is None


def test_the_waitlists_next_up_never_names_a_table_held_for_a_reservation(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    """Ann's table is held from 18:45 for her 19:00 booking, and still once she is at the
    door: the party first in line is told of another table, or of none, never of hers."""
    from feed.service.floorview import FloorViews

    book = DayBook(store, marlowes)
    ann = book.book(SATURDAY, slot(marlowes, SATURDAY, "19:00"), 2, BEFORE, {"name": "Ann"})
    assert isinstance(ann, Applied)
    held = ann.operation[3]
    now = at(SATURDAY, "18:50")
    for i in range(len(marlowes.floor.tables)):
        outcome = book.operate(SATURDAY, now, "walk_in", f"w-{i}", 2, meta={"party_size": 2})
        assert isinstance(outcome, Applied)
        if str(outcome.result).startswith("queued"):
            break
    else:
        raise AssertionError("nobody waits")
    for hh_mm, arrive in (("18:51", False), ("18:52", True)):
        if arrive:
            arrived = book.operate(SATURDAY, at(SATURDAY, hh_mm), "arrive", ann.operation[2])
            assert isinstance(arrived, Applied)
        floor = FloorViews(book).floor(SATURDAY, at(SATURDAY, hh_mm))
        assert {t["id"]: t["hold"] is not None for t in floor["tables"]}[held]
        assert floor["queue"], hh_mm
        for party in floor["queue"]:
            assert held not in str(party["next_up"]).split("+"), (hh_mm, party)


def test_a_reservation_row_gives_its_local_date_and_time_after_midnight_too(
    tmp_path: Path,
) -> None:
    """The tablet's Change… sends a booking's own start back: a late service's 00:00 is on
    the next calendar day, not the floor's."""
    text = (REPO / "samples" / "harbour.toml").read_text()
    late = text.replace(
        'close = "01:00", last_seating = "22:30"', 'close = "01:00", last_seating = "00:15"'
    )
    assert late != text
    (tmp_path / "late.toml").write_text(late)
    harbour = load_restaurant(tmp_path / "late.toml")
    nye = date(2026, 12, 31)
    from feed.service.floorview import FloorViews

    with SQLiteStore(tmp_path / "hoststand.db") as store:
        book = DayBook(store, harbour)
        for hhmm in ("00:00", "21:00"):
            s = slot(harbour, nye if hhmm > "12" else date(2027, 1, 1), hhmm)
            assert isinstance(book.book(nye, s, 2, at(nye, "12:00"), host=True), Applied)
        rows = FloorViews(book).floor(nye, at(nye, "20:00"))["reservations"]
        assert [(r["time"], r["start"]) for r in rows] == [
            ("21:00", "2026-12-31T21:00"),
            ("00:00", "2027-01-01T00:00"),
        ]
