"""The scheduled export's files on disk: its staging directory and its directory
destinations hold the feeds and nothing of ours besides, whatever else is in them."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from feed.files.directory import prune
from feed.files.scheduler import KEEP_GENERATIONS, PUBLISHED_GENERATIONS, ExportScheduler
from feed.settings import Destination, ExportSettings
from feed.venue.restaurant import Restaurant, load_restaurant
from store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
KINDS = ("availability", "merchant", "service")


@pytest.fixture(scope="module")
def restaurants() -> list[Restaurant]:
    return [load_restaurant(REPO / "samples" / "marlowes.toml")]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        yield store


def scheduler(
    restaurants: list[Restaurant],
    store: SQLiteStore,
    staging: Path,
    *destinations: Destination,
) -> ExportScheduler:
    settings = ExportSettings(days=2, destinations=destinations)
    return ExportScheduler(restaurants, store, settings, staging, clock=lambda: NOW)


# A writer that stops where the test wants it (it says so on stdout) until it is killed.
WRITER = """
import sys, time
from datetime import datetime
from pathlib import Path
from feed.files.export import export_feeds
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore

def stop(restaurant):  # called mid-file: the availability feed's temporary file is open
    print("writing", flush=True)
    time.sleep(600)

restaurant = load_restaurant(Path("samples/marlowes.toml"))
with SQLiteStore(Path(sys.argv[2])) as store:
    now = datetime.fromisoformat(sys.argv[3])
    export_feeds([restaurant], store, Path(sys.argv[1]), now, days=2, progress=stop)
"""
COPIER = """
import os, sys, time
from pathlib import Path
from feed.files.scheduler import copy_into

def stop(source, target):  # every file is copied, none renamed yet
    print("copied", flush=True)
    time.sleep(600)

