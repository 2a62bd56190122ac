"""Service days on a real SQLite file: bookings, availability cells, time and two writers."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from feed.service.days import Applied, DayBook, Refused
from feed.venue import calendar
from feed.venue.calendar import Slot
from feed.venue.restaurant import Restaurant, load_restaurant
from store.log import LogAppend, LogEntry, OutboxMessage, Remember
from store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
MARLOWES = REPO / "samples" / "marlowes.toml"
GOOGLE = REPO / "samples" / "google-floorplan.toml"
LONDON = ZoneInfo("Europe/London")
LOS_ANGELES = ZoneInfo("America/Los_Angeles")

FRIDAY = date(2026, 12, 4)  # Marlowe's: lunch from 12:00 GMT (UTC+0), dinner 17:30
MONDAY = date(2026, 12, 7)  # Marlowe's: dinner only, from 17:30
DAY_BEFORE = datetime(2026, 12, 3, 18, 0, tzinfo=UTC)  # well before either restaurant opens
EMPTY_FLOOR_MARLOWES = {1: 2, 2: 5, 3: 3, 4: 4, 5: 1, 6: 1, 7: 2, 8: 2, 9: 1, 10: 1}


def seed_row(*cells: tuple[int, int, int]) -> dict[int, tuple[int, int]]:
    return {n: (spots_open, total) for n, spots_open, total in cells}


EMPTY_SEED_FLOOR = seed_row(
    (4, 3, 3), (5, 3, 3), (6, 4, 4), (7, 1, 1), (8, 1, 1), (9, 1, 1), (10, 1, 1)
)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "hoststand.db"


@pytest.fixture
def store(db: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(db) as store:
        yield store


@pytest.fixture(scope="module")
def marlowes() -> Restaurant:
    return load_restaurant(MARLOWES)


@pytest.fixture(scope="module")
def seed_floor() -> Restaurant:
    return load_restaurant(GOOGLE)


def slot_at(r: Restaurant, day: date, hh: int, mm: int) -> Slot:
    for s in calendar.slots(r, day):
        if (s.local.hour, s.local.minute) == (hh, mm):
            return s
    raise AssertionError(f"no slot {hh:02d}:{mm:02d} on {day}")


def row(book: DayBook, day: date, slot: Slot, now: datetime) -> dict[int, tuple[int, int]]:
    return {
        c.party_size: (c.spots_open, c.spots_total) for c in book.cells(day, now) if c.slot == slot
    }


def booked(outcome: Applied | Refused) -> Applied:
    assert isinstance(outcome, Applied), outcome
    assert outcome.result is True, outcome
    return outcome


def refused(outcome: Applied | Refused, code: str) -> Refused:
    assert isinstance(outcome, Refused), outcome
    assert outcome.code == code, outcome
    return outcome


def instant(tz: ZoneInfo, *args: int) -> int:
    return int(datetime(*args, tzinfo=tz).timestamp())


# ---------------------------------------------------------------- bookings in the log


def test_a_booking_appends_the_engines_reserve_with_the_chosen_table_and_result_true(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    slot = slot_at(marlowes, FRIDAY, 19, 0)
    outcome = booked(DayBook(store, marlowes).book(FRIDAY, slot, 2, DAY_BEFORE, {"name": "Ada"}))
    # Opening is 12:00 GMT on the 4th: 18:00 the day before is 18 hours earlier.
    # T2 and T4 are the two-seaters; T4 would break the T3+T4 combo, so T2 is chosen.
    [entry] = store.entries("marlowes-kitchen", FRIDAY)
    assert entry.seq == 0 == outcome.seq
    assert entry.operation == ["reserve", -18 * 60, outcome.operation[2], "T2", 7 * 60]
    assert entry.result is True
    assert entry.meta["party_size"] == 2 and entry.meta["name"] == "Ada"


def test_a_booking_survives_reopening_the_database(db: Path, marlowes: Restaurant) -> None:
    slot = slot_at(marlowes, FRIDAY, 19, 0)
    with SQLiteStore(db) as first:
        outcome = booked(DayBook(first, marlowes).book(FRIDAY, slot, 2, DAY_BEFORE))
    with SQLiteStore(db) as second:
        book = DayBook(second, marlowes)
        [(reservation, details)] = book.reservations(FRIDAY)
        cells = row(book, FRIDAY, slot, DAY_BEFORE)
    assert reservation.id == outcome.operation[2]
    assert (reservation.tables, reservation.at) == (("T2",), 420)
    assert details["party_size"] == 2
    assert cells[2] == (4, 5) and cells[1] == (1, 2)


# ---------------------------------------------------------------- the seed's floor plan


def test_the_seed_floor_when_empty_has_the_guides_numbers(
    store: SQLiteStore, seed_floor: Restaurant
) -> None:
    book = DayBook(store, seed_floor)
    for slot in calendar.slots(seed_floor, FRIDAY):
        assert row(book, FRIDAY, slot, DAY_BEFORE) == EMPTY_SEED_FLOOR


def test_the_seed_floor_with_one_round_table_booked_has_the_guides_numbers(
    store: SQLiteStore, seed_floor: Restaurant
) -> None:
    book = DayBook(store, seed_floor)
    slot = slot_at(seed_floor, FRIDAY, 19, 0)
    outcome = booked(book.book(FRIDAY, slot, 5, DAY_BEFORE))
    assert outcome.operation[3] == "R1"  # any round table leaves as much: floor-plan order
    # The two round tables left still combine for 9-10.
    assert row(book, FRIDAY, slot, DAY_BEFORE) == seed_row(
        (4, 2, 3), (5, 2, 3), (6, 3, 4), (7, 1, 1), (8, 1, 1), (9, 1, 1), (10, 1, 1)
    )


def test_the_seed_floor_with_a_party_of_ten_on_two_round_tables_has_the_guides_numbers(
    store: SQLiteStore, seed_floor: Restaurant
) -> None:
    book = DayBook(store, seed_floor)
    slot = slot_at(seed_floor, FRIDAY, 19, 0)
    outcome = booked(book.book(FRIDAY, slot, 10, DAY_BEFORE))
    assert outcome.operation[3] == "R1+R2"  # every pair leaves as much: COMBOS order
    assert row(book, FRIDAY, slot, DAY_BEFORE) == seed_row(
        (4, 1, 3), (5, 1, 3), (6, 2, 4), (7, 1, 1), (8, 1, 1), (9, 0, 1), (10, 0, 1)
    )


def test_a_booking_blocks_its_table_while_either_party_would_still_be_eating(
    store: SQLiteStore, seed_floor: Restaurant
) -> None:
    # A party of 7 keeps L1 for 90 minutes: another 7 fits 90 minutes before or after only.
    assert seed_floor.turns[7] == 90
    book = DayBook(store, seed_floor)
    booked(book.book(FRIDAY, slot_at(seed_floor, FRIDAY, 19, 0), 7, DAY_BEFORE))
    for hh, mm, expected in ((17, 30, 1), (17, 45, 0), (18, 45, 0), (20, 15, 0), (20, 30, 1)):
        cells = row(book, FRIDAY, slot_at(seed_floor, FRIDAY, hh, mm), DAY_BEFORE)
        assert cells[7] == (expected, 1), (hh, mm)


def test_marlowes_empty_floor_has_every_unit_open(store: SQLiteStore, marlowes: Restaurant) -> None:
    # T2, T4 seat 1-2; T1, T5, T6 seat 2-4; T3 seats 4-6; from 7 the combos T5+T6 and
    # T3+T4 (6-8) and T1+T3 (8-10), of which two are disjoint.
    book = DayBook(store, marlowes)
    expected = {n: (k, k) for n, k in EMPTY_FLOOR_MARLOWES.items()}
    for slot in calendar.slots(marlowes, FRIDAY):
        assert row(book, FRIDAY, slot, DAY_BEFORE) == expected


# ---------------------------------------------------------------- the promise


@pytest.mark.parametrize(
    ("sample", "size"),
    [(MARLOWES, n) for n in range(1, 11)] + [(GOOGLE, n) for n in range(4, 11)],
)
def test_k_open_spots_take_exactly_k_bookings_and_the_next_writes_nothing(
    store: SQLiteStore, sample: Path, size: int
) -> None:
    r = load_restaurant(sample)
    book = DayBook(store, r)
    slot = slot_at(r, FRIDAY, 19, 0)
    k = row(book, FRIDAY, slot, DAY_BEFORE)[size][0]
    assert k >= 1
    for _ in range(k):
        booked(book.book(FRIDAY, slot, size, DAY_BEFORE))
    assert row(book, FRIDAY, slot, DAY_BEFORE)[size][0] == 0
    refused(book.book(FRIDAY, slot, size, DAY_BEFORE), "slot unavailable")
    assert len(store.entries(r.merchant_id, FRIDAY)) == k


# ---------------------------------------------------------------- the clock


def test_slots_that_have_started_show_nothing_open(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    now = datetime(2026, 12, 4, 13, 0, tzinfo=UTC)  # 13:00 GMT: the 13:00 slot starts now
    book = DayBook(store, marlowes)
    by_time: dict[str, dict[int, tuple[int, int]]] = {}
    for c in book.cells(FRIDAY, now):
        by_time.setdefault(c.slot.local.strftime("%H:%M"), {})[c.party_size] = (
            c.spots_open,
            c.spots_total,
        )
    for started in ("12:00", "12:45", "13:00"):
        assert by_time[started] == {n: (0, k) for n, k in EMPTY_FLOOR_MARLOWES.items()}
    for future in ("13:15", "19:00"):
        assert by_time[future] == {n: (k, k) for n, k in EMPTY_FLOOR_MARLOWES.items()}


def test_a_booking_for_a_slot_that_has_started_is_refused(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    now = datetime(2026, 12, 4, 13, 0, 30, tzinfo=UTC)
    book = DayBook(store, marlowes)
    refused(book.book(FRIDAY, slot_at(marlowes, FRIDAY, 13, 0), 2, now), "slot in the past")
    refused(book.book(FRIDAY, slot_at(marlowes, FRIDAY, 12, 15), 2, now), "slot in the past")
    assert store.entries("marlowes-kitchen", FRIDAY) == []
    booked(book.book(FRIDAY, slot_at(marlowes, FRIDAY, 13, 15), 2, now))


def test_a_cancellation_gives_the_spot_back(store: SQLiteStore, marlowes: Restaurant) -> None:
    book = DayBook(store, marlowes)
    slot = slot_at(marlowes, FRIDAY, 19, 0)
    booking_id = booked(book.book(FRIDAY, slot, 5, DAY_BEFORE)).operation[2]  # T3, the only one
    assert row(book, FRIDAY, slot, DAY_BEFORE)[5] == (0, 1)
    cancel = book.operate(FRIDAY, DAY_BEFORE + timedelta(hours=1), "cancel", booking_id)
    assert isinstance(cancel, Applied) and cancel.result == []
    assert row(book, FRIDAY, slot, DAY_BEFORE + timedelta(hours=1))[5] == (1, 1)
    booked(book.book(FRIDAY, slot, 5, DAY_BEFORE + timedelta(hours=2)))


def test_a_no_show_gives_its_table_back_to_later_slots(tmp_path: Path, store: SQLiteStore) -> None:
    # Ten-minute slots, so that a slot still blocked by a 19:00 booking (19:20) starts after
    # the no-show (19:15).
    text = MARLOWES.read_text(encoding="utf-8")
    assert "slot_minutes = 15" in text
    config = tmp_path / "ten-minute.toml"
    config.write_text(text.replace("slot_minutes = 15", "slot_minutes = 10"), encoding="utf-8")
    r = load_restaurant(config)
    book = DayBook(store, r)
    booked(book.book(FRIDAY, slot_at(r, FRIDAY, 19, 0), 5, DAY_BEFORE))
    later = slot_at(r, FRIDAY, 19, 20)
    before_expiry = datetime(2026, 12, 4, 19, 14, 59, tzinfo=UTC)
    at_expiry = datetime(2026, 12, 4, 19, 15, tzinfo=UTC)
    assert row(book, FRIDAY, later, before_expiry)[5] == (0, 1)
    assert row(book, FRIDAY, later, at_expiry)[5] == (1, 1)
    outcome = booked(book.book(FRIDAY, later, 5, at_expiry))
    assert outcome.operation[3] == "T3"


def test_operation_ts_is_real_minutes_since_the_days_opening(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    book = DayBook(store, marlowes)
    outcome = book.operate(FRIDAY, datetime(2026, 12, 4, 13, 7, 59, tzinfo=UTC), "walk_in", "P1", 2)
    assert isinstance(outcome, Applied)
    assert outcome.operation == ["walk_in", 67, "P1", 2]


def test_minute_zero_is_the_first_opening_of_the_day(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    # Monday has no lunch: the day opens at 17:30.
    assert slot_at(marlowes, MONDAY, 17, 30).minute == 0
    assert slot_at(marlowes, FRIDAY, 17, 30).minute == 330
    now = datetime(2026, 12, 7, 18, 0, tzinfo=UTC)
    outcome = DayBook(store, marlowes).operate(MONDAY, now, "walk_in", "P1", 2)
    assert isinstance(outcome, Applied) and outcome.operation[1] == 30


def test_operation_ts_is_negative_for_a_booking_made_the_day_before(
    store: SQLiteStore, seed_floor: Restaurant
) -> None:
    # merch1 opens at 17:00 PST on the 4th = 01:00 UTC on the 5th: 31 hours after DAY_BEFORE.
    slot = slot_at(seed_floor, FRIDAY, 17, 0)
    outcome = booked(DayBook(store, seed_floor).book(FRIDAY, slot, 4, DAY_BEFORE))
    assert outcome.operation[1] == -31 * 60
    assert outcome.operation[4] == 0


def test_operation_ts_is_never_lower_than_the_logs_last_ts(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    book = DayBook(store, marlowes)
    first = book.operate(FRIDAY, datetime(2026, 12, 4, 13, 30, tzinfo=UTC), "walk_in", "P1", 2)
    # A server whose clock is 20 minutes behind writes the next operation.
    second = book.operate(FRIDAY, datetime(2026, 12, 4, 13, 10, tzinfo=UTC), "walk_in", "P2", 2)
    assert isinstance(first, Applied) and isinstance(second, Applied)
    assert first.operation[1] == 90 and second.operation[1] == 90
    assert second.result == "seated T4"
    assert [e.operation[1] for e in store.entries("marlowes-kitchen", FRIDAY)] == [90, 90]


# ---------------------------------------------------------------- two writers


def test_two_daybooks_on_one_file_book_the_last_unit_once(db: Path, seed_floor: Restaurant) -> None:
    slot = slot_at(seed_floor, FRIDAY, 19, 0)
    with SQLiteStore(db) as store_a, SQLiteStore(db) as store_b:
        a, b = DayBook(store_a, seed_floor), DayBook(store_b, seed_floor)
        # Both servers have the day loaded and both show the one table for 7 open.
        assert row(a, FRIDAY, slot, DAY_BEFORE)[7] == (1, 1)
        assert row(b, FRIDAY, slot, DAY_BEFORE)[7] == (1, 1)
        booked(a.book(FRIDAY, slot, 7, DAY_BEFORE))
        refused(b.book(FRIDAY, slot, 7, DAY_BEFORE), "slot unavailable")
        seqs = [e.seq for e in store_b.entries("merch1", FRIDAY)]
    assert seqs == [0]


class _RacedStore:
    """A store whose first append is beaten by another server's booking, written just
    before it: the second writer has worked out its operation on a state that is now old."""

    def __init__(self, inner: SQLiteStore, rival: DayBook, slot: Slot) -> None:
        self.inner = inner
        self.rival = rival
        self.slot = slot
        self.raced = False

    def append_all(
        self,
        appends: Sequence[LogAppend],
        remember: Sequence[Remember] = (),
        put: Sequence[Remember] = (),
        outbox: Sequence[OutboxMessage] = (),
    ) -> None:
        if not self.raced:
            self.raced = True
            booked(self.rival.book(appends[0].service_date, self.slot, 7, DAY_BEFORE))
        self.inner.append_all(appends, remember, put, outbox)

    def entries(
        self, merchant_id: str, service_date: date, after_seq: int = -1, limit: int | None = None
    ) -> list[LogEntry]:
        return self.inner.entries(merchant_id, service_date, after_seq, limit)

    def version(self) -> int:
        return self.inner.version()

    def log_version(self) -> int:
        return self.inner.log_version()

    def operations(self, merchant_id: str, service_date: date) -> list[list[object]]:
        return self.inner.operations(merchant_id, service_date)

    def service_dates(self, merchant_id: str, since: date | None = None) -> list[date]:
        return self.inner.service_dates(merchant_id, since)

    def remember(self, scope: str, key: str, value: object) -> object:
        return self.inner.remember(scope, key, value)

    def recall(self, scope: str, key: str) -> object:
        return self.inner.recall(scope, key)

    def recall_prefix(self, scope: str, prefix: str) -> list[tuple[str, object]]:
        return self.inner.recall_prefix(scope, prefix)

    def recall_last(self, scope: str, prefix: str) -> tuple[str, object] | None:
        return self.inner.recall_last(scope, prefix)

    def close(self) -> None:
        self.inner.close()


def test_a_writer_beaten_to_the_last_unit_reloads_and_is_refused(
    db: Path, seed_floor: Restaurant
) -> None:
    slot = slot_at(seed_floor, FRIDAY, 19, 0)
    with SQLiteStore(db) as store_a, SQLiteStore(db) as store_b:
        a = DayBook(store_a, seed_floor)
        raced = _RacedStore(store_b, a, slot)
        b = DayBook(raced, seed_floor)
        refused(b.book(FRIDAY, slot, 7, DAY_BEFORE), "slot unavailable")
        entries = store_b.entries("merch1", FRIDAY)
    assert raced.raced
    assert [e.seq for e in entries] == [0]
    assert entries[0].operation[3] == "L1"


# ---------------------------------------------------------------- clock changes


@pytest.mark.parametrize(
    ("sample", "tz", "day"),
    [
        (MARLOWES, LONDON, date(2026, 10, 25)),
        (GOOGLE, LOS_ANGELES, date(2026, 3, 8)),
        (GOOGLE, LOS_ANGELES, date(2026, 11, 1)),
    ],
)
def test_on_a_clock_change_day_slots_keep_wall_clock_times_at_their_real_instants(
    store: SQLiteStore, sample: Path, tz: ZoneInfo, day: date
) -> None:
    r = load_restaurant(sample)
    cells = DayBook(store, r).cells(day, DAY_BEFORE.replace(year=2025))
    times = sorted({(c.slot.local.hour, c.slot.local.minute) for c in cells})
    if sample == MARLOWES:  # a Sunday: lunch 12:00-14:00 and dinner 17:30-21:30
        expected = [(12 + q // 4, q % 4 * 15) for q in range(9)]
        expected += [(17 + (q + 2) // 4, (q + 2) % 4 * 15) for q in range(17)]
    else:
        expected = [(17 + q // 4, q % 4 * 15) for q in range(17)]
    assert times == expected
    for c in cells:
        assert c.slot.local.date() == day and c.slot.local.tzinfo is r.tz
        local = c.slot.local
        assert c.slot.start_sec == instant(
            tz, day.year, day.month, day.day, local.hour, local.minute
        )


def test_start_sec_on_clock_change_days_is_the_real_instant() -> None:
    london = load_restaurant(MARLOWES)
    la = load_restaurant(GOOGLE)
    # 2026-10-25: London is back on GMT, so 19:00 is 19:00 UTC (the day before it was 18:00).
    assert slot_at(london, date(2026, 10, 25), 19, 0).start_sec == 1792954800
    assert slot_at(london, date(2026, 10, 24), 19, 0).start_sec == 1792954800 - 25 * 3600
    # 2026-03-08: Los Angeles is on PDT (UTC-7), 17:00 is 00:00 UTC on the 9th.
    assert slot_at(la, date(2026, 3, 8), 17, 0).start_sec == instant(UTC, 2026, 3, 9, 0, 0)
    # 2026-11-01: back on PST (UTC-8), 17:00 is 01:00 UTC on the 2nd.
    assert slot_at(la, date(2026, 11, 1), 17, 0).start_sec == instant(UTC, 2026, 11, 2, 1, 0)


@pytest.mark.parametrize(
    ("sample", "day", "now", "real_minutes"),
    [
        # Midnight BST on the 25th; the clocks go back at 02:00, so 12:00 GMT is 13 hours on.
        (MARLOWES, date(2026, 10, 25), datetime(2026, 10, 24, 23, 0, tzinfo=UTC), 13 * 60),
        # Midnight PST on 8 March; the clocks skip 02:00-03:00, so 17:00 PDT is 16 hours on.
        (GOOGLE, date(2026, 3, 8), datetime(2026, 3, 8, 8, 0, tzinfo=UTC), 16 * 60),
        # Midnight PDT on 1 November; 01:00-02:00 happens twice, so 17:00 PST is 18 hours on.
        (GOOGLE, date(2026, 11, 1), datetime(2026, 11, 1, 7, 0, tzinfo=UTC), 18 * 60),
    ],
)
def test_on_a_clock_change_day_operation_ts_counts_real_minutes(
    store: SQLiteStore, sample: Path, day: date, now: datetime, real_minutes: int
) -> None:
    r = load_restaurant(sample)
    opening = r.hours[day.weekday()][0].open
    slot = slot_at(r, day, opening.hour, opening.minute)
    outcome = booked(DayBook(store, r).book(day, slot, 4, now))
    assert outcome.operation[1] == -real_minutes
    assert outcome.operation[4] == 0


# ---------------------------------------------------------------- closed days


def test_a_closed_day_has_no_cells(store: SQLiteStore, marlowes: Restaurant) -> None:
    book = DayBook(store, marlowes)
    assert book.cells(date(2026, 12, 25), DAY_BEFORE) == []
    assert book.cells(date(2026, 12, 26), DAY_BEFORE) == []
    assert len(book.cells(date(2026, 12, 27), DAY_BEFORE)) == 26 * 10


def test_booking_on_a_closed_day_is_refused_as_closed(
    store: SQLiteStore, marlowes: Restaurant
) -> None:
    christmas = date(2026, 12, 25)
    # The slot a normal Friday would have at 19:00, moved to Christmas Day.
    usual = slot_at(marlowes, FRIDAY, 19, 0)
    slot = Slot(
        usual.local.replace(month=12, day=25),
        usual.start_sec + 21 * 86400,
        usual.minute,
    )
    refused(DayBook(store, marlowes).book(christmas, slot, 2, DAY_BEFORE), "closed")
    refused(DayBook(store, marlowes).operate(christmas, DAY_BEFORE, "walk_in", "P1", 2), "closed")
    assert store.entries("marlowes-kitchen", christmas) == []


def test_a_long_running_book_keeps_few_days_in_memory_and_reloads_the_others(
    store: SQLiteStore, marlowes: Restaurant, monkeypatch: pytest.MonkeyPatch
) -> None:
    from feed.service import days as days_module

    monkeypatch.setattr(days_module, "DAYS_KEPT", 2)
    book = DayBook(store, marlowes)
    days_ = [FRIDAY + timedelta(days=n) for n in range(4)]  # Fri..Mon, all serve dinner
    ids = []
    for day in days_:
        ids.append(
            booked(book.book(day, slot_at(marlowes, day, 19, 0), 4, DAY_BEFORE)).operation[2]
        )
    assert len(book._days) == 2  # only the two most recently used days stay replayed
    first = book.stand(days_[0])  # evicted: replayed again from the log
    assert first.book.get(ids[0]) is not None
    assert [r.id for r, _ in book.reservations(days_[0])] == [ids[0]]


def test_cached_spots_follow_bookings_made_here_and_by_another_process(
    db: Path, marlowes: Restaurant
) -> None:
    first, second = SQLiteStore(db), SQLiteStore(db)
    try:
        here, elsewhere = DayBook(first, marlowes), DayBook(second, marlowes)
        slot = slot_at(marlowes, FRIDAY, 19, 0)
        assert here.spots_many(FRIDAY, [(slot, 4)], DAY_BEFORE) == [4]
        booked(elsewhere.book(FRIDAY, slot, 4, DAY_BEFORE))  # another process's writer
        assert here.spots_many(FRIDAY, [(slot, 4)], DAY_BEFORE) == [3]
        booked(here.book(FRIDAY, slot, 4, DAY_BEFORE))
        # two of the three 4-tops are booked; a couple fits the 2-tops and the 4-tops
        assert here.spots_many(FRIDAY, [(slot, 4), (slot, 2)], DAY_BEFORE) == [2, 3]
        expected = [row(here, FRIDAY, slot, DAY_BEFORE)[n][0] for n in range(1, 11)]
        assert here.spots_many(FRIDAY, [(slot, n) for n in range(1, 11)], DAY_BEFORE) == expected
    finally:
        first.close()
        second.close()


def test_a_day_aheads_lookup_grid_outlives_the_minute_and_answers_as_a_fresh_one(
    store: SQLiteStore, marlowes: Restaurant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before a day opens nothing on its floor changes with the clock: lookups at later
    minutes read the grid worked out at the first (rules.opens runs once), and answer what
    a DayBook with nothing kept answers. Today's grid is worked out again each minute."""
    from feed.service import rules

    day = date(2026, 12, 5)
    first = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    book = DayBook(store, marlowes)
    seven = slot_at(marlowes, day, 19, 0)
    for size in (6, 4, 2):
        booked(book.book(day, seven, size, first))
    asked = [(s, n) for s in calendar.slots(marlowes, day) for n in (2, 4, 6)]
    calls: list[date] = []
    opens = rules.opens
    monkeypatch.setattr(rules, "opens", lambda r, d, *a: calls.append(d) or opens(r, d, *a))
    answers = [book.spots_many(day, asked, first + timedelta(minutes=m)) for m in (0, 1, 90)]
    assert calls == [day]  # once, for three minutes
    assert answers[0] == answers[1] == answers[2]
    assert answers[0] == DayBook(store, marlowes).spots_many(day, asked, first)
    assert 0 in answers[0] and max(answers[0]) > 0
    calls.clear()
    opening = calendar.opening_instant(marlowes, day)
    assert opening is not None
    for m in (1, 2):  # the day under way: its floor changes with the minute
        book.spots_many(day, asked, opening + timedelta(minutes=m))
    assert calls == [day, day]


