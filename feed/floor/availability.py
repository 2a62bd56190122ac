"""Availability (PRODUCT.md section 3): how many parties of size n a slot can still take.

Spots are the most units for n on disjoint bookable tables (a count for single tables, a
maximum matching for combos), recomputed from the still-booked reservations on every call:
a booking can only lower them, a cancellation gives them back, and `choose_unit` keeps the
promise that k open spots take exactly k bookings.

Time is the caller's business: these functions do not know "now". A slot at or before now
is not bookable at all, so the caller reports 0 open for it (the engine refuses `at <= ts`).
"""

from __future__ import annotations

import functools
import operator
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice

from engine import config
from engine.floor import Combo, FloorPlan, Table
from feed.floor.matching import Matcher

Booking = tuple[tuple[str, ...], int]  # a still-booked reservation: its tables and its `at`

WINDOW = config.CONFLICT_MINUTES - 1  # a reservation blocks a table for abs(at' - at) <= 29
# Rows kept per floor across days (an empty floor, a quiet hour recur). Bounded: a server
# keeps every restaurant's floor, and about 1,000 rows are some 250 KB; an export releases
# each floor once it is done with the restaurant.
_OPEN_ROWS_SHARED = 1024


@dataclass
class _Units:
    """One floor plan as bitmasks: bit i of a table mask is `floor.tables[i]`, bit j of an
    edge mask is `floor.combos[j]`; fit masks per party size are filled in on first use.
    It keeps the floor's parts, never the floor, so the cache entry cannot keep it alive."""

    tables: tuple[Table, ...]
    combos: tuple[Combo, ...]
    large_from: int
    bit: dict[str, int]
    all_tables: int
    combo_tables: tuple[int, ...]  # combo j -> mask of its two tables
    matcher: Matcher
    table_fit: dict[int, int] = field(default_factory=dict)  # n -> tables fitting n
    # blocked tables -> spots_open per size in `day_sizes`; rows are shared, never changed
    day_rows: dict[int, list[int]] = field(default_factory=dict)
    day_sizes: tuple[int, ...] = ()
    combo_fit: dict[int, int] = field(default_factory=dict)  # n -> combos fitting n
    unit_masks: dict[str, int] = field(default_factory=dict)  # table or combo id -> tables
    # live combos by the bookable tables that are in some combo (far fewer than all sets)
    live_by_tables: dict[int, int] = field(default_factory=dict)

    def fit(self, n: int) -> int:
        """Mask of the units for n: tables below the large threshold, combos at or above."""
        if n < self.large_from:
            found = self.table_fit.get(n)
            if found is None:
                found = sum(
                    1 << i for i, t in enumerate(self.tables) if t.smallest_party <= n <= t.seats
                )
                self.table_fit[n] = found
            return found
        found = self.combo_fit.get(n)
        if found is None:
            found = sum(1 << j for j, c in enumerate(self.combos) if c.min_party <= n <= c.capacity)
            self.combo_fit[n] = found
        return found

    def live_combos(self, bookable: int) -> int:
        """Mask of the combos whose two tables are both bookable."""
        key = bookable & self.in_combos
        live = self.live_by_tables.get(key)
        if live is None:
            live = 0
            for j, tables in enumerate(self.combo_tables):
                if tables & key == tables:
                    live |= 1 << j
            self.live_by_tables[key] = live
        return live

    @functools.cached_property
    def in_combos(self) -> int:
        """Mask of the tables that are part of some combo."""
        mask = 0
        for tables in self.combo_tables:
            mask |= tables
        return mask

    def row_of(self, sizes: tuple[int, ...]) -> Callable[[int], list[int]]:
        """bookable mask -> spots_open per size in `sizes`: `open` for a whole row, with the
        fit masks looked up once."""
        plan = [(self.fit(n), n >= self.large_from) for n in sizes]
        size = self.matcher.size
        live_combos = self.live_combos
        if not any(large for _, large in plan):
            fits = [fit for fit, _ in plan]
            return lambda bookable: [(fit & bookable).bit_count() for fit in fits]

        def row(bookable: int) -> list[int]:
            live = live_combos(bookable)
            return [
                size(fit & live) if large else (fit & bookable).bit_count() for fit, large in plan
            ]

        return row

    def unit_mask(self, unit: str) -> int:
        """Tables of a table id or combo id ("T5+T6"); 0 for a unit not on this floor."""
        mask = self.unit_masks.get(unit)
        if mask is None:
            mask = self.bit.get(unit, 0)
            for combo, tables in zip(self.combos, self.combo_tables, strict=True):
                if combo.id == unit:
                    mask = tables
            self.unit_masks[unit] = mask
        return mask

    def open(self, bookable: int, live: int, n: int) -> int:
        if n < self.large_from:
            return (self.fit(n) & bookable).bit_count()
        return self.matcher.size(self.fit(n) & live)

    def blocked(self, booked: Iterable[Booking], at: int) -> int:
        mask = 0
        for tables, booked_at in booked:
            if abs(booked_at - at) <= WINDOW:
                mask |= self.tables_mask(tables)
        return mask

    def tables_mask(self, tables: Iterable[str]) -> int:
        # Tables not on this floor hold nothing here: they cannot block a unit of it.
        return sum(self.bit.get(t, 0) for t in set(tables))


