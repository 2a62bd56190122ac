"""Rejections: the stable codes an operation can fail with.

Inside the engine a rejection is a value; `run` writes it as "error: <code>".
The HTTP and CLI edges map these codes to statuses and exit codes in one place each.
"""

from __future__ import annotations

from dataclasses import dataclass

UNKNOWN_OPERATION = "unknown operation"
INVALID_ARGUMENTS = "invalid arguments"
PARTY_EXISTS = "party exists"
UNKNOWN_TABLE = "unknown table"
TABLE_NOT_OCCUPIED = "table not occupied"
INVALID_TIME = "invalid time"
TABLE_CONFLICT = "table conflict"
UNKNOWN_RESERVATION = "unknown reservation"
RESERVATION_NOT_ACTIVE = "reservation not active"
TOO_EARLY = "too early"
TABLE_BUSY = "table busy"
UNKNOWN_PARTY = "unknown party"
NOT_WAITING = "not waiting"
NOT_SEATED = "not seated"
TABLE_TOO_SMALL = "table too small"

ALL_CODES = (
    UNKNOWN_OPERATION,
    INVALID_ARGUMENTS,
    PARTY_EXISTS,
    UNKNOWN_TABLE,
    TABLE_NOT_OCCUPIED,
    INVALID_TIME,
    TABLE_CONFLICT,
    UNKNOWN_RESERVATION,
    RESERVATION_NOT_ACTIVE,
    TOO_EARLY,
    TABLE_BUSY,
    UNKNOWN_PARTY,
    NOT_WAITING,
    NOT_SEATED,
    TABLE_TOO_SMALL,
)


@dataclass(frozen=True)
class Rejected:
    code: str

    def __str__(self) -> str:
        return f"error: {self.code}"
