"""The receiver's service layer: partner webhooks and the host tablet's operations.

Between HTTP and the service days. Every accepted change is appended (durably) before a
reply exists; a webhook's reply is stored with the change it made, so a retried delivery
gets the same reply and acts once. A partner only ever sees its own reservations.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine import Rejected
from engine.errors import TABLE_BUSY, UNKNOWN_RESERVATION
from engine.holds import Reservation, ReservationStatus
from engine.stand import Result
from feed.clock import parse_instant, real_now
from feed.service import replies
from feed.service.days import (
    BOOKING_SCOPE,
    NOT_A_SLOT,
    Applied,
    DayBook,
    Refused,
    new_booking_id,
)
from feed.service.events import Events
from feed.service.notify import Notifier
from feed.service.replies import Reply, error_body, problem
from feed.service.signing import SignatureError, verify
from feed.settings import Partner, Settings
from feed.venue import calendar
from feed.venue.restaurant import Restaurant
from store.log import DuplicateKey, LogStore, Remember

# -- webhook payloads (pydantic at the edge) ------------------------------------------------


class _Lenient(BaseModel):
    # Partners add fields over time; unknown ones are ignored, known ones are strict.
    model_config = ConfigDict(extra="ignore", strict=True)


class WebhookEvent(_Lenient):
    id: str = Field(min_length=1, max_length=200)
    type: Literal["reservation.requested", "reservation.checked_in", "reservation.cancelled"]
    merchant_id: str = Field(min_length=1, max_length=200)
    data: dict[str, Any]


class RequestedData(_Lenient):
    party_size: int = Field(ge=1, le=20)
    start: str | int
    reservation_id: str | None = Field(default=None, max_length=200)
    name: str = Field(default="", max_length=200)
    phone: str = Field(default="", max_length=50)
    email: str = Field(default="", max_length=200)


class ReservationRef(_Lenient):
    reservation_id: str = Field(min_length=1, max_length=200)


def parse_start(value: str | int) -> datetime:
    """ISO-8601 with an offset, or Unix seconds (as a number or a string of digits)."""
    if isinstance(value, int) or value.isdigit():
        seconds = int(value)
        if not 0 <= seconds < 10**11:  # seconds, not milliseconds, and inside datetime's range
            raise ValueError(f"{seconds} is not a plausible Unix time in seconds")
        return datetime.fromtimestamp(seconds, UTC)
    if not any(c in value[10:] for c in "+-Z"):
        raise ValueError("start needs a UTC offset, e.g. 2026-12-05T19:00:00+00:00")
    return parse_instant(value)


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "body"
    return f"{where}: {first['msg']}"


READS = ("board", "quote")  # host operations that only read the day

_WORDS = {
    "table busy": "somebody sits at {unit}",
    "table too small": "{unit} is too small for that party",
    "unknown table": "{unit} is not a table or combination here",
    "unknown party": "there is no party {party} today",
    "not waiting": "{party} is not waiting (seated, gone or done)",
    "not seated": "{party} is not sitting at a table",
    "reservation not active": "{party} is not booked any more",
}


def _in_words(code: str, party: str, args: tuple[Any, ...]) -> str:
    unit = str(args[0]) if args else ""
    return _WORDS.get(code, code).format(unit=unit, party=party)


def _next(r: Restaurant, now: datetime) -> str:
    """ "; the next service opens at ..." in the restaurant's local time, or nothing."""
    opening = calendar.next_opening(r, now)
    if opening is None:
        return ""
    local = opening.astimezone(r.tz)
    same_day = local.date() == now.astimezone(r.tz).date()
    when = local.strftime("%H:%M") if same_day else local.strftime("%A %Y-%m-%d %H:%M")
    return f"; the next service opens at {when}"


def _status(reservation: Reservation) -> str:
    """A reservation's state in the host's words: booked, arrived, seated, no-show, cancelled."""
    if reservation.status is ReservationStatus.BOOKED and reservation.arrived:
        return "arrived"
    return str(reservation.status).replace("_", "-")


def unit_tables(unit: str) -> list[str]:
    return unit.split("+")


