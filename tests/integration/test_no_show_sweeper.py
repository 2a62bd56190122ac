"""The clock alone turns a booking into a no-show: the sweeper logs it when nobody else does."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from engine.holds import ReservationStatus
from feed.http.serving import sweep_no_shows
from feed.service.notify import BOOKING, Notifier
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue import calendar
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
FRIDAY = date(2026, 12, 4)  # Marlowe's, London: GMT, dinner from 17:30


def test_the_sweeper_records_a_no_show_once_the_hold_has_passed(tmp_path: Path) -> None:
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    clock = [datetime(2026, 12, 4, 12, 0, tzinfo=UTC)]
    store = SQLiteStore(tmp_path / "hoststand.db")
    try:
        receiver = Receiver([marlowes], store, Settings(), lambda: clock[0])
        book = receiver.books[marlowes.merchant_id]
        found = calendar.slot_at(marlowes, datetime(2026, 12, 4, 19, 0))
        assert found is not None
        applied = book.book(FRIDAY, found[1], 4, clock[0])
        booking_id = applied.operation[2]  # type: ignore[union-attr]

        clock[0] = datetime(2026, 12, 4, 19, 14, tzinfo=UTC)  # hold still running
        assert sweep_no_shows(receiver) == 0
        clock[0] = datetime(2026, 12, 4, 19, 15, tzinfo=UTC)  # at + 15: a no-show
        assert sweep_no_shows(receiver) == 1
        assert sweep_no_shows(receiver) == 0  # recorded: nothing left to sweep

        replayed = book.stand(FRIDAY).book.get(booking_id)
        assert replayed is not None and replayed.status is ReservationStatus.NO_SHOW
        last = store.entries(marlowes.merchant_id, FRIDAY)[-1]
        assert last.operation[0] == "board" and last.meta == {"source": "clock"}
    finally:
        store.close()


def test_a_no_show_left_behind_by_a_server_down_past_the_close_is_written_and_told(
    tmp_path: Path,
) -> None:
    """No server ran between a booking's hold and the day's close: the day is nobody's
    today any more, so the first sweep after a restart writes it as of the close (once),
    and the partner hears NO_SHOW. Arrived guests and bookings already settled are not."""
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    partner = Partner(id="p1", secret=None, merchants=None, notify_url="http://127.0.0.1:9/n")
    clock = [datetime(2026, 12, 4, 12, 0, tzinfo=UTC)]
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver(
            [marlowes], store, Settings(partners={"p1": partner}), lambda: clock[0],
            Notifier({"p1": partner}, coalesce_seconds=0),
        )  # fmt: skip
        book = receiver.books[marlowes.merchant_id]
        ids = {}
        for name, hhmm in (("gone", "21:30"), ("here", "21:15"), ("swept", "18:00")):
            found = calendar.slot_at(marlowes, datetime.fromisoformat(f"2026-12-04T{hhmm}"))
            assert found is not None
            meta = {"source": "partner", "partner": "p1", "name": name}
            applied = book.book(FRIDAY, found[1], 2, clock[0], meta)
            ids[name] = applied.operation[2]  # type: ignore[union-attr]
        clock[0] = datetime(2026, 12, 4, 18, 20, tzinfo=UTC)  # the server runs until 21:20
        assert sweep_no_shows(receiver) == 1  # "swept" is a no-show, as it always was
        book.operate(FRIDAY, clock[0], "arrive", ids["here"])
        for item in store.pending(10**12):
            store.delivered(item.id, 0)

        clock[0] = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)  # back the next morning
        caught_up: dict[str, date] = {}
        assert sweep_no_shows(receiver) == 0  # without catching up: Friday is not today
        assert sweep_no_shows(receiver, caught_up) == 1
        assert sweep_no_shows(receiver, caught_up) == 0  # once a day
        assert sweep_no_shows(receiver, {}) == 0  # written: nothing left behind

        stand = book.stand(FRIDAY)
        status = {name: stand.book.get(rid).status for name, rid in ids.items()}  # type: ignore[union-attr]
        assert status == {
            "gone": ReservationStatus.NO_SHOW,
            "here": ReservationStatus.BOOKED,  # arrived: never a no-show
            "swept": ReservationStatus.NO_SHOW,
        }
        last = store.entries(marlowes.merchant_id, FRIDAY)[-1]
        assert last.operation[:2] == ["board", (23 - 12) * 60]  # the close: 23:00, opened 12:00
        assert last.meta == {"source": "clock"}
        told = [item.payload for item in store.pending(10**12) if item.kind == BOOKING]
        assert [(p["status"], p["name"].rsplit("/", 1)[-1]) for p in told] == [
            ("NO_SHOW", ids["gone"])
        ]


def test_walk_ins_still_waiting_when_their_service_closes_leave_the_waitlist(
    tmp_path: Path,
) -> None:
    """Lunch's waitlist ends with lunch: a party still waiting at the close is taken off it
    by the clock, and dinner's first pass does not seat it at 17:30."""
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    clock = [datetime(2026, 12, 4, 13, 0, tzinfo=UTC)]
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver([marlowes], store, Settings(), lambda: clock[0])
        mid = marlowes.merchant_id
        for i in range(8):  # more parties of 4 than the floor seats: two wait
            assert receiver.host_operation(mid, "walk_in", f"w{i}", 4).code is None
        waiting = [p.id for p in receiver.books[mid].stand(FRIDAY).queue()]
        assert waiting  # lunch is full
        assert sweep_no_shows(receiver) == 0  # lunch is on: they wait
        clock[0] = datetime(2026, 12, 4, 16, 0, tzinfo=UTC)  # between lunch and dinner
        assert sweep_no_shows(receiver) == 1
        assert sweep_no_shows(receiver) == 0  # once
        stand = receiver.books[mid].stand(FRIDAY)
        assert stand.queue() == []
        left = [e for e in store.entries(mid, FRIDAY) if e.operation[0] == "leave"]
        assert [e.operation[2] for e in left] == waiting[::-1]  # newest first
        assert all(e.meta == {"source": "clock"} for e in left)
        for table in list(stand.seated()):
            receiver.host_operation(mid, "free", table)  # lunch has gone home
        clock[0] = datetime(2026, 12, 4, 17, 30, tzinfo=UTC)  # dinner opens: nobody is seated
        assert receiver.host_operation(mid, "board").code is None
        assert receiver.books[mid].stand(FRIDAY).seated() == {}


