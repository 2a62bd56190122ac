"""A restaurant's floor plan: tables, the combinations they make and the party-size rules.

Invariants: table ids are unique and non-empty, a combo joins two distinct known
tables, and floor-plan order (the tie-break of every rule) is the order given.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from engine import config

# Party sizes whose quote class is worked out when the floor is built (see FloorPlan).
_KNOWN_SIZES = 1024


class FloorPlanError(ValueError):
    """A floor plan that the rules cannot run on (raised when it is built)."""


@dataclass(frozen=True)
class Table:
    id: str
    seats: int
    min_party: int | None = None  # None: the roominess limit, max(1, seats - 2)

    @property
    def smallest_party(self) -> int:
        if self.min_party is not None:
            return self.min_party
        return max(1, self.seats - config.ROOMINESS_SPARE_SEATS)


@dataclass(frozen=True)
class Combo:
    tables: tuple[str, str]
    capacity: int
    min_party: int

    @property
    def id(self) -> str:
        return "+".join(self.tables)


@dataclass(frozen=True)
class FloorPlan:
    """Everything about a restaurant that the seating rules depend on."""

    tables: tuple[Table, ...]
    combos: tuple[Combo, ...]
    large_from: int  # parties of this size or more are large: combos only
    max_party: int = config.MAX_PARTY_SIZE
    dwell_minutes: Mapping[int, int] = field(default_factory=dict)  # quote class -> minutes
    quote_cap: int = config.QUOTE_CAP_MINUTES
    large_quote_minutes: int = config.LARGE_QUOTE_MINUTES
    large_turn_minutes: int = config.LARGE_TURN_MINUTES
    # Off on the seed's floor so `run` stays exact to the seed; restaurant files turn it on.
    protect_reservations: bool = False
    _tables_by_id: dict[str, Table] = field(init=False, repr=False, compare=False)
    _combos_by_id: dict[str, Combo] = field(init=False, repr=False, compare=False)
    ranked_tables: tuple[Table, ...] = field(init=False, repr=False, compare=False)
    ranked_combos: tuple[Combo, ...] = field(init=False, repr=False, compare=False)
    table_rank: dict[str, int] = field(init=False, repr=False, compare=False)
    class_tables: dict[int, int] = field(init=False, repr=False, compare=False)
    _class_of: dict[int, int] = field(init=False, repr=False, compare=False)
    _classes: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # "Fewest seats, ties to floor-plan order" and "fewest combined seats, ties to
        # COMBOS order" are fixed orders, so the pass can take the first usable one.
        ranked = sorted(self.tables, key=lambda t: t.seats)  # stable: floor order on ties
        setattr_ = object.__setattr__
        setattr_(self, "_tables_by_id", {t.id: t for t in self.tables})
        setattr_(self, "_combos_by_id", {c.id: c for c in self.combos})
        setattr_(self, "ranked_tables", tuple(ranked))
        setattr_(self, "ranked_combos", tuple(sorted(self.combos, key=lambda c: c.capacity)))
        setattr_(self, "table_rank", {t.id: i for i, t in enumerate(ranked)})
        # Quotes ask for every waiting party's class, so the answers are worked out once.
        counts: dict[int, int] = {}
        for t in self.tables:
            counts[t.seats] = counts.get(t.seats, 0) + 1
        setattr_(self, "class_tables", counts)
        # Only the sizes a party may have: a table of 10**9 seats (a typo, or a file meant
        # to break us) must not make a dict of 10**9 entries. Larger sizes are searched.
        classes = sorted(counts)
        known = min(classes[-1] if classes else 0, self.max_party, _KNOWN_SIZES)
        class_of = {n: classes[bisect_left(classes, n)] for n in range(1, known + 1)}
        setattr_(self, "_classes", tuple(classes))
        setattr_(self, "_class_of", class_of)

    def __deepcopy__(self, memo: dict[int, object]) -> FloorPlan:
        # A value: frozen, its lookups built once in __post_init__ and never changed. Every
        # stand of a restaurant shares it, and a copy of a stand (a board read, a tablet's
        # snapshot) shares it too rather than copying every table and lookup.
        return self

    def table(self, table_id: str) -> Table | None:
        return self._tables_by_id.get(table_id)

    def combo(self, combo_id: str) -> Combo | None:
        return self._combos_by_id.get(combo_id)

    def quote_class(self, size: int) -> int | None:
        """Seat count of the smallest table that fits `size` (None when no table does)."""
        cls = self._class_of.get(size)
        if cls is None and 1 <= size <= (self._classes[-1] if self._classes else 0):
            cls = self._classes[bisect_left(self._classes, size)]
        return cls

    def is_large(self, size: int) -> bool:
        return size >= self.large_from

    def turn(self, size: int) -> int:
        """Minutes a party of `size` keeps its unit: its quote class's dwell, or the large
        turn for a large party (the only parties the pass puts on a combo)."""
        if self.is_large(size):
            return self.large_turn_minutes
        cls = self.quote_class(size)
        return self.dwell_minutes[cls] if cls is not None else self.large_turn_minutes


def build_floor(
    tables: Iterable[tuple[str, int] | tuple[str, int, int | None] | Table],
    combos: Iterable[Sequence[str] | Combo] = (),
    *,
    large_from: int | None = None,
    max_party: int = config.MAX_PARTY_SIZE,
    dwell_minutes: Mapping[int, int] | None = None,
    quote_cap: int = config.QUOTE_CAP_MINUTES,
    large_quote_minutes: int = config.LARGE_QUOTE_MINUTES,
    large_turn_minutes: int = config.LARGE_TURN_MINUTES,
    protect_reservations: bool = False,
    combo_capacity: Mapping[str, int] | None = None,
    combo_min_party: Mapping[str, int] | None = None,
) -> FloorPlan:
    """Build and check a floor plan; defaults follow PRODUCT.md section 1 and 3."""
    built_tables: list[Table] = []
    for t in tables:
        if isinstance(t, Table):
            built_tables.append(t)
        elif len(t) == 2:
            built_tables.append(Table(t[0], t[1]))
        else:
            built_tables.append(Table(t[0], t[1], t[2]))
    if not built_tables:
        raise FloorPlanError("a floor plan needs at least one table")
    seen: set[str] = set()
    for t in built_tables:
        if not isinstance(t.id, str) or not t.id or "+" in t.id:
            raise FloorPlanError(f"table id {t.id!r} must be a non-empty string without '+'")
        if t.id in seen:
            raise FloorPlanError(f"table {t.id} is listed twice")
        seen.add(t.id)
        if isinstance(t.seats, bool) or not isinstance(t.seats, int) or t.seats < 1:
            raise FloorPlanError(f"table {t.id}: seats must be a positive integer")
        if t.min_party is not None and not 1 <= t.min_party <= t.seats:
            raise FloorPlanError(f"table {t.id}: min_party must be between 1 and its seats")
    seats = {t.id: t.seats for t in built_tables}
    capacity_of = dict(combo_capacity or {})
    min_of = dict(combo_min_party or {})
    built_combos: list[Combo] = []
    for c in combos:
        if isinstance(c, Combo):
            combo = c
        else:
            pair = tuple(c)
            if len(pair) != 2:
                raise FloorPlanError(
                    f"combo {'+'.join(map(str, pair))} must join exactly two tables"
                )
            a, b = str(pair[0]), str(pair[1])
            cid = f"{a}+{b}"
            capacity = capacity_of.get(cid, seats.get(a, 0) + seats.get(b, 0))
            combo = Combo(
                (a, b),
                capacity,
                min_of.get(cid, max(1, capacity - config.ROOMINESS_SPARE_SEATS)),
            )
        a, b = combo.tables
        if a not in seats or b not in seats:
            raise FloorPlanError(f"combo {combo.id} names a table that is not on the floor")
        if a == b:
            raise FloorPlanError(f"combo {combo.id} joins a table to itself")
        if any(existing.id == combo.id for existing in built_combos):
            raise FloorPlanError(f"combo {combo.id} is listed twice")
        if combo.capacity < 1 or not 1 <= combo.min_party <= combo.capacity:
            raise FloorPlanError(f"combo {combo.id}: need 1 <= min_party <= capacity")
        built_combos.append(combo)
    largest = max(seats.values())
    threshold = largest + 1 if large_from is None else large_from
    if threshold < 2:
        raise FloorPlanError("large_from must be at least 2")
    if max_party < 1:
        raise FloorPlanError("max_party must be at least 1")
    if isinstance(large_turn_minutes, bool) or large_turn_minutes < 1:
        raise FloorPlanError("large_turn_minutes must be a positive integer")
    classes = sorted(set(seats.values()))
    dwell = dict(dwell_minutes) if dwell_minutes is not None else {}
    for cls in classes:
        if cls not in dwell:
            dwell[cls] = config.DWELL_MINUTES.get(cls, _default_dwell(cls))
    return FloorPlan(
        tables=tuple(built_tables),
        combos=tuple(built_combos),
        large_from=threshold,
        max_party=max_party,
        dwell_minutes=dwell,
        quote_cap=quote_cap,
        large_quote_minutes=large_quote_minutes,
        large_turn_minutes=large_turn_minutes,
        protect_reservations=protect_reservations,
    )


def _default_dwell(seats: int) -> int:
    """Dwell minutes for a table size the seed does not list: the nearest listed class."""
    listed = sorted(config.DWELL_MINUTES)
    nearest = min(listed, key=lambda cls: (abs(cls - seats), -cls))
    return config.DWELL_MINUTES[nearest]


MARLOWES = build_floor(config.TABLES, config.COMBOS, dwell_minutes=config.DWELL_MINUTES)
