"""The HTTP receiver: FastAPI routes over `Receiver`, nothing else.

Every error leaves as {"error": {"code", "message"}} with the status of `feed.http.statuses`;
request bodies are capped before they are read whole. Handlers run on the event loop: their
work is short (a day already replayed in memory, one SQLite commit well under a millisecond)
and handing each to a thread pool cost more in GIL hand-offs than it saved (measured with
bench/receiver_bench.py: 563 -> 896 bookings/s, p99 64 -> 32 ms).
"""

from __future__ import annotations

import importlib.resources
from datetime import date
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from feed.http import admin, health, statuses, tablet, v3
from feed.http.auth import bearer
from feed.http.hotpaths import (
    HotPaths,
    Route,
    WriteRequests,
    busy,
    client_closed,
    too_large,
)
from feed.http.hotpaths import Request as HotRequest
from feed.http.responses import send
from feed.service import bodies
from feed.service.config_reload import Reloader
from feed.service.days import new_booking_id
from feed.service.partner_api import PartnerApi
from feed.service.receiver import (
    HostKey,
    Receiver,
    RequestedData,
    ReservationRef,
    WebhookEvent,
)
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


# Ids we accept are used in paths afterwards (/parties/{party_id}/leave): URL-path-safe
# characters only, and no leading dot ("." and ".." are resolved as path steps by clients).
PATH_SAFE_ID = r"^[A-Za-z0-9_~-][A-Za-z0-9._~-]*$"


class WalkIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int = Field(
        ge=1, le=20, strict=True, description="Guests; at most the restaurant's max_party_size"
    )
    party_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        pattern=PATH_SAFE_ID,
        description="Our id for the party: letters, digits and . _ ~ - not starting with a"
        " dot (it is used in paths afterwards); made up when left out",
    )
    name: str = Field(default="", max_length=200)
    phone: str = Field(default="", max_length=50)

    @model_validator(mode="before")
    @classmethod
    def _party_size(cls, data: Any) -> Any:
        """`party_size`, as a phone booking spells it, is read as `size` (not both)."""
        if isinstance(data, dict) and "party_size" in data:
            if "size" in data:
                raise ValueError("give size or party_size, not both")
            data = {("size" if k == "party_size" else k): v for k, v in data.items()}
        return data


class PhoneReservation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    party_size: int = Field(ge=1, le=20, strict=True)
    start: str = Field(
        min_length=1,
        max_length=64,
        description="YYYY-MM-DDTHH:MM local time, or an ISO-8601 instant with an offset",
    )
    name: str = Field(default="", max_length=200)
    phone: str = Field(default="", max_length=50)
    notes: str = Field(default="", max_length=1000, description="Allergies, a birthday, ...")
    over_pacing: bool = Field(
        default=False,
        description="Book even beyond the slot's pacing caps (the host says so); "
        "the booking is marked over_pacing",
    )


class Unit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    unit: str = Field(
        min_length=1, max_length=100, description="A table id or a combo id ('T5+T6')"
    )


