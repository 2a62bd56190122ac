"""The receiver's replies: a body and, for a refusal, its error code (a value, not a status).

Every refusal leaves as {"error": {"code", "message"}}; the HTTP edge maps the code to a
status (`feed.http.statuses`), so nothing below the edge knows HTTP.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

# The receiver's own codes (the engine's are in `engine.errors`, the service days' in
# `feed.service.days`).
UNAUTHORIZED = "unauthorized"
BAD_JSON = "bad json"
INVALID_REQUEST = "invalid request"
BODY_TOO_LARGE = "body too large"
UNSUPPORTED_ENCODING = "unsupported content encoding"  # a gzip body, say: sent uncompressed
UNKNOWN_MERCHANT = "unknown merchant"
EVENT_ID_REUSED = "event id reused"
IDEMPOTENCY_KEY_REUSED = "idempotency key reused"
# A webhook's data.reservation_id (the partner's own id of a reservation) already booked
# under another event id, for another time, size or room, or booked and changed since.
RESERVATION_ID_REUSED = "reservation id reused"
NOT_FOUND = "not found"
METHOD_NOT_ALLOWED = "method not allowed"
NO_SERVICE_TODAY = "no service today"
NO_SERVICE_NOW = "no service now"  # a walk-in between services
WAIT_PAST_CLOSE = "wait past close"  # a quote that would end after the close
UNAVAILABLE = "unavailable"
BAD_ARGUMENTS = "bad arguments"  # the partner protocol's 400: unknown merchant, slot, booking
INVALID_CONFIGURATION = "invalid configuration"  # a reload refused: the files have problems
# A booking changed under an action each time it was looked up again (days.LOOKUPS): no
# refusal of a copy since replaced is true of the booking, so none is given. Not stored
# against a webhook's event id: a retry tries again.
CHANGED_MEANWHILE = "changed meanwhile"
# The client closed the connection before its request's body ended: nothing was read as a
# request, so nothing was done. Nobody receives the answer; the request's log line and
# metrics say it.
CLIENT_CLOSED = "client closed request"


@dataclass(frozen=True)
class Reply:
    body: dict[str, Any]

    @property
    def code(self) -> str | None:
        """The error code of a refusal; None for an answer."""
        error = self.body.get("error")
        if isinstance(error, dict) and isinstance(error.get("code"), str):
            return str(error["code"])
        return None


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def problem(code: str, message: str) -> Reply:
    return Reply(error_body(code, message))


log = logging.getLogger(__name__)


def floor_out_of_date(operator_message: str, again: str = "retry shortly") -> Reply:
    """503 for a partner whose request or event this server refused only because it runs a
    floor plan older than the one in force (days.TABLE_REMOVED): nothing was done, and it
    is no business failure to tell the partner; `again` says how to retry. The operator's
    instruction (reload this server) goes to the log, not to the partner."""
    log.warning("a partner's request refused: %s", operator_message)
    return problem(
        UNAVAILABLE,
        "this server's floor plan is being updated (a table was removed): nothing was done;"
        f" {again}",
    )


def changed_meanwhile(booking_id: str, what: str) -> Reply:
    """`what` was not done: the booking kept changing while it was tried (409, retry)."""
    return problem(
        CHANGED_MEANWHILE,
        f"{what} not done: booking {booking_id} kept changing while it was tried (another"
        " change of it was being made each time): read it again and retry",
    )
