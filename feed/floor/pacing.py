"""Pacing: how many more bookings of n a slot's caps allow, besides what the floor can seat.

A cap counts the bookings that start in the slot (covers: their guests; parties: their
number). With C covers allowed and c booked, (C - c) // n more parties of n fit, and each
booking of n lowers that by exactly one, as it lowers the floor's spots by exactly one: so
spots_open = min(floor spots, room) keeps the promise that k open spots take k bookings.
Pure: the counts are worked out by the caller.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

Counts = tuple[int, int]  # (covers, parties) of the bookings starting in one slot
NO_BOOKINGS: Counts = (0, 0)
UNCAPPED = 2**62  # what `rooms` says where no cap applies: more than any spots


def room(max_covers: int | None, max_parties: int | None, booked: Counts, n: int) -> int | None:
    """How many more bookings of n the caps allow (None: no cap)."""
    covers, parties = booked
    left: int | None = None
    if max_covers is not None:
        left = max(0, max_covers - covers) // n
    if max_parties is not None:
        by_parties = max(0, max_parties - parties)
        left = by_parties if left is None else min(left, by_parties)
    return left


@functools.lru_cache(maxsize=4096)
def rooms(
    max_covers: int | None, max_parties: int | None, booked: Counts, sizes: tuple[int, ...]
) -> list[int]:
    """`room` per size in `sizes`, for `min` with a row of spots: no cap is taken as more
    than any spots (a floor has fewer than UNCAPPED units). Kept: slots and days repeat the
    same few counts. The list is shared: never change it."""
    covers, parties = booked
    by_parties = UNCAPPED if max_parties is None else max(0, max_parties - parties)
    if max_covers is None:
        return [by_parties] * len(sizes)
    covers_left = max(0, max_covers - covers)
    return [min(covers_left // n, by_parties) for n in sizes]


def counts_by_minute(bookings: Sequence[tuple[int, int]]) -> dict[int, Counts]:
    """(at, party size) of still-booked reservations -> (covers, parties) per start minute."""
    out: dict[int, Counts] = {}
    for at, size in bookings:
        covers, parties = out.get(at, NO_BOOKINGS)
        out[at] = (covers + size, parties + 1)
    return out


def over(
    max_covers: int | None, max_parties: int | None, counts: Mapping[int, Counts], at: int, n: int
) -> bool:
    """Would one more booking of n at `at` go beyond a cap?"""
    left = room(max_covers, max_parties, counts.get(at, NO_BOOKINGS), n)
    return left is not None and left < 1
