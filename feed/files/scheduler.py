"""Scheduled export: the three feeds at start-up and every interval, to every destination.

Each export is written to a staging directory first, then delivered: copied into a
directory (all files under temporary names, then renamed, so a reader never sees half a
feed) and/or uploaded file by file over HTTP with retries. Every delivery is recorded in
the store (when, files, bytes, destination, outcome, attempts) for `hoststand feed status`.
A failed run is recorded too, and the next scheduled run still happens. Receivers sharing
a store take turns: after its start-up export, each scheduled run is made by one process
only of those serving the same restaurants, the first to take that interval's turn
(store.turns; those serving other restaurants export theirs); and every export, start-up ones
included, takes a generation_timestamp no other export has taken (store.generations), so
receivers started together never upload two feeds with one generation_timestamp.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

from feed.files.directory import (
    DirectoryBusy,
    alone,
    generation_of,
    in_use,
    prune,
    remove_leftovers,
)
from feed.files.export import ExportSummary, export_feeds
from feed.push.delivery import backoff, send, watched
from feed.service.events import Events
from feed.settings import Destination, ExportSettings
from feed.venue.restaurant import Restaurant
from store import generations
from store.log import LogStore, StoreUnavailable
from store.turns import Turns, served_by

log = logging.getLogger("hoststand.export")
MAX_ATTEMPTS = 6  # per file and upload
# An upload's answer is due within delivery.TIMEOUT of its file having gone out at this
# rate at least (a slow link): a big file's seconds of sending are no stalled answer.
UPLOAD_BYTES_PER_SECOND = 64 * 1024
KEEP_GENERATIONS = 2  # staged exports kept on disk
# Complete generations kept in a directory destination: the one just published and the two
# before it, so a reader that began on an earlier feed has a run or two more to finish it.
PUBLISHED_GENERATIONS = 3
# How long a copy into a directory waits for another export using it (a copy of a big feed)
# before it is recorded as failed; the next run tries again.
LOCK_WAIT_SECONDS = 60.0


def copy_into(directory: Path, files: Sequence[Path], *, keep: int = PUBLISHED_GENERATIONS) -> None:
    """Copy `files` into `directory` so that they all appear at once or not at all; then
    only the newest `keep` complete generations stay there (never the one just copied).

    The directory is held alone meanwhile (`directory.alone`), so the `.partial` files of an
    earlier copy killed midway, found then, are leftovers: they are removed first."""
    directory.mkdir(parents=True, exist_ok=True)
    with alone(directory, wait=LOCK_WAIT_SECONDS) as held:
        if held:
            remove_leftovers(directory)
        _copy_all(directory, files)
        # Without a lock too: only generations older than `keep` complete ones go, and one
        # being copied by another export is newer, or not complete yet.
        try:
            prune(directory, keep, generation_of(files))
        except OSError as exc:  # delivered all the same; the next run prunes
            log.warning("could not prune %s: %s", directory, exc.strerror or exc)


def _copy_all(directory: Path, files: Sequence[Path]) -> None:
    staged: list[tuple[Path, Path]] = []
    try:
        for source in files:
            temp = directory / f".{source.name}.partial"
            shutil.copyfile(source, temp)
            with open(temp, "rb") as f:
                os.fsync(f.fileno())
            staged.append((temp, directory / source.name))
        for temp, final in staged:
            os.replace(temp, final)
    except BaseException:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
        for source in files:
            (directory / f".{source.name}.partial").unlink(missing_ok=True)
        raise


def _same_directory(a: Path, b: Path) -> bool:
    """One directory, by its inode (a bind mount or a link too): the staged files are
    already there, and copying would wait on our own hold of it."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # not there yet: copy_into makes it
        return a.resolve() == b.resolve()


