"""Hypothesis properties of seat, move, arrive and protect_reservations, on logs that mix
them with every other operation, on the seed's floor and on a protected one."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import MARLOWES, FloorPlan, HostStand, PartyState, Rejected, build_floor, config, run
from engine.holds import ReservationStatus

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

PROTECTED = build_floor(
    config.TABLES, config.COMBOS, dwell_minutes=config.DWELL_MINUTES, protect_reservations=True
)
FLOORS = st.sampled_from([MARLOWES, PROTECTED])
TABLE_IDS = ("T1", "T2", "T3", "T4", "T5", "T6")
UNITS = (*TABLE_IDS, "T5+T6", "T3+T4", "T1+T3")
IDS = st.sampled_from(("P1", "P2", "P3", "P4", "P5", "P6", "R1", "R2", "R3"))
SIZES = st.sampled_from((1, 2, 2, 3, 4, 4, 5, 6, 7, 8, 10))
STEPS = (0, 0, 0, 1, 5, 10, 15, 20, 30, 60)
KINDS = ("walk_in",) * 4 + ("reserve",) * 3 + ("free",) * 2
KINDS += ("seat", "seat", "move", "move", "arrive", "arrive", "check_in", "cancel", "leave")
KINDS += ("board", "quote")


@st.composite
def host_logs(draw: st.DrawFn, max_size: int = 40) -> list[list[Any]]:
    """Valid-shape logs where the host's operations are common and aim at known ids."""
    ts = draw(st.integers(-10, 10))
    ops: list[list[Any]] = []
    for _ in range(draw(st.integers(0, max_size))):
        ts += draw(st.sampled_from(STEPS))
        kind = draw(st.sampled_from(KINDS))
        if kind == "walk_in":
            ops.append([kind, ts, draw(IDS), draw(SIZES)])
        elif kind == "reserve":
            at = ts + draw(st.sampled_from((1, 10, 20, 45, 60, 90, 120, 150)))
            ops.append([kind, ts, draw(IDS), draw(st.sampled_from(UNITS)), at])
        elif kind == "free":
            ops.append([kind, ts, draw(st.sampled_from(TABLE_IDS))])
        elif kind in ("seat", "move"):
            ops.append([kind, ts, draw(IDS), draw(st.sampled_from(UNITS))])
        elif kind == "quote":
            ops.append([kind, ts, draw(SIZES)])
        elif kind == "board":
            ops.append([kind, ts])
        else:  # arrive, check_in, cancel, leave
            ops.append([kind, ts, draw(IDS)])
    return ops


def as_result(value: object) -> object:
    return str(value) if isinstance(value, Rejected) else value


def check_one_party_per_table(stand: HostStand) -> None:
    seated = stand.seated()
    for party in stand.parties.values():
        if party.state is PartyState.SEATED:
            assert party.tables
            for table in party.tables:
                assert seated[table].id == party.id, (table, party)
        else:
            assert all(p.id != party.id for p in seated.values())
    assert sorted(t for s in stand.sittings() for t in s.tables) == sorted(seated)


@SETTINGS
@given(FLOORS, host_logs())
def test_no_table_ever_holds_two_parties(floor: FloorPlan, operations: list[list[Any]]) -> None:
    stand = HostStand(floor)
    for op in operations:
        stand.apply(op)
        check_one_party_per_table(stand)


@SETTINGS
@given(FLOORS, host_logs())
def test_applying_operations_one_at_a_time_equals_replaying_the_whole_list(
    floor: FloorPlan, operations: list[list[Any]]
) -> None:
    stand = HostStand(floor)
    incremental = [as_result(stand.apply(op)) for op in operations]
    assert incremental == run(operations, floor=floor)
    assert run(operations, floor=floor) == run(operations, floor=floor)


@SETTINGS
@given(FLOORS, host_logs())
def test_an_arrived_reservation_never_becomes_a_no_show(
    floor: FloorPlan, operations: list[list[Any]]
) -> None:
    stand = HostStand(floor)
    for op in operations:
        stand.apply(op)
        for r in stand.reservations():
            assert not (r.arrived and r.status is ReservationStatus.NO_SHOW), r
    later = (operations[-1][1] if operations else 0) + 10_000
    stand.apply(["board", later])
    for r in stand.reservations():
        if r.arrived:
            assert r.status is not ReservationStatus.NO_SHOW


@SETTINGS
@given(host_logs())
def test_with_protection_the_pass_never_seats_a_walk_in_before_a_booking_it_would_overlap(
    operations: list[list[Any]],
) -> None:
    """A walk-in the pass seats at ts on a table keeps it until ts + turn; no reservation
    booked on that table before and after the operation starts before then."""
    stand = HostStand(PROTECTED)
    for op in operations:
        ts = op[1]
        booked_before = {r.id for r in stand.book.booked()}
        seated_before = {s.party_id for s in stand.sittings()}
        by_host = op[2] if op[0] == "seat" else None
        stand.apply(op)
        for sitting in stand.sittings():
            if sitting.party_id in seated_before or sitting.party_id == by_host:
                continue  # not seated by the pass in this operation
            if sitting.size is None:
                continue  # a reservation checked in: the host's doing
            done = ts + PROTECTED.turn(sitting.size)
            for r in stand.book.booked():
                if r.id in booked_before and set(r.tables) & set(sitting.tables):
                    assert r.at >= done, (op, sitting, r)


@SETTINGS
@given(FLOORS, host_logs(), st.integers(1, 10), st.sampled_from([0, 1, 30]))
def test_a_quote_is_zero_exactly_when_a_walk_in_of_that_size_would_be_seated(
    floor: FloorPlan, operations: list[list[Any]], size: int, later: int
) -> None:
    ts = (operations[-1][1] if operations else 0) + later
    quoted = run([*operations, ["quote", ts, size]], floor=floor)[-1]
    walked = run([*operations, ["walk_in", ts, "NEWCOMER", size]], floor=floor)[-1]
    assert (quoted == 0) == walked.startswith("seated "), (quoted, walked)
