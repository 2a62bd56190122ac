"""A booking partner on 127.0.0.1 for the tests: it takes our notifications, availability
replaces and feed uploads, acts on each message id once, and fails on purpose when told to.

Not a test module. A request is "acted on" when the stub answers it 2xx and it carries a
message id not acted on before; a request whose ids were all acted on is answered 200 again
but only counted as a duplicate, as a real partner de-duplicating on our
Hoststand-Message-Id header would. (A replace of several days lists each day's id.)
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

MESSAGE_ID_HEADER = "Hoststand-Message-Id"
BOOKING = "booking"
AVAILABILITY = "availability"
UPLOAD = "upload"
KINDS = frozenset({BOOKING, AVAILABILITY, UPLOAD})

# What a scripted failure does to one request.
UNAVAILABLE = "503"
TOO_MANY = "429"  # with Retry-After: 1
BUSY_FOR_A_DAY = "503-day"  # 503 with Retry-After: 86400
AGAIN_AT_ONCE = "429-now"  # 429 with Retry-After: 0
FORBIDDEN = "403"
TIMED_OUT = "408"  # Request Timeout, as a load balancer in front of a partner sends it
DROP = "drop"  # read the request, then close the connection without a response
DROP_AFTER = "drop-after"  # act on the request, then close without a response (ack lost)
SLOW = "slow"  # act on the request after SLOW_SECONDS, then answer 200
# answer 302 to /moved on this server, which answers a GET 200 (as a load balancer sending
# clients elsewhere does): a client following it has delivered nothing
REDIRECT = "302"
MODES = frozenset(
    {
        UNAVAILABLE,
        TOO_MANY,
        BUSY_FOR_A_DAY,
        AGAIN_AT_ONCE,
        FORBIDDEN,
        TIMED_OUT,
        DROP,
        DROP_AFTER,
        SLOW,
        REDIRECT,
    }
)
MOVED = "/moved"
SLOW_SECONDS = 2.0


@dataclass(frozen=True)
class Request:
    """One request the stub acted on."""

    kind: str
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    message_id: str | None
    received_at: float

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def message_ids(self) -> tuple[str, ...]:
        """The ids the header lists (one, or one per day of a replace)."""
        if self.message_id is None:
            return ()
        return tuple(one.strip() for one in self.message_id.split(","))

    @property
    def target(self) -> str:
        """The booking id, or the uploaded file's name (the last path segment)."""
        return self.path.rsplit("/", 1)[-1]


@dataclass
class _Rule:
    mode: str
    remaining: int
    kinds: frozenset[str]


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    rules: list[_Rule] = field(default_factory=list)
    acted: list[Request] = field(default_factory=list)
    seen_ids: set[str] = field(default_factory=set)
    fresh_ids: list[str] = field(default_factory=list)  # each id acted on, in order, once
    duplicates: list[Request] = field(default_factory=list)
    attempts: list[tuple[str, str, str]] = field(default_factory=list)  # kind, path, outcome
    in_flight: dict[str, int] = field(default_factory=dict)  # kind -> requests being slowed
    refused_at: list[float] = field(default_factory=list)
    changed: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)


