"""Service days and their slots: minute 0 of a day is its first opening; minutes are real.

Slots keep their local wall-clock times (a time the clocks skip has no slot, a repeated time
is one slot, its first occurrence) and are strictly increasing. Pure: "now" is a parameter.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from engine.floor import FloorPlan
from feed.venue.restaurant import Restaurant, Service

_MINUTE = timedelta(minutes=1)


@dataclass(frozen=True)
class Slot:
    local: datetime  # aware, in the restaurant's zone: the time a guest is told
    start_sec: int  # Unix seconds UTC, the feed's start_sec
    minute: int  # real minutes since the service day's opening: the operation log's ts
    service: int = 0  # which of the day's services (services_of) the slot is in


def services_of(r: Restaurant, day: date) -> tuple[Service, ...]:
    """The services that run on `day`: none on a closed date, a special day's own, else
    the weekday's."""
    if day in r.closed:
        return ()
    special = r.special_days.get(day)
    return special if special is not None else r.hours[day.weekday()]


def floor_of_day(r: Restaurant, day: date) -> FloorPlan:
    """The floor the day's host stand runs on: the restaurant's, with the turns of the
    day's services where they have their own (a special day's slower dinner). The engine
    has one turn per class for the whole day, so with several services the longest of
    their turns is taken: the waitlist's protection and quotes then never count on a
    faster turn than the service's (at a lunch faster than dinner they are cautious)."""
    services = services_of(r, day)
    if not any(s.turns for s in services):
        return r.floor
    known = r.memo.setdefault("floor_of_day", {})
    key = tuple(s.turns for s in services)
    found = known.get(key)
    if found is None:
        floor = r.floor
        turns = [r.service_turns(s) for s in services]
        large = floor.large_from
        found = known[key] = dataclasses.replace(
            floor,
            dwell_minutes={
                c: max(t.get(c, minutes) for t in turns)
                for c, minutes in floor.dwell_minutes.items()
            },
            large_turn_minutes=max(t[large] for t in turns)
            if large <= r.max_party_size
            else floor.large_turn_minutes,
        )
    return found  # type: ignore[no-any-return]


def service_of(r: Restaurant, day: date, slot: Slot) -> Service | None:
    """The service a slot of `day` is in."""
    services = services_of(r, day)
    return services[slot.service] if slot.service < len(services) else None


def turns_at(r: Restaurant, day: date, minute: int) -> Mapping[int, int]:
    """Party size -> turn minutes for a party sitting down at `minute` of `day`: those of
    the service that minute is in (the restaurant's when no service has its own)."""
    if not r.varied_turns:
        return r.turns
    starts, turns = _service_turns(r, day)
    if not starts:
        return r.turns
    return turns[max(0, bisect_right(starts, minute) - 1)]


def duration_sec(r: Restaurant, day: date, slot: Slot, party_size: int) -> int:
    """A booking's duration_sec: the turn of its party in the service its slot is in."""
    return turns_at(r, day, slot.minute)[party_size] * 60


def _service_turns(r: Restaurant, day: date) -> tuple[list[int], list[Mapping[int, int]]]:
    """The minute each of the day's services opens and its turns, remembered per day."""
    known = r.memo.setdefault("service_turns_of_day", {})
    found = known.get(day)
    if found is None:
        opening = opening_instant(r, day)
        starts: list[int] = []
        turns: list[Mapping[int, int]] = []
        if opening is not None:
            for service in services_of(r, day):
                starts.append(_minutes(_instant(r.tz, _wall(day, service.open_offset)), opening))
                turns.append(r.service_turns(service))
        if len(known) >= _SLOT_DAYS_KEPT:
            known.clear()
        found = known[day] = (starts, turns)
    return found  # type: ignore[no-any-return]


def opening_instant(r: Restaurant, day: date) -> datetime | None:
    """Minute 0 of the service day (UTC), or None when the restaurant is closed that day."""
    known = r.memo.setdefault("opening_instant", {})
    try:
        return known[day]  # type: ignore[no-any-return]
    except KeyError:
        pass
    services = services_of(r, day)
    opening = _instant(r.tz, _wall(day, services[0].open_offset)) if services else None
    if len(known) >= _SLOT_DAYS_KEPT:
        known.clear()
    known[day] = opening
    return opening


