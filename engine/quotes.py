"""Quoted waits (seed Part 2 rule 6, Part 3 rule 5).

A quote is 0 exactly when a walk-in of that size at this minute would be seated,
which is decided by running the very same pass with the hypothetical party last
in the queue (so it sees holds, claims and protected tables as the pass would).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from engine.floor import FloorPlan
from engine.seating import NO_BOOKINGS, Waiting, seating_pass


@dataclass(frozen=True)
class _Hypothetical:
    size: int
    arrival: int


def quote(
    ts: int,
    size: int,
    queue: Sequence[Waiting],
    usable: Collection[str],
    floor: FloorPlan,
    next_booked: Mapping[str, int] = NO_BOOKINGS,
) -> int:
    """Minutes a walk-in of `size` arriving at `ts` is told to wait."""
    newcomer = _Hypothetical(size, ts)
    seated = seating_pass(ts, [*queue, newcomer], usable, floor, next_booked)
    if any(s.party is newcomer for s in seated):
        return 0
    return queued_quote(size, Counter(p.size for p in queue), floor)


def queued_quote(size: int, waiting: Mapping[int, int], floor: FloorPlan) -> int:
    """Minutes a walk-in of `size` the pass does not seat now is told to wait, behind the
    parties `waiting` (how many of each size): the quote when it is not 0."""
    if floor.is_large(size):
        ahead = sum(n for s, n in waiting.items() if floor.is_large(s))
        return min(floor.large_quote_minutes * (ahead + 1), floor.quote_cap)
    cls = floor.quote_class(size)
    if cls is None:
        return floor.quote_cap
    ahead = sum(
        n for s, n in waiting.items() if not floor.is_large(s) and floor.quote_class(s) == cls
    )
    minutes = -(-floor.dwell_minutes[cls] * (ahead + 1) // floor.class_tables[cls])  # ceil
    return min(minutes, floor.quote_cap)
