"""The seating pass (seed Part 1 rules 2-4, Part 3 rules 1-4).

Pure: given the minute, the queue (oldest first) and the tables the pass may use
(free and not held), it says who sits where. It never lets a party that cannot
be seated block those behind it, except through a large party's claim. With the
floor's `protect_reservations`, a party may not take a table whose next still-booked
reservation starts before its turn would be over (PRODUCT.md section 1).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from engine import config
from engine.floor import Combo, FloorPlan, Table


class Waiting(Protocol):
    @property
    def size(self) -> int: ...

    @property
    def arrival(self) -> int: ...


@dataclass(frozen=True)
class Seating:
    party: Waiting
    tables: tuple[str, ...]  # one table, or a combo's two in COMBOS order


NO_BOOKINGS: Mapping[str, int] = {}


def seating_pass(
    ts: int,
    queue: Sequence[Waiting],
    usable: Collection[str],
    floor: FloorPlan,
    next_booked: Mapping[str, int] = NO_BOOKINGS,
) -> list[Seating]:
    """Walk the queue oldest first and seat every party whose best table or pair it may take.

    `next_booked` maps a table to the earliest `at` of its still-booked reservations; it is
    read only when the floor protects reservations."""
    if not queue or not usable:
        return []
    rank = floor.table_rank
    available: list[Table] = [floor.ranked_tables[i] for i in sorted(rank[t] for t in usable)]
    taken: set[str] = set()
    left = len(available)
    claim: tuple[str, ...] = ()
    claimed = False
    seated: list[Seating] = []
    # What a party gets depends only on its size, whether it has waited ROOMY_AFTER_MINUTES,
    # the claim in force and the tables taken so far: once one (size, patient) could not be
    # seated, no later one can until a table is taken or a claim made. A flood of parties
    # that fit no usable table then costs a look-up each, not a search of the floor each.
    unseatable: set[tuple[int, bool]] = set()
    for party in queue:
        if left == 0:
            break  # nothing left to seat anyone at; a claim would change nothing
        size = party.size
        waited = ts - party.arrival
        patient = waited >= config.ROOMY_AFTER_MINUTES
        large = size >= floor.large_from
        if (size, patient) in unseatable:
            if large and not claimed and waited >= config.CLAIM_AFTER_MINUTES:
                claimed, claim = _claim(size, floor, unseatable, claim)
            continue
        # Part 3 rule 4: a claim keeps the pair from every later party under 30 minutes.
        # Reading (the text says only "may not use the two claimed tables"): a claimed
        # table is unusable for that party as a held one is ("the waitlist may not use
        # it", Part 2 rule 1), so its best table is chosen among the others and may be
        # another table of the same size (a claimed T1 leaves a party of 2 the free T5),
        # rather than the party waiting because the claimed table would have been its best.
        blocked = claim if not patient else ()
        # Protection: a party is done at ts + turn; a reservation starting before that keeps
        # it off the table. No wait lifts this, and it does not change what a party claims.
        done = ts + floor.turn(size) if floor.protect_reservations else None
        if not large:
            table = _best_table(size, available, taken, blocked, next_booked, done)
            if table is not None and (patient or size >= table.smallest_party):
                taken.add(table.id)
                left -= 1
                seated.append(Seating(party, (table.id,)))
                unseatable.clear()
            else:
                unseatable.add((size, patient))
            continue
        combo = _best_combo(size, floor.ranked_combos, usable, taken, blocked, next_booked, done)
        if combo is not None and (patient or size >= combo.min_party):
            taken.update(combo.tables)
            left -= 2
            seated.append(Seating(party, combo.tables))
            unseatable.clear()
            continue
        unseatable.add((size, patient))
        if not claimed and waited >= config.CLAIM_AFTER_MINUTES:
            claimed, claim = _claim(size, floor, unseatable, claim)
    return seated


def _claim(
    size: int, floor: FloorPlan, unseatable: set[tuple[int, bool]], claim: tuple[str, ...]
) -> tuple[bool, tuple[str, ...]]:
    """(claimed, claim) once a large party that could not be seated has waited
    CLAIM_AFTER_MINUTES: its pair, when one fits it. A new claim keeps tables from the
    parties under 30 minutes, so what they could not get is asked again."""
    target = _claim_target(size, floor.ranked_combos)
    if target is None:
        return False, claim
    unseatable.clear()
    return True, target.tables


def _protected(table: str, next_booked: Mapping[str, int], done: int | None) -> bool:
    """Does a still-booked reservation on `table` start before a party seated now is done?"""
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
    """The free table with at least `size` seats and the fewest seats (ties: floor order),
    among the tables usable for this party."""
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
    """The usable pair with at least `size` seats and the fewest (ties: COMBOS order)."""
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


def _claim_target(size: int, ranked: Sequence[Combo]) -> Combo | None:
    """The pair a large party claims: fewest combined seats that fit it, free or not.

    Reading: "whether or not its tables are free right now" (Part 3 rule 4) is taken as
    written, so a pair with a table held by a reservation is claimed too (as protection
    does not change the pair either, PRODUCT.md 1): the claim may keep later parties
    under 30 minutes off the pair's other table until the hold ends. Picking the next
    pair instead would be a second rule the text does not give."""
    for combo in ranked:
        if combo.capacity >= size:
            return combo
    return None
