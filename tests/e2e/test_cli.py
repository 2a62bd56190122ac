"""The `hoststand` command line, through click's runner and once as a real process."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
import time as _time
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner, Result

from feed.cli import main
from store import is_url, open_store
from store.log import OutboxMessage
from tests.integration.server_process import start_server

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
MARLOWES = str(SAMPLES / "marlowes.toml")
GOOGLE = str(SAMPLES / "google-floorplan.toml")
BEFORE = "2026-12-01T09:00:00Z"  # days before the Friday every test looks at
FRIDAY = "2026-12-04"
LONDON = ZoneInfo("Europe/London")
# Marlowe's empty floor, party size -> units (open = total).
EMPTY = {1: 2, 2: 5, 3: 3, 4: 4, 5: 1, 6: 1, 7: 2, 8: 2, 9: 1, 10: 1}
BOOKED = re.compile(
    r"^booked (bk-[0-9a-f]{16}): party of (\d+) at (\d{4}-\d\d-\d\d \d\d:\d\d), table (\S+)$"
)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may read the caller's database or leave hoststand.db in the repository."""
    monkeypatch.delenv("HOSTSTAND_DB", raising=False)
    monkeypatch.delenv("HOSTSTAND_SETTINGS", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def db(any_db: str) -> str:
    """`--db` of each backend: an SQLite file, a PostgreSQL URL."""
    return any_db


def hoststand(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, env=env)


def reserve(db: str, size: int, at: str, now: str = BEFORE) -> Result:
    options = ["--config", MARLOWES, "--db", db, "--party-size", str(size), "--at", at]
    return hoststand("--now", now, "reserve", *options)


def slots(db: str, config: str, *options: str, day: str = FRIDAY) -> Result:
    return hoststand(
        "--now", BEFORE, "slots", "--config", config, "--db", db, "--date", day, *options
    )


def one_error_line(result: Result) -> str:
    assert "Traceback" not in result.output + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# ---------------------------------------------------------------- run


def test_run_replays_a_file_of_operations() -> None:
    result = hoststand("run", str(SAMPLES / "marlowes-part1.json"))
    assert result.exit_code == 0, result.output
    expected = json.loads((SAMPLES / "marlowes-part1.expected.json").read_text(encoding="utf-8"))
    assert json.loads(result.stdout) == expected


def test_run_reads_operations_from_standard_input() -> None:
    ops = [["walk_in", 0, "P1", 2], ["walk_in", 1, "P2", 5], ["quote", 2, 11], ["board", 3]]
    result = hoststand("run", "-", input=json.dumps(ops))
    assert result.exit_code == 0, result.output
    # P1 (2) takes the smallest table, T2; P2 (5) fits only T3 (4-6 seats).
    [first, second, quote, board] = json.loads(result.stdout)
    assert (first, second) == ("seated T2", "seated T3")
    assert quote == "error: invalid arguments"
    assert board["tables"]["T2"] == "P1" and board["tables"]["T3"] == "P2"


def test_run_on_a_file_that_is_not_json_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "ops.json"
    bad.write_text('[["walk_in", 0, "P1", 2]', encoding="utf-8")
    result = hoststand("run", str(bad))
    assert result.exit_code == 2
    line = one_error_line(result)
    assert str(bad) in line and "not valid JSON" in line
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('[["walk_in", 1' + "0" * 5000 + ', "P1", 2]]', "digits"),  # past int's digit limit
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),  # past the parser's recursion
    ],
    ids=["huge-integer", "deep-nesting"],
)
def test_run_on_json_python_cannot_read_exits_2_with_one_line(text: str, reason: str) -> None:
    result = hoststand("run", "-", input=text)
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    assert "not valid JSON" in line and reason in line
    assert result.stdout == ""


def test_run_on_json_that_is_not_a_list_exits_2_with_one_line() -> None:
    result = hoststand("run", "-", input='{"walk_in": [0, "P1", 2]}')
    assert result.exit_code == 2
    assert "expected a JSON list" in one_error_line(result)
    assert result.stdout == ""


# ---------------------------------------------------------------- slots


def test_slots_json_lists_every_slot_and_party_size_with_its_numbers(db: str) -> None:
    result = slots(db, MARLOWES, "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    # Friday: lunch 12:00-14:00 (9 slots) and dinner 17:30-21:30 (17 slots), sizes 1-10.
    assert len(rows) == 26 * 10
    assert all(
        set(r) == {"start", "start_sec", "party_size", "spots_open", "spots_total"} for r in rows
    )
    first = rows[0]
    assert first["start"] == "2026-12-04T12:00:00+00:00"
    assert first["start_sec"] == int(datetime(2026, 12, 4, 12, tzinfo=LONDON).timestamp())
    dinner = [r for r in rows if r["start"] == "2026-12-04T19:00:00+00:00"]
    assert {r["party_size"]: (r["spots_open"], r["spots_total"]) for r in dinner} == {
        n: (k, k) for n, k in EMPTY.items()
    }


def test_slots_shows_a_grid_of_local_times_and_open_over_total(db: str) -> None:
    assert reserve(db, 5, "2026-12-04T19:00").exit_code == 0  # T3: nothing else seats 5-6
    result = slots(db, MARLOWES)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "Marlowe's Kitchen" in lines[0] and FRIDAY in lines[0]
    assert lines[1].split() == ["time", *map(str, range(1, 11))]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert len(rows) == 26 and "12:00" in rows and "21:30" in rows and "15:00" not in rows
    assert rows["20:30"] == [f"{k}/{k}" for k in EMPTY.values()]  # the party of 5 is done
    # At 17:30 a large party (120 minutes) would still sit at 19:00: T3 is out of its combos.
    early = {**{n: (k, k) for n, k in EMPTY.items()}, 7: (1, 2), 8: (1, 2), 9: (0, 1), 10: (0, 1)}
    assert rows["17:30"] == [f"{o}/{t}" for o, t in early.values()]
    # T3 is gone for 18:45, 19:00 and 19:15: no 5s or 6s, and only T5+T6 for 7-8.
    expected = {**{n: (k, k) for n, k in EMPTY.items()}, 5: (0, 1), 6: (0, 1), 4: (3, 4)}
    expected |= {7: (1, 2), 8: (1, 2), 9: (0, 1), 10: (0, 1)}
    for time in ("18:45", "19:00", "19:15"):
        assert rows[time] == [f"{o}/{t}" for o, t in expected.values()], time


def test_slots_party_size_shows_only_that_size(db: str) -> None:
    result = slots(db, GOOGLE, "--party-size", "9")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1].split() == ["time", "9"]
    rows = [line.split() for line in lines[2:]]
    assert [r[0] for r in rows] == [f"{17 + q // 4}:{q % 4 * 15:02d}" for q in range(17)]
    assert all(r[1:] == ["1/1"] for r in rows)


