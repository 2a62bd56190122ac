"""The `hoststand` command line. Each command's docstring is its help.

Errors leave through `fail`, the one place that maps them to an exit status:
1 for a refusal of the request (a booking that cannot be made), 2 for bad input, 3 for a
server that could not start (its port is taken).
"""

from __future__ import annotations

import difflib
import json
import sys
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import IO, Any, NoReturn

import click
from click._termui_impl import ProgressBar

from engine import run as run_operations
from feed.clock import parse_instant, real_now
from feed.files.documents import MAX_TIMESTAMP_SEC, MIN_TIMESTAMP_SEC, FeedError
from feed.files.export import ExportSummary, FeedPart, export_feeds
from feed.hostcli import config_option as one_config_option
from feed.hostcli import host_group, partner_unheard, settings_option
from feed.service.days import OVER_PACING, Applied, Cell, DayBook
from feed.service.floors import floor_drift
from feed.settings import (
    SETTINGS_KEYS,
    SettingsError,
    load_settings,
    settings_problems,
    unreachable,
    unread_environment,
)
from feed.venue import calendar
from feed.venue.files import check_restaurant_files
from feed.venue.restaurant import ConfigError, Restaurant, RestaurantModel, load_restaurant
from store import is_url, open_store, redact
from store.log import LogStore, StoreError

EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2
EXIT_CANNOT_SERVE = 3  # `serve` could not listen on its address (uvicorn's startup failure too)
DEFAULT_DB = "hoststand.db"


def one_line(message: object) -> str:
    """A driver's or click's message on one line: it may run on over several (psycopg's
    "connection refused" adds "\n\tIs the server running on that host...")."""
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


