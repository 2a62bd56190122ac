"""Reservations and the holds they put on tables (seed Part 2, PRODUCT.md section 1).

A still-booked reservation for minute `at` holds its table(s) from `at - 15`
(inclusive) to `at + 15` (exclusive); at `at + 15` it becomes a no-show. Only
still-booked reservations hold or conflict, and on one table they are always at
least 30 minutes apart, so at most one holds a table at any minute. Per-table
sorted lists keep every question O(log n) in the reservations of that table.
"""

from __future__ import annotations

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

    @property
    def still_booked(self) -> bool:
        return self.status is ReservationStatus.BOOKED

    def holds_at(self, ts: int) -> bool:
        return (
            self.still_booked
            and self.at - config.HOLD_BEFORE_MINUTES <= ts < self.at + config.HOLD_AFTER_MINUTES
        )


class ReservationBook:
    """All reservations of one service day, indexed for holds, conflicts and expiry."""

    def __init__(self) -> None:
        self.by_id: dict[str, Reservation] = {}
        self._booked_ats: dict[str, list[int]] = {}  # table -> sorted `at` of still-booked
        self._booked_at_owner: dict[tuple[str, int], str] = {}  # (table, at) -> reservation id
        self._expiry: list[tuple[int, int, str]] = []  # (at + 15, seq, id), lazily cleaned
        self._seq = 0

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

    def expire(self, ts: int) -> list[Reservation]:
        """Turn every still-booked reservation with `ts >= at + 15` into a no-show."""
        expired: list[Reservation] = []
        while self._expiry and self._expiry[0][0] <= ts:
            _, _, rid = heapq.heappop(self._expiry)
            reservation = self.by_id[rid]
            if reservation.still_booked:
                self.set_status(reservation, ReservationStatus.NO_SHOW, ts)
                expired.append(reservation)
        return expired

    def holder(self, table: str, ts: int) -> str | None:
        """Id of the still-booked reservation holding `table` at minute `ts`, if any."""
        ats = self._booked_ats.get(table)
        if not ats:
            return None
        # held when at - 15 <= ts < at + 15, i.e. ts - 15 < at <= ts + 15
        i = bisect_right(ats, ts - config.HOLD_AFTER_MINUTES)
        if i < len(ats) and ats[i] <= ts + config.HOLD_BEFORE_MINUTES:
            return self._booked_at_owner[(table, ats[i])]
        return None

    def booked(self) -> list[Reservation]:
        """Still-booked reservations, in booking order."""
        return [r for r in self.by_id.values() if r.still_booked]
