"""HostStand.refloor: a day goes on under another floor (tables a reload removed)."""

from __future__ import annotations

from engine import HostStand
from engine.floor import build_floor

FULL = build_floor([("T1", 2), ("T2", 2), ("T3", 4)])
WITHOUT_T2 = build_floor([("T1", 2), ("T3", 4)])


def test_a_free_table_gone_from_the_floor_is_never_used_again() -> None:
    stand = HostStand(FULL)
    assert stand.apply(["walk_in", 0, "A", 2]) == "seated T1"
    stand.refloor(WITHOUT_T2)
    assert "T2" not in stand.occupant
    assert stand.apply(["walk_in", 1, "B", 2]) == "seated T3"
    assert stand.apply(["walk_in", 2, "C", 2]) == "queued 1"
    assert stand.apply(["seat", 3, "C", "T2"]).code == "unknown table"


def test_a_party_at_a_table_gone_keeps_it_until_it_is_freed() -> None:
    stand = HostStand(FULL)
    stand.apply(["walk_in", 0, "A", 2])
    stand.apply(["walk_in", 0, "B", 2])
    assert stand.occupant["T2"] == "B"
    stand.refloor(WITHOUT_T2)
    assert stand.occupant["T2"] == "B"
    assert stand.apply(["free", 1, "T2"]) == []
    assert "T2" not in stand.occupant
    stand.apply(["walk_in", 2, "C", 2])
    assert stand.apply(["walk_in", 2, "D", 2]) == "queued 1"  # T3 taken by C, T2 gone
