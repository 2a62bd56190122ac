"""Bookings the host must look at: booked under rules that have changed since (a reload).

A booking is never cancelled or dropped because the restaurant's file changed: one that no
longer fits the new rules (its table removed, its time outside the hours, its day closed)
is listed here with why, for the host to call the guest or move it. The check is pure; the
list is kept in memory by the running server, worked out at start from what the log stored
(a file may have changed while the server was down) and again at every reload.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from feed.venue import calendar
from feed.venue.restaurant import Restaurant
from store.log import LogStore

_DAY = 24 * 60


@dataclass(frozen=True)
class Misfit:
    """A still-booked reservation and why it no longer fits its restaurant's rules."""

    merchant_id: str
    day: date
    booking_id: str  # the id we gave out (a moved booking keeps it)
    engine_id: str  # the engine reservation found not to fit (a move books another)
    start: datetime  # the instant it was booked for (kept: a closed day has no opening)
    unit: str
    party_size: int | None
    name: str
    reasons: tuple[str, ...]

    @property
    def attention(self) -> str:
        return "no longer fits: " + "; ".join(self.reasons)

    def row(self, tz: Any) -> dict[str, Any]:
        """As listed to the host and in a reload's answer (local start time)."""
        return {
            "merchant_id": self.merchant_id,
            "day": self.day.isoformat(),
            "reservation_id": self.booking_id,
            "start": self.start.astimezone(tz).isoformat(),
            "unit": self.unit,
            "party_size": self.party_size,
            "name": self.name,
            "attention": self.attention,
        }


def reasons(r: Restaurant, day: date, start: datetime, unit: str, size: int | None) -> list[str]:
    """Why a booking of `unit` at `start` on service day `day` does not fit `r`'s rules (an
    empty list: it fits)."""
    services = calendar.services_of(r, day)
    if not services:
        return [f"{day.isoformat()} is now closed"]
    out: list[str] = []
    floor = r.floor
    seats = {t.id: t.seats for t in floor.tables}
    capacity = {c.id: c.capacity for c in floor.combos}
    missing = [t for t in unit.split("+") if t not in seats]
    if missing:
        out += [f"table {t} removed" for t in missing]
    elif "+" in unit and unit not in capacity:
        out.append(f"tables {unit} are no longer combined")
    else:
        room = capacity.get(unit, seats.get(unit, 0))
        if size is not None and size > room:
            out.append(f"{unit} now seats {room}, the party is {size}")
    if size is not None and size > r.max_party_size:
        out.append(f"a party of {size} is above the new maximum of {r.max_party_size}")
    local = start.astimezone(r.tz)
    offset = (local.date() - day).days * _DAY + local.hour * 60 + local.minute
    if not any(s.open_offset <= offset <= s.last_seating_offset for s in services):
        out.append(f"{local.strftime('%H:%M')} is now outside the hours")
    return out


class Attention:
    """The misfits of each restaurant, as the last reload found them; shared by threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_merchant: dict[str, tuple[Misfit, ...]] = {}

    def replace(self, merchant_id: str, misfits: Iterable[Misfit]) -> None:
        ordered = sorted(misfits, key=lambda m: (m.start, m.booking_id))
        with self._lock:
            self._by_merchant[merchant_id] = tuple(ordered)

    def of(self, merchant_id: str) -> tuple[Misfit, ...]:
        with self._lock:
            return self._by_merchant.get(merchant_id, ())

    def on(self, merchant_id: str, day: date) -> Mapping[str, Misfit]:
        """A day's misfits by booking id."""
        return {m.booking_id: m for m in self.of(merchant_id) if m.day == day}


def marked(rows: Iterable[Mapping[str, Any]], misfits: Iterable[Misfit]) -> list[dict[str, Any]]:
    """Copies of the day's booking rows, each with `attention`: why `misfits` says the
    booking no longer fits the rules, or None (the host API's list, the tablet's floor
    document and the terminal's list say it alike)."""
    why = {m.booking_id: m.attention for m in misfits}
    return [{**row, "attention": why.get(row["reservation_id"])} for row in rows]


def still_standing(
    misfits: Iterable[Misfit], store: LogStore, r: Restaurant, now: datetime
) -> list[Misfit]:
    """The misfits whose engine reservation the log still holds booked at `now` (arrived
    guests included: they are at the door, to be seated somewhere). The list is worked
    out at a reload (or at start); a booking the host or the partner has settled since,
    cancelled, moved (booked again under another engine id, by the new rules), seated,
    or past its hold, has nothing left to sort out: it drops off, whoever settled it and
    on whichever receiver. Read from what the log stored (engine.booked), as at start: a
    booking on a removed table is not in the replay under the running floor."""
    listed = list(misfits)
    if not listed:
        return []
    days = sorted({m.day for m in listed})
    folded = store.booked(r.merchant_id, days[0], days[-1])
    out = []
    for m in listed:
        day = folded.get(m.day)
        opening = calendar.log_opening(r, m.day)
        if day is None or opening is None:
            continue
        ts = math.floor((now - opening).total_seconds() / 60)
        if m.engine_id in day.by_id(ts):
            out.append(m)
    return out
