"""A feed directory (the staging directory, a directory destination): which of its files
are ours, and how many generations of them are kept.

Ours are the feed files `writer.feed_filename` names:
`<kind>-<generation_timestamp>-<shard>-of-<total>.json` (or `.json.gz`), kind one of
availability, merchant, service. Anything else in the directory (a README, a
subdirectory, another program's files, even one whose name merely looks like a feed's) is
not ours, and is never removed, renamed or read.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("hoststand.export")

KINDS = ("availability", "merchant", "service")
_FEED = (
    r"(?P<kind>availability|merchant|service)-(?P<generation>[0-9]+)"
    r"-(?P<shard>[0-9]+)-of-(?P<total>[0-9]+)\.json(?:\.gz)?"
)
FEED_FILE = re.compile(_FEED)


@dataclass(frozen=True)
class FeedFile:
    path: Path
    kind: str
    generation: int
    shard: int
    total: int


def feed_files(directory: Path) -> list[FeedFile]:
    """Our feed files in `directory`: regular files named as the writer names them (a
    directory or a link with such a name is not one of ours)."""
    found = []
    with os.scandir(directory) as entries:
        for entry in entries:
            match = FEED_FILE.fullmatch(entry.name)
            if match is None:
                continue
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            found.append(
                FeedFile(
                    Path(entry.path),
                    match["kind"],
                    int(match["generation"]),
                    int(match["shard"]),
                    int(match["total"]),
                )
            )
    return found


def _remove(path: Path, why: str) -> bool:
    """Unlink one of our files; a failure is a warning (the next run tries again), never an
    error of the export."""
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("could not remove %s (%s): %s", path, why, exc.strerror or exc)
        return False
    return True


def prune(directory: Path, keep: int, current: int | None = None) -> list[Path]:
    """Remove the feed files of all but the newest `keep` generations in `directory`, never
    those of generation `current` (the export in hand); the paths removed."""
    by_generation: dict[int, list[FeedFile]] = {}
    for f in feed_files(directory):
        by_generation.setdefault(f.generation, []).append(f)
    generations = sorted(by_generation)
    removed = []
    for generation in generations[: max(len(generations) - keep, 0)]:
        if generation == current:
            continue
        for f in by_generation[generation]:
            if _remove(f.path, "an old feed generation"):
                removed.append(f.path)
    return removed
