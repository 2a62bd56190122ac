"""Availability benchmark: microseconds to compute one restaurant-day of spots (day_grid).

The day: a 40-table floor with 10 overlapping combos (so the matching has real work), 24
slots every 15 minutes, party sizes 1 to 10, and bookings (made through `choose_unit`) on
a third of the slots. "cold" builds a new FloorPlan per day, so the per-floor masks and the
matching memo are built inside the timing; "warm" reuses one floor, as a feed run does.
Target: under 5000 µs per restaurant-day.

Run: `.venv/bin/python bench/availability_day.py [--days 2000] [--seed 1]`.
"""

from __future__ import annotations

import argparse
import random
import time

from engine import FloorPlan, build_floor
from feed.floor.availability import Booking, choose_unit, day_grid

TARGET_US = 5000
SLOTS = [1020 + 15 * i for i in range(24)]  # 17:00 to 22:45
SIZES = range(1, 11)


def make_floor() -> FloorPlan:
    """40 tables: 12 two-tops, 16 four-tops, 8 six-tops, 4 eight-tops; combos share tables."""
    seats = [2] * 12 + [4] * 16 + [6] * 8 + [8] * 4
    tables = [(f"T{i}", s) for i, s in enumerate(seats, start=1)]
    combos = [
        ("T25", "T26"),  # a path of four-tops and a triangle of six-tops: the combos
        ("T26", "T27"),  # compete for tables, as in a real dining room
        ("T27", "T28"),
        ("T28", "T29"),
        ("T29", "T30"),
        ("T33", "T34"),
        ("T34", "T35"),
        ("T33", "T35"),
        ("T37", "T38"),
        ("T30", "T36"),
    ]
    return build_floor(tables, combos)


def make_bookings(floor: FloorPlan, rng: random.Random) -> list[Booking]:
    booked: list[Booking] = []
    for at in rng.sample(SLOTS, len(SLOTS) // 3):
        for _ in range(rng.randint(3, 8)):
            n = rng.choice(SIZES)
            unit = choose_unit(floor, booked, at, n)
            if unit is not None:
                booked.append((tuple(unit.split("+")), at))
    return booked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    template = make_floor()
    days = [make_bookings(template, rng) for _ in range(args.days)]
    bookings = sum(len(d) for d in days) / len(days)

    floors = [make_floor() for _ in days]
    start = time.perf_counter()
    for floor, booked in zip(floors, days, strict=True):
        day_grid(floor, booked, SLOTS, SIZES)
    cold = (time.perf_counter() - start) / len(days) * 1e6

    day_grid(template, days[0], SLOTS, SIZES)
    start = time.perf_counter()
    for booked in days:
        day_grid(template, booked, SLOTS, SIZES)
    warm = (time.perf_counter() - start) / len(days) * 1e6

    print(f"40 tables, 10 combos, {len(SLOTS)} slots x sizes 1-10, {bookings:.1f} bookings/day")
    print(f"cold (new floor each day): {cold:8.1f} µs per restaurant-day")
    print(f"warm (same floor):         {warm:8.1f} µs per restaurant-day")
    print(f"target: < {TARGET_US} µs  ->  {'ok' if max(cold, warm) < TARGET_US else 'MISSED'}")


if __name__ == "__main__":
    main()
