"""The running service: the HTTP app plus its background work, started and stopped together.

Background threads: the outbox sender (partner notifications), the export scheduler, and
the clock's sweep, which writes what time alone changes (no-shows, waits reaching 30
minutes, claims) with nobody at the stand to trigger it, and tells partners when time
alone moves today's availability. SIGTERM stops uvicorn
gracefully (requests in flight finish), then the threads, then the store.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from types import FrameType

import uvicorn
from fastapi import FastAPI

from feed.files.scheduler import ExportScheduler
from feed.http import tablet
from feed.http.hotpaths import ASGIApp, HotPaths
from feed.http.server import create_app, hot_app
from feed.push.outbox import OutboxSender
from feed.service.notify import Notifier
from feed.service.receiver import Receiver
from feed.settings import Settings
from feed.venue.restaurant import Restaurant
from store.log import LogStore

log = logging.getLogger("hoststand.serve")
SWEEP_SECONDS = 10.0  # the board is current within this, without anyone asking
GC_GEN0_THRESHOLD = 100_000  # allocations between young collections (default 700)
# Seconds a thread may keep the GIL while another waits (default 0.005). The background
# threads (outbox sender, export, sweeper) work in long stretches; with 5 ms each, a request
# on the event loop waited behind them (lookup p99 44 ms with partner updates on).
SWITCH_INTERVAL = 0.001


def sweep_no_shows(receiver: Receiver) -> int:
    """Log a `board` on every running day that time alone changes (a booking past its hold,
    a wait reaching 30 minutes, a claim); how many days."""
    swept = 0
    now = receiver.clock()
    for book in receiver.books.values():
        day = receiver.today(book.restaurant, now)
        if day is None:
            continue
        if book.time_changes(day, now):
            book.operate(day, now, "board", meta={"source": "clock"})
            swept += 1
    return swept


class AvailabilityWatch:
    """Tells partners when time alone moves today's availability (a party past its turn
    keeps its table until now + overstay; a slot closes as it starts)."""

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver
        self.seen: dict[str, tuple[object, int]] = {}  # merchant -> (day, fingerprint)

    def sweep(self) -> int:
        """Queue a replace for each restaurant whose day moved since the last sweep."""
        told = 0
        now = self.receiver.clock()
        for merchant, book in self.receiver.books.items():
            day = self.receiver.today(book.restaurant, now)
            if day is None:
                continue
            key = book.availability_key(day, now)
            last = self.seen.get(merchant)
            self.seen[merchant] = (day, key)
            if last is not None and last[0] == day and last[1] != key and book.tell_partners(day):
                told += 1
        return told


class Background:
    """The threads that run beside the HTTP server."""

    def __init__(
        self,
        receiver: Receiver,
        restaurants: Sequence[Restaurant],
        settings: Settings,
        staging: Path,
        *,
        export: bool = True,
    ) -> None:
        self.stop = threading.Event()
        base = settings.export.retry_base_seconds
        self.sender = OutboxSender(
            receiver.store, receiver.books, settings.partners, clock=receiver.clock, base_delay=base
        )
        self.scheduler = (
            ExportScheduler(
                restaurants,
                receiver.store,
                settings.export,
                staging,
                clock=receiver.clock,
                base_delay=base,
            )
            if export
            else None
        )
        self.receiver = receiver
        self.watch = AvailabilityWatch(receiver)
        self.threads: list[threading.Thread] = []

    def _sweeper(self) -> None:
        while True:  # at start-up (a server that was down catches up), then every interval
            try:
                sweep_no_shows(self.receiver)
                self.watch.sweep()
            except Exception:
                log.exception("the clock's sweep failed; trying again")
            if self.stop.wait(SWEEP_SECONDS):
                return

    def start(self) -> None:
        targets: list[tuple[str, Callable[[], None]]] = [
            ("outbox", lambda: self.sender.loop(self.stop)),
            ("no-shows", self._sweeper),
        ]
        if self.scheduler is not None:
            targets.append(("export", self.scheduler.loop))
        for name, target in targets:
            thread = threading.Thread(target=target, name=f"hoststand-{name}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def close(self) -> None:
        self.stop.set()
        if self.scheduler is not None:
            self.scheduler.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)


def build(
    restaurants: Sequence[Restaurant],
    store: LogStore,
    settings: Settings,
    clock: Callable[[], datetime],
    staging: Path,
    *,
    export: bool = True,
) -> HotPaths:
    """The app `serve` runs: FastAPI behind the hot paths (feed.http.hotpaths)."""
    receiver = Receiver(
        restaurants,
        store,
        settings,
        clock,
        Notifier(settings.partners, settings.export.coalesce_seconds),
    )
    background = Background(receiver, restaurants, settings, staging, export=export)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        background.start()
        try:
            yield
        finally:
            background.close()

    return hot_app(create_app(receiver, lifespan=lifespan), receiver)


class GracefulServer(uvicorn.Server):
    """uvicorn re-raises SIGTERM after a graceful shutdown, so the process dies 'killed';
    a clean shutdown here exits with status 0, as service managers expect."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        tablet.STOPPING.set()  # the tablets' event streams end, so shutdown need not wait
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            self._captured_signals.clear()


def serve(app: ASGIApp, host: str, port: int) -> None:
    # The replayed days are many small long-lived objects; Python's default collector keeps
    # walking them (gen-2 pauses of tens of ms showed as booking p99 92 ms vs 62 ms).
    # Freeze what start-up built and collect the young generation less often.
    gc.freeze()
    gc.set_threshold(GC_GEN0_THRESHOLD, 50, 1000)
    sys.setswitchinterval(SWITCH_INTERVAL)
    config_ = uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=10
    )
    GracefulServer(config_).run()