def test_slots_for_a_closed_day_says_so(db: str) -> None:
    result = slots(db, MARLOWES, day="2026-12-25")
    assert result.exit_code == 0
    assert "closed" in result.stdout


def test_slots_for_a_party_size_no_table_seats_does_not_call_an_open_day_closed(
    db: str,
) -> None:
    # merch1 is open on Fridays, but its smallest table seats 4 or more.
    result = slots(db, GOOGLE, "--party-size", "3")
    assert "closed" not in result.output, result.output


HARBOUR = str(SAMPLES / "harbour.toml")  # max_online_party_size 6, max_party_size 8


def test_slots_for_a_party_above_the_online_limit_says_it_books_by_phone_not_that_no_table_seats_it(
    db: str,
) -> None:
    # The Harbour's H3+H4 seats 7: the host books it (reserve), partners are not offered it.
    result = slots(db, HARBOUR, "--party-size", "7", day="2026-12-08")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "Partners book parties of up to 6 at The Harbour Room (max_online_party_size):"
        " a party of 7 books by phone (hoststand reserve).\n"
    )
    booked = hoststand(
        "--now", BEFORE, "reserve", "--config", HARBOUR, "--db", db,
        "--party-size", "7", "--at", "2026-12-08T19:00",
    )  # fmt: skip
    assert booked.exit_code == 0, booked.output


def test_the_slots_grid_says_which_party_sizes_it_leaves_to_the_phone(db: str) -> None:
    lines = slots(db, HARBOUR, day="2026-12-08").stdout.splitlines()
    assert lines[1].split() == ["time", "1", "2", "3", "4", "5", "6"]
    assert lines[-1] == (
        "Parties of 7 to 8 book by phone (max_online_party_size): not offered to partners,"
        " so not shown."
    )
    assert "by phone" not in slots(db, MARLOWES).stdout  # online up to its maximum


# ---------------------------------------------------------------- reserve


def test_reserve_prints_the_booking_id_and_its_table(db: str) -> None:
    result = reserve(db, 2, "2026-12-04T19:00")
    assert result.exit_code == 0, result.output
    match = BOOKED.match(result.stdout.strip())
    assert match is not None, result.stdout
    booking_id, size, when, table = match.groups()
    assert (size, when, table) == ("2", "2026-12-04 19:00", "T2")
    with closing(open_store(db)) as store:
        [entry] = store.entries("marlowes-kitchen", date(2026, 12, 4))
    assert entry.operation[2:] == [booking_id, "T2", 7 * 60]
    assert entry.meta["source"] == "phone" and entry.meta["party_size"] == 2


def test_reserve_a_large_party_takes_combined_tables(db: str) -> None:
    result = reserve(db, 10, "2026-12-04T19:00")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith("table T1+T3")  # the only combo seating 9-10


def test_reserve_on_a_full_slot_exits_1_with_the_reason(db: str) -> None:
    assert reserve(db, 5, "2026-12-04T19:00").exit_code == 0
    result = reserve(db, 5, "2026-12-04T19:00")
    assert result.exit_code == 1
    line = one_error_line(result)
    assert "cannot book" in line and "no table for 5 at 2026-12-04 19:00" in line
    assert result.stdout == ""


def test_reserve_over_pacing_names_times_within_it_and_the_option_that_books_anyway(
    db: str,
) -> None:
    # The Harbour Room's Thursday lunch: 12 guests per 30-minute slot.
    harbour = ["--config", str(SAMPLES / "harbour.toml"), "--db", db, "--party-size", "4"]
    at = ["--at", "2026-12-03T12:00"]
    for _ in range(3):
        assert hoststand("--now", BEFORE, "reserve", *harbour, *at).exit_code == 0
    refused = hoststand("--now", BEFORE, "reserve", *harbour, *at)
    assert refused.exit_code == 1
    assert one_error_line(refused) == (
        "hoststand: cannot book: over pacing: 2026-12-03 12:00 already has 3 bookings for 12"
        " guests (at most 12 guests and 4 bookings per slot); open for 4 that day: 12:30,"
        " 13:00, 13:30 (--over-pacing books it anyway)"
    )
    anyway = hoststand("--now", BEFORE, "reserve", *harbour, *at, "--over-pacing")
    assert anyway.exit_code == 0, anyway.output


