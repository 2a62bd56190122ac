"""A restaurant's service days: each day's host stand is the replay of its stored log.

Every change goes through `DayBook.apply`: the operation is applied to the replayed state,
appended at the next seq (durable), and only then answered. When another writer appended
first, the state is rebuilt from the log and the operation is worked out again.
"""

from __future__ import annotations

import copy
import math
import secrets
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import islice
from typing import Any, cast

from engine import HostStand, Rejected
from engine.booked import BookedDay
from engine.config import HOLD_AFTER_MINUTES
from engine.floor import FloorPlan
from engine.holds import Reservation, ReservationStatus
from engine.quotes import quote
from engine.seating import Waiting
from engine.stand import Result
from feed.floor import pacing
from feed.floor.availability import (
    AreaUnits,
    Booking,
    Column,
    Taken,
    choose_unit,
    spots_open,
    spots_total,
)
from feed.service import rules
from feed.service.events import BOOKED, CANCELLED, Events
from feed.service.floors import (
    RETIRED_SCOPE,
    InForce,
    Retired,
    floor_history,
    floor_in_force,
    not_in_force,
    refloor_before,
    removed_units,
    unit_ids,
    with_retired,
    without_units,
)
from feed.service.notify import Notifier
from feed.venue import calendar
from feed.venue.calendar import Slot
from feed.venue.restaurant import Restaurant
from store.log import (
    ConcurrencyConflict,
    LogAppend,
    LogEntry,
    LogStore,
    NewEntry,
    OutboxMessage,
    Remember,
)

BOOKING_SCOPE = "booking"  # idempotency scope of the booking index: id -> merchant, day, partner
# An action on a booking refused because the booking was changed meanwhile (booked again as
# another engine reservation, maybe on another day) is worked out again on the fresh record,
# this many times in all; then the answer says it kept changing (replies.CHANGED_MEANWHILE).
LOOKUPS = 3
MAX_ATTEMPTS = 20  # optimistic retries against concurrent writers of the same day
DAYS_KEPT = 64  # replayed days kept in memory per restaurant (a long-running server)

# Why a booking was refused, in words a host or partner can act on.
SLOT_UNAVAILABLE = "slot unavailable"
NOT_A_SLOT = "not a slot"
SLOT_IN_PAST = "slot in the past"
BAD_PARTY_SIZE = "bad party size"
CLOSED = "closed"
BEYOND_HORIZON = "beyond horizon"
TOO_SOON = "too soon"
OVER_PACING = "over pacing"
OUTSIDE_CANCELLATION_WINDOW = "outside cancellation window"
TABLE_REMOVED = "table removed"  # the store's floor in force lacks it (floors.removed_units)
WAITLIST_FULL = "waitlist full"  # a walk-in would wait behind max_waitlist parties

NEARBY_OFFERED = 3  # open times a host booking refused for a full slot names instead


@dataclass(frozen=True)
class Refused:
    """A request the service turned down before anything was written."""

    code: str
    message: str


@dataclass(frozen=True)
class Applied:
    """An operation that was appended to its day's log, and what the engine answered."""

    day: date
    seq: int | None  # None: the engine rejected it and it was not written
    operation: list[Any]
    result: Result  # a Rejected value when the engine refused it

    @property
    def rejected(self) -> Rejected | None:
        return self.result if isinstance(self.result, Rejected) else None


@dataclass(frozen=True)
class Cell:
    """Availability of one slot for one party size."""

    slot: Slot
    party_size: int
    spots_open: int
    spots_total: int


# Picks the unit a booking is moved to on a day's stand, given its booking details and the
# operation's ts (DayBook.rehome): (unit, beyond pacing) or why there is none.
Chooser = Callable[[HostStand, Mapping[str, Mapping[str, Any]], int], tuple[str, bool] | Refused]
# A check of records beyond the day's own (a partner's: the user's other bookings) made on
# every attempt of a booking or move, just before its operation is worked out: on a lost
# race the check is made again with the operation, so the check and the write see the
# same state of the day written (a refusal is the answer, nothing is written).
Check = Callable[[], Refused | None]
# An operation worked out on the day's stand at its ts, on the floor in force the write read
# once (DayBook._for_write; a booking chooses its table on it): the operation, or why not.
Build = Callable[[HostStand, int, "InForce"], list[Any] | Refused]

# A lookup of spots: a slot, a party size and, optionally, the area (room_id) asked for.
Wanted = tuple[Slot, int] | tuple[Slot, int, str | None]


def _open_rows(
    slots: Sequence[Slot],
    sizes: Sequence[int],
    totals: Sequence[int],
    by_minute: Mapping[int, Sequence[int]] | None,
    offset: int,
    ts: int,
    now_sec: int,
    earliest: int,
) -> list[tuple[int, int, int, int]]:
    """(start_sec, party size, open, total) for each slot and size with a total: open from
    the slot's row of `by_minute` (the sizes' columns from `offset`) while the slot can
    still be booked (after now and `ts`, not before `earliest`), else 0 (None: nothing)."""
    out: list[tuple[int, int, int, int]] = []
    for slot in slots:
        row = None
        if (
            by_minute is not None
            and slot.start_sec > now_sec
            and slot.start_sec >= earliest
            and slot.minute > ts
        ):
            row = by_minute.get(slot.minute)
        for i, (n, total) in enumerate(zip(sizes, totals, strict=True)):
            if total > 0:
                out.append((slot.start_sec, n, row[offset + i] if row is not None else 0, total))
    return out


def earliest_start(r: Restaurant, now: datetime) -> int:
    """The first start_sec a booking made at `now` may have: min_advance_minutes after now,
    to the microsecond. Starts are whole seconds, so now is rounded up, not down: a slot
    closes the instant after its last_bookable_sec, as `unbookable` refuses it."""
    return math.ceil(now.timestamp()) + r.min_advance_minutes * 60


def area_units(r: Restaurant, area_id: str | None) -> AreaUnits | Refused:
    """The units a booking or lookup naming `area_id` (a partner's room_id) may have: None
    for any unit (no area named, or the restaurant is one area); SLOT_UNAVAILABLE for an
    area the restaurant does not have."""
    if area_id is None:
        return None
    area = r.area(area_id)
    if area is None:
        return Refused(SLOT_UNAVAILABLE, f"{r.name} has no area {area_id!r}")
    return area.units if r.rooms else None


def one_per_booking(
    reservations: Iterable[tuple[Reservation, Mapping[str, Any]]],
) -> list[tuple[str, Reservation, Mapping[str, Any]]]:
    """Each booking of a day once, by time: (booking id, its engine reservation, details).
    A change (the host's, or a partner's UpdateBooking) books a new engine reservation
    under the same booking id and cancels the old one: in booking order, the last is the
    booking, not a 'cancelled' row the host would read as the guest calling it off."""
    latest: dict[str, tuple[Reservation, Mapping[str, Any]]] = {}
    for reservation, details in reservations:
        latest[str(details.get("booking_id", reservation.id))] = (reservation, details)
    ordered = sorted(latest.items(), key=lambda item: item[1][0].at)
    return [(booking_id, res, details) for booking_id, (res, details) in ordered]


def area_id(r: Restaurant, unit: str) -> str | None:
    """The seating area (issue #14) a booking's unit is in; None where areas are not set."""
    area = r.area_of(unit)
    return area.id if area is not None else None


def kept_room(r: Restaurant, room: Any) -> str | None:
    """The room a booking made in one (a partner's room_id) is booked again in when it is
    changed or moved: its own while the restaurant still has that area; None: anywhere."""
    return room if isinstance(room, str) and r.rooms and r.area(room) is not None else None


def index_on(r: Restaurant, index: dict[str, Any], unit: str) -> dict[str, Any]:
    """A booking's index once it is booked again on `unit`: a booking made in a room names
    the room that unit is in (the partner is never shown a room it is not in)."""
    now_in = {k: v for k, v in index.items() if k != "room_id"}
    if index.get("room_id") is not None and (room := area_id(r, unit)) is not None and r.rooms:
        now_in["room_id"] = room
    return now_in


def json_result(result: Result) -> Any:
    """The result as it is stored and sent: a rejection is written "error: <code>"."""
    return str(result) if isinstance(result, Rejected) else result


def new_booking_id() -> str:
    """Booking ids are unique for all time (partners key on them), so they are random."""
    return "bk-" + secrets.token_hex(8)


def still_booked(stand: HostStand, ts: int) -> list[Booking]:
    """Reservations that still hold or block tables at `ts` (no-shows expire at at + 15;
    arrived guests never do)."""
    return [(r.tables, r.at) for r in stand.book.booked() if not r.no_show_by(ts)]


def occupied(
    r: Restaurant,
    stand: HostStand,
    meta: Mapping[str, Mapping[str, Any]],
    ts: int,
    day: date | None = None,
) -> list[Taken]:
    """What occupies the floor as seen at minute `ts` (PRODUCT.md section 3).

    A still-booked reservation of m at at' holds its tables during [at', at' + turn(m));
    once its guests have arrived, during [at', max(at', ts) + turn(m)). A party seated at s
    holds them during [s, max(s + turn(m), ts + overstay)): past its turn it is expected to
    leave soon, not never. A reservation's size is its booking's (the engine is not told);
    without one, the unit's turn is used. Given the `day`, a turn is the one of the service
    the party sits down in (services may have turn times of their own)."""
    varied = day is not None and r.varied_turns

    def turns(minute: int) -> Mapping[int, int] | None:
        return calendar.turns_at(r, day, minute) if varied and day is not None else None

    out: list[Taken] = []
    for res in stand.book.booked():
        if res.no_show_by(ts):
            continue  # a no-show by now, whether or not the log has said so yet
        turn = r.turn_of(meta.get(res.id, {}).get("party_size"), res.unit, turns(res.at))
        end = (max(res.at, ts) if res.arrived else res.at) + turn
        out.append(Taken(res.tables, res.at, end, res.at))
    for sitting in stand.sittings():
        size = sitting.size
        if size is None:  # a checked-in reservation: the size its booking gave
            size = meta.get(sitting.party_id, {}).get("party_size")
        turn = r.turn_of(size, "+".join(sitting.tables), turns(sitting.seated_at))
        end = max(sitting.seated_at + turn, ts + r.overstay_minutes)
        out.append(Taken(sitting.tables, sitting.seated_at, end))
    return out


def folded(
    r: Restaurant, booked: BookedDay, ts: int, day: date | None = None
) -> list[tuple[str, int, int, int | None]]:
    """`occupied` for a day read off the store's fold (no seated parties: a day ahead):
    (unit, start, end, at) per still-booked reservation."""
    varied = day is not None and r.varied_turns
    out: list[tuple[str, int, int, int | None]] = []
    # r.turns holds exactly the sizes `turn_of` reads it for (1..max_party_size): an int
    # size it has is that turn, anything else goes to turn_of (a unit's turn).
    sized = r.turns.get
    for unit, at, size, arrived in booked.bookings(ts):
        turn = None if varied else sized(size) if type(size) is int else None
        if turn is None:
            turns = calendar.turns_at(r, day, at) if varied and day is not None else None
            turn = r.turn_of(size, unit, turns)
        out.append((unit, at, (max(at, ts) if arrived else at) + turn, at))
    return out


def quote_ahead_of(stand: HostStand, ts: int, party_id: str, size: int) -> int:
    """The seed's quote for `size` at `ts` with only the parties ahead of `party_id`
    waiting: a waiting party's own wait, which those behind it do not lengthen. Time's own
    changes at `ts` come first, as at any operation's start (so give it a copy: it changes
    `stand`). One quote over the parties ahead: taking the party and each one behind it off
    the queue by a `leave` each (a seating pass per party behind) cost 5 s for the oldest
    of 1,000 waiting."""
    ids = [p.id for p in stand.queue()]
    behind = set(ids[ids.index(party_id) :]) if party_id in ids else set()
    stand.apply(["board", ts])
    ahead = cast(list[Waiting], [p for p in stand.queue() if p.id not in behind])
    usable = stand.usable_tables(ts)
    return quote(ts, size, ahead, usable, stand.floor, stand.next_booked(usable))