def walk_ins(receiver: Receiver, mid: str, sizes: list[int], prefix: str = "f") -> None:
    for i, size in enumerate(sizes):
        assert receiver.host_operation(mid, "walk_in", f"{prefix}{i}", size).code is None


def test_taking_the_waitlist_off_at_the_close_seats_nobody(tmp_path: Path) -> None:
    """At 15:00 lunch closes and a party of 2 queued at 14:30 reaches its 30 minutes: the
    6-top freed at 14:45 would take it now. Taken off at the close, it is not seated."""
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    mid = marlowes.merchant_id
    clock = [datetime(2026, 12, 4, 14, 0, tzinfo=UTC)]
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver([marlowes], store, Settings(), lambda: clock[0])
        walk_ins(receiver, mid, [4, 2, 6, 2, 4, 4])  # every table taken
        clock[0] = datetime(2026, 12, 4, 14, 30, tzinfo=UTC)
        walk_ins(receiver, mid, [2], "late")
        clock[0] = datetime(2026, 12, 4, 14, 45, tzinfo=UTC)
        assert receiver.host_operation(mid, "free", "T3").code is None  # too roomy for 2 yet
        clock[0] = datetime(2026, 12, 4, 15, 0, 3, tzinfo=UTC)
        assert sweep_no_shows(receiver) == 1
        stand = receiver.books[mid].stand(FRIDAY)
        assert stand.queue() == [] and "T3" not in stand.seated()
        assert store.entries(mid, FRIDAY)[-1].operation == ["leave", 165, "late0"]


def test_a_lunch_party_left_waiting_while_no_server_ran_is_not_seated_at_dinner(
    tmp_path: Path,
) -> None:
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    mid = marlowes.merchant_id
    clock = [datetime(2026, 12, 4, 14, 30, tzinfo=UTC)]
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver([marlowes], store, Settings(), lambda: clock[0])
        walk_ins(receiver, mid, [4, 2, 6, 2, 4, 4, 2])  # the last one waits
        clock[0] = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)  # the first sweep is at dinner
        assert sweep_no_shows(receiver) == 1
        assert receiver.books[mid].stand(FRIDAY).queue() == []
        walk_ins(receiver, mid, [2], "dinner")  # dinner's own waitlist
        seated = receiver.host_operation(mid, "free", "T2").body["result"]
        assert seated == ["dinner0@T2"]