def test_reserve_with_the_partners_known_queues_the_days_availability_for_them(
    tmp_path: Path,
) -> None:
    import sqlite3
    from contextlib import closing as closed

    settings = tmp_path / "settings.toml"
    settings.write_text(
        '[[partners]]\nid = "tablefinder"\nsecret = "' + "s" * 32 + '"\n'
        'notify_url = "http://127.0.0.1:9"\n',
        encoding="utf-8",
    )
    db = str(tmp_path / "r.db")
    assert reserve(db, 2, "2026-12-04T19:00").exit_code == 0  # no partners known: none told
    options = ["--config", MARLOWES, "--db", db, "--party-size", "2"]
    booked = hoststand(
        "--now", BEFORE, "reserve", *options, "--at", "2026-12-04T19:30",
        "--settings", str(settings),
    )  # fmt: skip
    assert booked.exit_code == 0, booked.output
    with closed(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT partner, kind, key FROM outbox").fetchall()
    assert rows == [("tablefinder", "availability", "marlowes-kitchen/2026-12-04")]
    bad = hoststand("--now", BEFORE, "reserve", *options, "--at", "2026-12-04T20:00",
                    "--settings", str(tmp_path / "missing.toml"))  # fmt: skip
    assert bad.exit_code == 2 and "no such file" in bad.stderr


@pytest.mark.parametrize(
    "at,why",
    [
        ("2026-12-04T19:05", "slots are every 15 minutes: the nearest are 19:00 and 19:15"),
        ("2026-12-04T16:00", "that day's slots run 12:00-14:00 and 17:30-21:30"),
        ("2026-12-25T19:00", "closed on Friday 2026-12-25"),
    ],
)
def test_reserve_at_a_time_that_is_not_a_slot_exits_1_and_says_why(
    db: str, at: str, why: str
) -> None:
    result = reserve(db, 2, at)
    assert result.exit_code == 1
    when = at.replace("T", " ")
    assert one_error_line(result) == (
        f"hoststand: {when} is not a bookable slot at Marlowe's Kitchen: {why}"
        " (see `hoststand slots`)"
    )


def test_reserve_for_a_slot_that_has_started_exits_1(db: str) -> None:
    result = reserve(db, 2, "2026-12-04T19:00", now="2026-12-04T19:00:00Z")
    assert result.exit_code == 1
    assert "already started" in one_error_line(result)


def test_a_bad_config_file_exits_2_naming_the_file_and_the_field(tmp_path: Path, db: str) -> None:
    text = Path(MARLOWES).read_text(encoding="utf-8")
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('"Europe/London"', '"Europe/Atlantis"'), encoding="utf-8")
    result = slots(db, str(bad))
    assert result.exit_code == 2
    line = one_error_line(result)
    assert line.startswith(f"hoststand: {bad}: timezone: ")
    assert "Europe/Atlantis" in line


def test_a_db_of_another_program_exits_2_and_is_left_untouched(tmp_path: Path) -> None:
    theirs = tmp_path / "crm.db"
    with closing(sqlite3.connect(theirs)) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.commit()
    before = theirs.read_bytes()
    result = slots(str(theirs), MARLOWES)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert line.startswith(f"hoststand: {theirs}: cannot open the database (")
    assert "is not a Host Stand database" in line
    assert theirs.read_bytes() == before


def marlowes_opening_saturday_at(tmp_path: Path, hhmm: str) -> str:
    """A copy of Marlowe's file whose Saturday lunch opens at `hhmm`, not 12:00."""
    text = Path(MARLOWES).read_text(encoding="utf-8")
    at = text.index("saturday = [")
    moved = text[:at] + text[at:].replace('open = "12:00"', f'open = "{hhmm}"', 1)
    path = tmp_path / "marlowes-moved.toml"
    path.write_text(moved, encoding="utf-8")
    return str(path)


def test_serve_refuses_a_file_that_moved_the_opening_of_a_day_with_bookings(
    tmp_path: Path, db: str
) -> None:
    assert reserve(db, 2, "2026-12-05T19:00").exit_code == 0  # Saturday's log has an entry
    moved = marlowes_opening_saturday_at(tmp_path, "11:00")
    result = hoststand(
        "--now", BEFORE, "serve", "--config", moved, "--db", db, "--port", "0", "--no-export"
    )
    assert result.exit_code == 2
    assert one_error_line(result) == (
        f"hoststand: {moved}: hours: the opening of 2026-12-05 has moved from 12:00 to 11:00"
        " (on the Europe/London clock: its hours or its timezone changed), and that day already"
        " has bookings or walk-ins (their times count from the opening); keep the opening and"
        " the timezone until that day is past, or close the day"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["slots", "--date", "2026-12-05"],
        ["reserve", "--party-size", "2", "--at", "2026-12-05T20:00"],
        ["feed", "export", "--out", "out", "--days", "2"],
        ["host", "board", "--date", "2026-12-05"],
    ],
    ids=["slots", "reserve", "feed-export", "host-board"],
)
def test_every_command_refuses_a_file_that_moved_the_opening_of_a_day_with_bookings(
    tmp_path: Path, db: str, command: list[str]
) -> None:
    assert reserve(db, 2, "2026-12-05T19:00").exit_code == 0  # Saturday's log has an entry
    moved = marlowes_opening_saturday_at(tmp_path, "11:00")
    result = hoststand("--now", BEFORE, *command, "--config", moved, "--db", db)
    assert result.exit_code == 2
    assert one_error_line(result).startswith(
        f"hoststand: {moved}: hours: the opening of 2026-12-05 has moved from 12:00 to 11:00 "
    )
    assert not (tmp_path / "out").exists()


SATURDAY_AT_SIX = (
    '\n[[special_days]]\ndate = "2026-12-05"\nservices = [{ open = "18:00", close = "23:00" }]\n'
)


def marlowes_variant(tmp_path: Path, name: str, edit: Callable[[str], str]) -> str:
    """A copy of Marlowe's file changed by `edit`, as `name`."""
    path = tmp_path / name
    path.write_text(edit(Path(MARLOWES).read_text(encoding="utf-8")), encoding="utf-8")
    return str(path)


