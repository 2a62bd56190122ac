"""engine.booked.fold against a replay of the host stand, and SQLiteStore.booked against fold.

The fold reads a day's (operation, stored result) pairs and must leave exactly the
reservations a replay of the same operations leaves still booked, at every minute; the
store folds what it stored in SQL and must agree with it day by day.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine import MARLOWES, FloorPlan, HostStand, build_floor, config
from engine.booked import BookedDay, fold, party_size, succeeded, valid_shape_ts
from engine.stand import is_int
from feed.service.days import json_result
from store import open_store
from store.log import NewEntry
from store.sqlite import SQLiteStore

HOLD_AFTER = config.HOLD_AFTER_MINUTES

FOLD_SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
STORE_SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# A second floor besides Marlowe's: other table ids, and one combo.
SMALL = build_floor([("A", 2), ("B", 4), ("C", 4)], [("B", "C")])
FLOORS = st.sampled_from([MARLOWES, SMALL])

Entries = list[tuple[Any, Any, Any]]  # (operation, result, meta) as the service stores them

# -- strategies -------------------------------------------------------------------------------

STEPS = (0, 0, 0, 1, 2, 5, 10, 14, 15, 16, 30, 60, 200)  # same-minute operations are common
AT_OFFSETS = (-5, 0, 1, 10, 14, 15, 16, 20, 29, 30, 31, 45, 60, 90)  # <= 0: a past `at`
RESERVATION_IDS = ("R1", "R2", "R3", "R4", "P1")  # P1 is also a walk-in id: duplicates
PARTY_IDS = ("P1", "P2", "P3", "P4", "R1")
SIZES = (1, 2, 2, 3, 4, 4, 5, 6, 8, 10)
BAD_TS: tuple[Any, ...] = (None, True, False, 2.5, "10", [], {})
WELL_FORMED: tuple[str, ...] = ("reserve",) * 5 + ("cancel",) * 2 + ("check_in",) * 3
WELL_FORMED += ("walk_in",) * 3 + ("free", "free", "leave", "quote", "board")
WELL_FORMED += ("seat", "seat", "move", "arrive", "arrive")
KINDS = (*WELL_FORMED, "malformed", "malformed", "backwards")


def units_of(floor: FloorPlan) -> list[str]:
    """Every unit a reservation can name, plus unknown ones (and an empty one: invalid)."""
    tables = [t.id for t in floor.tables]
    return [*tables, *tables, *(c.id for c in floor.combos), "T9", "X+Y", ""]


class Drawer:
    """Draws operations for one log, remembering the reservations it asked for so later
    operations can aim at them: conflicts, cancels, check-ins early, on time and late."""

    def __init__(self, draw: st.DrawFn, floor: FloorPlan) -> None:
        self.draw = draw
        self.floor = floor
        self.asked: list[tuple[str, str, int]] = []  # (id, unit, at) of every reserve drawn

    def pick(self, pool: tuple[str, ...]) -> str:
        ids = [rid for rid, _, _ in self.asked]
        return self.draw(st.sampled_from([*ids, *ids, *pool]))

    def well_formed(self, kind: str, ts: int) -> list[Any]:
        """An operation of valid shape at `ts` (the engine may still reject its arguments)."""
        draw = self.draw
        if kind == "reserve":
            rid = draw(st.sampled_from(RESERVATION_IDS))
            if self.asked and bool(draw(st.booleans())):  # near another one: a conflict or not
                _, unit, at = draw(st.sampled_from(self.asked))
                at += draw(st.sampled_from((-30, -29, -10, 0, 10, 29, 30)))
                if draw(st.booleans()):
                    unit = draw(st.sampled_from(units_of(self.floor)))
            else:
                unit = draw(st.sampled_from(units_of(self.floor)))
                at = ts + draw(st.sampled_from(AT_OFFSETS))
            self.asked.append((rid, unit, at))
            return [kind, ts, rid, unit, at]
        if kind in ("cancel", "check_in", "arrive"):
            return [kind, ts, self.pick((*RESERVATION_IDS, "R9", ""))]
        if kind in ("seat", "move"):
            unit = draw(st.sampled_from(units_of(self.floor)))
            return [kind, ts, self.pick((*RESERVATION_IDS, *PARTY_IDS, "")), unit]
        if kind == "walk_in":
            return [kind, ts, draw(st.sampled_from(PARTY_IDS)), draw(st.sampled_from(SIZES))]
        if kind == "free":
            return [kind, ts, draw(st.sampled_from([*(t.id for t in self.floor.tables), "T9"]))]
        if kind == "leave":
            return [kind, ts, draw(st.sampled_from(PARTY_IDS))]
        if kind == "quote":
            return [kind, ts, draw(st.sampled_from(SIZES))]
        return ["board", ts]

    def malformed(self, ts: int) -> list[Any]:
        """An operation the engine rejects before looking at it, often with a `ts` far ahead:
        whatever its ts, it must expire nothing."""
        draw = self.draw
        jump = draw(st.sampled_from((0, 1, 100, 1000)))
        op = self.well_formed(draw(st.sampled_from(WELL_FORMED)), ts + jump)
        how = draw(st.sampled_from(("longer", "shorter", "ts", "ts", "name", "empty")))
        if how == "longer":
            return [*op, draw(st.sampled_from((0, "x", None)))]
        if how == "shorter":
            return op[: draw(st.integers(1, len(op) - 1))]
        if how == "ts":
            bad = draw(st.sampled_from((*BAD_TS, True, False, float(ts + jump), str(ts + jump))))
            return [op[0], bad, *op[2:]]
        if how == "name":
            return [draw(st.sampled_from(("sit", "Reserve", "", None, 1, True))), *op[1:]]
        return []

    def next_op(self, ts: int, kind: str) -> list[Any]:
        """The next operation, mostly a small step later; a check-in or cancel often aims at a
        reservation asked for, at the minute just before, in or just after its hold."""
        draw = self.draw
        aimed = ("check_in", "cancel", "arrive", "seat")
        if kind in aimed and self.asked and bool(draw(st.booleans())):
            rid, unit, at = draw(st.sampled_from(self.asked))
            at += draw(st.sampled_from((-16, -15, -1, 0, 14, 15)))
            return [kind, max(ts, at), rid, *([unit] if kind == "seat" else [])]
        return self.well_formed(kind, ts + draw(st.sampled_from(STEPS)))


@st.composite
def operation_logs(draw: st.DrawFn, floor: FloorPlan, max_size: int = 30) -> list[Any]:
    """Mostly non-decreasing ts; malformed operations and ones going back in time mixed in
    (neither moves the clock of the ones that follow)."""
    drawer = Drawer(draw, floor)
    # Often below 1, sometimes far below: there a bool ts (False, True) would be the latest.
    ts = draw(st.integers(-45, 15) | st.integers(-10_000, -9_000))
    ops: list[Any] = []
    for _ in range(draw(st.integers(0, max_size))):
        kind = draw(st.sampled_from(KINDS))
        if kind == "malformed":
            ops.append(drawer.malformed(ts))
        elif kind == "backwards":
            back = ts - draw(st.integers(1, 40))
            ops.append(drawer.well_formed(draw(st.sampled_from(WELL_FORMED)), back))
        else:
            ops.append(drawer.next_op(ts, kind))
            ts = ops[-1][1]
    return ops


@st.composite
def floor_and_log(draw: st.DrawFn, max_size: int = 30) -> tuple[FloorPlan, list[Any]]:
    floor = draw(FLOORS)
    return floor, draw(operation_logs(floor, max_size))


# -- helpers ----------------------------------------------------------------------------------


def meta_of(op: Any) -> dict[str, Any]:
    """The meta the service would store beside an operation: a reserve's party size, drawn
    from its `at` so logs stay plain lists; now and then none, or one that is no size."""
    if not (isinstance(op, list) and len(op) == 5 and op[0] == "reserve" and is_int(op[4])):
        return {}
    at = op[4]
    if at % 7 == 0:
        return {}
    if at % 11 == 0:
        return {"party_size": str(at % 10 + 1)}
    return {"party_size": at % 10 + 1, "partner": "p"}


def replay(floor: FloorPlan, ops: list[Any]) -> tuple[HostStand, Entries]:
    """The engine's log: each operation with its result as stored ("error: <code>")."""
    stand = HostStand(floor)
    return stand, [(op, json_result(stand.apply(op)), meta_of(op)) for op in ops]