def weekday_opening(r: Restaurant, day: date) -> datetime | None:
    """Minute 0 the day would have by its weekday's hours, closures and special days
    aside (None if that weekday has no service): where bookings taken before the day was
    closed sit."""
    services = r.hours[day.weekday()]
    return _instant(r.tz, _wall(day, services[0].open_offset)) if services else None


def log_opening(r: Restaurant, day: date) -> datetime | None:
    """Minute 0 of the day's log: what its bookings' times count from. The day's opening;
    for a date closed since (a reload), its weekday's, where bookings taken before were
    logged (a reload refuses to close or reopen a date whose log counts from any other
    opening). None when neither has one: nothing can have been logged there."""
    return opening_instant(r, day) or weekday_opening(r, day)


def closing_instant(r: Restaurant, day: date) -> datetime | None:
    """When the day's last service closes (UTC; may be the next calendar day), or None."""
    services = services_of(r, day)
    if not services:
        return None
    return _instant(r.tz, _wall(day, services[-1].close_offset))


def day_span(r: Restaurant, day: date) -> tuple[datetime, datetime]:
    """The instants the service day owns (UTC, end exclusive), open or closed: from its
    local midnight to the next day's. A service running past midnight is its day's, so a
    day begins once the day before's last service has closed (just after a last seating
    at that close), and ends where the next one begins: the days tile time."""
    return _day_start(r, day), _day_start(r, day + timedelta(days=1))


def _day_start(r: Restaurant, day: date) -> datetime:
    start = _instant(r.tz, _wall(day, 0))
    before = day - timedelta(days=1)
    closing = closing_instant(r, before)
    if closing is None:
        return start
    told = slots(r, before)
    last = datetime.fromtimestamp(told[-1].start_sec + 1, UTC) if told else closing
    return max(start, closing, last)


def in_service(r: Restaurant, instant: datetime) -> date | None:
    """The service day of the service running at `instant` (open <= instant < close), or
    None between services (after lunch, before dinner) and outside the day."""
    instant = _aware(instant)
    for day in _candidate_days(instant.astimezone(r.tz).date()):
        if service_closing(r, day, instant) is not None:
            return day
    return None


def service_closing(r: Restaurant, day: date, instant: datetime) -> datetime | None:
    """When the service of `day` running at `instant` (open <= instant < close) closes
    (UTC), or None when none of the day's services runs then."""
    instant = _aware(instant)
    for service in services_of(r, day):
        start = _instant(r.tz, _wall(day, service.open_offset))
        end = _instant(r.tz, _wall(day, service.close_offset))
        if start <= instant < end:
            return end
    return None


_SLOTS_AT_KEPT = 10_000  # answers of slot_at_sec kept per restaurant (a horizon has ~2,000 slots)
_SLOT_DAYS_KEPT = 400  # per restaurant: a booking horizon and then some


def slots(r: Restaurant, day: date, *, keep: bool = True) -> list[Slot]:
    """Every slot of the day: each service from open to last seating, every slot_minutes.

    Worked out once per restaurant and day (every booking and lookup asks), bounded;
    `keep=False` for a caller that reads each day once (an export), so memory stays flat."""
    if not keep:
        return list(r.memo.get("slots", {}).get(day) or _slots(r, day))
    memo = r.memo.setdefault("slots", {})
    found: list[Slot] | None = memo.get(day)
    if found is None:
        if len(memo) >= _SLOT_DAYS_KEPT:
            memo.clear()
        found = memo[day] = _slots(r, day)
    return list(found)


def slot_times(r: Restaurant, day: date) -> tuple[list[int], list[int], list[int]]:
    """The start_sec, minute and service of each of `slots(r, day)`, as three lists: what
    an export needs of a day it reads once, without building the Slots (their local times
    are most of their cost, and an export reads thousands of days)."""
    kept: list[Slot] | None = r.memo.get("slots", {}).get(day)
    if kept is None:
        opening = opening_instant(r, day)
        if opening is None:
            return [], [], []
        plain = _plain_first(r, day)
        if plain is not None:
            return _plain_times(r, plain[0], plain[1], opening)
        kept = _wall_clock_slots(r, day, opening)
    return [s.start_sec for s in kept], [s.minute for s in kept], [s.service for s in kept]


def _slots(r: Restaurant, day: date) -> list[Slot]:
    opening = opening_instant(r, day)
    if opening is None:
        return []
    plain = _plain_first(r, day)
    if plain is not None:
        return _plain_slots(r, plain[0], plain[1], opening)
    return _wall_clock_slots(r, day, opening)


