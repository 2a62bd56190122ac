"""The busiest POSTs (partner v3 calls and signed webhooks) answered in plain ASGI.

FastAPI's routing, dependency solving and middleware stack cost more per request than the
work of a 50-slot availability lookup itself. These endpoints take a raw JSON body and do
their own checks, so nothing is lost by skipping it: this layer reads the body (capped),
calls the same function the FastAPI route calls, and writes the same bytes. Anything it
does not recognise (another method, a path parameter FastAPI would refuse) goes on to
FastAPI untouched, and /openapi.json still documents every route.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from feed.http import statuses
from feed.http.responses import render
from feed.http.statuses import status_of
from feed.service import events
from feed.service.replies import Reply, problem
from store.log import (
    ConcurrencyConflict,
    StoreUnavailable,
    StoreUnreachable,
    StoreUnwritable,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class Request:
    """What a hot-path handler is given: the path's tail, the headers it asked for, the body."""

    tail: str  # the path after the route's prefix ("" for an exact path)
    headers: dict[str, str]
    body: bytes


Answer = tuple[Reply, dict[str, str] | None]  # the reply and extra response headers
Handler = Callable[[Request], Answer]


@dataclass(frozen=True)
class Route:
    handler: Handler
    headers: tuple[str, ...] = ()  # lower-case names of the request headers it reads
    accepts_tail: Callable[[str], bool] | None = None  # a prefix route: which tails it takes
    # A prefix route's template and the name of its tail ("/webhooks/{partner_id}",
    # "partner_id"): what the request's log line and metrics call the route.
    template: str = ""
    param: str = ""


ROUTE_KEY = "hoststand.route"  # scope key: (template, path params) of a hot prefix route


def busy(exc: Exception) -> Answer:
    """The store stayed locked or other writers kept winning, its server cannot be
    reached (down, restarting), or its disk cannot be written (full, I/O errors): nothing
    changed, retry."""
    events.note_busy(exc)  # logged and counted when the request ends (feed.http.observe)
    if isinstance(exc, StoreUnreachable):
        state = "is unreachable"
    elif isinstance(exc, StoreUnwritable):
        state = "cannot be written (its disk is full or failing, or it is read-only)"
    else:
        state = "is busy"
    return problem(statuses.UNAVAILABLE, f"the store {state}, retry: {exc}"), {"Retry-After": "1"}


def too_large(limit: int) -> Answer:
    return problem(statuses.BODY_TOO_LARGE, f"bodies are {limit} bytes at most"), None


def client_closed() -> Answer:
    """The answer to a request whose connection closed before its body ended: nothing was
    done with what came of it. Nobody receives it (uvicorn drops what is sent to a closed
    connection); the request's log line and metrics say 499, as FastAPI's routes do (408 when
    it was the server that closed it, its body past body_seconds: feed.http.deadlines)."""
    message = "the connection closed before the body ended: nothing was done"
    return problem(statuses.CLIENT_CLOSED, message), None


class _ClientGone(Exception):
    """The connection closed before the request's body ended."""


def _without_trailing_slash(scope: Scope) -> None:
    """A write to a path with a trailing slash ("/v3/CreateBooking/") is answered as the
    path without it: FastAPI answered a 307 to it, which a partner's client need not follow
    for a POST (many do not, or follow it as a GET), so the booking was neither made nor
    refused. GET keeps the redirect: a browser follows it, and the tablet's page resolves
    its relative links against the path it is shown at."""
    path = scope["path"]
    if len(path) > 1 and path.endswith("/"):
        scope["path"] = path.rstrip("/") or "/"
        raw = scope.get("raw_path")
        if isinstance(raw, bytes) and raw.endswith(b"/"):
            scope["raw_path"] = raw.rstrip(b"/") or b"/"