def fail(message: str, status: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print a one-line error on stderr and exit with `status` (no traceback). A restaurant
    file's problems (ConfigError) are one line each, so one edit can fix them all."""
    click.echo(f"hoststand: {message}", err=True)
    sys.exit(status)


class OneLineErrors(click.Group):
    """The `hoststand` group: bad input on the command line (an unknown option, a bad
    date, a missing argument or file) is one line on stderr, naming the command and where
    its help is, and exit status 2, as every other bad input is; click's own answer was
    three lines (its usage, a hint, then the error)."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "hoststand"
            message = one_line(exc.format_message()).rstrip(".")
            click.echo(f"{where}: {message}; see {where} --help", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except click.ClickException as exc:  # a file click could not open, say
            click.echo(f"hoststand: {one_line(exc.format_message())}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("hoststand: aborted", err=True)
            sys.exit(EXIT_REFUSED)
        sys.exit(code if isinstance(code, int) else 0)


@dataclass
class Context:
    now: datetime
    pinned: bool = False  # --now given: the server's clock stands still at `now`

    def store(
        self,
        db: str,
        configs: Sequence[tuple[str, Restaurant]] = (),
        *,
        start: bool = False,
        restore: bool = False,
    ) -> LogStore:
        """The store `db` names; with `configs` (each restaurant and its file), refused
        when a file moved the opening of a day the store has entries for, and (unless
        `start`: `serve`'s) when a file's floor plan is not the one in force there; a
        start, when it is an older one the store replaced (unless `restore`)."""
        try:
            store = open_store(db, on_upgrade=_upgrading)
        except StoreError as exc:
            fail(f"{redact(db)}: cannot open the database ({one_line(exc)})")
        refuse_moved_openings(
            store, configs, self.now, start=start, restore=restore, clock=self.clock
        )
        return store

    def clock(self) -> datetime:
        """The process's clock: `now` when --now pinned it, the real one else."""
        return self.now if self.pinned else real_now()


def _upgrading(line: str) -> None:
    """The upgrade of a database written by an older version, as it goes, on stderr."""
    click.echo(f"hoststand: {redact(line)}", err=True)


def refuse_moved_openings(
    store: LogStore,
    configs: Sequence[tuple[str, Restaurant]],
    now: datetime,
    *,
    start: bool = False,
    restore: bool = False,
    clock: Callable[[], datetime] | None = None,
) -> None:
    """Exit 2 (one line) when a restaurant file moved the opening of a day whose log already
    has entries: its times count from the opening, so every stored booking would be read
    at another time. As a reload refuses it (feed.service.config_reload). And when it
    removed a table or combo a booking from yesterday on is still booked on: the replay
    under its floor would drop the booking, which only a reload can book again elsewhere;
    or one a party sits at now: the replay would seat it nowhere, or at another table.

    A start (`start`: `serve`) then keeps its files' floors as the floors in force; a
    command does not (`refuse_other_floor`). A start on a floor the store replaced (an
    older copy of the file) is refused unless `restore` (config_reload.stored_floor_replaced).
    `clock`: the process's, read when a floor is worked out again after another writer's
    (floors.note_floor); None: `now` stands."""
    from feed.service.config_reload import (
        record_zone,
        stored_floor_replaced,
        stored_openings_moved,
        stored_parties_removed,
        stored_units_removed,
        stored_zone_changed,
    )

    try:
        moved: list[str] = []
        checks = (stored_openings_moved, stored_units_removed, stored_parties_removed)
        for path, r in configs:
            # A changed zone is named as the cause (its moved openings would follow from it).
            changed = stored_zone_changed(store, r, Path(path), now)
            found = checks if not changed else ()
            moved += changed + [line for f in found for line in f(store, r, Path(path), now)]
        if not moved and not start:
            moved = refuse_other_floor(store, configs)
        if start and not restore:  # named first: what else is found may follow from it
            older = [line for p, r in configs for line in stored_floor_replaced(store, r, Path(p))]
            moved = older + moved
        if not moved:
            # The zone the logs are written under from now on: a store from before these
            # records gets the file's, which the opening check above found agreeing.
            for _path, r in configs:
                record_zone(store, r)
    except StoreError as exc:
        store.close()
        fail(f"cannot read the stored days: {one_line(exc)}")
    if moved:
        store.close()
        more = f" (and {len(moved) - 1} more like it)" if len(moved) > 1 else ""
        fail(moved[0] + more)
    from feed.service.config_reload import recover_removed_units
    from feed.service.floors import (
        BY_COMMAND,
        BY_RESTORE,
        BY_START,
        FloorRefused,
        kept_floor,
        note_floor,
        replaced_floor,
    )

    refused: list[str] = []
    try:  # a table removed while no server ran: kept for the replay of the days it served
        for path, r in configs:
            recover_removed_units(store, r, now)  # a store that never kept its floor
            # A command's floor is the one in force, or one listing its tables otherwise
            # with the same ties (floors.floor_drift): the one in force is kept as it is.
            if start or not kept_floor(store, r.merchant_id)[1]:
                how = BY_START if start else BY_COMMAND
                if start and restore and replaced_floor(store, r.merchant_id, r.floor):
                    how = BY_RESTORE
                later = None if clock is None else (lambda: clock().timestamp())
                kept = note_floor(
                    store, r.merchant_id, r.floor, now.timestamp(), how, later,
                    _checks_again(store, path, r, now, clock),
                )  # fmt: skip
                if isinstance(kept, FloorRefused):
                    refused += kept.problems
                    break
    except StoreError as exc:
        store.close()
        fail(f"cannot keep the floor plan: {one_line(exc)}")
    if refused:
        store.close()
        more = f" (and {len(refused) - 1} more like it)" if len(refused) > 1 else ""
        fail(refused[0] + more)


def _checks_again(
    store: LogStore,
    path: str,
    r: Restaurant,
    now: datetime,
    clock: Callable[[], datetime] | None,
) -> Callable[[], list[str]]:
    """The checks of what sits and is booked at a unit `r` lacks, made again as a start's
    floor is worked out after another server's (floors.note_floor): that floor may have
    added T7, seated P there or booked on it since they were first made."""
    from feed.service.config_reload import stored_parties_removed, stored_units_removed

    def check() -> list[str]:
        then = now if clock is None else max(now, clock())
        found = (stored_units_removed, stored_parties_removed)
        return [line for f in found for line in f(store, r, Path(path), then)]

    return check


def refuse_other_floor(store: LogStore, configs: Sequence[tuple[str, Restaurant]]) -> list[str]:
    """A command's line for each file whose floor plan is not the one in force on the store
    (floors.floor_drift: the one the last start or reload kept). A command's file is not a
    reload: an operator running one with an older copy of the file (one still with a table
    a reload removed) would put that table back in force for every server, and one with a
    file edited before the servers were reloaded would take the new floor in force for
    them, without a reload's checks. So a command never changes the floor in force, and
    one whose file differs is refused (exit 2, nothing written), naming the difference:
    working on the file's floor instead would show, book and export a table the servers
    no longer have (or lack one they have). On a store no start kept a floor on yet, the
    command's file is kept, as before (there is no floor in force it could differ from)."""
    out: list[str] = []
    for path, r in configs:
        drift = floor_drift(store, r.merchant_id, r.floor)
        if drift is not None:
            out.append(
                f"{path}: tables: this file's floor plan is not the one in force on the store"
                f" ({drift}); a command does not change the floor plan, a reload or a start of"
                " `hoststand serve` does: give it the file the servers run, or reload them on"
                " this one first"
            )
    return out


def load_config(path: str) -> Restaurant:
    try:
        return load_restaurant(Path(path))
    except ConfigError as exc:
        fail(str(exc))


def load_configs(paths: Sequence[str]) -> list[Restaurant]:
    """Every restaurant file of a command that serves or exports several: each loaded as
    `load_config`, then refused (exit 2, one line) when two name one restaurant (the same
    file twice, or two files with one merchant_id), as `check` and a reload refuse them.
    `serve` started on them and answered for the restaurant, but its every export failed."""
    restaurants = [load_config(p) for p in paths]
    first_of: dict[str, str] = {}
    for path, r in zip(paths, restaurants, strict=True):
        earlier = first_of.get(r.merchant_id)
        if earlier is None:
            first_of[r.merchant_id] = path
        elif Path(earlier).resolve() == Path(path).resolve():
            fail(f"{path}: the file is given twice (--config once per restaurant)")
        else:
            fail(
                f"{path}: merchant_id: {r.merchant_id!r} is also the merchant_id of {earlier}"
                " (each restaurant needs its own file)"
            )
    return restaurants


def _parse_now(_ctx: click.Context, _param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_instant(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO-8601 time") from None


db_option = click.option(
    "--db",
    default=DEFAULT_DB,
    envvar="HOSTSTAND_DB",
    show_default=True,
    help="SQLite file holding the service-day logs, or a postgresql:// URL (env HOSTSTAND_DB).",
)
configs_option = click.option(
    "--config",
    "config_paths",
    required=True,
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Restaurant configuration (TOML); repeat for several restaurants.",
)
config_option = one_config_option(
    "Restaurant configuration (TOML), e.g. samples/marlowes.toml; once.", "config_path"
)


@click.group(
    "hoststand", cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "--now",
    callback=_parse_now,
    metavar="ISO-8601",
    help="Pin the clock (e.g. 2026-12-05T18:00:00+00:00); default: the real clock.",
)
@click.pass_context
def main(ctx: click.Context, now: datetime | None) -> None:
    """Host Stand: the restaurant's host stand and its partner availability feed.

    Every command takes -h/--help. Exit status: 0 done, 1 the request was refused (no
    table for that booking), 2 bad input (one line on stderr), 3 `serve` could not listen.

    \b
    Example:
      hoststand check samples/marlowes.toml samples/server.toml
      hoststand serve --config samples/marlowes.toml --settings samples/server.toml
      hoststand --now 2026-12-04T12:00:00Z slots --config samples/marlowes.toml --date 2026-12-05
    """
    ctx.obj = Context(now=now or real_now(), pinned=now is not None)


@main.command("run")
@click.argument("operations_file", type=click.File("r", encoding="utf-8"))
def run_command(operations_file: IO[str]) -> None:
    """Replay a JSON list of engine operations on a fresh host stand.

    OPERATIONS_FILE holds a JSON list such as [["walk_in", 0, "P1", 2], ["board", 5]]
    ("-" reads standard input). Prints the JSON list of results, one per operation.

    \b
    Example:
      hoststand run samples/marlowes-part3.json
      echo '[["walk_in", 0, "P1", 2], ["board", 1]]' | hoststand run -
    """
    name = getattr(operations_file, "name", "-")
    try:
        operations = json.load(operations_file)
    except RecursionError:  # the parser's own nesting limit
        fail(f"{name}: not valid JSON (nested too deeply)")
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, a too-long integer
        fail(f"{name}: not valid JSON ({exc})")
    if not isinstance(operations, list):
        fail(f"{name}: expected a JSON list of operations, got {type(operations).__name__}")
    click.echo(json.dumps(run_operations(operations)))


@main.command("slots")
@config_option
@db_option
@click.option("--date", "day", required=True, type=click.DateTime(["%Y-%m-%d"]), help="Day.")
@click.option("--party-size", type=click.IntRange(1, 20), help="Only this party size.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a grid.")
@click.option("--area", help="Only this seating area (default: each area's grid in turn).")
@click.pass_obj
def slots_command(
    obj: Context,
    config_path: str,
    db: str,
    day: datetime,
    party_size: int | None,
    as_json: bool,
    area: str | None,
) -> None:
    """Preview a day's availability: open/total per slot and party size.

    The grid has the slot times (local) down and the party sizes across; a cell reads
    open/total and is red when nothing is open. Slots that have started show 0 open.
    It is what partners are offered, as the feed: walk-in-only tables and parties above
    max_online_party_size (they book by phone, `hoststand reserve`) are left out. A
    restaurant with seating areas shows a grid per area, or the one named by --area.

    \b
    Example:
      hoststand slots --config samples/marlowes.toml --date 2026-12-05 --party-size 4
    """
    r = load_config(config_path)
    if party_size is not None and party_size > r.max_party_size:
        fail(f"party size {party_size} is above {r.name}'s maximum of {r.max_party_size}")
    if area is not None and r.area(area) is None:
        known = ", ".join(a.id for a in r.areas) or "none"
        fail(f"{r.name} has no area {area!r} (areas: {known})")
    sizes = range(party_size, party_size + 1) if party_size else range(1, r.max_party_size + 1)
    areas: list[str | None] = [area] if area is not None else [a.id for a in r.rooms]
    areas = areas or [None]
    store = obj.store(db, [(config_path, r)])
    try:
        book = DayBook(store, r)
        grids = [(a, book.cells(day.date(), obj.now, sizes, a)) for a in areas]
    finally:
        store.close()
    if as_json:
        rows = [
            {
                "start": c.slot.local.isoformat(),
                "start_sec": c.slot.start_sec,
                "party_size": c.party_size,
                "spots_open": c.spots_open,
                "spots_total": c.spots_total,
                **({"area": a} if a is not None else {}),
            }
            for a, cells in grids
            for c in cells
        ]
        click.echo(json.dumps(rows, indent=1))
        return
    if not calendar.slots(r, day.date()):
        click.echo(f"{r.name} is closed on {day.date().isoformat()}.")
        return
    for a, cells in grids:
        named = r.area(a) if a is not None else None
        where = f" in {named.name}" if named is not None else ""
        if not cells and party_size is not None and party_size > r.online_limit:
            click.echo(
                f"Partners book parties of up to {r.online_limit} at {r.name}"
                f" (max_online_party_size): a party of {party_size} books by phone"
                " (hoststand reserve)."
            )
            continue
        if not cells:
            click.echo(
                f"No table partners may book at {r.name}{where} seats a party of {party_size}."
            )
            continue
        _print_grid(r, day.date(), cells, where)
    if party_size is None and r.online_limit < r.max_party_size:
        click.echo(
            f"Parties of {r.online_limit + 1} to {r.max_party_size} book by phone"
            " (max_online_party_size): not offered to partners, so not shown."
        )


def _print_grid(r: Restaurant, day: date, cells: list[Cell], where: str = "") -> None:
    shown = sorted({c.party_size for c in cells})
    by_slot: dict[datetime, dict[int, tuple[int, int]]] = {}
    for c in cells:
        by_slot.setdefault(c.slot.local, {})[c.party_size] = (c.spots_open, c.spots_total)
    click.echo(f"{r.name}{where}, {day.isoformat()} ({r.tz.key}): open/total by party size")
    click.echo("time  " + "".join(f"{n:>7}" for n in shown))
    for local, row in by_slot.items():
        parts = [f"{local.strftime('%H:%M')} "]
        for n in shown:
            if n not in row:
                parts.append(f"{'-':>7}")
                continue
            spots_open, total = row[n]
            text = f"{spots_open}/{total}".rjust(7)
            parts.append(click.style(text, fg="red" if spots_open == 0 else "green"))
        click.echo("".join(parts))


@main.command("reserve")
@config_option
@db_option
@click.option("--party-size", required=True, type=click.IntRange(1, 20), help="Guests.")
@click.option(
    "--at",
    "at",
    required=True,
    type=click.DateTime(["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]),
    help="Slot start, local time: YYYY-MM-DDTHH:MM.",
)
@click.option("--name", default="", help="Guest name.")
@click.option("--phone", default="", help="Guest telephone.")
@click.option(
    "--over-pacing",
    is_flag=True,
    help="Book even beyond the slot's pacing caps (the booking is marked over pacing).",
)
@settings_option(
    "they then get the day's changed availability, as for a booking taken on the tablet."
)
@click.pass_obj
def reserve_command(
    obj: Context,
    config_path: str,
    db: str,
    party_size: int,
    at: datetime,
    name: str,
    phone: str,
    over_pacing: bool,
    settings_path: str | None,
) -> None:
    """Take a phone booking: the table (or combined tables) is chosen by the availability rules.

    The whole floor (walk-in tables too), parties up to max_party_size; a slot at its
    pacing caps is refused unless --over-pacing. Prints the booking id and its table(s);
    exits with status 1 when it cannot be booked.

    \b
    Example:
      hoststand reserve --config samples/marlowes.toml --party-size 4 --at 2026-12-05T19:00 \\
          --name Ann --phone '+44 20 7946 0000'
    """
    from feed.service.notify import Notifier
    from feed.settings import SettingsError, load_settings

    r = load_config(config_path)
    try:
        settings = load_settings(Path(settings_path)) if settings_path else None
    except SettingsError as exc:
        fail(str(exc))
    if party_size > r.max_party_size:
        fail(f"party size {party_size} is above {r.name}'s maximum of {r.max_party_size}")
    found = calendar.slot_at(r, at)
    if found is None:
        fail(
            f"{at.strftime('%Y-%m-%d %H:%M')} is not a bookable slot at {r.name}: "
            f"{calendar.why_not_a_slot(r, at)} (see `hoststand slots`)",
            EXIT_REFUSED,
        )
    day, slot = found
    store = obj.store(db, [(config_path, r)])
    try:
        meta = {"source": "phone", "name": name, "phone": phone}
        notifier = Notifier.of(settings) if settings else None
        book = DayBook(store, r, notifier)
        # As the host's commands: without the partners known, no partner's booking past its
        # hold is made a no-show on the way by this booking's write of the day.
        unheard = partner_unheard(book, day, obj.now) if settings is None else None
        if unheard is not None:
            fail(unheard, EXIT_REFUSED)
        outcome = book.book(
            day, slot, party_size, obj.now, meta, host=True, over_pacing=over_pacing
        )
    except StoreError as exc:
        fail(f"{redact(db)}: {one_line(exc)}")
    finally:
        store.close()
    if not isinstance(outcome, Applied):
        hint = " (--over-pacing books it anyway)" if outcome.code == OVER_PACING else ""
        fail(f"cannot book: {outcome.message}{hint}", EXIT_REFUSED)
    if outcome.rejected is not None:  # the engine refused what availability chose: a bug
        fail(f"cannot book: {outcome.rejected}", EXIT_REFUSED)
    booking_id, unit = outcome.operation[2], outcome.operation[3]
    when = slot.local.strftime("%Y-%m-%d %H:%M")
    click.echo(f"booked {booking_id}: party of {party_size} at {when}, table {unit}")


@main.command("check")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--settings",
    "settings_paths",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A settings file to check as such, whatever its keys (repeatable).",
)
def check_command(files: tuple[Path, ...], settings_paths: tuple[Path, ...]) -> None:
    """Check restaurant and settings files, as `serve` and its reload would read them.

    A FILE whose top-level keys are settings keys ([[partners]], [[hosts]], [export],
    [health], [retention], admin_token, or a misspelling of one) and none a restaurant's is
    checked as a settings file; any other as a restaurant file (or pass --settings FILE).
    Prints every problem on its own line on stderr ("file: field: reason"), and across the
    restaurant files, two with the same merchant_id. A settings file is read with the
    secrets this environment sets (HOSTSTAND_ADMIN_TOKEN, ...), as serve reads it.
    Prints "FILE: ok (...)" on stdout for each good file; under a settings file checked
    with restaurant files, a note for each of them it gives no host token, and for each
    merchant it names that is none of them. Exit status 2 when any file has a problem,
    else 0.

    \b
    Example:
      hoststand check samples/*.toml
      hoststand check --settings /etc/hoststand/server.toml
    """
    if not files and not settings_paths:
        fail("name the files to check, e.g. hoststand check samples/*.toml")
    restaurant_files = [f for f in files if not _looks_like_settings(f)]
    settings_files = [f for f in files if f not in restaurant_files] + list(settings_paths)
    checked = check_restaurant_files(restaurant_files)
    problems = list(checked.problems)
    for path, r in checked.restaurants:
        if not any(line.startswith(f"{path}: ") for line in checked.problems):
            click.echo(f"{path}: ok (restaurant {r.merchant_id}, {len(r.floor.tables)} tables)")
    served = [r.merchant_id for _, r in checked.restaurants]
    for path in settings_files:
        found = settings_problems(path)
        if found:
            problems += found
            continue
        try:
            # The file with this environment's secrets, as serve takes them: one set too
            # short there refuses serve, and was a traceback here.
            settings = load_settings(path)
        except SettingsError as exc:
            problems.append(f"{path}: {exc}")
            continue
        click.echo(f"{path}: ok (settings)")
        # With the restaurants beside it: what serve would note at start (no refusal: one
        # settings file may serve several servers, each running some restaurants).
        for line in unreachable(settings, served) if served else ():
            click.echo(f"  note: {line}")
        for line in unread_environment(settings):
            click.echo(f"  note: {line}")
    for line in problems:
        click.echo(line, err=True)
    if problems:
        bad = len({line.split(": ", 1)[0] for line in problems})
        fail(f"{len(problems)} problem(s) in {bad} file(s)")


def _looks_like_settings(path: Path) -> bool:
    """A file is a settings file when it has top-level keys, none a restaurant's, and some
    of them settings keys or close to one: a settings file with [[host]] for [[hosts]] is
    told of that key, not checked as a restaurant whose [[partners]] is unknown."""
    try:
        keys = set(tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError):
        return False  # reported as the restaurant file it then is assumed to be
    if not keys or keys & set(RestaurantModel.model_fields):
        return False
    return any(
        key in SETTINGS_KEYS or difflib.get_close_matches(key, SETTINGS_KEYS, n=1, cutoff=0.75)
        for key in keys
    )


main.add_command(host_group)  # hoststand host board|walk-in|free|...: feed/hostcli.py


@main.group("feed")
def feed_group() -> None:
    """Partner feeds: availability, merchants and services.

    \b
    Example:
      hoststand feed export --config samples/marlowes.toml --out out --days 7
      hoststand feed status --db hoststand.db
    """


@feed_group.command("export")
@configs_option
@db_option
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory the feeds are written to (created if missing).",
)
@click.option(
    "--days",
    default=30,
    show_default=True,
    type=click.IntRange(1, 366),
    help="Days of availability from today (the restaurant's horizon_days at most).",
)
@click.option(
    "--shards",
    default=1,
    show_default=True,
    type=click.IntRange(1, 10_000),
    help="Split each feed into this many files.",
)
@click.option("--gzip", "use_gzip", is_flag=True, help="Write .json.gz files.")
@click.option(
    "--shard",
    "shard_spec",
    metavar="I/N",
    help="Write only shard I of N of one feed split across machines (needs --nonce and"
    " --generation-timestamp, the same on every machine).",
)
@click.option("--nonce", help="With --shard: the feed's nonce (uint64 digits).")
@click.option(
    "--generation-timestamp",
    "generation",
    help="With --shard: the feed's generation_timestamp (Unix seconds).",
)
@click.pass_obj
def export_command(
    obj: Context,
    config_paths: tuple[str, ...],
    db: str,
    out_dir: str,
    days: int,
    shards: int,
    use_gzip: bool,
    shard_spec: str | None,
    nonce: str | None,
    generation: str | None,
) -> None:
    """Write the availability, merchant and service feeds for the next DAYS days.

    Future slots only, every party size the floor can seat, spots_open 0 included.
    Files are schema-checked and appear atomically; prints a summary when done.

    Split across machines: each runs `--shard I/N --nonce X --generation-timestamp T` with
    the same N, X and T and its own I, and writes shard I of N of each of the three feeds:
    the restaurants whose SHA-256 of the merchant id mod N is I (the same split on every
    machine, whatever the order of its --config files). On a terminal, a bar shows the
    restaurants done; otherwise one line per restaurant goes to stderr as it is done.

    \b
    Example:
      hoststand feed export --config samples/marlowes.toml --out out --days 7 --shards 2 --gzip
      hoststand feed export --config a.toml --config b.toml --out out --shard 0/4 \\
          --nonce 42 --generation-timestamp 1796500000
    """
    part = _feed_part(shard_spec, nonce, generation, shards)
    restaurants = load_configs(config_paths)
    store = obj.store(db, list(zip(config_paths, restaurants, strict=True)))

    def export(progress: Callable[[Restaurant], None] | None) -> ExportSummary:
        return export_feeds(
            restaurants,
            store,
            Path(out_dir),
            obj.now,
            days=days,
            shards=shards,
            gzip=use_gzip,
            progress=progress,
            part=part,
        )

    try:
        if sys.stderr.isatty():  # progress for a person watching: a bar
            bar: ProgressBar[int]
            with click.progressbar(length=len(restaurants), label="exporting") as bar:
                summary = export(lambda _r: bar.update(1))
        else:  # a log (cron, CI): lines on stderr, the summary alone on stdout
            summary = export(_progress_lines(len(restaurants)))
    except (FeedError, StoreError, ValueError, OSError) as exc:
        fail(f"export failed: {one_line(exc)}")
    finally:
        store.close()
    click.echo(summary.line())
    for note in summary.notes:
        click.echo(f"  note: {note}")
    for f in summary.files:
        click.echo(f"  {f.path} ({f.bytes} bytes, {f.entries} records)")
    store = obj.store(db)
    try:  # `feed status` lists exports: this one too
        store.record_export(
            {
                "started_at": time.time() - summary.seconds,  # wall clock, as `serve`'s
                "finished_at": time.time(),
                "generation_timestamp": summary.generation_timestamp,
                "files": [f.path.name for f in summary.files],
                "bytes": summary.bytes,
                "entries": summary.entries,
                "destination": f"{Path(out_dir)} (feed export)",
                "outcome": "delivered",
                "attempts": 1,
                "error": "",
            }
        )
    finally:
        store.close()


PROGRESS_LINES = 20  # an export of many restaurants logs about this many progress lines


def _progress_lines(total: int) -> Callable[[Restaurant], None]:
    """Progress of an export on stderr when nobody watches a terminal: a line per
    restaurant done, or about PROGRESS_LINES for many (every total/20th, and the last)."""
    every = max(1, -(-total // PROGRESS_LINES))
    done = 0

    def one(r: Restaurant) -> None:
        nonlocal done
        done += 1
        if done % every == 0 or done == total:
            click.echo(f"hoststand: exported {done}/{total} ({r.merchant_id})", err=True)

    return one


def _feed_part(
    spec: str | None, nonce: str | None, generation: str | None, shards: int
) -> FeedPart | None:
    """The machine's part of a split feed from --shard, --nonce and --generation-timestamp
    (None without --shard); a bad or missing value exits 2 saying which."""
    if spec is None:
        if nonce is not None or generation is not None:
            fail("--nonce and --generation-timestamp go with --shard I/N")
        return None
    if shards != 1:
        fail("--shard I/N and --shards N are exclusive: --shard writes one shard of N")
    number, slash, total = spec.partition("/")
    if not (slash and number.isdigit() and total.isdigit()):
        fail(f"--shard {spec!r}: expected I/N, e.g. 0/4")
    if not 0 <= int(number) < int(total):
        fail(f"--shard {spec!r}: I must be 0 to N-1 and N at least 1")
    if nonce is None or generation is None:
        fail("--shard needs --nonce and --generation-timestamp, the same on every machine")
    if not (nonce.isdigit() and len(nonce) <= 20 and int(nonce) < 2**64):
        fail(f"--nonce {nonce!r}: expected a uint64 (digits only, below 2**64)")
    if not (generation.isdigit() and MIN_TIMESTAMP_SEC <= int(generation) <= MAX_TIMESTAMP_SEC):
        fail(
            f"--generation-timestamp {generation!r}: expected Unix seconds between"
            f" {MIN_TIMESTAMP_SEC} and {MAX_TIMESTAMP_SEC} (not milliseconds)"
        )
    return FeedPart(int(number), int(total), nonce, int(generation))


@main.command("serve")
@configs_option
@db_option
@click.option(
    "--settings",
    "settings_path",
    # As `reserve` and the host commands read serve's file: one variable for all of them.
    envvar="HOSTSTAND_SETTINGS",
    type=click.Path(dir_okay=False),
    help="Partners and host tokens (TOML; env HOSTSTAND_SETTINGS); secrets may come from"
    " the environment instead.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=8080,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on (0: one the system picks, printed at start).",
)
@click.option(
    "--export/--no-export",
    default=True,
    show_default=True,
    help="Export the feeds at start-up and on the schedule of the settings' [export].",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="The log on stderr: text lines, or one JSON object per line.",
)
@click.option(
    "--restore-floor",
    is_flag=True,
    help="Put each --config file's floor plan back in force even when it is an older one"
    " the database replaced (a reload or start since): refused without it, as an older"
    " copy of the file would put removed tables back for every server.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default="info",
    show_default=True,
    help="info logs every request and event; warning only what went wrong.",
)
@click.pass_obj
def serve_command(
    obj: Context,
    config_paths: tuple[str, ...],
    db: str,
    settings_path: str | None,
    host: str,
    port: int,
    export: bool,
    log_format: str,
    restore_floor: bool,
    log_level: str,
) -> None:
    """Run the HTTP receiver and its background work.

    Serves signed partner webhooks, the host tablet's API and the partner's booking
    server and waitlist (/v3); exports the feeds at start-up and on the schedule in the
    settings' [export]; sends partners booking notifications and availability replaces.
    Every accepted change is committed to the database before it is acknowledged.
    Stops cleanly on SIGTERM or Ctrl-C (requests in flight finish first), exit status 0.
    SIGHUP (or POST /api/v1/admin/reload with the settings' admin_token) reloads the
    --config files: all valid, applied; else refused with every problem in the log.
    Exit status 3 when it cannot listen on --host/--port (before anything is exported).
    A --config file whose floor plan the database had in force and replaced since (an
    older copy of the file) is refused, exit 2, unless --restore-floor.

    \b
    Example:
      hoststand serve --config samples/marlowes.toml --settings samples/server.toml --port 8080
      hoststand serve --config samples/marlowes.toml --db postgresql://u:p@127.0.0.1/hoststand
    """
    from feed.http.serving import HeldHangups, build, listen, serve
    from feed.settings import SettingsError, load_settings

    # First of all: a SIGHUP (reload) sent while the server starts must not end it.
    held = HeldHangups()
    held.hold()
    restaurants = load_configs(config_paths)
    try:
        settings = load_settings(Path(settings_path) if settings_path else None)
    except SettingsError as exc:
        fail(str(exc))
    # The port first: nothing (no export into the shared staging directory, no database
    # opened) happens for a server that cannot listen.
    try:
        sock = listen(host, port)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}", EXIT_CANNOT_SERVE)
    port = sock.getsockname()[1]  # --port 0: the one the OS chose
    try:
        configs = list(zip(config_paths, restaurants, strict=True))
        store = obj.store(db, configs, start=True, restore=restore_floor)
    except SystemExit:
        sock.close()
        raise
    clock = (lambda: obj.now) if obj.pinned else real_now
    staging = Path(settings.export.staging or ("hoststand.feeds" if is_url(db) else f"{db}.feeds"))
    paths = [Path(p) for p in config_paths]
    app = build(
        restaurants, store, settings, clock, staging, export=export, config_paths=paths, held=held
    )
    names = ", ".join(r.merchant_id for r in restaurants)
    click.echo(f"hoststand: serving {names} on http://{host}:{port} (db {redact(db)})")
    click.echo(f"  health: curl http://{host}:{port}/healthz  (and /readyz, /metrics)")
    click.echo(f"  API:    http://{host}:{port}/docs  (OpenAPI at /openapi.json)")
    click.echo(f"  tablet: http://{host}:{port}/  (sign in with the restaurant's host token)")
    for line in unreachable(settings, [r.merchant_id for r in restaurants]):
        click.echo(f"  note:   {line}")
    for line in unread_environment(settings):
        click.echo(f"  note:   {line}")
    if export:
        every = settings.export.interval_minutes
        click.echo(f"  feeds:  exported to {staging} at start-up and every {every} min")
    try:
        serve(app, sock, log_format=log_format, log_level=log_level, limits=settings.http)
    finally:
        sock.close()
        store.close()


@feed_group.command("status")
@db_option
@click.option(
    "--limit",
    default=10,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="How many of the most recent exports to list.",
)
@click.pass_obj
def status_command(obj: Context, db: str, limit: int) -> None:
    """Show the recent feed exports and what is queued for partners.

    For each export: when, the destination, the outcome, attempts, files and bytes. For the
    outbox: messages pending, delivered and given up, and the delivery lag (seconds from
    the change to the partner's 2xx) over the recent deliveries. Exits 2 when the
    database file does not exist (it is never created here).

    \b
    Example:
      hoststand feed status --db hoststand.db --limit 20
    """
    if not is_url(db) and not Path(db).is_file():
        fail(f"{redact(db)}: no such database file (pass --db, or set HOSTSTAND_DB)")
    store = obj.store(db)
    try:
        exports = store.exports(limit)
        stats = store.outbox_stats()
    finally:
        store.close()
    click.echo("recent exports (newest first):")
    if not exports:
        click.echo("  none yet")
    for record in exports:
        when = datetime.fromtimestamp(record["started_at"], obj.now.tzinfo).strftime(
            "%Y-%m-%d %H:%M:%S"
        )
        took = record["finished_at"] - record["started_at"]
        outcome = record["outcome"]
        colour = "green" if outcome == "delivered" else "red"
        click.echo(
            f"  {when}  {click.style(outcome, fg=colour):<20} {record['destination']}"
            f"  {len(record['files'])} files, {record['bytes']} bytes, {record['entries']} entries,"
            f" {record['attempts']} attempt(s), {took:.1f} s"
            + (f"  ({record['error']})" if record.get("error") else "")
        )
    lags = stats["recent_lags"]
    # Moot: not sent as no server served their restaurant, whose first server back tells
    # partners of their days again; nothing lost, unlike the given-up ones.
    moot = f", {stats['moot']} moot (no server served their restaurant)" if stats["moot"] else ""
    click.echo(
        f"outbox: {stats['pending']} pending, {stats['delivered']} delivered, "
        f"{stats['dead']} given up{moot}"
    )
    if lags:
        p50 = lags[len(lags) // 2]
        p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))]
        click.echo(f"  delivery lag over the last {len(lags)}: p50 {p50:.2f} s, p99 {p99:.2f} s")
    if stats["oldest_pending_created_at"] is not None:
        # By the clock that stamped it (the machine's: delivery lag is a real-time figure),
        # as /healthz and /metrics tell it: under --now it was the pinned instant less a
        # real one, days negative once the real date moved on.
        waiting = time.time() - stats["oldest_pending_created_at"]
        click.echo(f"  oldest pending message waiting {waiting:.0f} s")
