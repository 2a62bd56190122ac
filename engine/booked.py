"""What a service day's log leaves booked, read off the stored results: no engine replay.

Availability only needs the reservations that still hold tables. A reservation's status
changes in these ways only (seed Part 2, PRODUCT.md 1): a `cancel`, `check_in` or `seat`
that succeeded ends it; an `arrive` that succeeded marks it arrived, and an arrived one
never becomes a no-show; any other still-booked one becomes a no-show at the first
operation of valid shape with `ts >= at + 15`. Every entry stores the engine's answer, so a
fold over (operation, result, meta) gives the same set as replaying the whole host stand,
and a store can keep each entry's `change` beside it and fold plain columns
(SQLiteStore.booked). The feed export reads thousands of days; replaying each was most of
its cost.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from engine import config
from engine.stand import ARITY, is_int

# A success of any of these ends a still-booked reservation (`seat` of a walk-in names no
# reservation, so ending it ends nothing: ids share one namespace).
ENDS_RESERVATION = ("cancel", "check_in", "seat")
MAX_STORED_SIZE = 2**31 - 1  # a party size in an entry's meta beyond this is not a size


class Booking(NamedTuple):
    """A reservation booked and not ended, as the fold keeps it."""

    unit: str
    at: int
    size: int | None  # the party size the service stored in the reserve's meta, if any
    arrived: bool


@dataclass
class BookedDay:
    """A day's log, folded: the last `ts` of an operation of valid shape (expiry runs at
    every such operation) and the reservations booked and not ended, in booking order."""

    last_ts: int | None = None
    reservations: dict[str, Booking] = field(default_factory=dict)

    def take(
        self,
        ts: int | None,
        starts: str | None,
        ends: str | None,
        unit: str | None = None,
        at: int | None = None,
        size: int | None = None,
        arrives: str | None = None,
    ) -> None:
        """Fold in one entry's `change`."""
        if ts is not None and (self.last_ts is None or ts > self.last_ts):
            self.last_ts = ts
        _fold_in(self.reservations, starts, ends, unit, at, size, arrives)

    def bookings(self, ts: int) -> list[Booking]:
        """The reservations still holding or blocking tables at minute `ts` (a later `ts`
        than the log's last one expires the no-shows due by then; arrived ones never are)."""
        # `by_id`'s rule, without its dictionary: an export asks this of thousands of days.
        due = (ts if self.last_ts is None else max(ts, self.last_ts)) - config.HOLD_AFTER_MINUTES
        return [b for b in self.reservations.values() if b.arrived or b.at > due]

    def by_id(self, ts: int) -> dict[str, Booking]:
        """`bookings(ts)` by reservation id."""
        now = ts if self.last_ts is None else max(ts, self.last_ts)
        return {
            rid: b
            for rid, b in self.reservations.items()
            if b.arrived or b.at + config.HOLD_AFTER_MINUTES > now
        }

    def still_booked(self, ts: int) -> list[tuple[str, int]]:
        """(unit, at) of `bookings(ts)`."""
        return [(b.unit, b.at) for b in self.bookings(ts)]


_new = tuple.__new__  # a NamedTuple's own __new__ is Python code: slow once per entry


def _fold_in(
    held: dict[str, Booking],
    starts: str | None,
    ends: str | None,
    unit: str | None,
    at: int | None,
    size: int | None,
    arrives: str | None,
) -> None:
    """One entry's change to the reservations booked and not ended: the fold's rule."""
    if starts is not None and unit is not None and at is not None:
        held[starts] = _new(Booking, (unit, at, size, False))
    elif ends is not None:
        held.pop(ends, None)
    elif arrives is not None:
        booking = held.get(arrives)
        if booking is not None:
            held[arrives] = booking._replace(arrived=True)


K = TypeVar("K", bound=Hashable)


def fold_days(
    last_ts: Iterable[tuple[K, int | None]],
    changes: Iterable[
        tuple[K, str | None, str | None, str | None, int | None, int | None, str | None]
    ],
) -> dict[K, BookedDay]:
    """A store's fold of several days: each day's last valid ts, then the entries that
    start, end or arrive a reservation, in log order, as (day, starts, ends, unit, at,
    size, arrives). The same as `BookedDay.take` of each entry, without a method call and
    an argument list per entry (the export folds thousands of days)."""
    days = {day: BookedDay(last_ts=ts) for day, ts in last_ts}
    held = {day: booked.reservations for day, booked in days.items()}
    for day, starts, ends, unit, at, size, arrives in changes:
        if starts is not None and unit is not None and at is not None:
            # _fold_in's first case, written out: most entries of a log are reserves
            held[day][starts] = _new(Booking, (unit, at, size, False))
        else:
            _fold_in(held[day], starts, ends, unit, at, size, arrives)
    return days


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


# What one entry means to the fold, in this order (a store keeps one column each):
# (valid-shape ts, id a reserve starts, id a cancel/check_in/seat ends, the reserve's unit,
#  its at, its party size from the entry's meta, id an arrive marks arrived).
Change = tuple[int | None, str | None, str | None, str | None, int | None, int | None, str | None]
NO_CHANGE: Change = (None, None, None, None, None, None, None)


def party_size(meta: Mapping[str, Any] | None) -> int | None:
    """The party size the service stored in an entry's meta, or None."""
    size = (meta or {}).get("party_size")
    if isinstance(size, int) and not isinstance(size, bool) and 1 <= size <= MAX_STORED_SIZE:
        return size
    return None


def change(operation: Any, result: Any, meta: Mapping[str, Any] | None = None) -> Change:
    """One entry as the fold sees it. A success implies a valid shape (the engine checks
    the shape before anything else), so only a valid shape is ever read further."""
    ts = valid_shape_ts(operation)
    if ts is None:
        return NO_CHANGE
    name = operation[0]
    if name == "reserve" and result is True:
        return ts, operation[2], None, operation[3], operation[4], party_size(meta), None
    if name in ENDS_RESERVATION and succeeded(result):
        return ts, None, operation[2], None, None, None, None
    if name == "arrive" and result is True:
        return ts, None, None, None, None, None, operation[2]
    return ts, None, None, None, None, None, None


def fold(entries: Iterable[tuple[Any, Any] | tuple[Any, Any, Any]]) -> BookedDay:
    """The reference fold over a log's (operation, result[, meta]) entries, in seq order."""
    day = BookedDay()
    for entry in entries:
        day.take(*change(*entry))
    return day
