"""Sending to partners over HTTP: what a response means and how long to wait before retrying.

Retried: network errors, 408, 429 and 5xx, with exponential back-off and jitter so many
senders do not retry in step (a Retry-After lengthens the wait, up to MAX_DELAY, never
shortens it). A 408 (Request Timeout, sent by a load balancer in front of a partner) says
the request did not get through in time, as a network error does; each message carries its
own id, so sending it again is safe. Any other 4xx is the partner refusing the request:
retrying would not help, so it is reported at once. A redirect is never followed
(the client would re-send a POST or PATCH as a GET, or drop its body and our token for
another host): it is a failure worth retrying, delivered only once the URL answers 2xx.

Each request has a whole deadline (TIMEOUT from its start) for its status line and headers,
as for its body: the client's timeout bounds each read, so a partner trickling its status
line a byte a second never timed one out, and the request went on until the sending process
was taken for stuck and ended, with every other partner's requests in it.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import os
import random
import socket
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import requests
import requests.adapters
import requests.utils
import urllib3
import urllib3.connection
import urllib3.connectionpool
import urllib3.exceptions

BASE_DELAY = 1.0  # seconds before the first retry
MAX_DELAY = 300.0  # never wait longer than this between attempts
TIMEOUT = 10.0  # seconds for one request
BODY_BYTES = 64 * 1024  # of a partner's answer read at most (its error's text)


@dataclass(frozen=True)
class Outcome:
    ok: bool
    retry: bool  # worth another attempt
    error: str = ""
    retry_after: float | None = None  # seconds the partner asked us to wait


def backoff(attempt: int, rng: random.Random, base: float = BASE_DELAY) -> float:
    """Delay before attempt `attempt + 1` (attempt counts from 0): full-jitter exponential."""
    ceiling: float = min(MAX_DELAY, base * (2.0 ** min(attempt, 30)))
    return ceiling / 2 + rng.random() * ceiling / 2


def classify(response: requests.Response, body: bytes | None = None) -> Outcome:
    """What the partner's answer means, from its status (and `body`, what was read of it;
    None: the response's whole content)."""
    status = response.status_code
    if 200 <= status < 300:
        return Outcome(ok=True, retry=False)
    if 300 <= status < 400:
        # Not delivered: the URL sends us elsewhere. Kept and retried (the partner's
        # endpoint may be moving; a permanent one shows as a backlog with this error) rather
        # than given up: dropping the message would lose the change for good.
        where = response.headers.get("Location", "")[:200]
        return Outcome(ok=False, retry=True, error=f"HTTP {status}: redirected to {where!r}")
    text = (response.content if body is None else body)[:800]
    error = f"HTTP {status}: {text.decode(response.encoding or 'utf-8', 'replace')[:200]}"
    if status in (408, 429) or status >= 500:
        return Outcome(ok=False, retry=True, error=error, retry_after=_retry_after(response))
    return Outcome(ok=False, retry=False, error=error)


def _retry_after(response: requests.Response) -> float | None:
    """The wait the partner asks for, never longer than MAX_DELAY: a partner must hear of a
    change within minutes, and every later message of the booking or window waits behind
    this one ("Retry-After: 86400" held a cancellation back a day; "inf" for ever, and an
    upload's wait held up the whole export schedule)."""
    value = response.headers.get("Retry-After", "")
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP-date is rare from partners; fall back to our own back-off
    if math.isnan(seconds):
        return None
    return min(MAX_DELAY, max(0.0, seconds))


class _Watch:
    """One request's deadline for its answer's status line and headers: past it, the socket
    of the connection it is on is shut, so the read in progress ends (a connection error)."""

    def __init__(self, at: float) -> None:
        self.at = at  # time.monotonic()
        self._lock = threading.Lock()
        self._conn: urllib3.connection.HTTPConnection | None = None
        self._over = False  # the request ended (its headers read, or it failed)
        self.cut = False  # the deadline passed first

    def attach(self, conn: urllib3.connection.HTTPConnection) -> None:
        """The request is on `conn` (on the requesting thread, before anything is sent)."""
        with self._lock:
            self._conn = conn
            if self.cut:  # a connect that took to the deadline: cut as it ends
                _shut(conn)

    def expire(self) -> None:
        """The deadline has passed (on the watchdog's thread)."""
        with self._lock:
            if self._over:
                return
            self.cut = True
            conn = self._conn
            # A connection taken up by another request since is not this request's to cut.
            if conn is not None and getattr(conn, "hoststand_watch", None) is self:
                _shut(conn)

    def end(self) -> None:
        """The request has its headers (or failed): its connection is left alone from now
        on, however long its body takes (read only so far: see `send`), and may be used
        again by another request."""
        with self._lock:
            self._over = True
            self._conn = None


def _shut(conn: urllib3.connection.HTTPConnection) -> None:
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class _Watchdog:
    """One thread ending the requests whose deadline passes before their headers arrive."""

    def __init__(self) -> None:
        self._ready = threading.Condition()
        self._heap: list[tuple[float, int, _Watch]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, seconds: float) -> _Watch:
        watch = _Watch(time.monotonic() + seconds)
        with self._ready:
            heapq.heappush(self._heap, (watch.at, next(self._order), watch))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="hoststand-request-deadlines", daemon=True
                )
                self._thread.start()
            self._ready.notify()
        return watch

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    left = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._ready.wait(left)
                _at, _n, watch = heapq.heappop(self._heap)
            watch.expire()  # one ended already does nothing


