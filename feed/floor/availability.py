"""Availability (PRODUCT.md section 3): how many parties of size n a slot can still take.

Spots are the most units for n on disjoint tables free for (at, n) (a count for single
tables, a maximum matching for combos), recomputed from what occupies the floor on every
call: a booking can only lower them, a cancellation gives them back, and `choose_unit`
keeps the promise that k open spots take exactly k bookings.

A table is free for (at, n) when nothing occupies it during the party's turn
[at, at + turn(n)) and no still-booked reservation on it is within 29 minutes of `at` (the
engine's conflict rule, so the engine always takes the booking). What occupies a table
(`Taken`: a reservation's meal, a seated party's, with overstay) is worked out by the
caller, who knows "now": these functions do not. Without turns (`turns` None) only the
conflict rule applies, the seed's reading of a booked table.

Seating areas (issue #14): every function takes an `area`, the table and combo ids a
party may be given there (None: the whole floor). Spots in an area count its units only,
on the same free tables; a combo of the area may use a table of another (a cross-area
combo), so a booking there can lower another area's spots, and only then.
"""

from __future__ import annotations

import functools
import itertools
import operator
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice

from engine import config
from engine.floor import Combo, FloorPlan, Table
from feed.floor.matching import Matcher

Booking = tuple[tuple[str, ...], int]  # a still-booked reservation: its tables and its `at`


@dataclass(frozen=True, slots=True)
class Taken:
    """Tables occupied during [start, end) (minutes of the service day). `at` is set for a
    still-booked reservation: no other booking may start within 29 minutes of it there."""

    tables: tuple[str, ...]
    start: int
    end: int
    at: int | None = None


Turns = Mapping[int, int]  # party size -> turn in minutes
AreaUnits = frozenset[str] | None  # an area's table and combo ids; None: the whole floor
Column = tuple[int, AreaUnits]  # a party size within an area: one column of a day's rows
# (tables mask, start, end, at or None): a Taken or a Booking as bits of one floor
_Span = tuple[int, int, int, int | None]

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
    # blocked tables -> spots_open per column of `day_columns`; rows are shared, never changed
    day_rows: dict[int, list[int]] = field(default_factory=dict)
    # blocked tables per column (turns differ by size) -> spots_open per column; never changed
    mixed_rows: dict[tuple[int, ...], list[int]] = field(default_factory=dict)
    mixed_columns: tuple[Column, ...] = ()
    combo_fit: dict[int, int] = field(default_factory=dict)  # n -> combos fitting n
    unit_masks: dict[str, int] = field(default_factory=dict)  # table or combo id -> tables
    # live combos by the bookable tables that are in some combo (far fewer than all sets)
    live_by_tables: dict[int, int] = field(default_factory=dict)
    # an area's units -> (its tables mask, its combos mask)
    area_masks: dict[frozenset[str], tuple[int, int]] = field(default_factory=dict)
    day_columns: tuple[Column, ...] = ()

    def in_area(self, n: int, area: AreaUnits) -> int:
        """`fit(n)` kept to the area's units (its tables below the large threshold, its
        combos at or above)."""
        fit = self.fit(n)
        if area is None:
            return fit
        masks = self.area_masks.get(area)
        if masks is None:
            tables = sum(b for t, b in self.bit.items() if t in area)
            combos = sum(1 << j for j, c in enumerate(self.combos) if c.id in area)
            masks = self.area_masks[area] = (tables, combos)
        return fit & masks[1 if n >= self.large_from else 0]

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

    def row_of(self, columns: tuple[Column, ...]) -> Callable[[int], list[int]]:
        """bookable mask -> spots_open per column (size in area): `open` for a whole row,
        with the fit masks looked up once."""
        plan = [(self.in_area(n, area), n >= self.large_from) for n, area in columns]
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
            if not mask and "+" in unit:  # a combo of this floor's tables it does not sell
                mask = self.tables_mask(unit.split("+"))
            self.unit_masks[unit] = mask
        return mask

    def open(self, bookable: int, live: int, n: int, area: AreaUnits = None) -> int:
        if n < self.large_from:
            return (self.in_area(n, area) & bookable).bit_count()
        return self.matcher.size(self.in_area(n, area) & live)

    def spans(self, taken: Iterable[Taken | Booking]) -> list[_Span]:
        out: list[_Span] = []
        for item in taken:
            if isinstance(item, Taken):
                out.append((self.tables_mask(item.tables), item.start, item.end, item.at))
            else:  # a Booking: the conflict rule only
                tables, at = item
                out.append((self.tables_mask(tables), at, at, at))
        return out

    def blocked(self, spans: Iterable[_Span], at: int, turn: int = 0) -> int:
        """Tables not free for a party that sits at `at` for `turn` minutes."""
        mask = 0
        end = at + turn
        for tables, start, stop, booked_at in spans:
            if (turn > 0 and start < end and stop > at) or (
                booked_at is not None and abs(booked_at - at) <= WINDOW
            ):
                mask |= tables
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


