"""Pacing: how many more bookings of n a slot's caps allow, besides what the floor can seat.

A cap counts the bookings that start in the slot (covers: their guests; parties: their
number). With C covers allowed and c booked, (C - c) // n more parties of n fit, and each
booking of n lowers that by exactly one, as it lowers the floor's spots by exactly one: so
spots_open = min(floor spots, room) keeps the promise that k open spots take k bookings.
Pure: the counts are worked out by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Counts = tuple[int, int]  # (covers, parties) of the bookings starting in one slot
NO_BOOKINGS: Counts = (0, 0)


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


def capped(
    row: Sequence[int],
    sizes: Sequence[int],
    max_covers: int | None,
    max_parties: int | None,
    booked: Counts,
) -> list[int]:
    """A slot's spots_open per size in `sizes`, each at most what the caps allow."""
    out: list[int] = []
    for spots, n in zip(row, sizes, strict=True):
        left = room(max_covers, max_parties, booked, n)
        out.append(spots if left is None else min(spots, left))
    return out


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
