"""The host stand: waitlist, reservations and large parties, by the seed's rules.

`run(operations)` is the contract; `HostStand` applies one operation at a time.
"""

from engine.errors import Rejected
from engine.floor import MARLOWES, Combo, FloorPlan, FloorPlanError, Table, build_floor
from engine.stand import HostStand, Party, PartyState, Sitting, run

__all__ = [
    "MARLOWES",
    "Combo",
    "FloorPlan",
    "FloorPlanError",
    "HostStand",
    "Party",
    "PartyState",
    "Rejected",
    "Sitting",
    "Table",
    "build_floor",
    "run",
]
