"""The host's tablet: the page (plain HTML, CSS and a script shipped in feed/http/static),
the floor document it reads in one request, and a server-sent event stream that sends the
floor again whenever the day's log grows or the minute turns.

Same origin as the API; nothing is loaded from anywhere else (the page's CSP says so).
EventSource cannot send headers, so the stream alone also takes the host token as `?token=`.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import AsyncIterator
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Header, Query
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from feed.clock import check_day
from feed.http.auth import bearer
from feed.http.responses import render, send
from feed.service import replies
from feed.service.attention import marked
from feed.service.floorview import FloorViews, slots_of
from feed.service.receiver import Receiver
from feed.service.replies import Reply, problem

STATIC = Path(__file__).resolve().parent / "static"
CHECK_SECONDS = 0.5  # how often a stream looks at the day's log length and the clock
HEARTBEAT_SECONDS = 15.0  # a comment line keeps proxies and the page's watchdog content
# Set when the server is asked to stop: open streams end, so a graceful shutdown does not
# wait for tablets that would otherwise keep their stream open for ever.
STOPPING = threading.Event()
# The floor's header saying where another day's bookings stand (its log length and the
# configuration's generation): what the stream's `bookings` event follows, for polling.
BOOKINGS_MARK = "Bookings-Mark"

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

Id = Annotated[str, PathParam(min_length=1, max_length=200)]
Auth = Annotated[str | None, Header(alias="Authorization", description="Bearer <token>")]


class TabletError(BaseModel):
    code: str
    message: str


class TabletErrorBody(BaseModel):
    error: TabletError


FLOOR_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/json": {"schema": {"type": "object"}}}},
    **{code: {"model": TabletErrorBody} for code in (400, 401, 404, 409, 413, 422, 503)},
}


class RestaurantName(BaseModel):
    merchant_id: str
    name: str


def _page() -> str:
    """index.html with its script and style addressed by content, so a new release is
    fetched at once and an unchanged one is never fetched twice."""
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    for name in ("tablet.js", "tablet.css"):
        digest = hashlib.sha256((STATIC / name).read_bytes()).hexdigest()[:12]
        html = html.replace(f"/tablet/{name}", f"/tablet/{name}?v={digest}")
    return html


class Tablet:
    """The floor documents of every restaurant, over the receiver's service days."""

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver
        self.views = {m: FloorViews(book) for m, book in receiver.books.items()}

    def authorized(self, merchant_id: str, token: str | None) -> bool:
        return self.receiver.host_authorized(merchant_id, token)

    def key(self, merchant_id: str, now: datetime) -> Any:
        """What the document depends on: the day, its log length and the minute."""
        views = self.views[merchant_id]
        day = self.receiver.today(views.book.restaurant, now)
        return None if day is None else (day, views.stamp(day, now))

    def listed_key(self, merchant_id: str, day: date) -> Any:
        """What another day's list of reservations depends on: its log length and the
        configuration (a reload may mark its bookings for attention)."""
        book = self.views[merchant_id].book
        return book.length(day), book.generation

    def floor(self, merchant_id: str, now: datetime) -> Reply:
        views = self.views[merchant_id]
        r = views.book.restaurant
        day = self.receiver.today(r, now)
        if day is None:
            return problem(replies.NO_SERVICE_TODAY, f"{r.name} is closed today")
        doc = views.floor(day, now)
        # Each booking with `attention`, as the host API's list of the day has it: why a
        # reload found it no longer fits the rules (kept for the host to sort out), or None.
        # The cached document is shared, so the rows are copied, never changed in place.
        rows = marked(doc["reservations"], self.receiver.attention_now(merchant_id, day))
        return Reply({**doc, "reservations": rows})


