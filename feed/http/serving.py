"""The running service: the HTTP app plus its background work, started and stopped together.

Background threads: the outbox sender (partner notifications; its HTTP requests are made
by a child process, feed.push.sendproc), the export scheduler, and
the clock's sweep, which writes what time alone changes (no-shows, waits reaching 30
minutes, claims) with nobody at the stand to trigger it, and tells partners when time
alone moves today's availability. SIGTERM stops uvicorn
gracefully (requests in flight finish), then the threads, then the store. Processes sharing
a store take turns at the sweep: each interval's is done by one of them (store.turns).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from types import FrameType

import uvicorn
from fastapi import FastAPI

from feed.files.scheduler import ExportScheduler
from feed.http import deadlines, health, logs, tablet
from feed.http.hardening import Hardened
from feed.http.hotpaths import ASGIApp
from feed.http.metrics import Metrics
from feed.http.observe import Observed
from feed.http.server import create_app, hot_app
from feed.push.outbox import OutboxSender, workers
from feed.push.sendproc import SendProcess
from feed.service.config_reload import Reloader, list_stored_misfits
from feed.service.events import Events
from feed.service.notify import Notifier
from feed.service.receiver import Receiver
from feed.service.retention import Retention
from feed.settings import HttpSettings, Settings
from feed.venue.restaurant import Restaurant
from store.log import LogStore, StoreUnavailable
from store.turns import Turns, served_by

log = logging.getLogger("hoststand.serve")
SWEEP_SECONDS = 10.0  # the board is current within this, without anyone asking
RETENTION_SECONDS = 3600.0  # the retention's pass (feed.service.retention): once an hour
GC_GEN0_THRESHOLD = 100_000  # allocations between young collections (default 700)
# Seconds a thread may keep the GIL while another waits (default 0.005). The background
# threads (outbox sender, export, sweeper) work in long stretches; with 5 ms each, a request
# on the event loop waited behind them (lookup p99 44 ms with partner updates on).
SWITCH_INTERVAL = 0.001


CATCH_UP_DAYS = 7  # past days a sweep looks back over for no-shows never written


def sweep_no_shows(receiver: Receiver, caught_up: dict[str, date] | None = None) -> int:
    """Log a `board` on every running day that time alone changes (a booking past its hold,
    a wait reaching 30 minutes, a claim), and a `leave` for each walk-in still waiting once
    its service has closed; how many days.

    With `caught_up` (merchant -> the date its past days were last looked at), also the
    CATCH_UP_DAYS days before today, once a day per process: a booking whose hold ended
    while no server ran (down past the day's close) is written a no-show as of that
    day's close, and its partner is told. Without it, nobody would ever be: the day is
    no longer anyone's today (GetBookingStatus already says NO_SHOW). A booking on a day
    a reload closed after it was taken is cancelled instead, once its hold has ended
    (`DayBook.cancel_closed`): the restaurant was closed, the guests did not fail to come."""
    swept = 0
    now = receiver.clock()
    for book in receiver.books.values():
        r = book.restaurant
        day = receiver.today(r, now)
        local = now.astimezone(r.tz).date()
        written: set[date] = set()
        if caught_up is not None and caught_up.get(r.merchant_id) != local:
            last = (day or local) - timedelta(days=1)
            first = last - timedelta(days=CATCH_UP_DAYS - 1)
            for past, judged in book.left_behind(first, last, now):
                book.close_queue(past, judged)  # else the board could seat them
                book.operate(past, judged, "board", meta={"source": "clock"})
                written.add(past)
            # Every past day's waitlist too (any later write there, a host's late cancel,
            # would run a pass that seats whoever still waits).
            # And a past day closed since its bookings were taken: they are cancelled (its
            # log has no close, so `left_behind` passes it by), never written no-shows.
            for offset in range(CATCH_UP_DAYS):
                past = first + timedelta(days=offset)
                if book.cancel_closed(past, now):
                    written.add(past)
                if past not in written and book.close_queue(past, now):
                    written.add(past)
            caught_up[r.merchant_id] = local
        # The waitlist ends with its service: a party still waiting at the close is taken
        # off it (as the host would), never seated by a later pass. Yesterday too when its
        # last service closes, or a booking at its last seating is held, after midnight
        # (today is then already the next day): its no-shows are still the clock's to
        # write. Any other past day is the catch-up's, once a day.
        yesterday = local - timedelta(days=1)
        ends = book.settled(yesterday)
        late = ends is not None and ends.astimezone(r.tz).date() == local
        running = {*([yesterday] if late else []), *([day] if day is not None else [])}
        for d in sorted(running):
            if book.close_queue(d, now):
                written.add(d)
        for d in sorted(running):
            if book.time_changes(d, now):
                book.operate(d, now, "board", meta={"source": "clock"})
                written.add(d)
        # A day a reload closed after bookings were taken is nobody's today, yet its
        # bookings' holds end by the clock (its weekday's hours: yesterday's may end after
        # midnight): each is then cancelled as the restaurant's, and its partner told.
        for d in (yesterday, local):
            if book.cancel_closed(d, now):
                written.add(d)
        swept += len(written)
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
            # What partners last heard of the day is not known on this process's first look
            # at it (a start, after being down a while; another process's turns; a new day):
            # they are told then too. Taken for what they had, time's changes while no server
            # ran went untold until the next write (a party past its turn, seen still there).
            if (last is None or last != (day, key)) and book.tell_partners(day):
                told += 1
            # Noted as published only once the replace is queued: a store that refused it
            # (the sweep fails) leaves the old key, so the next sweep tells them again.
            self.seen[merchant] = (day, key)
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
        # The partners' requests are made by a child process (started at the first one):
        # their HTTP client must not share the GIL with the requests being served.
        self.requests = SendProcess(workers(settings.partners))  # PER_PARTNER each
        self.sender = OutboxSender(
            receiver.store,
            receiver.books,
            settings.partners,
            clock=receiver.clock,
            base_delay=base,
            events=receiver.events,
            transport=self.requests.send,
        )
        self.scheduler = (
            ExportScheduler(
                restaurants,
                receiver.store,
                settings.export,
                staging,
                clock=receiver.clock,
                base_delay=base,
                events=receiver.events,
            )
            if export
            else None
        )
        self.receiver = receiver
        self.watch = AvailabilityWatch(receiver)
        # One sweep per interval across the processes on this store, not one per process.
        # A turn is a write but no log append: readers keyed on store.log_version() (the day
        # states and grids) are not moved by it.
        # Per set of restaurants: the sweep writes this process's restaurants' days only, and a
        # process serving others taking the turn left them unswept for that interval.
        name = served_by("sweep", (r.merchant_id for r in restaurants))
        self.sweep_turns = Turns(receiver.store, name, SWEEP_SECONDS)
        self.caught_up: dict[str, date] = {}  # merchant -> the day its past days were looked at
        # Records that only answer retries, delivered messages and export records, removed
        # once past [retention] keep_days: one pass an hour, by one process on the store.
        self.retention = Retention(receiver.store, settings.retention.keep_days, receiver.events)
        self.retention_turns = Turns(receiver.store, "retention", RETENTION_SECONDS)
        self.threads: list[threading.Thread] = []

    def _sweeper(self) -> None:
        # At start-up (a server that was down catches up), then at the start of each interval
        # (aligned to the clock, so every process asks at once), if this process took the
        # interval's turn. A process that dies holding one loses that interval's sweep only.
        while True:
            try:
                if self.sweep_turns.mine(time.time()):
                    sweep_no_shows(self.receiver, self.caught_up)
                    self.watch.sweep()
            except StoreUnavailable as exc:
                self.receiver.events.store_unavailable("sweep", str(exc))
            except Exception:
                log.exception("the clock's sweep failed; trying again")
            if self.stop.wait(self.sweep_turns.until_next(time.time())):
                return

    def _retainer(self) -> None:
        # At start-up, then at the start of each hour, if this process took its turn (as the
        # sweep). A pass works in small transactions and stops between them on SIGTERM.
        while True:
            try:
                if self.retention_turns.mine(time.time()):
                    self.retention.run(self.receiver.clock().timestamp(), self.stop.is_set)
            except StoreUnavailable as exc:
                self.receiver.events.store_unavailable("retention", str(exc))
            except Exception:
                log.exception("the retention pass failed; trying again next hour")
            if self.stop.wait(self.retention_turns.until_next(time.time())):
                return

    def start(self) -> None:
        targets: list[tuple[str, Callable[[], None]]] = [
            ("outbox", lambda: self.sender.loop(self.stop)),
            ("no-shows", self._sweeper),
            ("retention", self._retainer),
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
        self.requests.close()


def build(
    restaurants: Sequence[Restaurant],
    store: LogStore,
    settings: Settings,
    clock: Callable[[], datetime],
    staging: Path,
    *,
    export: bool = True,
    config_paths: Sequence[Path] = (),
    held: HeldHangups | None = None,
) -> Observed:
    """The app `serve` runs: FastAPI behind the hot paths (feed.http.hotpaths), every
    request observed (feed.http.observe), with /metrics and /readyz. With `config_paths`
    (the files `restaurants` were read from), SIGHUP and POST /api/v1/admin/reload
    reload them (feed.service.config_reload); SIGHUPs `held` during start-up are reloaded
    for as the server starts serving."""
    metrics = Metrics(store, settings.partners)
    events = Events([metrics])
    receiver = Receiver(
        restaurants,
        store,
        settings,
        clock,
        Notifier.of(settings),
        events,
    )
    metrics.watch_floors(store, receiver.floors)
    background = Background(receiver, restaurants, settings, staging, export=export)
    reloader = _reloader(config_paths, receiver, background)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Bookings a file changed while the server was down no longer fits: listed for the
        # host from the start, as a reload would list them (never cancelled).
        misfits = list_stored_misfits(receiver)
        if misfits:
            log.warning(
                "%d booking(s) no longer fit the restaurant files: see the attention list"
                " (GET /api/v1/restaurants/{merchant_id}/attention)",
                misfits,
            )
        background.start()
        hangup = _on_sighup(reloader)
        if held is not None and held.take() and reloader is not None:
            log.info("a SIGHUP arrived during start-up: reloading now")
            reloader.reload_and_log()
        app.state.readiness.serving()
        try:
            yield
        finally:
            app.state.readiness.stopping()
            hangup.close()
            if held is not None:
                held.hold()  # a SIGHUP while stopping must not end the process either
            background.close()

    app = create_app(receiver, lifespan=lifespan, reloader=reloader)
    app.include_router(health.metrics_router(metrics))
    readiness: health.Readiness = app.state.readiness
    hot = hot_app(app, receiver)
    return Observed(
        Hardened(hot),
        routes=app.router.routes,
        exact=hot.exact,
        events=events,
        metrics=metrics,
        readiness=readiness,
        partners=settings.partners,
        merchants=receiver.books,
    )


def _reloader(paths: Sequence[Path], receiver: Receiver, background: Background) -> Reloader | None:
    """The reload of `paths`; the export schedule follows the new restaurants too."""
    if not paths:
        return None

    def schedule(restaurants: list[Restaurant]) -> None:
        if background.scheduler is not None:
            background.scheduler.restaurants = restaurants  # read once per run: swapped whole

    return Reloader(paths, receiver, on_reload=[schedule])


class HeldHangups:
    """SIGHUPs that arrive while the server cannot reload yet (start-up: files read, store
    opened, days replayed; and shutdown): held rather than fatal (SIGHUP's default ends the
    process), and one reload is made for them once the server serves."""

    def __init__(self) -> None:
        self.count = 0

    def hold(self) -> None:
        """Catch SIGHUP from now on (main thread only: elsewhere nothing changes)."""
        with contextlib.suppress(ValueError):  # not the main thread (a test)
            signal.signal(signal.SIGHUP, self._held)

    def _held(self, _signum: int, _frame: FrameType | None) -> None:
        self.count += 1

    def take(self) -> bool:
        """Did any arrive since the last take?"""
        held, self.count = self.count, 0
        return held > 0


@contextlib.contextmanager
def _sighup_handler(reloader: Reloader) -> Iterator[None]:
    """SIGHUP reloads on the event loop, between requests (never inside one)."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGHUP, reloader.reload_and_log)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread (a test)
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGHUP)


