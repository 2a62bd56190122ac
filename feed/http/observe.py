"""The outermost ASGI layer: every request, hot path or FastAPI route, is timed, counted and
logged in one line, and carries a request id (the caller's X-Request-Id when it is a sane
one, else a new one) back in its response.

The line names the route template ("/webhooks/{partner_id}"), never the raw path, and the
partner or merchant when known; never a header's value, a body, or a query string. The
line is built only when the "hoststand.request" logger is enabled.

What the connection refuses itself, before the app (feed.http.deadlines), is logged and
counted here too (`Refusals`): a request's head past its deadline as a request with no
route, and connections past the cap in a counter of their own, their log line at most
once a second, however many arrive.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
import uuid
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from starlette.routing import BaseRoute, Match

from feed.http.deadlines import ANSWERED_KEY
from feed.http.health import Readiness
from feed.http.hotpaths import ROUTE_KEY, ASGIApp, Message, Receive, Scope, Send
from feed.http.metrics import Metrics
from feed.service import events
from feed.service.events import HOST, V3, WEBHOOK, Events, RequestContext

log = logging.getLogger("hoststand.request")
HEADER = b"x-request-id"
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")  # a caller's id goes into our log as it is
UNMATCHED = "unmatched"  # the route of a path no route takes (a 404): not the path itself
NO_ROUTE = "(none)"  # the route of a request refused before its path was read or matched
UNKNOWN = "-"  # a method not read, or a line for no one request
REFUSALS_LOGGED_EVERY = 1.0  # seconds: connections refused at the cap, one line at most
_PATHS = (("/webhooks/", WEBHOOK), ("/v3/", V3), ("/api/v1/", HOST))


def path_of(raw: str) -> str:
    """How a request came in, as the booking events name it."""
    for prefix, name in _PATHS:
        if raw.startswith(prefix):
            return name
    return "other"


def request_id(scope: Scope) -> str:
    return _id_of(scope["headers"])


def _id_of(headers: Iterable[tuple[bytes, bytes]]) -> str:
    for name, value in headers:
        if name == HEADER:
            given = bytes(value).decode("latin-1")
            if _SANE_ID.fullmatch(given):
                return given
            break
    return uuid.uuid4().hex


class Observed:
    """`app` (the hot paths in front of FastAPI), observed. `routes` are FastAPI's, to name
    the template of a request the hot paths answered; `exact` the hot paths' own paths."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        routes: Sequence[BaseRoute],
        exact: Collection[str],
        events: Events,
        metrics: Metrics,
        readiness: Readiness,
        partners: Collection[str],
        merchants: Collection[str],
    ) -> None:
        self.app = app
        self.routes = routes
        self.exact = frozenset(exact)
        self.events = events
        self.metrics = metrics
        self.readiness = readiness
        self.partners = frozenset(partners)
        self.merchants = frozenset(merchants)
        self.refusals = Refusals(metrics)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        context = RequestContext(path_of(scope["path"]), request_id(scope))
        header = (HEADER, context.request_id.encode("latin-1"))
        status = 500  # what the client gets if the app fails before it answers

        async def send_(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), header]}
            await send(message)

        token = events.begin(context)
        try:
            await self.app(scope, receive, send_)
        finally:
            events.end(token)
            # A request the connection answered itself (a body past its deadline: 408) is
            # logged as that: the app's answer (499, "client closed") never left.
            answered = scope.get(ANSWERED_KEY, status)
            self._done(scope, context, answered, time.perf_counter() - started)

    def _done(self, scope: Scope, context: RequestContext, status: int, seconds: float) -> None:
        route, params = self._route(scope)
        method = scope["method"]
        self.metrics.request(route, method, status, seconds)
        if context.busy is not None:
            self.events.store_unavailable("request", context.busy)
        if not log.isEnabledFor(logging.INFO):
            return
        partner = context.partner or params.get("partner_id")
        merchant = context.merchant or params.get("merchant_id")
        fields: dict[str, Any] = {
            "method": method,
            "route": route,
            "status": status,
            "duration_ms": round(seconds * 1000, 2),
            "request_id": context.request_id,
            "partner": partner if partner in self.partners else None,
            "merchant": merchant if merchant in self.merchants else None,
        }
        log.info("request", extra={"fields": fields})

    def _route(self, scope: Scope) -> tuple[str, dict[str, Any]]:
        """The route template FastAPI matched, or that it would have matched (a hot path)."""
        route = scope.get("route")
        if route is not None:
            return getattr(route, "path", UNMATCHED), scope.get("path_params", {})
        hot = scope.get(ROUTE_KEY)
        if hot is not None:
            return hot  # type: ignore[no-any-return]
        path = scope["path"]
        if path in self.exact:
            return path, {}
        for candidate in self.routes:
            match, child = candidate.matches(scope)
            if match is Match.FULL:
                return getattr(candidate, "path", UNMATCHED), child.get("path_params", {})
        return UNMATCHED, {}


class Refusals:
    """What the connections answer themselves (feed.http.deadlines.Watcher), logged and
    counted as the app's requests are. Called on the event loop only."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._unlogged = 0  # connections refused at the cap since the last line said so
        self._logged_at = -math.inf  # the loop's time of that line
        self._line: asyncio.TimerHandle | None = None

    def head_late(
        self, method: str | None, headers: Sequence[tuple[bytes, bytes]], seconds: float
    ) -> None:
        # No route: the path, if any came, is the client's to choose, never a label.
        method = method or UNKNOWN
        self.metrics.request(NO_ROUTE, method, 408, seconds)
        if not log.isEnabledFor(logging.INFO):
            return
        fields = {
            "method": method,
            "route": NO_ROUTE,
            "status": 408,
            "duration_ms": round(seconds * 1000, 2),
            "request_id": _id_of(headers),
        }
        log.info("request", extra={"fields": fields})

    def refused_at_cap(self) -> None:
        # Each counted at once, but logged in a line a second at most saying how many: a
        # flood of connections must not be a flood of the log (nor of its writer's queue).
        self.metrics.refused.inc()
        self._unlogged += 1
        if self._line is None:
            loop = asyncio.get_running_loop()
            wait = max(0.0, self._logged_at + REFUSALS_LOGGED_EVERY - loop.time())
            self._line = loop.call_later(wait, self._log_refused)

    def _log_refused(self) -> None:
        refused, self._unlogged, self._line = self._unlogged, 0, None
        self._logged_at = asyncio.get_running_loop().time()
        # A warning: the server turned clients away, which `--log-level warning` must show.
        fields = {
            "method": UNKNOWN,
            "route": NO_ROUTE,
            "status": 503,
            "duration_ms": 0.0,
            "request_id": uuid.uuid4().hex,
            "refused": refused,  # connections refused at the cap since the last such line
        }
        log.warning("request", extra={"fields": fields})
