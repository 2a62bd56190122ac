"""`hoststand host ...`: the host's operations on a stored day from a terminal, through
the same service functions as the tablet's API (Receiver, DayBook, the floor view).

Exit status: 0 done, 1 refused (the rules said no, or the day is closed), 2 bad input.
Colour on a terminal only (click drops it when the output is piped).
"""

from __future__ import annotations

import json
import secrets
import sys
import unicodedata
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn, Protocol

import click

from engine import Rejected, errors
from feed.clock import check_day
from feed.service.attention import marked
from feed.service.config_reload import stored_misfits
from feed.service.days import BAD_PARTY_SIZE, BOOKING_SCOPE, Applied, DayBook, Refused
from feed.service.floorview import FloorViews, reservation_rows
from feed.service.notify import Notifier
from feed.service.receiver import Receiver
from feed.service.replies import (
    BAD_ARGUMENTS,
    BAD_JSON,
    EVENT_ID_REUSED,
    IDEMPOTENCY_KEY_REUSED,
    INVALID_CONFIGURATION,
    INVALID_REQUEST,
    Reply,
)
from feed.settings import Settings, SettingsError, load_settings
from feed.venue import calendar
from feed.venue.restaurant import ConfigError, Restaurant, load_restaurant
from store import redact
from store.log import LogStore, StoreError

EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2
# The refusals that say the request itself is wrong, the codes the HTTP edge answers 400 or
# 422 (feed.http.statuses, which this part may not import; a test keeps the two in step):
# they exit 2, as `hoststand reserve` does for a party above the restaurant's maximum. Any
# other refusal (no table, not serving now, a table not occupied) exits 1.
BAD_INPUT_CODES = frozenset(
    {
        errors.UNKNOWN_OPERATION,
        errors.INVALID_ARGUMENTS,
        BAD_PARTY_SIZE,
        BAD_JSON,
        INVALID_REQUEST,
        EVENT_ID_REUSED,
        IDEMPOTENCY_KEY_REUSED,
        BAD_ARGUMENTS,
        INVALID_CONFIGURATION,
    }
)


class Obj(Protocol):
    """What `feed.cli`'s group hands its commands: the clock and a store opener."""

    now: datetime

    def store(self, db: str, configs: Sequence[tuple[str, Restaurant]] = ()) -> Any: ...


def _fail(message: str, status: int) -> NoReturn:
    click.echo(f"hoststand: {message}", err=True)
    sys.exit(status)


def examples(*lines: str) -> str:
    """A help's closing block of example command lines, kept as written (click's \\b)."""
    return "\n\n\b\nExample:\n" + "\n".join(f"  {line}" for line in lines)


def partner_unheard(book: DayBook, day: date, now: datetime) -> str | None:
    """Why a write on `day`'s log at `now` would end a partner's booking the partner never
    hears of, without the partners known: a booking past its hold becomes a no-show on the
    way (as time does), or cancelled on a day closed since. None: nothing to miss."""
    r = book.restaurant
    # A day closed since its bookings were taken too: the operation cancels them.
    opening = calendar.log_opening(r, day)
    if opening is None:
        return None
    ts = book.minute(day, now)
    became = "cancelled (the day is closed)" if book.closed_since(day) else "a no-show"
    for res, details in book.reservations(day):
        partner = details.get("partner")
        if partner and res.no_show_by(ts):
            booking = details.get("booking_id", res.id)
            at = (opening + timedelta(minutes=res.at)).astimezone(r.tz).strftime("%H:%M")
            return (
                f"{booking}, {partner}'s booking at {at}, is {became} by now: give"
                f" --settings (the file `serve` reads) so that {partner} hears of it"
            )
    return None


