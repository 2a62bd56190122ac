"""Error codes to HTTP statuses: the one place the receiver decides what a refusal is.

Codes are the engine's (`engine.errors`), the service's (`feed.service.days`) and the
receiver's own.
Anything a client can send maps to a 4xx; a code missing here is a bug and shows as 500.
"""

from __future__ import annotations

from engine import errors
from feed.service import days
from feed.service.replies import (
    BAD_ARGUMENTS,
    BAD_JSON,
    BODY_TOO_LARGE,
    CHANGED_MEANWHILE,
    CLIENT_CLOSED,
    EVENT_ID_REUSED,
    IDEMPOTENCY_KEY_REUSED,
    INVALID_CONFIGURATION,
    INVALID_REQUEST,
    METHOD_NOT_ALLOWED,
    NO_SERVICE_NOW,
    NO_SERVICE_TODAY,
    NOT_FOUND,
    RESERVATION_ID_REUSED,
    UNAUTHORIZED,
    UNAVAILABLE,
    UNKNOWN_MERCHANT,
    UNSUPPORTED_ENCODING,
    WAIT_PAST_CLOSE,
    Reply,
    error_body,
)

HTTP_STATUS: dict[str, int] = {
    # the engine's codes
    errors.UNKNOWN_OPERATION: 400,
    errors.INVALID_ARGUMENTS: 422,
    errors.PARTY_EXISTS: 409,
    errors.UNKNOWN_TABLE: 404,
    errors.TABLE_NOT_OCCUPIED: 409,
    errors.INVALID_TIME: 409,
    errors.TABLE_CONFLICT: 409,
    errors.UNKNOWN_RESERVATION: 404,
    errors.RESERVATION_NOT_ACTIVE: 409,
    errors.TOO_EARLY: 409,
    errors.TABLE_BUSY: 409,
    errors.UNKNOWN_PARTY: 404,
    errors.NOT_WAITING: 409,
    errors.NOT_SEATED: 409,
    errors.TABLE_TOO_SMALL: 409,
    # the service's refusals
    days.SLOT_UNAVAILABLE: 409,
    days.NOT_A_SLOT: 409,
    days.SLOT_IN_PAST: 409,
    days.BAD_PARTY_SIZE: 422,
    days.CLOSED: 409,
    NO_SERVICE_TODAY: 409,
    NO_SERVICE_NOW: 409,
    WAIT_PAST_CLOSE: 409,
    days.BEYOND_HORIZON: 409,
    days.TOO_SOON: 409,
    days.OVER_PACING: 409,
    days.OUTSIDE_CANCELLATION_WINDOW: 409,
    days.TABLE_REMOVED: 409,
    days.WAITLIST_FULL: 409,
    # the receiver's own
    UNAUTHORIZED: 401,
    BAD_JSON: 400,
    INVALID_REQUEST: 422,
    BODY_TOO_LARGE: 413,
    UNSUPPORTED_ENCODING: 415,
    UNKNOWN_MERCHANT: 404,
    EVENT_ID_REUSED: 422,
    IDEMPOTENCY_KEY_REUSED: 422,
    RESERVATION_ID_REUSED: 409,  # that reservation is booked already: one booking per id
    NOT_FOUND: 404,
    METHOD_NOT_ALLOWED: 405,
    UNAVAILABLE: 503,
    BAD_ARGUMENTS: 400,
    INVALID_CONFIGURATION: 422,
    CHANGED_MEANWHILE: 409,  # the partner protocol's "409 concurrency abort": retry
    # nginx's "client closed request": never sent (the client is gone), a 4xx in the log
    CLIENT_CLOSED: 499,
}


def http_status(code: str) -> int:
    return HTTP_STATUS.get(code, 500)


def status_of(reply: Reply) -> int:
    """200 for an answer; a refusal's status by its code."""
    code = reply.code
    return 200 if code is None else http_status(code)


__all__ = [
    "BAD_ARGUMENTS",
    "BAD_JSON",
    "BODY_TOO_LARGE",
    "CHANGED_MEANWHILE",
    "CLIENT_CLOSED",
    "EVENT_ID_REUSED",
    "HTTP_STATUS",
    "IDEMPOTENCY_KEY_REUSED",
    "INVALID_REQUEST",
    "METHOD_NOT_ALLOWED",
    "NOT_FOUND",
    "NO_SERVICE_NOW",
    "NO_SERVICE_TODAY",
    "UNAUTHORIZED",
    "UNAVAILABLE",
    "UNKNOWN_MERCHANT",
    "UNSUPPORTED_ENCODING",
    "error_body",
    "http_status",
    "status_of",
]