def engine_still_booked(stand: HostStand, ts: int) -> Counter[tuple[str, int]]:
    return Counter(
        (r.unit, r.at) for r in stand.book.booked() if r.arrived or r.at + HOLD_AFTER > ts
    )


def sizes_of(entries: Entries) -> dict[str, int | None]:
    """Each reservation's party size as its successful reserve's meta gave it."""
    return {op[2]: party_size(meta) for op, result, meta in entries if change_starts(op, result)}


def change_starts(op: Any, result: Any) -> bool:
    return isinstance(op, list) and bool(op) and op[0] == "reserve" and result is True


def engine_bookings(
    stand: HostStand, entries: Entries, ts: int
) -> Counter[tuple[str, int, int | None, bool]]:
    sizes = sizes_of(entries)
    return Counter(
        (r.unit, r.at, sizes[r.id], r.arrived)
        for r in stand.book.booked()
        if r.arrived or r.at + HOLD_AFTER > ts
    )


def probe_times(stand: HostStand, entries: Entries) -> set[int]:
    """Minutes around every ts of the log and every no-show boundary, and far off both ways."""
    times = {-100_000, 100_000}
    for op, _, _ in entries:
        if isinstance(op, list) and len(op) > 1 and is_int(op[1]):
            times |= {op[1] - 1, op[1], op[1] + 1}
    for r in stand.reservations():
        end = r.at + HOLD_AFTER
        times |= {r.at - 15, end - 1, end, end + 1}
    return times