def closing_saturday(text: str) -> str:
    old = 'closed = ["2026-12-25", "2026-12-26"]'
    assert old in text
    return text.replace(old, 'closed = ["2026-12-05", "2026-12-25", "2026-12-26"]')


def test_serve_refuses_a_file_that_closed_a_special_day_whose_bookings_count_from_its_opening(
    tmp_path: Path, db: str
) -> None:
    """Saturday was a special day opening at 18:00, with a booking; the file now closes it
    (a restart, not a reload): its booking would be read from the weekday's 12:00 opening,
    six hours off. As a reload refuses it, so does the start; once the booking is cancelled
    (under the file it was booked with), the closed file is taken."""
    special = marlowes_variant(tmp_path, "special.toml", lambda t: t + SATURDAY_AT_SIX)
    booked = hoststand(
        "--now", BEFORE, "reserve", "--config", special, "--db", db,
        "--party-size", "2", "--at", "2026-12-05T19:00",
    )  # fmt: skip
    assert booked.exit_code == 0, booked.output
    booking = booked.output.split()[1].rstrip(":")
    closed = marlowes_variant(tmp_path, "closed.toml", closing_saturday)
    # Every command, as for a moved opening (asked first: a serve that starts never ends).
    board = hoststand("--now", BEFORE, "slots", "--config", closed, "--db", db, "--date", FRIDAY)
    assert board.exit_code == 2
    result = hoststand(
        "--now", BEFORE, "serve", "--config", closed, "--db", db, "--port", "0", "--no-export"
    )
    assert result.exit_code == 2
    assert one_error_line(result) == (
        f"hoststand: {closed}: closed: 2026-12-05 is closed and would read its bookings from"
        " 12:00, its weekday's opening, not from 18:00, the opening they count from (on the"
        " Europe/London clock: its hours or its timezone changed); cancel or move them first,"
        " serving the file they were booked under, or open the day at 18:00"
    )
    cancel = ["host", "cancel", booking, "--config", special, "--db", db]
    assert hoststand("--now", BEFORE, *cancel).exit_code == 0
    taken = hoststand("--now", BEFORE, "slots", "--config", closed, "--db", db, "--date", FRIDAY)
    assert taken.exit_code == 0, taken.output


def test_a_file_that_closed_a_day_booked_at_its_weekdays_opening_is_taken(
    tmp_path: Path, db: str
) -> None:
    """Saturday's booking counts from its weekday's 12:00 opening: closed in the file while
    the server was down, it is still read at 19:00 (as after a reload closing it), so the
    file is taken."""
    assert reserve(db, 2, "2026-12-05T19:00").exit_code == 0
    closed = marlowes_variant(tmp_path, "closed.toml", closing_saturday)
    taken = hoststand("--now", BEFORE, "slots", "--config", closed, "--db", db, "--date", FRIDAY)
    assert taken.exit_code == 0, taken.output


def test_serve_refuses_a_file_whose_timezone_changed_under_days_with_bookings(
    tmp_path: Path, db: str
) -> None:
    """Saturday's booking was taken on the Europe/London clock; the file now says
    Europe/Paris, an hour ahead in December: every stored time would be read an hour off,
    whether Saturday is open in it or closed (read from its weekday's opening, in Paris).
    A store with its zone recorded names both zones (see the tests below); one from before
    the zone was recorded (its record dropped here) refuses by the openings its logs show."""
    assert reserve(db, 2, "2026-12-05T19:00").exit_code == 0
    with closing(open_store(db)) as store:
        assert store.forget_range("clock", "", "\U0010ffff") == 1

    def to_paris(text: str) -> str:
        return text.replace('"Europe/London"', '"Europe/Paris"')

    closed = marlowes_variant(tmp_path, "closed.toml", lambda t: closing_saturday(to_paris(t)))
    asked = ["slots", "--config", closed, "--db", db, "--date", FRIDAY]
    assert hoststand("--now", BEFORE, *asked).exit_code == 2  # first: a serve never ends
    result = hoststand(
        "--now", BEFORE, "serve", "--config", closed, "--db", db, "--port", "0", "--no-export"
    )
    assert result.exit_code == 2
    assert one_error_line(result) == (
        f"hoststand: {closed}: closed: 2026-12-05 is closed and would read its bookings from"
        " 12:00, its weekday's opening, not from 13:00, the opening they count from (on the"
        " Europe/Paris clock: its hours or its timezone changed); cancel or move them first,"
        " serving the file they were booked under, or open the day at 13:00"
    )
    paris = marlowes_variant(tmp_path, "paris.toml", to_paris)
    result = hoststand(
        "--now", BEFORE, "serve", "--config", paris, "--db", db, "--port", "0", "--no-export"
    )
    assert result.exit_code == 2
    assert one_error_line(result) == (
        f"hoststand: {paris}: hours: the opening of 2026-12-05 has moved from 13:00 to 12:00"
        " (on the Europe/Paris clock: its hours or its timezone changed), and that day already"
        " has bookings or walk-ins (their times count from the opening); keep the opening and"
        " the timezone until that day is past, or close the day"
    )


def to_reykjavik(text: str) -> str:
    """Reykjavik keeps UTC all year: London's clock in winter, an hour behind it in summer."""
    return text.replace('"Europe/London"', '"Atlantic/Reykjavik"')