@pytest.mark.parametrize("sample", ["marlowes.toml", "harbour.toml", "terrace.toml"])
def test_partners_rows_read_off_the_lookup_grid_are_the_rules_rows(
    store: SQLiteStore, sample: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a replace sends (rows as partners see them) comes from the grid lookups read,
    worked out once for both, and is what the general path works out (every size and area,
    before the day and while it runs, with the floor live)."""
    from feed.service import rules

    r = load_restaurant(REPO / "samples" / sample)
    book = DayBook(store, r)
    day = date(2026, 12, 5)
    before = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
    for hhmm, size in (("19:00", 2), ("19:00", 4), ("19:30", 6), ("20:00", 2)):
        found = calendar.slot_at(r, datetime.fromisoformat(f"{day.isoformat()}T{hhmm}"))
        assert found is not None
        book.book(day, found[1], size, before, host=True, over_pacing=True)
    opening = calendar.opening_instant(r, day)
    assert opening is not None
    during = opening + timedelta(hours=7)
    areas = [None, *(a.id for a in r.rooms)]
    calls: list[date] = []
    opens = rules.opens
    monkeypatch.setattr(rules, "opens", lambda rr, d, *a: calls.append(d) or opens(rr, d, *a))
    for now in (before, during):
        if now == during:  # the floor is live: somebody sits down
            assert isinstance(book.operate(day, during, "walk_in", "w-1", 2), Applied)
        calls.clear()
        for area in areas:
            fast = book.rows(day, now, area=area)
            assert fast == book.rows(day, now, range(1, r.online_limit + 1), area=area)
            assert any(spots for _, _, spots, _ in fast)
        asked = [(s, 2) for s in calendar.slots(r, day)]
        book.spots_many(day, asked, now)
        assert calls.count(day) == 1 + len(areas)  # the grid once; the general path per area