def stored(entries: Entries) -> Entries:
    """The entries as a store gives them back: through JSON."""
    return [tuple(json.loads(json.dumps(part)) for part in entry) for entry in entries]  # type: ignore[misc]


def assert_same_live(stand: HostStand, entries: Entries, day: BookedDay) -> None:
    """The fold's last ts, and the reservations it keeps that are not due as no-shows by
    then (arrived ones never are), by id, are the replay's last ts and still-booked
    reservations, with the party size their reserve's meta gave and whether they arrived."""
    assert day.last_ts == stand.last_ts
    sizes = sizes_of(entries)
    live = {r.id: (r.unit, r.at, sizes[r.id], r.arrived) for r in stand.book.booked()}
    if day.last_ts is None:
        assert day.reservations == live == {}
    else:
        assert {
            rid: booking
            for rid, booking in day.reservations.items()
            if booking.arrived or booking.at + HOLD_AFTER > day.last_ts
        } == live


def assert_fold_matches_replay(stand: HostStand, entries: Entries) -> BookedDay:
    day = fold(entries)
    assert_same_live(stand, entries, day)
    for ts in sorted(probe_times(stand, entries)):
        assert Counter(day.still_booked(ts)) == engine_still_booked(stand, ts), ts
        assert Counter(day.bookings(ts)) == engine_bookings(stand, entries, ts), ts
    assert fold(stored(entries)) == day
    return day


def label(stand: HostStand, entries: Entries) -> None:
    """Hypothesis statistics (--hypothesis-show-statistics): which rules a log exercised."""
    for r in stand.reservations():
        event(f"reservation {r.status}")
    for op, result, _ in entries:
        if (
            isinstance(op, list)
            and op
            and op[0] in ("reserve", "cancel", "check_in", "seat", "arrive")
        ):
            event(f"{op[0]} {'ok' if succeeded(result) else result}")
        elif valid_shape_ts(op) is None:
            event("malformed")


# -- fold against replay --------------------------------------------------------------------


@FOLD_SETTINGS
@given(floor_and_log())
def test_fold_leaves_booked_what_a_replay_leaves_booked_at_every_minute(
    case: tuple[FloorPlan, list[Any]],
) -> None:
    """After every operation of the log (a log read while it grows), and at every minute
    around the whole log's times."""
    floor, ops = case
    stand = HostStand(floor)
    entries: Entries = []
    for op in ops:
        entries.append((op, json_result(stand.apply(op)), meta_of(op)))
        assert_same_live(stand, entries, fold(entries))
    label(stand, entries)
    assert_fold_matches_replay(stand, entries)


