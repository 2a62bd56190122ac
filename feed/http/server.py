"""The HTTP receiver: FastAPI routes over `Receiver`, nothing else.

Every error leaves as {"error": {"code", "message"}} with the status of `feed.http.statuses`;
request bodies are capped before they are read whole. Handlers run on the event loop: their
work is short (a day already replayed in memory, one SQLite commit well under a millisecond)
and handing each to a thread pool cost more in GIL hand-offs than it saved (measured with
bench/receiver_bench.py: 563 -> 896 bookings/s, p99 64 -> 32 ms).
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from fastapi import FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from feed.http import statuses, tablet, v3
from feed.http.hotpaths import HotPaths, Route, busy, too_large
from feed.http.hotpaths import Request as HotRequest
from feed.http.responses import send
from feed.service.days import new_booking_id
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.service.replies import Reply, error_body, problem
from feed.service.signing import HEADER as SIGNATURE_HEADER
from store.log import ConcurrencyConflict, StoreUnavailable

MAX_BODY_BYTES = 64 * 1024


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


class WebhookReply(BaseModel):
    model_config = ConfigDict(extra="allow")
    reservation_id: str
    status: str


class OperationReply(BaseModel):
    operation: list[Any]
    result: Any


class WalkIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int = Field(ge=1, le=20, strict=True)
    party_id: str | None = Field(default=None, min_length=1, max_length=100)
    name: str = Field(default="", max_length=200)
    phone: str = Field(default="", max_length=50)


class PhoneReservation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    party_size: int = Field(ge=1, le=20, strict=True)
    start: str = Field(min_length=1, max_length=64, description="YYYY-MM-DDTHH:MM local")
    name: str = Field(default="", max_length=200)
    phone: str = Field(default="", max_length=50)


class Unit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    unit: str = Field(
        min_length=1, max_length=100, description="A table id or a combo id ('T5+T6')"
    )


class ReservationRow(BaseModel):
    reservation_id: str
    unit: str
    tables: list[str]
    start: str
    status: str = Field(description="booked, arrived, seated, no-show or cancelled")
    party_size: int | None
    name: str
    phone: str
    notes: str
    source: str
    seated_at: str | None = Field(description="The unit where the party sits, once seated")


class ReservationList(BaseModel):
    merchant_id: str
    day: str
    reservations: list[ReservationRow]


class Health(BaseModel):
    status: str


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorBody} for code in codes}


HOST_ERRORS = _errors(400, 401, 404, 409, 413, 422, 503)
WEBHOOK_ERRORS = _errors(400, 401, 404, 409, 413, 422, 503)

Id = Annotated[str, Path(min_length=1, max_length=200)]
Auth = Annotated[str | None, Header(alias="Authorization", description="Bearer <token>")]


def _send(reply: Reply) -> JSONResponse:
    return send(reply)


async def _read_body(request: Request) -> bytes | None:
    """The body, or None when it is over MAX_BODY_BYTES (read no further than that)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _bearer(authorization: str | None) -> str | None:
    if authorization is None:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def create_app(receiver: Receiver, lifespan: Any = None) -> FastAPI:
    app = FastAPI(
        lifespan=lifespan,
        title="Host Stand receiver",
        version="1",
        description="Partner webhooks and the host tablet's API for Host Stand restaurants.",
    )

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _send(problem(statuses.INVALID_REQUEST, f"{where}: {first.get('msg')}"))

    @app.exception_handler(StoreUnavailable)
    @app.exception_handler(ConcurrencyConflict)
    async def _busy(_request: Request, exc: Exception) -> JSONResponse:
        return send(*busy(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {
            400: statuses.BAD_JSON,  # a body FastAPI could not decode
            404: statuses.NOT_FOUND,
            405: statuses.METHOD_NOT_ALLOWED,
        }.get(exc.status_code, statuses.INVALID_REQUEST)
        return send(Reply(error_body(code, str(exc.detail))), status=exc.status_code)

    # One PartnerApi for the v3 routes here and for their hot paths (hot_app).
    app.state.partner_api = PartnerApi(receiver.books, receiver.store, receiver.clock)
    app.include_router(v3.router(app.state.partner_api, receiver.settings))
    tablet.register(app, receiver)  # the host's page, its floor document and event stream

    @app.get("/healthz", response_model=Health, tags=["health"])
    async def healthz() -> Health:
        return Health(status="ok")

    @app.post(
        "/webhooks/{partner_id}",
        response_model=WebhookReply,
        responses=WEBHOOK_ERRORS,
        tags=["partners"],
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"type": "object"}}},
            }
        },
    )
    async def webhook(request: Request, partner_id: Id) -> JSONResponse:
        """A signed partner event: reservation.requested, .checked_in or .cancelled."""
        body = await _read_body(request)
        if body is None:
            return send(*too_large(MAX_BODY_BYTES))
        signature = request.headers.get(SIGNATURE_HEADER)
        reply = receiver.webhook(partner_id, signature, body)
        return _send(reply)

    prefix = "/api/v1/restaurants/{merchant_id}"

    def host(
        merchant_id: str,
        authorization: str | None,
        name: str,
        *args: Any,
        meta: dict[str, Any] | None = None,
    ) -> JSONResponse:
        if not receiver.host_authorized(merchant_id, _bearer(authorization)):
            return _send(problem(statuses.UNAUTHORIZED, "missing or wrong bearer token"))
        return _send(receiver.host_operation(merchant_id, name, *args, meta=meta))

    @app.post(
        f"{prefix}/walk-ins", response_model=OperationReply, responses=HOST_ERRORS, tags=["host"]
    )
    async def walk_in(merchant_id: Id, walk: WalkIn, authorization: Auth = None) -> JSONResponse:
        """A walk-in joins the queue (and is seated at once if a table is right for it)."""
        party_id = walk.party_id or "w-" + new_booking_id()[3:11]
        meta = {"source": "host", "name": walk.name, "phone": walk.phone, "party_size": walk.size}
        return host(merchant_id, authorization, "walk_in", party_id, walk.size, meta=meta)

    @app.post(
        f"{prefix}/tables/{{table_id}}/free",
        response_model=OperationReply,
        responses=HOST_ERRORS,
        tags=["host"],
    )
    async def free(merchant_id: Id, table_id: Id, authorization: Auth = None) -> JSONResponse:
        """The party at this table has left; whoever the rules pick is seated."""
        return host(merchant_id, authorization, "free", table_id)

    @app.get(f"{prefix}/board", response_model=OperationReply, responses=HOST_ERRORS, tags=["host"])
    async def board(merchant_id: Id, authorization: Auth = None) -> JSONResponse:
        """Every table (party, held:<id> or free) and the queue, oldest first."""
        return host(merchant_id, authorization, "board")

    @app.get(f"{prefix}/quote", response_model=OperationReply, responses=HOST_ERRORS, tags=["host"])
    async def quote(
        merchant_id: Id,
        size: Annotated[int, Query(ge=1, le=20)],
        authorization: Auth = None,
    ) -> JSONResponse:
        """The wait in minutes to quote a walk-in of this size now."""
        return host(merchant_id, authorization, "quote", size)

    @app.post(
        f"{prefix}/reservations/{{reservation_id}}/check-in",
        response_model=WebhookReply,
        responses=HOST_ERRORS,
        tags=["host"],
    )
    async def check_in(
        merchant_id: Id, reservation_id: Id, authorization: Auth = None
    ) -> JSONResponse:
        """The guests of a reservation have arrived: seat them at their table(s)."""
        return host(merchant_id, authorization, "check_in", reservation_id)

    @app.post(
        f"{prefix}/reservations/{{reservation_id}}/cancel",
        response_model=WebhookReply,
        responses=HOST_ERRORS,
        tags=["host"],
    )
    async def cancel(
        merchant_id: Id, reservation_id: Id, authorization: Auth = None
    ) -> JSONResponse:
        """Cancel a reservation that is still booked; its table is given back."""
        return host(merchant_id, authorization, "cancel", reservation_id)

    @app.post(
        f"{prefix}/parties/{{party_id}}/leave",
        response_model=OperationReply,
        responses=HOST_ERRORS,
        tags=["host"],
    )
    async def leave(merchant_id: Id, party_id: Id, authorization: Auth = None) -> JSONResponse:
        """A waiting party gives up and leaves the queue."""
        return host(merchant_id, authorization, "leave", party_id)

    @app.post(
        f"{prefix}/reservations", response_model=WebhookReply, responses=HOST_ERRORS, tags=["host"]
    )
    async def reserve(
        merchant_id: Id, booking: PhoneReservation, authorization: Auth = None
    ) -> JSONResponse:
        """A phone reservation; the table is chosen by the availability rules."""
        if not receiver.host_authorized(merchant_id, _bearer(authorization)):
            return _send(problem(statuses.UNAUTHORIZED, "missing or wrong bearer token"))
        reply = receiver.host_book(
            merchant_id, booking.party_size, booking.start, booking.name, booking.phone
        )
        return _send(reply)

    @app.get(
        f"{prefix}/reservations",
        response_model=ReservationList,
        responses=HOST_ERRORS,
        tags=["host"],
    )
    async def reservations(
        merchant_id: Id,
        day: Annotated[date | None, Query(alias="date")] = None,
        authorization: Auth = None,
    ) -> JSONResponse:
        """The day's reservations (default today) with their status."""
        if not receiver.host_authorized(merchant_id, _bearer(authorization)):
            return _send(problem(statuses.UNAUTHORIZED, "missing or wrong bearer token"))
        return _send(receiver.host_reservations(merchant_id, day))

    # -- the host's hand on the tables (PRODUCT.md section 1: seat, move, arrive)

    def hand(
        merchant_id: str, authorization: str | None, name: str, party_id: str, *args: Any
    ) -> JSONResponse:
        if not receiver.host_authorized(merchant_id, _bearer(authorization)):
            return _send(problem(statuses.UNAUTHORIZED, "missing or wrong bearer token"))
        return _send(receiver.host_hand(merchant_id, name, party_id, *args))

    @app.post(
        f"{prefix}/parties/{{party_id}}/seat",
        response_model=OperationReply,
        responses=HOST_ERRORS,
        tags=["host"],
    )
    async def seat(
        merchant_id: Id, party_id: Id, where: Unit, authorization: Auth = None
    ) -> JSONResponse:
        """Seat a waiting party, or a booked reservation whose guests are here, at the unit
        the host chooses (holds and the waitlist's rules do not stop the host)."""
        return hand(merchant_id, authorization, "seat", party_id, where.unit)

    @app.post(
        f"{prefix}/parties/{{party_id}}/move",
        response_model=OperationReply,
        responses=HOST_ERRORS,
        tags=["host"],
    )
    async def move(
        merchant_id: Id, party_id: Id, where: Unit, authorization: Auth = None
    ) -> JSONResponse:
        """Move a seated party to another unit; the tables it leaves go to the waitlist."""
        return hand(merchant_id, authorization, "move", party_id, where.unit)

    @app.post(
        f"{prefix}/reservations/{{reservation_id}}/arrive",
        response_model=OperationReply,
        responses=HOST_ERRORS,
        tags=["host"],
    )
    async def arrive(
        merchant_id: Id, reservation_id: Id, authorization: Auth = None
    ) -> JSONResponse:
        """The guests of a booked reservation are at the door: never a no-show now."""
        return hand(merchant_id, authorization, "arrive", reservation_id)

    return app


def hot_app(app: FastAPI, receiver: Receiver) -> HotPaths:
    """`app` (from create_app) behind feed.http.hotpaths: v3 calls and signed webhooks skip
    FastAPI's machinery, and call the same PartnerApi and Receiver as its routes."""
    api: PartnerApi = app.state.partner_api
    header = SIGNATURE_HEADER.lower()

    def webhook(request: HotRequest) -> tuple[Reply, None]:
        return receiver.webhook(request.tail, request.headers.get(header), request.body), None

    def partner_id(tail: str) -> bool:  # as the route's {partner_id}: one segment, 1-200
        return 0 < len(tail) <= 200 and "/" not in tail

    return HotPaths(
        app,
        exact=v3.hot_routes(api, receiver.settings),
        prefixes={"/webhooks/": Route(webhook, headers=(header,), accepts_tail=partner_id)},
        max_body=MAX_BODY_BYTES,
    )
