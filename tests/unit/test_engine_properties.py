"""Hypothesis properties of the engine: robustness, replay, quotes, and seating invariants."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import HostStand, PartyState, Rejected, run

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TABLE_IDS = ("T1", "T2", "T3", "T4", "T5", "T6")
IDS = ("P1", "P2", "P3", "P4", "P5", "R1", "R2", "R3")
UNITS = (*TABLE_IDS, "T5+T6", "T3+T4", "T1+T3")
NAMES = ("walk_in", "free", "board", "reserve", "check_in", "quote", "cancel", "leave")
STEPS = (0, 0, 0, 1, 2, 5, 10, 15, 20, 30)  # same-minute operations are common

# -- strategies -----------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
anything = st.recursive(
    json_scalars | st.sampled_from([*NAMES, *TABLE_IDS, *IDS]),
    lambda inner: st.lists(inner, max_size=6),
    max_leaves=40,
)


# Walk-ins and frees more often, so the room fills, empties and a queue forms.
KINDS = ("walk_in",) * 4 + ("free",) * 2 + NAMES[2:]
PARTY_IDS = st.sampled_from((*(f"P{i}" for i in range(1, 10)), "R1"))
RESERVATION_IDS = st.sampled_from(("R1", "R2", "R3", "P1"))
sizes = st.sampled_from((1, 1, 2, 2, 2, 3, 4, 4, 5, 6, 7, 8, 9, 10))


@st.composite
def valid_operations(draw: st.DrawFn, max_size: int = 40) -> list[list[Any]]:
    """Realistic logs: non-decreasing ts, every operation, ids from small pools that overlap."""
    ts = draw(st.integers(-10, 10))
    ops: list[list[Any]] = []
    for _ in range(draw(st.integers(0, max_size))):
        ts += draw(st.sampled_from(STEPS))
        kind = draw(st.sampled_from(KINDS))
        if kind == "walk_in":
            ops.append([kind, ts, draw(PARTY_IDS), draw(sizes)])
        elif kind == "free":
            ops.append([kind, ts, draw(st.sampled_from(TABLE_IDS))])
        elif kind == "board":
            ops.append([kind, ts])
        elif kind == "reserve":
            unit = draw(st.sampled_from(UNITS))
            ops.append([kind, ts, draw(RESERVATION_IDS), unit, ts + draw(st.integers(-5, 60))])
        elif kind == "quote":
            ops.append([kind, ts, draw(sizes)])
        elif kind == "leave":
            ops.append([kind, ts, draw(PARTY_IDS)])
        else:  # check_in, cancel
            ops.append([kind, ts, draw(RESERVATION_IDS)])
    return ops


@st.composite
def near_valid_operations(draw: st.DrawFn) -> list[Any]:
    """Valid logs with some operations broken: wrong types, wrong arity, time going back."""
    ops: list[Any] = draw(valid_operations(max_size=25))
    bad_values: st.SearchStrategy[object] = st.sampled_from(
        [None, True, False, -1, 0, 11, 2.5, "", "x", [], [1], {}]
    )
    for i in draw(st.lists(st.integers(0, max(len(ops) - 1, 0)), max_size=6)):
        if not ops:
            break
        if not isinstance(ops[i], list) or not ops[i]:
            ops[i] = draw(anything)  # already broken beyond repair: break it differently
            continue
        op: Any = list(ops[i])
        how = draw(st.integers(0, 4))
        if how == 0:
            op[draw(st.integers(0, len(op) - 1))] = draw(bad_values)
        elif how == 1:
            op.append(draw(bad_values))
        elif how == 2:
            op = op[: draw(st.integers(0, len(op) - 1))]
        elif how == 3 and len(op) > 1 and isinstance(op[1], int):
            op[1] -= draw(st.integers(1, 40))
        else:
            op = draw(anything)
        ops[i] = op
    return ops


# -- helpers --------------------------------------------------------------------------------


def as_result(value: object) -> object:
    return str(value) if isinstance(value, Rejected) else value


def last_ts(ops: list[list[Any]]) -> int:
    return ops[-1][1] if ops else 0


def seating_snapshot(stand: HostStand) -> tuple[dict[str, str], list[str]]:
    return {t: p.id for t, p in stand.seated().items()}, [p.id for p in stand.queue()]


def check_one_party_per_table(stand: HostStand) -> None:
    seated = stand.seated()
    for table, party in seated.items():
        assert party.state is PartyState.SEATED
        assert table in party.tables
    for party in stand.parties.values():
        if party.state is PartyState.SEATED:
            assert party.tables, party
            for table in party.tables:
                assert seated[table].id == party.id, (table, party)
        else:
            assert all(p.id != party.id for p in seated.values())


def holders(stand: HostStand, ts: int) -> dict[str, str | None]:
    return {t: stand.book.holder(t, ts) for t in TABLE_IDS}


# -- properties -----------------------------------------------------------------------------


@SETTINGS
@given(anything)
def test_run_never_raises_whatever_it_is_given(operations: object) -> None:
    results = run(operations)
    assert isinstance(results, list)
    if isinstance(operations, list):
        assert len(results) == len(operations)


@SETTINGS
@given(st.lists(anything, max_size=20))
def test_run_answers_every_operation_in_a_list_of_anything(operations: list[object]) -> None:
    results = run(operations)
    assert len(results) == len(operations)
    for operation, result in zip(operations, results, strict=True):
        if not isinstance(operation, list) or not operation:
            assert result == "error: unknown operation"


@SETTINGS
@given(near_valid_operations())
def test_run_never_raises_on_near_valid_operation_lists(operations: list[Any]) -> None:
    results = run(operations)
    assert len(results) == len(operations)
    for result in results:
        assert not isinstance(result, Rejected)


@SETTINGS
@given(near_valid_operations())
def test_applying_operations_one_at_a_time_equals_replaying_the_whole_list(
    operations: list[Any],
) -> None:
    stand = HostStand()
    incremental = [as_result(stand.apply(op)) for op in operations]
    assert incremental == run(operations)
    assert run(operations) == run(operations)  # deterministic


@SETTINGS
@given(valid_operations(), st.integers(1, 10), st.sampled_from([0, 0, 1, 15, 30]))
def test_a_quote_is_zero_exactly_when_a_walk_in_of_that_size_would_be_seated(
    operations: list[list[Any]], size: int, later: int
) -> None:
    ts = last_ts(operations) + later
    quoted = run([*operations, ["quote", ts, size]])[-1]
    walked = run([*operations, ["walk_in", ts, "NEWCOMER", size]])[-1]
    assert isinstance(quoted, int) and not isinstance(quoted, bool)
    assert isinstance(walked, str)
    assert (quoted == 0) == walked.startswith("seated "), (quoted, walked)


@SETTINGS
@given(valid_operations(), st.integers(1, 10))
def test_a_quote_changes_nothing(operations: list[list[Any]], size: int) -> None:
    ts = last_ts(operations)
    tail = [["board", ts], ["walk_in", ts, "NEWCOMER", 2], ["board", ts + 1]]
    with_quote = run([*operations, ["quote", ts, size], *tail])
    assert with_quote[-3:] == run([*operations, *tail])[-3:]


@SETTINGS
@given(valid_operations())
def test_a_second_pass_at_the_same_minute_seats_nobody(operations: list[list[Any]]) -> None:
    stand = HostStand()
    for op in operations:
        stand.apply(op)
        before = seating_snapshot(stand)
        board = stand.apply(["board", op[1]])
        assert seating_snapshot(stand) == before
        assert board["waiting"] == before[1]


@SETTINGS
@given(valid_operations())
def test_no_table_ever_holds_two_parties(operations: list[list[Any]]) -> None:
    stand = HostStand()
    for op in operations:
        stand.apply(op)
        check_one_party_per_table(stand)


@SETTINGS
@given(valid_operations())
def test_a_held_table_never_gets_a_waitlist_party(operations: list[list[Any]]) -> None:
    stand = HostStand()
    for op in operations:
        ts = op[1]
        held_before = holders(stand, ts)
        seated_before = {p.id for p in stand.parties.values() if p.state is PartyState.SEATED}
        stand.apply(op)
        held_after = holders(stand, ts)
        for party in stand.parties.values():
            if party.reservation or party.id in seated_before:
                continue
            if party.state is PartyState.SEATED:
                for table in party.tables:
                    # held all through the operation (not cancelled, not booked during it)
                    holder = held_before[table]
                    assert holder is None or holder != held_after[table], (op, party, table)


@SETTINGS
@given(valid_operations())
def test_the_board_shows_every_seated_party_and_the_queue_oldest_first(
    operations: list[list[Any]],
) -> None:
    results = run([*operations, ["board", last_ts(operations)]])
    board = results[-1]
    assert list(board["tables"]) == list(TABLE_IDS)
    waiting = board["waiting"]
    assert len(set(waiting)) == len(waiting)
    assert not set(waiting) & set(board["tables"].values())
    arrival: dict[str, int] = {}
    for op, result in zip(operations, results, strict=False):
        if op[0] == "walk_in" and isinstance(result, str) and not result.startswith("error"):
            arrival[op[2]] = len(arrival)
    assert [arrival[p] for p in waiting] == sorted(arrival[p] for p in waiting)


@SETTINGS
@given(valid_operations())
def test_walk_in_reports_its_place_in_the_queue(operations: list[list[Any]]) -> None:
    stand = HostStand()
    for op in operations:
        result = stand.apply(op)
        if op[0] == "walk_in" and isinstance(result, str) and result.startswith("queued "):
            queue = [p.id for p in stand.queue()]
            assert int(result.removeprefix("queued ")) == queue.index(op[2]) + 1
