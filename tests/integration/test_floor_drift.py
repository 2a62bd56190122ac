"""`floors.floor_drift`: how a server's floor plan differs from the floor in force on the
store (what /healthz says of a server running an out-of-date file)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

import pytest

from engine.floor import FloorPlan, Table
from feed.service.floors import (
    BY_RELOAD,
    FLOOR_SCOPE,
    RETIRED_SCOPE,
    Retired,
    floor_drift,
    floor_history,
    floor_records,
    kept_floor,
    note_floor,
    replaced_floor,
    unit_ids,
)
from feed.venue.restaurant import load_restaurant
from store import open_store
from store.log import JSON, LogStore, StoreUnavailable

MARLOWES = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"
MID = "marlowes-kitchen"


def test_the_drift_names_tables_kept_lacking_redefined_and_a_new_order(any_db: str) -> None:
    floor = load_restaurant(MARLOWES).floor
    store = open_store(any_db)
    try:
        assert floor_drift(store, MID, floor) is None  # no floor kept yet: nothing to say
        note_floor(store, MID, floor, 1000.0)
        assert floor_drift(store, MID, floor) is None
        assert floor_drift(store, "marlowes", floor) is None  # another merchant's prefix

        t3 = floor.tables[2]
        bigger = dataclasses.replace(floor, tables=(
            *floor.tables[:2], dataclasses.replace(t3, seats=8), *floor.tables[3:],
            Table("T7", 2),
        ))  # fmt: skip
        said = floor_drift(store, MID, bigger)
        assert said == "it has T7, the floor in force does not; T3 is defined otherwise", said

        no_t2 = dataclasses.replace(floor, tables=(floor.tables[0], *floor.tables[2:]))
        note_floor(store, MID, no_t2, 2000.0)  # another server starts on a file without T2
        assert floor_drift(store, MID, floor) == "it has T2, the floor in force does not"
        assert floor_drift(store, MID, no_t2) is None

        # T1 (4) and T3 (6) swapped: the same ties (fewest seats, then floor order).
        swapped = dataclasses.replace(no_t2, tables=(no_t2.tables[1], no_t2.tables[0],
                                                     *no_t2.tables[2:]))  # fmt: skip
        assert floor_drift(store, MID, swapped) is None
        t1, t3, t4, t5, t6 = no_t2.tables  # T5 (4) before T1 (4): a party of 3 gets T5
        ties = dataclasses.replace(no_t2, tables=(t5, t3, t4, t1, t6))
        assert floor_drift(store, MID, ties) == "its tables are in another order"
        fewer = dataclasses.replace(no_t2, tables=no_t2.tables[:-1], combos=())
        said = floor_drift(store, MID, fewer)
        assert said is not None and said.startswith("the floor in force has T6, "), said
    finally:
        store.close()


def test_a_floor_replaced_since_is_known_and_one_only_an_undone_reload_kept_is_not(
    any_db: str,
) -> None:
    """The history of floors in force: Marlowe's floor kept at a start, replaced by a
    reload without T2, which a start on a floor with T7 replaced. Marlowe's floor and the
    one without T2 are known older floors (replaced_floor names what replaced each); the
    floor in force is not, nor one never kept, nor one a reload kept and was undone from
    (kept before records said how: the running floor kept again at its very instant)."""
    floor = load_restaurant(MARLOWES).floor
    no_t2 = dataclasses.replace(floor, tables=(floor.tables[0], *floor.tables[2:]))
    with_t7 = dataclasses.replace(no_t2, tables=(*no_t2.tables, Table("T7", 2)))
    store = open_store(any_db)
    try:
        assert replaced_floor(store, MID, floor) is None  # no history yet
        note_floor(store, MID, floor, 1000.0)
        note_floor(store, MID, no_t2, 2000.0, BY_RELOAD)
        note_floor(store, MID, with_t7, 3000.0)
        assert [(f.at, f.how) for f in floor_history(store, MID)] == [
            (1000.0, "start"), (2000.0, "reload"), (3000.0, "start"),
        ]  # fmt: skip
        found = replaced_floor(store, MID, floor)
        assert found is not None and (found[0].at, found[1].at) == (1000.0, 2000.0)
        found = replaced_floor(store, MID, no_t2)
        assert found is not None and (found[0].at, found[1].how) == (2000.0, "start")
        assert replaced_floor(store, MID, with_t7) is None  # the floor in force
        t3 = floor.tables[2]
        never = dataclasses.replace(floor, tables=(*floor.tables[:2], Table("T3", 8),
                                                   *floor.tables[3:]))  # fmt: skip
        assert t3.seats != 8 and replaced_floor(store, MID, never) is None

        # Records from before they said how: an undone reload's floor (T3 removed), then
        # the running one kept again at the same instant.
        other = "old-merchant"
        no_t3 = dataclasses.replace(floor, tables=(*floor.tables[:2], *floor.tables[3:]))
        for at, f in ((1000.0, floor), (2000.0, no_t3), (2000.0, floor)):
            _scope, key, value = floor_records(store, other, f, at)[0][-1]
            assert isinstance(value, dict)
            store.remember("floor", key, {k: v for k, v in value.items() if k != "how"})
        assert [f.undone for f in floor_history(store, other)] == [False, True, False]
        assert replaced_floor(store, other, no_t3) is None
        assert replaced_floor(store, other, floor) is None
    finally:
        store.close()


class CutAtTheFloorRecord:
    """A store that goes away as the floor record is written (the database restarted, the
    process killed there): every write holding it fails, nothing of that write is kept."""

    def __init__(self, store: LogStore) -> None:
        self.store = store
        self.cut = True  # off: every write goes through

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def remember(self, scope: str, key: str, value: JSON) -> JSON:
        if self.cut and scope == FLOOR_SCOPE:
            raise StoreUnavailable("the database went away")
        return self.store.remember(scope, key, value)

    def append_all(self, appends: Any, remember: Any = (), put: Any = (), outbox: Any = ()) -> None:
        if self.cut and any(scope == FLOOR_SCOPE for scope, _key, _value in remember):
            raise StoreUnavailable("the database went away")
        self.store.append_all(appends, remember, put, outbox)


def test_a_start_cut_off_as_it_keeps_its_floor_keeps_nothing_of_it(any_db: str) -> None:
    """A start on a file without T5 wrote T5's removal, then its floor record: cut between
    (the database restarting), T5 stood removed as of that start while the floor in force
    still had it and the other servers seated there, and the next start kept that removal,
    so every replay from then on dropped what was seated at T5 meanwhile. The removal and
    the floor record are kept together or not at all."""
    floor = load_restaurant(MARLOWES).floor
    no_t5 = dataclasses.replace(
        floor,
        tables=tuple(t for t in floor.tables if t.id != "T5"),
        combos=tuple(c for c in floor.combos if "T5" not in c.tables),
    )
    store = open_store(any_db)
    try:
        note_floor(store, MID, floor, 1000.0)
        cut = cast(LogStore, CutAtTheFloorRecord(store))
        with pytest.raises(StoreUnavailable):
            note_floor(cut, MID, no_t5, 2000.0)
        assert store.recall_prefix(RETIRED_SCOPE, f"{MID}/") == []
        assert "T5" in kept_floor(store, MID)[1]
        note_floor(store, MID, no_t5, 3000.0)  # started again, the database back
        retired = [Retired.of_record(v) for _k, v in store.recall_prefix(RETIRED_SCOPE, MID)]
        assert {(r.unit, r.at) for r in retired if r is not None} == {
            ("T5", 3000.0), ("T5+T6", 3000.0),
        }  # fmt: skip
    finally:
        store.close()


class StartedMeanwhile:
    """A store on which another server's start keeps its floor (`other`, at `at`) just
    before this start's first write of its floor: both read the store before either wrote."""

    def __init__(self, store: LogStore, other: FloorPlan, at: float) -> None:
        self.store = store
        self.other: FloorPlan | None = other
        self.at = at

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def append_all(self, appends: Any, remember: Any = (), put: Any = (), outbox: Any = ()) -> None:
        if self.other is not None and any(scope == FLOOR_SCOPE for scope, _k, _v in remember):
            other, self.other = self.other, None
            note_floor(self.store, MID, other, self.at)
        self.store.append_all(appends, remember, put, outbox)


