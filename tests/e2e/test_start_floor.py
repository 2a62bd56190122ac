"""A start of `hoststand serve` beside running servers, on an older copy of the file: the
store keeps the history of its floors in force (floors.floor_history), and a start whose
file's floor is one a reload or start replaced since is refused, one line naming the
difference and what to do, nothing written; `--restore-floor` puts it back on purpose."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

import requests

from feed.service.floors import floor_history, kept_floor
from store import open_store
from tests.integration.floor_copies import FRIDAY, MARLOWES, MID, T5, T5_T6, serving_reloaded
from tests.integration.server_process import (
    CONFIGS,
    HOSTSTAND,
    NOW,
    SETTINGS,
    STARTUP_SECONDS,
    TIMEOUT,
    _clean_env,
    start_server,
)


def serve_refused(db: str, config: Path, workdir: Path) -> subprocess.CompletedProcess[str]:
    """`hoststand serve` on `config`, expected to exit before it serves (a start that
    serves instead is stopped after STARTUP_SECONDS, and the test fails)."""
    args = [str(HOSTSTAND), "--now", NOW.isoformat(), "serve", "--config", str(config)]
    args += ["--config", str(CONFIGS[1]), "--db", db, "--settings", str(SETTINGS)]
    args += ["--host", "127.0.0.1", "--port", "0", "--no-export"]
    try:
        return subprocess.run(
            args, capture_output=True, text=True, timeout=STARTUP_SECONDS, cwd=workdir,
            env=_clean_env(),
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the start on {config} served:\n{exc.stderr!r}") from None


def test_a_start_on_an_older_copy_of_the_file_is_refused_and_puts_no_removed_table_back(
    any_db: str, tmp_path: Path
) -> None:
    """Server A runs Marlowe's file, reloaded without T5. A second server (or A after a
    restart) is then started with an older copy that still has T5: refused, exit 2, one
    line naming the reload, T5 and what to do; the floor in force still lacks T5, and A
    stays ok on /healthz. It started, and put T5 back in force for every server: A was
    told its floor is out of date, and the next walk-in could be seated at T5. A start
    with the current file serves; one with the older copy and --restore-floor puts it back
    in force on purpose (A is then the server out of date, as after any newer start)."""
    text = MARLOWES.read_text(encoding="utf-8")
    without_t5 = text.replace(T5, "").replace(T5_T6, "")
    with serving_reloaded(any_db, tmp_path, text, without_t5) as (server, current):
        store = open_store(any_db)
        try:
            assert [f.how for f in floor_history(store, MID)] == ["start", "reload"]
            kept = store.recall_prefix("floor", f"{MID}/")
            length = len(store.entries(MID, FRIDAY))

            refused = serve_refused(any_db, MARLOWES, tmp_path)
            assert refused.returncode == 2, (refused.stdout, refused.stderr)
            assert "Traceback" not in refused.stderr
            assert refused.stderr.splitlines() == [
                f"hoststand: {MARLOWES}: tables: this file's floor plan is an older one,"
                " replaced on the store by a reload at 2026-12-04 18:00 GMT (it has T5, T5+T6,"
                " the floor in force does not): an older copy of the file? Start with the"
                " file the servers run, or give --restore-floor to put this floor plan back"
                " in force on purpose (for every server)"
            ], refused.stderr
            assert store.recall_prefix("floor", f"{MID}/") == kept
            assert "T5" not in kept_floor(store, MID)[1]
            assert len(store.entries(MID, FRIDAY)) == length
            health = requests.get(f"{server.base}/healthz", timeout=TIMEOUT).json()
            assert (health["status"], health["problems"]) == ("ok", []), health

            second = start_server(
                any_db, configs=(current, CONFIGS[1]), extra=["--no-export"], workdir=tmp_path
            )
            second.stop()
            assert store.recall_prefix("floor", f"{MID}/") == kept

            back = start_server(
                any_db, configs=(MARLOWES, CONFIGS[1]), workdir=tmp_path,
                extra=["--no-export", "--restore-floor"],
            )  # fmt: skip
            try:
                assert "T5" in kept_floor(store, MID)[1]
                assert [f.how for f in floor_history(store, MID)] == [
                    "start", "reload", "restore"
                ]  # fmt: skip
                health = requests.get(f"{server.base}/healthz", timeout=TIMEOUT).json()
                assert health["status"] == "degraded", health
                assert "the floor in force has T5, T5+T6, it does not" in health["problems"][0]
            finally:
                back.stop()
        finally:
            store.close()


def test_a_start_on_the_file_before_a_default_was_written_out_is_not_an_older_copy(
    any_db: str, tmp_path: Path
) -> None:
    """Server A runs Marlowe's file; the operator writes T3's smallest party out
    (min_party = 4: what a 6-top takes anyway, the roominess limit) and reloads A. A second
    server started with the file from before that edit serves: the two floors seat every
    party alike, so it is no older copy, and A stays ok (its floor is not out of date).
    It was refused as an older copy ("T3 is defined otherwise"), and a command with it
    too, though nothing a party could see differs."""
    T3 = 'id = "T3"\nx = 1\ny = 0\nseats = 6\n'
    text = MARLOWES.read_text(encoding="utf-8")
    assert T3 in text
    written_out = text.replace(T3, T3 + "min_party = 4\n")
    with serving_reloaded(any_db, tmp_path, text, written_out) as (server, _current):
        second = start_server(
            any_db, configs=(MARLOWES, CONFIGS[1]), extra=["--no-export"], workdir=tmp_path
        )
        try:
            for each in (server, second):
                health = requests.get(f"{each.base}/healthz", timeout=TIMEOUT).json()
                assert (health["status"], health["problems"]) == ("ok", []), health
        finally:
            second.stop()


def test_a_start_on_a_new_file_takes_force_though_another_servers_clock_runs_ahead(
    any_db: str, tmp_path: Path
) -> None:
    """A server whose clock runs 2 minutes ahead started on Marlowe's file; the operator
    then started a second server on the new file, without T5. Its floor was kept under
    its own clock's instant, before the first's, so the floor in force stayed the old
    one (T5 offered by every server, the new server told it was out of date), and the
    next start on the new file was refused as an older copy of it. A floor a start keeps
    is kept after every floor kept before it, whatever its clock says."""
    without_t5 = tmp_path / "marlowes.toml"
    without_t5.write_text(
        MARLOWES.read_text(encoding="utf-8").replace(T5, "").replace(T5_T6, ""), encoding="utf-8"
    )
    ahead = start_server(
        any_db, now=NOW + timedelta(minutes=2), configs=(MARLOWES, CONFIGS[1]),
        extra=["--no-export"], workdir=tmp_path,
    )  # fmt: skip
    store = open_store(any_db)
    try:
        newer = start_server(
            any_db, configs=(without_t5, CONFIGS[1]), extra=["--no-export"], workdir=tmp_path
        )
        try:
            assert "T5" not in kept_floor(store, MID)[1]
            health = requests.get(f"{newer.base}/healthz", timeout=TIMEOUT).json()
            assert (health["status"], health["problems"]) == ("ok", []), health
            health = requests.get(f"{ahead.base}/healthz", timeout=TIMEOUT).json()
            assert health["status"] == "degraded", health
            assert "it has T5, T5+T6, the floor in force does not" in health["problems"][0]
        finally:
            newer.stop()
        again = start_server(
            any_db, now=NOW + timedelta(minutes=1), configs=(without_t5, CONFIGS[1]),
            extra=["--no-export"], workdir=tmp_path,
        )  # fmt: skip
        again.stop()
        assert [f.how for f in floor_history(store, MID)] == ["start", "start"]
    finally:
        ahead.stop()
        store.close()