def _closing_cancels(stand: HostStand, minute: int) -> list[list[Any]]:
    """The clock's cancels of a day closed since its bookings were taken, as of `minute`:
    each still-booked reservation whose guests have not arrived and whose hold has ended,
    earliest first, at the last minute of its hold (`DayBook.cancel_closed`)."""
    last = HOLD_AFTER_MINUTES - 1
    due = [r for r in stand.book.booked() if not r.arrived and r.at + HOLD_AFTER_MINUTES <= minute]
    return [["cancel", r.at + last, r.id] for r in sorted(due, key=lambda r: (r.at, r.id))]


def _floor_key(stand: HostStand) -> tuple[str | None, ...]:
    """Who sits at each table: a change of it changes the day's availability."""
    return tuple(stand.occupant.values())


def _state_key(stand: HostStand) -> tuple[Any, ...]:
    """Everything time alone can change: the booked set, the queue, who sits where."""
    return (_booked_ids(stand), tuple(stand.waiting), _floor_key(stand))


# Booking details that say who asked for this very entry, not who the guest is: a change
# (`DayBook.move`) carries the guest's details over to the new booking, never these.
_ASKED = ("party_size", "source", "over_pacing", "event_id")


def _booked_ids(stand: HostStand) -> set[str]:
    return {r.id for r in stand.book.booked()}


def removed_refusal(units: Sequence[str]) -> Refused:
    """The refusal of a write that would put somebody at `units`, which the floor in force
    lacks (TABLE_REMOVED, 409 `table removed`)."""
    what = ", ".join(f"table {u}" if "+" not in u else f"the combination {u}" for u in units)
    return Refused(
        TABLE_REMOVED,
        f"{what} is no longer on the floor plan (a reload on another server sharing this"
        " store removed it, or a start on a file without it), but this server still runs"
        " a file with it: reload this server (SIGHUP or POST /api/v1/admin/reload), then"
        " choose another table",
    )


def _onto_removed_table(outcome: Applied | Refused) -> bool:
    """Whether `outcome` is a refusal for a unit the floor in force lacks (TABLE_REMOVED)."""
    return isinstance(outcome, Refused) and outcome.code == TABLE_REMOVED


class _Day:
    """One day's replayed state and the log position it reflects.

    `switches`: (instant, floor) in order: the entries received after each instant are
    replayed on its floor (tables a reload removed then are gone from it); the last one
    is the restaurant's floor, taken at the latest once the log read so far is replayed."""

    def __init__(
        self,
        stand: HostStand,
        switches: Sequence[tuple[float, FloorPlan]] = (),
        floor_key: str | None = None,
    ) -> None:
        self.stand = stand
        # The record of the floor in force the day was put on (DayBook._load), None: none.
        self.floor_key = floor_key
        self.next_seq = 0
        self.version: int | None = None  # the store's version when the log was last read
        self.meta: dict[str, dict[str, Any]] = {}  # reservation/party id -> its booking details
        self.switches = list(switches)
        # The instant from which the replay is on the last floor (the stand's, once replayed):
        # what is written on it must be received after it (DayBook._received_at).
        self.floor_from = switches[-1][0] if switches else None

    def replay(self, entries: list[LogEntry]) -> None:
        for entry in entries:
            refloor_before(self.stand, self.switches, entry.received_at)
            self.stand.apply(entry.operation)
            self.remember(entry.operation, entry.meta)
            self.next_seq = entry.seq + 1
        refloor_before(self.stand, self.switches, None)

    def remember(self, operation: list[Any], meta: dict[str, Any]) -> None:
        if meta and len(operation) > 2 and isinstance(operation[2], str):
            self.meta.setdefault(operation[2], dict(meta))


@dataclass
class _Grid:
    """A day's grid for lookups and what it was read at (DayBook._read_day)."""

    key: tuple[int, int]  # (minute, or -1 before the day opens; the log's length)
    grid: dict[int, list[int]]  # slot minute -> spots_open per column
    version: int  # the log version and the minute of the last read
    minute: int
    state: _Day
    ts: int
    floor: FloorPlan  # the online floor in force it was worked out on (offered_floor)


