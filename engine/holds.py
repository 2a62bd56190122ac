"""Reservations and the holds they put on tables (seed Part 2, PRODUCT.md section 1).

A still-booked reservation for minute `at` holds its table(s) from `at - 15`
(inclusive) to `at + 15` (exclusive); at `at + 15` it becomes a no-show, unless its
guests have arrived: then it holds until it is checked in, seated or cancelled. Only
still-booked reservations hold or conflict; on one table they are at least 30 minutes
apart, and where an arrived one's hold meets the next, the earlier `at` is the holder.
Per-table sorted lists keep every question O(log n) in the reservations of that table.
"""

from __future__ import annotations

import copy
import heapq
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass
from enum import StrEnum

from engine import config


class ReservationStatus(StrEnum):
    BOOKED = "booked"
    SEATED = "seated"  # checked in
    NO_SHOW = "no_show"
    CANCELLED = "cancelled"


@dataclass
class Reservation:
    id: str
    unit: str  # the table id or combo id as booked ("T3", "T5+T6")
    tables: tuple[str, ...]
    at: int
    booked_ts: int
    status: ReservationStatus = ReservationStatus.BOOKED
    status_ts: int | None = None  # minute of the last status change
    arrived: bool = False  # its guests are at the door: it is never a no-show
    arrived_ts: int | None = None  # the minute they were first marked at the door

    @property
    def still_booked(self) -> bool:
        return self.status is ReservationStatus.BOOKED

    def no_show_by(self, ts: int) -> bool:
        """Still booked, its guests not here and its hold over at `ts`: a no-show by then,
        whether or not an operation has said so yet (`ReservationBook.expire`)."""
        return self.still_booked and not self.arrived and ts >= self.at + config.HOLD_AFTER_MINUTES

    def holds_at(self, ts: int) -> bool:
        return (
            self.still_booked
            and self.at - config.HOLD_BEFORE_MINUTES <= ts
            and (self.arrived or ts < self.at + config.HOLD_AFTER_MINUTES)
        )


class ReservationBook:
    """All reservations of one service day, indexed for holds, conflicts and expiry."""

    def __init__(self) -> None:
        self.by_id: dict[str, Reservation] = {}
        self._booked_ats: dict[str, list[int]] = {}  # table -> sorted `at` of still-booked
        self._booked_at_owner: dict[tuple[str, int], str] = {}  # (table, at) -> reservation id
        self._expiry: list[tuple[int, int, str]] = []  # (at + 15, seq, id), lazily cleaned
        self._seq = 0

    def __deepcopy__(self, memo: dict[int, object]) -> ReservationBook:
        """An independent copy, index for index (a Reservation holds only immutable values,
        so a shallow copy of each is a deep one); what it does not know, it deep-copies."""
        new = ReservationBook.__new__(ReservationBook)
        memo[id(self)] = new
        for name, value in vars(self).items():
            if name == "by_id":
                value = {k: copy.copy(r) for k, r in value.items()}
            elif name == "_booked_ats":
                value = {t: list(ats) for t, ats in value.items()}
            elif name == "_booked_at_owner":
                value = dict(value)
            elif name == "_expiry":
                value = list(value)
            elif name != "_seq":
                value = copy.deepcopy(value, memo)
            setattr(new, name, value)
        return new

    def get(self, reservation_id: str) -> Reservation | None:
        return self.by_id.get(reservation_id)

    def conflicts(self, tables: tuple[str, ...], at: int) -> bool:
        """Is any table already booked by a still-booked reservation less than 30 minutes away?"""
        gap = config.CONFLICT_MINUTES - 1
        for table in tables:
            ats = self._booked_ats.get(table)
            if ats:
                i = bisect_left(ats, at - gap)
                if i < len(ats) and ats[i] <= at + gap:
                    return True
        return False

    def add(self, reservation: Reservation) -> None:
        self.by_id[reservation.id] = reservation
        for table in reservation.tables:
            insort(self._booked_ats.setdefault(table, []), reservation.at)
            self._booked_at_owner[(table, reservation.at)] = reservation.id
        self._seq += 1
        heapq.heappush(
            self._expiry, (reservation.at + config.HOLD_AFTER_MINUTES, self._seq, reservation.id)
        )

    def set_status(self, reservation: Reservation, status: ReservationStatus, ts: int) -> None:
        """Move a still-booked reservation to another status; its hold and conflicts end."""
        if reservation.still_booked:
            for table in reservation.tables:
                ats = self._booked_ats[table]
                del ats[bisect_left(ats, reservation.at)]
                del self._booked_at_owner[(table, reservation.at)]
        reservation.status = status
        reservation.status_ts = ts

    def arrive(self, reservation: Reservation, ts: int | None = None) -> None:
        """The guests of a still-booked reservation are here: its hold lasts until it ends.
        `ts`: the minute they came (a second arrive keeps the first)."""
        reservation.arrived = True
        if reservation.arrived_ts is None:
            reservation.arrived_ts = ts

    def expire(self, ts: int) -> list[Reservation]:
        """Turn every still-booked reservation with `ts >= at + 15` whose guests have not
        arrived into a no-show."""
        expired: list[Reservation] = []
        while self._expiry and self._expiry[0][0] <= ts:
            _, _, rid = heapq.heappop(self._expiry)
            reservation = self.by_id[rid]
            if reservation.still_booked and not reservation.arrived:
                self.set_status(reservation, ReservationStatus.NO_SHOW, ts)
                expired.append(reservation)
        return expired

    def holder(self, table: str, ts: int) -> str | None:
        """Id of the still-booked reservation holding `table` at minute `ts`, if any (the
        earliest `at` where an arrived reservation's hold meets a later one)."""
        ats = self._booked_ats.get(table)
        if not ats:
            return None
        # Held when at - 15 <= ts, and ts < at + 15 or the guests have arrived. Once expiry
        # has run for `ts`, every still-booked `at` before ts - 15 is an arrived one, so the
        # loop stops at the first `at` it looks at; before that it skips the ones due.
        last = bisect_right(ats, ts + config.HOLD_BEFORE_MINUTES)
        for i in range(last):
            at = ats[i]
            owner = self._booked_at_owner[(table, at)]
            if ts < at + config.HOLD_AFTER_MINUTES or self.by_id[owner].arrived:
                return owner
        return None

    def next_at(self, table: str) -> int | None:
        """The earliest `at` of a still-booked reservation on `table` (arrived ones too)."""
        ats = self._booked_ats.get(table)
        return ats[0] if ats else None

    def booked(self) -> list[Reservation]:
        """Still-booked reservations, in booking order."""
        return [r for r in self.by_id.values() if r.still_booked]
