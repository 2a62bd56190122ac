"""A copy of a stand (`copy.deepcopy`, field by field: HostStand.__deepcopy__) is what a
board read, a tablet's snapshot and a wait estimate work on: it must go on exactly as the
stand it was copied from would, and nothing done to it may reach the original."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from engine import FloorPlan, HostStand
from tests.unit.test_host_hand_properties import FLOORS, SETTINGS, as_result, host_logs


def state(stand: HostStand) -> dict[str, Any]:
    """Everything a stand holds, as plain values (party and reservation order included)."""
    book = stand.book
    return {
        "floor": id(stand.floor),
        "last_ts": stand.last_ts,
        "parties": [dataclasses.asdict(p) for p in stand.parties.values()],
        "waiting": [(k, dataclasses.asdict(p)) for k, p in stand.waiting.items()],
        "occupant": dict(stand.occupant),
        "free": sorted(stand._free),
        "reservations": [dataclasses.asdict(r) for r in book.by_id.values()],
        "booked_ats": {t: list(a) for t, a in book._booked_ats.items()},
        "owners": dict(book._booked_at_owner),
        "expiry": sorted(book._expiry),
        "seq": book._seq,
        "attributes": sorted(vars(stand)),
    }


@SETTINGS
@given(FLOORS, host_logs(), st.integers(0, 40))
def test_a_copy_goes_on_as_the_stand_would_and_leaves_it_untouched(
    floor: FloorPlan, operations: list[list[Any]], split: int
) -> None:
    before, after = operations[:split], operations[split:]
    stand = HostStand(floor)
    for op in before:
        stand.apply(op)
    replayed = HostStand(floor)  # the same state, built without copying
    for op in before:
        replayed.apply(op)
    held = state(stand)

    copied = copy.deepcopy(stand)
    assert state(copied) == held
    got = [as_result(copied.apply(op)) for op in after]

    assert state(stand) == held  # nothing done to the copy reached the original
    assert got == [as_result(replayed.apply(op)) for op in after]
    assert state(copied) == state(replayed)
    assert [as_result(stand.apply(op)) for op in after] == got


def test_the_copy_shares_only_the_floor() -> None:
    stand = HostStand()
    stand.apply(["reserve", 0, "R1", "T3", 60])
    for i in range(1, 9):  # six tables: the last parties wait
        stand.apply(["walk_in", 0, f"P{i}", 2])
    waiting = next(iter(stand.waiting))
    copied = copy.deepcopy(stand)
    assert copied.floor is stand.floor  # a frozen value, shared by every stand
    for name, value in vars(stand).items():
        if name not in ("floor", "last_ts"):
            assert getattr(copied, name) is not value, name
    assert copied.waiting[waiting] is copied.parties[waiting]  # one party, as in the original
    assert copied.waiting[waiting] is not stand.parties[waiting]
    assert copied.book.by_id["R1"] is not stand.book.by_id["R1"]
    assert copied.apply(["cancel", 1, "R1"]) == []  # nobody seated by the pass it runs
    assert not copied.book.by_id["R1"].still_booked
    assert stand.book.by_id["R1"].still_booked
    assert stand.book.conflicts(("T3",), 60) and not copied.book.conflicts(("T3",), 60)


def test_an_attribute_the_copy_does_not_know_is_deep_copied() -> None:
    stand = HostStand()
    stand.note = {"kept": [1, 2]}  # type: ignore[attr-defined]
    stand.book.note = [[3]]  # type: ignore[attr-defined]
    copied = copy.deepcopy(stand)
    assert copied.note == {"kept": [1, 2]}  # type: ignore[attr-defined]
    assert copied.note["kept"] is not stand.note["kept"]  # type: ignore[attr-defined]
    assert copied.book.note[0] is not stand.book.note[0]  # type: ignore[attr-defined]