def bookable_tables(
    floor: FloorPlan, taken: Iterable[Taken | Booking], at: int, turn: int = 0
) -> frozenset[str]:
    """Tables free for a party at `at` that keeps its table `turn` minutes."""
    units = _units(floor)
    free = units.all_tables & ~units.blocked(units.spans(taken), at, turn)
    return frozenset(t for t, b in units.bit.items() if free & b)


def spots_total(floor: FloorPlan, n: int, area: AreaUnits = None) -> int:
    """The most units for a party of n on disjoint tables of the whole floor (of the
    area's units, with an area)."""
    units = _units(floor)
    return units.open(units.all_tables, units.matcher.all, n, area)


def spots_open(
    floor: FloorPlan,
    taken: Iterable[Taken | Booking],
    at: int,
    n: int,
    turns: Turns | None = None,
    area: AreaUnits = None,
) -> int:
    """The most units for a party of n (in the area) on disjoint tables free for (at, n)."""
    units = _units(floor)
    turn = turns.get(n, 0) if turns is not None else 0
    bookable = units.all_tables & ~units.blocked(units.spans(taken), at, turn)
    return units.open(bookable, units.live_combos(bookable), n, area)


def day_grid(
    floor: FloorPlan,
    taken: Iterable[Taken | Booking],
    minutes: Iterable[int],
    sizes: Iterable[int],
    turns: Turns | None = None,
    area: AreaUnits = None,
) -> dict[tuple[int, int], tuple[int, int]]:
    """(minute, n) -> (spots_open, spots_total) for every slot and size (in the area), in
    that order.

    Every cell is there, total 0 included (the feed leaves those out).
    """
    minutes, sizes = list(minutes), list(sizes)
    totals = [spots_total(floor, n, area) for n in sizes]
    grid: dict[tuple[int, int], tuple[int, int]] = {}
    rows = day_opens(floor, taken, minutes, [(n, area) for n in sizes], turns)
    for minute, row in zip(minutes, rows, strict=True):
        for n, spots_open, total in zip(sizes, row, totals, strict=True):
            grid[(minute, n)] = (spots_open, total)
    return grid


def day_opens(
    floor: FloorPlan,
    taken: Iterable[Taken | Booking],
    minutes: Iterable[int],
    sizes: Sequence[int | Column],
    turns: Turns | None = None,
) -> list[list[int]]:
    """spots_open per slot (rows, in `minutes` order) and party size (columns, `sizes`
    order); a column is a size on the whole floor or a (size, area) pair."""
    units = _units(floor)
    return _day_rows(units, units.spans(taken), minutes, _columns(sizes), turns)


def day_opens_of_units(
    floor: FloorPlan,
    taken: Iterable[tuple[str, int, int, int | None]],
    minutes: Iterable[int],
    sizes: Sequence[int | Column],
    turns: Turns | None = None,
) -> list[list[int]]:
    """`day_opens` for occupations given as (unit, start, end, at): a table id or a combo
    id, as the log stores them (engine.booked). Tables this floor does not know hold
    nothing here (a partner's floor without its walk-in tables)."""
    units = _units(floor)
    mask = units.unit_mask
    spans = [(mask(unit), start, end, at) for unit, start, end, at in taken]
    return _day_rows(units, spans, minutes, _columns(sizes), turns)


def _columns(sizes: Sequence[int | Column]) -> tuple[Column, ...]:
    return tuple(c if isinstance(c, tuple) else (c, None) for c in sizes)


def _blocked_per_turn(
    spans: list[_Span], minutes: list[int], turns: Sequence[int]
) -> dict[int, list[int]]:
    """turn -> the tables each slot (in order) finds not free for a party of that turn.

    A party of a longer turn finds everything a shorter one does blocked, and more: each
    span's meal blocks the slots in (start - turn, end), a range that only grows to the left
    with the turn. So each span marks its slots once, in layers by turn (the conflict
    window and the shortest turn's range in the first), and the layers are OR-ed upwards."""
    ordered = sorted(set(turns))
    count = len(minutes)
    layers = [[0] * count for _ in ordered]
    first = layers[0]
    for mask, start, end, at in spans:
        if at is not None:  # the engine's conflict rule: within 29 minutes of `at`
            for k in range(bisect_left(minutes, at - WINDOW), bisect_right(minutes, at + WINDOW)):
                first[k] |= mask
        if end <= start:
            continue
        upper = bisect_left(minutes, end)  # the meals overlap: start - turn < minute < end
        for layer, turn in zip(layers, ordered, strict=True):
            if turn <= 0:
                continue
            lower = bisect_right(minutes, start - turn)
            for k in range(lower, upper):
                layer[k] |= mask
            upper = min(upper, lower)
    for below, above in itertools.pairwise(layers):
        for k in range(count):
            above[k] |= below[k]
    return dict(zip(ordered, layers, strict=True))