def _plain_first(r: Restaurant, day: date) -> tuple[tuple[Service, ...], datetime] | None:
    """The services and first slot (local) of an open day with no clock change inside
    (the usual case: wall minutes are real minutes), else None: the day takes the
    slot-by-slot path. A last seating the clocks skip reads with the offset before the
    jump, like the opening, though the day changes its clocks: it takes that path too."""
    services = services_of(r, day)
    tz = r.tz
    # _wall(...).replace(tzinfo=tz), built for less: an aware time plus a timedelta is wall
    # clock arithmetic. Two aware times with the same tzinfo compare as wall clocks, so
    # `_exists` is a round trip through UTC that comes back equal.
    midnight = datetime(day.year, day.month, day.day, tzinfo=tz)
    first = midnight + timedelta(minutes=services[0].open_offset)
    last = midnight + timedelta(minutes=services[-1].last_seating_offset)
    if (
        first.utcoffset() == last.utcoffset()
        and first.astimezone(UTC).astimezone(tz) == first
        and last.astimezone(UTC).astimezone(tz) == last
    ):
        return services, first
    return None


def _wall_clock_slots(r: Restaurant, day: date, opening: datetime) -> list[Slot]:
    """Slot by slot through the zone: right on any day, needed on a day the clocks change."""
    by_start: dict[int, Slot] = {}
    for index, service in enumerate(services_of(r, day)):
        for offset in range(service.open_offset, service.last_seating_offset + 1, r.slot_minutes):
            wall = _wall(day, offset)
            if not _exists(r.tz, wall):
                continue  # the clocks skip it: nobody can be told to come at that time
            local = wall.replace(tzinfo=r.tz, fold=0)  # repeated hour: its first occurrence
            start = local.astimezone(UTC)
            by_start.setdefault(
                int(start.timestamp()),
                Slot(local, int(start.timestamp()), _minutes(start, opening), index),
            )
    return [by_start[sec] for sec in sorted(by_start)]


def _plain_slots(
    r: Restaurant, services: tuple[Service, ...], first: datetime, opening: datetime
) -> list[Slot]:
    starts, minutes, indexes = _plain_times(r, services, first, opening)
    tz = r.tz
    return [
        Slot(datetime.fromtimestamp(start, tz), start, minute, index)
        for start, minute, index in zip(starts, minutes, indexes, strict=True)
    ]