def zone_refusal(path: str, old: str, new: str, first: str) -> str:
    return (
        f"hoststand: {path}: timezone: changed from {old} to {new} while no server ran: the"
        f" stored days (from {first}) count their times from openings on the {old} clock and"
        f" would be misread; keep timezone = '{old}' until those days are past"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["slots", "--date", "2026-12-05"],
        ["reserve", "--party-size", "2", "--at", "2026-12-05T20:00"],
        ["host", "board", "--date", "2026-12-05"],
    ],
    ids=["slots", "reserve", "host-board"],
)
def test_a_start_refuses_a_changed_timezone_naming_both_even_where_they_agree_on_the_openings(
    tmp_path: Path, db: str, command: list[str]
) -> None:
    """Saturday's booking was taken on the Europe/London clock; the file now says
    Atlantic/Reykjavik, which agrees with London in December, so no stored opening moved.
    A reload refuses any change of zone; a start refuses it too, naming both zones, while
    a day from yesterday on has entries (their times count from the old clock's openings)."""
    assert reserve(db, 2, "2026-12-05T19:00").exit_code == 0
    moved = marlowes_variant(tmp_path, "reykjavik.toml", to_reykjavik)
    result = hoststand("--now", BEFORE, *command, "--config", moved, "--db", db)
    assert result.exit_code == 2
    assert one_error_line(result) == zone_refusal(
        moved, "Europe/London", "Atlantic/Reykjavik", "2026-12-05"
    )


def test_a_changed_timezone_is_taken_once_no_stored_day_is_ahead_and_then_kept(
    tmp_path: Path, db: str
) -> None:
    """Once the stored days are past (history, which a start never refuses), the new zone
    is taken and recorded: the days written from then on count on its clock, and a later
    start on the old zone is refused, naming the recorded one."""
    assert reserve(db, 2, "2026-12-05T19:00").exit_code == 0
    reykjavik = marlowes_variant(tmp_path, "reykjavik.toml", to_reykjavik)
    later = "2026-12-20T09:00:00Z"
    booked = hoststand(
        "--now", later, "reserve", "--config", reykjavik, "--db", db,
        "--party-size", "2", "--at", "2026-12-22T19:00",
    )  # fmt: skip
    assert booked.exit_code == 0, booked.output
    result = hoststand("--now", later, "slots", "--config", MARLOWES, "--db", db, "--date", FRIDAY)
    assert result.exit_code == 2  # first: a serve that starts never ends
    serve = ["serve", "--config", MARLOWES, "--db", db, "--port", "0", "--no-export"]
    result = hoststand("--now", later, *serve)
    assert result.exit_code == 2
    assert one_error_line(result) == zone_refusal(
        MARLOWES, "Atlantic/Reykjavik", "Europe/London", "2026-12-22"
    )


def test_a_store_without_a_recorded_timezone_records_the_files_at_its_first_start(
    tmp_path: Path, db: str
) -> None:
    """A store written before the zone was recorded (its record dropped here) takes the
    file whose openings agree with its logs, records its zone, and refuses another after."""
    assert reserve(db, 2, "2026-12-05T19:00").exit_code == 0
    with closing(open_store(db)) as store:
        assert store.forget_range("clock", "", "\U0010ffff") == 1
    assert slots(db, MARLOWES).exit_code == 0  # the first start after the upgrade
    moved = marlowes_variant(tmp_path, "reykjavik.toml", to_reykjavik)
    result = slots(db, moved)
    assert result.exit_code == 2
    assert one_error_line(result) == zone_refusal(
        moved, "Europe/London", "Atlantic/Reykjavik", "2026-12-05"
    )


def test_commands_take_a_file_that_moved_the_opening_of_days_without_entries(
    tmp_path: Path, db: str
) -> None:
    assert reserve(db, 2, "2026-12-04T19:00").exit_code == 0  # Friday's, not Saturday's
    moved = marlowes_opening_saturday_at(tmp_path, "11:00")
    result = slots(db, moved, day="2026-12-05")
    assert result.exit_code == 0, result.output


def test_now_that_is_not_a_time_is_a_usage_error(db: str) -> None:
    options = ["--config", MARLOWES, "--db", db, "--date", FRIDAY]
    result = hoststand("--now", "next tuesday", "slots", *options)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "--now" in result.stderr and "not an ISO-8601 time" in result.stderr


# ---------------------------------------------------------------- feed export


def test_feed_export_writes_the_three_feeds_and_prints_a_summary(tmp_path: Path, db: str) -> None:
    out = tmp_path / "feeds"
    configs = ["--config", MARLOWES, "--config", GOOGLE]
    options = [*configs, "--db", db, "--out", str(out), "--days", "3"]
    result = hoststand("--now", "2026-12-04T12:00:00Z", "feed", "export", *options)
    assert result.exit_code == 0, result.output
    stamp = int(datetime(2026, 12, 4, 12, tzinfo=UTC).timestamp())
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert names == [f"{k}-{stamp}-0-of-1.json" for k in ("availability", "merchant", "service")]
    lines = result.stdout.splitlines()
    # Marlowe's: 3 x 26 slots minus Friday 12:00 (now), 10 sizes; merch1: 3 x 17 slots, 7 sizes.
    n_slots, n_entries = 3 * 26 - 1 + 3 * 17, (3 * 26 - 1) * 10 + 3 * 17 * 7
    assert lines[0].startswith(
        f"exported 2 restaurant(s), {n_slots} slots, {n_entries} entries, 3 files, "
    )
    assert f"(generation_timestamp {stamp})" in lines[0]
    assert len(lines) == 4 and all(str(out) in line for line in lines[1:])