# Keyed by id(floor) and dropped when the floor is collected: FloorPlan holds dicts, so it
# is not hashable, and the precomputed masks must not outlive (or be reused by) another floor.
_UNITS: dict[int, tuple[weakref.ref[FloorPlan], _Units]] = {}


def _units(floor: FloorPlan) -> _Units:
    key = id(floor)
    entry = _UNITS.get(key)
    if entry is not None and entry[0]() is floor:
        return entry[1]
    bit = {t.id: 1 << i for i, t in enumerate(floor.tables)}
    units = _Units(
        tables=floor.tables,
        combos=floor.combos,
        large_from=floor.large_from,
        bit=bit,
        all_tables=(1 << len(floor.tables)) - 1,
        combo_tables=tuple(bit[a] | bit[b] for a, b in (c.tables for c in floor.combos)),
        matcher=Matcher([c.tables for c in floor.combos]),
    )
    # The callback holds the dict itself: at interpreter exit the module global may be gone.
    forget = functools.partial(_UNITS.pop, key, None)
    _UNITS[key] = (weakref.ref(floor, lambda _: forget()), units)
    return units


def release(floor: FloorPlan) -> None:
    """Drop what was worked out for this floor (an export done with a restaurant: memory
    must not grow with the number of restaurants it covers)."""
    _UNITS.pop(id(floor), None)


def bookable_tables(floor: FloorPlan, booked: Iterable[Booking], at: int) -> frozenset[str]:
    """Tables no still-booked reservation uses less than 30 minutes from `at`."""
    units = _units(floor)
    free = units.all_tables & ~units.blocked(booked, at)
    return frozenset(t for t, b in units.bit.items() if free & b)


def spots_total(floor: FloorPlan, n: int) -> int:
    """The most units for a party of n on disjoint tables of the whole floor."""
    units = _units(floor)
    return units.open(units.all_tables, units.matcher.all, n)


def spots_open(floor: FloorPlan, booked: Iterable[Booking], at: int, n: int) -> int:
    """The most units for a party of n on disjoint tables bookable at `at`."""
    units = _units(floor)
    bookable = units.all_tables & ~units.blocked(booked, at)
    return units.open(bookable, units.live_combos(bookable), n)


def day_grid(
    floor: FloorPlan, booked: Iterable[Booking], minutes: Iterable[int], sizes: Iterable[int]
) -> dict[tuple[int, int], tuple[int, int]]:
    """(minute, n) -> (spots_open, spots_total) for every slot and size, in that order.

    Every cell is there, total 0 included (the feed leaves those out).
    """
    minutes, sizes = list(minutes), list(sizes)
    totals = [spots_total(floor, n) for n in sizes]
    grid: dict[tuple[int, int], tuple[int, int]] = {}
    for minute, row in zip(minutes, day_opens(floor, booked, minutes, sizes), strict=True):
        for n, spots_open, total in zip(sizes, row, totals, strict=True):
            grid[(minute, n)] = (spots_open, total)
    return grid