class Change(BaseModel):
    model_config = ConfigDict(extra="forbid")
    party_size: int | None = Field(default=None, ge=1, le=20, strict=True)
    start: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="YYYY-MM-DDTHH:MM local time, or an ISO-8601 instant with an offset",
    )
    over_pacing: bool = Field(
        default=False,
        strict=True,
        description="Book the new time even beyond its slot's pacing caps (the host says "
        "so, as for a phone booking); the booking is then marked over_pacing",
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
    attention: str | None = Field(
        default=None,
        description='Why it no longer fits the rules since a reload ("no longer fits: table T7'
        ' removed"); kept, never cancelled: for the host to sort out',
    )
    area: str | None = Field(
        default=None, description="The seating area of its unit (None: no areas are set)"
    )
    over_pacing: bool = Field(
        default=False, description="Booked by the host beyond the slot's pacing caps"
    )
    moved_to: str | None = Field(
        default=None,
        description="A cancelled row whose booking was moved to another day: its local start"
        ' there ("YYYY-MM-DD HH:MM")',
    )


class ReservationList(BaseModel):
    merchant_id: str
    day: str
    reservations: list[ReservationRow]


class Health(BaseModel):
    status: str


def _webhook_body() -> dict[str, Any]:
    """The webhook's body as documented: an event whose `data` depends on its type."""
    event = v3.inline_refs(WebhookEvent.model_json_schema())
    event["properties"]["data"] = {
        "description": "reservation.requested: the booking asked for; .checked_in and"
        " .cancelled: the reservation_id we answered the request with",
        "anyOf": [
            v3.inline_refs(RequestedData.model_json_schema()),
            v3.inline_refs(ReservationRef.model_json_schema()),
        ],
    }
    requested = {
        "id": "evt-0001",
        "type": "reservation.requested",
        "merchant_id": "marlowes-kitchen",
        "data": {
            "party_size": 4,
            "start": "2026-12-05T19:00:00+00:00",
            "reservation_id": "partner-res-77",
            "name": "Ada Lovelace",
            "phone": "+44 20 7946 0000",
            "email": "ada@example.com",
        },
    }
    change = {"merchant_id": "marlowes-kitchen", "data": {"reservation_id": "bk-0123456789abcdef"}}
    examples = {
        "requested": {"summary": "a booking request", "value": requested},
        "checked_in": {
            "summary": "the guests arrived",
            "value": {"id": "evt-0002", "type": "reservation.checked_in", **change},
        },
        "cancelled": {
            "summary": "the guest cancelled",
            "value": {"id": "evt-0003", "type": "reservation.cancelled", **change},
        },
    }
    content = {"schema": event, "examples": examples}
    return {"requestBody": {"required": True, "content": {"application/json": content}}}


WEBHOOK_BODY = _webhook_body()


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorBody} for code in codes}


HOST_ERRORS = _errors(400, 401, 404, 409, 413, 415, 422, 503)
WEBHOOK_ERRORS = _errors(400, 401, 404, 409, 413, 415, 422, 503)


def _no_control_characters(value: str) -> str:
    """A path id is looked up as a key of the store, and PostgreSQL's text cannot hold a NUL
    (a 500 there, where SQLite just finds nothing): control characters are refused (422), as
    no id we give out or read from a restaurant file has one."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValueError("ids hold no control characters")
    return value


Id = Annotated[str, Path(min_length=1, max_length=200), AfterValidator(_no_control_characters)]
Auth = Annotated[str | None, Header(alias="Authorization", description="Bearer <token>")]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=200,
        description="Any unique string per change (a UUID): a retry with the same key gets"
        " the stored reply and changes nothing more. Keys are per restaurant and route.",
    ),
]


def _send(reply: Reply) -> JSONResponse:
    return send(reply)


class Unauthorized(Exception):
    """The host API's credentials are missing or wrong: raised by the route's first
    dependency, so nothing of the request (path, query, body) is read or parsed before."""


ModelT = TypeVar("ModelT", bound=BaseModel)


def _json_body(model: type[BaseModel], example: dict[str, Any] | None = None) -> dict[str, Any]:
    """openapi_extra for a route that reads its own body: the model's schema, required."""
    schema = model.model_json_schema()
    content: dict[str, Any] = {"schema": schema}
    if example is not None:
        content["example"] = example
    return {"requestBody": {"required": True, "content": {"application/json": content}}}


async def _parse_body(request: Request, model: type[ModelT]) -> ModelT | Reply:
    """The body as `model`: capped before it is read whole, then JSON (400), then the
    model's rules (422)."""
    body = await _read_body(request)
    if body is None:
        return too_large(MAX_BODY_BYTES)[0]
    try:
        payload = bodies.loads(body)
    except bodies.BadBody as exc:
        return problem(statuses.BAD_JSON, f"body is {exc}")
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return problem(statuses.INVALID_REQUEST, f"{where}: {first['msg']}")


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