@st.composite
def with_malformed(draw: st.DrawFn) -> tuple[FloorPlan, list[Any], list[Any]]:
    """A log, and the same log with malformed operations put in anywhere, at any ts."""
    floor, ops = draw(floor_and_log(max_size=20))
    drawer = Drawer(draw, floor)
    mixed = list(ops)
    for _ in range(draw(st.integers(1, 5))):
        ts = draw(st.sampled_from((-100_000, -1, 0, 1, 100, 100_000)))
        mixed.insert(draw(st.integers(0, len(mixed))), drawer.malformed(ts))
    return floor, ops, mixed


@FOLD_SETTINGS
@given(with_malformed())
def test_malformed_operations_anywhere_change_nothing(
    case: tuple[FloorPlan, list[Any], list[Any]],
) -> None:
    floor, ops, mixed = case
    _, entries = replay(floor, ops)
    stand, mixed_entries = replay(floor, mixed)
    kept = [entry for entry in mixed_entries if valid_shape_ts(entry[0]) is not None]
    assert kept == [entry for entry in entries if valid_shape_ts(entry[0]) is not None]
    assert fold(mixed_entries) == fold(entries)
    assert_fold_matches_replay(stand, mixed_entries)


# -- SQLiteStore.booked against fold --------------------------------------------------------

MERCHANTS = ("marlowes", "marlowes-2", "anchor")  # the last one never has entries
FIRST_DAY = date(2024, 12, 29)  # the days cross a year end: ISO text order is date order


def day_of(n: int) -> date:
    return FIRST_DAY + timedelta(days=n)


logs_by_day = st.dictionaries(
    st.tuples(st.sampled_from(MERCHANTS[:2]), st.integers(0, 5)),
    floor_and_log(max_size=20),
    max_size=7,
)


@STORE_SETTINGS
@given(logs_by_day, st.integers(-1, 6), st.integers(-1, 6))
def test_the_sqlite_store_folds_every_stored_day_like_fold(
    logs: dict[tuple[str, int], tuple[FloorPlan, list[Any]]], first: int, last: int
) -> None:
    replays = {key: replay(floor, ops) for key, (floor, ops) in logs.items()}
    entries = {key: day_entries for key, (_, day_entries) in replays.items()}
    with tempfile.TemporaryDirectory() as folder, SQLiteStore(Path(folder) / "x.db") as store:
        for (merchant, n), day_entries in entries.items():
            if day_entries:  # an empty log is never written
                new = [NewEntry(op, result, 0.0, meta) for op, result, meta in day_entries]
                store.append(merchant, day_of(n), 0, new)
        for merchant in MERCHANTS:
            for lo, hi in ((first, last), (-1, 6)):
                got = store.booked(merchant, day_of(lo), day_of(hi))
                expected = {
                    day_of(n): fold(day_entries)
                    for (m, n), day_entries in entries.items()
                    if m == merchant and lo <= n <= hi and day_entries
                }
                assert sorted(got) == sorted(expected)
                for day, want in expected.items():
                    stand, day_entries = replays[merchant, (day - FIRST_DAY).days]
                    assert_same_live(stand, day_entries, got[day])
                    assert got[day].last_ts == want.last_ts, day
                    assert got[day].reservations == want.reservations, day
                    # booking order too (still_booked keeps it)
                    assert list(got[day].reservations) == list(want.reservations), day


# -- the rules, one hand-written log each ---------------------------------------------------

RESERVE = ["reserve", 0, "R1", "T1", 60]  # holds T1 from 45, a no-show from 75


def checked(ops: list[Any], floor: FloorPlan = MARLOWES) -> BookedDay:
    """The fold of the log the engine writes for `ops`, checked against its replay."""
    stand, entries = replay(floor, ops)
    return assert_fold_matches_replay(stand, entries)


