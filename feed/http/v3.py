"""HTTP routes of the partner's booking server (v3) and waitlist, behind HTTP Basic auth.

The paths and field names are the partner's; `feed.service.partner_api` does the work.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import time
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from feed.http import statuses
from feed.http.health import store_trouble_writing
from feed.http.hotpaths import Answer, Route
from feed.http.hotpaths import Request as HotRequest
from feed.http.responses import send
from feed.http.statuses import status_of
from feed.service import bodies, events
from feed.service import partner_api as pa
from feed.service.partner_api import PartnerApi
from feed.service.replies import Reply, problem
from feed.settings import Partner, Settings

MAX_BODY_BYTES = 64 * 1024
_OBJECT = {"content": {"application/json": {"schema": {"type": "object"}}}}
_ERROR = {
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["error"],
                "properties": {
                    "error": {
                        "type": "object",
                        "required": ["code", "message"],
                        "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                    }
                },
            }
        }
    }
}
RESPONSES: dict[int | str, dict[str, Any]] = {
    200: _OBJECT,
    400: _ERROR,
    401: _ERROR,
    413: _ERROR,
    415: _ERROR,  # a compressed body (feed.http.hotpaths.encoded)
    503: _ERROR,
}


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema with its $defs inlined: a "#/$defs/..." reference would be
    read against the whole OpenAPI document, where there are no $defs."""
    defs = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            return {k: resolve(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


def request_body(model: type[BaseModel], example: dict[str, Any]) -> dict[str, Any]:
    """openapi_extra documenting a JSON body read by the route itself (not by FastAPI)."""
    content = {"schema": inline_refs(model.model_json_schema()), "example": example}
    return {"requestBody": {"required": True, "content": {"application/json": content}}}


_SLOT = {
    "merchant_id": "marlowes-kitchen",
    "service_id": "1000",
    "start_sec": 1796756400,
    "duration_sec": 2700,
    "resources": {"party_size": 2},
}
_USER = {
    "user_id": "1111111111111111111",
    "given_name": "John",
    "family_name": "Smith",
    "telephone": "+12091111111",
    "email": "john.smith@example.com",
}
# Each v3 body: its model (snake_case shown; lowerCamelCase is accepted too, and int64
# fields may be strings) and an example as the partner sends it.
REQUESTS: dict[str, tuple[type[BaseModel], dict[str, Any]]] = {
    "BatchAvailabilityLookup": (
        pa.LookupRequest,
        {
            "merchant_id": "marlowes-kitchen",
            "slot_time": [
                {
                    "service_id": "1000",
                    "start_sec": 1796756400,
                    "duration_sec": 2700,
                    "resource_ids": {"party_size": 2},
                }
            ],
        },
    ),
    "CreateBooking": (
        pa.CreateBookingRequest,
        {
            "slot": _SLOT,
            "user_information": _USER,
            "idempotency_token": "18307119013960637991",
            "payment_information": {"prepayment_status": "PREPAYMENT_NOT_PROVIDED"},
        },
    ),
    "UpdateBooking": (
        pa.UpdateBookingRequest,
        {"booking": {"booking_id": "bk-0123456789abcdef", "status": "CANCELED"}},
    ),
    "GetBookingStatus": (pa.BookingIdRequest, {"booking_id": "bk-0123456789abcdef"}),
    "ListBookings": (pa.UserIdRequest, {"user_id": "1111111111111111111"}),
    "BatchGetWaitEstimates": (
        pa.WaitEstimatesRequest,
        {"merchant_id": "marlowes-kitchen", "service_id": "1000", "party_size": [2, 4]},
    ),
    "CreateWaitlistEntry": (
        pa.CreateWaitlistEntryRequest,
        {
            "merchant_id": "marlowes-kitchen",
            "service_id": "1000",
            "party_size": 2,
            "user_information": _USER,
            "idempotency_token": "wl-token-1",
        },
    ),
    "GetWaitlistEntry": (pa.WaitlistEntryIdRequest, {"waitlist_entry_id": "wl-0123456789abcdef"}),
    "DeleteWaitlistEntry": (
        pa.WaitlistEntryIdRequest,
        {"waitlist_entry_id": "wl-0123456789abcdef"},
    ),
}


def basic_partner(settings: Settings, authorization: str | None) -> Partner | None:
    """The partner whose Basic credentials these are, or None."""
    if not authorization:
        return None
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, sep, password = (
            base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
        )
    except (binascii.Error, ValueError):  # not base64 (non-ASCII text too), or not UTF-8
        return None
    if not sep:
        return None
    for partner in settings.partners.values():
        if (
            partner.basic_user is not None
            and partner.basic_password is not None
            and hmac.compare_digest(partner.basic_user.encode(), user.encode())
            and hmac.compare_digest(partner.basic_password.encode(), password.encode())
        ):
            return partner
    return None


def _headers(reply: Reply) -> dict[str, str] | None:
    return {"WWW-Authenticate": 'Basic realm="hoststand"'} if status_of(reply) == 401 else None


def _send(reply: Reply) -> JSONResponse:
    return send(reply, _headers(reply))


def answer(
    settings: Settings,
    method: Callable[[Partner, Any], Reply],
    authorization: str | None,
    body: bytes,
) -> Answer:
    """One v3 call: Basic auth, the body as a JSON object, then `method`. The FastAPI route
    and the hot path (feed.http.hotpaths) both answer through here."""
    partner = basic_partner(settings, authorization)
    if partner is not None:
        events.note_partner(partner.id)  # for the request's log line
    if partner is None:
        reply = problem(statuses.UNAUTHORIZED, "missing or wrong Basic credentials")
    elif len(body) > MAX_BODY_BYTES:
        reply = problem(statuses.BODY_TOO_LARGE, f"bodies are {MAX_BODY_BYTES} bytes at most")
    else:
        # Replies echo what was sent (a lookup echoes each slot) and are strict JSON in
        # UTF-8: feed.service.bodies refuses whatever could not be written back.
        try:
            payload = bodies.loads(body, empty={})
        except bodies.BadBody as exc:
            reply = problem(statuses.BAD_ARGUMENTS, f"body is {exc}")
        else:
            if not isinstance(payload, dict):
                reply = problem(statuses.BAD_ARGUMENTS, "the body must be a JSON object")
            else:
                reply = method(partner, payload)  # on the loop: see feed/server.py
    return reply, _headers(reply)


def hot_routes(api: PartnerApi, settings: Settings) -> dict[str, Route]:
    """The v3 POST endpoints for feed.http.hotpaths, by path."""

    def route(method: Callable[[Partner, Any], Reply]) -> Route:
        def handle(request: HotRequest) -> Answer:
            return answer(settings, method, request.headers.get("authorization"), request.body)

        return Route(handle, headers=("authorization",))

    return {f"/v3/{name}": route(method) for name, (method, _) in endpoints(api).items()}


def endpoints(api: PartnerApi) -> dict[str, tuple[Callable[[Partner, Any], Reply], str]]:
    return {
        "BatchAvailabilityLookup": (api.lookup, "Is each slot bookable right now?"),
        "CreateBooking": (api.create_booking, "Book a slot (idempotent on the token)."),
        "UpdateBooking": (api.update_booking, "Cancel, move or resize a booking."),
        "GetBookingStatus": (api.booking_status, "A booking's status."),
        "ListBookings": (api.list_bookings, "A user's bookings with this partner."),
        "BatchGetWaitEstimates": (api.wait_estimates, "Wait estimates per party size."),
        "CreateWaitlistEntry": (api.create_waitlist_entry, "Join the walk-in waitlist."),
        "GetWaitlistEntry": (api.get_waitlist_entry, "A waitlist entry's state."),
        "DeleteWaitlistEntry": (api.delete_waitlist_entry, "Leave the waitlist."),
    }


def router(api: PartnerApi, settings: Settings) -> APIRouter:
    routes = APIRouter(prefix="/v3", tags=["partner v3"])

    async def call(request: Request, method: Callable[[Partner, Any], Reply]) -> JSONResponse:
        body = await request.body()
        reply, headers = answer(settings, method, request.headers.get("authorization"), body)
        return send(reply, headers)

    @routes.get("/HealthCheck", responses={200: _OBJECT, 401: _ERROR, 503: _ERROR})
    async def health_check(request: Request) -> JSONResponse:
        """200 when the booking server is up and its store answers and can be written (a
        write probe), else 503 (Basic auth as for every call): a partner must not be told
        healthy by a server that cannot book."""
        if basic_partner(settings, request.headers.get("authorization")) is None:
            return _send(problem(statuses.UNAUTHORIZED, "missing or wrong Basic credentials"))
        trouble = await run_in_threadpool(store_trouble_writing, api.store, time.time())
        if trouble is not None:
            return send(problem(statuses.UNAVAILABLE, trouble), {"Retry-After": "1"})
        return send(Reply({}))

    def handler(method: Callable[[Partner, Any], Reply]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> JSONResponse:
            return await call(request, method)

        return endpoint

    for name, (method, summary) in endpoints(api).items():
        routes.add_api_route(
            f"/{name}",
            handler(method),
            methods=["POST"],
            name=name,
            summary=summary,
            # Deleting what does not exist is a 404 (the waitlist spec).
            responses={**RESPONSES, 404: _ERROR} if name == "DeleteWaitlistEntry" else RESPONSES,
            openapi_extra=request_body(*REQUESTS[name]),
        )
    return routes