def encoded(scope: Scope) -> Answer | None:
    """415 for a body sent with a Content-Encoding (gzip, deflate, br): bodies are read as
    they come, and a gzip body was refused as "not JSON: not UTF-8", which sent a partner's
    engineer looking at the JSON instead of the header. Said for every route that takes a
    body, before it is read (as a body too large is), with the encoding we take."""
    for raw_name, raw_value in scope["headers"]:
        if raw_name.lower() != b"content-encoding":
            continue
        value = raw_value.decode("latin-1")
        codings = [c.strip().lower() for c in value.split(",")]
        if any(c not in ("", "identity") for c in codings):
            message = (
                f"Content-Encoding {value.strip()[:40]!r} is not accepted: send the body"
                " uncompressed (no Content-Encoding, or identity)"
            )
            return problem(statuses.UNSUPPORTED_ENCODING, message), {"Accept-Encoding": "identity"}
    return None


def write_request(scope: Scope) -> Answer | None:
    """What every write (a request that is not a GET, HEAD or OPTIONS) goes through before
    it is routed: its path without a trailing slash, and a 415 for a compressed body."""
    _without_trailing_slash(scope)
    return encoded(scope)


class WriteRequests:
    """ASGI middleware of the FastAPI app: `write_request` for its own routes, so it answers
    as HotPaths (which does the same for the hot routes before they reach FastAPI)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD", "OPTIONS"):
            refused = write_request(scope)
            if refused is not None:
                await _respond(send, *refused)
                return
        await self.app(scope, receive, send)


class HotPaths:
    """ASGI middleware: POST to an exact path in `exact`, or under a prefix in `prefixes`,
    is answered by its route; everything else goes to `app`."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        exact: dict[str, Route],
        prefixes: dict[str, Route] | None = None,
        max_body: int,
    ) -> None:
        self.app = app
        self.exact = exact
        self.prefixes = prefixes or {}
        self.max_body = max_body

    def _route(self, path: str) -> tuple[Route, str] | None:
        route = self.exact.get(path)
        if route is not None:
            return route, ""
        for prefix, route in self.prefixes.items():
            if path.startswith(prefix):
                tail = path[len(prefix) :]
                if route.accepts_tail is not None and route.accepts_tail(tail):
                    return route, tail
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = None
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD", "OPTIONS"):
            refused = write_request(scope)  # as WriteRequests does for FastAPI's routes
            if refused is not None:
                await _respond(send, *refused)
                return
        if scope["type"] == "http" and scope["method"] == "POST":
            found = self._route(scope["path"])
        if found is None:
            await self.app(scope, receive, send)
            return
        route, tail = found
        if route.template:  # named here: matching it against every route again is costly
            scope[ROUTE_KEY] = (route.template, {route.param: tail})
        wanted = route.headers
        headers: dict[str, str] = {}
        declared: int | None = None
        for raw_name, raw_value in scope["headers"]:
            name = raw_name.decode("latin-1")
            if name == "content-length" and raw_value.isdigit():
                declared = int(raw_value)
            elif name in wanted and name not in headers:  # the first, as Starlette reads it
                headers[name] = raw_value.decode("latin-1")
        if declared is not None and declared > self.max_body:
            answer = too_large(self.max_body)
        else:
            answer = await self._answer(route, tail, headers, receive)
        await _respond(send, *answer)

    async def _answer(
        self, route: Route, tail: str, headers: dict[str, str], receive: Receive
    ) -> Answer:
        """`route`'s answer once the request's body is read."""
        try:
            body = await self._body(receive)
        except _ClientGone:
            # What came is no request: a partner's client that dropped the connection before
            # the last chunk (or short of its Content-Length) took the call for failed, yet
            # was booked or cancelled for. FastAPI's routes do nothing with it either.
            return client_closed()
        if body is None:
            return too_large(self.max_body)
        try:
            return route.handler(Request(tail, headers, body))
        except (StoreUnavailable, ConcurrencyConflict) as exc:
            return busy(exc)

    async def _body(self, receive: Receive) -> bytes | None:
        """The whole body, or None once it passes max_body (nothing more is read); raises
        _ClientGone when the connection closes before the body ends."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


async def _respond(send: Send, reply: Reply, extra: dict[str, str] | None) -> None:
    body = render(reply.body)
    headers = [
        (b"content-length", str(len(body)).encode()),
        (b"content-type", b"application/json"),
    ]
    for name, value in (extra or {}).items():
        headers.append((name.lower().encode("latin-1"), value.encode("latin-1")))
    await send({"type": "http.response.start", "status": status_of(reply), "headers": headers})
    await send({"type": "http.response.body", "body": body})