def results(ops: list[Any], floor: FloorPlan = MARLOWES) -> list[Any]:
    return [result for _, result, _ in replay(floor, ops)[1]]


def test_a_reservation_holds_until_its_no_show_minute() -> None:
    day = checked([RESERVE])
    assert day == BookedDay(last_ts=0, reservations={"R1": ("T1", 60, 1, False)})
    assert day.still_booked(0) == [("T1", 60)]
    assert day.still_booked(74) == [("T1", 60)]
    assert day.still_booked(75) == []  # a later minute than the log's expires it too
    assert day.still_booked(-1000) == [("T1", 60)]


def test_a_combo_reservation_is_booked_under_its_combo_id() -> None:
    day = checked([["reserve", 0, "R1", "T5+T6", 60], ["reserve", 1, "R2", "T5", 70]])
    assert day.still_booked(1) == [("T5+T6", 60)]  # R2 conflicts on T5


def test_a_successful_cancel_ends_a_reservation() -> None:
    ops = [RESERVE, ["cancel", 10, "R1"]]
    assert results(ops) == [True, []]
    day = checked(ops)
    assert day.reservations == {}
    assert day.still_booked(10) == day.still_booked(-1000) == []


def test_a_successful_check_in_ends_a_reservation() -> None:
    ops = [RESERVE, ["check_in", 50, "R1"]]
    assert results(ops) == [True, "seated T1"]
    assert checked(ops).still_booked(50) == []


def test_a_successful_seat_of_a_reservation_ends_it() -> None:
    ops = [RESERVE, ["seat", 10, "R1", "T5"]]
    assert results(ops) == [True, ["R1@T5"]]
    assert checked(ops).reservations == {}


def test_seating_a_walk_in_ends_no_reservation() -> None:
    ops = [RESERVE, ["walk_in", 1, "P1", 2], ["seat", 2, "P1", "T1"]]
    assert results(ops)[-1] == "error: not waiting"
    assert checked(ops).still_booked(2) == [("T1", 60)]


def test_an_arrived_reservation_is_never_dropped_as_a_no_show() -> None:
    ops = [RESERVE, ["arrive", 50, "R1"], ["board", 500]]
    assert results(ops)[1] is True
    day = checked(ops)
    assert day.still_booked(1000) == [("T1", 60)]
    assert day.bookings(1000) == [("T1", 60, 1, True)]


def test_a_rejected_arrive_marks_nothing() -> None:
    ops = [RESERVE, ["arrive", 75, "R1"]]  # a no-show by then
    assert results(ops)[-1] == "error: reservation not active"
    assert checked(ops).bookings(0) == []


def test_a_reservation_keeps_the_party_size_of_its_reserves_meta() -> None:
    entries = [(["reserve", 0, "R1", "T1", 60], True, {"party_size": 3})]
    entries += [(["reserve", 0, "R2", "T2", 60], True, {})]
    entries += [(["reserve", 0, "R3", "T4", 60], True, {"party_size": True})]
    assert fold(entries).bookings(0) == [
        ("T1", 60, 3, False),
        ("T2", 60, None, False),
        ("T4", 60, None, False),
    ]


@pytest.mark.parametrize(
    ("ending", "code"),
    [
        (["cancel", 10, "R9"], "unknown reservation"),
        (["check_in", 10, "R1"], "too early"),  # T1 is held from 45
        (["cancel", -5, "R1"], "invalid arguments"),  # ts went back: valid shape, rejected
        (["check_in", -5, "R1"], "invalid arguments"),
    ],
)
def test_a_rejected_cancel_or_check_in_ends_nothing(ending: list[Any], code: str) -> None:
    ops = [RESERVE, ["board", 0], ending]
    assert results(ops)[-1] == f"error: {code}"
    day = checked(ops)
    assert day.still_booked(0) == [("T1", 60)]
    assert day.last_ts == max(0, ending[1])


def test_a_check_in_at_a_busy_table_is_rejected_and_ends_nothing() -> None:
    ops = [RESERVE, ["walk_in", 40, "P1", 4], ["check_in", 50, "R1"]]
    assert results(ops)[1:] == ["seated T1", "error: table busy"]
    assert checked(ops).still_booked(50) == [("T1", 60)]


