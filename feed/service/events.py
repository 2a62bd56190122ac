"""What the service tells whoever runs it: one call per event that matters (a booking or a
cancel, a refused signature, a failed delivery or one made moot, an export, a store that
stayed busy).

Each event is one log line with its fields, then handed to the listeners (the server's
metrics). Fields are ids, codes and counts only: never a secret, a token, a signature or a
guest's name, phone or email. The request an event happens in (its id, the path it came
by, the partner or merchant) is in a context variable the HTTP edge sets; outside a
request, a booking is the command line's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from contextvars import ContextVar, Token
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger("hoststand.events")

WEBHOOK, V3, HOST, CLI = "webhook", "v3", "host", "cli"  # the paths a booking comes by
BOOKED = "booked"
CANCELLED = "cancelled"


@dataclass
class RequestContext:
    """What one request is known to be so far; the edge logs it when the request ends."""

    path: str  # WEBHOOK, V3, HOST, or "other"
    request_id: str = ""
    partner: str | None = None
    merchant: str | None = None
    busy: str | None = None  # why the store was too busy to answer, if it was


_current: ContextVar[RequestContext | None] = ContextVar("hoststand_request", default=None)


def begin(context: RequestContext) -> Token[RequestContext | None]:
    return _current.set(context)


def end(token: Token[RequestContext | None]) -> None:
    _current.reset(token)


def current() -> RequestContext | None:
    return _current.get()


def note_partner(partner_id: str) -> None:
    """The request's caller turned out to be this partner (its credentials checked)."""
    context = _current.get()
    if context is not None:
        context.partner = partner_id


def note_busy(error: Exception) -> None:
    """The request is being answered 503: the store stayed locked or unavailable."""
    context = _current.get()
    if context is not None:
        context.busy = f"{type(error).__name__}: {error}"


def emit(logger: logging.Logger, level: int, event: str, **fields: Any) -> None:
    """One log line: `event` and its fields (the request's id added when there is one)."""
    if not logger.isEnabledFor(level):
        return
    context = _current.get()
    if context is not None and context.request_id:
        fields["request_id"] = context.request_id
    logger.log(level, event, extra={"fields": fields})


def utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


class Listener:
    """Told of every event; each method does nothing until a subclass says otherwise."""

    def booking(self, action: str, path: str, outcome: str) -> None:
        """`action` is book, cancel or move; `outcome` BOOKED/CANCELLED or a refusal code."""

    def conflict(self) -> None:
        """Another writer appended first; the day is re-read and the operation retried."""

    def store_unavailable(self, where: str) -> None: ...

    def signature_refused(self, partner: str) -> None: ...

    def delivery_failed(self, partner: str, dead: bool) -> None: ...

    def delivery_moot(self, partner: str, messages: int) -> None:
        """Messages not sent as no server served their restaurant (not failures: no
        request was made, and nothing is lost if the restaurant is served again)."""

    def exported(self, outcome: str, seconds: float, entries: int) -> None: ...

    def retained(self, removed: dict[str, int]) -> None:
        """A retention pass removed these many records, by kind (store.retention)."""


class Events:
    """Logs each event and tells the listeners."""

    def __init__(self, listeners: Iterable[Listener] = ()) -> None:
        self.listeners = list(listeners)

    def booking(self, action: str, merchant: str, booking_id: str, outcome: str) -> None:
        context = _current.get()
        path = context.path if context is not None else CLI
        if context is not None:
            context.merchant = merchant
        level = logging.INFO if outcome in (BOOKED, CANCELLED) else logging.WARNING
        emit(
            log,
            level,
            action,
            merchant=merchant,
            booking_id=booking_id,
            path=path,
            outcome=outcome,
        )
        for listener in self.listeners:
            listener.booking(action, path, outcome)

    def conflict(self, merchant: str) -> None:
        emit(log, logging.DEBUG, "conflict_retry", merchant=merchant)
        for listener in self.listeners:
            listener.conflict()

    def store_unavailable(self, where: str, error: str) -> None:
        emit(log, logging.ERROR, "store_unavailable", where=where, error=error)
        for listener in self.listeners:
            listener.store_unavailable(where)

    def signature_refused(self, partner: str, reason: str) -> None:
        emit(log, logging.WARNING, "signature_refused", partner=partner, reason=reason)
        for listener in self.listeners:
            listener.signature_refused(partner)

    def delivery_failed(
        self,
        partner: str,
        kind: str,
        key: str,
        message_ids: list[int],
        attempts: int,
        error: str,
        retry_at: float | None,
    ) -> None:
        """A request to a partner failed; `retry_at` None: given up, the messages are dead."""
        fields: dict[str, Any] = {
            "partner": partner,
            "kind": kind,
            "key": key,
            "message_ids": message_ids,
            "attempts": attempts,
            "error": error,
        }
        if retry_at is None:
            emit(log, logging.ERROR, "delivery_dead", **fields)
        else:
            emit(log, logging.WARNING, "delivery_failed", **fields, next_retry=utc(retry_at))
        for listener in self.listeners:
            listener.delivery_failed(partner, retry_at is None)

    def delivery_moot(
        self, partner: str, merchant: str, days: list[str], message_ids: list[int], reason: str
    ) -> None:
        """Replaces of `merchant`'s `days` not sent to `partner`, as no server served the
        restaurant: a warning, not the error a dead delivery is (a rolling restart does it
        to each restaurant in turn, and its first server back tells partners of the days)."""
        emit(
            log,
            logging.WARNING,
            "delivery_moot",
            partner=partner,
            merchant=merchant,
            days=days,
            message_ids=message_ids,
            reason=reason,
        )
        for listener in self.listeners:
            listener.delivery_moot(partner, len(message_ids))

    def moot_retold(self, merchant: str, days: list[str]) -> None:
        """A server serving `merchant` again has told partners of `days` as they now stand
        (what `delivery_moot` left untold); past days, over, are not told."""
        emit(log, logging.INFO, "moot_retold", merchant=merchant, days=days)

    def exported(
        self, outcome: str, seconds: float, entries: int, files: int, size: int, error: str = ""
    ) -> None:
        level = logging.INFO if outcome == "delivered" else logging.ERROR
        fields: dict[str, Any] = {"outcome": outcome, "seconds": round(seconds, 3)}
        fields.update(entries=entries, files=files, bytes=size)
        if error:
            fields["error"] = error
        emit(log, level, "export", **fields)
        for listener in self.listeners:
            listener.exported(outcome, seconds, entries)

    def retained(self, removed: dict[str, int], keep_days: int) -> None:
        """A retention pass (store.retention): how many records of each kind it removed,
        kept `keep_days` days past the moment they answer for."""
        emit(
            log,
            logging.INFO,
            "retention",
            removed=sum(removed.values()),
            keep_days=keep_days,
            **{f"removed_{kind}": n for kind, n in sorted(removed.items())},
        )
        for listener in self.listeners:
            listener.retained(removed)