DOCS_ASSETS = {  # the Swagger UI files /docs needs, served from the installed package
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}


def _docs(app: FastAPI) -> None:
    """/docs from files we serve ourselves, so it works with no network (a host stand's
    back office, a laptop on a train): Swagger UI's assets come from the swagger-ui-py
    package, under /docs/assets/."""
    static = importlib.resources.files("swagger_ui") / "static"

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} - docs",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon-32x32.png",
        )

    @app.get("/docs/assets/{name}", include_in_schema=False)
    async def docs_asset(name: str) -> Response:
        media_type = DOCS_ASSETS.get(name)
        if media_type is None:
            return _send(problem(statuses.NOT_FOUND, f"no docs asset {name}"))
        content = (static / name).read_bytes()
        headers = {"Cache-Control": "public, max-age=86400"}
        return Response(content, media_type=media_type, headers=headers)


def create_app(
    receiver: Receiver, lifespan: Any = None, reloader: Reloader | None = None
) -> FastAPI:
    app = FastAPI(
        lifespan=lifespan,
        title="Host Stand receiver",
        version="1",
        description="Partner webhooks and the host tablet's API for Host Stand restaurants.",
        docs_url=None,  # FastAPI's own /docs and /redoc load their scripts from a CDN
        redoc_url=None,
    )
    _docs(app)
    app.add_middleware(WriteRequests)  # trailing slashes and compressed bodies of writes

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _send(problem(statuses.INVALID_REQUEST, f"{where}: {first.get('msg')}"))

    @app.exception_handler(Unauthorized)
    async def _unauthorized(_request: Request, _exc: Unauthorized) -> JSONResponse:
        return _send(problem(statuses.UNAUTHORIZED, "missing or wrong bearer token"))

    @app.exception_handler(StoreUnavailable)
    @app.exception_handler(ConcurrencyConflict)
    async def _busy(_request: Request, exc: Exception) -> JSONResponse:
        return send(*busy(exc))

    @app.exception_handler(ClientDisconnect)
    async def _gone(_request: Request, _exc: ClientDisconnect) -> JSONResponse:
        # The connection closed before the body ended: nothing was done. It went on to
        # uvicorn as "Exception in ASGI application", a traceback and a 500 in the log and
        # the metrics for every client that hung up mid-request.
        return send(*client_closed())

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
    admin.register(app, receiver, reloader)  # the operator's reload, the host's attention list

    app.state.readiness = health.Readiness()  # moved along by feed.http.serving's lifespan
    app.include_router(health.readiness_router(receiver.store, app.state.readiness))

    @app.get(
        "/healthz",
        response_model=health.Health,
        responses=health.HEALTH_RESPONSES,
        tags=["health"],
    )
    async def healthz() -> JSONResponse:
        """The store answers, partners are not kept waiting past [health] max_backlog_seconds
        (else 503), and how old the last export is."""
        return await health.healthz(receiver.store, receiver.settings, receiver.floors())

    @app.post(
        "/webhooks/{partner_id}",
        response_model=WebhookReply,
        responses=WEBHOOK_ERRORS,
        tags=["partners"],
        openapi_extra=WEBHOOK_BODY,
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

    async def host_token(merchant_id: Annotated[str, Path()], authorization: Auth = None) -> None:
        """Every host route's first step: the bearer token for this merchant, or 401."""
        if not receiver.host_authorized(merchant_id, bearer(authorization)):
            raise Unauthorized

    host_routes = APIRouter(prefix=prefix, tags=["host"], dependencies=[Depends(host_token)])

    def host(
        merchant_id: str,
        name: str,
        *args: Any,
        meta: dict[str, Any] | None = None,
        key: HostKey | None = None,
    ) -> JSONResponse:
        return _send(receiver.host_operation(merchant_id, name, *args, meta=meta, key=key))

    def keyed(idempotency_key: str | None, asked: Any) -> HostKey | None:
        return None if idempotency_key is None else (idempotency_key, asked)

    @host_routes.post(
        "/walk-ins",
        response_model=OperationReply,
        responses=HOST_ERRORS,
        openapi_extra=_json_body(WalkIn, {"size": 2, "party_id": "w-ada", "name": "Ada"}),
    )
    async def walk_in(
        request: Request, merchant_id: Id, idempotency_key: IdempotencyKey = None
    ) -> JSONResponse:
        """A walk-in joins the queue (and is seated at once if a table is right for it)."""
        walk = await _parse_body(request, WalkIn)
        if isinstance(walk, Reply):
            return _send(walk)
        party_id = walk.party_id or "w-" + new_booking_id()[3:11]
        meta = {"source": "host", "name": walk.name, "phone": walk.phone, "party_size": walk.size}
        key = keyed(idempotency_key, walk.model_dump())
        return host(merchant_id, "walk_in", party_id, walk.size, meta=meta, key=key)

    @host_routes.post(
        "/tables/{table_id}/free", response_model=OperationReply, responses=HOST_ERRORS
    )
    async def free(
        merchant_id: Id, table_id: Id, idempotency_key: IdempotencyKey = None
    ) -> JSONResponse:
        """The party at this table has left; whoever the rules pick is seated."""
        return host(merchant_id, "free", table_id, key=keyed(idempotency_key, table_id))

    @host_routes.get("/board", response_model=OperationReply, responses=HOST_ERRORS)
    async def board(merchant_id: Id) -> JSONResponse:
        """Every table (party, held:<id> or free) and the queue, oldest first."""
        return host(merchant_id, "board")

    @host_routes.get("/quote", response_model=OperationReply, responses=HOST_ERRORS)
    async def quote(merchant_id: Id, size: Annotated[int, Query(ge=1, le=20)]) -> JSONResponse:
        """The wait in minutes to quote a walk-in of this size now."""
        return host(merchant_id, "quote", size)

    @host_routes.post(
        "/reservations/{reservation_id}/check-in",
        response_model=WebhookReply,
        responses=HOST_ERRORS,
    )
    async def check_in(
        merchant_id: Id, reservation_id: Id, idempotency_key: IdempotencyKey = None
    ) -> JSONResponse:
        """The guests of a reservation have arrived: seat them at their table(s)."""
        return host(
            merchant_id, "check_in", reservation_id, key=keyed(idempotency_key, reservation_id)
        )

    @host_routes.post(
        "/reservations/{reservation_id}/cancel",
        response_model=WebhookReply,
        responses=HOST_ERRORS,
    )
    async def cancel(
        merchant_id: Id, reservation_id: Id, idempotency_key: IdempotencyKey = None
    ) -> JSONResponse:
        """Cancel a reservation that is still booked; its table is given back."""
        return host(
            merchant_id, "cancel", reservation_id, key=keyed(idempotency_key, reservation_id)
        )

    @host_routes.post(
        "/parties/{party_id}/leave", response_model=OperationReply, responses=HOST_ERRORS
    )
    async def leave(
        merchant_id: Id, party_id: Id, idempotency_key: IdempotencyKey = None
    ) -> JSONResponse:
        """A waiting party gives up and leaves the queue."""
        return host(merchant_id, "leave", party_id, key=keyed(idempotency_key, party_id))

    @host_routes.post(
        "/reservations",
        response_model=WebhookReply,
        responses=HOST_ERRORS,
        openapi_extra=_json_body(
            PhoneReservation, {"party_size": 4, "start": "2026-12-05T19:00", "name": "Ann"}
        ),
    )
    async def reserve(
        request: Request, merchant_id: Id, idempotency_key: IdempotencyKey = None
    ) -> JSONResponse:
        """A phone reservation; the table is chosen by the availability rules."""
        booking = await _parse_body(request, PhoneReservation)
        if isinstance(booking, Reply):
            return _send(booking)
        reply = receiver.host_book(
            merchant_id,
            booking.party_size,
            booking.start,
            booking.name,
            booking.phone,
            key=keyed(idempotency_key, booking.model_dump()),
            notes=booking.notes,
            over_pacing=booking.over_pacing,
        )
        return _send(reply)

    @host_routes.get("/reservations", response_model=ReservationList, responses=HOST_ERRORS)
    async def reservations(
        merchant_id: Id, day: Annotated[date | None, Query(alias="date")] = None
    ) -> JSONResponse:
        """The day's reservations (default today) with their status."""
        return _send(receiver.host_reservations(merchant_id, day))

    # -- the host's hand on the tables (PRODUCT.md section 1: seat, move, arrive)

    def hand(
        merchant_id: str, name: str, party_id: str, *args: Any, key: HostKey | None
    ) -> JSONResponse:
        return _send(receiver.host_hand(merchant_id, name, party_id, *args, key=key))

    @host_routes.post(
        "/parties/{party_id}/seat",
        response_model=OperationReply,
        responses=HOST_ERRORS,
        openapi_extra=_json_body(Unit, {"unit": "T4"}),
    )
    async def seat(
        request: Request, merchant_id: Id, party_id: Id, idempotency_key: IdempotencyKey = None
    ) -> JSONResponse:
        """Seat a waiting party, or a booked reservation whose guests are here, at the unit
        the host chooses (holds and the waitlist's rules do not stop the host)."""
        where = await _parse_body(request, Unit)
        if isinstance(where, Reply):
            return _send(where)
        key = keyed(idempotency_key, [party_id, where.unit])
        return hand(merchant_id, "seat", party_id, where.unit, key=key)

    @host_routes.post(
        "/parties/{party_id}/move",
        response_model=OperationReply,
        responses=HOST_ERRORS,
        openapi_extra=_json_body(Unit, {"unit": "T6"}),
    )
    async def move(
        request: Request, merchant_id: Id, party_id: Id, idempotency_key: IdempotencyKey = None
    ) -> JSONResponse:
        """Move a seated party to another unit; the tables it leaves go to the waitlist."""
        where = await _parse_body(request, Unit)
        if isinstance(where, Reply):
            return _send(where)
        key = keyed(idempotency_key, [party_id, where.unit])
        return hand(merchant_id, "move", party_id, where.unit, key=key)

    @host_routes.post(
        "/reservations/{reservation_id}/arrive",
        response_model=OperationReply,
        responses=HOST_ERRORS,
    )
    async def arrive(
        merchant_id: Id, reservation_id: Id, idempotency_key: IdempotencyKey = None
    ) -> JSONResponse:
        """The guests of a booked reservation are at the door: never a no-show now."""
        key = keyed(idempotency_key, reservation_id)
        return hand(merchant_id, "arrive", reservation_id, key=key)

    @host_routes.post(
        "/reservations/{reservation_id}/change",
        response_model=WebhookReply,
        responses=HOST_ERRORS,
        openapi_extra=_json_body(Change, {"party_size": 6, "start": "2026-12-05T20:00"}),
    )
    async def change(
        request: Request,
        merchant_id: Id,
        reservation_id: Id,
        idempotency_key: IdempotencyKey = None,
    ) -> JSONResponse:
        """Change a booking's time or party size (the guest phoned): booked again by the
        availability rules under the same id; a partner hears of it."""
        asked = await _parse_body(request, Change)
        if isinstance(asked, Reply):
            return _send(asked)
        key = keyed(idempotency_key, [reservation_id, asked.model_dump()])
        return _send(
            receiver.host_change(
                merchant_id,
                reservation_id,
                asked.party_size,
                asked.start,
                key,
                over_pacing=asked.over_pacing,
            )
        )

    app.include_router(host_routes)

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
        prefixes={
            "/webhooks/": Route(
                webhook,
                headers=(header,),
                accepts_tail=partner_id,
                template="/webhooks/{partner_id}",
                param="partner_id",
            )
        },
        max_body=MAX_BODY_BYTES,
    )
