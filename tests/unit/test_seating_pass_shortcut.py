"""The seating pass skips a party whose size and patience already failed since the last
table was taken or claim made: it must seat exactly whom the plain walk of the queue seats
(kept here as the oracle, as it was before the shortcut), on any floor, queue and minute."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import config
from engine.floor import Combo, FloorPlan, Table, build_floor
from engine.seating import NO_BOOKINGS, Seating, Waiting, seating_pass

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Guest:
    size: int
    arrival: int


# -- the oracle: the pass as it walked every party (engine/seating.py before the shortcut) --


def plain_pass(
    ts: int,
    queue: Sequence[Waiting],
    usable: Collection[str],
    floor: FloorPlan,
    next_booked: Mapping[str, int] = NO_BOOKINGS,
) -> list[Seating]:
    if not queue or not usable:
        return []
    rank = floor.table_rank
    available: list[Table] = [floor.ranked_tables[i] for i in sorted(rank[t] for t in usable)]
    taken: set[str] = set()
    left = len(available)
    claim: tuple[str, ...] = ()
    claimed = False
    seated: list[Seating] = []
    for party in queue:
        if left == 0:
            break
        waited = ts - party.arrival
        patient = waited >= config.ROOMY_AFTER_MINUTES
        blocked = claim if not patient else ()
        done = ts + floor.turn(party.size) if floor.protect_reservations else None
        if party.size < floor.large_from:
            table = _best_table(party.size, available, taken, blocked, next_booked, done)
            if table is not None and (patient or party.size >= table.smallest_party):
                taken.add(table.id)
                left -= 1
                seated.append(Seating(party, (table.id,)))
            continue
        combo = _best_combo(
            party.size, floor.ranked_combos, usable, taken, blocked, next_booked, done
        )
        if combo is not None and (patient or party.size >= combo.min_party):
            taken.update(combo.tables)
            left -= 2
            seated.append(Seating(party, combo.tables))
        elif not claimed and waited >= config.CLAIM_AFTER_MINUTES:
            target = next((c for c in floor.ranked_combos if c.capacity >= party.size), None)
            if target is not None:
                claim = target.tables
                claimed = True
    return seated


def _protected(table: str, next_booked: Mapping[str, int], done: int | None) -> bool:
    if done is None:
        return False
    at = next_booked.get(table)
    return at is not None and at < done


def _best_table(
    size: int,
    available: list[Table],
    taken: set[str],
    blocked: tuple[str, ...],
    next_booked: Mapping[str, int],
    done: int | None,
) -> Table | None:
    for table in available:
        if (
            table.seats >= size
            and table.id not in taken
            and table.id not in blocked
            and not _protected(table.id, next_booked, done)
        ):
            return table
    return None


def _best_combo(
    size: int,
    ranked: Sequence[Combo],
    usable: Collection[str],
    taken: set[str],
    blocked: tuple[str, ...],
    next_booked: Mapping[str, int],
    done: int | None,
) -> Combo | None:
    for combo in ranked:
        if combo.capacity < size:
            continue
        a, b = combo.tables
        if (
            a in usable
            and b in usable
            and a not in taken
            and b not in taken
            and a not in blocked
            and b not in blocked
            and not _protected(a, next_booked, done)
            and not _protected(b, next_booked, done)
        ):
            return combo
    return None


# -- strategies -----------------------------------------------------------------------------


@st.composite
def floors(draw: st.DrawFn) -> FloorPlan:
    """Small floors with few table sizes (many parties then share a size), some tables with
    their own min_party, combos with their own capacity and minimum, protection on or off."""
    n = draw(st.integers(1, 7))
    tables: list[tuple[str, int, int | None]] = []
    for i in range(n):
        seats = draw(st.sampled_from((2, 2, 4, 4, 6, 8)))
        own_min = draw(st.none() | st.integers(1, seats))
        tables.append((f"T{i + 1}", seats, own_min))
    pairs = [(a[0], b[0]) for i, a in enumerate(tables) for b in tables[i + 1 :]]
    combos = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=4)) if pairs else []
    capacity: dict[str, int] = {}
    minimum: dict[str, int] = {}
    seats_of = {t[0]: t[1] for t in tables}
    for a, b in combos:
        cap = draw(st.none() | st.integers(1, 16))
        total = cap if cap is not None else seats_of[a] + seats_of[b]
        if cap is not None:
            capacity[f"{a}+{b}"] = cap
        if draw(st.booleans()):
            minimum[f"{a}+{b}"] = draw(st.integers(1, total))
    return build_floor(
        tables,
        combos,
        large_from=draw(st.none() | st.integers(2, 9)),
        protect_reservations=draw(st.booleans()),
        combo_capacity=capacity,
        combo_min_party=minimum,
    )


@st.composite
def passes(
    draw: st.DrawFn,
) -> tuple[int, list[Guest], set[str], FloorPlan, dict[str, int]]:
    floor = draw(floors())
    ids = [t.id for t in floor.tables]
    ts = draw(st.integers(0, 120))
    # Arrivals oldest first, as the stand's queue is, or in any order (the pass may be given
    # any sequence: a floor view's patient copies, a quote's newcomer last).
    arrivals = draw(st.lists(st.integers(0, ts), max_size=40))
    if draw(st.booleans()):
        arrivals.sort()
    queue = [Guest(draw(st.sampled_from((1, 2, 2, 3, 4, 4, 6, 8, 10))), a) for a in arrivals]
    usable = set(draw(st.lists(st.sampled_from(ids), unique=True)))
    booked = draw(st.dictionaries(st.sampled_from(ids), st.integers(ts - 20, ts + 150)))
    return ts, queue, usable, floor, booked


# -- the property ---------------------------------------------------------------------------


@SETTINGS
@given(passes())
def test_the_pass_seats_exactly_whom_walking_every_party_seats(
    case: tuple[int, list[Guest], set[str], FloorPlan, dict[str, int]],
) -> None:
    ts, queue, usable, floor, booked = case
    fast = seating_pass(ts, queue, usable, floor, booked)
    plain = plain_pass(ts, queue, usable, floor, booked)
    assert [(id(s.party), s.tables) for s in fast] == [(id(s.party), s.tables) for s in plain]


def test_a_flood_of_parties_no_table_fits_is_seated_as_walking_every_party_seats() -> None:
    # Marlowe's full but for T3, a 6-top too roomy for parties of 2 under 30 minutes: the
    # shape of a flooded waitlist; then the first patient party behind the flood.
    floor = build_floor(config.TABLES, config.COMBOS, dwell_minutes=config.DWELL_MINUTES)
    queue = [Guest(2, 40 + i % 5) for i in range(500)] + [Guest(2, 0), Guest(8, 0)]
    for usable in ({"T3"}, {"T3", "T4"}, {"T5", "T6", "T3"}):
        fast = seating_pass(60, queue, usable, floor)
        assert [(id(s.party), s.tables) for s in fast] == [
            (id(s.party), s.tables) for s in plain_pass(60, queue, usable, floor)
        ]


def seated_sizes(seatings: list[Seating]) -> list[tuple[int, tuple[str, ...]]]:
    return [(s.party.size, s.tables) for s in seatings]


def test_a_table_taken_lets_a_later_party_of_a_size_that_failed_take_a_roomier_one() -> None:
    # T1's own minimum (4) keeps a party of 2 off it and T2 (no minimum) is its next best:
    # once the 4 takes T1, the second 2 gets T2 though the first 2 got nothing.
    floor = build_floor([("T1", 4, 4), ("T2", 6, 1)])
    queue = [Guest(2, 50), Guest(4, 50), Guest(2, 50)]
    expected = [(4, ("T1",)), (2, ("T2",))]
    assert seated_sizes(plain_pass(50, queue, {"T1", "T2"}, floor)) == expected
    assert seated_sizes(seating_pass(50, queue, {"T1", "T2"}, floor)) == expected


def test_a_claim_lets_a_later_party_of_a_size_that_failed_take_a_roomier_one() -> None:
    # The 8 claims T1+T3 (T3 is taken): T1 is then kept from the second 2, whose best is T2.
    floor = build_floor([("T1", 4, 4), ("T2", 6, 1), ("T3", 4)], [("T1", "T3")])
    queue = [Guest(2, 50), Guest(8, 25), Guest(2, 50)]
    expected = [(2, ("T2",))]
    assert seated_sizes(plain_pass(50, queue, {"T1", "T2"}, floor)) == expected
    assert seated_sizes(seating_pass(50, queue, {"T1", "T2"}, floor)) == expected


def test_a_large_party_of_a_size_that_failed_still_claims_once_it_has_waited_long_enough() -> None:
    # Out of arrival order (the pass takes any sequence): the first 8 has waited 5 minutes
    # and claims nothing, the second 25 and claims T5+T6, which keeps T5 from the 4.
    floor = build_floor(config.TABLES, config.COMBOS, dwell_minutes=config.DWELL_MINUTES)
    queue = [Guest(8, 45), Guest(8, 25), Guest(4, 50)]
    assert plain_pass(50, queue, {"T5"}, floor) == []
    assert seating_pass(50, queue, {"T5"}, floor) == []
