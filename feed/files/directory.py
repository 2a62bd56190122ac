"""A feed directory (the staging directory, a directory destination, `feed export --out`):
which of its files are ours, the lock its writers share, the leftovers of a writer that
died, and how many generations are kept (`prune`: the newest complete ones).

Ours are the feed files `writer.feed_filename` names:
`<kind>-<generation_timestamp>-<shard>-of-<total>.json` (or `.json.gz`), kind one of
availability, merchant, service; and their temporary files, `.<feed file>.<random>.tmp`
(the writer's, `writer._atomic_output`) and `.<feed file>.partial` (a copy into a
destination, `scheduler.copy_into`). Anything else in the directory (a README, a
subdirectory, another program's files, even one whose name merely looks like a feed's) is
not ours, and is never removed, renamed or read.

A writer killed mid-export (SIGKILL, a power cut) leaves its temporary files behind. They
are removed by the next export into the directory, at its start, but only when it holds
the directory alone: every export writing into a directory, or delivering from it, holds
the directory's lock shared (`in_use`), so a temporary file found while no one else holds
it belongs to a writer that is gone. The lock is `flock` on the directory itself (no lock
file beside the feeds) and dies with its process; where the file system has no such locks
(some network file systems), leftovers are left where they are rather than risk a live
writer's file.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("hoststand.export")

KINDS = ("availability", "merchant", "service")
_FEED = (
    r"(?P<kind>availability|merchant|service)-(?P<generation>[0-9]+)"
    r"-(?P<shard>[0-9]+)-of-(?P<total>[0-9]+)\.json(?:\.gz)?"
)
FEED_FILE = re.compile(_FEED)
# tempfile's random names are 8 of [a-z0-9_]
LEFTOVER = re.compile(rf"\.{_FEED}(?:\.partial|\.[a-z0-9_]+\.tmp)")


class DirectoryBusy(OSError):
    """Another export held the directory for longer than we would wait."""


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


def complete(files: list[FeedFile]) -> bool:
    """Does one generation's files hold the whole feed: every shard of each of the three
    kinds (a copy or an export killed midway leaves only some)?"""
    for kind in KINDS:
        mine = [f for f in files if f.kind == kind]
        totals = {f.total for f in mine}
        if len(totals) != 1 or {f.shard for f in mine} != set(range(totals.pop())):
            return False
    return True


def prune(directory: Path, keep: int, current: int | None = None) -> list[Path]:
    """Keep the newest `keep` complete generations in `directory`, and remove the feed
    files of every generation older than those; the paths removed.

    Never removed: generation `current` (the export in hand), and any generation newer than
    the oldest one kept, complete or not (one being written or copied is not complete yet).
    With fewer than `keep` complete generations nothing is removed."""
    by_generation: dict[int, list[FeedFile]] = {}
    for f in feed_files(directory):
        by_generation.setdefault(f.generation, []).append(f)
    whole = sorted(g for g, files in by_generation.items() if complete(files))
    if keep < 1 or len(whole) < keep:
        return []
    oldest_kept = whole[-keep]
    removed = []
    for generation in sorted(by_generation):
        if generation >= oldest_kept:
            break
        if generation == current:
            continue
        for f in by_generation[generation]:
            if _remove(f.path, "an old feed generation"):
                removed.append(f.path)
    return removed


def generation_of(files: Sequence[Path]) -> int | None:
    """The generation_timestamp of feed files (None: not named as ours)."""
    stamps = {int(m["generation"]) for p in files if (m := FEED_FILE.fullmatch(p.name))}
    return stamps.pop() if len(stamps) == 1 else None


def remove_leftovers(directory: Path) -> list[Path]:
    """Remove the temporary files of exports that did not finish; only ever called while
    holding `directory` alone (a live writer would hold it too). The paths removed."""
    removed = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if LEFTOVER.fullmatch(entry.name) is None:
                continue
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            path = Path(entry.path)
            if _remove(path, "left by an export that did not finish"):
                removed.append(path)
    if removed:
        log.warning(
            "removed %d temporary file(s) left in %s by an export that did not finish",
            len(removed),
            directory,
        )
    return removed


def _lock(fd: int, operation: int) -> bool | None:
    """flock: True taken, False held by another (LOCK_NB), None where there are no locks."""
    try:
        fcntl.flock(fd, operation)
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        return None  # ENOLCK, EBADF, EINVAL...: this file system has no flock on directories
    return True


@contextmanager
def in_use(directory: Path) -> Iterator[None]:
    """Hold `directory` shared while feed files are written into it or delivered from it.
    On the way in, if no one else holds it, the leftovers of writers that died go first."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _lock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB):
            try:
                remove_leftovers(directory)
            except OSError as exc:
                log.warning("could not look for leftovers in %s: %s", directory, exc)
        # Shared from here on (a pruner or a copier holds it alone only briefly).
        _lock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # the lock goes with the descriptor


@contextmanager
def alone(directory: Path, *, wait: float = 0.0) -> Iterator[bool]:
    """Hold `directory` exclusively: no other export writes into it or delivers from it
    meanwhile. Yields True once taken, False where the file system has no such locks (the
    caller then does only what is safe beside another writer). Raises DirectoryBusy if
    another export still holds it after `wait` seconds: bounded, so two exports each
    holding what the other waits for cannot wait for ever."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        deadline = time.monotonic() + wait
        while (taken := _lock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)) is False:
            if time.monotonic() >= deadline:
                raise DirectoryBusy(
                    errno.EBUSY, f"another export is using {directory}; the next run tries again"
                )
            time.sleep(0.05)
        yield bool(taken)
    finally:
        os.close(fd)
