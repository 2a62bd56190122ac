"""The outermost ASGI layer: every request, hot path or FastAPI route, is timed, counted and
logged in one line, and carries a request id (the caller's X-Request-Id when it is a sane
one, else a new one) back in its response.

The line names the route template ("/webhooks/{partner_id}"), never the raw path, and the
partner or merchant when known; never a header's value, a body, or a query string. The
line is built only when the "hoststand.request" logger is enabled.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Collection, Sequence
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
_PATHS = (("/webhooks/", WEBHOOK), ("/v3/", V3), ("/api/v1/", HOST))


def path_of(raw: str) -> str:
    """How a request came in, as the booking events name it."""
    for prefix, name in _PATHS:
        if raw.startswith(prefix):
            return name
    return "other"


def request_id(scope: Scope) -> str:
    for name, value in scope["headers"]:
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