def test_feed_export_split_over_two_machines_writes_one_feed_in_two_shards(
    tmp_path: Path, db: str
) -> None:
    out = tmp_path / "feeds"
    stamp, nonce = "1796500000", "42"
    configs = ["--config", MARLOWES, "--config", GOOGLE]
    for number in (0, 1):
        options = [*configs, "--db", db, "--out", str(out), "--days", "2"]
        options += ["--shard", f"{number}/2", "--nonce", nonce, "--generation-timestamp", stamp]
        result = hoststand("--now", "2026-12-04T12:00:00Z", "feed", "export", *options)
        assert result.exit_code == 0, result.output
        assert f"(generation_timestamp {stamp})" in result.stdout
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    kinds = ("availability", "merchant", "service")
    assert names == sorted(f"{k}-{stamp}-{i}-of-2.json" for k in kinds for i in (0, 1))
    merchants = []
    for i in (0, 1):
        document = json.loads((out / f"merchant-{stamp}-{i}-of-2.json").read_text())
        assert document["metadata"]["nonce"] == nonce
        assert document["metadata"]["shard_number"] == i
        merchants += [m["merchant_id"] for m in document["merchant"]]
    assert sorted(merchants) == ["marlowes-kitchen", "merch1"]


STAMP_OPTION = ["--generation-timestamp", "1796500000"]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--shard", "0/2"], "--shard needs --nonce and --generation-timestamp"),
        (["--shard", "0/2", "--nonce", "7"], "--shard needs --nonce and --generation-timestamp"),
        (["--nonce", "7", *STAMP_OPTION], "go with --shard"),
        (["--shard", "2/2", "--nonce", "7", *STAMP_OPTION], "I must"),
        (["--shard", "1of2", "--nonce", "7", *STAMP_OPTION], "I/N"),
        (["--shard", "0/0", "--nonce", "7", *STAMP_OPTION], "I must"),
        (["--shard", "0/2", "--nonce", "-7", *STAMP_OPTION], "uint64"),
        (["--shard", "0/2", "--nonce", str(2**64), *STAMP_OPTION], "uint64"),
        (["--shard", "0/2", "--nonce", "7", "--generation-timestamp", "1796500000000"], "millis"),
        (["--shard", "0/2", "--nonce", "7", "--generation-timestamp", "soon"], "Unix seconds"),
        (["--shard", "0/2", "--shards", "2", "--nonce", "7", *STAMP_OPTION], "exclusive"),
    ],
)
def test_feed_export_with_a_bad_or_missing_shard_option_exits_2_saying_which(
    tmp_path: Path, options: list[str], says: str
) -> None:
    out = tmp_path / "feeds"
    base = ["--config", MARLOWES, "--db", str(tmp_path / "h.db"), "--out", str(out)]
    result = hoststand("feed", "export", *base, *options)
    assert result.exit_code == 2
    assert says in one_error_line(result)
    assert not out.exists()


def test_db_defaults_to_the_hoststand_db_environment_variable(any_db: str) -> None:
    from_env = any_db if is_url(any_db) else str(Path(any_db).with_name("from-env.db"))
    options = ["--config", MARLOWES, "--party-size", "2", "--at", "2026-12-04T19:00"]
    result = hoststand("--now", BEFORE, "reserve", *options, env={"HOSTSTAND_DB": str(from_env)})
    assert result.exit_code == 0, result.output
    assert not Path("hoststand.db").exists()  # the working directory (see `isolated`)
    with closing(open_store(from_env)) as store:
        assert len(store.entries("marlowes-kitchen", date(2026, 12, 4))) == 1


# ---------------------------------------------------------------- a real process


