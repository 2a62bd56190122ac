"""What a service day's log leaves booked, read off the stored results: no engine replay.

Availability only needs the reservations that still hold tables. A reservation's status
changes in three ways only (seed Part 2): a `cancel` or `check_in` that succeeded ends it,
and an operation of valid shape at `ts >= at + 15` makes it a no-show. Every entry stores
the engine's answer, so a fold over (operation, result) pairs gives the same set as
replaying the whole host stand, and a store can run the fold in its own query language.
The feed export reads thousands of days; replaying each one was most of its cost.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from engine import config
from engine.stand import ARITY, is_int

ENDS_RESERVATION = ("cancel", "check_in")  # a success of either ends a still-booked one


@dataclass
class BookedDay:
    """A day's log, folded: the last `ts` of an operation of valid shape (expiry runs at
    every such operation) and the reservations booked and not ended, in booking order."""

    last_ts: int | None = None
    reservations: dict[str, tuple[str, int]] = field(default_factory=dict)  # id -> (unit, at)

    def still_booked(self, ts: int) -> list[tuple[str, int]]:
        """(unit, at) of the reservations still holding or blocking tables at minute `ts`
        (a later `ts` than the log's last one expires the no-shows due by then)."""
        now = ts if self.last_ts is None else max(ts, self.last_ts)
        return [
            (unit, at)
            for unit, at in self.reservations.values()
            if at + config.HOLD_AFTER_MINUTES > now
        ]


def succeeded(result: Any) -> bool:
    """Rejections are stored as "error: <code>"; every other result is a success."""
    return not (isinstance(result, str) and result.startswith("error:"))


def valid_shape_ts(operation: Any) -> int | None:
    """The `ts` of an operation whose shape the engine accepts (name, arity, integer ts),
    else None. Whether ts went backwards does not matter here: only the maximum is used."""
    if not isinstance(operation, list) or not operation:
        return None
    name = operation[0]
    if not isinstance(name, str) or ARITY.get(name) != len(operation):
        return None
    ts = operation[1]
    return ts if is_int(ts) else None


def fold(entries: Iterable[tuple[Any, Any]]) -> BookedDay:
    """The reference fold over a log's (operation, result) pairs, in seq order."""
    day = BookedDay()
    for operation, result in entries:
        ts = valid_shape_ts(operation)
        if ts is None:
            continue
        if day.last_ts is None or ts > day.last_ts:
            day.last_ts = ts
        name = operation[0]
        if name == "reserve" and result is True:
            day.reservations[operation[2]] = (operation[3], operation[4])
        elif name in ENDS_RESERVATION and succeeded(result):
            day.reservations.pop(operation[2], None)
    return day