class Receiver:
    """What the HTTP server calls; it holds the restaurants' service days."""

    def __init__(
        self,
        restaurants: Sequence[Restaurant],
        store: LogStore,
        settings: Settings,
        clock: Callable[[], datetime] = real_now,
        notifier: Notifier | None = None,
        events: Events | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.events = events or Events()
        self.books = {r.merchant_id: DayBook(store, r, notifier, self.events) for r in restaurants}

    # -- partner webhooks -----------------------------------------------------------------

    def webhook(self, partner_id: str, signature: str | None, body: bytes) -> Reply:
        now = self.clock()
        partner = self.settings.partners.get(partner_id)
        if partner is None or partner.secret is None:
            self.events.signature_refused(partner_id, "unknown partner")
            return problem(replies.UNAUTHORIZED, "unknown partner or bad signature")
        try:
            verify(signature, body, partner.secret, now.timestamp())
        except SignatureError as exc:
            self.events.signature_refused(partner_id, str(exc))
            return problem(replies.UNAUTHORIZED, "unknown partner or bad signature")
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return problem(replies.BAD_JSON, f"body is not JSON: {exc}")
        try:
            event = WebhookEvent.model_validate(payload)
        except ValidationError as exc:
            return problem(replies.INVALID_REQUEST, _first_error(exc))
        digest = hashlib.sha256(body).hexdigest()
        scope = f"event:{partner.id}"
        stored = self.store.recall(scope, event.id)
        if stored is not None:
            return self._replay(stored, digest)

        def record(reply: Reply) -> Remember:
            return (scope, event.id, {"digest": digest, "body": reply.body})

        try:
            reply, committed = self._handle(partner, event, now, record)
        except DuplicateKey as dup:
            if dup.scope == scope:  # a concurrent delivery of the same event got there first
                return self._replay(dup.value, digest)
            raise
        if not committed:
            # A refusal changed nothing; it is stored so a retry gets the same answer.
            return self._replay(self.store.remember(*record(reply)), digest)
        return reply

    @staticmethod
    def _replay(stored: Any, digest: str) -> Reply:
        if stored.get("digest") != digest:
            return problem(replies.EVENT_ID_REUSED, "this event id was used with another body")
        return Reply(dict(stored["body"]))

    def _handle(
        self,
        partner: Partner,
        event: WebhookEvent,
        now: datetime,
        record: Callable[[Reply], Remember],
    ) -> tuple[Reply, bool]:
        """The reply and whether it was committed along with a change."""
        book = self.books.get(event.merchant_id)
        if book is None or not partner.may_use(event.merchant_id):
            return problem(replies.UNKNOWN_MERCHANT, f"no merchant {event.merchant_id}"), False
        try:
            if event.type == "reservation.requested":
                data = RequestedData.model_validate(event.data)
                start = parse_start(data.start)
            else:
                ref = ReservationRef.model_validate(event.data)
        except ValidationError as exc:
            return problem(replies.INVALID_REQUEST, "data." + _first_error(exc)), False
        except ValueError as exc:
            return problem(replies.INVALID_REQUEST, f"data.start: {exc}"), False
        if event.type == "reservation.requested":
            meta = {
                "source": "partner",
                "partner": partner.id,
                "partner_reservation_id": data.reservation_id,
                "name": data.name,
                "phone": data.phone,
                "email": data.email,
                "event_id": event.id,
            }
            return self._book(book, start, data.party_size, now, meta, record)
        name = "check_in" if event.type == "reservation.checked_in" else "cancel"
        return self._change(book, ref.reservation_id, name, now, partner.id, record)

    def _book(
        self,
        book: DayBook,
        start: datetime,
        party_size: int,
        now: datetime,
        meta: dict[str, Any],
        record: Callable[[Reply], Remember] | None,
    ) -> tuple[Reply, bool]:
        r = book.restaurant
        found = calendar.slot_at(r, start)
        if found is None:
            return problem(NOT_A_SLOT, f"{start.isoformat()} is not a slot at {r.name}"), False
        day, slot = found
        booking_id = new_booking_id()

        def reply_for(operation: list[Any]) -> Reply:
            unit = str(operation[3])
            return Reply(
                {
                    "reservation_id": booking_id,
                    "merchant_id": r.merchant_id,
                    "status": "booked",
                    "unit": unit,
                    "tables": unit_tables(unit),
                    "party_size": party_size,
                    "start": slot.local.isoformat(),
                    "start_sec": slot.start_sec,
                },
            )

        def remember(operation: list[Any], _result: Result) -> list[Remember]:
            return [record(reply_for(operation))] if record is not None else []

        outcome = book.book(day, slot, party_size, now, meta, booking_id, remember)
        if isinstance(outcome, Refused):
            return problem(outcome.code, outcome.message), False
        if outcome.rejected is not None:  # availability chose a unit the engine refused: a bug
            code = outcome.rejected.code
            return problem(code, f"the engine refused the booking: {code}"), False
        return reply_for(outcome.operation), True

    def _change(
        self,
        book: DayBook,
        reservation_id: str,
        name: str,
        now: datetime,
        partner_id: str | None,
        record: Callable[[Reply], Remember] | None,
    ) -> tuple[Reply, bool]:
        """check_in or cancel of a booking we gave out (a partner's own ones only)."""
        index = self.store.recall(BOOKING_SCOPE, reservation_id)
        if (
            not isinstance(index, dict)
            or index.get("merchant_id") != book.restaurant.merchant_id
            or (partner_id is not None and index.get("partner") != partner_id)
        ):
            return problem(UNKNOWN_RESERVATION, f"no reservation {reservation_id}"), False
        day = date.fromisoformat(str(index["day"]))

        def reply_for(result: Result) -> Reply:
            body: dict[str, Any] = {"reservation_id": reservation_id}
            if name == "check_in":
                body.update(status="seated", tables=unit_tables(str(result).split(" ", 1)[1]))
            else:
                body.update(status="cancelled", seated=result)
            return Reply(body)

        def remember(_operation: list[Any], result: Result) -> list[Remember]:
            return [record(reply_for(result))] if record is not None else []

        engine_id = str(index.get("reservation_id", reservation_id))  # moved: a new engine id
        # Who asked is logged: a partner is not notified of its own cancellation.
        meta = {"source": "partner", "partner": partner_id} if partner_id else {"source": "host"}
        outcome = book.operate(
            day, now, name, engine_id, meta=meta, remember=remember, keep_rejected=False
        )
        if isinstance(outcome, Refused):
            return problem(outcome.code, outcome.message), False
        if isinstance(outcome.result, Rejected):
            code = outcome.result.code
            if name == "check_in" and code == TABLE_BUSY:
                return self._arrived_at_a_busy_table(book, day, engine_id, now, meta, record)
            return problem(code, f"{name} refused: {code}"), False
        return reply_for(outcome.result), True

    def _arrived_at_a_busy_table(
        self,
        book: DayBook,
        day: date,
        engine_id: str,
        now: datetime,
        meta: dict[str, Any],
        record: Callable[[Reply], Remember] | None,
    ) -> tuple[Reply, bool]:
        """The guests are here but somebody still sits at their table: they are marked
        arrived (never a no-show while they wait at the door) and told what fits now."""
        size = book.details(day, engine_id).get("party_size")
        res = book.stand(day).book.get(engine_id)
        unit = res.unit if res is not None else "?"

        def busy_reply() -> Reply:
            free = book.free_units(day, size if isinstance(size, int) else None)
            message = f"{unit} is still taken: the guests are marked arrived; " + (
                f"free now for them: {', '.join(free)}" if free else "no table fits them now"
            )
            body = error_body(TABLE_BUSY, message)
            body["error"].update(arrived=True, free_units=free, unit=unit)
            return Reply(body)

        def remember(_operation: list[Any], _result: Result) -> list[Remember]:
            return [record(busy_reply())] if record is not None else []

        arrive = book.operate(
            day, now, "arrive", engine_id, meta=meta, remember=remember, keep_rejected=False
        )
        committed = isinstance(arrive, Applied) and not isinstance(arrive.result, Rejected)
        return busy_reply(), committed

    def _resolve(self, book: DayBook, any_id: str, now: datetime) -> tuple[date, str] | None:
        """The day and engine id of a booking id we gave out, or of a party on today's log."""
        index = self.store.recall(BOOKING_SCOPE, any_id)
        if isinstance(index, dict) and index.get("merchant_id") == book.restaurant.merchant_id:
            return date.fromisoformat(str(index["day"])), str(index.get("reservation_id", any_id))
        day = self.today(book.restaurant, now)
        return None if day is None else (day, any_id)

    def host_hand(self, merchant_id: str, name: str, party_id: str, *args: Any) -> Reply:
        """The host's own hand on the tables: `seat` a waiting party or a booked
        reservation at a unit, `move` a seated party, mark a reservation `arrive`d."""
        book = self.books.get(merchant_id)
        if book is None:
            return problem(replies.UNKNOWN_MERCHANT, f"no merchant {merchant_id}")
        now = self.clock()
        found = self._resolve(book, party_id, now)
        if found is None:
            r = book.restaurant
            return problem(replies.NO_SERVICE_TODAY, f"{r.name} is closed today{_next(r, now)}")
        day, engine_id = found
        outcome = book.operate(
            day, now, name, engine_id, *args, meta={"source": "host"}, keep_rejected=False
        )
        if isinstance(outcome, Refused):
            return problem(outcome.code, outcome.message)
        if isinstance(outcome.result, Rejected):
            code = outcome.result.code
            return problem(code, f"{name} refused: {_in_words(code, party_id, args)}")
        return Reply({"operation": outcome.operation, "result": outcome.result})

    # -- the host tablet ------------------------------------------------------------------

    def host_authorized(self, merchant_id: str, token: str | None) -> bool:
        expected = self.settings.host_tokens.get(merchant_id)
        if expected is None or token is None:
            return False
        return hmac.compare_digest(expected.encode(), token.encode())

    def today(self, r: Restaurant, now: datetime) -> date | None:
        """The service day the host is working: the one running, or today's if it is open."""
        running = calendar.service_day_of(r, now)
        if running is not None:
            return running
        local = now.astimezone(r.tz).date()
        return local if calendar.opening_instant(r, local) is not None else None

    def host_operation(
        self, merchant_id: str, name: str, *args: Any, meta: dict[str, Any] | None = None
    ) -> Reply:
        """One engine operation on today's log; its result, or the engine's refusal."""
        book = self.books.get(merchant_id)
        if book is None:
            return problem(replies.UNKNOWN_MERCHANT, f"no merchant {merchant_id}")
        now = self.clock()
        if name in ("check_in", "cancel"):  # on the booking's own day, whatever today is
            reply, _ = self._change(book, str(args[0]), name, now, None, None)
            return reply
        r = book.restaurant
        day = self.today(r, now)
        if day is None:
            return problem(replies.NO_SERVICE_TODAY, f"{r.name} is closed today{_next(r, now)}")
        if name in READS:  # reading the day never writes the log
            read = book.view(day, now, name, *args)
            if isinstance(read.result, Rejected):
                return problem(read.result.code, f"{name} refused: {read.result.code}")
            return Reply({"operation": read.operation, "result": read.result})
        if name == "walk_in" and calendar.in_service(r, now) is None:
            # Walk-ins are taken only while a service is open (PRODUCT.md 3).
            return problem(replies.NO_SERVICE_NOW, f"{r.name} is not serving now{_next(r, now)}")
        outcome = book.operate(day, now, name, *args, meta=meta, keep_rejected=False)
        if isinstance(outcome, Refused):
            return problem(outcome.code, outcome.message)
        if isinstance(outcome.result, Rejected):
            return problem(outcome.result.code, f"{name} refused: {outcome.result.code}")
        return Reply({"operation": outcome.operation, "result": outcome.result})

    def host_book(
        self, merchant_id: str, party_size: int, start: str, name: str, phone: str
    ) -> Reply:
        """A phone reservation: a local "YYYY-MM-DDTHH:MM" or an instant with an offset."""
        book = self.books.get(merchant_id)
        if book is None:
            return problem(replies.UNKNOWN_MERCHANT, f"no merchant {merchant_id}")
        try:
            when = datetime.fromisoformat(start)
        except ValueError:
            return problem(replies.INVALID_REQUEST, f"start: {start!r} is not ISO-8601")
        meta = {"source": "host", "name": name, "phone": phone}
        reply, _ = self._book(book, when, party_size, self.clock(), meta, None)
        return reply

    def host_reservations(self, merchant_id: str, day: date | None) -> Reply:
        book = self.books.get(merchant_id)
        if book is None:
            return problem(replies.UNKNOWN_MERCHANT, f"no merchant {merchant_id}")
        r = book.restaurant
        day = day or self.today(r, self.clock()) or self.clock().astimezone(r.tz).date()
        opening = calendar.opening_instant(r, day)
        rows = []
        if opening is not None:
            stand = book.stand(day)
            sits = {s.party_id: "+".join(s.tables) for s in stand.sittings()}
            for reservation, details in sorted(book.reservations(day), key=lambda x: x[0].at):
                local = (opening + timedelta(minutes=reservation.at)).astimezone(r.tz)
                rows.append(
                    {
                        "reservation_id": str(details.get("booking_id", reservation.id)),
                        "unit": reservation.unit,
                        "tables": list(reservation.tables),
                        "start": local.isoformat(),
                        "status": _status(reservation),
                        "party_size": details.get("party_size"),
                        "name": str(details.get("name", "")),
                        "phone": str(details.get("phone", "")),
                        "notes": str(details.get("notes", details.get("additional_request", ""))),
                        "source": str(details.get("source", "")),
                        "seated_at": sits.get(reservation.id),
                    }
                )
        return Reply({"merchant_id": merchant_id, "day": day.isoformat(), "reservations": rows})
