"""A terminal command beside running servers: its file is not a reload. A command run with
a file whose floor plan is not the one in force on the store (an older copy still with a
table a reload removed) is refused, one line naming the difference, and changes nothing:
it never puts its file's floor in force for the servers."""

from __future__ import annotations

from pathlib import Path

import requests
from click.testing import CliRunner, Result

from feed.cli import main
from feed.service.floors import kept_floor
from store import open_store
from tests.integration.floor_copies import FRIDAY, MARLOWES, MID, T5, T5_T6, serving_reloaded
from tests.integration.server_process import NOW, TIMEOUT


def hoststand(*args: str) -> Result:
    return CliRunner().invoke(main, ["--now", NOW.isoformat(), *args])


def test_a_command_with_an_older_copy_of_the_file_is_refused_and_puts_no_removed_table_back(
    any_db: str, tmp_path: Path
) -> None:
    """A server runs Marlowe's file, reloaded without T5. The operator then runs commands
    with an older copy that still has T5: each is refused (exit 2, one line naming T5 and
    what to do), nothing is written (the day's log, the floor in force), and the server
    stays ok on /healthz. It put T5 back in force for every server: the reloaded server
    was told its floor is out of date, and the next walk-in could be seated at T5. The
    same commands with the file the server runs work."""
    text = MARLOWES.read_text(encoding="utf-8")
    without_t5 = text.replace(T5, "").replace(T5_T6, "")
    with serving_reloaded(any_db, tmp_path, text, without_t5) as (server, current):
        store = open_store(any_db)
        try:
            assert "T5" not in kept_floor(store, MID)[1]
            length = len(store.entries(MID, FRIDAY))
            older = ["--config", str(MARLOWES), "--db", any_db]
            for command in (
                ["host", "walk-in", "4", "--id", "W", *older],
                ["host", "board", *older],
                ["reserve", "--party-size", "4", "--at", "2026-12-05T19:00", *older],
                ["slots", "--date", "2026-12-05", *older],
            ):
                result = hoststand(*command)
                assert result.exit_code == 2, (command, result.output)
                assert "Traceback" not in result.output
                lines = result.stderr.splitlines()
                assert lines == [
                    f"hoststand: {MARLOWES}: tables: this file's floor plan is not the one in"
                    " force on the store (it has T5, T5+T6, the floor in force does not); a"
                    " command does not change the floor plan, a reload or a start of"
                    " `hoststand serve` does: give it the file the servers run, or reload"
                    " them on this one first"
                ], (command, lines)
            assert "T5" not in kept_floor(store, MID)[1]
            assert len(store.entries(MID, FRIDAY)) == length
            health = requests.get(f"{server.base}/healthz", timeout=TIMEOUT).json()
            assert (health["status"], health["problems"]) == ("ok", []), health

            mine = ["--config", str(current), "--db", any_db]
            walked = hoststand("host", "walk-in", "4", "--id", "W", *mine)
            assert walked.exit_code == 0, walked.output
            assert "T5" not in walked.output
            assert hoststand("host", "board", *mine).exit_code == 0
            assert len(store.entries(MID, FRIDAY)) == length + 1
            health = requests.get(f"{server.base}/healthz", timeout=TIMEOUT).json()
            assert (health["status"], health["problems"]) == ("ok", []), health
        finally:
            store.close()


def test_a_command_with_a_file_listing_its_tables_otherwise_with_the_same_ties_is_done(
    any_db: str, tmp_path: Path
) -> None:
    """The floor in force is Marlowe's file. A copy listing the 6-top T3 before the 2-top
    T2, or with T1 drawn elsewhere on the tablet's map, seats every party as the file does
    (the rules take the fewest seats, then floor order among equal tables): a command run
    with it is done and keeps the floor in force as it is. It was refused ('its tables are
    in another order'). A copy listing the 4-top T5 before the 4-top T1, which changes
    which of them a party of 3 gets, is still refused."""
    text = MARLOWES.read_text(encoding="utf-8")
    t1 = '[[tables]]\nid = "T1"\nx = 0\ny = 0\nseats = 4\n\n'
    t2 = '[[tables]]\nid = "T2"\nx = 0\ny = 1\nseats = 2\n\n'
    t3 = '[[tables]]\nid = "T3"\nx = 1\ny = 0\nseats = 6\n\n'
    assert t1 + t2 + t3 in text and T5 in text
    copies = {
        "order.toml": text.replace(t2 + t3, t3 + t2),
        "map.toml": text.replace(t1, t1.replace("x = 0\ny = 0", "x = 5\ny = 5")),
        "ties.toml": text.replace(T5, "").replace(t1, T5 + t1),
    }
    for name, copy in copies.items():
        assert copy != text, name
        (tmp_path / name).write_text(copy, encoding="utf-8")
    day = ["--date", "2026-12-05", "--db", any_db]
    assert hoststand("slots", "--config", str(MARLOWES), *day).exit_code == 0
    store = open_store(any_db)
    try:
        kept = kept_floor(store, MID)
        for name in ("order.toml", "map.toml"):
            result = hoststand("slots", "--config", str(tmp_path / name), *day)
            assert result.exit_code == 0, (name, result.output)
            assert kept_floor(store, MID) == kept, name
        result = hoststand("slots", "--config", str(tmp_path / "ties.toml"), *day)
        assert result.exit_code == 2, result.output
        assert "(its tables are in another order)" in result.stderr, result.stderr
        assert kept_floor(store, MID) == kept
    finally:
        store.close()
