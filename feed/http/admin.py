"""The operator's routes: reload the restaurant files, and the bookings a reload left
outside the rules for the host to look at.

`POST /api/v1/admin/reload` takes the settings' admin_token as a bearer token (401
without it, and always 401 when no admin_token is set); it answers 200 with what changed,
or 422 with every problem of a refused reload (the running configuration is kept).
"""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Header, Path
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from feed.http.auth import bearer
from feed.http.responses import send
from feed.service import replies
from feed.service.config_reload import Reloader
from feed.service.receiver import Receiver
from feed.service.replies import Reply, error_body, problem

Auth = Annotated[str | None, Header(alias="Authorization", description="Bearer <token>")]
Id = Annotated[str, Path(min_length=1, max_length=200)]


class AttentionRow(BaseModel):
    merchant_id: str
    day: str
    reservation_id: str
    start: str = Field(description="Local start time it was booked for")
    unit: str
    party_size: int | None
    name: str
    attention: str = Field(description='e.g. "no longer fits: table T7 removed"')


class RehomedRow(BaseModel):
    merchant_id: str
    day: str
    reservation_id: str
    start: str = Field(description="Local start time, unchanged")
    party_size: int
    from_: str = Field(alias="from", description="The removed table or combo it was on")
    to: str = Field(description="The table or combo it is booked on now")


class Reloaded(BaseModel):
    status: str = Field(description='"reloaded"')
    changed: list[str] = Field(description="Restaurants whose configuration changed")
    unchanged: list[str]
    replaces_queued: int = Field(description="Availability replaces queued for partners")
    attention: list[AttentionRow] = Field(description="Bookings that no longer fit the rules")
    rehomed: list[RehomedRow] = Field(
        description="Bookings on a removed table or combo, booked again on another unit at"
        " their own time and size (same reservation_id) before the new floor took over"
    )


class AttentionList(BaseModel):
    merchant_id: str
    attention: list[AttentionRow]


def _matches(expected: str | None, given: str | None) -> bool:
    if not expected or given is None:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


def register(app: FastAPI, receiver: Receiver, reloader: Reloader | None) -> None:
    """Add the admin reload (404 without a `reloader`) and the attention list."""
    routes = APIRouter()
    unauthorized = problem(replies.UNAUTHORIZED, "missing or wrong bearer token")

    @routes.post(
        "/api/v1/admin/reload",
        tags=["admin"],
        response_model=Reloaded,
        responses={401: {}, 404: {}, 422: {"description": "refused, with every problem"}},
    )
    async def reload(authorization: Auth = None) -> JSONResponse:
        """Read every restaurant file again: all valid, the new configuration is applied
        (partners are sent replaces of the days ahead; bookings on a removed table are
        booked again on another, those that no longer fit are listed, never cancelled);
        any problem (a booking no other table can take among them), nothing changes and
        every problem is listed. Runs on the event loop in one step: a request sees old or new."""
        if not _matches(receiver.settings.admin_token, bearer(authorization)):
            return send(unauthorized)
        if reloader is None:  # an app built without the files (a test's, in process)
            return send(problem(replies.NOT_FOUND, "this server has no restaurant files"))
        outcome = reloader.reload()
        if not outcome.applied:
            body = error_body(
                replies.INVALID_CONFIGURATION,
                f"reload refused ({len(outcome.problems)} problem(s)); the running"
                " configuration is kept",
            )
            body["error"]["problems"] = list(outcome.problems)
            return send(Reply(body))
        return send(Reply(outcome.body()))

    @routes.get(
        "/api/v1/restaurants/{merchant_id}/attention",
        tags=["host"],
        response_model=AttentionList,
        responses={401: {}},
    )
    async def attention(merchant_id: Id, authorization: Auth = None) -> JSONResponse:
        """Bookings the last reload found no longer fit the restaurant's rules (a removed
        table, a time outside the hours, a closed day): kept, for the host to sort out."""
        if not receiver.host_authorized(merchant_id, bearer(authorization)):
            return send(unauthorized)
        book = receiver.books.get(merchant_id)
        if book is None:
            return send(problem(replies.UNKNOWN_MERCHANT, f"no merchant {merchant_id}"))
        tz = book.restaurant.tz
        rows: list[dict[str, Any]] = [m.row(tz) for m in receiver.attention_now(merchant_id)]
        return send(Reply({"merchant_id": merchant_id, "attention": rows}))

    app.include_router(routes)
