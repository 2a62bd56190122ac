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
import operator
import sys
import weakref
from array import array
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
# Rows kept per floor and column set across days (an empty floor, a quiet hour recur).
# Bounded: a server keeps every restaurant's floor, and about 1,000 rows are some 250 KB;
# an export lets go of a floor it worked out itself once it is done with the restaurant.
_OPEN_ROWS_SHARED = 1024
_COLUMN_SETS_KEPT = 8  # per floor: the partners' columns, the host's, the export's, areas


@dataclass
class _Plan:
    """A day's rows when party sizes have different turns: the columns of one turn (a
    group) see that turn's blocked tables, so a row is its groups' parts, each worked out
    from its own blocked set (only the tables that matter to it: `keep`) and kept."""

    keep: dict[int, int]  # turn (shortest first) -> the tables that matter to its group
    # the groups' parts, one after another -> the row (None: they are the row already)
    reorder: Callable[[list[int]], tuple[int, ...]] | None
    makers: list[Callable[[int], list[int]]]  # bookable tables -> a group's part
    # per group: blocked tables -> its part; never changed. Tuples of ints: the cyclic
    # collector stops tracking them at its first pass, where lists would be walked again and
    # again for as long as the floor is kept.
    parts: list[dict[int, tuple[int, ...]]]
    # blocked tables per group, packed (`_blocked_keys`) -> the whole row; shared like
    # `_Units.day_rows`, never changed
    rows: dict[bytes, list[int]] = field(default_factory=dict)

    @functools.cached_property
    def order(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The turns, shortest first, and the tables that matter to each: what every day
        of these columns asks `_blocked_keys` for (worked out once, not once a day)."""
        turns = tuple(sorted(self.keep))
        return turns, tuple(self.keep[turn] for turn in turns)


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
    # columns -> (blocked tables -> spots_open per column); rows are shared, never changed.
    # One table per column set: threads work out the same floor's days for different
    # columns at once (a server's lookups and its export), and must not share or clear one.
    day_rows: dict[tuple[Column, ...], dict[int, list[int]]] = field(default_factory=dict)
    combo_fit: dict[int, int] = field(default_factory=dict)  # n -> combos fitting n
    unit_masks: dict[str, int] = field(default_factory=dict)  # table or combo id -> tables
    # live combos by the bookable tables that are in some combo (far fewer than all sets)
    live_by_tables: dict[int, int] = field(default_factory=dict)
    # an area's units -> (its tables mask, its combos mask)
    area_masks: dict[frozenset[str], tuple[int, int]] = field(default_factory=dict)
    # (columns, their turns) -> how a day's rows are put together (`plan`)
    plans: dict[tuple[tuple[Column, ...], tuple[int, ...]], _Plan] = field(default_factory=dict)
    last_plan: tuple[tuple[Column, ...], tuple[int, ...], _Plan] | None = None

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
                    1 << i for i, (low, seats) in enumerate(self.table_sizes) if low <= n <= seats
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
        return _live_combos(self.live_by_tables, self.in_combos, self.combo_tables, bookable)

    @functools.cached_property
    def table_sizes(self) -> list[tuple[int, int]]:
        """Each table's (smallest party, seats), read once for `fit`'s party sizes."""
        return [(t.smallest_party, t.seats) for t in self.tables]

    @functools.cached_property
    def in_combos(self) -> int:
        """Mask of the tables that are part of some combo."""
        mask = 0
        for tables in self.combo_tables:
            mask |= tables
        return mask

    def plan(self, columns: tuple[Column, ...], turns: tuple[int, ...]) -> _Plan:
        """How a day's rows for these columns (with these turns) are put together, worked
        out once per floor and kept (a server asks the same columns all day)."""
        last = self.last_plan  # the same columns as the day before, most often
        if last is not None and last[0] == columns and last[1] == turns:
            return last[2]
        found = self.plans.get((columns, turns))
        if found is None:
            if len(self.plans) > 64:
                self.plans.clear()
            ordered = sorted(set(turns))
            groups = [tuple(i for i, t in enumerate(turns) if t == u) for u in ordered]
            found = self.plans[(columns, turns)] = _Plan(
                keep={
                    u: self.relevant(columns[i] for i in g)
                    for u, g in zip(ordered, groups, strict=True)
                },
                reorder=_reorder([i for g in groups for i in g]),
                makers=[self.row_of(tuple(columns[i] for i in g)) for g in groups],
                parts=[{} for _ in groups],
            )
        self.last_plan = (columns, turns, found)
        return found

    def relevant(self, columns: Iterable[Column]) -> int:
        """The tables whose being blocked can change these columns' spots: the fitting
        tables of a size below the large threshold, the tables of the fitting combos of one
        at or above. Blocked sets that differ only elsewhere give the same row part."""
        mask = 0
        for n, area in columns:
            fit = self.in_area(n, area)
            if n < self.large_from:
                mask |= fit
            else:
                for j, tables in enumerate(self.combo_tables):
                    if fit >> j & 1:
                        mask |= tables
        return mask

    def row_of(self, columns: tuple[Column, ...]) -> Callable[[int], list[int]]:
        """bookable mask -> spots_open per column (size in area): `open` for a whole row,
        with the fit masks looked up once."""
        plan = [(self.in_area(n, area), n >= self.large_from) for n, area in columns]
        size = self.matcher.size
        # Not the bound method: a row function kept in this object's plans must not hold the
        # object itself, or a floor let go (`release`) would live on with all its rows until
        # the garbage collector finds the cycle (an export lets go of hundreds of floors).
        live_combos = functools.partial(
            _live_combos, self.live_by_tables, self.in_combos, self.combo_tables
        )
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
            # An empty meal (a Booking: the conflict rule only) occupies nothing.
            if (turn > 0 and start < end and stop > at and stop > start) or (
                booked_at is not None and abs(booked_at - at) <= WINDOW
            ):
                mask |= tables
        return mask

    def tables_mask(self, tables: Iterable[str]) -> int:
        # Tables not on this floor hold nothing here: they cannot block a unit of it.
        return sum(self.bit.get(t, 0) for t in set(tables))


def _live_combos(
    known: dict[int, int], in_combos: int, combo_tables: tuple[int, ...], bookable: int
) -> int:
    """`_Units.live_combos` given its parts: mask of the combos whose two tables are both
    bookable, kept in `known` by the bookable tables that are in some combo."""
    key = bookable & in_combos
    live = known.get(key)
    if live is None:
        live = 0
        for j, tables in enumerate(combo_tables):
            if tables & key == tables:
                live |= 1 << j
        known[key] = live
    return live


# Keyed by id(floor) and dropped when the floor is collected: FloorPlan holds dicts, so it
# is not hashable, and the precomputed masks must not outlive (or be reused by) another floor.
_UNITS: dict[int, tuple[weakref.ref[FloorPlan], _Units]] = {}


def _kept(floor: FloorPlan) -> _Units | None:
    """What is kept for this very floor (an id may be another's once the first is gone)."""
    entry = _UNITS.get(id(floor))
    return entry[1] if entry is not None and entry[0]() is floor else None


def _units(floor: FloorPlan) -> _Units:
    kept = _kept(floor)
    if kept is not None:
        return kept
    key = id(floor)
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


def worked_out(floor: FloorPlan) -> bool:
    """Is something worked out and kept for this floor (a server's lookups keep its
    restaurants' floors so)?"""
    return _kept(floor) is not None


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
    known = units.unit_masks.get  # what unit_mask keeps: one C call per occupation
    spans = [(known(unit) or mask(unit), start, end, at) for unit, start, end, at in taken]
    return _day_rows(units, spans, minutes, _columns(sizes), turns)


def _columns(sizes: Sequence[int | Column]) -> tuple[Column, ...]:
    return tuple(c if isinstance(c, tuple) else (c, None) for c in sizes)


def _blocked_per_turn(
    spans: list[_Span],
    minutes: list[int],
    turns: Sequence[int],
    all_tables: int,
    keep: Mapping[int, int] | None = None,
) -> dict[int, list[int]]:
    """turn -> the tables each slot (in order) finds not free for a party of that turn.

    A party of a longer turn finds everything a shorter one does blocked, and more: each
    span's meal blocks the slots in (start - turn, end), a range that only grows to the left
    with the turn. So each span marks its slots once, in layers by turn (the conflict
    window and the shortest turn's range in the first), and the layers are OR-ed upwards.

    A layer is one integer with a lane of bits per slot (lane k holds slot k's tables), so
    marking a span's slots lo..hi-1 is one multiplication and one OR (`_lanes`), however
    many slots the meal covers. With `keep` (turn -> tables), a turn's masks hold only
    those tables (the ones its party sizes can use)."""
    ordered = sorted(set(turns))
    count = len(minutes)
    width = 64 * max(1, -(-all_tables.bit_length() // 64))  # a lane: whole 64-bit words
    layers = [0] * len(ordered)
    # Spans recur (a booking at 19:00 of a party of 4 on any day, any table): how a span
    # marks the layers depends on its times only, so it is worked out once per day shape.
    marks = _span_marks(tuple(minutes), tuple(ordered), width)
    for mask, start, end, at in spans:
        how = marks.get((start, end, at))
        if how is None:
            if len(marks) >= _SPAN_MARKS_KEPT:
                marks.clear()
            how = marks[(start, end, at)] = _marks_of(minutes, ordered, width, start, end, at)
        for i, slots in how:
            layers[i] |= mask * slots
    for i in range(1, len(layers)):
        layers[i] |= layers[i - 1]
    if keep is not None:
        every = _lanes(width, count)[0][count]
        layers = [layer & keep[turn] * every for turn, layer in zip(ordered, layers, strict=True)]
    return {turn: _unpack(layer, width, count) for turn, layer in zip(ordered, layers, strict=True)}


# Spans kept per day shape: bookings recur at slot times and turns (about 120 on the export
# bench's floor); a day under way adds a few a minute (seated parties' ends move with now).
# Bounded, as a server works out days of many slot grids: an entry is a key and, mostly,
# references to `_lanes`' integers; at worst (random spans, 40 slots of 128-bit lanes) the
# 16 shapes of 512 spans hold some 7 MiB.
_SPAN_MARKS_KEPT = 512


@functools.lru_cache(maxsize=16)
def _span_marks(
    minutes: tuple[int, ...], ordered: tuple[int, ...], width: int
) -> dict[tuple[int, int, int | None], tuple[tuple[int, int], ...]]:
    """(start, end, at) -> `_marks_of` for a day of these slots and turns (filled as spans
    come)."""
    return {}


def _marks_of(
    minutes: Sequence[int], ordered: Sequence[int], width: int, start: int, end: int, at: int | None
) -> tuple[tuple[int, int], ...]:
    """(layer, lanes) pairs: a span's tables mask times `lanes`, OR-ed into that layer, marks
    the slots it blocks for the layer's turn and not already for a shorter one."""
    count = len(minutes)
    lanes = _lanes(width, count)
    first = 0
    positive = [(i, turn) for i, turn in enumerate(ordered) if turn > 0]
    # A booked meal of WINDOW minutes or more starting at `at` blocks its conflict window
    # in the first layer anyway when the shortest turn is longer than WINDOW: (at - turn,
    # end) holds [at - WINDOW, at + WINDOW].
    covered = bool(positive) and positive[0] == (0, ordered[0]) and ordered[0] > WINDOW
    if at is not None and not (covered and at == start and end - start > WINDOW):
        # the engine's conflict rule: within 29 minutes of `at`
        first = lanes[bisect_left(minutes, at - WINDOW)][bisect_right(minutes, at + WINDOW)]
    out: list[tuple[int, int]] = []
    if end > start:
        upper = bisect_left(minutes, end)  # the meals overlap: start - turn < minute < end
        for i, turn in positive:
            lower = bisect_right(minutes, start - turn)
            if lower < upper:
                if i:
                    out.append((i, lanes[lower][upper]))
                else:
                    first |= lanes[lower][upper]
                upper = lower
    if first:
        out.insert(0, (0, first))
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _lanes(width: int, count: int) -> list[list[int]]:
    """[lo][hi] -> an integer with bit 0 of lanes lo..hi-1 set (0 when hi <= lo), lanes of
    `width` bits for a day of `count` slots: a mask times it is the mask in each of those
    lanes (they never carry into each other, as a mask fits its lane)."""
    table = []
    for lo in range(count + 1):
        row, acc = [0] * (count + 1), 0
        for hi in range(lo + 1, count + 1):
            acc |= 1 << (width * (hi - 1))
            row[hi] = acc
        table.append(row)
    return table


def _reorder(flat: list[int]) -> Callable[[list[int]], tuple[int, ...]] | None:
    """For groups whose columns (`flat`: the column of each value, group after group) are
    not the row's order: values group after group -> the row, in one C call."""
    if flat == list(range(len(flat))):
        return None
    where = {column: i for i, column in enumerate(flat)}
    return operator.itemgetter(*(where[column] for column in range(len(flat))))


def _lanes_of(raw: bytes, width: int, count: int) -> list[int]:
    """`count` lanes of `width` bits packed little-endian in `raw`, as ints: with 64-bit
    lanes, read straight off the bytes (no round trip through one large integer)."""
    if width == 64:
        lanes = array("Q", raw)
        if sys.byteorder != "little":
            lanes.byteswap()
        return lanes.tolist()
    return _unpack(int.from_bytes(raw, "little"), width, count)


def _unpack(layer: int, width: int, count: int) -> list[int]:
    """The lanes of a layer as a list of ints, slot by slot."""
    if width == 64:  # one C call for the whole day (array reads the machine's byte order)
        return array("Q", layer.to_bytes(8 * count, sys.byteorder)).tolist()
    step = width // 8
    raw = layer.to_bytes(step * count, "little")
    return [int.from_bytes(raw[k * step : (k + 1) * step], "little") for k in range(count)]


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
    is then put together from each turn's part (`_Plan`)."""
    key_sizes = columns
    minutes = list(minutes)
    if not all(map(operator.le, minutes, islice(minutes, 1, None))):  # slots come in order
        order = sorted(range(len(minutes)), key=minutes.__getitem__)
        in_order = _day_rows(units, spans, [minutes[i] for i in order], key_sizes, turns)
        rows: list[list[int]] = [[]] * len(minutes)
        for i, row in zip(order, in_order, strict=True):
            rows[i] = row
        return rows
    # blocked tables -> row, across days (the empty floor above all). Read with get() and
    # kept in locals: another thread may clear the table (its bound) at any moment.
    today = units.day_rows.get(key_sizes)
    if today is None or len(today) > _OPEN_ROWS_SHARED:
        if len(units.day_rows) >= _COLUMN_SETS_KEPT:
            units.day_rows.clear()
        today = units.day_rows[key_sizes] = {}
    if not spans:  # nothing on the floor: every slot is the empty floor's row
        empty = today.get(0)
        if empty is None:
            empty = today[0] = units.row_of(key_sizes)(units.all_tables)
        return [empty] * len(minutes)
    size_turns = tuple(turns.get(n, 0) if turns is not None else 0 for n, _ in key_sizes)
    if len(set(size_turns)) == 1:
        (masks,) = _blocked_per_turn(spans, minutes, size_turns, units.all_tables).values()
        got = list(map(today.get, masks))
        if None in got:
            make_row = units.row_of(key_sizes)
            for k, mask in enumerate(masks):
                if got[k] is None:  # the same mask earlier in the day may have filled it
                    known = today.get(mask)
                    if known is None:
                        known = today[mask] = make_row(units.all_tables & ~mask)
                    got[k] = known
        return got  # type: ignore[return-value]
    plan = units.plan(key_sizes, size_turns)
    ordered, keep = plan.order
    all_tables = units.all_tables
    width = _lane_width(all_tables)
    keys = _blocked_keys(spans, minutes, ordered, width, keep)
    mixed = plan.rows
    if len(mixed) > _OPEN_ROWS_SHARED:
        mixed.clear()
    out = list(map(mixed.get, keys))
    if None not in out:
        return out  # type: ignore[return-value]
    groups = len(ordered)
    # every slot's masks, turn by turn, as ints (the keys' lanes read back in one C call)
    lanes = _lanes_of(b"".join(keys), width, len(keys) * groups)
    for k, key in enumerate(keys):
        if out[k] is not None:
            continue
        found = mixed.get(key)  # the same key earlier in the day may have filled it
        if found is None:
            masks = lanes[k * groups : (k + 1) * groups]
            pieces: list[tuple[int, ...] | None] = list(map(dict.get, plan.parts, masks))
            if None in pieces:  # most rows are parts seen before, in another combination
                for g, piece in enumerate(pieces):
                    if piece is None:
                        mask = masks[g]
                        made_part = tuple(plan.makers[g](all_tables & ~mask))
                        pieces[g] = plan.parts[g][mask] = made_part
                        if len(plan.parts[g]) > _OPEN_ROWS_SHARED:
                            plan.parts[g].clear()
            made: list[int] = []  # the parts in turn (an extend each: cheaper than chain)
            for piece in pieces:
                made += piece  # type: ignore[arg-type]
            found = made if plan.reorder is None else list(plan.reorder(made))
            mixed[key] = found
        out[k] = found
    return out  # type: ignore[return-value]


def _lane_width(all_tables: int) -> int:
    """Bits of a lane holding one table mask: whole 64-bit words."""
    return 64 * max(1, -(-all_tables.bit_length() // 64))


def _blocked_keys(
    spans: list[_Span],
    minutes: list[int],
    ordered: Sequence[int],
    width: int,
    keep: Sequence[int],
) -> list[bytes]:
    """`_blocked_per_turn` with `keep`, packed slot by slot: slot k's key is the masks of
    every turn (shortest first), `width` bits each, little-endian, as bytes (hashable, and
    hashed once). The same masks, laid out the other way round: one integer holds the whole
    day, a lane per slot and turn (lane k * turns + i: slot k, turn i), so each span marks
    every turn's slots with one multiplication and one OR, and the day's keys are slices of
    one `to_bytes`. A longer turn finds blocked what a shorter one does: each span's marks
    are OR-ed upwards, a shift per turn, once per span shape (kept), not once a day (the
    OR of masks times marks is the same either way: a mask fits its lane)."""
    count = len(minutes)
    if not count:
        return []
    turns = len(ordered)
    stride = width * turns  # a slot's lanes
    marks = _span_fields(tuple(minutes), tuple(ordered), width)
    _every, below, slices = _key_layout(width, turns, count)
    day = 0
    for mask, start, end, at in spans:
        how = marks.get((start, end, at))
        if how is None:
            if len(marks) >= _SPAN_MARKS_KEPT:
                marks.clear()
            how = 0
            for i, slots in _marks_of(minutes, ordered, stride, start, end, at):
                how |= slots << (i * width)
            for lanes in below:  # a longer turn finds blocked what a shorter one does
                how |= (how & lanes) << width
            marks[(start, end, at)] = how
        day |= mask * how
    raw = (day & _kept_lanes(tuple(keep), width, count)).to_bytes(stride // 8 * count, "little")
    return list(map(raw.__getitem__, slices))


@functools.lru_cache(maxsize=64)
def _kept_lanes(keep: tuple[int, ...], width: int, count: int) -> int:
    """`keep` (the tables that matter to each turn) in every slot's lanes of `_blocked_keys`'
    layout: the same for every day of a floor's slot grid, so worked out once."""
    kept = 0
    for i, tables in enumerate(keep):
        kept |= tables << (i * width)
    return kept * _key_layout(width, len(keep), count)[0]


@functools.lru_cache(maxsize=16)
def _span_fields(
    minutes: tuple[int, ...], ordered: tuple[int, ...], width: int
) -> dict[tuple[int, int, int | None], int]:
    """(start, end, at) -> how a span marks a day of these slots and turns in
    `_blocked_keys`' layout (its mask times it), every turn's lane marked where a shorter
    turn's is; filled as spans come, like `_span_marks`."""
    return {}


@functools.lru_cache(maxsize=64)
def _key_layout(width: int, turns: int, count: int) -> tuple[int, list[int], list[slice]]:
    """For `_blocked_keys`: bit 0 of every slot's lanes; per turn but the last, its lane in
    every slot (all ones); and each slot's bytes."""
    stride = width * turns
    every = _lanes(stride, count)[0][count]
    lane = (1 << width) - 1
    below = [(lane << (i * width)) * every for i in range(turns - 1)]
    size = stride // 8
    return every, below, [slice(k * size, (k + 1) * size) for k in range(count)]


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
    scored = scored_units(floor, taken, at, n, turns, area)
    if not scored:
        return None
    return max(scored, key=lambda c: (c[1], -c[2]))[3]


# A candidate unit for a booking: (seats or capacity, spots it leaves for the other party
# sizes at that slot, floor-plan or COMBOS order, unit id, its tables mask)
ScoredUnit = tuple[int, int, int, str, int]


def scored_units(
    floor: FloorPlan,
    taken: Iterable[Taken | Booking],
    at: int,
    n: int,
    turns: Turns | None = None,
    area: AreaUnits = None,
    *,
    every: bool = False,
) -> list[ScoredUnit]:
    """`choose_unit`'s candidates with the fewest seats (with `every`: all of them), each
    scored with the spots it leaves for the other party sizes at `at`, in floor-plan /
    COMBOS order. (bench/service_night.py ranks them other ways, for what-ifs.)"""
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
        return []
    fewest = min(c[0] for c in candidates)
    others = [m for m in range(1, floor.max_party + 1) if m != n]

    def left_for_others(chosen: int) -> int:
        left = 0
        for m in others:
            rest = free(m) & ~chosen
            left += units.open(rest, units.live_combos(rest), m, area)
        return left

    return [
        (c[0], left_for_others(c[3]), c[1], c[2], c[3])
        for c in candidates
        if every or c[0] == fewest
    ]
