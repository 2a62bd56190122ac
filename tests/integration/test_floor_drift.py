"""`days.floor_drift`: how a server's floor plan differs from the floor in force on the
store (what /healthz says of a server running an out-of-date file)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine.floor import Table
from feed.service.days import floor_drift, note_floor
from feed.venue.restaurant import load_restaurant
from store import open_store

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
