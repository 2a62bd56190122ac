"""A running server's reload of its restaurant files: all of them valid, or none applied.

A reload reads every file `serve` was given. Any problem (a file's own, two files with one
merchant_id, a restaurant added or removed, a time zone changed, an opening moved on a day
whose log has entries, a booking on a removed table or combo that no other unit can take)
refuses it whole, with every problem, and the running configuration stays. Else the
bookings still booked on a removed table or combo are booked again on another unit at their
own time and size, under the running floor where they still exist (the new floor's replay
would drop them: the engine rejects a reserve on an unknown table); then each changed
restaurant's DayBook goes on under its new Restaurant (its replayed days are dropped and
replayed again under the new floor and hours), the bookings that no longer fit are listed
for the host (never cancelled), and partners are sent an availability replace of every day
published (within horizon_days, the old or the new). The swap is done by the caller's
thread in one step under a lock: on the event loop, no request sees part old, part new.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engine import HostStand
from engine.floor import Combo, FloorPlan, Table
from engine.holds import Reservation, ReservationStatus
from engine.stand import Sitting
from feed.floor.availability import AreaUnits, choose_unit
from feed.service import rules
from feed.service.attention import Attention, Misfit, reasons
from feed.service.days import (
    BOOKING_SCOPE,
    SLOT_IN_PAST,
    SLOT_UNAVAILABLE,
    Chooser,
    DayBook,
    Refused,
    guests,
    index_on,
    kept_room,
    occupied,
)
from feed.service.floors import (
    BY_RELOAD,
    BY_UNDO,
    RETIRED_SCOPE,
    Retired,
    floor_drift,
    floor_history,
    floor_record,
    floor_records,
    follows_record,
    in_turn,
    kept_floor,
    not_in_force,
    removed_units,
    replaced_floor,
    retire_record,
    retired_units,
    unit_ids,
    with_retired,
    without_units,
)
from feed.service.receiver import Receiver
from feed.venue import calendar
from feed.venue.calendar import Slot
from feed.venue.files import check_restaurant_files
from feed.venue.restaurant import Restaurant
from store.log import JSON, LogEntry, LogStore, OutboxMessage, Remember

log = logging.getLogger("hoststand.reload")


@dataclass(frozen=True)
class ReloadOutcome:
    """What a reload did: refused with its problems, or applied."""

    problems: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()  # merchant ids whose configuration changed
    unchanged: tuple[str, ...] = ()
    replaces: int = 0  # availability replace messages queued for partners
    attention: tuple[dict[str, Any], ...] = ()  # every booking that no longer fits
    rehomed: tuple[dict[str, Any], ...] = ()  # bookings moved off a removed table or combo

    @property
    def applied(self) -> bool:
        return not self.problems

    def body(self) -> dict[str, Any]:
        """The answer of an applied reload (a refusal is an error with its problems)."""
        return {
            "status": "reloaded",
            "changed": list(self.changed),
            "unchanged": list(self.unchanged),
            "replaces_queued": self.replaces,
            "attention": list(self.attention),
            "rehomed": list(self.rehomed),
        }


class Reloader:
    """Reloads the restaurant files of one running server into its Receiver's DayBooks.

    `on_reload` hears the new restaurants (in the files' order) once they are in place:
    what holds restaurants outside the DayBooks (the export schedule) follows them there.
    """

    def __init__(
        self,
        paths: Sequence[Path],
        receiver: Receiver,
        on_reload: Sequence[Callable[[list[Restaurant]], None]] = (),
    ) -> None:
        self.paths = list(paths)
        self.receiver = receiver
        self.on_reload = list(on_reload)
        self._lock = threading.Lock()

    def reload(self) -> ReloadOutcome:
        with self._lock:
            return self._reload()

    def reload_and_log(self) -> ReloadOutcome | None:
        """A reload asked for by SIGHUP: its outcome, every problem on its own line, in the
        log (nobody is waiting for an answer); None when it failed (a bug, a store down)."""
        try:
            outcome = self.reload()
        except Exception:
            log.exception("reload failed; the running configuration is kept")
            return None
        if not outcome.applied:
            log.warning("reload refused; the running configuration is kept")
            for line in outcome.problems:
                log.warning("reload refused: %s", line)
        else:
            log.info(
                "reloaded: changed %s, unchanged %s, %d replace(s) queued, %d booking(s) need"
                " attention",
                ",".join(outcome.changed) or "-",
                ",".join(outcome.unchanged) or "-",
                outcome.replaces,
                len(outcome.attention),
            )
            for row in outcome.rehomed:
                log.info(
                    "re-homed: %s %s %s from %s to %s", row["merchant_id"],
                    row["reservation_id"], row["start"], row["from"], row["to"],
                )  # fmt: skip
            for row in outcome.attention:
                log.warning(
                    "needs attention: %s %s %s", row["merchant_id"], row["reservation_id"],
                    row["attention"],
                )  # fmt: skip
        return outcome

    def _reload(self) -> ReloadOutcome:
        checked = check_restaurant_files(self.paths)
        if not checked.ok:
            return ReloadOutcome(problems=checked.problems)
        books = self.receiver.books
        by_merchant = {r.merchant_id: (path, r) for path, r in checked.restaurants}
        problems = [
            f"{path}: merchant_id: {m!r} is not served by this server"
            " (adding a restaurant needs a restart)"
            for m, (path, _r) in by_merchant.items()
            if m not in books
        ] + [
            f"{m}: no file given to serve holds this restaurant any more"
            " (removing a restaurant needs a restart)"
            for m in books
            if m not in by_merchant
        ]
        if problems:
            return ReloadOutcome(problems=tuple(problems))
        now = self.receiver.clock()
        changed: list[tuple[DayBook, Restaurant, list[date]]] = []
        homeless: list[tuple[Path, DayBook, Restaurant, list[Homeless]]] = []
        published: dict[str, date] = {}  # the last day partners hear of, per merchant
        for m, (path, new) in by_merchant.items():
            book = books[m]
            if book.restaurant == new:
                continue
            if new.tz != book.restaurant.tz:
                problems.append(_moved_zone(path, book.restaurant, new))
                continue
            days = _days_ahead(book.restaurant, new, now)
            published[m] = max(
                calendar.last_bookable_day(book.restaurant, now),
                calendar.last_bookable_day(new, now),
            )
            problems += _moved_openings(book, path, new, days)
            today = self.receiver.today(book.restaurant, now)
            # What the new file lacks of the floor in force is what this reload removes,
            # whatever this server's file had: T7, which another server's reload added,
            # is checked and its bookings re-homed as a table of this server's own file.
            on_floor = in_force_book(book, new)
            problems += _seated_on_removed(on_floor, path, new, today)
            found = _homeless(on_floor, new, days, now)
            problems += _cannot_rehome(on_floor, path, new, found, now)
            homeless.append((path, on_floor, new, found))
            changed.append((book, new, days))
        if problems:
            return ReloadOutcome(problems=tuple(problems))
        # Under the old floor the bookings on a removed unit still exist: booked again on
        # another one now, before the new floor takes over (its replay would drop them).
        rehomed: list[dict[str, Any]] = []
        for path, book, new, found in homeless:
            done, refused = _rehome(self.receiver, book, path, new, found, now)
            rehomed += done
            problems += refused
        if problems:
            # Another writer (a receiver on the same database) took the only free unit
            # meanwhile: refused. Those re-homed stay on their new units, which both floors
            # have: nothing untrue is kept, and the same reload re-homes the rest later.
            return ReloadOutcome(problems=tuple(problems), rehomed=tuple(rehomed))
        paths = {book.restaurant.merchant_id: path for path, book, _new, _found in homeless}
        on_floors = {book.restaurant.merchant_id: book for _path, book, _new, _found in homeless}
        days_of = {book.restaurant.merchant_id: days for book, _new, days in changed}
        retired: list[DayBook] = []
        kept: dict[str, str | None] = {}  # the key of the floor record each reload kept
        for book, new, _days in changed:
            m = book.restaurant.merchant_id
            refused, kept[m], on_floors[m] = _retire(
                self.receiver, on_floors[m], paths[m], new, now
            )
            if refused:
                problems += refused
                break
            retired.append(book)
        if not problems:
            # A booking another server still on the old file took on a removed unit for a
            # day ahead while this reload ran (after the days were read above, before the
            # new floor was kept: no fence entry guards a day ahead, and that server's
            # rules still offered the unit) is booked again now, as the others were. Left
            # on it, this server alone listed it (its attention: on the new file, the unit
            # is removed), the other one, whose file still has the unit, did not, until its
            # own reload booked it again. Since the new floor is kept, no server books there.
            for path, book, new, _found in homeless:
                m = book.restaurant.merchant_id
                late = _homeless(on_floors[m], new, days_of[m], now)
                done, refused = _rehome(self.receiver, on_floors[m], path, new, late, now)
                rehomed += done
                problems += refused
        if problems:
            # A party sat at a removed table meanwhile (another server on this store, still
            # on the old file, seated it there), or a booking taken there meanwhile has no
            # other unit: refused, as it would have been before (those booked again stay
            # on their new units, which both floors have).
            for book in retired:
                m = book.restaurant.merchant_id
                _unretire(book, on_floors[m].restaurant.floor, kept[m])
                # Its days replayed since the new floor was kept were put on it for the
                # writes above (DayBook._on_floor_in_force): read again on the old one.
                book.reconfigure(book.restaurant)
            return ReloadOutcome(problems=tuple(problems), rehomed=tuple(rehomed))
        misfits = {
            book.restaurant.merchant_id: _misfits(book, new, days, self.receiver.attention)
            for book, new, days in changed
        }
        attention = self.receiver.attention
        running = [books[m].restaurant for m in by_merchant]
        undo = [
            (book, book.restaurant, attention.of(book.restaurant.merchant_id))
            for book, _new, _days in changed
        ]
        self._apply(
            [(book, new) for book, new, _days in changed],
            misfits,
            [r for _path, r in checked.restaurants],
        )
        try:
            replaces = _queue_replaces(self.receiver, changed, published)
        except Exception:
            # The store refused the replaces: partners would not hear of rules that apply,
            # and their feed would promise what the floor no longer keeps. Undone whole:
            # the running configuration stays, and the caller says the reload failed.
            # The bookings re-homed stay on their new units (the running floor has them).
            self._apply(
                [(book, old) for book, old, _listed in undo],
                {book.restaurant.merchant_id: list(listed) for book, _old, listed in undo},
                running,
            )
            with contextlib.suppress(Exception):  # the store is failing: it may refuse this too
                for book, _old, _listed in undo:
                    m = book.restaurant.merchant_id
                    _unretire(book, on_floors[m].restaurant.floor, kept[m])
            raise
        rows = tuple(
            m.row(books[merchant].restaurant.tz)
            for merchant in by_merchant
            for m in self.receiver.attention_now(merchant)  # one settled since: not listed
        )
        return ReloadOutcome(
            changed=tuple(book.restaurant.merchant_id for book, _new, _days in changed),
            unchanged=tuple(m for m in by_merchant if m not in misfits),
            replaces=replaces,
            attention=rows,
            rehomed=tuple(rehomed),
        )

    def _apply(
        self,
        configs: list[tuple[DayBook, Restaurant]],
        misfits: dict[str, list[Misfit]],
        restaurants: list[Restaurant],
    ) -> None:
        """Put `configs` in place (each book in one step, under its lock), their misfits
        on the attention list, and tell the listeners of `restaurants`."""
        for book, restaurant in configs:
            book.reconfigure(restaurant)
        for merchant_id, found in misfits.items():
            self.receiver.attention.replace(merchant_id, found)
        for listener in self.on_reload:
            listener(restaurants)


def in_force_book(book: DayBook, new: Restaurant) -> DayBook:
    """`book`, or when the floor in force has tables or combos that neither its file nor
    `new` has (another server's reload, or a start, added T7), a DayBook of the same days
    on its file's floor as the floor in force has it: with those units (as its records
    define them), without those it lacks. A reload works out on it what it removes of the
    floor in force: `book`'s replay never had T7 (the engine rejects a seat or a reserve
    at an unknown table), so its checks saw nobody sitting there and no booking on it,
    and the reload retired T7 with P seated and bookings taken there: they fell from
    every replay, read waiting or gone on every server."""
    _last, units = kept_floor(book.store, book.restaurant.merchant_id)
    r = book.restaurant
    lost = [u for u in units if not has_unit(r, u) and not has_unit(new, u)]
    if not lost:
        return book
    found = [x for u in lost if (x := Retired.of_record(units[u])) is not None]
    try:
        floor = with_retired(without_units(r.floor, not_in_force(units, unit_ids(r.floor))), found)
    except ValueError:  # no floor the rules run on is left without them: the file's, with them
        floor = with_retired(r.floor, found)
    on_floor = dataclasses.replace(r, floor=floor, memo={})
    return DayBook(book.store, on_floor, book.notifier, book.events)


def _retire(
    receiver: Receiver, book: DayBook, path: Path, new: Restaurant, now: datetime
) -> tuple[list[str], str | None, DayBook]:
    """Keep what the tables and combos `new` removes were (floors.Retired): a day whose log
    began before now is replayed on a floor that still has them until now, so the rows
    of the past on them (seated, no-show, cancelled) read as they were, to the host and to
    a partner asking after its booking. They are never offered again: availability and
    the host's choices read the restaurant's floor, and each day's replay goes on without
    them from now. (Should the new configuration be undone, the floor kept is the old one
    again, `_unretire`, and the unit's record is not read.)

    With units removed on a day being served, the records are written with an entry on
    that day (DayBook.fence), once its replay shows nobody sitting at a removed table: a
    seat written meanwhile (by another server on this store still running the old file)
    is either in the log read for that check, and the reload is refused naming the party,
    or loses its append to this entry and is worked out again, when it reads the new
    floor and is refused (floors.removed_units).

    The new floor is kept after the floor in force it was worked out on, as a start's is
    (floors.in_turn): when another server's reload or start kept its floor meanwhile
    (after this one read the floor in force), this one is worked out again after it, as
    of the clock then. Kept beside it, one of the two was in force without the other's
    change: this reload's floor lost, or T7, which the other added, gone with no removal,
    so that what it seated at T7 meanwhile fell from every replay (read at another table,
    or waiting). Worked out again as of the reload's first instant, it would remove T7
    before the other added it, with the same outcome.
    The problems found (nothing is written then), the key of the floor record kept
    (None: none, the floor in force was the new one already), and the book it was worked
    out on (`in_force_book`: the late re-homing's)."""
    kept = set(unit_ids(new.floor))
    merchant_id = book.restaurant.merchant_id
    worked = [book]

    def keep(follows: str, attempt: int) -> tuple[list[str], str | None]:
        when = now if attempt == 0 else max(now, receiver.clock())
        at = when.timestamp()
        # Worked out again after another server's floor, which added T7 (that the new
        # file lacks): T7 is removed too, and checked as the rest (`in_force_book`).
        # Retired unchecked, P seated there meanwhile sat at a table no server has.
        on = worked[0] = book if attempt == 0 else in_force_book(book, new)
        old = on.restaurant.floor
        gone = [unit for unit in unit_ids(old) if unit not in kept]
        # Those the floor in force lacks already left it when it took force (another
        # server's reload, or a start, retired them then): not retired again as of now.
        # Retired again, every replay from this reload on kept them until now, its seating
        # pass seating a waiting party at a table no writer could seat at meanwhile, where
        # the other servers showed it waiting.
        already = set(removed_units(book.store, merchant_id, gone))
        fresh = [unit for unit in gone if unit not in already]
        records: list[Remember] = [
            (RETIRED_SCOPE, *retire_record(merchant_id, unit))
            for unit in retired_units(old, fresh, at)
        ]
        # The floor a start compares, and the one a server still on the old file reads.
        records += floor_records(book.store, merchant_id, new.floor, at, gone, BY_RELOAD)[0]
        guard = follows_record(merchant_id, follows, records)
        key = records[-1][1] if guard else None
        today = receiver.today(on.restaurant, when)
        if not fresh or today is None or _nobody_can_sit(on, today, when):
            # In one write, as a start's (floors.note_floor): a removal kept without its
            # floor record (the database restarting between) stood while the floor in
            # force kept the unit, and a later start kept it, dropping from every replay
            # what sat there since.
            if records:
                book.store.append_all([], remember=[*records, *guard])
            return [], key
        found: list[str] = []

        def nobody_there(stand: HostStand) -> str | None:
            found[:] = _sitting_at_removed(stand, path, new)
            return found[0] if found else None

        refused = on.fence(today, when, nobody_there, records, {"source": "reload"}, guard)
        if refused is not None:
            return found, None
        return [], key

    refused, key = in_turn(book.store, merchant_id, keep)
    return refused, key, worked[0]


FENCE_MARGIN = timedelta(minutes=5)  # a reload's run, with room: see _nobody_can_sit


def _nobody_can_sit(book: DayBook, today: date, now: datetime) -> bool:
    """Whether nobody can be seated on `today` while a reload writes its new floor: its log
    is empty and no service runs now nor opens within FENCE_MARGIN. A walk-in is taken only
    in service, and a booking or a waiting party to seat would be on the log. The reload
    then writes no fence entry there: one would start the day's log before it opens, and a
    later reload (or start) moving today's opening would be refused as if the day had
    bookings or walk-ins. A booking taken for today meanwhile by a server on the old file
    is then as one taken meanwhile for a day ahead, which no fence guards either."""
    r = book.restaurant
    if book.length(today) != 0:
        return False
    return (
        calendar.in_service(r, now) is None and calendar.in_service(r, now + FENCE_MARGIN) is None
    )


def _unretire(book: DayBook, floor: FloorPlan, kept: str | None) -> None:
    """Keep the floor in force before the reload (`floor`, the running one, on a server
    whose file was not out of date) again as the floor in force, after `_retire` kept
    a new one (its floor record's key `kept`) whose configuration is then not applied:
    its removed units are on the floor again (their records are not read) and a seat
    there is not refused. Kept as of the reload's instant, after the new floor's record
    (note_floor keeps two of one instant in order), following it (floors.in_turn). The
    units the new floor added are not retired, as note_floor retires what a floor kept
    before has and this one lacks: they never served (no server ran that floor), and a
    record would put them in every day's replay up to now, the seating pass seating
    earlier parties there."""
    merchant_id = book.restaurant.merchant_id

    def keep(follows: str, _attempt: int) -> None:
        if kept is None or follows != kept:
            # The reload kept no floor: the one it loaded was in force already (another
            # server's reload, or a start, kept it; this server ran an out-of-date file),
            # or one kept since is not this reload's. That floor is not the reload's to
            # undo: keeping the running one again put its removed tables back in force for
            # every server, without --restore-floor, and marked the other floor undone.
            return
        last, units = kept_floor(book.store, merchant_id)
        at = float(last["at"])  # the reload's instant (`floor_record`), which a retry moves
        history = floor_history(book.store, merchant_id)
        records: list[Remember]
        if len(history) > 1:
            # The floor in force before the reload, which is the running one's unless this
            # server ran an out-of-date file: its running floor kept again put back in
            # force the tables another server's reload (or a start) had removed, for every
            # server. Kept as it was: the units the reload's floor added are not retired.
            records = [floor_record(book.store, merchant_id, history[-2].units, at, BY_UNDO)]
        else:
            running = set(unit_ids(floor))
            added = [unit for unit in units if unit not in running]
            records, _gone = floor_records(
                book.store, merchant_id, floor, at, added, BY_UNDO
            )  # the reload's floor never took force: a start on it is not one on an older copy
        if records:
            guard = follows_record(merchant_id, follows, records)
            book.store.append_all([], remember=[*records, *guard])

    in_turn(book.store, merchant_id, keep)


def _days_ahead(old: Restaurant, new: Restaurant, now: datetime) -> list[date]:
    """Every date a booking may still be on, under either configuration: from yesterday (a
    service running past midnight) to the furthest horizon."""
    today = now.astimezone(new.tz).date()
    last = max(old.horizon_days, new.horizon_days)
    return [today + timedelta(days=i) for i in range(-1, last + 1)]


def _moved_zone(path: Path, old: Restaurant, new: Restaurant) -> str:
    """A new time zone is refused: the stored days count minutes from openings read in the
    old zone, and would be read in the new one at other instants."""
    return (
        f"{path}: timezone: would change from {old.tz.key} to {new.tz.key}: the stored days"
        f" count their times from openings on the {old.tz.key} clock and would be misread;"
        f" keep timezone = {old.tz.key!r}"
    )


def _moved_openings(book: DayBook, path: Path, new: Restaurant, days: list[date]) -> list[str]:
    """An opening moved on a day whose log has entries: refused, for the log's times count
    from the day's opening (its bookings would move with it). A date closed since its
    bookings were taken counts from its weekday's opening (calendar.log_opening): reopened
    at another, it is refused too."""
    old = book.restaurant
    out: list[str] = []
    for day in days:
        before, after = calendar.log_opening(old, day), calendar.opening_instant(new, day)
        if after is None:
            out += _closed_apart(book, path, new, day)
            continue
        if before is None or before == after or book.length(day) == 0:
            continue
        was, now = f"{before.astimezone(old.tz):%H:%M}", f"{after.astimezone(new.tz):%H:%M}"
        if calendar.opening_instant(old, day) is None:
            out.append(
                f"{path}: hours: {day.isoformat()} is closed and its bookings count from"
                f" {was}, its weekday's opening; reopening it with an opening at {now} would"
                f" move them: open it at {was}, or keep it closed"
            )
            continue
        out.append(
            f"{path}: hours: the opening of {day.isoformat()} would move from {was} to {now},"
            " and that day already has bookings or walk-ins (their times count from the"
            " opening); keep the opening until that day is past, or close the day"
        )
    return out


def _closed_apart(book: DayBook, path: Path, new: Restaurant, day: date) -> list[str]:
    """A day closed by the new files: its bookings are then read from its weekday's opening
    (calendar.log_opening), so closing a special day with bookings still booked, whose log
    counts from another opening, is refused (they would be read at other times)."""
    old = book.restaurant
    before, after = calendar.log_opening(old, day), calendar.log_opening(new, day)
    if before is None or before == after or book.length(day) == 0:
        return []
    if not any(res.status is ReservationStatus.BOOKED for res, _ in book.reservations(day)):
        return []
    was = f"{before.astimezone(old.tz):%H:%M}"
    read = (
        f"from {after.astimezone(new.tz):%H:%M}, its weekday's opening"
        if after is not None
        else "from no opening (its weekday has no service)"
    )
    return [
        f"{path}: special_days: closing {day.isoformat()} would read its bookings {read},"
        f" not from {was}, the special day's opening they count from; cancel or move them"
        " first, or keep the special day"
    ]


@dataclass(frozen=True)
class Homeless:
    """A reservation still booked on a day from yesterday on, on a table or combo the new
    floor does not have: the new floor's replay would drop it (the engine rejects a
    reserve on an unknown table), so a reload books it again on another unit first."""

    day: date
    reservation: Reservation
    details: dict[str, Any]
    booking_id: str
    size: int  # its booking's party size (the unit's seats when the booking has none)
    start: datetime


def has_unit(r: Restaurant, unit: str) -> bool:
    """Does `r`'s floor have this table or combo (what the engine's reserve accepts)?"""
    return r.floor.table(unit) is not None or r.floor.combo(unit) is not None


def _homeless(book: DayBook, new: Restaurant, days: list[date], now: datetime) -> list[Homeless]:
    """The reservations of `days` still booked at `now` (arrived guests included; not one
    past its hold, a no-show whatever the log says yet) on a unit `new` lacks, earliest
    first; read from the replay under the running floor (where they still exist). One past
    its hold whose no-show the clock's sweep has not written yet (it runs every few
    seconds) stays where it is: its guests did not come, so it is not booked again, and
    the replay keeps the removed unit up to the reload (`_retire`), so the host lists it a
    no-show on it, the sweep writes that, and its partner hears NO_SHOW, not CANCELED."""
    old = book.restaurant
    out: list[Homeless] = []
    for day in days:
        opening = calendar.log_opening(old, day)
        if opening is None or book.length(day) == 0:
            continue
        ts = book.minute(day, now)
        for res, details in book.reservations(day):
            if res.status is not ReservationStatus.BOOKED or res.no_show_by(ts):
                continue
            if has_unit(new, res.unit):
                continue
            size = details.get("party_size")
            if isinstance(size, bool) or not isinstance(size, int):
                size = rules.seats_of(old, res.unit)
            booking_id = str(details.get("booking_id", res.id))
            start = opening + timedelta(minutes=res.at)
            out.append(Homeless(day, res, details, booking_id, size, start))
    return sorted(out, key=lambda h: (h.start, h.booking_id))


def _room_of(book: DayBook, new: Restaurant, h: Homeless) -> str | None:
    """The room (a partner's room_id, kept by the booking index) the booking stays in
    when `new` still has it, as the host's change keeps it."""
    index = book.store.recall(BOOKING_SCOPE, h.booking_id)
    return kept_room(new, index.get("room_id") if isinstance(index, dict) else None)


def _chooser(book: DayBook, new: Restaurant, h: Homeless, room: str | None) -> Chooser:
    """Where a homeless booking goes: a unit of the new floor that the running one has too
    (the entry is applied now, under the running floor, and replayed later under the new
    one), free for its party at its time by the availability rules of the new floor, the
    whole floor as the host's change books (walk-in tables included); in its room when
    it has one and a unit there is free, else anywhere. Pacing is not asked: the booking
    was counted at its slot already and stays there."""
    old = book.restaurant
    every = frozenset(unit_ids(new.floor))
    both = every & frozenset(unit_ids(old.floor))
    anywhere: AreaUnits = None if both == every else both
    tries: list[AreaUnits] = [anywhere]
    area = new.area(room) if room is not None else None
    if area is not None:
        tries.insert(0, area.units & both)
    at, day = h.reservation.at, h.day

    def choose(stand: HostStand, meta: Mapping[str, Mapping[str, Any]], ts: int) -> Any:
        when = h.start.astimezone(new.tz).strftime("%Y-%m-%d %H:%M")
        if at <= ts:
            return Refused(SLOT_IN_PAST, f"{when} has already started")
        taken = occupied(new, stand, meta, ts, day)
        turns = calendar.turns_at(new, day, at)
        for units in tries:
            unit = choose_unit(new.floor, taken, at, h.size, turns, units)
            if unit is not None:
                return unit, False
        return Refused(SLOT_UNAVAILABLE, f"no table for {h.size} at {when}")

    return choose


def _refusal(path: Path, h: Homeless, refused: Refused) -> str:
    """A reload's line for a booking on a removed unit that cannot be booked again."""
    unit = h.reservation.unit
    what = f"table {unit}" if "+" not in unit else f"the combination {unit}"
    name = str(h.details.get("name", "")) or "no name"
    local = h.start.astimezone(h.start.tzinfo)
    why = (
        "its time has come (its guests may be at the door): seat or cancel it first"
        if refused.code == SLOT_IN_PAST
        else "no other table is free for it then; cancel or move it first"
    )
    return (
        f"{path}: tables: {unit} is removed but booking {h.booking_id} ({name},"
        f" {guests(h.size)}) is booked on it on {h.day.isoformat()} at {local:%H:%M}, and"
        f" {why}, or keep {what}"
    )


def _seated_on_removed(book: DayBook, path: Path, new: Restaurant, today: date | None) -> list[str]:
    """A party sitting now, on the day being served, at a table the new floor does not have
    (or checked in on a combo it does not have): the day's replay under the new floor would
    have it sit nowhere (the engine rejects seating or a reserve on an unknown unit), and the
    board would lose guests who are eating. Refused, naming the table and the party, until
    the host frees the table or moves the party (re-homing is for bookings not yet here).

    Only the day being served takes seats (walk-ins, seats, check-ins, moves): a service
    running past midnight is still its own day then (calendar.service_day_of), and checked
    here. The service day before it, once its last service has closed, may still hold
    parties the host never freed: they are not checked, for nobody can free or move them
    any more (the host acts on the day being served), so such a refusal could never be
    resolved; that day's replay keeps the removed table for them, on every server."""
    if today is None or book.length(today) == 0:
        return []
    return _sitting_at_removed(book.stand(today), path, new)


def _sitting_at_removed(stand: HostStand, path: Path, new: Restaurant) -> list[str]:
    """`_seated_on_removed`'s lines for the parties sitting on `stand`."""
    out: list[str] = []
    for sitting, unit in _sitting_removed(stand, new):
        who = f" ({guests(sitting.size)})" if sitting.size else ""  # None: a reservation
        out.append(
            f"{path}: tables: {unit} is removed but {sitting.party_id}{who} sits at it now;"
            " free the table or move the party to a table the new file keeps first, or keep"
            f" {unit}"
        )
    return out


def _sitting_removed(stand: HostStand, r: Restaurant) -> list[tuple[Sitting, str]]:
    """Each party sitting on `stand` at units `r`'s floor lacks, with those units ("T5",
    "T5+T6"): its tables `r` lacks, or its booked combo when `r` removed the combo but kept
    its tables."""
    out: list[tuple[Sitting, str]] = []
    for sitting in stand.sittings():
        units = [t for t in sitting.tables if r.floor.table(t) is None]
        booked = stand.book.by_id.get(sitting.party_id) if sitting.reservation else None
        if not units and booked is not None and not has_unit(r, booked.unit):
            units = [booked.unit]  # a combo removed, its tables kept
        if units:
            out.append((sitting, "+".join(units)))
    return out


def _cannot_rehome(
    book: DayBook, path: Path, new: Restaurant, homeless: list[Homeless], now: datetime
) -> list[str]:
    """The homeless bookings that no unit could take, tried in order on copies of their
    days (each one re-homed there before the next is tried): nothing is written."""
    out: list[str] = []
    copies: dict[date, tuple[HostStand, dict[str, dict[str, Any]]]] = {}
    for i, h in enumerate(homeless):
        if h.day not in copies:
            copies[h.day] = book.working_copy(h.day)
        stand, meta = copies[h.day]
        ts = book.op_ts(h.day, stand, now)
        stand.apply(["cancel", ts, h.reservation.id])
        chosen = _chooser(book, new, h, _room_of(book, new, h))(stand, meta, ts)
        if isinstance(chosen, Refused):
            out.append(_refusal(path, h, chosen))
            continue
        trial = f"rehome-trial-{i}"
        meta[trial] = {"party_size": h.size}
        stand.apply(["reserve", ts, trial, chosen[0], h.reservation.at])
    return out


def _rehome(
    receiver: Receiver,
    book: DayBook,
    path: Path,
    new: Restaurant,
    homeless: list[Homeless],
    now: datetime,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Each homeless booking booked again as the host's change books it (receiver
    `_change_booking`): cancelled and reserved on its new unit in one append, under a
    new engine id and the same booking id, its index pointing at the new reservation
    (and the room of its new unit, when it had one). The rows of those re-homed, and a
    refusal line for each one another writer left no unit for meanwhile."""
    r = book.restaurant
    done: list[dict[str, Any]] = []
    refused: list[str] = []
    for h in homeless:
        index = book.store.recall(BOOKING_SCOPE, h.booking_id)
        if not isinstance(index, dict):  # booked without the index (never by us): one now
            index = {
                "merchant_id": r.merchant_id,
                "day": h.day.isoformat(),
                "partner": h.details.get("partner"),
                "reservation_id": h.reservation.id,
            }
        moves = int(index.get("moves", 0)) + 1
        taken = {res.id for res, _ in book.reservations(h.day)}
        while f"{h.booking_id}.{moves}" in taken:
            moves += 1
        new_id = f"{h.booking_id}.{moves}"
        moved = {**index, "day": h.day.isoformat(), "reservation_id": new_id, "moves": moves}
        room = _room_of(book, new, h)
        meta: dict[str, Any] = {"booking_id": h.booking_id, "source": "reload"}
        if h.details.get("over_pacing"):
            meta["over_pacing"] = True  # as it was taken: moving its table changes no count

        def put(
            operation: list[Any], moved: dict[str, Any] = moved, booking_id: str = h.booking_id
        ) -> list[Remember]:
            return [(BOOKING_SCOPE, booking_id, index_on(new, moved, str(operation[3])))]

        local = h.start.astimezone(r.tz)
        slot = Slot(local, int(h.start.timestamp()), h.reservation.at)
        outcome = book.rehome(
            h.day, h.reservation.id, new_id, slot, h.size, now, meta, put,
            _chooser(book, new, h, room),
        )  # fmt: skip
        if isinstance(outcome, Refused):
            refused.append(_refusal(path, h, outcome))
            continue
        done.append(
            {
                "merchant_id": r.merchant_id,
                "day": h.day.isoformat(),
                "reservation_id": h.booking_id,
                "start": local.isoformat(),
                "party_size": h.size,
                "from": h.reservation.unit,
                "to": str(outcome.operation[3]),
            }
        )
    return done, refused


def stored_floor_replaced(store: LogStore, r: Restaurant, path: Path) -> list[str]:
    """A server starting on `r` whose floor plan is one that was in force on the store and
    was replaced since (floors.replaced_floor: a reload, or a start, put another in force
    after it), and is not the one in force: refused, one line naming the difference and
    what to do, nothing written. It is an older copy of the file, most likely (a second
    server, or a restart, still given the file from before a reload): started, it would
    put the removed tables back in force for every server, the reloaded ones told their
    floor is out of date and the next walk-in seated at a table the restaurant took
    away. A floor never kept before still takes force at a start (a floor edited while no
    server ran); one that only an undone reload kept never took force, and is taken too.
    To put an older floor back on purpose: `serve --restore-floor`, or a reload of a
    running server on the file (which re-homes, and checks, as every reload does)."""
    found = replaced_floor(store, r.merchant_id, r.floor)
    if found is None:
        return []
    _was, then = found
    drift = floor_drift(store, r.merchant_id, r.floor)
    by = {"reload": "a reload", "start": "a start", "restore": "a start with --restore-floor"}
    how = by.get(then.how or "", "a start or reload")
    when = datetime.fromtimestamp(then.at, r.tz).strftime("%Y-%m-%d %H:%M %Z")
    return [
        f"{path}: tables: this file's floor plan is an older one, replaced on the store by"
        f" {how} at {when} ({drift}): an older copy of the file? Start with the file the"
        " servers run, or give --restore-floor to put this floor plan back in force on"
        " purpose (for every server)"
    ]


def stored_units_removed(store: LogStore, r: Restaurant, path: Path, now: datetime) -> list[str]:
    """A server (or command) starting on `r` while a day from yesterday on still holds a
    booking on a table or combo `r` does not have (removed while it was down: a restart
    instead of a reload). Its replay under `r`'s floor would drop the booking (the engine
    rejects a reserve on an unknown table), and it cannot be booked again elsewhere under
    the floor it was taken on, which is gone: refused, one line per booking, as far as the
    log's fold tells (engine.booked: what it stored, whatever the floor)."""
    today = now.astimezone(r.tz).date()
    days = _days_ahead(r, r, now)
    out: list[str] = []
    for day, folded in store.booked(r.merchant_id, days[0], days[-1]).items():
        opening = calendar.log_opening(r, day)
        if opening is None or day < today - timedelta(days=1):
            continue
        ts = math.floor((now - opening).total_seconds() / 60)
        named: dict[str, str] | None = None
        for reservation_id, b in folded.by_id(ts).items():
            if has_unit(r, b.unit):
                continue
            if named is None:
                named = _booking_ids(store, r.merchant_id, day)
            reservation_id = named.get(reservation_id, reservation_id)
            start = (opening + timedelta(minutes=b.at)).astimezone(r.tz)
            what = f"table {b.unit}" if "+" not in b.unit else f"the combination {b.unit}"
            out.append(
                f"{path}: tables: {b.unit} is not on the floor plan, but reservation"
                f" {reservation_id} is still booked on it on {day.isoformat()} at"
                f" {start:%H:%M}; put {what} back in the file and start again, then remove"
                " it with a reload (SIGHUP or POST /api/v1/admin/reload), which books its"
                " bookings again on other tables"
            )
    return out


def stored_parties_removed(store: LogStore, r: Restaurant, path: Path, now: datetime) -> list[str]:
    """A server (or command) starting on `r` while a party sits, on the day being served,
    at a table `r` does not have (or checked in on a combo it does not have): removed while
    the server was down, a restart instead of a reload, which refuses it
    (`_seated_on_removed`). The replay under `r`'s floor would seat guests who are eating
    nowhere, or at another table the seating pass picks: refused, one line per party, as a
    reload is. Which unknown tables the day's log names (operations and the engine's
    answers) it tells; each is put back for the replay as near as the log tells what it
    was (seats: the largest party seen at it, else the floor's largest table; first in
    floor order): a guess only the waitlist's seating pass could tell apart, and it leans
    to finding a party there (a refusal is the safe side: put the table back, start)."""
    day = calendar.service_day_of(r, now)
    if day is None:
        local = now.astimezone(r.tz).date()
        day = local if calendar.opening_instant(r, local) is not None else None
    if day is None:
        return []
    _last, was = kept_floor(store, r.merchant_id)
    if was and all(has_unit(r, unit) for unit in was):
        # Nothing removed since the last start or reload, each of which refused a party
        # at a table it removed: nobody can sit at one (the day's log is not read).
        return []
    entries = store.entries(r.merchant_id, day)
    if not entries:
        return []
    book = DayBook(store, r)
    kept = _named_units(entries, calendar.floor_of_day(r, day), book.retirements(), was)
    if not kept:
        return []  # nothing on the day names a table the file lacks: nobody sits at one
    names = {
        str(e.operation[2]): str(e.meta["name"])
        for e in entries
        if len(e.operation) > 2 and isinstance(e.meta.get("name"), str) and e.meta["name"]
    }
    stand = book.replayed_with(day, kept)
    out: list[str] = []
    for sitting, unit in _sitting_removed(stand, r):
        who = [names[sitting.party_id]] if sitting.party_id in names else []
        who += [guests(sitting.size)] if sitting.size else []
        party = sitting.party_id + (f" ({', '.join(who)})" if who else "")
        what = f"table {unit}" if "+" not in unit else unit
        out.append(
            f"{path}: tables: {unit} is not on the floor plan, but {party} sits at it now"
            f" ({day.isoformat()}); put {what} back in the file and start again, then free"
            " the table or move the party, and remove it with a reload (SIGHUP or POST"
            " /api/v1/admin/reload)"
        )
    return out


def recover_removed_units(store: LogStore, r: Restaurant, now: datetime) -> list[str]:
    """For a store whose floor was never kept (written before starts kept it, `note_floor`),
    at its first start: the tables and combos its logs name that `r`'s floor lacks (removed
    from the file before that start) are retired as of `now`, as near as the logs tell what
    they were (`_named_units`: seats, the largest party seen at one, else the floor's
    largest table; last in floor order), so every day's replay keeps them up to now: the
    rows of the past on them stay in the host's list and a partner's GetBookingStatus (a
    no-show there is not read CANCELED). Once a floor is kept this reads nothing (a table
    removed since is the start's to retire, knowing what it was). The units retired."""
    last, _kept = kept_floor(store, r.merchant_id)
    if last is not None:
        return []
    retired = DayBook(store, r).retirements()
    found: dict[str, Retired] = {}
    for day in store.service_dates(r.merchant_id):
        for guess in _named_units(store.entries(r.merchant_id, day), r.floor, retired, {}):
            was = found.setdefault(guess.unit, guess)
            seats = guess.table.seats if guess.table is not None else 0
            if was.table is not None and seats > was.table.seats:  # a larger party seen there
                found[guess.unit] = dataclasses.replace(was, table=guess.table)
    at = now.timestamp()
    tables = [g for g in found.values() if g.table is not None]
    combos = [g for g in found.values() if g.combo is not None]
    # Last in floor order, in the order the logs first name them: where the file had one
    # the logs do not tell, and a table put first wins every tie of the seating rules, so
    # the replay's pass seated earlier parties there (where they never sat) instead of at
    # the tables they had. At the end it is taken only where no table of the file fits,
    # as a table a restaurant adds to its file would be. (_named_units' own guesses, for
    # the check of a party sitting now, stay first: there a refusal is the safe side.)
    last_table, last_combo = len(r.floor.tables), len(r.floor.combos)
    out = [dataclasses.replace(g, at=at, place=last_table + i) for i, g in enumerate(tables)]
    out += [dataclasses.replace(g, at=at, place=last_combo + i) for i, g in enumerate(combos)]
    for unit in out:
        store.remember(RETIRED_SCOPE, *retire_record(r.merchant_id, unit))
    return [unit.unit for unit in out]


def _named_units(
    entries: Sequence[LogEntry],
    floor: FloorPlan,
    retired: Sequence[Retired],
    was: Mapping[str, Mapping[str, Any]],
) -> list[Retired]:
    """Stand-ins (floors.Retired, for the whole day) for the tables and combos a day's
    log names, in its operations or the engine's answers ("seated T2", "W1@T2+T3"), that
    neither `floor` nor a reload's record (`retired`) has: as the floor kept last (`was`,
    floors.kept_floor) had them, else guessed."""
    known = {x.unit for x in retired}
    sizes: dict[str, int] = {}
    named: list[str] = []

    def saw(unit: Any, size: Any = None) -> None:
        if not isinstance(unit, str) or not unit:
            return
        named.append(unit)
        if isinstance(size, int) and not isinstance(size, bool) and 0 < size <= 10**4:
            for t in unit.split("+"):
                sizes[t] = max(sizes.get(t, 0), size)

    for e in entries:
        op, result = e.operation, e.result
        name = op[0] if op else None
        size = op[3] if name == "walk_in" and len(op) > 3 else e.meta.get("party_size")
        if name in ("reserve", "seat", "move") and len(op) > 3:
            saw(op[3], size)
        elif name == "free" and len(op) > 2:
            saw(op[2])
        if isinstance(result, str) and result.startswith("seated "):
            saw(result[len("seated ") :], size)
        elif isinstance(result, list):
            for item in result:
                if isinstance(item, str) and "@" in item:
                    saw(item.rsplit("@", 1)[1])
    largest = max((t.seats for t in floor.tables), default=2)
    tables: dict[str, Table] = {}
    combos: dict[str, Combo] = {}
    for unit in dict.fromkeys(named):
        parts = unit.split("+")
        for t in parts:
            if t and floor.table(t) is None and t not in known and t not in tables:
                tables[t] = Table(t, sizes.get(t) or largest, 1)
        if len(parts) == 2 and all(parts) and floor.combo(unit) is None and unit not in known:
            seats = sum((floor.table(t) or tables.get(t) or Table(t, largest)).seats for t in parts)
            combos[unit] = Combo((parts[0], parts[1]), seats, 1)
    # First in floor order: where the seating pass had a choice, it takes the unknown table,
    # so a party that may have sat there is found (a refusal is the safe side).
    guessed = [Retired(t.id, math.inf, t, None, None, i) for i, t in enumerate(tables.values())]
    guessed += [Retired(c.id, math.inf, None, c, None, i) for i, c in enumerate(combos.values())]
    for i, guess in enumerate(guessed):
        if guess.unit in was:
            exact = Retired.of_record({**was[guess.unit], "at": math.inf})
            guessed[i] = exact if exact is not None else guess
    return guessed


def _booking_ids(store: LogStore, merchant_id: str, day: date) -> dict[str, str]:
    """Engine reservation id -> the booking id the host and the partner know, for the
    reservations of `day` written with one (a booking changed or moved is another engine
    reservation, `<booking id>.<n>`, under the same booking id)."""
    out: dict[str, str] = {}
    for entry in store.entries(merchant_id, day):
        op, booking_id = entry.operation, entry.meta.get("booking_id")
        if op[:1] == ["reserve"] and len(op) > 2 and isinstance(booking_id, str):
            out[str(op[2])] = booking_id
    return out


CLOCK_SCOPE = "clock"  # idempotency scope: "<merchant id>/<n>" -> {"timezone": zone}, n = 0, 1, ...


def _last_zone(store: LogStore, merchant_id: str) -> tuple[int, JSON]:
    """The number of the zone record kept last (-1: none yet) and its value."""
    last = store.recall_last(CLOCK_SCOPE, f"{merchant_id}/")
    if last is None:
        return -1, None
    number = last[0].rsplit("/", 1)[1]
    return (int(number) if number.isdigit() else -1), last[1]


def recorded_zone(store: LogStore, merchant_id: str) -> str | None:
    """The time zone the restaurant's logs were last written under, as a start recorded it
    (record_zone), or None for a store that has no record yet (one written before they
    were kept: the opening check, stored_openings_moved, is all a start can tell then)."""
    _n, value = _last_zone(store, merchant_id)
    zone = value.get("timezone") if isinstance(value, dict) else None
    return zone if isinstance(zone, str) else None


def record_zone(store: LogStore, r: Restaurant) -> None:
    """Record `r`'s time zone as the one its logs are written under, when it is not the
    one recorded last. Records are only added (remember keeps the first value), keyed in
    order, so the last one is the zone in force; a start calls this once the file passed
    every check (stored_zone_changed refused a change while stored days are ahead)."""
    n, last = _last_zone(store, r.merchant_id)
    if isinstance(last, dict) and last.get("timezone") == r.tz.key:
        return
    n += 1
    while True:  # another start may record at the same moment: the next free key
        key = f"{r.merchant_id}/{n:08d}"
        mine: JSON = {"timezone": r.tz.key}
        if store.remember(CLOCK_SCOPE, key, mine) == mine:
            return
        n += 1


def stored_zone_changed(store: LogStore, r: Restaurant, path: Path, now: datetime) -> list[str]:
    """A server (or command) starting on `r` whose time zone is not the one its logs were
    written under (recorded_zone) while a day from yesterday on has entries: refused, one
    line naming both zones, as a reload refuses any change of zone (`_moved_zone`). Those
    days count their minutes from openings on the old clock; even where the two zones
    agree on those openings, a process still running the old file (a server, while a host
    command reads the edited one) would read the days the new clock writes at other
    instants. Once no day from yesterday on has entries (only history, which a start never
    refuses: stored_openings_moved), the new zone is taken and recorded: the only way to
    correct a wrong zone, as a reload never takes one."""
    old = recorded_zone(store, r.merchant_id)
    if old is None or old == r.tz.key:
        return []
    # "Yesterday" on either clock: the earlier of the two, so no day ahead on either is missed.
    try:
        then = now.astimezone(ZoneInfo(old)).date()
    except (ZoneInfoNotFoundError, ValueError):
        then = now.astimezone(r.tz).date()
    since = min(then, now.astimezone(r.tz).date()) - timedelta(days=1)
    ahead = store.service_dates(r.merchant_id, since=since)
    if not ahead:
        return []
    return [
        f"{path}: timezone: changed from {old} to {r.tz.key} while no server ran: the stored"
        f" days (from {ahead[0].isoformat()}) count their times from openings on the {old}"
        f" clock and would be misread; keep timezone = {old!r} until those days are past"
    ]


def stored_openings_moved(store: LogStore, r: Restaurant, path: Path, now: datetime) -> list[str]:
    """What a reload refuses (`_moved_openings`, `_closed_apart`, `_moved_zone`), for a
    server (or command) starting on `r`, as far as the logs can tell: each day from
    yesterday on whose log counts from another opening than `r` reads it from. An open
    day with entries written under another opening; a closed one (its log then counts
    from its weekday's opening, calendar.log_opening) whose bookings still booked were
    taken under another, as when a special day with bookings was closed or removed while
    the server was down. A changed timezone is refused by stored_zone_changed where the
    zone is recorded; in a store from before it was, it shows here as openings moved
    (unless the two zones agree on those days), and is named as a possible cause."""
    today = now.astimezone(r.tz).date()
    out: list[str] = []
    # A past day may move (its log is history): only the days from yesterday are read, a
    # range of the log's index, not every day the restaurant ever served.
    for day in store.service_dates(r.merchant_id, since=today - timedelta(days=1)):
        logged = _logged_opening(store, r.merchant_id, day)
        opening = calendar.opening_instant(r, day)
        read = opening or calendar.log_opening(r, day)
        if logged is None or logged == read:
            continue
        was = f"{logged.astimezone(r.tz):%H:%M}"
        if opening is None and not _still_booked(store, r.merchant_id, day):
            continue  # a closed day whose bookings all ended: nothing is misread
        if opening is None:
            from_ = (
                f"from {read.astimezone(r.tz):%H:%M}, its weekday's opening"
                if read is not None
                else "from no opening (its weekday has no service)"
            )
            out.append(
                f"{path}: closed: {day.isoformat()} is closed and would read its bookings"
                f" {from_}, not from {was}, the opening they count from (on the {r.tz.key}"
                " clock: its hours or its timezone changed); cancel or move them first,"
                f" serving the file they were booked under, or open the day at {was}"
            )
            continue
        out.append(
            f"{path}: hours: the opening of {day.isoformat()} has moved from {was} to"
            f" {opening.astimezone(r.tz):%H:%M} (on the {r.tz.key} clock: its hours or its"
            " timezone changed), and that day already has bookings or walk-ins (their times"
            " count from the opening); keep the opening and the timezone until that day is"
            " past, or close the day"
        )
    return out


def _logged_opening(store: LogStore, merchant_id: str, day: date) -> datetime | None:
    """The opening `day`'s log was written under, or None when it cannot tell. Nothing
    stores it, but a log's first entry does not lie about it: its ts is the whole minutes
    from the opening to its received_at (later entries may be held at the last ts)."""
    first = store.entries(merchant_id, day, limit=1)
    ts = first[0].operation[1] if first and len(first[0].operation) > 1 else None
    if isinstance(ts, bool) or not isinstance(ts, int):
        return None
    then = math.floor((first[0].received_at - ts * 60) / 60) * 60
    return datetime.fromtimestamp(then, UTC)


def _still_booked(store: LogStore, merchant_id: str, day: date) -> bool:
    """Does `day`'s log still hold a booking (not cancelled, moved, seated or past its hold
    as of its last entry)?"""
    folded = store.booked(merchant_id, day, day).get(day)
    if folded is None:
        return False
    held = folded.reservations if folded.last_ts is None else folded.by_id(folded.last_ts)
    return bool(held)


def _misfits(book: DayBook, new: Restaurant, days: list[date], known: Attention) -> list[Misfit]:
    """The still-booked reservations of `days` that do not fit `new`, read from the logs
    as the running configuration replays them, plus those listed before that the replay
    no longer shows (a booking on a removed table) and that still do not fit."""
    old = book.restaurant
    out: list[Misfit] = []
    seen: set[str] = set()
    for day in days:
        opening = calendar.log_opening(old, day)
        if opening is None:
            continue
        for res, details in book.reservations(day):
            if res.status is not ReservationStatus.BOOKED:
                continue
            booking_id = str(details.get("booking_id", res.id))
            seen.add(booking_id)
            size = details.get("party_size")
            size = size if isinstance(size, int) else None
            start = opening + timedelta(minutes=res.at)
            why = reasons(new, day, start, res.unit, size)
            if why:
                name = str(details.get("name", ""))
                out.append(
                    Misfit(
                        old.merchant_id,
                        day,
                        booking_id,
                        res.id,
                        start,
                        res.unit,
                        size,
                        name,
                        tuple(why),
                    )
                )
    for earlier in known.of(old.merchant_id):
        if earlier.booking_id in seen or earlier.day not in days:
            continue
        why = reasons(new, earlier.day, earlier.start, earlier.unit, earlier.party_size)
        if why:
            out.append(dataclasses.replace(earlier, reasons=tuple(why)))
    return out


def stored_misfits(book: DayBook, now: datetime) -> list[Misfit]:
    """The still-booked reservations of the days ahead that do not fit the running rules,
    read from what the log stored (engine.booked), not from a replay: a replay under the
    running floor drops a booking on a table removed while the server was down (from
    yesterday on, a start refuses that file: `stored_units_removed`; an older day's). A server
    starting on a file changed while it was down lists these for the host, as a reload
    would have. A day closed since has no opening: its weekday's hours place the bookings
    (the best reading there is of when they were booked for)."""
    r = book.restaurant
    days = _days_ahead(r, r, now)
    out: list[Misfit] = []
    for day, folded in book.store.booked(r.merchant_id, days[0], days[-1]).items():
        opening = calendar.log_opening(r, day)
        if opening is None:
            continue
        ts = math.floor((now - opening).total_seconds() / 60)
        for reservation_id, b in folded.by_id(ts).items():
            start = opening + timedelta(minutes=b.at)
            why = reasons(r, day, start, b.unit, b.size)
            if not why:
                continue
            details = book.details(day, reservation_id)
            booking_id = str(details.get("booking_id", reservation_id))
            name = str(details.get("name", ""))
            out.append(
                Misfit(
                    r.merchant_id,
                    day,
                    booking_id,
                    reservation_id,
                    start,
                    b.unit,
                    b.size,
                    name,
                    tuple(why),
                )
            )
    return out


def list_stored_misfits(receiver: Receiver) -> int:
    """`stored_misfits` of every restaurant into the receiver's attention list (at start);
    how many were found."""
    now = receiver.clock()
    found = 0
    for merchant_id, book in receiver.books.items():
        misfits = stored_misfits(book, now)
        receiver.attention.replace(merchant_id, misfits)
        found += len(misfits)
    return found


def _queue_replaces(
    receiver: Receiver,
    changed: list[tuple[DayBook, Restaurant, list[date]]],
    published: Mapping[str, date],
) -> int:
    """An availability replace of every day each changed restaurant publishes, for each
    partner that may use it, through the outbox (merged with any queued, coalesced).

    The days published are today to `published` (the last day within horizon_days under
    the old configuration or the new, whichever is later): a day past both is in no feed,
    and its replace would tell every slot of it full (nothing is bookable there yet), which
    the partner would go on showing once the day comes within the horizon. A horizon made
    shorter is told for the days it drops: they were published, and now nothing there is
    open (a replace saying so, rather than slots that a booking would find refused)."""
    messages: list[OutboxMessage] = []
    stamp = time.time()  # real time, as every message's: delivery lag is measured from it
    for book, new, days in changed:
        if book.notifier is None:
            continue
        last = published[new.merchant_id]
        for day in days:
            # Yesterday's service is over or told by the clock's sweep.
            if days[1] <= day <= last:
                messages += book.notifier.replaces(new, day, stamp)
    if messages:
        receiver.store.append_all([], outbox=messages)
    return len(messages)