def _day_rows(
    units: _Units,
    spans: list[_Span],
    minutes: Iterable[int],
    columns: tuple[Column, ...],
    turns: Turns | None = None,
) -> list[list[int]]:
    """Slots share bookable sets (something occupies a table for a few hours at most), and
    days share them too (an empty floor most of all), so each row is worked out once per
    floor and sizes. Party sizes with another turn see other tables blocked: a slot's row
    then takes each size's column from the row of its own blocked set."""
    key_sizes = columns
    minutes = list(minutes)
    if not all(map(operator.le, minutes, islice(minutes, 1, None))):  # slots come in order
        order = sorted(range(len(minutes)), key=minutes.__getitem__)
        in_order = _day_rows(units, spans, [minutes[i] for i in order], key_sizes, turns)
        rows: list[list[int]] = [[]] * len(minutes)
        for i, row in zip(order, in_order, strict=True):
            rows[i] = row
        return rows
    today = units.day_rows  # blocked tables -> row; across days: the empty floor, above all
    if units.day_columns != key_sizes or len(today) > _OPEN_ROWS_SHARED:
        today.clear()
        units.day_columns = key_sizes
    if not spans:  # nothing on the floor: every slot is the empty floor's row
        if 0 not in today:
            today[0] = units.row_of(key_sizes)(units.all_tables)
        return [today[0]] * len(minutes)
    size_turns = [turns.get(n, 0) if turns is not None else 0 for n, _ in key_sizes]
    by_turn = _blocked_per_turn(spans, minutes, size_turns)
    missing = set().union(*by_turn.values()).difference(today)
    if missing:
        make_row = units.row_of(key_sizes)
        all_tables = units.all_tables
        for mask in missing:
            today[mask] = make_row(all_tables & ~mask)
    if len(by_turn) == 1:
        return [today[mask] for mask in next(iter(by_turn.values()))]
    per_column = [by_turn[t] for t in size_turns]
    mixed = units.mixed_rows  # (blocked tables per size) -> row, shared like `today`'s
    if len(mixed) > _OPEN_ROWS_SHARED or units.mixed_columns != key_sizes:
        mixed.clear()
        units.mixed_columns = key_sizes
    out: list[list[int]] = []
    for masks in zip(*per_column, strict=True):
        found = mixed.get(masks)
        if found is None:
            first = masks[0]
            if masks.count(first) == len(masks):
                found = today[first]
            else:
                found = [today[m][i] for i, m in enumerate(masks)]
            mixed[masks] = found
        out.append(found)
    return out


def choose_unit(
    floor: FloorPlan,
    taken: Iterable[Taken | Booking],
    at: int,
    n: int,
    turns: Turns | None = None,
    area: AreaUnits = None,
) -> str | None:
    """The table or combo id a booking of n at `at` takes, or None when no spot is open.
    With an area, the same rules among the area's units (and its spots for the others).

    Only choices that lower spots_open(at, n) by exactly one are candidates (any fitting
    bookable table; a fitting bookable combo only if it lies in some maximum matching),
    so k open spots always take k bookings. Among them: fewest seats (capacity for a
    combo), then the most spots left for the other party sizes at `at`, then floor-plan
    order for tables and COMBOS order for combos.
    """
    units = _units(floor)
    spans = units.spans(taken)

    def turn(m: int) -> int:
        return turns.get(m, 0) if turns is not None else 0

    free_by_turn: dict[int, int] = {}

    def free(m: int) -> int:
        t = turn(m)
        if t not in free_by_turn:
            free_by_turn[t] = units.all_tables & ~units.blocked(spans, at, t)
        return free_by_turn[t]

    bookable = free(n)
    fit = units.in_area(n, area)
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

    def left_for_others(chosen: int) -> int:
        left = 0
        for m in others:
            rest = free(m) & ~chosen
            left += units.open(rest, units.live_combos(rest), m, area)
        return left

    best = max(
        (c for c in candidates if c[0] == fewest),
        key=lambda c: (left_for_others(c[3]), -c[1]),
    )
    return best[2]
