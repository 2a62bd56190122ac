"""Deadlines on a connection, as a real HTTP server keeps them: a request's line and headers
must arrive within `head_seconds` of the connection (or, on a kept-alive one, of the
request's first byte), its body within `body_seconds` of its headers; a connection past
`max_connections` is refused on arrival. Without them one client, with no credentials,
held connections open for ever (idle, or stuck in a request line, headers or body) until
the server ran out of descriptors or workers and partners' bookings and the tablets stopped.

uvicorn closes an idle kept-alive connection itself (`timeout_keep_alive`) and answers 503
once `limit_concurrency` is reached, but only when a request's headers are complete; it has
no deadline at all before that, nor for a body. The protocol class uvicorn uses
(httptools') is subclassed here with the two timers and the refusal on arrival, nothing
else. Server-sent event streams (the tablets') are untouched: a GET's body is complete
with its headers, and no deadline runs while a response is being written.

What a connection answers itself (a request's head past its deadline: 408; a connection
past the cap: 503) never reaches the app, nor so its log and metrics: the protocol tells
a `Watcher` (feed.http.observe.Refusals) instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from feed.settings import HttpSettings

# Scope key: the status this connection itself answered the request (a 408 for a body past
# body_seconds). The app's own answer, sent after, reaches nobody; the log and the metrics
# (feed.http.observe) say what the client was told.
ANSWERED_KEY = "hoststand.answered"


class Watcher(Protocol):
    """Told, on the event loop, of each refusal a connection makes itself."""

    def head_late(
        self, method: str | None, headers: Sequence[tuple[bytes, bytes]], seconds: float
    ) -> None:
        """A request's line or headers past head_seconds were answered 408; `method` when its
        request line got that far, `headers` those complete, `seconds` since it began."""

    def refused_at_cap(self) -> None:
        """A connection past max_connections was answered 503 on arrival."""


class Unwatched:
    """No one to tell (a protocol built without a watcher)."""

    def head_late(
        self, method: str | None, headers: Sequence[tuple[bytes, bytes]], seconds: float
    ) -> None:
        pass

    def refused_at_cap(self) -> None:
        pass


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline on each request's head and body."""

    limits = HttpSettings()  # the settings' [http]
    watcher: Watcher = Unwatched()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._armed_at = 0.0  # the loop's time when the deadline was set
        self._begun = False  # a byte of the current request has arrived

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            # Closed now, not at its headers (uvicorn's 503): held until then, each would
            # keep a descriptor for up to head_seconds, and one client can open thousands.
            # Out of the count at once, not at its connection_lost (a later turn of the
            # loop): until then it made the connections the server serves look one more,
            # and the next to arrive, or uvicorn's check at a request's headers
            # (uvicorns_limit), refused with fewer than max_connections open.
            self.connections.discard(self)
            if self._refuse(503, "Service Unavailable: too many connections"):
                self.watcher.refused_at_cap()
            return
        self._arm(self.limits.head_seconds, self._head_late)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._begun = True
        if self._deadline is None:  # a kept-alive connection's next request
            self._arm(self.limits.head_seconds, self._head_late)

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()
        # Disarmed by on_message_complete, in the same read when there is no body.
        self._arm(self.limits.body_seconds, self._body_late)

    def on_message_complete(self) -> None:
        self._disarm()
        self._begun = False
        super().on_message_complete()

    def handle_websocket_upgrade(self) -> None:
        self._disarm()  # the connection is another protocol's from here
        super().handle_websocket_upgrade()

    def _arm(self, seconds: float, late: Any) -> None:
        self._disarm()
        self._armed_at = self.loop.time()
        self._deadline = self.loop.call_later(seconds, late)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _answering(self) -> bool:
        """Is a response being written on this connection now (a 408 must not cut into it)?"""
        return (
            self.cycle is not None
            and self.cycle.response_started
            and not self.cycle.response_complete
        )

    def _head_late(self) -> None:
        self._deadline = None
        if self._begun and not self._answering():
            # Some of the URL came (uvicorn's on_url) only if the method was read whole;
            # before that the parser's method is not this request's.
            method = self.parser.get_method().decode("ascii") if self.url else None
            if self._refuse(408, "Request Timeout"):
                seconds = self.loop.time() - self._armed_at
                self.watcher.head_late(method, self.headers, seconds)
        else:  # nothing asked yet: nobody to answer
            self.transport.close()

    def _body_late(self) -> None:
        # The app waiting on the body hears a disconnect (uvicorn's connection_lost) and does
        # nothing, as for a body its client cut (feed.http.hotpaths.client_closed, a 499);
        # marked first, so that its log line and metrics say the 408 the client was given,
        # not that the client closed the request.
        self._deadline = None
        if self._answering() or (self.cycle is not None and self.cycle.response_complete):
            self.transport.close()
        else:
            if self.cycle is not None and not self.transport.is_closing():
                # uvicorn types the scope as a closed TypedDict; ASGI lets a server add keys.
                self.cycle.scope[ANSWERED_KEY] = 408  # type: ignore[literal-required]
            self._refuse(408, "Request Timeout")

    def _refuse(self, status: int, text: str) -> bool:
        """Answer `status` and close; False when the connection was closing already."""
        if self.transport.is_closing():
            return False
        body = text.encode("ascii")
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [
            b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        self.transport.close()
        return True


def uvicorns_limit(limits: HttpSettings) -> int:
    """uvicorn's `limit_concurrency` for `limits`: one past max_connections, so that the cap
    is the refusal on arrival alone (DeadlineProtocol.connection_made), counted and logged.

    uvicorn answers a request 503 itself at its headers, unseen by the app and so by the
    log and /metrics, when `len(connections) >= limit_concurrency` or as many requests are
    running (httptools_impl.on_headers_complete). At max_connections, with exactly that
    many open (the tablets' event streams) every request was refused so, and the server
    served one connection fewer than configured. At one more: the connections it counts
    are those accepted (a refused one leaves the count as it is refused), never more than
    max_connections; and a connection runs one request at a time (uvicorn starts a
    pipelined one once the one before is done), so its requests running reach the limit
    only when past max_connections are running, requests whose client has gone finishing
    beside those of every open connection. Not None: that bound on requests left running
    by clients that hung up stays."""
    return limits.max_connections + 1


def protocol(limits: HttpSettings, watcher: Watcher | None = None) -> type[DeadlineProtocol]:
    """The protocol class for uvicorn's `http=`, keeping `limits`, telling `watcher` of its
    refusals."""

    class Limited(DeadlineProtocol):
        pass

    Limited.limits = limits
    Limited.watcher = watcher or Unwatched()
    return Limited
