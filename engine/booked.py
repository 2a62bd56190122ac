"""What a service day's log leaves booked, read off the stored results: no engine replay.

Availability only needs the reservations that still hold tables. A reservation's status
changes in three ways only (seed Part 2): a `cancel` or `check_in` that succeeded ends it,
and an operation of valid shape at `ts >= at + 15` makes it a no-show. Every entry stores
the engine's answer, so a fold over (operation, result) pairs gives the same set as
replaying the whole host stand, and a store can keep each entry's `change` beside it and
fold plain columns (SQLiteStore.booked).
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

    def take(
        self,
        ts: int | None,
        starts: str | None,
        ends: str | None,
        unit: str | None = None,
        at: int | None = None,
    ) -> None:
        """Fold in one entry's `change`."""
        if ts is not None and (self.last_ts is None or ts > self.last_ts):
            self.last_ts = ts
        if starts is not None and unit is not None and at is not None:
            self.reservations[starts] = (unit, at)
        elif ends is not None:
            self.reservations.pop(ends, None)

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


# What one entry means to the fold: (valid-shape ts, id it starts, id it ends, unit, at).
# A store can keep these beside the entry and fold plain columns.
Change = tuple[int | None, str | None, str | None, str | None, int | None]
NO_CHANGE: Change = (None, None, None, None, None)


def change(operation: Any, result: Any) -> Change:
    """One entry as the fold sees it. A success implies a valid shape (the engine checks
    the shape before anything else), so only a valid shape is ever read further."""
    ts = valid_shape_ts(operation)
    if ts is None:
        return NO_CHANGE
    name = operation[0]
    if name == "reserve" and result is True:
        return ts, operation[2], None, operation[3], operation[4]
    if name in ENDS_RESERVATION and succeeded(result):
        return ts, None, operation[2], None, None
    return ts, None, None, None, None


def fold(entries: Iterable[tuple[Any, Any]]) -> BookedDay:
    """The reference fold over a log's (operation, result) pairs, in seq order."""
    day = BookedDay()
    for operation, result in entries:
        day.take(*change(operation, result))
    return day
