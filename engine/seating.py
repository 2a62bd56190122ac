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
    for party in queue:
        if left == 0:
            break  # nothing left to seat anyone at; a claim would change nothing
        waited = ts - party.arrival
        patient = waited >= config.ROOMY_AFTER_MINUTES
        # Part 3 rule 4: a claim keeps the pair from every later party under 30 minutes.
        # Reading (the text says only "may not use the two claimed tables"): a claimed
        # table is unusable for that party as a held one is ("the waitlist may not use
        # it", Part 2 rule 1), so its best table is chosen among the others and may be
        # another table of the same size (a claimed T1 leaves a party of 2 the free T5),
        # rather than the party waiting because the claimed table would have been its best.
        blocked = claim if not patient else ()
        # Protection: a party is done at ts + turn; a reservation starting before that keeps
        # it off the table. No wait lifts this, and it does not change what a party claims.
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
            target = _claim_target(party.size, floor.ranked_combos)
            if target is not None:
                claim = target.tables
                claimed = True
    return seated


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