def _plain_times(
    r: Restaurant, services: tuple[Service, ...], first: datetime, opening: datetime
) -> tuple[list[int], list[int], list[int]]:
    """`_plain_slots`' start_sec, minute and service, as three lists: the services' slots
    laid out once (`_plain_layout`), moved to the day's first slot."""
    base_sec = int(first.timestamp())
    offsets, minutes, indexes = _plain_layout(r, services)
    starts = [base_sec + offset for offset in offsets]
    opening_sec = int(opening.timestamp())
    if base_sec != opening_sec:  # (on a plain day the first slot is the opening)
        return starts, [(start - opening_sec) // 60 for start in starts], list(indexes)
    return starts, list(minutes), list(indexes)


def _plain_layout(
    r: Restaurant, services: tuple[Service, ...]
) -> tuple[list[int], list[int], list[int]]:
    """The slots of `services` on a day without a clock change, from the first one: each
    one's seconds and minutes after it, and its service (a service's slots are a range of
    seconds: no Python step per slot). The same every such day: worked out once per set of
    services, kept by the restaurant (a day's services are the restaurant's own tuples)."""
    known = r.memo.setdefault("plain_layout", {})
    found = known.get(id(services))
    if found is not None and found[0] is services:
        return found[1]  # type: ignore[no-any-return]
    base_offset = services[0].open_offset
    step = r.slot_minutes * 60
    starts: list[int] = []
    indexes: list[int] = []
    for index, service in enumerate(services):
        run = range(
            (service.open_offset - base_offset) * 60,
            (service.last_seating_offset - base_offset) * 60 + 1,
            step,
        )
        if starts and run and run[0] <= starts[-1]:
            # services that touch share their boundary slot: what the last one has is its
            run = run[(starts[-1] - run[0]) // step + 1 :]
        starts += run
        indexes += [index] * len(run)
    layout = (starts, [start // 60 for start in starts], indexes)
    if len(known) >= _SLOT_DAYS_KEPT:
        known.clear()
    known[id(services)] = (services, layout)
    return layout


def minute_of(r: Restaurant, day: date, instant: datetime) -> int:
    """Whole real minutes from the day's opening to `instant`, floored (negative before it)."""
    opening = opening_instant(r, day)
    if opening is None:
        raise ValueError(f"{r.merchant_id} is closed on {day.isoformat()}")
    return _minutes(_aware(instant), opening)


def minute_of_opening(instant: datetime, opening: datetime) -> int:
    """Whole real minutes from `opening` to `instant`, floored (negative before it)."""
    return _minutes(_aware(instant), opening)


def service_day_of(r: Restaurant, instant: datetime) -> date | None:
    """The service day whose opening..last close holds `instant` (a dinner that closes after
    midnight owns the early hours), or None between service days."""
    instant = _aware(instant)
    today = instant.astimezone(r.tz).date()
    for day in (today - timedelta(days=1), today):
        opening, closing = opening_instant(r, day), closing_instant(r, day)
        if opening is not None and closing is not None and opening <= instant < closing:
            return day
    return None


def slot_at(r: Restaurant, when: datetime) -> tuple[date, Slot] | None:
    """The published slot starting exactly at `when` (naive: local wall clock; aware: that
    instant), with its service day; None when no slot starts then."""
    if when.tzinfo is None:
        days = _candidate_days(when.date())
        for day in days:
            for s in slots(r, day):
                if s.local.replace(tzinfo=None) == when:
                    return day, s
        return None
    instant = when.astimezone(UTC)
    if instant.microsecond or instant.second:
        return None  # slots start on whole minutes
    start_sec = int(instant.timestamp())
    for day in _candidate_days(instant.astimezone(r.tz).date()):
        index = r.memo.setdefault("slot_index", {})
        by_start = index.get(day)
        if by_start is None:
            if len(index) >= _SLOT_DAYS_KEPT:
                index.clear()
            by_start = index[day] = {s.start_sec: s for s in slots(r, day)}
        found = by_start.get(start_sec)
        if found is not None:
            return day, found
    return None


def why_not_a_slot(r: Restaurant, when: datetime) -> str:
    """Why no slot starts at `when` (naive: local wall clock; aware: that instant), in words
    the host or partner asking can act on: a wall time the clocks skip, or the second of a
    repeated hour (slots are at its first); closed that day; outside the day's booking
    times (named: each service's first to last slot); or between two slots (named). Times
    are the restaurant's wall clock; asked with an instant, the reason names the zone."""
    if when.tzinfo is not None:
        local = when.astimezone(r.tz)
        wall = local.replace(tzinfo=None)
        if local.fold and _repeated(r.tz, wall) and slot_at(r, wall) is not None:
            first = wall.replace(tzinfo=r.tz, fold=0)
            return (
                f"{wall:%H:%M} comes twice on {wall.date().isoformat()} in {r.tz.key}:"
                f" clocks go back; the slot is the first {wall:%H:%M} ({first.tzname()},"
                f" {first.astimezone(UTC):%H:%M} UTC), not the second ({local.tzname()})"
            )
        return f"{_why_not(r, wall)} ({r.tz.key})"
    if not _exists(r.tz, when):
        return (
            f"{when:%H:%M} does not exist on {when.date().isoformat()} in {r.tz.key}:"
            f" clocks go forward; {_why_not(r, when)}"
        )
    return _why_not(r, when)


def _repeated(tz: ZoneInfo, wall: datetime) -> bool:
    """Does the clock read `wall` twice (the hour the clocks go back)?"""
    return (
        wall.replace(tzinfo=tz, fold=0).utcoffset() != wall.replace(tzinfo=tz, fold=1).utcoffset()
    )


def _why_not(r: Restaurant, local: datetime) -> str:
    day = local.date()
    # The slots told on that calendar date (a dinner past midnight is the day before's),
    # each with its service: (service day, index).
    told = [
        ((d, s.service), s)
        for d in _candidate_days(day)
        for s in slots(r, d)
        if s.local.date() == day
    ]
    if not told:
        return f"closed on {day.strftime('%A')} {day.isoformat()}"
    after = bisect_right([s.local.replace(tzinfo=None) for _, s in told], local)
    if 0 < after < len(told):
        (service, before), (next_service, next_one) = told[after - 1], told[after]
        if service == next_service and next_one.start_sec - before.start_sec <= r.slot_minutes * 60:
            return (
                f"slots are every {r.slot_minutes} minutes: the nearest are"
                f" {_hhmm(before)} and {_hhmm(next_one)}"
            )
    runs: dict[tuple[date, int], list[Slot]] = {}
    for service, s in told:
        runs.setdefault(service, []).append(s)
    ranges = " and ".join(f"{_hhmm(run[0])}-{_hhmm(run[-1])}" for run in runs.values())
    return f"that day's slots run {ranges}"


def _hhmm(s: Slot) -> str:
    return s.local.strftime("%H:%M")


def slot_at_sec(r: Restaurant, start_sec: int) -> tuple[date, Slot] | None:
    """`slot_at` for a Unix second, remembered: partners ask for the same slots all day."""
    known = r.memo.setdefault("slot_at_sec", {})
    try:
        return known[start_sec]  # type: ignore[no-any-return]
    except KeyError:
        pass
    if len(known) >= _SLOTS_AT_KEPT:
        known.clear()
    found = known[start_sec] = slot_at(r, datetime.fromtimestamp(start_sec, UTC))
    return found


def next_opening(r: Restaurant, instant: datetime, days: int = 366) -> datetime | None:
    """The start of the next service after `instant` (UTC), within `days` days, or None."""
    instant = _aware(instant)
    first = instant.astimezone(r.tz).date() - timedelta(days=1)
    for i in range(days + 1):
        day = first + timedelta(days=i)
        for service in services_of(r, day):
            start = _instant(r.tz, _wall(day, service.open_offset))
            if start > instant:
                return start
    return None


def within_horizon(r: Restaurant, day: date, now: datetime) -> bool:
    """Is `day` no more than `horizon_days` ahead (the days the feed publishes)? The local
    date of `now` is the first of them; a service day still running after midnight counts."""
    return day <= last_bookable_day(r, now)


def last_bookable_day(r: Restaurant, now: datetime) -> date:
    """The last day within `horizon_days` of `now` (its local date is the first)."""
    return _aware(now).astimezone(r.tz).date() + timedelta(days=r.horizon_days - 1)


def days_ahead(r: Restaurant, now: datetime, days: int) -> list[date]:
    """Open service days from the local date of `now`, for `days` days. A service day that
    started yesterday and is still running at `now` (after midnight) comes first."""
    now = _aware(now)
    first = now.astimezone(r.tz).date()
    running = service_day_of(r, now)
    out = [running] if running is not None and running < first else []
    for i in range(days):
        day = first + timedelta(days=i)
        if services_of(r, day):
            out.append(day)
    return out


# ---------------------------------------------------------------- wall clock and instants


def _wall(day: date, offset_minutes: int) -> datetime:
    """Naive local wall-clock time `offset_minutes` after the day's midnight (on the clock)."""
    return datetime.combine(day, time()) + timedelta(minutes=offset_minutes)


def _exists(tz: ZoneInfo, wall: datetime) -> bool:
    back = wall.replace(tzinfo=tz).astimezone(UTC).astimezone(tz).replace(tzinfo=None)
    return back == wall


def _instant(tz: ZoneInfo, wall: datetime) -> datetime:
    """The UTC instant of a wall-clock time: a repeated time is its first occurrence; a time
    the clocks skip is the moment they jump past it (the first instant the clock reads later)."""
    if _exists(tz, wall):
        return wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    # In a gap, fold=1 reads the time with the offset after the jump (an instant before it)
    # and fold=0 with the one before (an instant after it); the jump lies between.
    lo = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    hi = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    before = lo.astimezone(tz).utcoffset()
    while hi - lo > _MINUTE:  # zone offsets change on whole minutes
        mid = lo + (hi - lo) // 2
        mid = mid.replace(second=0, microsecond=0)
        if mid.astimezone(tz).utcoffset() == before:
            lo = mid
        else:
            hi = mid
    return hi


def _minutes(instant: datetime, opening: datetime) -> int:
    return (instant - opening) // _MINUTE


def _aware(instant: datetime) -> datetime:
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"{instant.isoformat()} has no time zone: pass an aware datetime")
    return instant


def _candidate_days(local_date: date) -> tuple[date, date]:
    # A wall-clock time after midnight may belong to the previous day's late service.
    return local_date - timedelta(days=1), local_date