class DayBook:
    """The service days of one restaurant over a log store."""

    def __init__(
        self,
        store: LogStore,
        restaurant: Restaurant,
        notifier: Notifier | None = None,
        events: Events | None = None,
    ) -> None:
        self.store = store
        self.restaurant = restaurant
        self.notifier = notifier
        self.events = events or Events()  # bookings, cancels and retries, logged and counted
        self._days: dict[date, _Day] = {}
        self._grids: dict[date, _Grid] = {}  # each day's last lookup read (see _read_day)
        # Server threads share a DayBook; the cached states are not safe to change concurrently.
        self._lock = threading.RLock()
        self.generation = 0  # moves with each new configuration (reconfigure)
        self._retired: list[Retired] | None = None  # read on first need (retirements)
        self._added: dict[str, float] | None = None  # read on first need (additions)
        # The day's floor without the units the floor in force lacks (_on_floor_in_force).
        self._in_force_floors: dict[tuple[int, frozenset[str]], tuple[FloorPlan, FloorPlan]] = {}
        self._floor_seen: str | None = None  # the floor in force's record read last (_floor_now)
        # The file's floors (whole, online) without the units the floor in force lacks, by
        # the floor and the floor in force's record key (`offered_floor`).
        self._offered: dict[tuple[int, str | None], tuple[FloorPlan, FloorPlan]] = {}

    def reconfigure(self, restaurant: Restaurant) -> None:
        """Go on with a new configuration of the same restaurant (a reload). The replayed
        days and grids were worked out with the old floor, hours and turns: dropped, so the
        next reader replays the logs (unchanged, nothing dropped) under the new ones."""
        with self._lock:
            self.restaurant = restaurant
            self._days.clear()
            self._grids.clear()
            self._retired = None  # a reload records the units it removed before this
            self._added = None  # and the floor it added units with
            self.generation += 1

    # -- state --------------------------------------------------------------------

    def _load(self, day: date, version: int | None = None) -> _Day:
        """The day's state as of the store's `version` (read now when not given), replayed
        on the floor in force (`_new_day`): read again from the store whenever the day has
        new entries, after them (a reload's fence entry on the day and its new floor are
        one write), and the day replayed afresh when it is another floor than the one the
        day was put on (another server's reload, or a start, kept it)."""
        return self._load_read(day, version)[0]

    def _load_read(self, day: date, version: int | None = None) -> tuple[_Day, InForce | None]:
        """`_load`, and the floor in force when it read it (None: it did not), the last of
        its reads of the store: after the day's entries, so after the seq a write of the
        day appends at (`_for_write`)."""
        cached = self._days.pop(day, None)
        if version is None:
            version = self.store.log_version()  # read before the entries: a later commit bumps it
        merchant = self.restaurant.merchant_id
        read: InForce | None = None
        if cached is not None and cached.version != version:
            entries = self.store.entries(merchant, day, after_seq=cached.next_seq - 1)
            if entries and (read := self._floor_now()).key != cached.floor_key:
                cached = None  # replayed afresh below, on the floor in force now
            else:
                cached.replay(entries)
                cached.version = version
        if cached is None:
            entries = self.store.entries(merchant, day)
            # Read again after the entries even when read just above: the day is put on the
            # floor in force as of its last entry (a fence read with its floor's record).
            read = self._floor_now()
            cached = self._new_day(day, in_force=read)
            cached.replay(entries)
            cached.version = version
            while len(self._days) >= DAYS_KEPT:  # least recently used first
                del self._days[next(iter(self._days))]
        self._days[day] = cached  # (re)inserted last: dict order is recency
        return cached, read

    def _for_write(self, *days: date) -> tuple[list[_Day], InForce]:
        """`days`' states for a write (loaded in that order) and the floor in force it is
        worked out on (its seating pass, its table's choice, the check before its append):
        read once, after the last day's entries, so after every seq the write appends at;
        the `_load` that read it (a day with new entries, or not read yet) gives it.

        No later read is needed: a reload keeps its new floor in one write with a fence
        entry on the day being served (config_reload._retire), so an append there that
        read the floor before it loses (its seq is taken) and is worked out again on the
        new floor. No fence guards a day ahead: the reload books again what was taken on a
        removed table up to its late re-homing, after it kept its floor. Read again at each
        step (three reads a partner's booking, nearly a third of its store calls), the
        floor only narrowed that window by the time a booking takes to work out: a reload
        keeping its floor between the last read and the append was never caught."""
        states: list[_Day] = []
        read: InForce | None = None
        for day in days:
            state, read = self._load_read(day)
            states.append(state)
        return states, read if read is not None else self._floor_now()

    def _floor_now(self) -> InForce:
        """The floor in force, read from the store now: its record's key, its units and
        when it took force. Another floor than the one read last (a reload on another
        server, or a start, kept it) has retired units of its own, read again
        (`retirements`), and changes what every day reads as a configuration does
        (`generation`: the tablet's floor and its quotes are worked out again)."""
        key, last, units = floor_in_force(self.store, self.restaurant.merchant_id)
        if key != self._floor_seen:
            if self._floor_seen is not None:
                self.generation += 1
            self._floor_seen = key
            self._retired = None
            self._added = None
        at = last.get("at") if isinstance(last, dict) else None
        took = float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None
        return InForce(key, units, took)

    def _without_lacking(self, base: FloorPlan, gone: frozenset[str]) -> FloorPlan:
        """`base` (a day's floor) without the units `gone` (those the floor in force lacks),
        the same object for the same floor and units (a stand on it is not put on it
        again: `_on_floor_in_force`); `base` itself when no floor the rules run on is left
        (then a write refuses a seat at a removed unit, as before: `_onto_removed`)."""
        if not gone:
            return base
        key = (id(base), gone)
        found = self._in_force_floors.get(key)
        if found is None or found[0] is not base:
            try:
                found = (base, without_units(base, gone))
            except ValueError:  # no floor the rules run on is left: the file's
                found = (base, base)
            self._in_force_floors = {key: found}
        return found[1]

    def offered_floor(self, host: bool = False, in_force: InForce | None = None) -> FloorPlan:
        """The floor every availability count and every booking's choice of table is made
        on: the file's (`rules.floor_for`: the online one for partners, the whole one for
        the host) without the tables and combos the floor in force lacks, as the day's
        writes are (`_on_floor_in_force`). On a server whose file is out of date (another
        server's reload removed T5) its lookups, the feed, the replaces and the preview
        counted T5 open: a partner told 2 spots where 1 could be booked, the next booking
        placed elsewhere or refused (PRODUCT.md section 3: k open, k bookings succeed).

        `in_force`: the floor in force's key and units (`_floor_now`) when the caller has
        read them already, else read now (one store read). The floor made is kept by the
        file's floor and the floor record's key, so a lookup's grid on it stays kept
        (`_read_day`) and its masks worked out (feed.floor.availability), until another
        floor takes force.

        A table the floor in force has and the file lacks (a reload elsewhere added T7) is
        not counted here: this server's stand cannot seat or book at it, so offering it
        would promise a booking the server refuses; it is offered once the server reloads.
        Should the floor in force lack every table of the file's floor, the file's floor is
        counted (no floor the rules run on is left): each booking there is refused as a
        removed table, as before."""
        with self._lock:
            floor = rules.floor_for(self.restaurant, host)
            key, units, _at = in_force if in_force is not None else self._floor_now()
            if not units:  # no floor was ever kept: the file's is the one in force
                return floor
            found = self._offered.get((id(floor), key))
            if found is not None and found[0] is floor:
                return found[1]
            gone = frozenset(u for u in unit_ids(floor) if u not in units)
            try:
                offered = without_units(floor, gone)
            except ValueError:  # no floor the rules run on is left (see above)
                offered = floor
            if len(self._offered) >= 8:  # the whole and online floors of a floor or two
                self._offered.clear()
            self._offered[(id(floor), key)] = (floor, offered)
            return offered

    def _new_day(
        self,
        day: date,
        kept: Sequence[Retired] = (),
        in_force: InForce | None = None,
    ) -> _Day:
        """A day not replayed yet, on its floor; a day whose log began before a reload
        removed tables or combos starts on a floor that still has them, and goes on
        without each from the entry received after its removal (see `Retired`). `kept`:
        units added to the floor for the whole day (`replayed_with`).

        With `in_force` (the floor in force's key and units, `_floor_now`), the day's floor
        is without the units the floor in force lacks, as every write's is
        (`_on_floor_in_force`): on a server whose file is out of date (another server's
        reload removed T5, which its file still has) the day is read as every replay on
        the floor in force reads it, T5 leaving it as of its removal. Read on its file's
        floor, its replay and a reader's pass (the board, the tablet's floor, a partner's
        waitlist entry) seated a waiting party at T5, which the others show waiting."""
        base = calendar.floor_of_day(self.restaurant, day)
        key = None
        if in_force is not None:
            key, units, _at = in_force
            if units:
                gone = frozenset(u for u in unit_ids(base) if u not in units)
                base = self._without_lacking(base, gone)
        floor = with_retired(base, kept)
        # The units of the day's floor a reload or a start added (`additions`; not those
        # `kept` puts on it for the whole day), and the earlier removal of one added again.
        ours = set(unit_ids(base)) - {r.unit for r in kept}
        added = {u: at for u, at in self.additions().items() if u in ours}
        retired = [
            r
            for r in self.retirements()
            if (floor.table(r.unit) is None and floor.combo(r.unit) is None)
            or (r.unit in added and r.at < added[r.unit])
        ]
        if retired or added:
            first = self.store.entries(self.restaurant.merchant_id, day, limit=1)
            began = first[0].received_at if first else None
            retired = [r for r in retired if began is not None and r.at >= began]
            added = {u: at for u, at in added.items() if began is not None and at >= began}
        if not retired and not added:
            return _Day(HostStand(floor), floor_key=key)

        def floor_at(instant: float) -> FloorPlan:
            """The day's floor for the entries received after `instant`: without the units
            added later, with those removed later."""
            later = {u for u, at in added.items() if at > instant}
            return with_retired(without_units(floor, later), [r for r in retired if r.at > instant])

        try:
            first_floor = floor_at(-math.inf)
        except ValueError:  # no floor the rules run on before the additions: the day's own
            added = {}
            if not retired:
                return _Day(HostStand(floor), floor_key=key)
            first_floor = floor_at(-math.inf)
        instants = sorted({r.at for r in retired} | set(added.values()))
        switches = [(at, floor_at(at)) for at in instants]
        return _Day(HostStand(first_floor), switches, key)

    def blank_stand(self, day: date) -> tuple[HostStand, list[tuple[float, FloorPlan]]]:
        """A stand to replay the day's log on afresh, and when its floor changes (as the
        day's own replay: `_Day.switches`, on the floor in force), for a reader replaying
        it its own way."""
        with self._lock:
            state = self._new_day(day, in_force=self._floor_now())
            return state.stand, state.switches

    def replayed_with(self, day: date, kept: Sequence[Retired]) -> HostStand:
        """The day's stand replayed afresh (not kept) on its floor plus `kept`: what a log
        naming tables the restaurant's file no longer has would tell on the floor it was
        written on, as near as `kept` is to it (config_reload.stored_parties_removed)."""
        with self._lock:
            state = self._new_day(day, kept)
            state.replay(self.store.entries(self.restaurant.merchant_id, day))
            return state.stand

    def retirements(self) -> list[Retired]:
        """The tables and combos reloads removed from this restaurant (the latest removal
        of each), read once per configuration."""
        with self._lock:
            if self._retired is None:
                latest: dict[str, Retired] = {}
                prefix = f"{self.restaurant.merchant_id}/"
                for _key, value in self.store.recall_prefix(RETIRED_SCOPE, prefix):
                    found = Retired.of_record(value)
                    if found is not None:
                        latest[found.unit] = found  # key order is time order
                self._retired = list(latest.values())
            return self._retired

    def additions(self) -> dict[str, float]:
        """The tables and combos of the floor in force a reload or a start added, each with
        the instant it last took force (Unix seconds): a day whose log began before then is
        replayed without it until then, as one a reload removed is replayed with it until
        its removal (`Retired`). Read from the history of the floors in force
        (`floor_history`; a reload's floor that was undone never took force); those of
        the first floor kept are not listed (in force as far as the store tells). Read
        once per configuration and floor in force.

        Replayed with it from the opening, a day rewrote where earlier parties sat: the
        walk-in W who waited from 12:00 and was seated at T5 at 12:05, after the reload
        that added T7, read seated at T7 since 12:00 on any fresh replay (a restart,
        another server), T5 free while W sat there."""
        with self._lock:
            if self._added is None:
                added: dict[str, float] = {}
                before: Collection[str] | None = None
                for kept in floor_history(self.store, self.restaurant.merchant_id):
                    if kept.undone:
                        continue
                    if before is not None:
                        added.update((u, kept.at) for u in kept.units if u not in before)
                    added = {u: at for u, at in added.items() if u in kept.units}
                    before = kept.units.keys()
                self._added = added
            return self._added

    def stand(self, day: date) -> HostStand:
        """The day's host stand as its log stands now (do not apply operations to it)."""
        with self._lock:
            return self._load(day).stand

    def free_units(
        self,
        day: date,
        party_size: int | None,
        now: datetime,
        guest: str | None = None,
        area: str | None = None,
    ) -> list[str]:
        """Units the board shows free at `now` that fit a party of `party_size` (any unit
        when it is not known), fewest seats first: where the host could seat arriving
        guests. Free as the seed's board says it: nobody sits at a table of the unit and no
        other reservation holds one (guests due now are on their way to it); `guest`'s own
        hold does not count. With `area` (the room the guests booked), that area's units
        only; an area the restaurant no longer has: the whole floor."""
        within = area_units(self.restaurant, area)
        allowed = None if isinstance(within, Refused) else within
        ts = self.minute(day, now)
        with self._lock:  # holder() reads holds as of `ts` without expiry having run
            stand = self._load(day).stand
            floor = self.offered_floor(host=True)  # not a table another reload removed
            occupied_tables = set(stand.seated())
            for t in floor.tables:
                holder = stand.book.holder(t.id, ts)
                if holder is not None and holder != guest:
                    occupied_tables.add(t.id)
        units: list[tuple[int, int, str]] = []
        n = party_size
        for i, t in enumerate(floor.tables):
            if t.id not in occupied_tables and (
                n is None or (not floor.is_large(n) and t.smallest_party <= n <= t.seats)
            ):
                units.append((t.seats, i, t.id))
        for j, c in enumerate(floor.combos):
            if not set(c.tables) & occupied_tables and (
                n is None or (floor.is_large(n) and c.min_party <= n <= c.capacity)
            ):
                units.append((c.capacity, len(floor.tables) + j, c.id))
        return [unit for _, _, unit in sorted(units) if allowed is None or unit in allowed]

    def booked_before_done(
        self,
        day: date,
        units: list[str],
        party_size: int | None,
        now: datetime,
        guest: str | None = None,
    ) -> dict[str, tuple[int, str]]:
        """Of `units` (free ones, from `free_units`), those another still-booked reservation
        (not `guest`'s) is due at before a party of `party_size` seated now would be done:
        unit -> (minutes until it is due, its local "HH:MM"). The floor's
        protect_reservations rule, as the waitlist and the tablet's Seat… keep such a table
        from a party (the turn of its size); nothing when the floor does not protect
        reservations or the size is not known."""
        with self._lock:
            stand = self._load(day).stand
            floor = stand.floor
            if not floor.protect_reservations or party_size is None:
                return {}
            ts = self.minute(day, now)
            done = ts + floor.turn(party_size)
            first: dict[str, int] = {}
            for res in stand.book.booked():
                if res.id == guest or not ts < res.at < done:
                    continue
                for table in res.tables:
                    first[table] = min(first.get(table, res.at), res.at)
        opening = calendar.log_opening(self.restaurant, day)
        out: dict[str, tuple[int, str]] = {}
        for unit in units:
            due = [first[t] for t in unit.split("+") if t in first]
            if due and opening is not None:
                at = min(due)
                local = (opening + timedelta(minutes=at)).astimezone(self.restaurant.tz)
                out[unit] = (at - ts, local.strftime("%H:%M"))
        return out

    def details(self, day: date, party_id: str) -> dict[str, Any]:
        """Booking details stored with a reservation or walk-in (party size, name, source)."""
        with self._lock:
            return dict(self._load(day).meta.get(party_id, {}))

    def partners_waiting(self, day: date, party_ids: Iterable[str]) -> int:
        """How many of `party_ids` (on `day`) are partners' waitlist entries."""
        with self._lock:
            known = self._load(day).meta
            return sum(1 for pid in party_ids if from_partner(known.get(pid, {})))

    def moved_to(self, day: date, booking_id: str, reservation: Reservation) -> str | None:
        """Where a booking whose `reservation` on `day` is cancelled now stands, when a
        change (the host's, or a partner's UpdateBooking) moved it to another day: its local
        start, "YYYY-MM-DD HH:MM"; None for a reservation not cancelled (nothing is read),
        one still on `day`, or a booking cancelled after all."""
        if reservation.status is not ReservationStatus.CANCELLED:
            return None
        index = self.store.recall(BOOKING_SCOPE, booking_id)
        if not isinstance(index, dict) or index.get("day") in (None, day.isoformat()):
            return None
        other = date.fromisoformat(str(index["day"]))
        opening = calendar.log_opening(self.restaurant, other)
        with self._lock:
            now_on = self._load(other).stand.book.get(str(index.get("reservation_id")))
        gone = (ReservationStatus.CANCELLED, ReservationStatus.NO_SHOW)
        if opening is None or now_on is None or now_on.status in gone:
            return None
        start = (opening + timedelta(minutes=now_on.at)).astimezone(self.restaurant.tz)
        return start.strftime("%Y-%m-%d %H:%M")

    def booking_ids(self, day: date) -> dict[str, str]:
        """Engine id -> the booking id we gave out, for the day's moved bookings (one read
        of the day, not one per party)."""
        with self._lock:
            meta = self._load(day).meta
            return {
                engine_id: str(d["booking_id"])
                for engine_id, d in meta.items()
                if isinstance(d.get("booking_id"), str)
            }

    def op_ts(self, day: date, stand: HostStand, now: datetime) -> int:
        """An operation's ts: the server's clock in minutes since the day's opening, never
        below the log's last ts (PRODUCT.md section 2)."""
        ts = self.minute(day, now)
        return ts if stand.last_ts is None else max(ts, stand.last_ts)

    def minute(self, day: date, now: datetime) -> int:
        """Minutes since the day's log's minute 0 (a day closed since still has one)."""
        opening = calendar.log_opening(self.restaurant, day)
        if opening is None:
            raise ValueError(f"{self.restaurant.merchant_id} is closed on {day.isoformat()}")
        return calendar.minute_of_opening(now, opening)

    # -- changes ------------------------------------------------------------------

    def apply(
        self,
        day: date,
        now: datetime,
        build: Build,
        meta: dict[str, Any] | None = None,
        *,
        remember: Callable[[list[Any], Result], Sequence[Remember]] | None = None,
        keep_rejected: bool = True,
        put: Callable[[list[Any]], Sequence[Remember]] | None = None,
    ) -> Applied | Refused:
        """Work out an operation on the current state, apply it and append it durably.

        `build(stand, ts, in_force)` returns the operation (or a refusal, then nothing is
        written); `ts` is the server's clock in minutes since the day's opening, never below
        the log's last `ts`; `in_force` the floor in force the write read (`_for_write`).
        On a concurrent append the state is reloaded and `build` runs again.
        `remember(operation, result)` gives idempotency records that commit with the entry
        (DuplicateKey propagates: the caller replays the stored answer). With
        `keep_rejected=False` an operation the engine rejects is not written at all.
        `put(operation)` gives records written over what is stored (a booking's index), in
        the same transaction, for an operation the engine took.

        The day's waitlist is closed first (`close_queue`): a walk-in still waiting once its
        service has closed is taken off before the operation's seating pass could seat it,
        whether or not the clock's sweep has come by since (the CLI has no sweep at all).
        On a day closed since its bookings were taken, the bookings whose hold has ended
        are cancelled first (`cancel_closed`): a later minute's pass would write them
        no-shows.
        """
        if calendar.log_opening(self.restaurant, day) is None:
            return Refused(CLOSED, f"{self.restaurant.name} is closed on {day.isoformat()}")
        self._time_first(day, now)
        return self._apply(day, now, build, meta, remember, keep_rejected, put)

    def _time_first(self, day: date, now: datetime) -> None:
        """Write what time alone has changed on `day` by `now` that an operation's own pass
        would otherwise get wrong, before it runs: the waitlist of a service that has closed
        (`close_queue`), and on a day closed since its bookings were taken, the bookings
        whose hold has ended, cancelled (`cancel_closed`; each a no-op on other days)."""
        self.close_queue(day, now)
        self.cancel_closed(day, now)

    def _apply(
        self,
        day: date,
        now: datetime,
        build: Build,
        meta: dict[str, Any] | None,
        remember: Callable[[list[Any], Result], Sequence[Remember]] | None,
        keep_rejected: bool,
        put: Callable[[list[Any]], Sequence[Remember]] | None = None,
    ) -> Applied | Refused:
        """`apply` without closing the waitlist first (the close's own leaves)."""
        closed = Refused(CLOSED, f"{self.restaurant.name} is closed on {day.isoformat()}")
        # A day closed since its bookings were taken takes their cancellations only.
        open_ = calendar.opening_instant(self.restaurant, day) is not None
        merchant = self.restaurant.merchant_id
        with self._lock:
            for _ in range(MAX_ATTEMPTS):
                [state], in_force = self._for_write(day)
                ts = self.op_ts(day, state.stand, now)
                # The seq is read before `build`: a check of other records in it (a user's
                # other bookings) may read this day again and bring it up to a later
                # write, and the append must then lose and work the operation out again.
                seq = state.next_seq
                lacking = self._on_floor_in_force(day, state.stand, in_force)
                operation = build(state.stand, ts, in_force)
                if isinstance(operation, Refused):
                    return operation
                named = operation[3] if len(operation) > 3 else None
                named_gone = isinstance(named, str) and named in lacking
                if named_gone and operation[0] in ("reserve", "seat", "move"):
                    return removed_refusal([str(named)])  # the engine knows it no more
                if not open_ and operation[:1] != ["cancel"]:
                    return closed
                before = _booked_ids(state.stand)
                floor_before = _floor_key(state.stand)
                sat_before = dict(state.stand.occupant)
                result = state.stand.apply(operation)
                if isinstance(result, Rejected) and not keep_rejected:
                    self._days.pop(day, None)  # the start-of-operation pass ran in memory only
                    return Applied(day, None, operation, result)
                # On the floor read after the day's seq: a reload's write of a new floor is
                # fenced by an entry on the day (config_reload._retire), so this append
                # loses to it (`_for_write`).
                gone = None if isinstance(result, Rejected) else self._onto_removed(
                    operation, sat_before, state.stand, in_force
                )  # fmt: skip
                if gone is not None:
                    self._days.pop(day, None)  # the operation ran in memory only
                    if self._in_force_changed(day, lacking):
                        # A reload elsewhere removed the unit after this attempt read the
                        # floor in force, and the pass seated somebody there: worked out
                        # again on the floor in force (the reload's fence entry makes this
                        # append lose anyway), as a write a moment later is. The refusal
                        # blamed a table the write never named (a walk-in told to choose
                        # another table; a partner's event answered 503, send it again).
                        continue
                    return gone
                stamp = self._received_at([(state, lacking)], now, in_force)
                entry = NewEntry(operation, json_result(result), stamp, dict(meta or {}))
                records = remember(operation, result) if remember is not None else ()
                taken = not isinstance(result, Rejected)
                over = put(operation) if put is not None and taken else ()
                outbox = self._outbox(
                    day,
                    state,
                    before,
                    [(operation, entry.meta)],
                    now,
                    floor_changed=_floor_key(state.stand) != floor_before,
                )
                try:
                    self.store.append_all(
                        [LogAppend(merchant, day, seq, [entry])],
                        remember=records,
                        put=over,
                        outbox=outbox,
                    )
                except ConcurrencyConflict:
                    self._days.pop(day, None)  # the in-memory state ran ahead of the log
                    self.events.conflict(merchant)
                    continue
                except BaseException:
                    self._days.pop(day, None)
                    raise
                state.next_seq = seq + 1
                state.remember(operation, entry.meta)
                return Applied(day, seq, operation, result)
        raise ConcurrencyConflict(f"{merchant} {day}: gave up after {MAX_ATTEMPTS} attempts")

    def _onto_removed(
        self,
        operation: list[Any],
        sat_before: Mapping[str, str | None],
        stand: HostStand | None,
        in_force: InForce,
    ) -> Refused | None:
        """A refusal when `operation` (applied to `stand`, which had `sat_before` sitting)
        books, seats or moves anybody at a table or combo the floor in force (`in_force`,
        as the write read it) lacks: this server runs a file older than the store's floor."""
        sits = stand.occupant.items() if stand is not None else ()
        onto = {t for t, p in sits if p is not None and sat_before.get(t) != p}
        if stand is not None:
            # The combination each party was put at, too: a floor may keep both tables and
            # not the combination (the seating pass joins them for a party of 7 only then).
            for party in {stand.occupant[t] for t in onto}:
                tables = stand.parties[party].tables if party is not None else ()
                if len(tables) > 1:
                    onto.add("+".join(tables))
        named = operation[3] if len(operation) > 3 else None
        if operation[:1] in (["reserve"], ["seat"], ["move"]) and isinstance(named, str):
            onto.add(named)
        if not onto:
            return None
        gone = not_in_force(in_force.units, onto)
        return removed_refusal(gone) if gone else None

    def _in_force_changed(self, day: date, lacking: frozenset[str]) -> bool:
        """Whether the units the floor in force lacks on `day` are no longer `lacking` (what
        `_on_floor_in_force` read): read on a refusal only, not on a write's way."""
        base = calendar.floor_of_day(self.restaurant, day)
        now_lacking = removed_units(self.store, self.restaurant.merchant_id, unit_ids(base))
        return frozenset(now_lacking) != lacking

    def _received_at(
        self, states: Sequence[tuple[_Day, frozenset[str]]], now: datetime, in_force: InForce
    ) -> float:
        """The instant an entry worked out on `states` (each day's, with the units the floor
        in force lacks that `_on_floor_in_force` took off it) is received at: `now`, or just
        after the instant its floor holds from, if `now` is not later. The replay puts an
        entry on the floor of when it was received (`refloor_before`), and `now` is read when
        the request came: one written after a reload (another server's, whose floor this
        write read from the store, or this server's own) by a request that came before it
        was replayed on the floor before the reload. A pass that seated nobody at T5 in
        memory (T5 removed) seated a waiting party there in every replay: the host told W
        waits, the other servers and any restart showing W seated at a removed table."""
        after = max((s.floor_from for s, _ in states if s.floor_from is not None), default=None)
        at = in_force.at  # the floor in force the write read (`_for_write`)
        if any(lacking for _, lacking in states) and at is not None:  # a server on an old file
            after = at if after is None else max(after, at)
        stamp = now.timestamp()
        return math.nextafter(after, math.inf) if after is not None and stamp <= after else stamp

    def _on_floor_in_force(self, day: date, stand: HostStand, in_force: InForce) -> frozenset[str]:
        """Put `stand` (the day's, about to take a write) on the day's floor without the
        units the floor in force lacks (`removed_units`), and those units. A server on an
        out-of-date file (another server's reload removed T5) would otherwise have the
        write's seating pass seat a waiting party at T5, and refuse the write (a walk-in to
        the waitlist, a check-in at T1) for a table it never named (`_onto_removed`): the
        pass now seats only at units in force, as every replay on the floor in force does
        from the reload on, and what needs T5 waits. A party sitting at T5 keeps it until
        freed (HostStand.refloor); T5 is back for the next write once the floor in force
        has it again (`in_force`: read from the store at each write, never kept)."""
        base = calendar.floor_of_day(self.restaurant, day)
        gone = frozenset(not_in_force(in_force.units, unit_ids(base)))
        floor = self._without_lacking(base, gone)
        if stand.floor is not floor:
            stand.refloor(floor)
        return gone

    def _outbox(
        self,
        day: date,
        state: _Day,
        before: set[str],
        operations: list[tuple[list[Any], dict[str, Any]]],
        now: datetime,
        floor_changed: bool = False,
    ) -> list[OutboxMessage]:
        """Messages for partners about what these operations changed (none without a notifier)."""
        if self.notifier is None:
            return []
        stand = state.stand
        changed = [
            r
            for rid in sorted(before ^ _booked_ids(stand))
            if (r := stand.book.get(rid)) is not None
        ]
        opening = calendar.log_opening(self.restaurant, day)
        if not (changed or floor_changed) or opening is None:
            return []
        # Delivery lag is a real-time figure, so messages are stamped with the real clock
        # (`now` may be pinned for previews and tests).
        return self.notifier.messages(
            self.restaurant,
            day,
            opening,
            changed,
            state.meta,
            operations,
            time.time(),
            floor_changed=floor_changed,
        )

    def _moved(
        self,
        old_day: date,
        old: _Day,
        new_day: date,
        new: _Day,
        cancel: list[Any],
        cancel_meta: dict[str, Any],
        now: datetime,
    ) -> list[OutboxMessage]:
        """The booking notification of a move across days (within one day, `_outbox` sees
        both halves together)."""
        if self.notifier is None:
            return []
        old_res = old.stand.book.get(str(cancel[2]))
        new_res = new.stand.book.get(str(cancel_meta.get("moved_to")))
        if old_res is None or new_res is None:
            return []
        return self.notifier.move_messages(
            self.restaurant,
            (old_day, old_res, old.meta.get(old_res.id, {})),
            (new_day, new_res, new.meta.get(new_res.id, {})),
            cancel_meta,
            time.time(),
        )

    def fence(
        self,
        day: date,
        now: datetime,
        check: Callable[[HostStand], str | None],
        put: Sequence[Remember],
        meta: dict[str, Any],
        follows: Sequence[Remember] = (),
    ) -> str | None:
        """Write `put` with an entry on `day` once `check(stand)` finds nothing wrong on the
        day as its log stands (else its answer, and nothing is written): a writer of the
        day that read the log before this entry loses its append to it and works its
        operation out again, reading `put`'s records then (a reload's new floor). The
        entry is a `board` at the log's last minute: it changes nothing on the day (what
        time alone changes stays the clock's sweep's to write, with its partner messages).
        `follows`: records that must be new (floors.follows_record), in the same write;
        one taken raises DuplicateKey, and nothing is written."""
        said: list[str] = []

        def build(stand: HostStand, ts: int, _in_force: InForce) -> list[Any] | Refused:
            found = check(stand)
            if found is not None:
                said.append(found)
                return Refused(TABLE_REMOVED, found)
            return ["board", stand.last_ts if stand.last_ts is not None else ts]

        outcome = self.apply(
            day,
            now,
            build,
            meta,
            remember=lambda _operation, _result: follows,
            put=lambda _operation: put,
        )
        if isinstance(outcome, Refused) and said:
            return said[-1]
        if isinstance(outcome, Refused):  # a day closed since: nobody is seated there now
            # In one write, as with the entry: a removal kept without its floor record
            # stood while the floor in force kept the unit (floors.note_floor).
            self.store.append_all([], remember=follows, put=put)
        return None

    def operate(
        self,
        day: date,
        now: datetime,
        name: str,
        *args: Any,
        meta: dict[str, Any] | None = None,
        remember: Callable[[list[Any], Result], Sequence[Remember]] | None = None,
        keep_rejected: bool = True,
        put: Callable[[list[Any]], Sequence[Remember]] | None = None,
    ) -> Applied | Refused:
        """A host operation (walk_in, free, board, quote, check_in, cancel, leave) at `now`.
        A walk-in that would join a full waitlist is refused (`waitlist_full`), nothing
        written: every path that joins the waitlist (the host's API and tablet, its CLI, a
        partner's CreateWaitlistEntry) comes through here."""

        def build(stand: HostStand, ts: int, _in_force: InForce) -> list[Any] | Refused:
            operation = [name, ts, *args]
            if name == "walk_in":
                known = self._days[day].meta  # the state build is given is the day's, loaded
                return self.waitlist_full(stand, known, operation, meta or {}) or operation
            return operation

        outcome = self.apply(
            day,
            now,
            build,
            meta,
            remember=remember,
            keep_rejected=keep_rejected,
            put=put,
        )
        if name == "cancel":
            self._tell("cancel", str(args[0]), outcome, CANCELLED)
        return outcome

    def waitlist_full(
        self,
        stand: HostStand,
        known: Mapping[str, Mapping[str, Any]],
        walk_in: list[Any],
        meta: Mapping[str, Any],
    ) -> Refused | None:
        """The refusal of `walk_in` (its details `meta`; `known`: the day's parties') when
        it would wait behind `waitlist_limit` parties, or a partner's behind
        `partner_waitlist_limit` partners' entries, else None. Partners' entries beyond
        their share do not count against the host's walk-ins (a share lowered by a reload
        leaves more waiting): the host always has room for the guests at the door. A party
        a table is free for now is seated as ever, and a walk-in the engine refuses (an id
        in use) is left to the engine to answer."""
        r = self.restaurant
        limit, share = r.waitlist_limit, r.partner_waitlist_limit
        partner = from_partner(meta)
        # The operation's own pass only shortens the queue: under both limits, it joins.
        if not partner and len(stand.waiting) < limit:
            return None
        if partner and len(stand.waiting) < limit and partners_waiting(stand, known) < share:
            return None
        trial = copy.deepcopy(stand)
        result = trial.apply(walk_in)
        if not isinstance(result, str) or not result.startswith("queued"):
            return None
        del trial.waiting[str(walk_in[2])]
        waiting = len(trial.waiting)
        theirs = partners_waiting(trial, known)
        counted = waiting - max(0, theirs - share)
        if counted >= limit or (partner and waiting >= limit):
            return Refused(
                WAITLIST_FULL,
                f"the waitlist is full: {party_count(waiting)} waiting, {limit} at most at"
                f" {r.name}; no more can join until one is seated or leaves",
            )
        if partner and theirs >= share:
            return Refused(
                WAITLIST_FULL,
                f"partners' entries fill their share of the waitlist: {theirs} waiting,"
                f" {share} at most at {r.name} (the rest is kept for the host's walk-ins);"
                " no more can join online until one is seated or leaves",
            )
        return None

    def _tell(self, action: str, booking_id: str, outcome: Applied | Refused, done: str) -> None:
        """A booking, cancel or move to the events: `done`, or the code it was refused with."""
        if isinstance(outcome, Refused):
            said = outcome.code
        else:
            said = outcome.rejected.code if outcome.rejected is not None else done
        self.events.booking(action, self.restaurant.merchant_id, booking_id, said)

    def book(
        self,
        day: date,
        slot: Slot,
        party_size: int,
        now: datetime,
        meta: dict[str, Any] | None = None,
        booking_id: str | None = None,
        remember: Callable[[list[Any], Result], Sequence[Remember]] | None = None,
        index: dict[str, Any] | None = None,
        area: str | None = None,
        *,
        host: bool = False,
        over_pacing: bool = False,
        check: Check | None = None,
    ) -> Applied | Refused:
        """Book a party into a slot on the unit the availability rules choose (PRODUCT.md 3),
        within `area` when one is named (a partner's room_id).

        A partner's booking (the default) takes the online floor, parties up to
        max_online_party_size, within pacing; the host's (`host`) the whole floor up to
        max_party_size, beyond pacing only with `over_pacing` (the booking is marked so).
        The booking index (BOOKING_SCOPE) gets merchant, day, partner and `index` extras.
        `check()` (a refusal or None) is asked first on every attempt, on the state the
        booking is written on: see `Check`."""
        r = self.restaurant
        rid = booking_id or new_booking_id()
        units = area_units(r, area)
        if not 1 <= party_size <= r.max_party_size:
            units = Refused(BAD_PARTY_SIZE, f"party size must be 1..{r.max_party_size}")
        if isinstance(units, Refused):
            self._tell("book", rid, units, BOOKED)
            return units
        details = {"party_size": party_size, **(meta or {})}
        within: AreaUnits = units  # what `build` may choose among (see below)

        def build(stand: HostStand, ts: int, in_force: InForce) -> list[Any] | Refused:
            meta = self._days[day].meta
            refused = check() if check is not None else None
            if refused is not None:
                return refused
            chosen = self._choose(day, stand, meta, slot, party_size, now, ts, in_force,
                                  host=host, over_pacing=over_pacing, units=within,
                                  area=area)  # fmt: skip
            if isinstance(chosen, Refused):
                if not host:
                    return chosen

                def takes(other: Slot) -> bool:  # the same booking at another time
                    again = self._choose(
                        day, stand, meta, other, party_size, now, ts, in_force,
                        host=True, over_pacing=over_pacing, units=within, area=area,
                    )  # fmt: skip
                    return not isinstance(again, Refused)

                return self._offer(chosen, day, slot, party_size, takes)
            unit, beyond = chosen
            if beyond:
                details["over_pacing"] = True
            else:
                details.pop("over_pacing", None)
            return ["reserve", ts, rid, unit, slot.minute]

        entry = {
            **(index or {}),
            "merchant_id": r.merchant_id,
            "day": day.isoformat(),
            "partner": details.get("partner"),
            "reservation_id": rid,
        }

        def records(operation: list[Any], result: Result) -> list[Remember]:
            # The index finds a booking's day from its id alone (check-in, cancel, status).
            extra = list(remember(operation, result)) if remember is not None else []
            return [*extra, (BOOKING_SCOPE, rid, entry)]

        outcome = self.apply(day, now, build, details, remember=records, keep_rejected=False)
        if _onto_removed_table(outcome):
            # The rules chose a table this server's file has and the floor in force lacks
            # (another server reloaded a file without it): chosen again among the units
            # still in force, so the guests get the table the floor can seat them at,
            # refused as no table only when none is left. Nothing was written.
            within = self._in_force(within)
            outcome = self.apply(day, now, build, details, remember=records, keep_rejected=False)
        self._tell("book", rid, outcome, BOOKED)
        return outcome

    def _in_force(self, units: AreaUnits) -> frozenset[str]:
        """`units` (None: the whole floor) without those the floor in force lacks
        (`removed_units`): the units a booking may still be put on when this server runs
        a file older than the store's floor. Read from the store each time, never kept: a
        later reload may put a table back."""
        every = units if units is not None else frozenset(unit_ids(self.restaurant.floor))
        return every - frozenset(removed_units(self.store, self.restaurant.merchant_id, every))

    def _choose(
        self,
        day: date,
        stand: HostStand,
        meta: Mapping[str, Mapping[str, Any]],
        slot: Slot,
        party_size: int,
        now: datetime,
        ts: int,
        in_force: InForce,
        *,
        host: bool,
        over_pacing: bool,
        units: AreaUnits = None,
        area: str | None = None,
    ) -> tuple[str, bool] | Refused:
        """The unit a booking takes and whether it goes beyond pacing, or why it cannot be
        taken: the one rule of every booking path (the feed's numbers, PRODUCT.md 3). With
        `units` (a named area's, `area`), the unit is one of them: partners' of the area's
        online tables. Pacing counts the whole restaurant's slot, whatever the area. The
        tables are those of the floor in force the write read (`in_force`, `_for_write`)."""
        r = self.restaurant
        when = slot.local.strftime("%Y-%m-%d %H:%M")
        refused = self.unbookable(day, slot, now, ts, host=host)
        if refused is not None:
            return refused
        if party_size > rules.party_limit(r, host):
            return Refused(
                SLOT_UNAVAILABLE,
                f"parties above {r.online_limit} book by calling {r.name}, not online",
            )
        taken = occupied(r, stand, meta, ts, day)
        turns = calendar.turns_at(r, day, slot.minute)
        floor = self.offered_floor(host, in_force)  # as the lookups count it
        unit = choose_unit(floor, taken, slot.minute, party_size, turns, units)
        if unit is None:
            where = f" in {area}" if area is not None else ""
            return Refused(SLOT_UNAVAILABLE, f"no table for {party_size}{where} at {when}")
        service = calendar.service_of(r, day, slot)
        if service is None or not service.paced:
            return unit, False
        counts = rules.stand_counts(r, stand, meta, ts)
        caps = service.max_covers, service.max_parties
        if not pacing.over(*caps, counts, slot.minute, party_size):
            return unit, False
        if host and over_pacing:
            return unit, True
        covers, parties = counts.get(slot.minute, pacing.NO_BOOKINGS)
        return Refused(
            OVER_PACING,
            f"over pacing: {when} already has {parties} bookings for {covers} guests "
            f"(at most {_caps(service.max_covers, service.max_parties)} per slot)",
        )

    def _offer(
        self,
        refused: Refused,
        day: date,
        slot: Slot,
        party_size: int,
        takes: Callable[[Slot], bool],
    ) -> Refused:
        """A host booking refused for a full slot (no table, or over pacing) names up to
        NEARBY_OFFERED other times of the day the party can have instead (`takes`: the
        booking's own rule, `_choose`, on the stand it was refused on; for a move, the one
        with the booking already taken off), the nearest (the earlier of two as near), in
        time order: what the host offers the caller. Only the host's: partners have the
        feed and the lookup for that."""
        if refused.code not in (SLOT_UNAVAILABLE, OVER_PACING):
            return refused
        others = [s for s in calendar.slots(self.restaurant, day) if s.minute != slot.minute]
        others.sort(key=lambda s: (abs(s.start_sec - slot.start_sec), s.start_sec))
        found = list(islice(filter(takes, others), NEARBY_OFFERED))
        times = ", ".join(s.local.strftime("%H:%M") for s in sorted(found, key=lambda s: s.minute))
        offer = (
            f"open for {party_size} that day: {times}" if found else "nothing else open that day"
        )
        return Refused(refused.code, f"{refused.message}; {offer}")

    def cancel_refused(
        self, day: date, reservation_id: str, now: datetime, *, host: bool = False
    ) -> Refused | None:
        """Why a partner may not cancel this reservation now (closer to its start than
        cancel_cutoff_minutes), or None; the host always may."""
        r = self.restaurant
        if host or not r.cancel_cutoff_minutes:
            return None
        opening = calendar.log_opening(r, day)
        with self._lock:
            reservation = self._load(day).stand.book.get(reservation_id)
        if opening is None or reservation is None:
            return None  # the engine says what is wrong with it
        start = opening.timestamp() + reservation.at * 60
        if now.timestamp() > start - r.cancel_cutoff_minutes * 60:
            return Refused(
                OUTSIDE_CANCELLATION_WINDOW,
                f"online cancellation closes {r.cancel_cutoff_minutes} minutes before the "
                f"start: call {r.name}",
            )
        return None

    def unbookable(
        self, day: date, slot: Slot, now: datetime, ts: int, *, host: bool = False
    ) -> Refused | None:
        """Why a booking at `slot` cannot be taken at `now` whatever the floor (the past,
        closer than min_advance_minutes, beyond horizon_days), or None. The same rule as
        the feed's: what it shows 0 for, no path books."""
        r = self.restaurant
        when = slot.local.strftime("%Y-%m-%d %H:%M")
        if slot.minute <= ts or slot.start_sec <= now.timestamp():
            return Refused(SLOT_IN_PAST, f"{when} has already started")
        if not calendar.within_horizon(r, day, now):
            # The days count from today's date, today the first: a slot of the last day + 1
            # can be less than horizon_days x 24 hours ahead, and "more than 30 days ahead"
            # was untrue of it. Said as the dates it counts.
            last = calendar.last_bookable_day(r, now)
            first = last - timedelta(days=r.horizon_days - 1)
            return Refused(
                BEYOND_HORIZON,
                f"{when} is not bookable yet: bookings open {r.horizon_days} days ahead,"
                f" {first.isoformat()} to {last.isoformat()}",
            )
        if slot.start_sec < now.timestamp() + r.min_advance_minutes * 60:
            advice = (
                "nothing is booked that close (min_advance_minutes): seat them as walk-ins"
                if host  # the host is the restaurant: "call the restaurant" is no help
                else "too late to book online, call the restaurant"
            )
            return Refused(
                TOO_SOON, f"{when} is less than {r.min_advance_minutes} minutes away: {advice}"
            )
        return None

    def spots(
        self, day: date, slot: Slot, party_size: int, now: datetime, area: str | None = None
    ) -> int:
        """What a booking of `party_size` in `slot` (in `area`, when named) would find open
        right now (0 if started)."""
        return self.spots_many(day, [(slot, party_size, area)], now)[0]

    def spots_many(self, day: date, wanted: Sequence[Wanted], now: datetime) -> list[int]:
        """`spots` for several (slot, party size) of one day."""
        return self.spots_days({day: wanted}, now)[day]

    def spots_days(
        self, wanted: dict[date, Sequence[Wanted]], now: datetime
    ) -> dict[date, list[int]]:
        """`spots` for several (slot, party size[, area]) of several days, as of one store
        version. An area the restaurant does not have is 0 open."""
        items = [
            (day, w[0], w[1], w[2] if len(w) > 2 else None)
            for day, ws in wanted.items()
            for w in ws
        ]
        flat = iter(self.spots_flat(items, now))
        return {day: [next(flat) for _ in ws] for day, ws in wanted.items()}

    def spots_flat(
        self, wanted: Sequence[tuple[date, Slot, int, str | None]], now: datetime
    ) -> list[int]:
        """`spots` for each (day, slot, party size, area or None), in order, as of one store
        version: what a lookup asks (some 50 slots over some 20 days).

        A day's whole grid is worked out once per minute and log length and then read, so
        a burst of lookups (partners poll) costs a dictionary look-up per slot."""
        r = self.restaurant
        now_sec = now.timestamp()  # what depends on `now` only, once for every day asked
        last_day = calendar.last_bookable_day(r, now)
        earliest = now_sec + r.min_advance_minutes * 60  # and later than now
        place = {a.id: i + 1 for i, a in enumerate(r.rooms)}  # an area's columns in a row
        width = r.online_limit
        out: list[int] = []
        with self._lock:
            version = self.store.log_version()  # read before the entries: a later commit bumps it
            floor = self.offered_floor()  # the floor in force read once per lookup
            days: dict[date, tuple[_Day, int, dict[int, list[int]]] | None] = {}
            off_grid: dict[date, list[Taken]] = {}
            for day, slot, n, area in wanted:
                if day in days:
                    read = days[day]
                else:
                    read = days[day] = self._read_day(day, now, now_sec, version, last_day, floor)
                if read is None:  # beyond the horizon or closed: nothing is bookable
                    out.append(0)
                    continue
                state, ts, grid = read
                units = area_units(r, area)
                if (
                    isinstance(units, Refused)
                    or slot.minute <= ts
                    or slot.start_sec < earliest
                    or slot.start_sec <= now_sec
                ):
                    out.append(0)
                    continue
                row = grid.get(slot.minute)
                if not 1 <= n <= width:
                    out.append(0)  # a party partners cannot book: larger ones call
                elif row is not None:
                    out.append(row[n - 1 + width * place.get(area or "", 0)])
                else:  # not one of the day's slots: ask the rules directly
                    taken = off_grid.get(day)
                    if taken is None:  # worked out once a day, for every such slot asked
                        taken = off_grid[day] = occupied(r, state.stand, state.meta, ts, day)
                    turns = calendar.turns_at(r, day, slot.minute)
                    out.append(spots_open(floor, taken, slot.minute, n, turns, units))
        return out

    def _read_day(
        self,
        day: date,
        now: datetime,
        now_sec: float,
        version: int,
        last_day: date,
        floor: FloorPlan,
    ) -> tuple[_Day, int, dict[int, list[int]]] | None:
        """The day's state as of `version`, its op ts at `now` and its grid (slot minute ->
        spots_open per column: the online floor's sizes, then each area's), for a lookup;
        None beyond the horizon or on a closed day. `floor`: the online floor in force
        (`offered_floor`); a grid worked out on another (a reload elsewhere since, which
        need not write on this day's log) is not read.

        While neither the log version nor the minute moves, the last read is the answer:
        the next lookup reads the day without replaying or checking. The grid itself is
        kept while the day's log keeps its length (another day's booking does not change
        it), and, before the day opens while nobody is on its floor, across minutes too
        (no reservation is due to expire, no arrived party's meal grows)."""
        if day > last_day:
            return None
        opening = calendar.opening_instant(self.restaurant, day)
        if opening is None:
            return None
        minute = math.floor((now_sec - opening.timestamp()) / 60)
        kept = self._grids.get(day)
        fresh = kept is not None and kept.floor is floor
        if kept is not None and fresh and kept.version == version and kept.minute == minute:
            return kept.state, kept.ts, kept.grid
        r = self.restaurant
        state = self._load(day, version)
        stand = state.stand
        ts = self.op_ts(day, stand, now)
        key = (-1 if ts < 0 and not stand.parties else ts, state.next_seq)
        if kept is not None and fresh and kept.key == key:
            grid = kept.grid
        else:
            taken = occupied(r, stand, state.meta, ts, day)
            slots = calendar.slots(r, day)
            sizes = range(1, r.online_limit + 1)
            # The whole online floor's sizes, then each area's (a row holds them all: one pass).
            columns = [(n, a) for a in (None, *(x.units for x in r.rooms)) for n in sizes]
            counts = rules.stand_counts(r, stand, state.meta, ts) if r.paced else None
            rows = rules.opens(r, day, floor, taken, None, slots, columns, counts)
            grid = {s.minute: row for s, row in zip(slots, rows, strict=True)}
        if kept is None and len(self._grids) >= DAYS_KEPT:
            self._grids.clear()
        self._grids[day] = _Grid(key, grid, version, minute, state, ts, floor)
        return state, ts, grid

    def view(self, day: date, now: datetime, name: str, *args: Any) -> Applied:
        """A reading operation (board, quote) at `now`, answered as the day stands once
        time's own changes are applied, with nothing written: reading never writes the
        log (the clock's sweep writes what time changed)."""
        if calendar.opening_instant(self.restaurant, day) is None:
            raise ValueError(f"{self.restaurant.name} is closed on {day.isoformat()}")
        with self._lock:
            state = self._load(day)
            stand = copy.deepcopy(state.stand)
        operation = [name, self.op_ts(day, stand, now), *args]
        return Applied(day, None, operation, stand.apply(operation))

    def snapshot(
        self, day: date, now: datetime
    ) -> tuple[HostStand, int, dict[str, dict[str, Any]]]:
        """What a reader draws: a copy of the day's stand with time's own changes applied at
        `now` (nothing written), the log length it reflects, and the booking details by id."""
        with self._lock:
            state = self._load(day)
            stand = copy.deepcopy(state.stand)
            length, meta = state.next_seq, copy.deepcopy(state.meta)
        if self.closed_since(day):  # cancelled by the clock, never no-shows
            for operation in _closing_cancels(stand, self.minute(day, now)):
                stand.apply(operation)
        stand.apply(["board", self.op_ts(day, stand, now)])
        return stand, length, meta

    def length(self, day: date) -> int:
        """How many entries the day's log holds now (it grows with every change)."""
        with self._lock:
            return self._load(day).next_seq

    def time_changes(self, day: date, now: datetime) -> bool:
        """Would time alone change the day at `now` (a no-show, a wait reaching 30 minutes
        or a claim that seats somebody)? Then the clock writes it."""
        with self._lock:
            state = self._load(day)
            stand = copy.deepcopy(state.stand)
        before = _state_key(stand)
        stand.apply(["board", self.op_ts(day, stand, now)])
        return _state_key(stand) != before

    def waiting_after_close(self, day: date, now: datetime) -> list[str]:
        """The walk-ins still waiting on `day` whose service has closed by `now`: walk-ins
        are taken only while a service is open, and its waitlist ends with it, so they are
        nobody's to seat any more. Oldest first."""
        r = self.restaurant
        opening = calendar.opening_instant(r, day)
        if opening is None:
            return []
        with self._lock:
            queue = self._load(day).stand.queue()
        over = []
        # Every write asks this of the whole queue: the close of the service a party joined
        # is worked out once per arrival minute, not once per party (at 1,000 waiting, the
        # zone arithmetic per party was 190 ms of every write).
        closings: dict[int, datetime | None] = {}
        between: bool | None = None  # no service runs at `now`: asked once, when needed
        for party in queue:
            if party.arrival not in closings:
                joined = opening + timedelta(minutes=party.arrival)
                closings[party.arrival] = calendar.service_closing(r, day, joined)
            closing = closings[party.arrival]
            # No service of the day holds its arrival (the hours were changed by a reload
            # since): over once no service is open, not while one is.
            if closing is None:
                if between is None:
                    between = calendar.in_service(r, now) is None
                closing = now if between else None
            if closing is not None and closing <= now:
                over.append(party.id)
        return over

    def close_queue(self, day: date, now: datetime) -> int:
        """Take `waiting_after_close` off the waitlist; how many. Each `leave` is written at
        the log's last minute, not `now`: an operation runs the seating pass first, and at a
        later minute it could seat the very parties being taken off (a wait reaching 30
        minutes, a no-show's table), long after they went. At the last minute that pass
        has run already and seats nobody."""
        # Newest first: a party's leave runs a pass that could seat whoever is behind it
        # (a large party's claim lifted), never one ahead of it (seed Part 3 rule 4: a claim
        # holds up only the parties after the claimant). So each pass seats nobody.
        written = 0
        for party in reversed(self.waiting_after_close(day, now)):

            def leave(stand: HostStand, ts: int, _in: InForce, party: str = party) -> list[Any]:
                return ["leave", ts if stand.last_ts is None else stand.last_ts, party]

            done = self._apply(day, now, leave, {"source": "clock"}, None, False)
            written += isinstance(done, Applied) and done.seq is not None
        return written

    def closed_since(self, day: date) -> bool:
        """Is `day` closed by the running hours while its log counts from an opening (a
        reload closed it after bookings were taken: calendar.log_opening)?"""
        r = self.restaurant
        return calendar.opening_instant(r, day) is None and calendar.log_opening(r, day) is not None

    def cancel_closed(self, day: date, now: datetime) -> int:
        """On a day closed since its bookings were taken, cancel each one still booked whose
        hold has ended by `now`, as the restaurant's cancellation (meta source "clock");
        how many. The guests did not fail to come: the restaurant was closed, so such a
        booking is never a no-show. Written like any cancel (the host's list and
        GetBookingStatus say cancelled, partners are told through the outbox), each at the
        last minute of its hold, when it still holds: at its end any operation's expiry
        would make it a no-show. Every written operation expires the bookings whose hold it
        is past, and this runs before any other on the day, so that minute is never below
        the log's last one. Arrived guests are at the door: theirs is the host's to settle."""
        if not self.closed_since(day):
            return 0
        with self._lock:
            stand = self._load(day).stand
            due = _closing_cancels(stand, self.minute(day, now))
        reason = f"{self.restaurant.name} is closed on {day.isoformat()}"
        written = 0
        for operation in due:

            def cancel(
                stand: HostStand, ts: int, _in: InForce, op: list[Any] = operation
            ) -> list[Any] | Refused:
                if stand.last_ts is not None and stand.last_ts > op[1]:
                    return Refused(CLOSED, reason)  # written meanwhile: no longer ours
                return op

            meta = {"source": "clock", "reason": f"closed: {reason}"}
            done = self._apply(day, now, cancel, meta, None, False)
            if isinstance(done, Applied) and done.seq is not None:
                written += 1
                self._tell("cancel", str(operation[2]), done, CANCELLED)
        return written

    def settled(self, day: date) -> datetime | None:
        """When time alone has done all it can to `day` by its hours (UTC): the last close,
        or the end of the hold of a booking at the last seating when that is later (a last
        seating at or near the close holds its table past it). None when closed."""
        r = self.restaurant
        closing = calendar.closing_instant(r, day)
        told = calendar.slots(r, day)
        if closing is None or not told:
            return closing
        last_hold = told[-1].local + timedelta(minutes=HOLD_AFTER_MINUTES)
        return max(closing, last_hold.astimezone(UTC))

    def left_behind(self, first: date, last: date, now: datetime) -> list[tuple[date, datetime]]:
        """Past days, first..last, whose log never said what time made of them: a booking
        whose hold ended, never marked a no-show (the server was down then). Each with the
        instant it is judged as of, when the clock would have written it: its close, or
        its last booking's hold's end when later (a booking at a late close is held past
        it); a day whose last hold ends after `now` is left to the clock's sweep. One
        folded read of the store for the whole range, no replay."""
        r = self.restaurant
        out: list[tuple[date, datetime]] = []
        for day, booked in sorted(self.store.booked(r.merchant_id, first, last).items()):
            closing = calendar.closing_instant(r, day)
            opening = calendar.opening_instant(r, day)
            if closing is None or opening is None:
                continue
            holds = [b.at for b in booked.reservations.values() if not b.arrived]
            judged = closing
            if holds:
                last_hold = opening + timedelta(minutes=max(holds) + HOLD_AFTER_MINUTES)
                judged = max(closing, last_hold)
            if judged > now:
                continue
            # The fold's own rule: fewer still held then than the log last said.
            held = booked.reservations if booked.last_ts is None else booked.by_id(booked.last_ts)
            if len(booked.by_id(self.minute(day, judged))) < len(held):
                out.append((day, judged))
        return out

    def availability_key(self, day: date, now: datetime) -> int:
        """A fingerprint of the day's open spots at `now`: it moves when time alone changes
        availability (a party past its turn keeps its table until now + overstay)."""
        return hash(tuple(self.rows(day, now)))

    def tell_partners(self, day: date) -> bool:
        """Queue an availability replace of `day` for the partners (time moved it)."""
        if self.notifier is None:
            return False
        messages = self.notifier.replaces(self.restaurant, day, time.time())
        if messages:
            self.store.append_all([], outbox=messages)
        return bool(messages)

    def wait_past_close(self, day: date, now: datetime, minutes: int) -> datetime | None:
        """The close of `day`'s service running at `now` when a wait of `minutes` from now
        reaches it (the waitlist ends with its service: nobody is seated after the close,
        so such a wait is no estimate), else None."""
        closing = calendar.service_closing(self.restaurant, day, now)
        if closing is not None and now + timedelta(minutes=minutes) >= closing:
            return closing
        return None

    def own_quote(self, day: date, now: datetime, party_id: str, size: int) -> int:
        """The quote of a waiting party where it stands at `now` (`quote_ahead_of`), on a
        copy of the day: nothing changes, nothing is written."""
        with self._lock:
            stand = copy.deepcopy(self._load(day).stand)
        return quote_ahead_of(stand, self.op_ts(day, stand, now), party_id, size)

    def peek(self, day: date, now: datetime, operations: Sequence[list[Any]]) -> list[Result]:
        """Results of operations at `now` on a copy of the day: nothing changes, nothing is
        written (quotes for wait estimates must not seat anyone in the real log)."""
        with self._lock:
            state = self._load(day)
            stand = copy.deepcopy(state.stand)
        ts = self.op_ts(day, stand, now)
        return [stand.apply([op[0], ts, *op[1:]]) for op in operations]

    def move(
        self,
        old_day: date,
        old_reservation: str,
        new_day: date,
        slot: Slot,
        party_size: int,
        now: datetime,
        new_reservation: str,
        meta: dict[str, Any] | None = None,
        put: Callable[[list[Any]], Sequence[Remember]] | None = None,
        area: str | None = None,
        *,
        host: bool = False,
        over_pacing: bool = False,
        check: Check | None = None,
        remember: Callable[[], Sequence[Remember]] | None = None,
    ) -> Applied | Refused:
        """Cancel a booking and book its party again elsewhere (within `area` when named),
        atomically: both entries (one log or two) are appended in one transaction, or
        nothing is written. The new booking follows the rules of `book` (a partner's by
        default, the host's with `host`); `check` as there. `remember()` gives records
        inserted with the entries (DuplicateKey propagates), asked after `check`."""
        units = area_units(self.restaurant, area)
        if isinstance(units, Refused):
            self._tell("move", new_reservation, units, BOOKED)
            return units
        outcome = self._move(
            old_day, old_reservation, new_day, slot, party_size, now, new_reservation, meta, put,
            units, (host, over_pacing), check, remember,
        )  # fmt: skip
        if _onto_removed_table(outcome):  # chosen again among the units in force, as in `book`
            outcome = self._move(
                old_day, old_reservation, new_day, slot, party_size, now, new_reservation, meta,
                put, self._in_force(units), (host, over_pacing), check, remember,
            )  # fmt: skip
        self._tell("move", new_reservation, outcome, BOOKED)
        return outcome

    def _move(
        self,
        old_day: date,
        old_reservation: str,
        new_day: date,
        slot: Slot,
        party_size: int,
        now: datetime,
        new_reservation: str,
        meta: dict[str, Any] | None,
        put: Callable[[list[Any]], Sequence[Remember]] | None,
        units: AreaUnits = None,
        rules_of: tuple[bool, bool] = (False, False),
        check: Check | None = None,
        remember: Callable[[], Sequence[Remember]] | None = None,
    ) -> Applied | Refused:
        r = self.restaurant
        if not 1 <= party_size <= r.max_party_size:
            return Refused(BAD_PARTY_SIZE, f"party size must be 1..{r.max_party_size}")
        # A booking moves off a day closed since it was taken, never onto a closed one.
        for day, opening in ((old_day, calendar.log_opening), (new_day, calendar.opening_instant)):
            if opening(r, day) is None:
                return Refused(CLOSED, f"{r.name} is closed on {day.isoformat()}")
        for day in dict.fromkeys((old_day, new_day)):  # as `apply` does: the cancel's pass
            self._time_first(day, now)
        with self._lock:
            for _ in range(MAX_ATTEMPTS):
                outcome = self._try_move(
                    old_day, old_reservation, new_day, slot, party_size, now, new_reservation,
                    dict(meta or {}), put, units, rules_of, check=check, remember=remember,
                )  # fmt: skip
                if outcome is not None:
                    return outcome
                self.events.conflict(r.merchant_id)
        raise ConcurrencyConflict(f"{r.merchant_id}: move gave up after {MAX_ATTEMPTS} attempts")

    def _try_move(
        self,
        old_day: date,
        old_reservation: str,
        new_day: date,
        slot: Slot,
        party_size: int,
        now: datetime,
        new_reservation: str,
        meta: dict[str, Any],
        put: Callable[[list[Any]], Sequence[Remember]] | None,
        units: AreaUnits = None,
        rules_of: tuple[bool, bool] = (False, False),
        chooser: Chooser | None = None,
        check: Check | None = None,
        remember: Callable[[], Sequence[Remember]] | None = None,
    ) -> Applied | Refused | None:
        """One optimistic attempt; None when another writer got there first. `chooser`,
        when given, picks the new unit instead of the booking rules (`rehome`); `check`
        is asked first, as in `book` (its reads may bring these days up to a later write:
        the seqs are read before it, so the append then loses and the attempt is redone)."""
        r = self.restaurant
        [old, new], in_force = self._for_write(old_day, new_day)

        def forget() -> None:
            self._days.pop(old_day, None)
            self._days.pop(new_day, None)

        old_seq, new_seq = old.next_seq, new.next_seq
        old_lacking = frozenset[str]()
        if old_day != new_day:  # the passes seat at units in force
            old_lacking = self._on_floor_in_force(old_day, old.stand, in_force)
        lacking = self._on_floor_in_force(new_day, new.stand, in_force)
        refused = check() if check is not None else None
        if refused is not None:
            return refused
        old_before, new_before = _booked_ids(old.stand), _booked_ids(new.stand)
        was = old.stand.book.get(old_reservation)
        # Guests already at the door stay arrived when their booking changes on its own day
        # (one more guest, another time): else they would turn into a no-show while there.
        arrived = was is not None and was.arrived and old_day == new_day
        # The guest's details (name, phone, notes...) go with the booking, whoever changes it.
        carried = {k: v for k, v in old.meta.get(old_reservation, {}).items() if k not in _ASKED}
        cancel = ["cancel", self.op_ts(old_day, old.stand, now), old_reservation]
        cancelled = old.stand.apply(cancel)
        if isinstance(cancelled, Rejected):
            forget()
            return Refused(cancelled.code, f"the booking cannot be moved: {cancelled.code}")
        ts = self.op_ts(new_day, new.stand, now)
        host, over_pacing = rules_of
        if chooser is not None:
            chosen = chooser(new.stand, new.meta, ts)
        else:
            chosen = self._choose(new_day, new.stand, new.meta, slot, party_size, now, ts,
                                  in_force, host=host, over_pacing=over_pacing,
                                  units=units)  # fmt: skip
        if isinstance(chosen, Refused):
            if chooser is not None:
                forget()
                return chosen
            if host:  # on the day as it would be with the booking moved away from its time

                def takes(other: Slot) -> bool:
                    again = self._choose(
                        new_day, new.stand, new.meta, other, party_size, now, ts, in_force,
                        host=True, over_pacing=over_pacing, units=units,
                    )  # fmt: skip
                    return not isinstance(again, Refused)

                chosen = self._offer(chosen, new_day, slot, party_size, takes)
            forget()
            return chosen
        unit, beyond = chosen
        if unit in lacking:  # chosen again among the units in force (`move`)
            forget()
            return removed_refusal([unit])
        if beyond:
            meta = {**meta, "over_pacing": True}
        reserve = ["reserve", ts, new_reservation, unit, slot.minute]
        reserved = new.stand.apply(reserve)
        if isinstance(reserved, Rejected):  # availability and the engine disagree: a bug
            forget()
            return Refused(reserved.code, f"the engine refused the move: {reserved.code}")
        gone = self._onto_removed(reserve, {}, None, in_force)
        if gone is not None:
            forget()
            return gone
        entries = [(reserve, reserved)]
        if arrived:
            entries.append((arrive := ["arrive", ts, new_reservation], new.stand.apply(arrive)))
        stamp = self._received_at([(old, old_lacking), (new, lacking)], now, in_force)
        details = {**carried, "party_size": party_size, **meta}
        # Who asked is logged with both halves: a partner is not told of its own change.
        who: dict[str, Any] = {k: meta[k] for k in ("source", "partner") if k in meta}
        cancel_entry = NewEntry(
            cancel, json_result(cancelled), stamp, {"moved_to": new_reservation, **who}
        )
        new_entries = [NewEntry(op, json_result(res), stamp, details) for op, res in entries]
        if old_day == new_day:
            appends = [LogAppend(r.merchant_id, old_day, old_seq, [cancel_entry, *new_entries])]
        else:
            appends = [
                LogAppend(r.merchant_id, old_day, old_seq, [cancel_entry]),
                LogAppend(r.merchant_id, new_day, new_seq, new_entries),
            ]
        new.remember(reserve, details)  # before the messages: they read the booking's details
        if old_day == new_day:
            outbox = self._outbox(
                old_day, old, old_before, [(cancel, cancel_entry.meta), (reserve, details)], now
            )
        else:
            outbox = self._outbox(old_day, old, old_before, [(cancel, cancel_entry.meta)], now)
            outbox += self._outbox(new_day, new, new_before, [(reserve, details)], now)
            outbox += self._moved(old_day, old, new_day, new, cancel, cancel_entry.meta, now)
        try:
            self.store.append_all(
                appends,
                remember=remember() if remember is not None else (),
                put=put(reserve) if put is not None else (),
                outbox=outbox,
            )
        except ConcurrencyConflict:
            forget()
            return None
        except BaseException:
            forget()
            raise
        if old_day == new_day:
            old.next_seq = old_seq + 1 + len(new_entries)
        else:
            old.next_seq, new.next_seq = old_seq + 1, new_seq + len(new_entries)
        return Applied(new_day, new.next_seq - len(new_entries), reserve, reserved)

    def rehome(
        self,
        day: date,
        reservation_id: str,
        new_reservation: str,
        slot: Slot,
        party_size: int,
        now: datetime,
        meta: dict[str, Any],
        put: Callable[[list[Any]], Sequence[Remember]],
        chooser: Chooser,
    ) -> Applied | Refused:
        """Book a still-booked reservation again at its own time on the unit `chooser`
        picks on the day as it stands with the reservation cancelled (a reload's, for a
        unit the new floor no longer has: config_reload), as a move within its day: the
        cancel and the new reserve in one append, the guest's details carried over, and
        partners told only what they see changed (its time and size do not). None of a
        new booking's rules apply (past, horizon, pacing): it was taken already."""
        self._time_first(day, now)  # as `move` does: the cancel's pass
        with self._lock:
            for _ in range(MAX_ATTEMPTS):
                outcome = self._try_move(
                    day, reservation_id, day, slot, party_size, now, new_reservation, dict(meta),
                    put, chooser=chooser,
                )  # fmt: skip
                if outcome is not None:
                    self._tell("move", new_reservation, outcome, BOOKED)
                    return outcome
                self.events.conflict(self.restaurant.merchant_id)
        raise ConcurrencyConflict(
            f"{self.restaurant.merchant_id}: re-homing gave up after {MAX_ATTEMPTS} attempts"
        )

    def working_copy(self, day: date) -> tuple[HostStand, dict[str, dict[str, Any]]]:
        """A copy of the day's stand and booking details as its log stands now, to try
        operations on (nothing of it is written)."""
        with self._lock:
            state = self._load(day)
            return copy.deepcopy(state.stand), copy.deepcopy(state.meta)

    # -- availability -------------------------------------------------------------

    def cells(
        self, day: date, now: datetime, sizes: range | None = None, area: str | None = None
    ) -> list[Cell]:
        """Every slot of the day x every party size the floor (the area, when named) can
        seat (spots_total > 0).

        Slots that have started are 0 open: a booking needs `at` after the server's minute.
        """
        r = self.restaurant
        slots = calendar.slots(r, day)
        by_start = {s.start_sec: s for s in slots}
        return [
            Cell(by_start[start], n, spots_open, spots_total)
            for start, n, spots_open, spots_total in self.rows(day, now, sizes, slots, area)
        ]

    def rows(
        self,
        day: date,
        now: datetime,
        sizes: range | None = None,
        slots: list[Slot] | None = None,
        area: str | None = None,
        *,
        host: bool = False,
        paced: bool = True,
    ) -> list[tuple[int, int, int, int]]:
        """`cells` as plain (start_sec, party_size, open, total) rows: what partners see
        (the online floor, parties up to max_online_party_size, pacing), or with `host`
        the whole floor up to max_party_size (still paced: the host is asked to say so;
        `paced` False: what the floor can seat, pacing aside).
        With `area`, the area's units of that floor; an area the restaurant does not have
        has no rows."""
        r = self.restaurant
        if not host and paced and sizes is None and slots is None:
            return self._partner_rows(day, now, area)
        slots = calendar.slots(r, day) if slots is None else slots
        units = area_units(r, area)
        if not slots or isinstance(units, Refused):
            return []
        limit = rules.party_limit(r, host)
        sizes = range(sizes.start, min(sizes.stop, limit + 1)) if sizes else range(1, limit + 1)
        ts = self.minute(day, now)
        with self._lock:
            floor = self.offered_floor(host)
            state = self._load(day)
            taken = occupied(r, state.stand, state.meta, ts, day)
            counts = rules.stand_counts(r, state.stand, state.meta, ts) if r.paced else None
        if not paced:
            counts = None
        opens = rules.opens(r, day, floor, taken, None, slots, [(n, units) for n in sizes], counts)
        totals = [spots_total(floor, n, units) for n in sizes]
        by_minute = None
        if calendar.within_horizon(r, day, now):
            by_minute = {slot.minute: row for slot, row in zip(slots, opens, strict=True)}
        now_sec = int(now.timestamp())
        earliest = earliest_start(r, now)
        return _open_rows(slots, sizes, totals, by_minute, 0, ts, now_sec, earliest)

    def _partner_rows(
        self, day: date, now: datetime, area: str | None
    ) -> list[tuple[int, int, int, int]]:
        """`rows` as partners see them, read off the day's lookup grid (`_read_day`): a replace
        sent to partners and the lookups around it work the day out once between them, and
        tell the same (a slot at or before the op ts is not open, as a lookup says)."""
        r = self.restaurant
        slots = calendar.slots(r, day)
        units = area_units(r, area)
        if not slots or isinstance(units, Refused):
            return []
        width = r.online_limit
        place = next((i + 1 for i, a in enumerate(r.rooms) if a.id == area), 0)
        sizes = range(1, width + 1)
        now_sec = int(now.timestamp())
        earliest = earliest_start(r, now)
        last_day = calendar.last_bookable_day(r, now)
        with self._lock:  # None beyond the horizon: nothing open there yet
            version = self.store.log_version()
            floor = self.offered_floor()
            read = self._read_day(day, now, now.timestamp(), version, last_day, floor)
        totals = [spots_total(floor, n, units) for n in sizes]
        grid, ts = (read[2], read[1]) if read is not None else (None, 0)
        return _open_rows(slots, sizes, totals, grid, width * place, ts, now_sec, earliest)

    def day_block(
        self,
        day: date,
        now: datetime,
        sizes: Sequence[int | Column],
        booked: BookedDay | None = None,
        floor: FloorPlan | None = None,
    ) -> tuple[list[int], list[list[int]]]:
        """The day's future slots as (starts, spots_open per slot and size): the export's
        block, with no per-cell objects. A size may be a (size, area units) column.
        `booked` is the day's log folded by the store (the export asks for all its days at
        once); without it the store is asked for this day. `floor`: the offered floor the
        caller read for all its days (the export reads the floor in force once per
        restaurant, not once per day); without it, read now (`offered_floor`)."""
        r = self.restaurant
        # Each day is read once: its slots' times only, no Slot objects (local times).
        starts, minutes, services = calendar.slot_times(r, day)
        if not starts:
            return [], []
        ts = self.minute(day, now)
        with self._lock:
            if floor is None:
                floor = self.offered_floor()
            # A day whose date has come has a live floor (seated parties, arrived guests)
            # that only the replay knows, even before it opens (the host may seat a party
            # early); a day ahead is its booked reservations, folded by the store.
            if day in self._days or ts >= 0 or day <= now.astimezone(r.tz).date():
                state = self._load(day)
                taken = occupied(r, state.stand, state.meta, ts, day)
                counts = rules.stand_counts(r, state.stand, state.meta, ts) if r.paced else None
                opens = rules.opens_at(r, day, floor, taken, None, minutes, services, sizes, counts)
            else:  # an export reads each day once: fold the log, replay nothing
                if booked is None:
                    booked = self.store.booked(r.merchant_id, day, day).get(day, BookedDay())
                units = folded(r, booked, ts, day)
                counts = rules.folded_counts(r, booked, ts) if r.paced else None
                opens = rules.opens_at(r, day, floor, None, units, minutes, services, sizes, counts)
        now_sec = int(now.timestamp())
        earliest = earliest_start(r, now)
        if r.min_advance_minutes:  # too close to book: published, 0 open
            opens = [[0] * len(row) if starts[i] < earliest else row for i, row in enumerate(opens)]
        # Slots come in order (start_sec and minute increasing): if the first is still to
        # come, so are all the others.
        if starts[0] > now_sec and minutes[0] > ts:
            return starts, opens
        times = enumerate(zip(starts, minutes, strict=True))
        keep = [i for i, (s, m) in times if s > now_sec and m > ts]
        return [starts[i] for i in keep], [opens[i] for i in keep]

    def reservations(self, day: date) -> list[tuple[Reservation, dict[str, Any]]]:
        """The day's reservations with their stored booking details, in booking order."""
        with self._lock:
            state = self._load(day)
            return [(r, dict(state.meta.get(r.id, {}))) for r in state.stand.reservations()]


def from_partner(meta: Mapping[str, Any]) -> bool:
    """Whether a walk-in with these details is a partner's waitlist entry."""
    return meta.get("source") == "partner"


def partners_waiting(stand: HostStand, known: Mapping[str, Mapping[str, Any]]) -> int:
    """How many of `stand`'s waiting parties are partners' entries (`known`: the day's
    details by party id)."""
    return sum(1 for pid in stand.waiting if from_partner(known.get(pid, {})))


def party_count(n: int) -> str:
    """ "1 party", "24 parties": how many wait, in a message to the host."""
    return "1 party" if n == 1 else f"{n} parties"


def guests(n: int) -> str:
    """ "1 guest", "4 guests": a party's size in a message to the host."""
    return f"{n} guest" if n == 1 else f"{n} guests"


def _caps(max_covers: int | None, max_parties: int | None) -> str:
    caps = []
    if max_covers is not None:
        caps.append(guests(max_covers))
    if max_parties is not None:
        caps.append(f"{max_parties} booking" if max_parties == 1 else f"{max_parties} bookings")
    return " and ".join(caps)
