"""A restaurant's floors in force, as the store keeps them: each start or reload keeps the floor
it puts in force after every one before (the last kept is in force) and retires what it removed
with its definition, so a day's replay puts every entry on the floor it was received on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from engine import HostStand
from engine.floor import Combo, FloorPlan, Table
from store.log import DuplicateKey, LogStore, Remember, StoreError, StoreUnavailable

RETIRED_SCOPE = "retired"  # tables and combos a reload removed: "<merchant>/<at>/<unit>" -> unit


@dataclass(frozen=True)
class Retired:
    """A table or combo a reload removed at `at` (Unix seconds, the reload's clock), as the
    floor had it: a day whose log began before then is replayed with it until then, so
    what was booked, seated and freed on it reads as it was (never offered after)."""

    unit: str
    at: float
    table: Table | None
    combo: Combo | None
    dwell: int | None  # its seat class's turn, for a table
    place: int = 0  # its place in the floor's order of tables (combos) it was removed from

    def record(self) -> dict[str, Any]:
        if self.table is not None:
            return {
                "unit": self.unit,
                "at": self.at,
                "seats": self.table.seats,
                "min_party": self.table.min_party,
                "dwell": self.dwell,
                "place": self.place,
            }
        assert self.combo is not None
        return {
            "unit": self.unit,
            "at": self.at,
            "tables": list(self.combo.tables),
            "capacity": self.combo.capacity,
            "min_party": self.combo.min_party,
            "place": self.place,
        }

    @staticmethod
    def of_record(value: Any) -> Retired | None:
        if not isinstance(value, dict) or not isinstance(value.get("unit"), str):
            return None
        unit, at = value["unit"], float(value.get("at", 0))
        place = value.get("place")
        place = place if isinstance(place, int) and not isinstance(place, bool) else 0
        if "tables" in value:
            a, b = value["tables"]
            combo = Combo((str(a), str(b)), int(value["capacity"]), int(value["min_party"]))
            return Retired(unit, at, None, combo, None, place)
        table = Table(unit, int(value["seats"]), value.get("min_party"))
        dwell = value.get("dwell")
        return Retired(unit, at, table, None, dwell if isinstance(dwell, int) else None, place)


def retire_record(merchant_id: str, unit: Retired) -> tuple[str, dict[str, Any]]:
    """The store key and value of a unit a reload removed (`DayBook.retirements`)."""
    return f"{merchant_id}/{unit.at:020.6f}/{unit.unit}", unit.record()


def retired_units(floor: FloorPlan, units: Sequence[str], at: float) -> list[Retired]:
    """`floor`'s definitions of `units` (its tables and combos a reload removes at `at`)."""
    out: list[Retired] = []
    for unit in units:
        table, combo = floor.table(unit), floor.combo(unit)
        if table is not None:
            dwell = floor.dwell_minutes.get(table.seats)
            out.append(Retired(unit, at, table, None, dwell, floor.tables.index(table)))
        elif combo is not None:
            out.append(Retired(unit, at, None, combo, None, floor.combos.index(combo)))
    return out


FLOOR_SCOPE = "floor"  # "<merchant>/<at>" -> the floor a start or reload put in place then
# "<merchant>/<the floor record's key a start or reload followed>" -> the key of the one it
# kept ("<merchant>/" for the first): one writer only can follow a floor (`in_turn`).
FOLLOWS_SCOPE = "floor-follows"

# How a floor record (FLOOR_SCOPE) took force: its "how". The records of a restaurant are
# the history of its floors in force, in key order (kept_at); the last one is in force.
BY_START = "start"  # a start of `serve` on a file whose floor differs from the one in force
BY_RESTORE = "restore"  # a start given --restore-floor: an older floor, back on purpose
BY_RELOAD = "reload"  # a reload (config_reload._retire)
BY_UNDO = "undo"  # the running floor kept again: the reload kept just before it was undone
BY_COMMAND = "command"  # the first command on a store no start kept a floor on yet


def kept_floor(store: LogStore, merchant_id: str) -> tuple[Any, dict[str, dict[str, Any]]]:
    """The floor record `note_floor` kept last, and its units' records by unit id."""
    _key, last, units = floor_in_force(store, merchant_id)
    return last, units


def floor_in_force(
    store: LogStore, merchant_id: str
) -> tuple[str | None, Any, dict[str, dict[str, Any]]]:
    """`kept_floor` with the key of its record (None: no floor was ever kept), which names
    that floor among all those kept (two kept at one instant have two keys)."""
    kept = store.recall_last(FLOOR_SCOPE, f"{merchant_id}/")
    key, last = (kept[0], kept[1]) if kept else (None, None)
    if not isinstance(last, dict) or not isinstance(last.get("units"), list):
        return key, last, {}
    units = {u["unit"]: u for u in last["units"] if isinstance(u, dict) and "unit" in u}
    return key, last, units


class InForce(NamedTuple):
    """The floor in force as one read of the store found it (`DayBook._floor_now`): its
    record's key (None: no floor was ever kept), its units' records by unit id, and when
    it took force (None: not said)."""

    key: str | None
    units: Mapping[str, Mapping[str, Any]]
    at: float | None


def not_in_force(units_in_force: Collection[str], units: Iterable[str]) -> list[str]:
    """Those of `units` a floor in force of `units_in_force` lacks, sorted (`removed_units`
    on a floor already read); [] when no floor was ever kept (a store from before)."""
    return sorted(u for u in set(units) if u not in units_in_force) if units_in_force else []


def unit_ids(floor: FloorPlan) -> list[str]:
    """The ids of `floor`'s tables, then its combos ("T5+T6"), in floor order."""
    return [t.id for t in floor.tables] + [c.id for c in floor.combos]


def _unit_records(floor: FloorPlan, at: float) -> dict[str, dict[str, Any]]:
    """Each table's and combo's record (its definition) as a floor record keeps it."""
    return {u.unit: u.record() for u in retired_units(floor, unit_ids(floor), at)}


def fingerprint(units: Mapping[str, Mapping[str, Any]]) -> str:
    """What makes two floors (their unit records, `kept_floor`) seat every party alike, as
    a short digest: each unit's definition (whenever it was kept, wherever it is listed)
    and the order the rules break ties in. Two floors have one fingerprint exactly when
    `floor_drift` finds nothing between them."""
    defs = sorted((str(name), _definition(u, ("at", "place"))) for name, u in units.items())
    both = {"units": defs, "ties": [unit for _c, _s, unit in _tie_order(units)]}
    text = json.dumps(both, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class KeptFloor:
    """One floor of a restaurant's history of floors in force (a FLOOR_SCOPE record)."""

    key: str
    at: float  # when it took force (Unix seconds, the clock of what kept it)
    how: str | None  # BY_START, BY_RELOAD...; None: kept before records said how
    fingerprint: str
    units: dict[str, dict[str, Any]]
    undone: bool = False  # a reload's floor, the running one kept again right after it


def floor_history(store: LogStore, merchant_id: str) -> list[KeptFloor]:
    """Every floor the restaurant's starts and reloads kept, oldest first; the last is the
    floor in force. A reload undone (refused as it wrote, or its partners' replaces
    refused) kept its floor, then the running one again (BY_UNDO): its floor never took
    force, and is marked `undone`. A record kept before records said how is read undone
    when the next one was kept at its very instant and puts the floor before it back
    (what `_unretire` kept, at the reload's instant)."""
    out: list[KeptFloor] = []
    for key, value in store.recall_prefix(FLOOR_SCOPE, f"{merchant_id}/"):
        if not isinstance(value, dict) or not isinstance(value.get("units"), list):
            continue
        units = {u["unit"]: u for u in value["units"] if isinstance(u, dict) and "unit" in u}
        at = value.get("at")
        how = value.get("how")
        out.append(
            KeptFloor(
                key,
                float(at) if isinstance(at, int | float) and not isinstance(at, bool) else 0.0,
                how if isinstance(how, str) else None,
                fingerprint(units),
                units,
            )
        )
    for i in range(len(out) - 1):
        this, then = out[i], out[i + 1]
        undone = then.how == BY_UNDO or (
            then.how is None
            and i > 0
            and then.at == this.at
            and then.fingerprint == out[i - 1].fingerprint
        )
        if undone:
            out[i] = dataclasses.replace(this, undone=True)
    return out


def replaced_floor(
    store: LogStore, merchant_id: str, floor: FloorPlan
) -> tuple[KeptFloor, KeptFloor] | None:
    """When `floor` (a starting server's) is a floor that was in force on the store and was
    replaced since (seats alike with it: `fingerprint`), and is not the floor in force:
    that floor's last record and the one that replaced it. None for the floor in force,
    one never kept, or one only a reload undone kept (it never took force). A start on
    it is an older copy of the file, most likely (config_reload.stored_floor_replaced)."""
    history = floor_history(store, merchant_id)
    if not history:
        return None
    mine = fingerprint(_unit_records(floor, 0.0))
    if history[-1].fingerprint == mine:
        return None
    for i in range(len(history) - 2, -1, -1):
        found = history[i]
        if found.fingerprint == mine and not found.undone:
            return found, history[i + 1]
    return None


def _same(a: Mapping[str, Any], b: Mapping[str, Any], but: tuple[str, ...] = ("at",)) -> bool:
    """Two unit records define the same unit (whenever each was kept), fields `but` aside."""
    return _definition(a, but) == _definition(b, but)


def _definition(unit: Mapping[str, Any], but: tuple[str, ...]) -> dict[str, Any]:
    """A unit record's fields but `but`, as the rules read them: a table's min_party left
    out of the file (None) is its roominess limit (engine Table.smallest_party), so a
    file writing that limit out (a 6-top's min_party = 4) defines the same table. Read
    otherwise, a start on the file from before such an edit was refused as an older copy
    of the file, a command too, and a server on it told its floor is out of date."""
    out = {k: v for k, v in unit.items() if k not in but}
    seats = out.get("seats")
    if "tables" not in out and out.get("min_party") is None and isinstance(seats, int):
        out["min_party"] = Table("", seats).smallest_party
    return out


def floor_drift(store: LogStore, merchant_id: str, floor: FloorPlan) -> str | None:
    """How `floor` (a server's) differs from the floor in force (the one the last start or
    reload on the store kept), in the host's words ("it has T5, the floor in force does
    not; T3 is defined otherwise"), or None when they are the same or no floor was ever kept. A
    server whose floor differs runs an out-of-date file (another server reloaded or started
    on a newer one): its lookups count tables the floor in force lacks, or miss new ones."""
    _last, kept = kept_floor(store, merchant_id)
    if not kept:
        return None
    mine = _unit_records(floor, 0.0)
    parts = []
    if extra := [u for u in mine if u not in kept]:
        parts.append(f"it has {', '.join(extra)}, the floor in force does not")
    if lacking := [u for u in kept if u not in mine]:
        parts.append(f"the floor in force has {', '.join(lacking)}, it does not")
    both = [u for u in mine if u in kept]
    # A table's place (its order on the floor, which breaks the seating rules' ties) moves
    # with every table removed before it: said only when nothing else differs.
    if changed := [u for u in both if not _same(mine[u], kept[u], ("at", "place"))]:
        verb = "is" if len(changed) == 1 else "are"
        parts.append(f"{', '.join(changed)} {verb} defined otherwise")
    if not parts and _tie_order(mine) != _tie_order(kept):
        parts.append("its tables are in another order")
    return "; ".join(parts) or None


def _tie_order(units: Mapping[str, Mapping[str, Any]]) -> list[tuple[bool, int, str]]:
    """The units (their records) in the order the rules break ties in: the seating pass and
    a booking's choice take the fewest seats (capacity for a combination), then floor
    order. Only that is the floor's: a file listing a 2-top after a 6-top instead of before
    (or moving a table on the tablet's map) seats every party as before, and a command
    run with it was refused, a server running it said out of date."""
    return [
        (combo, size, unit)
        for combo, size, _place, unit in sorted(
            (
                "tables" in u,
                int(u.get("capacity") or 0) if "tables" in u else int(u.get("seats") or 0),
                int(u.get("place") or 0),
                str(name),
            )
            for name, u in units.items()
        )
    ]


def floor_drifts(store: LogStore, floors: Mapping[str, FloorPlan]) -> dict[str, str | None]:
    """`floor_drift` of each restaurant's floor in `floors` (merchant id -> the floor a
    server runs); one the store did not answer for is left out (the store's own checks
    say so)."""
    out: dict[str, str | None] = {}
    for merchant_id, floor in floors.items():
        try:
            out[merchant_id] = floor_drift(store, merchant_id, floor)
        except StoreError:
            continue
    return out


def note_floor(
    store: LogStore,
    merchant_id: str,
    floor: FloorPlan,
    at: float,
    how: str = BY_START,
    clock: Callable[[], float] | None = None,
    check: Callable[[], list[str]] | None = None,
) -> list[str] | FloorRefused:
    """Keep the floor a server or command starts on (or a reload puts in place) at `at`,
    `how` (BY_START...), when it is not the one kept last. The tables and combos of the
    one kept last that `floor` lacks were removed while no server ran (a restart on a file
    without them): retired as of `at` with their definitions, as a reload retires what it
    removes (unless one retired them since), so each day's replay keeps them up to now
    (`Retired`). The units retired so.

    The removals and the floor record are kept in one write: cut between (the database
    restarting, the process killed), a removal stood as of this start with the floor in
    force unchanged and servers seating there, and the next start kept that removal, so
    every replay dropped what was seated there meanwhile. With them goes the record of
    the floor this one follows (`in_turn`).

    Worked out again after another writer's floor, it is kept as of `clock()` then (Unix
    seconds; the process's clock, which a pinned --now holds at `at`), as a reload is:
    kept as of `at`, read before the other floor added T7, it retired T7 as of before T7
    was in force, and what was seated there meanwhile fell from every replay.

    `check()`: the starting server's checks of the store (a party sitting, a booking
    still booked, at a unit its file lacks), made again on that floor, which may have
    added T7: retired unchecked, P seated there meanwhile sat at a table no server has.
    Its problems refuse the start (FloorRefused), nothing kept."""

    def keep(follows: str, attempt: int) -> list[str] | FloorRefused:
        if attempt and check is not None and (problems := check()):
            return FloorRefused(tuple(problems))
        when = at if attempt == 0 or clock is None else max(at, clock())
        records, gone = floor_records(store, merchant_id, floor, when, how=how)
        if records:
            store.append_all(
                [], remember=[*records, *follows_record(merchant_id, follows, records)]
            )
        return gone

    return in_turn(store, merchant_id, keep)


@dataclass(frozen=True)
class FloorRefused:
    """A start's floor not kept: what its checks found on the floor in force (`note_floor`)."""

    problems: tuple[str, ...]


Kept = TypeVar("Kept")


def in_turn(store: LogStore, merchant_id: str, keep: Callable[[str, int], Kept]) -> Kept:
    """`keep(follows, attempt)`: a start or a reload working out its floor on the floor in
    force (whose record's key is `follows`, "" for none) and keeping it, with the record
    that it follows that one (`follows_record`), in the write of the floor record. Two
    writers at one moment that both read the same floor in force (or none) cannot both
    follow it: both were kept, the later one without the removal of what the other had
    or added (a server started or reloaded on a file with T7 beside one without it: what
    the first seated at T7 meanwhile fell from every replay). The second to write is
    refused by the store's key (DuplicateKey), reads the first's floor and is worked out
    again after it (`attempt` 1, 2). What `keep` answers."""
    for attempt in range(3):
        follows = floor_in_force(store, merchant_id)[0] or ""
        try:
            return keep(follows, attempt)
        except DuplicateKey:
            continue
    raise StoreUnavailable("other servers kept the floor plan meanwhile, again and again")


def follows_record(merchant_id: str, follows: str, records: Sequence[Remember]) -> list[Remember]:
    """The record that the floor `records` keep (their floor record last) follows the floor
    record `follows` (`in_turn`), written with them as a new key (DuplicateKey when taken);
    none when they keep no floor."""
    if not records or records[-1][0] != FLOOR_SCOPE:
        return []
    return [(FOLLOWS_SCOPE, f"{merchant_id}/{follows}", records[-1][1])]


def floor_records(
    store: LogStore,
    merchant_id: str,
    floor: FloorPlan,
    at: float,
    retiring: Sequence[str] = (),
    how: str = BY_START,
) -> tuple[list[Remember], list[str]]:
    """What `note_floor` writes (the retirements first, the floor record last; none when
    `floor` is the one kept last) and the units it retires; `retiring`: units the caller
    retires itself in the same write (a reload's), left to it. The floor record says when
    and `how` the floor took force, and its `fingerprint`: the records are the history of
    the floors in force (`floor_history`), by which a start on an older copy of the file
    is told from an edit (`replaced_floor`)."""
    now = _unit_records(floor, at)
    last, before = kept_floor(store, merchant_id)
    if before and before.keys() == now.keys() and all(_same(before[u], now[u]) for u in now):
        return [], []
    since = float(last.get("at", 0)) if isinstance(last, dict) else 0.0
    # Retired after the floor kept last, which has them. One retired at that very instant
    # is not: the floor, kept after it, put the unit back (a reload undone, `_unretire`,
    # keeps the running floor again at the reload's instant), and a later removal is
    # retired as of then, or the day's replay would lose the unit from the undone reload
    # on and drop what was seated or booked there since.
    retired_since = {
        found.unit
        for _key, value in store.recall_prefix(RETIRED_SCOPE, f"{merchant_id}/")
        if (found := Retired.of_record(value)) is not None and found.at > since
    }
    records: list[Remember] = []
    gone: list[str] = []
    for unit, record in before.items():
        if unit in now or unit in retired_since or unit in retiring:
            continue
        found = Retired.of_record({**record, "at": at})
        if found is not None:
            records.append((RETIRED_SCOPE, *retire_record(merchant_id, found)))
            gone.append(unit)
    records.append(floor_record(store, merchant_id, now, at, how))
    return records, gone


def floor_record(
    store: LogStore, merchant_id: str, units: Mapping[str, Mapping[str, Any]], at: float, how: str
) -> Remember:
    """The record keeping the floor of `units` (unit records) in force as of `at`, `how`,
    after every floor kept before (`floor_records`; nothing retired)."""
    kept: dict[str, Any] = {
        "at": at,
        "units": [{**u, "at": at} for u in units.values()],
        "how": how,
        "fingerprint": fingerprint(units),
    }
    # Kept after every floor kept before it, whatever this writer's clock says (key order
    # is the order kept_floor reads): a start on a server whose clock ran behind another's
    # was keyed before that one's floor, which stayed in force, and the next start on the
    # new file was refused as an older copy. Two starts at one instant (clocks pinned with
    # --now) with two floors: the later one is kept after the other, not dropped.
    last = store.recall_last(FLOOR_SCOPE, f"{merchant_id}/")
    key = f"{merchant_id}/{max(at, _kept_at(merchant_id, last[0]) if last else at):020.6f}"
    taken = [k for k, _value in store.recall_prefix(FLOOR_SCOPE, key)]
    at_once = sum(1 for k in taken if k == key or k[len(key)] == "/")
    return (FLOOR_SCOPE, key if not at_once else f"{key}/{at_once:06d}", kept)


def _kept_at(merchant_id: str, key: str) -> float:
    """The instant a floor record's key (`floor_record`) orders it by."""
    try:
        return float(key[len(merchant_id) + 1 :].split("/", 1)[0])
    except ValueError:  # not one of ours: ordered by the writer's clock
        return 0.0


def removed_units(store: LogStore, merchant_id: str, units: Iterable[str]) -> list[str]:
    """Those of `units` the floor in force lacks: the one a start or reload kept last
    (`note_floor`), read from the store now, not from this process's configuration. A
    server still running a file that has them (another server on this store reloaded a
    file without them, or started on one) must not seat or book anybody there: every
    replay, its own after its reload or restart included, takes them off the floor as of
    then, and would drop what it wrote (the party the host was told is seated shown
    waiting, a booking gone). [] when no floor was ever kept (a store from before)."""
    _last, kept = kept_floor(store, merchant_id)  # {} when none was kept
    return not_in_force(kept, units)


def without_units(floor: FloorPlan, units: Collection[str]) -> FloorPlan:
    """`floor` without the tables and combos `units` (and the combos of a table in it)."""
    tables = tuple(t for t in floor.tables if t.id not in units)
    combos = tuple(
        c for c in floor.combos if c.id not in units and not any(t in units for t in c.tables)
    )
    if len(tables) == len(floor.tables) and len(combos) == len(floor.combos):
        return floor
    return dataclasses.replace(floor, tables=tables, combos=combos)


def with_retired(floor: FloorPlan, retired: Sequence[Retired]) -> FloorPlan:
    """`floor` with the retired tables and combos it lacks, each at its place in the floor
    order it had (the order breaks the seating rules' ties: the replay seats as the day
    was served); a combo whose tables are not all there is left out."""
    tables = list(floor.tables)
    dwell = dict(floor.dwell_minutes)
    for r in sorted(retired, key=lambda r: r.place):
        if r.table is not None and all(t.id != r.unit for t in tables):
            tables.insert(r.place, r.table)
            if r.table.seats not in dwell:
                dwell[r.table.seats] = r.dwell or floor.large_turn_minutes
    known = {t.id for t in tables}
    combos = list(floor.combos)
    for r in sorted(retired, key=lambda r: r.place):
        c = r.combo
        if c is not None and set(c.tables) <= known and all(x.id != r.unit for x in combos):
            combos.insert(r.place, c)
    if len(tables) == len(floor.tables) and len(combos) == len(floor.combos):
        return floor
    return dataclasses.replace(floor, tables=tuple(tables), combos=tuple(combos),
                               dwell_minutes=dwell)  # fmt: skip


def refloor_before(
    stand: HostStand, switches: list[tuple[float, FloorPlan]], received_at: float | None
) -> None:
    """Put `stand` on the floor of each switch (instant, floor) an entry received at
    `received_at` comes after, taking them off `switches`; None: after them all (what is
    written from now on is written after every reload read so far). An entry at the very
    instant of a reload came before it (the reload's own re-homing)."""
    while switches and (received_at is None or received_at > switches[0][0]):
        stand.refloor(switches.pop(0)[1])
