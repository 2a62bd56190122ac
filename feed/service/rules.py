"""Issue #14's booking rules applied to a day: who sees which floor, per-service turns, pacing.

Partners (feed, lookup, replaces, webhooks, v3) see the online floor (no walk-in tables),
parties up to `max_online_party_size`, and spots capped by pacing; the host books the whole
floor up to `max_party_size` and may go beyond pacing only when it says so. Every path gets
its numbers here, so what the feed shows is what a booking finds.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from typing import Any

from engine import HostStand
from engine.booked import BookedDay
from engine.floor import FloorPlan
from engine.holds import ReservationStatus
from feed.floor.availability import Column, Taken, day_opens, day_opens_of_units
from feed.floor.pacing import NO_BOOKINGS, Counts, counts_by_minute, rooms
from feed.venue import calendar
from feed.venue.calendar import Slot
from feed.venue.restaurant import Restaurant

Unit = tuple[str, int, int, int | None]  # (unit, start, end, at) as engine.booked stores them


def floor_for(r: Restaurant, host: bool) -> FloorPlan:
    """The tables a booking may take: all of them for the host, the online ones otherwise."""
    return r.floor if host else r.online_floor


def party_limit(r: Restaurant, host: bool) -> int:
    return r.max_party_size if host else r.online_limit


def online_sizes(r: Restaurant, size: int, limit: int | None = None) -> str:
    """What a partner is told of a party size that is no number of guests (below 1), or one
    above what it may book: the sizes it may send, 1 to the restaurant's online limit (or
    `limit`). Every partner route says the same bound, v3 and webhooks alike: the parser's
    own bound (0 or 1000) named a size no booking takes."""
    top = r.online_limit if limit is None else limit
    return f"must be from 1 to {top} (the party sizes {r.name} takes online), not {size}"


def seats_of(r: Restaurant, unit: str) -> int:
    """A unit's seats (a combo: its capacity): a reservation's covers when its size is unknown."""
    combo = r.floor.combo(unit)
    if combo is not None:
        return combo.capacity
    table = r.floor.table(unit)
    return table.seats if table is not None else 0


def size_or_seats(r: Restaurant, size: Any, unit: str) -> int:
    return size if isinstance(size, int) and size > 0 else seats_of(r, unit)


def stand_counts(
    r: Restaurant, stand: HostStand, meta: Mapping[str, Mapping[str, Any]], ts: int
) -> dict[int, Counts]:
    """(covers, parties) per start minute of the reservations the kitchen cooks for (any
    source): the still-booked ones and the seated (checked-in) ones. A check-in does not
    give its slot's pacing back, as a cancellation or a no-show does: the party is eating."""
    return counts_by_minute(
        [
            (res.at, size_or_seats(r, meta.get(res.id, {}).get("party_size"), res.unit))
            for res in stand.reservations()
            if res.status is ReservationStatus.SEATED
            or (res.still_booked and not res.no_show_by(ts))
        ]
    )


def folded_counts(r: Restaurant, booked: BookedDay, ts: int) -> dict[int, Counts]:
    """`stand_counts` of a day read off the store's fold: a day whose date has not come,
    so nobody is seated yet (a later day's booking cannot be checked in or seated)."""
    return counts_by_minute([(b.at, size_or_seats(r, b.size, b.unit)) for b in booked.bookings(ts)])


def opens(
    r: Restaurant,
    day: date,
    floor: FloorPlan,
    taken: Iterable[Taken] | None,
    units: Iterable[Unit] | None,
    slots: Sequence[Slot],
    sizes: Sequence[int | Column],
    counts: Mapping[int, Counts] | None,
) -> list[list[int]]:
    """spots_open per slot and size: the floor's (each service with its own turns), then
    capped by the slot's service pacing (`counts`: what is booked per start minute). A
    size may be a (size, area units) column (issue #14's seating areas): the area's units
    of `floor`, capped by the same pacing (the caps count the whole restaurant's slot)."""
    minutes = [s.minute for s in slots]
    services = [s.service for s in slots]
    return opens_at(r, day, floor, taken, units, minutes, services, sizes, counts)


def opens_at(
    r: Restaurant,
    day: date,
    floor: FloorPlan,
    taken: Iterable[Taken] | None,
    units: Iterable[Unit] | None,
    minutes: Sequence[int],
    in_service: Sequence[int],
    sizes: Sequence[int | Column],
    counts: Mapping[int, Counts] | None,
) -> list[list[int]]:
    """`opens` for slots given as their minutes and the service each is in (the index in
    `calendar.services_of`), as `calendar.slot_times` gives them: an export's days."""
    taken = list(taken) if taken is not None else None
    units = list(units) if units is not None else None

    def floor_rows(part: Sequence[int], turns: Mapping[int, int]) -> list[list[int]]:
        if taken is not None:
            return day_opens(floor, taken, part, sizes, turns)
        return day_opens_of_units(floor, units or [], part, sizes, turns)

    services = calendar.services_of(r, day)
    if not r.varied_turns or len(services) < 2:
        turns = r.service_turns(services[0]) if services else r.turns
        rows = floor_rows(minutes, turns)
    else:  # slots come in service order: one run per service with that service's turns
        rows = []
        start = 0
        while start < len(minutes):
            index = in_service[start]
            end = start
            while end < len(minutes) and in_service[end] == index:
                end += 1
            rows += floor_rows(minutes[start:end], r.service_turns(services[index]))
            start = end
    if r.paced and counts is not None:
        party_sizes = tuple(c if isinstance(c, int) else c[0] for c in sizes)
        caps = [(s.max_covers, s.max_parties) if s.paced else None for s in services]
        # Slots share floor rows and most have nothing booked yet: cap each (row, service,
        # bookings) once, and keep the shared row itself when the caps do not bite.
        done: dict[tuple[int, int, Counts], list[int]] = {}
        for i, (minute, index) in enumerate(zip(minutes, in_service, strict=True)):
            cap = caps[index] if index < len(caps) else None
            if cap is None:
                continue
            row = rows[i]
            booked = counts.get(minute, NO_BOOKINGS)
            key = (id(row), index, booked)
            found = done.get(key)
            if found is None:
                limits = rooms(cap[0], cap[1], booked, party_sizes)
                if any(map(operator.gt, row, limits)):  # a cap bites (min() per cell is slow)
                    found = [a if a < b else b for a, b in zip(row, limits, strict=True)]
                else:
                    found = row
                done[key] = found
            rows[i] = found
    return rows