def register(app: FastAPI, receiver: Receiver) -> None:
    """Add the tablet's page, its floor document and its event stream to `app`."""
    tablet = Tablet(receiver)
    page = _page()
    headers = {"Content-Security-Policy": CSP, "Cache-Control": "no-cache"}
    app.mount("/tablet", StaticFiles(directory=STATIC), name="tablet")
    prefix = "/api/v1/restaurants/{merchant_id}"

    @app.get("/", include_in_schema=False)
    async def home() -> HTMLResponse:
        return HTMLResponse(page, headers=headers)

    @app.get("/host/{merchant_id}", include_in_schema=False)
    async def host_page(merchant_id: Id) -> HTMLResponse:
        return HTMLResponse(page, headers=headers)

    @app.get("/api/v1/tablet/restaurants", response_model=list[RestaurantName], tags=["host"])
    async def restaurants() -> list[RestaurantName]:
        """The restaurants served here (for the tablet's sign-in)."""
        return [
            RestaurantName(merchant_id=m, name=b.restaurant.name) for m, b in receiver.books.items()
        ]

    @app.get(f"{prefix}/floor", tags=["host"], responses=FLOOR_RESPONSES)
    async def floor(
        merchant_id: Id,
        day: Annotated[date | None, Query()] = None,
        authorization: Auth = None,
    ) -> Response:
        """The floor as the host's tablet draws it, in one document: tables with who sits
        there (name, size, minutes seated, turn left, overstay) or whose hold, joined
        tables, the waitlist with quotes and next-up units, the day's reservations (each
        with `attention`: why a reload found it no longer fits the rules, or null) and the
        open spots of the slots to come. With `day` (another day whose reservations the
        tablet lists), the header `Bookings-Mark` changes whenever that day's bookings may
        have changed, as the event stream's `bookings` says: the tablet polling while its
        stream is down reads that day's list again only then. Reading it writes nothing."""
        if not tablet.authorized(merchant_id, bearer(authorization)):
            return send(problem(replies.UNAUTHORIZED, "missing or wrong bearer token"))
        headers = {"Cache-Control": "no-store"}
        if day is not None:
            try:
                check_day(day)
            except ValueError as exc:
                return send(problem(replies.INVALID_REQUEST, f"day: {exc}"))
            length, generation = tablet.listed_key(merchant_id, day)
            headers[BOOKINGS_MARK] = f"{day.isoformat()}/{length}/{generation}"
        reply = tablet.floor(merchant_id, receiver.clock())
        return send(reply, headers=headers)

    @app.get(f"{prefix}/slots", tags=["host"], responses=FLOOR_RESPONSES)
    async def slots(
        merchant_id: Id, day: Annotated[date, Query(alias="date")], authorization: Auth = None
    ) -> Response:
        """A day's slots still to come with what the host can book per party size: the
        choices of a phone booking for that day (the tablet's form). `open`: spots on the
        whole floor, walk-in tables and parties up to max_party_size included (the host's
        reach, not the partners'); `over_pacing`: the sizes whose spots are all beyond the
        slot's pacing (booked when the host says so). Reading it writes nothing."""
        if not tablet.authorized(merchant_id, bearer(authorization)):
            return send(problem(replies.UNAUTHORIZED, "missing or wrong bearer token"))
        book = receiver.books.get(merchant_id)
        if book is None:
            return send(problem(replies.UNKNOWN_MERCHANT, f"no merchant {merchant_id}"))
        try:
            check_day(day)
        except ValueError as exc:
            return send(problem(replies.INVALID_REQUEST, f"date: {exc}"))
        found = slots_of(book, day, receiver.clock())
        return send(Reply({"date": day.isoformat(), "slots": found}))

    @app.get(f"{prefix}/events", include_in_schema=False)
    async def events(
        merchant_id: Id,
        token: Annotated[str | None, Query(max_length=500)] = None,
        day: Annotated[date | None, Query()] = None,
        authorization: Auth = None,
    ) -> Response:
        """Server-sent events: `floor` with the whole document whenever it changes; with
        `day` (another day whose reservations the tablet lists), `bookings` when that day's
        bookings may have changed (a booking, change or cancellation on another tablet, by
        a partner or on another server): the tablet reads that day's list again, once per
        change rather than polling it."""
        if not tablet.authorized(merchant_id, token or bearer(authorization)):
            return send(problem(replies.UNAUTHORIZED, "missing or wrong token"))
        if day is not None:
            try:
                check_day(day)
            except ValueError as exc:
                return send(problem(replies.INVALID_REQUEST, f"day: {exc}"))
        return StreamingResponse(
            _stream(tablet, merchant_id, day),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )


async def _stream(tablet: Tablet, merchant_id: str, day: date | None) -> AsyncIterator[str]:
    yield "retry: 1000\n\n"
    last: Any = object()
    listed: Any = object()
    beat = time.monotonic()
    while not STOPPING.is_set():
        now = tablet.receiver.clock()
        key = tablet.key(merchant_id, now)
        if key != last:
            last = key
            reply = tablet.floor(merchant_id, now)
            data = render(reply.body).decode()
            yield f"event: {'floor' if reply.code is None else 'closed'}\ndata: {data}\n\n"
            beat = time.monotonic()
        # Sent once when the stream opens too: a change made while the tablet was offline
        # (or between reading the list and opening the stream) is read at once.
        if day is not None and (mark := tablet.listed_key(merchant_id, day)) != listed:
            listed = mark
            yield f'event: bookings\ndata: {{"day": "{day.isoformat()}"}}\n\n'
            beat = time.monotonic()
        if time.monotonic() - beat >= HEARTBEAT_SECONDS:
            yield "event: beat\ndata: {}\n\n"  # an event, so the page's watchdog sees it
            beat = time.monotonic()
        await asyncio.sleep(CHECK_SECONDS)
