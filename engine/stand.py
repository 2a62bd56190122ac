"""The host stand of one service day: a fold over its operation log.

`HostStand.apply` takes one operation and returns its result; applying a log one
operation at a time gives exactly what `run` gives for the whole list. Every
operation with a valid shape first expires no-shows, then runs the seating pass,
and only then checks its own arguments (PRODUCT.md section 1).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

from engine import config, errors
from engine.errors import Rejected
from engine.floor import MARLOWES, FloorPlan
from engine.holds import Reservation, ReservationBook, ReservationStatus
from engine.quotes import quote
from engine.seating import Seating, Waiting, seating_pass

Result = Any  # True | int | str | list[str] | dict | Rejected: JSON values at the boundary

# Number of elements of each operation, its name and `ts` included. The seed names the
# first six; cancel, leave, seat, move and arrive are PRODUCT.md 1's extensions, so they
# are operations (not "unknown operation") even on the seed's floor, where a log of only
# the seed's operations gives exactly the seed's results.
ARITY = {
    "walk_in": 4,
    "free": 3,
    "board": 2,
    "reserve": 5,
    "check_in": 3,
    "quote": 3,
    "cancel": 3,
    "leave": 3,
    "seat": 4,
    "move": 4,
    "arrive": 3,
}


class PartyState(StrEnum):
    WAITING = "waiting"
    SEATED = "seated"
    GONE = "gone"  # its table was freed
    LEFT = "left"  # left the queue without being seated


@dataclass
class Party:
    id: str
    size: int | None  # None for a checked-in reservation (the engine is not told its size)
    arrival: int
    state: PartyState = PartyState.WAITING
    tables: tuple[str, ...] = ()
    seated_at: int | None = None
    ended_at: int | None = None  # when its table was freed or it left the queue
    reservation: bool = False


@dataclass(frozen=True)
class Sitting:
    """A seated party as the service reads the live floor (a copy: changing it changes nothing)."""

    party_id: str
    tables: tuple[str, ...]
    seated_at: int
    size: int | None  # None for a checked-in reservation
    reservation: bool


def _copy_party(party: Party) -> Party:
    """`copy.copy(party)` without its generic protocol (a reduce and a reconstruct per
    party): every read copies every party of the day, 50 ms at 5,000 waiting."""
    new = object.__new__(Party)
    new.__dict__.update(party.__dict__)
    return new


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_id(value: object) -> bool:
    return isinstance(value, str) and value != ""


def unit_name(tables: tuple[str, ...]) -> str:
    return "+".join(tables)


class HostStand:
    """State of one service day, rebuilt by applying its operations in order."""

    def __init__(self, floor: FloorPlan = MARLOWES) -> None:
        self.floor = floor
        self.last_ts: int | None = None
        self.parties: dict[str, Party] = {}
        self.waiting: dict[str, Party] = {}  # insertion order is arrival order
        self.book = ReservationBook()
        self.occupant: dict[str, str | None] = {t.id: None for t in floor.tables}
        self._free: set[str] = {t.id for t in floor.tables}
        # The parties the clock seated, told to nobody (an operation's pass before its own
        # work: a no-show's table or a long wait gave them one; a tap's own seatings are in
        # its answer): (ts, party id, unit, the reservations that became no-shows then).
        self.by_clock: list[tuple[int, str, str, tuple[str, ...]]] = []

    def __deepcopy__(self, memo: dict[int, object]) -> HostStand:
        """An independent copy (what a board read or a tablet's snapshot works on), made
        field by field: the floor plan is a shared value, a Party holds only immutable
        values (a shallow copy of each is a deep one, and `waiting` names the same copies
        as `parties`). An attribute this does not
        know is deep-copied as `copy.deepcopy` would (tests hold the two to the same)."""
        new = HostStand.__new__(HostStand)
        memo[id(self)] = new
        parties = {k: _copy_party(p) for k, p in self.parties.items()}
        for name, value in vars(self).items():
            if name == "parties":
                value = parties
            elif name == "waiting":
                value = {
                    k: parties[k] if self.parties.get(k) is p else _copy_party(p)
                    for k, p in value.items()
                }
            elif name in ("occupant", "_free", "by_clock"):  # by_clock: tuples of values
                value = value.copy()
            elif name not in ("floor", "last_ts"):
                value = copy.deepcopy(value, memo)
            setattr(new, name, value)
        return new

    # -- the fold ---------------------------------------------------------------

    def apply(self, operation: object) -> Result:
        """Apply one operation; a rejection comes back as a `Rejected` value."""
        rejected = self.check_shape(operation)
        if rejected is not None:
            return rejected
        assert isinstance(operation, list)
        name, ts = operation[0], operation[1]
        self.last_ts = ts
        expired = self.book.expire(ts)  # no-shows end before the pass of the same operation
        seated = self._seating_pass(ts)
        for seating in seated:
            party = cast(Party, seating.party)
            gone = tuple(r.id for r in expired)
            self.by_clock.append((ts, party.id, unit_name(seating.tables), gone))
        return _HANDLERS[name](self, ts, seated, *operation[2:])

    def check_shape(self, operation: object) -> Rejected | None:
        """The rejection `apply` gives before doing anything, or None for a valid shape."""
        if not isinstance(operation, list) or not operation:
            return Rejected(errors.UNKNOWN_OPERATION)
        name = operation[0]
        if not isinstance(name, str) or name not in ARITY:
            return Rejected(errors.UNKNOWN_OPERATION)
        if len(operation) != ARITY[name]:
            return Rejected(errors.INVALID_ARGUMENTS)
        ts = operation[1]
        if not is_int(ts) or (self.last_ts is not None and ts < self.last_ts):
            return Rejected(errors.INVALID_ARGUMENTS)
        return None

    # -- state questions (for availability and the service) ----------------------

    def usable_tables(self, ts: int) -> set[str]:
        """Tables the pass may use at `ts`: nobody sitting there and not held."""
        return {t for t in self._free if self.book.holder(t, ts) is None}

    def next_booked(self, tables: set[str]) -> dict[str, int]:
        """Table -> earliest `at` of its still-booked reservations, for protection (empty
        when the floor does not protect reservations: the pass would not read it)."""
        if not self.floor.protect_reservations:
            return {}
        found = {t: self.book.next_at(t) for t in tables}
        return {t: at for t, at in found.items() if at is not None}

    def queue(self) -> list[Party]:
        return list(self.waiting.values())

    def seated(self) -> dict[str, Party]:
        """Table id -> the party sitting there (tables nobody sits at are left out)."""
        return {t: self.parties[p] for t, p in self.occupant.items() if p is not None}

    def sittings(self) -> list[Sitting]:
        """Every seated party once (a combined party is one sitting), in the order they came in."""
        return [
            Sitting(p.id, p.tables, p.seated_at, p.size, p.reservation)
            for p in self.parties.values()
            if p.state is PartyState.SEATED and p.seated_at is not None
        ]

    def reservations(self) -> list[Reservation]:
        """Every reservation of the day in booking order; `arrived` says its guests are here."""
        return list(self.book.by_id.values())

    def id_used(self, any_id: str) -> bool:
        return any_id in self.parties or any_id in self.book.by_id

    def _queue_view(self) -> list[Waiting]:
        # Only walk-ins ever wait, and a walk-in always has a size.
        return cast(list[Waiting], list(self.waiting.values()))

    # -- the pass ---------------------------------------------------------------

    def _seating_pass(self, ts: int) -> list[Seating]:
        if not self.waiting or not self._free:
            return []
        usable = self.usable_tables(ts)
        seatings = seating_pass(
            ts, self._queue_view(), usable, self.floor, self.next_booked(usable)
        )
        for seating in seatings:
            party = seating.party
            assert isinstance(party, Party)
            del self.waiting[party.id]
            self._sit(party, seating.tables, ts)
        return seatings

    def _sit(self, party: Party, tables: tuple[str, ...], ts: int) -> None:
        party.state = PartyState.SEATED
        party.tables = tables
        party.seated_at = ts
        for table in tables:
            self.occupant[table] = party.id
            self._free.discard(table)

    def _vacate(self, party: Party) -> None:
        for table in party.tables:
            if self.floor.table(table) is None:  # gone from the floor while it sat (refloor)
                del self.occupant[table]
                continue
            self.occupant[table] = None
            self._free.add(table)

    def refloor(self, floor: FloorPlan) -> None:
        """Go on under another floor plan (the restaurant's tables changed during the day;
        not an operation: the service says when, as it replays the log). Later operations
        and passes see `floor`: a table it no longer has leaves the free set and the board
        (a party sitting there keeps it until it is freed), a table it adds joins them."""
        self.floor = floor
        for table_id in list(self.occupant):
            if floor.table(table_id) is None and self.occupant[table_id] is None:
                del self.occupant[table_id]
                self._free.discard(table_id)
        for table in floor.tables:
            if table.id not in self.occupant:
                self.occupant[table.id] = None
                self._free.add(table.id)

    def _busy(self, tables: tuple[str, ...], own: str | None = None) -> bool:
        """Does a party other than `own` sit at any of `tables`?"""
        return any(self.occupant[t] not in (None, own) for t in tables)

    def _too_small(self, party: Party | None, tables: tuple[str, ...]) -> bool:
        """A walk-in larger than the unit (a combo: its capacity). The engine is not told a
        reservation's size, so a reservation is never too large."""
        if party is None or party.size is None:
            return False
        if len(tables) == 1:
            table = self.floor.table(tables[0])
            assert table is not None
            return party.size > table.seats
        combo = self.floor.combo(unit_name(tables))
        assert combo is not None
        return party.size > combo.capacity

    def _unit(self, unit: str) -> tuple[str, ...] | None:
        if self.floor.table(unit) is not None:
            return (unit,)
        combo = self.floor.combo(unit)
        return combo.tables if combo is not None else None

    @staticmethod
    def _seated_list(seatings: list[Seating]) -> list[str]:
        return [f"{s.party.id}@{unit_name(s.tables)}" for s in seatings]  # type: ignore[attr-defined]

    # -- operations -------------------------------------------------------------

    def _walk_in(self, ts: int, seated: list[Seating], party_id: object, size: object) -> Result:
        if not is_id(party_id) or not is_int(size) or not 1 <= size <= self.floor.max_party:  # type: ignore[operator]
            return Rejected(errors.INVALID_ARGUMENTS)
        assert isinstance(party_id, str) and isinstance(size, int)
        if self.id_used(party_id):
            return Rejected(errors.PARTY_EXISTS)
        party = Party(party_id, size, ts)
        self.parties[party_id] = party
        self.waiting[party_id] = party
        self._seating_pass(ts)
        if party.state is PartyState.SEATED:
            return f"seated {unit_name(party.tables)}"
        # The pass only takes parties off the queue, and this one came last: it is last.
        return f"queued {len(self.waiting)}"

    def _free_table(self, ts: int, seated: list[Seating], table_id: object) -> Result:
        if not is_id(table_id):
            return Rejected(errors.INVALID_ARGUMENTS)
        assert isinstance(table_id, str)
        if table_id not in self.occupant:  # the floor's tables, and one gone with a party at it
            return Rejected(errors.UNKNOWN_TABLE)
        party_id = self.occupant[table_id]
        if party_id is None:
            return Rejected(errors.TABLE_NOT_OCCUPIED)
        party = self.parties[party_id]
        self._vacate(party)  # a combined party frees both tables
        party.state = PartyState.GONE
        party.ended_at = ts
        return self._seated_list(seated + self._seating_pass(ts))

    def _board(self, ts: int, seated: list[Seating]) -> Result:
        # A party id may be any non-empty string (the seed), "free" and "held:R1" included:
        # the board then shows it as the text says (the id of the party sitting there),
        # though it reads like a free or held table. Refusing such ids would refuse ids the
        # contract accepts; the service names its own parties and need not use them.
        tables: dict[str, str] = {}
        for table in self.floor.tables:
            party_id = self.occupant[table.id]
            if party_id is not None:
                tables[table.id] = party_id
            else:
                holder = self.book.holder(table.id, ts)
                tables[table.id] = f"held:{holder}" if holder is not None else "free"
        return {"tables": tables, "waiting": list(self.waiting)}

    def _reserve(
        self, ts: int, seated: list[Seating], reservation_id: object, unit: object, at: object
    ) -> Result:
        if not is_id(reservation_id) or not is_id(unit) or not is_int(at):
            return Rejected(errors.INVALID_ARGUMENTS)
        assert isinstance(reservation_id, str) and isinstance(unit, str) and isinstance(at, int)
        tables = self._unit(unit)
        if tables is None:
            return Rejected(errors.UNKNOWN_TABLE)
        if self.id_used(reservation_id):
            return Rejected(errors.PARTY_EXISTS)
        if at <= ts:
            return Rejected(errors.INVALID_TIME)
        if self.book.conflicts(tables, at):
            return Rejected(errors.TABLE_CONFLICT)
        self.book.add(Reservation(reservation_id, unit, tables, at, booked_ts=ts))
        return True

    def _still_booked(self, reservation_id: object) -> Reservation | Rejected:
        """The still-booked reservation an operation names, or why not (the checks of
        check_in, cancel and arrive, in that order: its id, whether it exists, its state)."""
        if not is_id(reservation_id):
            return Rejected(errors.INVALID_ARGUMENTS)
        assert isinstance(reservation_id, str)
        reservation = self.book.get(reservation_id)
        if reservation is None:
            return Rejected(errors.UNKNOWN_RESERVATION)
        if not reservation.still_booked:
            return Rejected(errors.RESERVATION_NOT_ACTIVE)
        return reservation

    def _check_in(self, ts: int, seated: list[Seating], reservation_id: object) -> Result:
        reservation = self._still_booked(reservation_id)
        if isinstance(reservation, Rejected):
            return reservation
        if ts < reservation.at - config.HOLD_BEFORE_MINUTES:
            return Rejected(errors.TOO_EARLY)
        if any(self.occupant[t] is not None for t in reservation.tables):
            return Rejected(errors.TABLE_BUSY)
        self.book.set_status(reservation, ReservationStatus.SEATED, ts)
        party = Party(reservation.id, None, ts, reservation=True)
        self.parties[reservation.id] = party
        self._sit(party, reservation.tables, ts)
        return f"seated {unit_name(reservation.tables)}"

    def _quote(self, ts: int, seated: list[Seating], size: object) -> Result:
        # "It changes nothing" (seed Part 2 rule 6) is the quote's own work: the pass at the
        # start of the operation has run (Part 1 rule 4: every operation of valid shape,
        # as board's does in the seed's Part 1 example), and the quote is of the room after it.
        if not is_int(size) or not 1 <= size <= self.floor.max_party:  # type: ignore[operator]
            return Rejected(errors.INVALID_ARGUMENTS)
        assert isinstance(size, int)
        usable = self.usable_tables(ts)
        return quote(ts, size, self._queue_view(), usable, self.floor, self.next_booked(usable))

    def _cancel(self, ts: int, seated: list[Seating], reservation_id: object) -> Result:
        reservation = self._still_booked(reservation_id)
        if isinstance(reservation, Rejected):
            return reservation
        self.book.set_status(reservation, ReservationStatus.CANCELLED, ts)
        return self._seated_list(seated + self._seating_pass(ts))

    def _leave(self, ts: int, seated: list[Seating], party_id: object) -> Result:
        if not is_id(party_id):
            return Rejected(errors.INVALID_ARGUMENTS)
        assert isinstance(party_id, str)
        party = self.parties.get(party_id)
        if party is None:
            return Rejected(errors.UNKNOWN_PARTY)
        if party.state is not PartyState.WAITING:
            return Rejected(errors.NOT_WAITING)
        del self.waiting[party_id]
        party.state = PartyState.LEFT
        party.ended_at = ts
        return self._seated_list(seated + self._seating_pass(ts))

    # -- the host's hand (PRODUCT.md section 1, extensions) --------------------------------

    def _seat(self, ts: int, seated: list[Seating], any_id: object, unit: object) -> Result:
        """The host seats a waiting party or a still-booked reservation at a unit of their
        choice; holds, roominess, claims and protection do not stop the host."""
        if not is_id(any_id) or not is_id(unit):
            return Rejected(errors.INVALID_ARGUMENTS)
        assert isinstance(any_id, str) and isinstance(unit, str)
        tables = self._unit(unit)
        if tables is None:
            return Rejected(errors.UNKNOWN_TABLE)
        party = self.parties.get(any_id)
        reservation = self.book.get(any_id)
        if party is None and reservation is None:
            return Rejected(errors.UNKNOWN_PARTY)
        waiting = party is not None and party.state is PartyState.WAITING
        booked = party is None and reservation is not None and reservation.still_booked
        if not waiting and not booked:
            return Rejected(errors.NOT_WAITING)
        if self._too_small(party, tables):
            return Rejected(errors.TABLE_TOO_SMALL)
        if self._busy(tables):
            return Rejected(errors.TABLE_BUSY)
        if party is not None:
            del self.waiting[any_id]
        else:
            assert reservation is not None
            self.book.set_status(reservation, ReservationStatus.SEATED, ts)  # its hold ends
            party = Party(any_id, None, ts, reservation=True)
            self.parties[any_id] = party
        self._sit(party, tables, ts)
        after = self._seating_pass(ts)  # a lifted claim can seat others
        return [*self._seated_list(seated), f"{any_id}@{unit}", *self._seated_list(after)]

    def _move(self, ts: int, seated: list[Seating], party_id: object, unit: object) -> Result:
        """A seated party moves to another unit; the tables it leaves are free again."""
        if not is_id(party_id) or not is_id(unit):
            return Rejected(errors.INVALID_ARGUMENTS)
        assert isinstance(party_id, str) and isinstance(unit, str)
        tables = self._unit(unit)
        if tables is None:
            return Rejected(errors.UNKNOWN_TABLE)
        party = self.parties.get(party_id)  # a reservation never checked in is no party yet
        if party is None:
            return Rejected(errors.UNKNOWN_PARTY)
        if party.state is not PartyState.SEATED:
            return Rejected(errors.NOT_SEATED)
        if self._too_small(party, tables):
            return Rejected(errors.TABLE_TOO_SMALL)
        if self._busy(tables, own=party_id):
            return Rejected(errors.TABLE_BUSY)
        seated_at = party.seated_at
        assert seated_at is not None
        self._vacate(party)
        self._sit(party, tables, seated_at)  # the party's meal started when it first sat
        return self._seated_list(seated + self._seating_pass(ts))

    def _arrive(self, ts: int, seated: list[Seating], reservation_id: object) -> Result:
        """The guests of a still-booked reservation are at the door: never a no-show now."""
        reservation = self._still_booked(reservation_id)
        if isinstance(reservation, Rejected):
            return reservation
        self.book.arrive(reservation, ts)
        return True


# Each operation's handler, called with the stand: functions of the class, not a stand's own
# bound methods (a stand holding those would be a reference cycle, freed only when the
# cyclic garbage collector finds it: an export replays a day of every restaurant).
_HANDLERS: dict[str, Callable[..., Result]] = {
    "walk_in": HostStand._walk_in,
    "free": HostStand._free_table,
    "board": HostStand._board,
    "reserve": HostStand._reserve,
    "check_in": HostStand._check_in,
    "quote": HostStand._quote,
    "cancel": HostStand._cancel,
    "leave": HostStand._leave,
    "seat": HostStand._seat,
    "move": HostStand._move,
    "arrive": HostStand._arrive,
}


def run(operations: object, floor: FloorPlan = MARLOWES) -> list[Result]:
    """Replay `operations` against a fresh host stand; one result per operation.

    Rejections are written as "error: <code>" strings; nothing is raised for any input.
    """
    if not isinstance(operations, list):
        return []
    stand = HostStand(floor)
    results: list[Result] = []
    for operation in operations:
        result = stand.apply(operation)
        results.append(str(result) if isinstance(result, Rejected) else result)
    return results