class Stand:
    """One restaurant's receiver over the file, and the day the command works on."""

    def __init__(
        self, obj: Obj, config: str, db: str, day: datetime | None, settings: str | None
    ) -> None:
        try:
            self.restaurant = load_restaurant(Path(config))
            self.settings = load_settings(Path(settings)) if settings else None
        except (ConfigError, SettingsError) as exc:
            _fail(str(exc), EXIT_BAD_INPUT)
        if day is not None:
            try:
                check_day(day.date())  # as the API's ?date= (400): no calendar past it
            except ValueError as exc:
                _fail(f"--date: {exc}", EXIT_BAD_INPUT)
        self.now = obj.now
        self.store: LogStore = obj.store(db, [(config, self.restaurant)])
        # With the partners `serve` knows, a change made here reaches them as one made on
        # the tablet does (booking notifications and replaces, through the outbox).
        known = self.settings or Settings()
        notifier = Notifier.of(known)
        self.receiver = Receiver([self.restaurant], self.store, known, lambda: self.now, notifier)
        self.book: DayBook = self.receiver.books[self.restaurant.merchant_id]
        self.chosen = day.date() if day is not None else None

    @property
    def merchant(self) -> str:
        return self.restaurant.merchant_id

    def lands_on(self, any_id: str | None) -> date | None:
        """The day a command writes: a booking id we gave out names the booking's own day
        (the command acts there, with --date or without it); anything else lands on --date
        or the day being served now (None: closed today, the service refuses it)."""
        if any_id is not None:
            index = self.store.recall(BOOKING_SCOPE, any_id)
            if isinstance(index, dict) and index.get("merchant_id") == self.merchant:
                return date.fromisoformat(str(index["day"]))
        return self.chosen or self.receiver.today(self.restaurant, self.now)

    def no_silent_no_show(self, day: date | None) -> None:
        """Without the partners known, refuse to write `day`'s log (the day the command
        lands on: `lands_on`) while a partner's booking there is past its hold: the
        operation would make it a no-show on the way (as time does), or cancel it on a day
        closed since, and the partner would never hear of it. `serve` (or --settings) tells
        it. The day written, not the one named: without --date a booking's command still
        writes the booking's day, a day a reload may have closed since."""
        if self.settings is None and day is not None:
            unheard = partner_unheard(self.book, day, self.now)
            if unheard is not None:
                _fail(unheard, EXIT_REFUSED)

    def partner_told(self, booking_id: str) -> None:
        """Refuse to change a partner's booking when the partners are not known here: the
        partner would go on believing it stands as it was."""
        if self.settings is not None:
            return
        index = self.store.recall(BOOKING_SCOPE, booking_id)
        partner = index.get("partner") if isinstance(index, dict) else None
        if partner:
            _fail(
                f"{booking_id} is {partner}'s booking: give --settings (the file `serve`"
                f" reads) so that {partner} hears of the change",
                EXIT_REFUSED,
            )

    def now_only(self, what: str) -> None:
        """Refuse (exit 1) a --date other than the service day being worked now: `what`
        happens at the door or on the floor now, as on the tablet (whose API has no date
        for it). A walk-in written on a later day would sit at a table before it came,
        one on a day gone by after its service closed: a visit that never was."""
        if self.chosen is None:
            return
        r = self.restaurant
        working = self.receiver.today(r, self.now)
        if self.chosen == working:
            return
        serving = (
            f"the day being served is {working.isoformat()}"
            if working is not None
            else f"{r.name} is closed today"
        )
        _fail(
            f"{what} now, on the day being served, not on {self.chosen.isoformat()}:"
            f" {serving} (leave out --date)",
            EXIT_REFUSED,
        )

    def on_its_day(self, any_id: str, command: str, walk_in: str | None) -> None:
        """Refuse (exit 1) a --date other than the day `command` acts on: it acts on a
        booking we gave out on the booking's own day, the id names it (one moved since,
        where it now is), and on a party the id does not index (a walk-in) on the day
        being served now, as `now_only` says (`walk_in`, what is done, in words; None:
        the command takes booking ids only, and an unknown one is refused as unknown).
        A --date there was once taken and silently ignored: a host who named a day
        believed the command acted on it, whatever it did."""
        if self.chosen is None:
            return
        index = self.store.recall(BOOKING_SCOPE, any_id)
        if isinstance(index, dict) and index.get("merchant_id") == self.merchant:
            booked = str(index.get("day"))
            if booked != self.chosen.isoformat():
                _fail(
                    f"{any_id} is booked on {booked}, not on {self.chosen.isoformat()}:"
                    f" {command} acts on the booking's own day (leave out --date)",
                    EXIT_REFUSED,
                )
            return
        if walk_in is not None:
            self.now_only(walk_in)

    def day(self) -> date:
        """--date, or the service day the host is working now."""
        r = self.restaurant
        found = self.chosen or self.receiver.today(r, self.now)
        if found is None or calendar.opening_instant(r, found) is None:
            when = found.isoformat() if found else "today"
            _fail(f"{r.name} is closed {when}", EXIT_REFUSED)
        return found

    def reservation_rows(self) -> tuple[int, list[dict[str, Any]]]:
        """The minute the day stands at and its reservations, as the floor document lists
        them, each with `attention` (`with_attention`). A day a reload has closed since its
        bookings were taken still has them (calendar.log_opening): they can be read,
        cancelled and moved, and the host API's list (GET .../reservations?date=) shows
        them, so they are listed here too, as of now (one past its hold reads cancelled:
        DayBook.snapshot). A closed day whose log
        holds nothing is refused as closed, as `day` refuses it."""
        r = self.restaurant
        found = self.chosen or self.receiver.today(r, self.now)
        if found is not None and calendar.opening_instant(r, found) is None:
            opening = calendar.log_opening(r, found)
            if opening is not None and self.book.length(found) > 0:
                stand, _length, meta = self.book.snapshot(found, self.now)
                ts = (
                    stand.last_ts
                    if stand.last_ts is not None
                    else self.book.minute(found, self.now)
                )
                rows = reservation_rows(self.book, found, stand, meta, opening)
                return ts, self.with_attention(found, rows)
        day = self.day()
        floor = FloorViews(self.book).floor(day, self.now)
        return floor["minute"], self.with_attention(day, floor["reservations"])

    def with_attention(self, day: date, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each row with `attention`, as the host API's list of the day has it: why the
        booking no longer fits the restaurant's rules, or None. A server keeps that list in
        memory only (feed.service.attention): worked out at its start from what the log
        stored, against its files (`stored_misfits`), and again at each reload. Nothing
        else stores it, so it is worked out here the same way, against the file given:
        what a server started (or reloaded) on that file lists. A booking the day's replay
        no longer shows (on a table removed) is not listed: a command on such a file is
        refused before it starts (cli.refuse_moved_openings), as `serve` is."""
        return marked(rows, (m for m in stored_misfits(self.book, self.now) if m.day == day))


def _one_config(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> str:
    """The one restaurant file of a command that works on one restaurant. Given twice, it
    is refused rather than the last one taken: the host meant one of them, and acting on the
    other restaurant (a walk-in seated at its tables, a booking taken there) is not undone.
    The same file named twice is no doubt, and is taken."""
    named = {str(Path(v).resolve()) for v in value}
    if len(named) > 1:
        _fail(
            f"--config given {len(value)} times ({', '.join(value)}): this command works on"
            " one restaurant, give its file once",
            EXIT_BAD_INPUT,
        )
    return value[0]


def config_option(
    help_text: str, dest: str = "config"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--config FILE, exactly once (see `_one_config`), handed to the command as `dest`."""
    return click.option(
        "--config",
        dest,
        required=True,
        multiple=True,  # to see a second one at all: click keeps only the last otherwise
        callback=_one_config,
        type=click.Path(dir_okay=False),
        help=help_text,
    )


def settings_option(effect: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--settings (env HOSTSTAND_SETTINGS): the partners `serve` knows, from its file."""
    return click.option(
        "--settings",
        "settings_path",
        envvar="HOSTSTAND_SETTINGS",
        type=click.Path(dir_okay=False),
        help=f"The partners `serve` knows (its settings file; env HOSTSTAND_SETTINGS): {effect}",
    )


def _stand_command(
    name: str,
    help_text: str,
    *,
    writes: bool = True,
    now_only: str | None = None,
    on_its_day: str | None = None,
    walk_in: str | None = None,
    example: str = "",
) -> Callable[[Callable[..., None]], click.Command]:
    """A command with --config, --db, --date, --json and --settings, handed a Stand; one
    that `writes` the log first checks that no partner misses what it changes. `now_only`
    (what the command does, in words): --date may name only the day being served now.
    `on_its_day` (the argument holding a booking's id): --date may name only the day the
    command acts on, the booking's own, or for a party no booking id names the day
    being served now (`walk_in`, in words; without it such an id is left to be refused
    as unknown): see `Stand.on_its_day`."""
    if on_its_day is not None:
        day_help = (
            "Service day (default: the one being served now). Only the booking's own"
            + (" (a walk-in's: the one being served now)" if walk_in else "")
            + ": the command acts on that day."
        )
    else:
        day_help = "Service day (default: the one being served now)." + (
            " Only the one being served now." if now_only else ""
        )

    def wrap(fn: Callable[..., None]) -> click.Command:
        @click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
        @click.option("--date", "day", type=click.DateTime(["%Y-%m-%d"]), help=day_help)
        @click.option(
            "--db",
            default="hoststand.db",
            envvar="HOSTSTAND_DB",
            show_default=True,
            help="SQLite file holding the service-day logs, or a postgresql:// URL"
            " (env HOSTSTAND_DB).",
        )
        @config_option("The restaurant's file (TOML), e.g. samples/marlowes.toml; once.")
        @settings_option(
            "partners then hear of the changes made here. Without it, a partner's booking"
            " is not changed here."
        )
        @click.pass_obj
        def command(
            obj: Obj,
            /,
            config: str,
            settings_path: str | None,
            db: str,
            day: datetime | None,
            as_json: bool,
            **kw: Any,
        ) -> None:
            stand = Stand(obj, config, db, day, settings_path)
            try:
                if now_only is not None:
                    stand.now_only(now_only)
                if on_its_day is not None:
                    stand.on_its_day(str(kw[on_its_day]), name, walk_in)
                if writes:
                    named = kw[on_its_day] if on_its_day is not None else None
                    stand.no_silent_no_show(stand.lands_on(named))
                fn(stand, as_json, **kw)
            except StoreError as exc:  # the URL's password is never printed
                # On one line: a driver's message may run on over several.
                said = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
                _fail(f"{redact(db)}: {said}", EXIT_REFUSED)
            finally:
                stand.store.close()

        at = "" if now_only is not None or on_its_day is not None else " --date 2026-12-05"
        command.__doc__ = help_text + examples(
            f"hoststand host {name} --config samples/marlowes.toml --db hoststand.db"
            f"{at}{' ' + example if example else ''}"
        )
        # The command's own arguments and options, declared on `fn`.
        command.__click_params__.extend(getattr(fn, "__click_params__", []))  # type: ignore[attr-defined]
        return host_group.command(name)(command)

    return wrap


@click.group("host")
def host_group() -> None:
    """The host stand on a stored day: the board, walk-ins, tables, reservations.

    Each command works on the floor plan in force on the database, as the tablet does;
    --date (default: the day being served now) names the day.

    \b
    Example:
      hoststand host board --config samples/marlowes.toml --db hoststand.db
      hoststand host walk-in --config samples/marlowes.toml --db hoststand.db 4 --name Ann
    """


# -- answers ---------------------------------------------------------------------------


def _answer(stand: Stand, reply: Reply | Applied | Refused, as_json: bool, words: str) -> None:
    """Print what happened, or the refusal on stderr with its exit status (exit_status)."""
    if isinstance(reply, Refused):
        _refused(reply.code, reply.message, as_json)
    if isinstance(reply, Applied):
        if isinstance(reply.result, Rejected):
            _refused(reply.result.code, f"refused: {reply.result.code}", as_json)
        body: dict[str, Any] = {"operation": reply.operation, "result": reply.result}
    else:
        if reply.code is not None:
            _refused(reply.code, str(reply.body["error"]["message"]), as_json)
        body = reply.body
    if as_json:
        click.echo(json.dumps(body, sort_keys=True))
        return
    # The engine's answer, or a host reply's list of parties the pass seated (a cancel's).
    result = body.get("result", body.get("seated", body))
    if isinstance(result, list):
        seated = ", ".join(s.replace("@", " at ") for s in result)
        click.echo(words + (click.style(f"; seat now: {seated}", fg="green") if seated else ""))
    elif isinstance(result, str) and result.startswith("seated"):
        click.echo(words + ": " + click.style(result, fg="green"))
    else:
        said = result if "result" in body else body.get("status", "done")
        click.echo(words if said is True else f"{words}: {said}")  # "X arrived": engine's true


def _refused(code: str, message: str, as_json: bool) -> NoReturn:
    if as_json:
        click.echo(json.dumps({"error": {"code": code, "message": message}}, sort_keys=True))
    _fail(message, exit_status(code))


def exit_status(code: str) -> int:
    """A refusal's exit status by its code: the one place host commands map codes."""
    return EXIT_BAD_INPUT if code in BAD_INPUT_CODES else EXIT_REFUSED


# -- reading ----------------------------------------------------------------------------


@_stand_command(
    "board", "Print the floor: who sits where and for how long, holds, the waitlist.", writes=False
)
def board(stand: Stand, as_json: bool) -> None:
    day = stand.day()
    floor = FloorViews(stand.book).floor(day, stand.now)
    if as_json:
        # The tablet's floor document, its reservations with `attention` as the tablet's.
        rows = stand.with_attention(day, floor["reservations"])
        click.echo(json.dumps({**floor, "reservations": rows}, sort_keys=True, indent=1))
        return
    click.echo(click.style(f"{floor['name']}, {floor['day']} {floor['clock']}", bold=True))
    for t in floor["tables"]:
        head = f"{t['id']:<5} {t['seats']:>2} seats  "
        o, hold = t["occupant"], t["hold"]
        if o:
            over = o["overstay"]
            left = f"over by {-o['turn_left']} min" if over else f"{o['turn_left']} min left"
            text = f"{_who(o)} at {o['unit']}, seated {o['seated_at']} ({o['seated_for']} min, "
            click.echo(head + text + click.style(left, fg="red" if over else None) + ")")
        elif hold:
            until = f"until {hold['until']}" if hold["until"] else "guests here"
            click.echo(
                head + click.style(f"held for {_who(hold)} at {hold['at']}, {until}", fg="yellow")
            )
        else:
            click.echo(head + click.style("free", fg="green"))
    click.echo("waiting (oldest first):" if floor["queue"] else "nobody is waiting")
    for i, p in enumerate(floor["queue"], 1):
        quote = f", quoted {p['quote']} min" if p["quote"] is not None else ""
        nxt = click.style(f", next up {p['next_up']}", fg="green") if p["next_up"] else ""
        click.echo(f"  {i}. {_who(p)} ({p['party_id']}), waited {p['waited']} min{quote}{nxt}")


def _who(p: dict[str, Any]) -> str:
    name = _shown(str(p.get("name") or p.get("party_id") or p.get("reservation_id")))
    return f"{name} ({p['size']})" if p.get("size") else name


_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _shown(text: str) -> str:
    """A guest's text (a partner's booking may carry any) as one line of plain text: a
    newline in a name printed a second, made-up row in the list, an escape sequence was
    run by the host's terminal, a right-to-left override turned the row back to front."""
    return "".join(" " if unicodedata.category(c) == "Cc" else c for c in text if c not in _BIDI)


@_stand_command(
    "reservations", "List the day's reservations by time with their state.", writes=False
)
def reservations(stand: Stand, as_json: bool) -> None:
    minute, rows = stand.reservation_rows()
    if as_json:
        click.echo(json.dumps(rows, sort_keys=True, indent=1))
        return
    if not rows:
        click.echo("no reservations")
    colours = {"booked": "blue", "arrived": "yellow", "seated": "green"}
    for r in rows:
        where = r["unit"] + (f" in {r['area']}" if r.get("area") else "")
        where += f" (sits at {r['seated_at']})" if r["seated_at"] else ""
        # Still booked past its time (held 15 minutes, then a no-show): worth a phone call.
        late = minute - r["at"] if r["status"] == "booked" else 0
        lateness = click.style(f"{late} min late", fg="yellow") if late > 0 else ""
        moved = f"moved to {r['moved_to']}" if r.get("moved_to") else ""
        # A booking no longer within the rules (a file changed since it was taken): marked
        # first, with why, as the tablet's row and the API's list say it.
        why = r["attention"]
        attention = click.style(f"! {why}", fg="red", bold=True) if why else ""
        guests = (_shown(r["phone"]), _shown(r["notes"]))
        extra = "  ".join(x for x in (attention, lateness, moved, *guests) if x)
        state = click.style(f"{r['status']:<9}", fg=colours.get(r["status"]))
        # The id follows: a booking without a name is "-", not its id twice.
        who = (_shown(r["name"]) or "-") + (f" ({r['size']})" if r["size"] else "")
        click.echo(f"{r['time']}  {state} {who:<20} {where:<8} {r['reservation_id']}  {extra}")


# -- changing ---------------------------------------------------------------------------


def _operate(stand: Stand, name: str, *args: Any, meta: dict[str, Any] | None = None) -> Any:
    """On today's log as the API does (its checks: the party size, a service open for a
    walk-in); a --date naming another day was refused before (`Stand.now_only`)."""
    return stand.receiver.host_operation(stand.merchant, name, *args, meta=meta)


@_stand_command(
    "walk-in",
    "A walk-in joins the queue, or is seated at once if a table is right.",
    now_only="a walk-in is a party at the door",
    example="4 --name Ann",
)
@click.argument("size", type=click.IntRange(1, 20))
@click.option("--name", default="", help="Guest name.")
@click.option("--phone", default="", help="Guest telephone.")
@click.option("--id", "party_id", help="Party id (default: a new one).")
def walk_in(
    stand: Stand, as_json: bool, size: int, name: str, phone: str, party_id: str | None
) -> None:
    pid = party_id or "w-" + secrets.token_hex(4)
    meta = {"source": "host", "name": name, "phone": phone, "party_size": size}
    _answer(stand, _operate(stand, "walk_in", pid, size, meta=meta), as_json, f"{name or pid}")


@_stand_command(
    "free",
    "The party at TABLE has left; whoever the rules pick is seated.",
    now_only="a table is freed",
    example="T4",
)
@click.argument("table")
def free(stand: Stand, as_json: bool, table: str) -> None:
    _answer(stand, _operate(stand, "free", table), as_json, f"{table} freed")


@_stand_command(
    "leave",
    "A waiting party gives up and leaves the queue.",
    now_only="a party leaves the queue",
    example="w-1a2b3c4d",
)
@click.argument("party_id")
def leave(stand: Stand, as_json: bool, party_id: str) -> None:
    _answer(stand, _operate(stand, "leave", party_id), as_json, f"{party_id} left")


@_stand_command(
    "check-in",
    "The guests of a reservation are here: seat them at their table.",
    on_its_day="reservation_id",
    example="bk-0123456789abcdef",
)
@click.argument("reservation_id")
def check_in(stand: Stand, as_json: bool, reservation_id: str) -> None:
    reply = stand.receiver.host_operation(stand.merchant, "check_in", reservation_id)
    _answer(stand, reply, as_json, f"{reservation_id} checked in")


@_stand_command(
    "cancel",
    "Cancel a reservation that is still booked.",
    on_its_day="reservation_id",
    example="bk-0123456789abcdef",
)
@click.argument("reservation_id")
def cancel(stand: Stand, as_json: bool, reservation_id: str) -> None:
    stand.partner_told(reservation_id)
    reply = stand.receiver.host_operation(stand.merchant, "cancel", reservation_id)
    _answer(stand, reply, as_json, f"{reservation_id} cancelled")


@_stand_command(
    "arrive",
    "The guests of a booked reservation are at the door.",
    on_its_day="reservation_id",
    walk_in="a party arrives",
    example="bk-0123456789abcdef",
)
@click.argument("reservation_id")
def arrive(stand: Stand, as_json: bool, reservation_id: str) -> None:
    reply = stand.receiver.host_hand(stand.merchant, "arrive", reservation_id)
    _answer(stand, reply, as_json, f"{reservation_id} arrived")


@_stand_command(
    "seat",
    "Seat a waiting party or a booked reservation at UNIT (T3, T5+T6).",
    on_its_day="party_id",
    walk_in="a waiting party is seated",
    example="w-1a2b3c4d T5+T6",
)
@click.argument("party_id")
@click.argument("unit")
def seat(stand: Stand, as_json: bool, party_id: str, unit: str) -> None:
    reply = stand.receiver.host_hand(stand.merchant, "seat", party_id, unit)
    _answer(stand, reply, as_json, f"{party_id} seated at {unit}")


@_stand_command(
    "move",
    "Move a seated party to UNIT; the tables it leaves go to the queue.",
    on_its_day="party_id",
    walk_in="a seated party is moved",
    example="w-1a2b3c4d T3",
)
@click.argument("party_id")
@click.argument("unit")
def move(stand: Stand, as_json: bool, party_id: str, unit: str) -> None:
    reply = stand.receiver.host_hand(stand.merchant, "move", party_id, unit)
    _answer(stand, reply, as_json, f"{party_id} moved to {unit}")


@_stand_command(
    "change",
    "The guest phoned: book RESERVATION_ID again at another time or party size (same id; "
    "a partner whose booking it is hears of it, given --settings).",
    on_its_day="reservation_id",
    example="bk-0123456789abcdef --at 2026-12-05T20:30 --party-size 3",
)
@click.argument("reservation_id")
@click.option(
    "--at",
    type=click.DateTime(["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]),
    help="New slot start, local time: YYYY-MM-DDTHH:MM (default: as booked).",
)
@click.option(
    "--party-size", type=click.IntRange(1, 20), help="New number of guests (default: as booked)."
)
@click.option(
    "--over-pacing",
    is_flag=True,
    help="Book the new time even beyond its slot's pacing caps (marked over pacing).",
)
def change(
    stand: Stand,
    as_json: bool,
    reservation_id: str,
    at: datetime | None,
    party_size: int | None,
    over_pacing: bool,
) -> None:
    if at is None and party_size is None:
        _fail("give --at, --party-size or both", EXIT_BAD_INPUT)
    stand.partner_told(reservation_id)
    if at is not None:  # a change to another day writes that day's log too
        landing = calendar.slot_at(stand.restaurant, at)
        stand.no_silent_no_show(landing[0] if landing is not None else None)
    start = at.strftime("%Y-%m-%dT%H:%M") if at is not None else None
    reply = stand.receiver.host_change(
        stand.merchant, reservation_id, party_size, start, over_pacing=over_pacing
    )
    if reply.code is None and not as_json:
        b = reply.body
        when = str(b["start"])[:16].replace("T", " ")
        click.echo(f"{reservation_id} changed: party of {b['party_size']} at {when}, {b['unit']}")
        return
    _answer(stand, reply, as_json, f"{reservation_id} changed")