def test_a_service_closing_after_midnight_has_its_waitlist_taken_off_the_next_day(
    tmp_path: Path,
) -> None:
    harbour = load_restaurant(REPO / "samples" / "harbour.toml")  # NYE: 18:00-01:00
    mid, nye = harbour.merchant_id, date(2026, 12, 31)
    clock = [datetime(2027, 1, 1, 0, 30, tzinfo=UTC)]  # Dublin is on UTC in winter
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver([harbour], store, Settings(), lambda: clock[0])
        walk_ins(receiver, mid, [2, 2, 4, 4, 6, 2, 4, 2])
        assert [p.id for p in receiver.books[mid].stand(nye).queue()] == ["f7"]
        clock[0] = datetime(2027, 1, 1, 0, 59, tzinfo=UTC)
        assert sweep_no_shows(receiver) == 0  # still New Year's Eve's service
        clock[0] = datetime(2027, 1, 1, 1, 0, 5, tzinfo=UTC)  # today is 1 January now
        assert sweep_no_shows(receiver) == 1
        assert receiver.books[mid].stand(nye).queue() == []


def test_catching_up_a_past_day_seats_nobody_on_the_tables_its_no_shows_free(
    tmp_path: Path,
) -> None:
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    mid = marlowes.merchant_id
    clock = [datetime(2026, 12, 4, 12, 0, tzinfo=UTC)]
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver([marlowes], store, Settings(), lambda: clock[0])
        book = receiver.books[mid]
        found = calendar.slot_at(marlowes, datetime(2026, 12, 4, 19, 30))
        assert found is not None
        booked = book.book(FRIDAY, found[1], 2, clock[0])
        clock[0] = datetime(2026, 12, 4, 19, 0, tzinfo=UTC)
        walk_ins(receiver, mid, [4, 6, 2, 4, 4])
        clock[0] = datetime(2026, 12, 4, 19, 20, tzinfo=UTC)
        walk_ins(receiver, mid, [2], "late")  # waits: T2 is held for 19:30
        clock[0] = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)  # down until the next morning
        assert sweep_no_shows(receiver, {}) == 1
        stand = book.stand(FRIDAY)
        assert stand.queue() == [] and "T2" not in stand.seated()
        no_show = stand.book.get(booked.operation[2])  # type: ignore[union-attr]
        assert no_show is not None and no_show.status is ReservationStatus.NO_SHOW


def test_a_large_partys_claim_lifted_at_the_close_seats_nobody_behind_it(
    tmp_path: Path,
) -> None:
    """The seed's Part 3 example at the end of lunch: G (8) claims T5+T6 and I (3) waits
    behind it. Taking G off first would lift the claim and seat I on T6 after the close."""
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    mid = marlowes.merchant_id
    clock = [datetime(2026, 12, 4, 14, 20, tzinfo=UTC)]
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver([marlowes], store, Settings(), lambda: clock[0])

        def at(hh_mm: str, *operation: Any) -> None:
            clock[0] = datetime.fromisoformat(f"2026-12-04T{hh_mm}+00:00")
            assert receiver.host_operation(mid, *operation).code is None

        for pid, n in [("A", 6), ("B", 4), ("C", 4), ("D", 4), ("E", 2), ("F", 2)]:
            at("14:20", "walk_in", pid, n)
        at("14:26", "walk_in", "G", 8)
        at("14:27", "walk_in", "H", 2)
        at("14:30", "free", "T5")  # H (2) sits there: G cannot
        at("14:35", "walk_in", "I", 3)
        at("14:50", "free", "T6")  # G claims T5+T6: I may not have T6
        stand = receiver.books[mid].stand(FRIDAY)
        assert [p.id for p in stand.queue()] == ["G", "I"] and "T6" not in stand.seated()
        clock[0] = datetime(2026, 12, 4, 15, 0, 5, tzinfo=UTC)  # lunch has closed
        assert sweep_no_shows(receiver) == 1
        stand = receiver.books[mid].stand(FRIDAY)
        assert stand.queue() == [] and "T6" not in stand.seated()
        left = [e.operation[2] for e in store.entries(mid, FRIDAY) if e.operation[0] == "leave"]
        assert left == ["I", "G"]


def test_catching_up_closes_the_waitlist_of_every_past_day_it_looks_at(tmp_path: Path) -> None:
    """Three days ago lunch ended with a party still waiting and no server ran after: the
    first sweep of a new day takes it off, though that day owes no no-show."""
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    mid = marlowes.merchant_id
    clock = [datetime(2026, 12, 1, 14, 30, tzinfo=UTC)]  # Tuesday's lunch
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver([marlowes], store, Settings(), lambda: clock[0])
        walk_ins(receiver, mid, [4, 2, 6, 2, 4, 4, 2])  # the last one waits
        tuesday = date(2026, 12, 1)
        assert len(receiver.books[mid].stand(tuesday).queue()) == 1
        clock[0] = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
        assert sweep_no_shows(receiver) == 0  # Tuesday is nobody's today
        assert sweep_no_shows(receiver, {}) == 1
        assert receiver.books[mid].stand(tuesday).queue() == []