def test_the_installed_command_replays_the_seed_example_in_a_real_process(tmp_path: Path) -> None:
    beside = Path(sys.executable).parent / "hoststand"
    command = str(beside) if beside.exists() else shutil.which("hoststand")
    assert command is not None, "the hoststand console script is not installed"
    done = subprocess.run(
        [command, "run", str(SAMPLES / "marlowes-part1.json")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    expected = json.loads((SAMPLES / "marlowes-part1.expected.json").read_text(encoding="utf-8"))
    assert json.loads(done.stdout) == expected


def test_a_refusal_in_a_real_process_is_one_line_on_stderr(tmp_path: Path) -> None:
    # Refusals are also log records of the service ("book", "cancel"). Outside `serve`
    # nothing writes them, and Python's last-resort handler must not print their bare
    # event above the command's own line. (pytest's own log handler hides that from
    # click's runner: only a real process shows it.)
    beside = Path(sys.executable).parent / "hoststand"
    command = str(beside) if beside.exists() else shutil.which("hoststand")
    assert command is not None, "the hoststand console script is not installed"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [command, "--now", BEFORE, *args, "--config", MARLOWES, "--db", "p.db"],
            capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False,
        )  # fmt: skip

    def reserve_six(at: str) -> subprocess.CompletedProcess[str]:
        return run("reserve", "--party-size", "6", "--at", at)

    booked = reserve_six("2026-12-04T19:00")
    assert booked.returncode == 0, booked.stderr
    refused = reserve_six("2026-12-04T19:30")  # T3 is still taken by the party of 6
    assert refused.returncode == 1
    # T3 is Marlowe's only table for 6: 20:30 is the first slot after the 90-minute turn
    # from 19:00, and 17:30 (its turn ends at 19:00) is farther from 19:30 than 21:00.
    assert refused.stderr.splitlines() == [
        "hoststand: cannot book: no table for 6 at 2026-12-04 19:30;"
        " open for 6 that day: 20:30, 20:45, 21:00"
    ]
    booking_id = BOOKED.match(booked.stdout.strip()).group(1)  # type: ignore[union-attr]
    day = ("--date", FRIDAY)
    assert run("host", "cancel", *day, booking_id).stdout == f"{booking_id} cancelled\n"
    again = run("host", "cancel", *day, booking_id)
    assert again.returncode == 1
    assert again.stderr.splitlines() == [
        "hoststand: cancel refused: reservation not active: it was cancelled"
    ]


def test_reserve_books_one_party_per_turn_on_a_table(db: str) -> None:
    # T3 is Marlowe's only table for 6, and a party of 6 keeps it 90 minutes.
    assert reserve(db, 6, "2026-12-04T19:00").exit_code == 0
    for at in ("2026-12-04T19:30", "2026-12-04T20:00"):
        refused = reserve(db, 6, at)
        assert refused.exit_code == 1, refused.output
        assert "no table for 6" in refused.output
    assert reserve(db, 6, "2026-12-04T20:30").exit_code == 0


def test_reserve_refuses_a_day_beyond_the_horizon(db: str) -> None:
    refused = reserve(db, 2, "2027-01-22T19:00")  # 52 days after BEFORE
    assert refused.exit_code == 1, refused.output
    assert "30 days ahead" in refused.output


# ---------------------------------------------------------------- as a new user found it


def test_feed_export_says_when_it_writes_fewer_shards_or_days_than_asked(
    tmp_path: Path, db: str
) -> None:
    out = tmp_path / "feeds"
    options = ["--config", MARLOWES, "--db", db, "--out", str(out), "--shards", "2"]
    result = hoststand("--now", BEFORE, "feed", "export", *options, "--days", "366")
    assert result.exit_code == 0, result.output
    assert any(p.name.endswith("-0-of-1.json") for p in out.iterdir())
    assert "1 availability shard(s) written, not 2" in result.stdout
    assert "marlowes-kitchen: 30 days written, not 366" in result.stdout


def test_feed_status_lists_the_exports_of_feed_export(tmp_path: Path, db: str) -> None:
    out = tmp_path / "feeds"
    options = ["--config", MARLOWES, "--db", db, "--out", str(out), "--days", "2"]
    assert hoststand("--now", BEFORE, "feed", "export", *options).exit_code == 0
    status = hoststand("feed", "status", "--db", db)
    assert status.exit_code == 0, status.output
    assert "none yet" not in status.stdout
    assert f"{out} (feed export)" in status.stdout and "3 files" in status.stdout


def test_feed_status_tells_a_messages_wait_by_the_clock_that_stamped_it(db: str) -> None:
    """Messages are stamped with the machine's clock (delivery lag is a real-time figure);
    `feed status` under --now took the pinned instant less that stamp: a message queued an
    hour ago was 'waiting -345600 s' with the clock pinned four days before today."""
    with closing(open_store(db)) as store:
        queued = OutboxMessage("tablefinder", "booking", "bk-1", {"n": 1}, _time.time() - 3600)
        store.append_all([], outbox=[queued])
    status = hoststand("--now", BEFORE, "feed", "status", "--db", db)
    assert status.exit_code == 0, status.output
    waited = re.search(r"oldest pending message waiting (-?\d+) s", status.stdout)
    assert waited is not None, status.stdout
    assert 3600 <= int(waited.group(1)) < 2 * 3600


def test_feed_status_on_a_missing_database_says_so_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.db"
    result = hoststand("feed", "status", "--db", str(missing))
    assert result.exit_code == 2
    assert "no such database file" in result.stderr
    assert not missing.exists()


T2_TABLE = '[[tables]]\nid = "T2"\nx = 0\ny = 1\nseats = 2\n\n'


def test_serve_refuses_a_file_that_removed_a_table_still_holding_a_booking_ahead(
    tmp_path: Path, db: str
) -> None:
    """A restart on a file without T2 instead of a reload: a booking past (its hold over,
    yesterday) on T2 is no matter, one still booked on Saturday is: its replay under the
    new floor would drop it, and only a reload (under the floor it was taken on) can book
    it again elsewhere. Refused, one line, naming it and what to do. (A command on that
    file is refused before then as not the floor in force, test_command_floor.)"""
    past = reserve(db, 2, "2026-11-30T19:00", now="2026-11-29T09:00:00Z")
    assert past.exit_code == 0 and "T2" in past.output, past.output
    removed = marlowes_variant(tmp_path, "no-t2.toml", lambda t: t.replace(T2_TABLE, ""))
    assert 'id = "T2"' not in Path(removed).read_text(encoding="utf-8")
    read = hoststand("--now", BEFORE, "slots", "--config", removed, "--db", db, "--date", FRIDAY)
    assert read.exit_code == 2, read.output  # only a past booking was on T2: not the refusal
    assert "is not the one in force on the store (the floor in force has T2" in read.stderr

    ahead = reserve(db, 2, "2026-12-05T19:00")
    assert ahead.exit_code == 0 and "T2" in ahead.output, ahead.output
    again = hoststand("--now", BEFORE, "slots", "--config", removed, "--db", db, "--date", FRIDAY)
    assert again.exit_code == 2  # first (every command reading the store): a serve never ends
    result = hoststand(
        "--now", BEFORE, "serve", "--config", removed, "--db", db, "--port", "0", "--no-export"
    )
    assert result.exit_code == 2
    line = one_error_line(result)
    assert re.fullmatch(
        f"hoststand: {re.escape(removed)}: tables: T2 is not on the floor plan, but"
        r" reservation \S+ is still booked on it on 2026-12-05 at 19:00; put table T2 back"
        r" in the file and start again, then remove it with a reload \(SIGHUP or POST"
        r" /api/v1/admin/reload\), which books its bookings again on other tables",
        line,
    ), line
    assert one_error_line(again) == line


def test_the_restart_refusal_names_a_moved_booking_by_the_id_the_host_knows(
    tmp_path: Path, db: str
) -> None:
    """A booking the host changed is another engine reservation (`<id>.1`) under the same
    booking id: the refusal names the id the host's list and the partner know."""
    booked = reserve(db, 2, "2026-12-05T19:00")
    assert booked.exit_code == 0 and "T2" in booked.output, booked.output
    booking_id = re.search(r"bk-[0-9a-f]+", booked.output)
    assert booking_id is not None, booked.output
    options = ["--config", MARLOWES, "--db", db]
    changed = hoststand(
        "--now", BEFORE, "host", "change", booking_id[0], "--at", "2026-12-05T19:30", *options
    )
    assert changed.exit_code == 0 and changed.output.rstrip().endswith("T2"), changed.output
    removed = marlowes_variant(tmp_path, "no-t2.toml", lambda t: t.replace(T2_TABLE, ""))
    result = hoststand("--now", BEFORE, "slots", "--config", removed, "--db", db, "--date", FRIDAY)
    assert result.exit_code == 2
    line = one_error_line(result)
    assert f"but reservation {booking_id[0]} is still booked on it on 2026-12-05 at 19:30;" in line


def test_a_restart_without_a_table_a_party_sits_at_is_refused(tmp_path: Path, db: str) -> None:
    """Friday 18:00 a walk-in of 2 (Ann) sits at T2; the server restarts on a file without
    T2 instead of a reload (which refuses this). Its replay would have Ann sit at another
    table she never sat at, or nowhere: refused, one line naming the table and the party,
    for every command reading the store; once T2 is freed, the start is no longer refused."""
    now = "2026-12-04T18:00:00Z"
    options = ["--config", MARLOWES, "--db", db]
    walked = hoststand("--now", now, "host", "walk-in", "2", "--name", "Ann", "--id", "A", *options)
    assert walked.exit_code == 0 and "seated T2" in walked.output, walked.output
    removed = marlowes_variant(tmp_path, "no-t2.toml", lambda t: t.replace(T2_TABLE, ""))
    later = "2026-12-04T18:05:00Z"
    board = hoststand("--now", later, "host", "board", "--config", removed, "--db", db)
    assert board.exit_code == 2, board.output
    line = one_error_line(board)
    assert line == (
        f"hoststand: {removed}: tables: T2 is not on the floor plan, but A (Ann, 2 guests)"
        " sits at it now (2026-12-04); put table T2 back in the file and start again, then"
        " free the table or move the party, and remove it with a reload (SIGHUP or POST"
        " /api/v1/admin/reload)"
    ), line
    served = hoststand(
        "--now", later, "serve", "--config", removed, "--db", db, "--port", "0", "--no-export"
    )
    assert served.exit_code == 2 and one_error_line(served) == line
    freed = hoststand("--now", later, "host", "free", "T2", *options)
    assert freed.exit_code == 0, freed.output
    start_on(db, removed, tmp_path, "2026-12-04T18:06:00+00:00")  # no longer refused
    again = hoststand("--now", later, "slots", "--config", removed, "--db", db, "--date", FRIDAY)
    assert again.exit_code == 0, again.output


def start_on(db: str, config: str, workdir: Path, now: str) -> None:
    """`hoststand serve` on `config` alone, started (its file's floor kept in force, as
    every start keeps it: a command's never is) and stopped."""
    server = start_server(
        db, now=datetime.fromisoformat(now), configs=(Path(config),), extra=["--no-export"],
        workdir=workdir,
    )  # fmt: skip
    assert server.stop() == 0, server.output()


def test_a_table_removed_by_a_restart_keeps_the_days_it_served(tmp_path: Path, db: str) -> None:
    """Tuesday a booking on T2 was missed (a no-show); Friday 18:00 Ann sat at T2 and left
    at 18:06. At 18:10 a server starts on a file without T2 (a restart instead of a
    reload): T2 is kept as the floor had it, for the replay only, up to that start. Ann is
    not shown at T4, a table she never sat at, blocking it; Tuesday's row stays a no-show
    on T2; T2 is not on the board, and the next walk-in is seated elsewhere. (A start:
    a command's file is not one, and would be refused as not the floor in force.)"""
    options = ["--config", MARLOWES, "--db", db]
    past = reserve(db, 2, "2026-12-01T19:00", now="2026-11-30T09:00:00Z")
    assert past.exit_code == 0 and "T2" in past.output, past.output
    now = "2026-12-04T18:00:00Z"
    walked = hoststand("--now", now, "host", "walk-in", "2", "--name", "Ann", "--id", "A", *options)
    assert walked.exit_code == 0 and "seated T2" in walked.output, walked.output
    freed = hoststand("--now", "2026-12-04T18:06:00Z", "host", "free", "T2", *options)
    assert freed.exit_code == 0, freed.output
    removed = marlowes_variant(tmp_path, "no-t2.toml", lambda t: t.replace(T2_TABLE, ""))
    new = ["--config", removed, "--db", db]
    start_on(db, removed, tmp_path, "2026-12-04T18:10:00+00:00")

    board = hoststand("--now", "2026-12-04T18:10:00Z", "host", "board", "--json", *new)
    assert board.exit_code == 0, board.output
    tables = {t["id"]: t for t in json.loads(board.output)["tables"]}
    assert "T2" not in tables
    assert all(t["occupant"] is None for t in tables.values()), tables
    listed = hoststand(
        "--now", "2026-12-04T18:11:00Z", "host", "reservations", "--date", "2026-12-01",
        "--json", *new,
    )  # fmt: skip
    assert listed.exit_code == 0, listed.output
    assert [(r["unit"], r["status"]) for r in json.loads(listed.output)] == [("T2", "no-show")]
    bo = hoststand("--now", "2026-12-04T18:12:00Z", "host", "walk-in", "2", "--id", "B", *new)
    assert bo.exit_code == 0 and "seated T4" in bo.output, bo.output
    again = hoststand("--now", "2026-12-04T18:13:00Z", "host", "board", "--json", *new)
    seated = {t["id"]: t["occupant"] for t in json.loads(again.output)["tables"]}
    assert seated["T4"] is not None and "T2" not in seated, seated