_WATCHDOG = _Watchdog()
_requests = threading.local()  # .watch: the _Watch of the request this thread is making


if TYPE_CHECKING:
    _Connection = urllib3.connection.HTTPConnection
else:
    _Connection = object  # a mixin: the class it is mixed into comes after it


class _Watched(_Connection):
    """A connection whose request is watched by its request's deadline (`_watched`,
    `_connected`), mixed into urllib3's HTTP and HTTPS connections."""

    hoststand_watch: _Watch | None = None

    def request(self, *args: Any, **kwargs: Any) -> None:
        _watched(self)
        super().request(*args, **kwargs)

    def connect(self) -> None:
        super().connect()
        _connected(self)


class _WatchedHTTPConnection(_Watched, urllib3.connection.HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, urllib3.connection.HTTPSConnection):
    pass


def _watched(conn: urllib3.connection.HTTPConnection) -> None:
    watch: _Watch | None = getattr(_requests, "watch", None)
    conn.hoststand_watch = watch  # type: ignore[attr-defined]
    if watch is not None:
        watch.attach(conn)


def _connected(conn: urllib3.connection.HTTPConnection) -> None:
    watch = getattr(conn, "hoststand_watch", None)
    if watch is not None and watch.cut:
        _shut(conn)


class _WatchedPool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_POOLS = {"http": _WatchedPool, "https": _WatchedHTTPSPool}


class _Adapter(requests.adapters.HTTPAdapter):
    """Connections whose request a `_Watch` can cut (directly or through an HTTP proxy)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> urllib3.PoolManager:
        manager: urllib3.PoolManager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if isinstance(manager, urllib3.ProxyManager):  # a SOCKS proxy's: its own classes
            manager.pool_classes_by_scheme = _POOLS
        return manager


def watched(session: requests.Session, pool_size: int = 10) -> requests.Session:
    """`session` with its requests on connections `send` can cut at their deadline (a
    requests.Session of its own: each read would have its timeout only)."""
    adapter = _Adapter(pool_maxsize=pool_size)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def lean_session(pool_size: int) -> requests.Session:
    """A Session that reads the environment (proxies, CA bundle) once, not per request.

    requests looks up proxy variables, netrc and CA-bundle paths on every call unless
    `trust_env` is off: about 40% of a notification's CPU, spent on threads that share the
    GIL with the requests being served. The CA bundle variables are read here; proxies per
    URL by `environ_proxies`, once per partner."""
    session = requests.Session()
    session.trust_env = False
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if bundle:
        session.verify = bundle
    return watched(session, pool_size)


def environ_proxies(url: str) -> dict[str, str]:
    """The proxies the environment sets for `url` (honouring NO_PROXY), as requests would."""
    return dict(requests.utils.get_environ_proxies(url))


def send(
    session: requests.Session,
    method: str,
    url: str,
    *,
    json_body: Any = None,
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
    proxies: dict[str, str] | None = None,
    timeout: float = TIMEOUT,
    sending: float = 0.0,
) -> Outcome:
    """One attempt; never raises for what the network or the partner does.

    The status line and headers must arrive within `timeout` of the start (on a session
    from `lean_session`), however they trickle: past it the request is cut, a failure worth
    retrying. (Each read had its timeout only: a partner sending its status line a byte a
    second held the request until the sending process was taken for stuck and ended.)
    The status is the partner's answer: its body is read only so far (BODY_BYTES, until
    `timeout` from the start), and one that stalls or goes on does not undo a 2xx. Read
    whole first, a 200 whose body stalled failed when the read timed out (the message was
    sent again and again, never counted delivered), and one that trickled on for ever held
    the request until the sending process was taken for stuck. `sending`: seconds more
    for a big body to go out (a feed file) before its answer's deadline."""
    deadline = time.monotonic() + sending + timeout
    watch = _WATCHDOG.watch(sending + timeout)
    _requests.watch = watch
    try:
        response = session.request(
            method,
            url,
            json=json_body,
            data=data,
            headers=headers,
            timeout=timeout,
            proxies=proxies,
            allow_redirects=False,  # see classify: a redirect is not a delivery
            stream=True,
        )
    except requests.RequestException as exc:
        if watch.cut:
            whole = sending + timeout
            error = f"no status line and headers within {whole:g} s of the request's start"
            return Outcome(ok=False, retry=True, error=f"{error} ({type(exc).__name__})")
        return Outcome(ok=False, retry=True, error=f"{type(exc).__name__}: {exc}"[:300])
    finally:
        _requests.watch = None
        watch.end()
    with response:  # a body not read whole closes the connection: it is not used again
        return classify(response, _some_of(response, deadline))


def _some_of(response: requests.Response, deadline: float) -> bytes:
    """The start of the answer's body: what arrives before `deadline`, BODY_BYTES at most.
    Read as it comes (read1, urllib3 2), so a body trickling a byte at a time still ends
    at the deadline (or one read timeout past it)."""
    raw = response.raw
    read = getattr(raw, "read1", None) or raw.read
    chunks: list[bytes] = []
    size = 0
    try:
        while size < BODY_BYTES and time.monotonic() <= deadline:
            chunk = read(8192, decode_content=True)
            if not chunk:  # read whole: the connection goes back to the pool, to be used again
                raw.release_conn()
                break
            chunks.append(chunk)
            size += len(chunk)
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError):
        pass  # stalled, cut, or not what its headers said: the status still stands
    return b"".join(chunks)
