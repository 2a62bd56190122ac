"""The scheduled export's files on disk: its staging directory and its directory
destinations hold the feeds and nothing of ours besides, whatever else is in them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from feed.files.scheduler import KEEP_GENERATIONS, ExportScheduler
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