def test_two_starts_at_once_keep_their_floors_one_after_the_other(any_db: str) -> None:
    """Two servers started at the same moment on a store with no floor kept, one on a file
    with T5 and one without: each read no floor and kept its own, so the later one, without
    T5, was in force with no removal of T5, and whatever the first seated at T5 meanwhile
    fell from every replay (a day's units come from the floor in force). Now the second
    start to write finds the first's floor and is kept after it, T5 removed as of then."""
    floor = load_restaurant(MARLOWES).floor
    no_t5 = dataclasses.replace(
        floor,
        tables=tuple(t for t in floor.tables if t.id != "T5"),
        combos=tuple(c for c in floor.combos if "T5" not in c.tables),
    )
    store = open_store(any_db)
    try:
        racing = cast(LogStore, StartedMeanwhile(store, floor, 2000.0))
        note_floor(racing, MID, no_t5, 3000.0)
        assert [
            (f.at, sorted(f.units) == sorted(unit_ids(floor))) for f in floor_history(store, MID)
        ] == [(2000.0, True), (3000.0, False)]
        assert "T5" not in kept_floor(store, MID)[1]
        retired = [Retired.of_record(v) for _k, v in store.recall_prefix(RETIRED_SCOPE, MID)]
        assert {(r.unit, r.at) for r in retired if r is not None} == {
            ("T5", 3000.0), ("T5+T6", 3000.0),
        }  # fmt: skip
    finally:
        store.close()