def _on_sighup(reloader: Reloader | None) -> contextlib.ExitStack:
    stack = contextlib.ExitStack()
    if reloader is not None:
        stack.enter_context(_sighup_handler(reloader))
    return stack


class GracefulServer(uvicorn.Server):
    """uvicorn re-raises SIGTERM after a graceful shutdown, so the process dies 'killed';
    a clean shutdown here exits with status 0, as service managers expect. From the signal
    on, /readyz says "stopping" to requests still arriving on open connections."""

    readiness: health.Readiness | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.readiness is not None:
            self.readiness.stopping()
        tablet.STOPPING.set()  # the tablets' event streams end, so shutdown need not wait
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            self._captured_signals.clear()


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything else starts: a server that cannot have
    its port must not have exported over the running one's feeds first. Raises OSError."""
    return socket.create_server((host, port), backlog=2048)


def serve(
    app: ASGIApp,
    sock: socket.socket,
    *,
    log_format: str = "text",
    log_level: str = "info",
    limits: HttpSettings | None = None,
) -> None:
    """Serve `app` on `sock` until SIGTERM or Ctrl-C; its log (feed.http.logs) goes to
    stderr. `limits`: the connections' deadlines and cap (feed.http.deadlines)."""
    limits = limits or HttpSettings()
    logs.configure(log_format, log_level)
    # The replayed days are many small long-lived objects; Python's default collector keeps
    # walking them (gen-2 pauses of tens of ms showed as booking p99 92 ms vs 62 ms).
    # Freeze what start-up built and collect the young generation less often.
    gc.freeze()
    gc.set_threshold(GC_GEN0_THRESHOLD, 50, 1000)
    sys.setswitchinterval(SWITCH_INTERVAL)
    host, port = sock.getsockname()[:2]
    # log_config=None: uvicorn keeps to the logging set up above; its access log is off, the
    # observing layer writes one line per request instead.
    config_ = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=10,
        # uvicorn's own where it has them: the idle kept-alive connection's close; the
        # deadlines it lacks (a request's head, its body) and the connection cap are the
        # protocol's (feed.http.deadlines).
        http=deadlines.protocol(limits, app.refusals if isinstance(app, Observed) else None),
        timeout_keep_alive=limits.keep_alive_seconds,
        limit_concurrency=deadlines.uvicorns_limit(limits),
    )
    server = GracefulServer(config_)
    if isinstance(app, Observed):
        server.readiness = app.readiness
        app.metrics.watch_connections(server.server_state.connections)
    server.run(sockets=[sock])