def kind_of(path: str) -> str:
    if "/v1alpha/notification/partners/" in path and "/bookings/" in path:
        return BOOKING
    if path.endswith("/availability:replace"):
        return AVAILABILITY
    return UPLOAD


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() shuts live connections itself; never wait on keep-alives

    def __init__(self, port: int, stub: PartnerStub) -> None:
        self.stub = stub
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # dropped and shut connections are the point of this server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real partner's load balancer
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_PATCH(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        """Only the target of REDIRECT: a GET delivers nothing, and is not acted on."""
        self.server.stub._attempt(
            Request(UPLOAD, "GET", urlsplit(self.path).path, {}, {}, b"", None, time.time()),
            "GET",
        )
        self._answer(200 if urlsplit(self.path).path == MOVED else 404, {})

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        request = Request(
            kind=kind_of(parts.path),
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            message_id=self.headers.get(MESSAGE_ID_HEADER),
            received_at=time.time(),
        )
        stub = self.server.stub
        mode = stub._take_rule(request.kind)
        if mode in (UNAVAILABLE, TOO_MANY, FORBIDDEN, TIMED_OUT):
            stub._attempt(request, mode)
            headers = {"Retry-After": "1"} if mode == TOO_MANY else {}
            self._answer(int(mode), {"error": f"failing on purpose: {mode}"}, headers)
            return
        if mode == BUSY_FOR_A_DAY:
            stub._attempt(request, mode)
            self._answer(503, {"error": "come back tomorrow"}, {"Retry-After": "86400"})
            return
        if mode == AGAIN_AT_ONCE:
            stub._attempt(request, mode)
            stub._stamp(request)
            self._answer(429, {"error": "slow down"}, {"Retry-After": "0"})
            return
        if mode == DROP:
            stub._attempt(request, mode)
            self._drop()
            return
        if mode == REDIRECT:
            stub._attempt(request, mode)
            self._answer(302, {}, {"Location": f"{stub.base}{MOVED}"})
            return
        if mode == SLOW:
            stub._slow(request)
        wrong_token = request.headers.get("authorization") != f"Bearer {stub.token}"
        if stub.token is not None and request.kind != UPLOAD and wrong_token:
            stub._attempt(request, "401")
            self._answer(401, {"error": "bad token"})
            return
        if not stub._act(request):
            stub._attempt(request, "lost: server down")
            self._drop()
            return
        if mode == DROP_AFTER:
            self._drop()
            return
        self._answer(200, {})

    def _answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class PartnerStub:
    """The partner: `base` is its URL; `stop()` takes it down, `start()` brings it back on the
    same port. Use as a context manager, or call `close()`."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token  # the Bearer token notifications must carry (uploads: not checked)
        self.port = 0
        self._state = _State()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def up(self) -> bool:
        return self._server is not None

    # -- up and down ------------------------------------------------------------------------

    def start(self) -> None:
        if self._server is not None:
            return
        server = _Server(self.port, self)
        self.port = int(server.server_address[1])
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and cut every open connection: the partner is down."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with server.connections_lock:
            live = list(server.connections)
        for conn in live:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def close(self) -> None:
        self.stop()

    def __enter__(self) -> PartnerStub:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- scripted failures ------------------------------------------------------------------

    def fail_next(self, count: int, mode: str, kinds: Collection[str] = KINDS) -> None:
        """The next `count` requests of `kinds` fail with `mode` (after earlier rules)."""
        assert mode in MODES, mode
        assert set(kinds) <= KINDS, kinds
        with self._state.lock:
            self._state.rules.append(_Rule(mode, count, frozenset(kinds)))

    def _take_rule(self, kind: str) -> str | None:
        with self._state.lock:
            for rule in self._state.rules:
                if rule.remaining > 0 and kind in rule.kinds:
                    rule.remaining -= 1
                    return rule.mode
        return None

    def failures_left(self) -> int:
        with self._state.lock:
            return sum(rule.remaining for rule in self._state.rules)

    # -- recording --------------------------------------------------------------------------

    def _attempt(self, request: Request, outcome: str) -> None:
        with self._state.changed:
            self._state.attempts.append((request.kind, request.path, outcome))
            self._state.changed.notify_all()

    def _stamp(self, request: Request) -> None:
        with self._state.changed:
            self._state.refused_at.append(request.received_at)

    def refused_at(self) -> list[float]:
        """When each AGAIN_AT_ONCE refusal was answered (Unix time), in order."""
        with self._state.lock:
            return list(self._state.refused_at)

    def _slow(self, request: Request) -> None:
        with self._state.changed:
            self._state.in_flight[request.kind] = self._state.in_flight.get(request.kind, 0) + 1
            self._state.changed.notify_all()
        time.sleep(SLOW_SECONDS)
        with self._state.changed:
            self._state.in_flight[request.kind] -= 1
            self._state.changed.notify_all()

    def _act(self, request: Request) -> bool:
        """Record the request unless the partner went down meanwhile; False if it did."""
        with self._state.changed:
            if self._server is None:
                return False
            self._state.attempts.append((request.kind, request.path, "acted"))
            ids = request.message_ids
            fresh = [one for one in ids if one not in self._state.seen_ids]
            if len(fresh) < len(ids):  # carries an id acted on already
                self._state.duplicates.append(request)
            if fresh or not ids:
                self._state.seen_ids.update(fresh)
                self._state.fresh_ids.extend(fresh)
                self._state.acted.append(request)
            self._state.changed.notify_all()
            return True

    def acted(self, kind: str | None = None) -> list[Request]:
        """Requests acted on (each message id once), in arrival order."""
        with self._state.lock:
            return [r for r in self._state.acted if kind is None or r.kind == kind]

    def acted_ids(self) -> list[str]:
        """Every message id acted on, once each, in the order they were first acted on."""
        with self._state.lock:
            return list(self._state.fresh_ids)

    def duplicates(self, kind: str | None = None) -> list[Request]:
        with self._state.lock:
            return [r for r in self._state.duplicates if kind is None or r.kind == kind]

    def attempts(self, kind: str | None = None) -> list[tuple[str, str, str]]:
        with self._state.lock:
            return [a for a in self._state.attempts if kind is None or a[0] == kind]

    def uploads(self) -> dict[str, bytes]:
        """The last body uploaded under each file name."""
        return {r.target: r.body for r in self.acted(UPLOAD)}

    def wait_for(
        self, condition: Callable[[PartnerStub], bool], timeout: float, what: str = ""
    ) -> None:
        """Wait until `condition(self)` holds, re-checking on every request; fail after
        `timeout` seconds with what was received."""
        deadline = time.monotonic() + timeout
        while not condition(self):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"the partner stub did not see {what or 'what was expected'} within"
                    f" {timeout} s; attempts: {self.attempts()}"
                )
            with self._state.changed:
                self._state.changed.wait(min(left, 0.2))

    def in_flight(self, kind: str) -> int:
        with self._state.lock:
            return self._state.in_flight.get(kind, 0)


class HangingPartner:
    """A partner whose endpoint takes every connection and request and never finishes its
    answer (a wedged load balancer): it sends `answer` (by default nothing; a status line,
    headers and the start of a body that never ends, say) and holds the connection.
    `opened` counts the requests it holds, `closed` the ones the client gave up on (closed
    its end), `message_ids` the Hoststand-Message-Id of each. `close()` lets them all go.
    With `every`, the answer trickles: one byte every `every` seconds (a partner whose
    status line comes a byte a second, each read well within the client's read timeout)."""

    def __init__(self, answer: bytes = b"", every: float = 0.0) -> None:
        self.answer = answer
        self.every = every
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._held: list[socket.socket] = []
        self.opened = 0
        self.closed = 0
        self.message_ids: list[str] = []
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._held.append(conn)
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        data = b""
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head)}
            with self._lock:
                self.opened += 1
                self.message_ids.append(headers.get(MESSAGE_ID_HEADER.lower(), ""))
            if self.answer and self.every:
                for one in self.answer:
                    conn.sendall(bytes([one]))  # raises once the client has closed its end
                    time.sleep(self.every)
            elif self.answer:
                conn.sendall(self.answer)
            while conn.recv(65536):  # the body, then nothing until the client gives up
                pass
        with self._lock:
            if not self._stopped:
                self.closed += 1

    def counts(self) -> tuple[int, int]:
        with self._lock:
            return self.opened, self.closed

    def ids(self) -> list[str]:
        with self._lock:
            return list(self.message_ids)

    def close(self) -> None:
        with self._lock:
            self._stopped = True
            held, self._held = self._held, []
        self._listener.close()
        for conn in held:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def __enter__(self) -> HangingPartner:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