os.replace = stop
copy_into(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
"""


@contextmanager
def stopped(script: str, said: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """A child process running `script` with `args`, once it printed `said`; killed
    (SIGKILL: no clean-up of its own) when the block ends if the block did not kill it."""
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == said, child.stderr.read() if child.stderr else line
        yield child
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()


def kill(child: subprocess.Popen[str]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL


def temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith((".tmp", ".partial")))


def generations(directory: Path) -> list[int]:
    """The generation_timestamps of the feed files in `directory`, oldest first."""
    stamps = set()
    for path in directory.iterdir():
        kind, _, rest = path.name.partition("-")
        if kind in KINDS and path.is_file() and not path.is_symlink():
            stamps.add(int(rest.split("-")[0]))
    return sorted(stamps)


def foreign_entries(directory: Path, outside: Path) -> dict[str, str]:
    """Put in `directory` what an operator or another program might: files and a directory
    the export did not make, some named much like a feed; returns name -> what it holds."""
    (directory / "README").write_text("feeds for the partner, see the runbook\n")
    (directory / "notes-v2-of-3.json").write_text('{"draft": true}\n')
    (directory / "backup-1-of-2.json.orig").write_text("an operator's backup\n")
    (directory / ".hidden-1-0-of-1.json.tmp").write_text("another program's temp file\n")
    (directory / "archive").mkdir()
    (directory / "archive" / "availability-1-0-of-1.json").write_text("archived\n")
    (directory / "availability-1-0-of-1.json").mkdir()  # a directory named like a feed file
    (outside / "kept.json").write_text("elsewhere\n")
    (directory / "merchant-2-0-of-1.json").symlink_to(outside / "kept.json")
    return {
        "README": "feeds for the partner, see the runbook\n",
        "notes-v2-of-3.json": '{"draft": true}\n',
        "backup-1-of-2.json.orig": "an operator's backup\n",
        ".hidden-1-0-of-1.json.tmp": "another program's temp file\n",
        "archive/availability-1-0-of-1.json": "archived\n",
        "merchant-2-0-of-1.json": "elsewhere\n",
    }


def assert_untouched(directory: Path, foreign: dict[str, str]) -> None:
    for name, text in foreign.items():
        assert (directory / name).read_text() == text, name
    assert (directory / "availability-1-0-of-1.json").is_dir()
    assert (directory / "merchant-2-0-of-1.json").is_symlink()


def test_staging_cleanup_leaves_foreign_entries_alone_and_still_prunes(
    restaurants: list[Restaurant],
    store: SQLiteStore,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    staging = tmp_path / "staging"
    staging.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    foreign = foreign_entries(staging, outside)
    export = scheduler(restaurants, store, staging)
    made = []
    with caplog.at_level(logging.WARNING, logger="hoststand"):
        for _ in range(KEEP_GENERATIONS + 2):
            [record] = export.run_once()  # never raises: the old glob did, on these names
            assert record["outcome"] == "delivered", record
            made.append(record["generation_timestamp"])
    assert generations(staging) == made[-KEEP_GENERATIONS:]  # the older ones were pruned
    assert_untouched(staging, foreign)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_writer_killed_mid_export_leaves_temporary_files_the_next_export_removes(
    restaurants: list[Restaurant], store: SQLiteStore, tmp_path: Path
) -> None:
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / ".notes.json.tmp").write_text("not the export's\n")  # foreign, named alike
    (staging / ".hidden-1-0-of-1.json.partial").write_text("not the export's either\n")
    child_db = str(tmp_path / "child.db")
    with stopped(WRITER, "writing", str(staging), child_db, NOW.isoformat()) as writer:
        [temp] = [t for t in temporaries(staging) if t.startswith(".availability-")]
        kill(writer)
    assert (staging / temp).exists()  # what a crash leaves: nothing removed it
    [record] = scheduler(restaurants, store, staging).run_once()  # the next export
    assert record["outcome"] == "delivered", record
    assert temporaries(staging) == [".hidden-1-0-of-1.json.partial", ".notes.json.tmp"]
    assert (staging / ".notes.json.tmp").read_text() == "not the export's\n"


def test_a_copy_killed_mid_delivery_leaves_partial_files_the_next_delivery_removes(
    restaurants: list[Restaurant], store: SQLiteStore, tmp_path: Path
) -> None:
    staging, published = tmp_path / "staging", tmp_path / "published"
    published.mkdir()
    (published / ".README.partial").write_text("not the export's\n")
    export = scheduler(restaurants, store, staging, Destination("directory", str(published)))
    [first] = export.run_once()
    assert first["outcome"] == "delivered", first
    older = [str(staging / name) for name in first["files"]]
    with stopped(COPIER, "copied", str(published), *older) as copier:
        kill(copier)
    left = [f".{name}.partial" for name in first["files"]]
    assert temporaries(published) == sorted([".README.partial", *left])  # the crash's leftovers
    [second] = export.run_once()
    assert second["outcome"] == "delivered", second
    assert temporaries(published) == [".README.partial"]
    assert (published / ".README.partial").read_text() == "not the export's\n"
    for name in second["files"]:
        assert (published / name).is_file()


def test_a_live_writer_s_temporary_file_is_not_taken_for_a_leftover(
    restaurants: list[Restaurant], store: SQLiteStore, tmp_path: Path
) -> None:
    """Two receivers sharing a staging directory: the one exporting while the other is
    still writing leaves the other's temporary file alone (it holds the directory)."""
    staging = tmp_path / "staging"
    staging.mkdir()
    child_db = str(tmp_path / "child.db")
    later = NOW.replace(hour=13).isoformat()  # its own generation_timestamp
    with stopped(WRITER, "writing", str(staging), child_db, later) as writer:
        [temp] = temporaries(staging)
        [record] = scheduler(restaurants, store, staging).run_once()
        assert record["outcome"] == "delivered", record
        assert temporaries(staging) == [temp]
        kill(writer)
    scheduler(restaurants, store, staging).run_once()
    assert temporaries(staging) == []


def test_a_directory_destination_keeps_the_newest_complete_generations_only(
    restaurants: list[Restaurant], store: SQLiteStore, tmp_path: Path
) -> None:
    staging, published, outside = tmp_path / "staging", tmp_path / "published", tmp_path / "o"
    published.mkdir()
    outside.mkdir()
    foreign = foreign_entries(published, outside)
    # Half a generation older than any export (a copy that stopped between its renames),
    # and a part of one newer than them all (another machine's, still being copied).
    (published / "availability-1796300000-0-of-1.json").write_text("{}\n")
    (published / "availability-1999999999-0-of-2.json").write_text("{}\n")
    export = scheduler(restaurants, store, staging, Destination("directory", str(published)))
    made = []
    for _ in range(PUBLISHED_GENERATIONS + 2):
        [record] = export.run_once()
        assert record["outcome"] == "delivered", record
        made.append(record["generation_timestamp"])
        # the feed just published is always there, whole
        assert all((published / name).is_file() for name in record["files"])
    assert generations(published) == [*made[-PUBLISHED_GENERATIONS:], 1999999999]
    assert generations(staging) == made[-KEEP_GENERATIONS:]
    assert_untouched(published, foreign)


def feed(directory: Path, generation: int, total: int = 1, kinds: tuple[str, ...] = KINDS) -> None:
    for kind in kinds:
        for shard in range(total):
            (directory / f"{kind}-{generation}-{shard}-of-{total}.json").write_text("{}\n")


def test_prune_keeps_complete_generations_the_current_one_and_anything_newer(
    tmp_path: Path,
) -> None:
    feed(tmp_path, 100)
    feed(tmp_path, 200, total=2)
    feed(tmp_path, 250, kinds=("availability",))  # incomplete, older than those kept: goes
    feed(tmp_path, 300, total=3)
    (tmp_path / "availability-300-2-of-3.json").unlink()  # a shard short: not complete
    feed(tmp_path, 400)
    feed(tmp_path, 500, total=2)
    feed(tmp_path, 600, kinds=("availability", "merchant"))  # newer, being written
    removed = prune(tmp_path, 2, current=100)  # 100 is the export in hand: it stays
    assert sorted(p.name for p in removed) == [
        "availability-200-0-of-2.json",
        "availability-200-1-of-2.json",
        "availability-250-0-of-1.json",
        "availability-300-0-of-3.json",
        "availability-300-1-of-3.json",
        "merchant-200-0-of-2.json",
        "merchant-200-1-of-2.json",
        "merchant-300-0-of-3.json",
        "merchant-300-1-of-3.json",
        "merchant-300-2-of-3.json",
        "service-200-0-of-2.json",
        "service-200-1-of-2.json",
        "service-300-0-of-3.json",
        "service-300-1-of-3.json",
        "service-300-2-of-3.json",
    ]
    assert generations(tmp_path) == [100, 400, 500, 600]
    # Fewer complete generations than asked for: nothing goes.
    assert prune(tmp_path, 4) == []