def test_a_rejected_reserve_books_nothing() -> None:
    ops = [
        RESERVE,
        ["reserve", 1, "R1", "T2", 60],  # duplicate id
        ["reserve", 1, "R2", "T1", 80],  # conflict: 20 minutes from R1 on T1
        ["reserve", 1, "R3", "T9", 80],  # unknown unit
        ["reserve", 1, "R4", "T2", 1],  # not in the future
        ["walk_in", 2, "P1", 2],
        ["reserve", 2, "P1", "T4", 90],  # a walk-in's id
    ]
    assert [str(r)[:7] for r in results(ops)] == ["True"] + ["error: "] * 4 + ["seated ", "error: "]
    assert checked(ops).still_booked(2) == [("T1", 60)]


def test_a_later_valid_operation_makes_a_no_show() -> None:
    assert checked([RESERVE, ["board", 74]]).still_booked(0) == [("T1", 60)]
    day = checked([RESERVE, ["board", 75]])
    assert day.last_ts == 75
    assert day.still_booked(0) == []
    assert day.still_booked(-1000) == []  # asking about an earlier minute cannot undo it


@pytest.mark.parametrize(
    "bad",
    [
        ["board", 1000, "extra"],  # wrong arity
        ["cancel", 1000],
        ["board", 1000.0],  # not an integer ts
        ["board", "1000"],
        ["board", True],  # a bool is not an integer ts
        ["board", None],
        ["seat", 1000],  # too short
        ["sit", 1000, "P1", "T1"],  # unknown name
        [None, 1000],
        [],
    ],
)
def test_a_malformed_operation_expires_nothing_whatever_its_ts(bad: list[Any]) -> None:
    ops = [RESERVE, bad]
    assert results(ops)[-1] in ("error: invalid arguments", "error: unknown operation")
    day = checked(ops)
    assert day.last_ts == 0
    assert day.still_booked(0) == [("T1", 60)]


@pytest.mark.parametrize(
    "rejected",
    [
        ["cancel", 1000, "R9"],  # unknown reservation
        ["free", 1000, "T1"],  # nobody at the table
        ["walk_in", 1000, "P1", 99],  # invalid size
        ["reserve", 1000, "R2", "T9", 1100],  # unknown table
        ["check_in", 1000, "R1"],  # already a no-show by then
    ],
)
def test_a_rejected_operation_of_valid_shape_does_expire(rejected: list[Any]) -> None:
    ops = [RESERVE, rejected]
    assert str(results(ops)[-1]).startswith("error: ")
    day = checked(ops)
    assert day.last_ts == 1000
    assert day.still_booked(0) == []


def test_an_operation_going_back_in_time_does_not_move_the_last_ts() -> None:
    ops = [RESERVE, ["board", 80], ["reserve", 5, "R2", "T2", 60]]
    assert results(ops)[-1] == "error: invalid arguments"
    day = checked(ops)
    assert day.last_ts == 80
    assert day.still_booked(0) == []


def test_an_empty_log_or_one_of_malformed_operations_has_no_last_ts() -> None:
    assert checked([]) == BookedDay()
    assert checked([["board"], ["nope", 5]]) == BookedDay(last_ts=None, reservations={})
    assert BookedDay().bookings(0) == []
    assert BookedDay().still_booked(0) == []


EXAMPLE_LOGS: list[list[Any]] = [
    [RESERVE],
    [RESERVE, ["cancel", 10, "R1"]],
    [RESERVE, ["check_in", 50, "R1"]],
    [RESERVE, ["cancel", 10, "R9"], ["check_in", 10, "R1"], ["cancel", -5, "R1"]],
    [RESERVE, ["board", 75], ["reserve", 76, "R2", "T1", 120]],
    [RESERVE, ["board", 1000, "extra"], ["board", 1000.0], ["board", True], []],
    [RESERVE, ["cancel", 1000, "R9"]],
    [["reserve", 0, "R1", "T5+T6", 60], ["reserve", 1, "R2", "T5", 70], ["board", 2]],
    [["board"], ["nope", 5]],
    [RESERVE, ["seat", 10, "R1", "T5"], ["reserve", 11, "R2", "T1", 70]],
    [RESERVE, ["arrive", 50, "R1"], ["arrive", 51, "R9"], ["board", 500]],
]


