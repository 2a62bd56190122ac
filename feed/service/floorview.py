"""The host's floor as one document: every table with who sits there and for how long,
holds, joined tables, the waitlist with the quotes given, the day's reservations and the
open spots of the slots still to come.

A read model: it reads the day's log and the clock and writes nothing (PRODUCT.md: reading
never writes). It is worked out once per (day, log length, minute) and shared by tablets.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, cast

from engine import HostStand, config
from engine.floor import FloorPlan
from engine.holds import Reservation, ReservationStatus
from engine.quotes import queued_quote
from engine.seating import seating_pass
from engine.stand import unit_name
from feed.service.days import DayBook, area_id, one_per_booking
from feed.service.floors import refloor_before
from feed.venue import calendar
from feed.venue.restaurant import Restaurant
from store.log import LogEntry

# The operations whose result lists the parties the seating pass sat ("pid@unit").
PASS_OPERATIONS = ("free", "cancel", "leave", "move", "seat")
# (log length, minute, configuration): the floor changes only when one of them does
Stamp = tuple[int, int, int]
VIEWS_KEPT = 16  # documents kept per restaurant (days x stamps; tablets all ask the latest)


def status_word(reservation: Reservation) -> str:
    """A reservation's state in the host's words: booked, arrived, seated, no-show, cancelled."""
    if reservation.status is ReservationStatus.BOOKED and reservation.arrived:
        return "arrived"
    return str(reservation.status).replace("_", "-")


@dataclass
class _QuotesGiven:
    """The quote each queued walk-in was given, by replaying the day's log: the quote for
    its size at its minute, just before it joined (after its operation's own pass)."""

    stand: HostStand
    next_seq: int = 0
    given: dict[str, int] = field(default_factory=dict)
    # (party id, unit, minute) of each party the seating pass sat after a free, cancel,
    # leave, move or seat, as the entry's result says: nobody's tap but that operation's
    # own answered it (a partner's cancel, another tablet's free).
    passed: list[tuple[str, str, int]] = field(default_factory=list)
    generation: int = 0  # the DayBook's configuration it was replayed under
    # When tables a reload removed leave the floor, as in the day's own replay (days._Day).
    switches: list[tuple[float, FloorPlan]] = field(default_factory=list)
    # The stand's waiting parties by size, kept with it: a quote is worked out from them
    # without walking the queue (the first view after a start replays every walk-in).
    waiting: Counter[int] = field(default_factory=Counter)

    def catch_up(self, book: DayBook, day: date) -> None:
        merchant = book.restaurant.merchant_id
        self.take(book.store.entries(merchant, day, after_seq=self.next_seq - 1))

    def take(self, entries: Iterable[LogEntry]) -> None:
        for entry in entries:
            refloor_before(self.stand, self.switches, entry.received_at)
            op = entry.operation
            if op and op[0] in PASS_OPERATIONS and isinstance(entry.result, list):
                for item in entry.result:
                    pid, _, unit = str(item).partition("@")
                    if not (op[0] == "seat" and len(op) > 2 and pid == op[2]):  # its own
                        self.passed.append((pid, unit, int(str(op[1]))))
            before = len(self.stand.waiting)
            result = self.stand.apply(op)
            if (
                op
                and op[0] == "walk_in"
                and str(entry.result).startswith("queued")
                and isinstance(result, str)
                and result.startswith("queued")
            ):
                self._joined(str(op[2]), int(str(op[3])), before)
            elif len(self.stand.waiting) != before:  # only a walk-in joins: some have gone
                self._recount()
            self.next_seq = entry.seq + 1
        refloor_before(self.stand, self.switches, None)

    def _joined(self, party_id: str, size: int, before: int) -> None:
        """A walk-in that joined the queue: its quote, from the parties waiting when it was
        asked (its operation's pass had run). The pass did not seat it, so that quote was
        not 0 (quotes.quote: the same pass with it last); a pass that seated parties ahead
        of it (the queue is not one longer) is counted again, each a walk of the queue as
        the pass's own."""
        if len(self.stand.waiting) != before + 1:
            self._recount(leaving_out=party_id)
        self.given[party_id] = queued_quote(size, self.waiting, self.stand.floor)
        self.waiting[size] += 1

    def _recount(self, leaving_out: str | None = None) -> None:
        self.waiting = Counter(
            int(p.size or 0) for pid, p in self.stand.waiting.items() if pid != leaving_out
        )


class FloorViews:
    """Floor documents of one restaurant's days, cached by stamp."""

    def __init__(self, book: DayBook) -> None:
        self.book = book
        self._lock = threading.Lock()
        self._docs: dict[tuple[date, Stamp], dict[str, Any]] = {}
        self._quotes: dict[date, _QuotesGiven] = {}

    def stamp(self, day: date, now: datetime) -> Stamp:
        """Changes whenever the floor document would (a new entry, or the next minute)."""
        return self.book.length(day), self.book.minute(day, now), self.book.generation

    def floor(self, day: date, now: datetime) -> dict[str, Any]:
        stamp = self.stamp(day, now)
        with self._lock:
            cached = self._docs.get((day, stamp))
            if cached is not None:
                return cached
            quotes = self._quotes.get(day)
            if quotes is not None and quotes.generation != self.book.generation:
                quotes = None  # quotes given on the old floor: start again on the new one
            if quotes is None:
                stand, switches = self.book.blank_stand(day)
                quotes = self._quotes[day] = _QuotesGiven(
                    stand, generation=self.book.generation, switches=switches
                )
            quotes.catch_up(self.book, day)
            doc = build(self.book, day, now, quotes.given, quotes.passed)
            if len(self._docs) >= VIEWS_KEPT:
                self._docs.clear()
            self._docs[(day, stamp)] = doc
            return doc


def _clock(opening: datetime, r: Restaurant, minute: int) -> str:
    return (opening + timedelta(minutes=minute)).astimezone(r.tz).strftime("%H:%M")


def build(
    book: DayBook,
    day: date,
    now: datetime,
    quotes: dict[str, int],
    passed: list[tuple[str, str, int]] | None = None,
) -> dict[str, Any]:
    """The floor document of `day` at `now` (see the module's docstring)."""
    r = book.restaurant
    opening = calendar.opening_instant(r, day)
    if opening is None:
        raise ValueError(f"{r.name} is closed on {day.isoformat()}")
    stand, length, meta = book.snapshot(day, now)
    ts = stand.last_ts if stand.last_ts is not None else book.minute(day, now)

    def hhmm(minute: int) -> str:
        return _clock(opening, r, minute)

    def who(party_id: str) -> dict[str, Any]:
        return meta.get(party_id, {})

    # The minute each booking's guests were first marked at the door: a change of the
    # booking on its own day books it again, marked arrived at the change's minute, and
    # the guests have waited since the first.
    here_since: dict[str, int] = {}
    for res in stand.reservations():
        if res.arrived_ts is not None:
            booking = str(who(res.id).get("booking_id", res.id))
            here_since[booking] = min(here_since.get(booking, res.arrived_ts), res.arrived_ts)

    def arrived_minute(res: Reservation) -> int | None:
        return here_since.get(str(who(res.id).get("booking_id", res.id))) if res.arrived else None

    occupants: dict[str, dict[str, Any]] = {}
    for s in stand.sittings():
        unit = "+".join(s.tables)
        size = s.size if s.size is not None else who(s.party_id).get("party_size")
        turn = r.turn_of(size, unit)
        left = s.seated_at + turn - ts
        occupant: dict[str, Any] = {
            # The id the host knows (the tablet moves the party by it): a changed booking
            # sits under another engine reservation ("bk-....1"), never shown, as the
            # board's answer never shows it (receiver._public_board).
            "party_id": str(who(s.party_id).get("booking_id", s.party_id)),
            "name": str(who(s.party_id).get("name", "")),
            "size": size,
            "unit": unit,
            "reservation": s.reservation,
            "seated_minute": s.seated_at,
            "seated_at": hhmm(s.seated_at),
            "seated_for": ts - s.seated_at,
            "turn_minutes": turn,
            "turn_left": left,
            "overstay": left < 0,
        }
        for table in s.tables:
            occupants[table] = occupant

    def hold_of(table: str) -> dict[str, Any] | None:
        rid = stand.book.holder(table, ts)
        res = stand.book.get(rid) if rid is not None else None
        if res is None:
            return None
        details = who(res.id)
        return {
            "reservation_id": str(details.get("booking_id", res.id)),
            "name": str(details.get("name", "")),
            "size": details.get("party_size"),
            "unit": res.unit,
            "at": hhmm(res.at),
            "arrived": res.arrived,
            "arrived_minute": arrived_minute(res),
            "until": None if res.arrived else hhmm(res.at + 15),
        }

    # Each table's next still-booked reservation: the host sees why a free table is kept
    # from the waitlist, and by when a seated party must be gone. A free table shows a
    # booking already held as its `hold`; a taken one shows it here, due or waiting at the
    # door (`arrived`), as long as the party there stays (`in_minutes` then below 0).
    upcoming: dict[str, dict[str, Any]] = {}
    for res in sorted(stand.book.booked(), key=lambda res: res.at):
        for table in res.tables:
            if table not in upcoming and (res.at - 15 > ts or table in occupants):
                details = who(res.id)
                upcoming[table] = {
                    "reservation_id": str(details.get("booking_id", res.id)),
                    "name": str(details.get("name", "")),
                    "size": details.get("party_size"),
                    "at": hhmm(res.at),
                    "in_minutes": res.at - ts,
                    "arrived": res.arrived,
                    "arrived_minute": arrived_minute(res),
                }

    positions = r.positions
    columns = 3 if len(r.floor.tables) <= 9 else 4
    tables: list[dict[str, Any]] = []
    for i, t in enumerate(r.floor.tables):
        x, y = positions.get(t.id, (i % columns, i // columns))
        here = occupants.get(t.id)
        tables.append(
            {
                "id": t.id,
                "seats": t.seats,
                "x": x,
                "y": y,
                "occupant": here,
                "hold": hold_of(t.id) if here is None else None,
                "next": upcoming.get(t.id),
            }
        )
    combos = [
        {
            "id": c.id,
            "tables": list(c.tables),
            "capacity": c.capacity,
            "party_id": (occupants.get(c.tables[0]) or {}).get("party_id")
            if (occupants.get(c.tables[0]) or {}).get("unit") == c.id
            else None,
        }
        for c in r.floor.combos
    ]
    return {
        "merchant_id": r.merchant_id,
        "name": r.name,
        "day": day.isoformat(),
        "now": now.isoformat(),
        "clock": now.astimezone(r.tz).strftime("%H:%M"),
        "minute": ts,
        "version": length,
        "max_party_size": r.max_party_size,
        "tables": tables,
        "combos": combos,
        "queue": _queue(book, stand, ts, meta, quotes),
        # Every party the clock seated today (time's own change, told to no tap): the
        # tablet says each once, however late it learns of it (offline across it).
        "clock_seated": [
            {
                "party_id": str(who(pid).get("booking_id", pid)),
                "unit": unit,
                "at": hhmm(at),
                "no_shows": [str(who(rid).get("booking_id", rid)) for rid in gone],
            }
            for at, pid, unit, gone in stand.by_clock
        ],
        # Every party the seating pass sat after an operation today (a free, a cancel, a
        # leave, a move or a seat, from any tablet or a partner): the tablet that acted
        # said them in its answer, every other says each once, as the clock's. A partner's
        # cancel gave a held table to the waitlist and no tablet said whom to fetch.
        "pass_seated": [
            {"party_id": str(who(pid).get("booking_id", pid)), "unit": unit, "at": hhmm(at)}
            for pid, unit, at in passed or []
        ],
        "reservations": [
            {
                **row,
                "arrived_minute": here_since.get(row["reservation_id"])
                if row["status"] == "arrived"
                else None,
                # As a waiting party's: a table whose next booking is due within this many
                # minutes is another's before these guests would finish (Seat… draws it
                # not green). Seat… for Pellegrini, early, offered Tanaka's table due in 17
                # minutes in green.
                "clear_minutes": stand.floor.turn(row["size"])
                if stand.floor.protect_reservations and isinstance(row["size"], int)
                else None,
            }
            for row in reservation_rows(book, day, stand, meta, opening)
        ],
        "slots": _slots(book, day, now),
    }


def _queue(
    book: DayBook,
    stand: HostStand,
    ts: int,
    meta: dict[str, dict[str, Any]],
    quotes: dict[str, int],
) -> list[dict[str, Any]]:
    """The waitlist oldest first; `next_up` is the unit the engine's own seating pass gives
    the party with the tables as they are now, once roominess and a large party's claim no
    longer hold it back (it has waited ROOMY_AFTER_MINUTES): never a table sat at or held
    for a reservation, nor one whose next booking starts before the party's turn would be
    over (the floor's protect_reservations: no wait lifts it, so the pass never gives it).
    The pass itself (time included) has already seated whoever it can seat now, so these
    are the tables the host may seat each party at by hand without taking one the engine
    keeps for a booking; an older party's is not offered to a later one. Protection was
    not applied here: the waitlist said 'next up: T3' for a party of 4 while T3 was kept
    for an 18:45 booking, and the host walked them to a table the engine would not give."""
    floor = stand.floor  # the plan the day runs on (a reload may have taken tables off)
    queue = stand.queue()
    usable = stand.usable_tables(ts)
    patient = [
        _Patient(p, min(p.arrival, ts - config.ROOMY_AFTER_MINUTES))
        for p in queue
        if p.size is not None
    ]
    given = {
        cast(_Patient, s.party).party.id: unit_name(s.tables)
        for s in seating_pass(ts, patient, usable, floor, stand.next_booked(usable))
    }
    out = []
    for p in queue:
        details = meta.get(p.id, {})
        out.append(
            {
                "party_id": p.id,
                "name": str(details.get("name", "")),
                "phone": str(details.get("phone", "")),
                "size": p.size,
                "arrival": p.arrival,
                "waited": ts - p.arrival,
                "quote": quotes.get(p.id),
                "next_up": given.get(p.id),
                # A unit whose next booking is due within this many minutes is kept from
                # the party (its turn: the floor's protect_reservations); None: none is.
                "clear_minutes": floor.turn(p.size)
                if floor.protect_reservations and p.size is not None
                else None,
            }
        )
    return out


@dataclass(frozen=True)
class _Patient:
    """A waiting party as the pass would see it once it has waited long enough that
    roominess and claims no longer apply (its `size` and an `arrival` that long ago)."""

    party: Any
    arrival: int

    @property
    def size(self) -> int:
        return int(self.party.size)


def reservation_rows(
    book: DayBook,
    day: date,
    stand: HostStand,
    meta: dict[str, dict[str, Any]],
    opening: datetime,
) -> list[dict[str, Any]]:
    """The day's reservations as the host reads them (the floor document's, and the host
    API's list in its own field names): one row per booking, by time (`one_per_booking`);
    one moved to another day stays 'cancelled' here, with `moved_to` saying where it went."""
    r = book.restaurant

    def hhmm(minute: int) -> str:
        return _clock(opening, r, minute)

    sits = {s.party_id: "+".join(s.tables) for s in stand.sittings()}
    rows = []
    for booking_id, res, details in one_per_booking(
        (res, meta.get(res.id, {})) for res in stand.reservations()
    ):
        rows.append(
            {
                "reservation_id": booking_id,
                "party_id": booking_id,  # the host's id, not the engine's of a changed booking
                "source": str(details.get("source", "")),
                "time": hhmm(res.at),
                # The local date and time (a late service's 00:15 is the next calendar day).
                "start": (opening + timedelta(minutes=res.at))
                .astimezone(r.tz)
                .strftime("%Y-%m-%dT%H:%M"),
                "at": res.at,
                "unit": res.unit,
                "status": status_word(res),
                "size": details.get("party_size"),
                "name": str(details.get("name", "")),
                "phone": str(details.get("phone", "")),
                "notes": str(details.get("notes", details.get("additional_request", ""))),
                "seated_at": sits.get(res.id),
                "area": area_id(r, res.unit),
                "over_pacing": details.get("over_pacing") is True,
                "moved_to": book.moved_to(day, booking_id, res),
            }
        )
    return rows


def slots_of(book: DayBook, day: date, now: datetime) -> list[dict[str, Any]]:
    """A day's slots still to come, with the spots open per party size (the phone booking
    form's choices for another day); none on a day the restaurant is closed."""
    if calendar.opening_instant(book.restaurant, day) is None:
        return []
    return _slots(book, day, now)


def _slots(book: DayBook, day: date, now: datetime) -> list[dict[str, Any]]:
    """The day's slots the host can still book, with what it can book in each, per size:
    `open`, the spots on the whole floor (walk-in tables too, parties up to max_party_size:
    the host's reach, not the partners'), and `over_pacing`, the sizes whose spots are all
    beyond the slot's pacing (booked only when the host says so)."""
    r = book.restaurant
    # Slots closer than min_advance_minutes are left out: nobody books them (one rule for
    # every path), and the host seats those guests as walk-ins.
    now_sec = now.timestamp()
    earliest = now_sec + r.min_advance_minutes * 60
    by_start: dict[int, dict[str, int]] = {}
    for start_sec, n, spots_open, _total in book.rows(day, now, host=True, paced=False):
        if start_sec > now_sec and start_sec >= earliest:
            by_start.setdefault(start_sec, {})[str(n)] = spots_open
    over: dict[int, list[str]] = {}
    if r.paced:
        for start_sec, n, spots_open, _total in book.rows(day, now, host=True):
            if start_sec in by_start and spots_open == 0 and by_start[start_sec][str(n)] > 0:
                over.setdefault(start_sec, []).append(str(n))
    return [
        {
            "time": datetime.fromtimestamp(start, r.tz).strftime("%H:%M"),
            "start": datetime.fromtimestamp(start, r.tz).strftime("%Y-%m-%dT%H:%M"),
            "open": opens,
            "over_pacing": over.get(start, []),
        }
        for start, opens in sorted(by_start.items())
    ]