def day_opens(
    floor: FloorPlan, booked: Iterable[Booking], minutes: Iterable[int], sizes: Sequence[int]
) -> list[list[int]]:
    """spots_open per slot (rows, in `minutes` order) and party size (columns, `sizes` order)."""
    units = _units(floor)
    return _day_rows(
        units, [(at, units.tables_mask(tables)) for tables, at in booked], minutes, sizes
    )


def day_opens_of_units(
    floor: FloorPlan,
    reservations: Iterable[tuple[str, int]],
    minutes: Iterable[int],
    sizes: Sequence[int],
) -> list[list[int]]:
    """`day_opens` for reservations given as (unit, at): a table id or a combo id, as the
    log stores them (engine.booked). A unit this floor does not know holds nothing here."""
    units = _units(floor)
    mask = units.unit_mask
    return _day_rows(units, [(at, mask(unit)) for unit, at in reservations], minutes, sizes)


def _day_rows(
    units: _Units, booked: list[tuple[int, int]], minutes: Iterable[int], sizes: Sequence[int]
) -> list[list[int]]:
    """Slots share bookable sets (a reservation blocks an hour at most), and days share them
    too (an empty floor most of all), so each row is worked out once per floor and sizes.
    `booked` is (at, tables mask) per still-booked reservation."""
    key_sizes = tuple(sizes)
    minutes = list(minutes)
    if not all(map(operator.le, minutes, islice(minutes, 1, None))):  # slots come in order
        order = sorted(range(len(minutes)), key=minutes.__getitem__)
        in_order = _day_rows(units, booked, [minutes[i] for i in order], key_sizes)
        rows: list[list[int]] = [[]] * len(minutes)
        for i, row in zip(order, in_order, strict=True):
            rows[i] = row
        return rows
    # The tables each slot finds blocked: a reservation blocks the slots within 29 minutes.
    blocked = [0] * len(minutes)
    for at, mask in booked:
        for k in range(bisect_left(minutes, at - WINDOW), bisect_right(minutes, at + WINDOW)):
            blocked[k] |= mask
    today = units.day_rows  # blocked tables -> row; across days: the empty floor, above all
    if units.day_sizes != key_sizes or len(today) > _OPEN_ROWS_SHARED:
        today.clear()
        units.day_sizes = key_sizes
    missing = set(blocked).difference(today)
    if missing:
        make_row = units.row_of(key_sizes)
        all_tables = units.all_tables
        for mask in missing:
            today[mask] = make_row(all_tables & ~mask)
    return [today[mask] for mask in blocked]


def choose_unit(floor: FloorPlan, booked: Iterable[Booking], at: int, n: int) -> str | None:
    """The table or combo id a booking of n at `at` takes, or None when no spot is open.

    Only choices that lower spots_open(at, n) by exactly one are candidates (any fitting
    bookable table; a fitting bookable combo only if it lies in some maximum matching),
    so k open spots always take k bookings. Among them: fewest seats (capacity for a
    combo), then the most spots left for the other party sizes at `at`, then floor-plan
    order for tables and COMBOS order for combos.
    """
    units = _units(floor)
    bookable = units.all_tables & ~units.blocked(booked, at)
    fit = units.fit(n)
    candidates: list[tuple[int, int, str, int]] = []  # (seats, order, id, tables mask)
    if n < floor.large_from:
        fitting = fit & bookable
        for i, table in enumerate(floor.tables):
            if fitting >> i & 1:
                candidates.append((table.seats, i, table.id, 1 << i))
    else:
        usable = fit & units.live_combos(bookable)
        for j, combo in enumerate(floor.combos):
            if units.matcher.in_some_maximum(usable, j):
                candidates.append((combo.capacity, j, combo.id, units.combo_tables[j]))
    if not candidates:
        return None
    fewest = min(c[0] for c in candidates)
    others = [m for m in range(1, floor.max_party + 1) if m != n]

    def left_for_others(taken: int) -> int:
        rest = bookable & ~taken
        live = units.live_combos(rest)
        return sum(units.open(rest, live, m) for m in others)

    best = max(
        (c for c in candidates if c[0] == fewest),
        key=lambda c: (left_for_others(c[3]), -c[1]),
    )
    return best[2]