class ExportScheduler:
    def __init__(
        self,
        restaurants: Sequence[Restaurant],
        store: LogStore,
        settings: ExportSettings,
        staging: Path,
        *,
        clock: Callable[[], datetime],
        base_delay: float = 1.0,
        rng: random.Random | None = None,
        events: Events | None = None,
    ) -> None:
        self.events = events or Events()
        self.restaurants = list(restaurants)
        self.store = store
        self.settings = settings
        self.staging = staging
        self.clock = clock
        self.base_delay = base_delay
        self.rng = rng or random.Random()
        # Watched, as the partners' requests are: a destination trickling its status line
        # or headers held the export thread (every later run, and a stop) for as long.
        self.session = watched(requests.Session())
        self.stop = threading.Event()  # set on shutdown: a retry wait ends at once
        # A feed holds this process's restaurants only: the processes serving others export
        # theirs in the same interval, each to its own destinations.
        name = served_by("export", (r.merchant_id for r in self.restaurants))
        self.turns = Turns(store, name, settings.interval_minutes * 60)

    def run_once(self) -> list[dict[str, Any]]:
        """Export once and deliver to every destination; the records written."""
        started = time.time()
        s = self.settings
        with contextlib.ExitStack() as held:
            try:
                self.staging.mkdir(parents=True, exist_ok=True)
                # Held until delivered: an export starting meanwhile in the same directory
                # (another receiver) takes none of these files for a dead writer's leftovers.
                held.enter_context(in_use(self.staging))
                summary = export_feeds(
                    self.restaurants,
                    self.store,
                    self.staging,
                    self.clock(),
                    days=s.days,
                    shards=s.shards,
                    gzip=s.gzip,
                    take_generation=lambda earliest: generations.take(self.store, earliest),
                )
            except Exception as exc:
                log.exception("export failed")
                self.events.exported("failed", time.time() - started, 0, 0, 0, f"export: {exc}")
                record = self._record(started, None, "staging", "failed", 1, f"export: {exc}")
                self.store.record_export(record)
                return [record]
            destinations = s.destinations or (Destination("directory", str(self.staging)),)
            # Each destination on its own thread: one whose endpoint hangs or keeps failing
            # (six attempts, each up to its timeout, back-offs between) held every later one
            # of the list until it gave up, every run. Records keep the list's order.
            with ThreadPoolExecutor(
                max_workers=len(destinations), thread_name_prefix="export-delivery"
            ) as deliveries:
                records = list(
                    deliveries.map(lambda d: self._deliver(summary, d, started), destinations)
                )
        failed = [r for r in records if r["outcome"] != "delivered"]
        self.events.exported(
            "failed" if failed else "delivered",
            time.time() - started,
            summary.entries,
            len(summary.files),
            summary.bytes,
            "; ".join(f"{r['destination']}: {r['error']}" for r in failed),
        )
        for record in records:
            self.store.record_export(record)
        self._prune(summary.generation_timestamp)
        return records

    def _record(
        self,
        started: float,
        summary: ExportSummary | None,
        destination: str,
        outcome: str,
        attempts: int,
        error: str = "",
    ) -> dict[str, Any]:
        return {
            "started_at": started,
            "finished_at": time.time(),
            "generation_timestamp": summary.generation_timestamp if summary else None,
            "files": [f.path.name for f in summary.files] if summary else [],
            "bytes": summary.bytes if summary else 0,
            "entries": summary.entries if summary else 0,
            "destination": destination,
            "outcome": outcome,
            "attempts": attempts,
            "error": error,
        }

    def _deliver(
        self, summary: ExportSummary, destination: Destination, started: float
    ) -> dict[str, Any]:
        files = [f.path for f in summary.files]
        where = destination.describe()
        if destination.kind == "directory":
            target = Path(destination.path or ".")
            try:
                if not _same_directory(target, self.staging):
                    copy_into(target, files)
            except OSError as exc:
                return self._record(started, summary, where, "failed", 1, str(exc))
            return self._record(started, summary, where, "delivered", 1)
        total_attempts = 0
        for path in files:
            ok, attempts, error = self._upload(destination, path)
            total_attempts += attempts
            if not ok:
                # Later shards are not sent: the partner processes a feed only once all its
                # shards with one nonce have arrived, and the next run sends a whole new one.
                return self._record(started, summary, where, "failed", total_attempts, error)
        return self._record(started, summary, where, "delivered", total_attempts)

    def _upload(self, destination: Destination, path: Path) -> tuple[bool, int, str]:
        url = f"{(destination.url or '').rstrip('/')}/{path.name}"
        kind = "application/gzip" if path.suffix == ".gz" else "application/json"
        headers = {"Content-Type": kind, **destination.headers}
        data = path.read_bytes()  # one file per request: never a truncated file
        error = ""
        for attempt in range(MAX_ATTEMPTS):
            outcome = send(
                self.session,
                destination.method,
                url,
                data=data,
                headers=headers,
                sending=len(data) / UPLOAD_BYTES_PER_SECOND,
            )
            if outcome.ok:
                return True, attempt + 1, ""
            error = outcome.error
            if not outcome.retry:
                return False, attempt + 1, error
            if attempt + 1 < MAX_ATTEMPTS:
                # Retry-After is the least wait, never less than our own back-off.
                delay = backoff(attempt, self.rng, self.base_delay)
                if outcome.retry_after is not None:
                    delay = max(delay, outcome.retry_after)
                if self.stop.wait(delay):
                    return False, attempt + 1, f"{error} (stopped while waiting to retry)"
        return False, MAX_ATTEMPTS, error

    def _prune(self, current: int) -> None:
        """Keep the staged files of the last few exports only (and this one's). Only our
        own feed files are looked at: anything else in the directory is left as it is.
        Not while another export (a receiver sharing the directory) writes or delivers
        from it: it may be sending an older generation; the later one prunes."""
        try:
            with alone(self.staging):
                prune(self.staging, KEEP_GENERATIONS, current)
        except DirectoryBusy:
            pass
        except OSError as exc:  # the directory itself cannot be read: the next run tries again
            log.warning("could not prune %s: %s", self.staging, exc.strerror or exc)

    def loop(self) -> None:
        """Export at start-up, then at the start of each interval (aligned to the clock, so
        every process wakes at once) if this process took the interval's turn."""
        first = True
        while not self.stop.is_set():
            try:
                if first or self.turns.mine(time.time()):
                    self.run_once()
            except StoreUnavailable as exc:
                self.events.store_unavailable("export", str(exc))
            except Exception:
                log.exception("scheduled export failed; the next run still happens")
            first = False
            self.stop.wait(self.turns.until_next(time.time()))
        self.session.close()