def test_a_party_whose_arrival_no_service_holds_any_more_waits_while_one_is_open(
    tmp_path: Path,
) -> None:
    """A reload splits Friday's lunch into 12:00-12:30 and 12:45-15:00 while a 12:35 walk-in
    waits: no service holds its arrival any more, so it leaves once no service is open,
    not at once while the restaurant serves."""
    text = (REPO / "samples" / "marlowes.toml").read_text()
    friday = 'friday = [\n  { open = "12:00", close = "15:00", last_seating = "14:00" },\n'
    split = (
        'friday = [\n  { open = "12:00", close = "12:30", last_seating = "12:15" },\n'
        '  { open = "12:45", close = "15:00", last_seating = "14:00" },\n'
    )
    assert friday in text
    (tmp_path / "split.toml").write_text(text.replace(friday, split))
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    mid = marlowes.merchant_id
    clock = [datetime(2026, 12, 4, 12, 35, tzinfo=UTC)]
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        walk_ins(Receiver([marlowes], store, Settings(), lambda: clock[0]), mid,
                 [4, 2, 6, 2, 4, 4, 2])  # fmt: skip
        after = Receiver([load_restaurant(tmp_path / "split.toml")], store, Settings(),
                         lambda: clock[0])  # fmt: skip
        clock[0] = datetime(2026, 12, 4, 13, 0, tzinfo=UTC)  # the second lunch is on
        assert sweep_no_shows(after) == 0
        assert len(after.books[mid].stand(FRIDAY).queue()) == 1
        clock[0] = datetime(2026, 12, 4, 15, 30, tzinfo=UTC)  # no service open
        assert sweep_no_shows(after) == 1
        assert after.books[mid].stand(FRIDAY).queue() == []


def late_close(tmp_path: Path) -> Path:
    """Marlowe's with Friday's dinner to 01:00 and its last seating at the close."""
    text = (REPO / "samples" / "marlowes.toml").read_text()
    dinner = '{ open = "17:30", close = "23:00", last_seating = "21:30" },\n]\nsaturday'
    assert dinner in text
    late = '{ open = "17:30", close = "01:00", last_seating = "01:00" },\n]\nsaturday'
    (tmp_path / "late.toml").write_text(text.replace(dinner, late))
    return tmp_path / "late.toml"


def test_a_hold_ending_after_a_late_close_is_written_a_no_show_by_the_clock(
    tmp_path: Path,
) -> None:
    """A booking at 01:00, the close, holds its table until 01:15: by then Saturday is the
    host's today, yet Friday's no-show is still the clock's to write."""
    r = load_restaurant(late_close(tmp_path))
    clock = [datetime(2026, 12, 4, 12, 0, tzinfo=UTC)]
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver([r], store, Settings(), lambda: clock[0])
        book = receiver.books[r.merchant_id]
        found = calendar.slot_at(r, datetime(2026, 12, 5, 1, 0))
        assert found == (FRIDAY, calendar.slots(r, FRIDAY)[-1])
        booking_id = book.book(FRIDAY, found[1], 2, clock[0]).operation[2]  # type: ignore[union-attr]
        clock[0] = datetime(2026, 12, 5, 1, 14, tzinfo=UTC)
        assert sweep_no_shows(receiver) == 0  # its hold still runs
        clock[0] = datetime(2026, 12, 5, 1, 15, tzinfo=UTC)
        assert sweep_no_shows(receiver) == 1
        written = book.stand(FRIDAY).book.get(booking_id)
        assert written is not None and written.status is ReservationStatus.NO_SHOW


def test_catching_up_judges_a_day_as_of_its_last_hold_not_its_close(tmp_path: Path) -> None:
    """No server ran from before Friday's 01:00 booking until the next morning: the catch-up
    writes its no-show as of 01:15, when its hold ended (at the close it was still held)."""
    r = load_restaurant(late_close(tmp_path))
    clock = [datetime(2026, 12, 4, 12, 0, tzinfo=UTC)]
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver([r], store, Settings(), lambda: clock[0])
        book = receiver.books[r.merchant_id]
        found = calendar.slot_at(r, datetime(2026, 12, 5, 1, 0))
        assert found is not None
        booking_id = book.book(FRIDAY, found[1], 2, clock[0]).operation[2]  # type: ignore[union-attr]
        clock[0] = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)
        assert sweep_no_shows(receiver, {}) == 1
        written = book.stand(FRIDAY).book.get(booking_id)
        assert written is not None and written.status is ReservationStatus.NO_SHOW
        last = store.entries(r.merchant_id, FRIDAY)[-1]
        assert last.operation[:2] == ["board", (25 - 12) * 60 + 15]  # 01:15, opened 12:00
        assert sweep_no_shows(receiver, {}) == 0  # written: nothing left behind
