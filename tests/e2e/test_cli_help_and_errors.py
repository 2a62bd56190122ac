"""`hoststand` for the operator: every command's help says what it does, each option what it
is (with its default), and gives an example; bad input on the command line is one line on
stderr and exit status 2, never a traceback nor click's three-line usage answer."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from feed.cli import main
from tests.integration.server_process import HOSTSTAND, free_port
from tests.integration.test_sqlite_store import SCHEMA_3_LOG

REPO = Path(__file__).resolve().parents[2]
MARLOWES = str(REPO / "samples" / "marlowes.toml")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOSTSTAND_DB", raising=False)
    monkeypatch.delenv("HOSTSTAND_SETTINGS", raising=False)
    monkeypatch.chdir(tmp_path)


def hoststand(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def commands(group: click.Group = main, path: str = "hoststand") -> Iterator[tuple[str, Any]]:
    yield path, group
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from commands(command, f"{path} {name}")
        else:
            yield f"{path} {name}", command


ALL = [path for path, _command in commands()]


@pytest.mark.parametrize("path", ALL)
def test_every_commands_help_says_what_it_does_and_gives_an_example(path: str) -> None:
    result = hoststand(*path.split()[1:], "--help")
    assert result.exit_code == 0, result.output
    text = result.output
    assert "Example" in text, text
    example = text[text.index("Example") :]
    assert f"  {path}" in example, text  # the command itself, written out


@pytest.mark.parametrize("path", ALL)
def test_every_option_says_what_it_is(path: str) -> None:
    command = dict(commands())[path]
    for param in command.params:
        if isinstance(param, click.Option) and param.name != "help":
            assert param.help, f"{path} {param.opts[0]} has no help"


@pytest.mark.parametrize("path", ALL)
def test_every_option_says_its_default_and_the_environment_variable_it_reads(path: str) -> None:
    command = dict(commands())[path]
    for param in command.params:
        if not isinstance(param, click.Option) or param.name == "help":
            continue
        name = f"{path} {param.opts[0]}"
        if param.envvar:
            assert f"env {param.envvar}" in (param.help or ""), name
        if param.name == "day" and path.startswith("hoststand host "):  # None: today's
            assert "default: the one being served now" in (param.help or ""), name


def assert_one_line(result: Result, *words: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("hoststand"), lines[0]
    assert "Usage:" not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["slots", "--config", MARLOWES, "--date", "2026-13-05"], ["--date", "2026-13-05"]),
        (["slots", "--config", MARLOWES, "--date", "5/12/2026"], ["--date"]),
        (["slots", "--config", MARLOWES], ["--date"]),  # missing
        (["slots", "--bogus"], ["--bogus", "hoststand slots --help"]),
        (["nosuch"], ["nosuch"]),
        (["run", "no-such-file.json"], ["no-such-file.json"]),
        (
            ["reserve", "--config", MARLOWES, "--party-size", "0", "--at", "2026-12-05T19:00"],
            ["--party-size"],
        ),
        (["reserve", "--config", MARLOWES, "--party-size", "2", "--at", "tomorrow"], ["--at"]),
        (["host", "board", "--config", MARLOWES, "--date", "x"], ["--date"]),
        (["--now", "next tuesday", "slots"], ["--now"]),
        (["feed", "export", "--config", MARLOWES, "--out", "o", "--days", "999"], ["--days"]),
    ],
)
def test_bad_input_on_the_command_line_is_one_line_and_exit_2(
    args: list[str], words: list[str]
) -> None:
    assert_one_line(hoststand(*args), *words)


def unreachable() -> str:
    return f"postgresql://user:secret-pw@127.0.0.1:{free_port()}/nowhere"


@pytest.mark.parametrize(
    "args",
    [
        ["slots", "--config", MARLOWES, "--date", "2026-12-05"],
        ["reserve", "--config", MARLOWES, "--party-size", "2", "--at", "2026-12-05T19:00"],
        ["feed", "status"],
        ["host", "board", "--config", MARLOWES],
    ],
)
def test_a_database_url_that_cannot_connect_is_one_line_without_its_password(
    args: list[str],
) -> None:
    line = assert_one_line(hoststand(*args, "--db", unreachable()), "cannot open the database")
    assert "secret-pw" not in line and "***" in line


@pytest.mark.parametrize("secret", ["password=secret-pw", "sslpassword=secret-pw"])
def test_a_password_in_a_database_urls_query_is_never_printed_either(
    tmp_path: Path, secret: str
) -> None:
    url = f"postgresql://user@127.0.0.1:{free_port()}/nowhere?connect_timeout=5&{secret}"
    args = [str(HOSTSTAND), "serve", "--config", MARLOWES, "--db", url, "--port", "0"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert "cannot open the database" in line and "secret-pw" not in line and "=***" in line
    result = hoststand("feed", "status", "--db", url)
    line = assert_one_line(result, "cannot open the database")
    assert "secret-pw" not in line and "=***" in line


def test_serve_refuses_to_start_with_a_partner_secret_set_empty_in_its_environment(
    tmp_path: Path,
) -> None:
    # An unfilled deployment template: webhooks signed with an empty key were accepted.
    settings = str(REPO / "samples" / "server.toml")
    args = [str(HOSTSTAND), "serve", "--config", MARLOWES, "--settings", settings]
    args += ["--db", str(tmp_path / "h.db"), "--host", "127.0.0.1", "--port", str(free_port())]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTSTAND_")}
    env["HOSTSTAND_PARTNER_SECRET_TABLEFINDER"] = ""
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert "HOSTSTAND_PARTNER_SECRET_TABLEFINDER is set but empty" in line


@pytest.mark.parametrize(
    "variable", ["HOSTSTAND_ADMIN_TOKEN", "HOSTSTAND_HOST_TOKEN_MARLOWES_KITCHEN"]
)
def test_serve_refuses_to_start_with_a_token_under_16_characters_in_its_environment(
    tmp_path: Path, variable: str
) -> None:
    # HOSTSTAND_ADMIN_TOKEN=abc guarded the admin routes (a reload) with three characters,
    # while the same token in the settings file is refused under 16.
    settings = str(REPO / "samples" / "server.toml")
    args = [str(HOSTSTAND), "serve", "--config", MARLOWES, "--settings", settings]
    args += ["--db", str(tmp_path / "h.db"), "--host", "127.0.0.1", "--port", str(free_port())]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTSTAND_")}
    env[variable] = "tiny-tok"
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert f"{variable} is set but too short: it needs at least 16 character(s)" in line
    assert "tiny-tok" not in line
    assert not (tmp_path / "h.db").exists()  # refused before anything was opened


def test_serve_on_a_database_url_that_cannot_connect_is_one_line_in_a_real_process(
    tmp_path: Path,
) -> None:
    args = [str(HOSTSTAND), "serve", "--config", MARLOWES, "--db", unreachable(), "--port", "0"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert "cannot open the database" in line and "secret-pw" not in line


def test_an_export_not_watched_on_a_terminal_shows_its_progress_on_stderr(tmp_path: Path) -> None:
    google = str(REPO / "samples" / "google-floorplan.toml")
    options = ["--config", MARLOWES, "--config", google, "--db", str(tmp_path / "h.db")]
    result = hoststand("feed", "export", *options, "--out", str(tmp_path / "out"), "--days", "1")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "hoststand: exported 1/2 (marlowes-kitchen)",
        "hoststand: exported 2/2 (merch1)",
    ]
    assert result.stdout.startswith("exported 2 restaurant(s)")


def test_the_upgrade_of_a_file_written_by_an_older_version_is_shown_as_it_goes(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(SCHEMA_3_LOG)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (3)")
    conn.executemany(
        "INSERT INTO log_entries VALUES (?, ?, ?, ?, ?, 0.0, '{}', NULL, NULL, NULL, NULL, NULL)",
        [
            ("marlowes-kitchen", "2026-12-05", seq, json.dumps(["board", seq]), "{}")
            for seq in range(25)
        ],
    )
    conn.close()
    result = hoststand("feed", "status", "--db", str(db))
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == f"hoststand: {db}: upgrading from schema 3: to schema 4, once" + (
        " (the file is locked until it is done)"
    )
    assert lines[1] == f"hoststand: {db}: upgrading from schema 3: 3/25 log entries filled in (12%)"
    assert lines[-2].endswith("25/25 log entries filled in (100%)")
    assert lines[-1].startswith(f"hoststand: {db}: upgrading from schema 3: done in ")
    assert len(lines) == 1 + 9 + 1  # steps of 3 entries: ten at most
    again = hoststand("feed", "status", "--db", str(db))
    assert again.exit_code == 0 and again.stderr == ""


def test_a_restaurant_file_with_several_problems_lists_one_per_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('merchant_id = 3\nname = "X"\n', encoding="utf-8")
    result = hoststand("slots", "--config", str(bad), "--date", "2026-12-05")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0] == f"hoststand: {bad}: merchant_id: should be a valid string (got 3)"
    assert f"{bad}: timezone: required but missing" in lines[1:]
    assert all(line.startswith(("hoststand: ", f"{bad}: ")) for line in lines)


@pytest.mark.parametrize("twice", ["same file", "same merchant_id"])
def test_serve_refuses_two_files_of_one_restaurant_in_one_line(tmp_path: Path, twice: str) -> None:
    """It served them (its books keeping the last) while every export it made failed, 'two
    restaurant files share a merchant_id', for good."""
    other = MARLOWES
    if twice == "same merchant_id":
        other = str(tmp_path / "copy.toml")
        Path(other).write_text(Path(MARLOWES).read_text(encoding="utf-8"), encoding="utf-8")
    args = [str(HOSTSTAND), "serve", "--config", MARLOWES, "--config", other, "--port", "0"]
    args += ["--db", str(tmp_path / "h.db"), "--no-export"]
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=20, cwd=tmp_path)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"it served: {exc.stdout!r}") from None
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"hoststand: {other}: ")
    assert ("given twice" if twice == "same file" else "also the merchant_id of") in line
    assert not (tmp_path / "h.db").exists()  # refused before anything was opened


def test_feed_export_names_the_two_files_of_one_restaurant(tmp_path: Path) -> None:
    copy = tmp_path / "copy.toml"
    copy.write_text(Path(MARLOWES).read_text(encoding="utf-8"), encoding="utf-8")
    options = ["--config", MARLOWES, "--config", str(copy), "--out", "out", "--days", "1"]
    line = assert_one_line(hoststand("feed", "export", *options), str(copy), MARLOWES)
    assert "merchant_id" in line