def test_each_store_agrees_with_fold_on_the_example_logs(any_db: str) -> None:
    """The SQLite file and PostgreSQL (fold_days over their two reads) against the
    reference fold (`take` per entry)."""
    logs = {day_of(n): replay(MARLOWES, ops)[1] for n, ops in enumerate(EXAMPLE_LOGS)}
    with open_store(any_db) as store:
        for day, entries in logs.items():
            new = [NewEntry(op, r, 0.0, meta) for op, r, meta in entries]
            store.append("marlowes", day, 0, new)
            store.append("anchor", day, 0, [NewEntry(["reserve", 0, "X", "T2", 60], True, 0.0)])
        got = store.booked("marlowes", min(logs), max(logs))
        assert got == {day: fold(entries) for day, entries in logs.items()}
        one = day_of(1)
        assert store.booked("marlowes", one, one) == {one: fold(logs[one])}
        assert store.booked("marlowes", day_of(100), day_of(200)) == {}
        assert store.booked("marlowes", max(logs), min(logs)) == {}  # first after last
        assert store.booked("nobody", min(logs), max(logs)) == {}


# -- the store against fold at the edges of what SQLite holds ------------------------------


# Service-day minutes beyond SQLite's 64-bit integers: the engine takes them, the store
# clamps them (store.sqlite._columns), and nothing near any real slot may move.
HUGE_LOGS: list[list[Any]] = [
    [["reserve", 0, "R1", "T1", 60], ["reserve", 0, "R2", "T2", 2**63 + 5]],
    [["reserve", 0, "R1", "T1", 60], ["board", 2**64 + 3]],  # a far-off minute expires R1
    [["reserve", 0, "R1", "T1", 2**64], ["board", 2**64 + 20]],  # R1 due before that minute
    [["reserve", -(2**64), "R1", "T1", 60], ["reserve", -(2**64), "R2", "T2", -(2**63) - 40]],
]


def near_a_slot(booked: list[tuple[str, int]]) -> Counter[tuple[str, int]]:
    return Counter((unit, at) for unit, at in booked if abs(at) < 2**62)


@pytest.mark.parametrize("ops", HUGE_LOGS)
def test_minutes_beyond_64_bits_are_stored_and_move_nothing_near_a_slot(
    tmp_path: Path, ops: list[Any]
) -> None:
    entries = replay(MARLOWES, ops)[1]
    want = fold(entries)
    with SQLiteStore(tmp_path / "x.db") as store:
        store.append("marlowes", FIRST_DAY, 0, [NewEntry(op, r, 0.0) for op, r, _ in entries])
        got = store.booked("marlowes", FIRST_DAY, FIRST_DAY)[FIRST_DAY]
    assert list(got.reservations) == list(want.reservations)
    for ts in (-(10**6), -1, 0, 59, 60, 74, 75, 10**6):
        assert near_a_slot(got.still_booked(ts)) == near_a_slot(want.still_booked(ts)), ts


def test_reservation_ids_with_a_nul_survive_the_store(tmp_path: Path) -> None:
    """Ids that differ only after a NUL stay two reservations (SQLite's json_extract would
    cut both at the NUL and let them collide)."""
    ops = [["reserve", 0, "A\x00x", "T1", 60], ["reserve", 0, "A\x00y", "T2", 60]]
    entries = replay(MARLOWES, ops)[1]
    assert [r for _, r, _ in entries] == [True, True]
    with SQLiteStore(tmp_path / "x.db") as store:
        store.append("marlowes", FIRST_DAY, 0, [NewEntry(op, r, 0.0, m) for op, r, m in entries])
        got = store.booked("marlowes", FIRST_DAY, FIRST_DAY)[FIRST_DAY]
    assert got == fold(entries)
    assert sorted(got.still_booked(0)) == [("T1", 60), ("T2", 60)]
