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
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from engine import FloorPlan, Rejected
from engine.config import HOLD_BEFORE_MINUTES
from engine.errors import (
    NOT_SEATED,
    NOT_WAITING,
    RESERVATION_NOT_ACTIVE,
    TABLE_BUSY,
    TOO_EARLY,
    UNKNOWN_PARTY,
    UNKNOWN_RESERVATION,
)
from engine.holds import ReservationStatus
from engine.stand import Result, unit_name
from feed.clock import check_day, parse_instant, real_now
from feed.service import bodies, replies
from feed.service.attention import Attention, Misfit, marked, still_standing
from feed.service.days import (
    BAD_PARTY_SIZE,
    BOOKING_SCOPE,
    LOOKUPS,
    NOT_A_SLOT,
    SLOT_UNAVAILABLE,
    TABLE_REMOVED,
    DayBook,
    Refused,
    index_on,
    json_result,
    kept_room,
    new_booking_id,
)
from feed.service.events import Events
from feed.service.floorview import reservation_rows, status_word
from feed.service.notify import Notifier
from feed.service.replies import Reply, changed_meanwhile, error_body, problem
from feed.service.rules import online_sizes
from feed.service.signing import SignatureError, UnusableSignature, usable_timestamp, verify
from feed.settings import Partner, Settings
from feed.venue import calendar
from feed.venue.restaurant import Restaurant
from feed.venue.telephone import diallable
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


def _telephone(value: str) -> str:
    """A guest's phone (or none), kept as written once it is known the host can dial it."""
    if value:
        diallable(value)
    return value


class RequestedData(_Lenient):
    # Bounded by the restaurant (rules.online_sizes), not here: "greater than or equal to
    # 1" and "less than or equal to 20" named neither end of the sizes it takes.
    party_size: int
    start: str | int
    reservation_id: str | None = Field(default=None, max_length=200)
    name: str = Field(default="", max_length=200)
    # The number the host calls the guest on, from a partner: digits the host can dial
    # (`telephone.diallable`: a national number too, which the restaurant's phone dials; an
    # international one in E.164 form); "call me" was taken and shown to the host as the
    # guest's phone. Kept as written. Looser than v3's telephone (E.164, the partner
    # format's rule): this webhook took any phone until now, and a partner's booking is not
    # refused for a good national number. (The host's own phone bookings stay free text:
    # the host writes what it will dial itself.)
    phone: Annotated[str, AfterValidator(_telephone)] = Field(default="", max_length=50)
    email: str = Field(default="", max_length=200)
    notes: str = Field(default="", max_length=1000, description="The guest's request")
    room_id: str | None = Field(
        default=None, max_length=200, description="Book within this seating area (issue #14)"
    )


class ReservationRef(_Lenient):
    reservation_id: str = Field(min_length=1, max_length=200)


def parse_start(value: str | int) -> datetime:
    """ISO-8601 with an offset, or Unix seconds (as a number or a string of digits)."""
    if isinstance(value, int) or (value.isascii() and value.isdigit()):
        seconds = int(value)
        if not 0 <= seconds < 10**11:  # seconds, not milliseconds, and inside datetime's range
            raise ValueError(f"{seconds} is not a plausible Unix time in seconds")
        return datetime.fromtimestamp(seconds, UTC)
    example = "2026-12-05T19:00:00+00:00"
    try:
        naive = datetime.fromisoformat(value.replace("Z", "+00:00")).tzinfo is None
    except ValueError:
        raise ValueError(
            f"{value[:40]!r} is neither an ISO-8601 time with a UTC offset (e.g. {example})"
            " nor Unix seconds"
        ) from None
    if naive:
        raise ValueError(f"start needs a UTC offset, e.g. {example}")
    return parse_instant(value)


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "body"
    return f"{where}: {first['msg']}"


READS = ("board", "quote")  # host operations that only read the day
# A partner's own reservation ids (a webhook's data.reservation_id), per partner: keyed
# "<merchant>/<reservation id>", each the booking it made (see Receiver._book_once).
PARTNER_RESERVATIONS = "partnerres"

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


def _why_not_active(book: DayBook, day: date, engine_id: str, now: datetime) -> str:
    """Why a reservation is no longer active, in the host's words: seated, a no-show (by
    now, written or not) or cancelled."""
    res = book.stand(day).book.get(engine_id)
    if res is None:
        return "it is not booked"
    if res.status is ReservationStatus.SEATED:
        return "the guests are already seated"
    if res.no_show_by(book.minute(day, now)) and book.closed_since(day):
        return "it was cancelled"  # the clock cancels it, never a no-show (cancel_closed)
    if res.status is ReservationStatus.NO_SHOW or res.no_show_by(book.minute(day, now)):
        return "it became a no-show"
    if res.status is ReservationStatus.CANCELLED:
        return "it was cancelled"
    return "it is still booked"  # active after all (a change raced this one)


# Refusals a booking changed meanwhile may cause (its engine reservation was cancelled when
# it was booked again): the booking is looked up again, at most LOOKUPS times in all. Still
# overtaken at the last, the answer says it kept changing (retry): a refusal then would be
# about a copy of the booking since replaced ("it was cancelled"), untrue of the booking.
OVERTAKEN = frozenset(
    (RESERVATION_NOT_ACTIVE, UNKNOWN_RESERVATION, NOT_WAITING, UNKNOWN_PARTY, NOT_SEATED)
)


def _held_from(book: DayBook, day: date, engine_id: str) -> str:
    """When a booking checked in too early (on its own day) is due and its check-in opens:
    "too early" alone left a partner (or the host at the door) to work out when to try
    again. The hold, and with it the check-in, starts HOLD_BEFORE_MINUTES before."""
    reservation = book.stand(day).book.get(engine_id)
    opening = calendar.opening_instant(book.restaurant, day)
    if reservation is None or opening is None:
        return "the booking's table is not held yet"
    due = opening + timedelta(minutes=reservation.at)
    opens = due - timedelta(minutes=HOLD_BEFORE_MINUTES)
    tz = book.restaurant.tz
    return (
        f"the booking is at {due.astimezone(tz):%H:%M} ({tz.key}); check-in opens at"
        f" {opens.astimezone(tz):%H:%M}, {HOLD_BEFORE_MINUTES} minutes before"
    )


def _where(index: Any) -> tuple[Any, Any] | None:
    """The day and engine reservation a booking's index points at (None: no index)."""
    return (index.get("day"), index.get("reservation_id")) if isinstance(index, dict) else None


K = TypeVar("K")  # what a booking is looked up as: its index, or its day and engine id


def _redo_overtaken(
    seen: K,
    read: Callable[[], K | None],
    attempt: Callable[[K], tuple[Reply, bool]],
    where: Callable[[K], Any],
    booking_id: str,
    what: str,
) -> tuple[Reply, bool]:
    """`attempt` on the booking as `seen`; a refusal a change made meanwhile may cause
    (OVERTAKEN) is tried again on the booking `read` afresh when it points elsewhere since,
    LOOKUPS times in all. A refusal of the booking as it stands is the answer; still
    overtaken at the last, the answer says it kept changing (`changed_meanwhile`)."""
    for _ in range(LOOKUPS):
        reply, committed = attempt(seen)
        if committed or reply.code not in OVERTAKEN:
            return reply, committed
        fresh = read()
        if fresh is None or where(fresh) == where(seen):
            return reply, committed  # refused as the booking stands: the answer
        seen = fresh
    return changed_meanwhile(booking_id, what), False


def _next(r: Restaurant, now: datetime) -> str:
    """ "; the next service opens at ..." in the restaurant's local time, or nothing."""
    opening = calendar.next_opening(r, now)
    if opening is None:
        return ""
    local = opening.astimezone(r.tz)
    same_day = local.date() == now.astimezone(r.tz).date()
    when = local.strftime("%H:%M") if same_day else local.strftime("%A %Y-%m-%d %H:%M")
    return f"; the next service opens at {when}"


def _public_board(book: DayBook, day: date, board: Any) -> Any:
    """The board with each booking under the id we gave out: a booking that was moved is
    another reservation in the engine ("bk-....1"), never shown as such."""
    if not isinstance(board, dict):
        return board

    moved = book.booking_ids(day)

    def public(value: str) -> str:
        prefix = "held:" if value.startswith("held:") else ""
        engine_id = value[len(prefix) :]
        return prefix + moved[engine_id] if engine_id in moved else value

    tables = {t: (v if v == "free" else public(v)) for t, v in board.get("tables", {}).items()}
    return {**board, "tables": tables, "waiting": [public(p) for p in board.get("waiting", [])]}


def _busy(
    book: DayBook,
    day: date,
    engine_id: str,
    now: datetime,
    size: Any,
    unit: str,
    area: str | None,
    taken: bool = True,
) -> Reply:
    """The answer to a check-in whose table was taken: the guests are marked arrived, and
    the tables that fit them at `now` (in `area`, the room they booked, when they named
    one). `taken`: somebody still sits at `unit` (always so when the check-in is made; a
    retry of it may come once the table is free again)."""
    n = size if isinstance(size, int) else None
    free = book.free_units(day, n, now, engine_id, area)
    # A free table another booking is due at before these guests would finish is that
    # booking's (protect_reservations): said apart, with its time. "free now for them: T4,
    # T6" sent the host to Tanaka's and Moreau's tables while Seat… drew both as booked
    # before they would finish.
    due = book.booked_before_done(day, free, n, now, engine_id)
    clear = [u for u in free if u not in due]
    booked = [{"unit": u, "at": due[u][1], "in_minutes": due[u][0]} for u in free if u in due]
    parts = [f"free now for them: {', '.join(clear)}"] if clear else []
    if booked:
        if not clear:
            parts.append("no table is free for them clear of other bookings")
        later = ", ".join(f"{b['unit']} at {b['at']}" for b in booked)
        parts.append(f"free but booked before they would finish: {later}")
    said = (
        f"{unit} is still taken: the guests are marked arrived"
        if taken
        else f"{unit} was taken when they checked in: the guests are marked arrived and wait"
        " for the host to seat them"
    )
    message = f"{said}; " + ("; ".join(parts) or "no table fits them now")
    body = error_body(TABLE_BUSY, message)
    body["error"].update(
        arrived=True, free_units=free, unit=unit, clear_units=clear, booked_units=booked
    )
    return Reply(body)


# A host write's Idempotency-Key and what was asked with it (the route's arguments as the
# client gave them): the same key with another request is refused, not replayed.
HostKey = tuple[str, Any]


def unit_tables(unit: str) -> list[str]:
    return unit.split("+")


# Refusals of an event not kept against its id: what is wrong is its data, or which
# restaurant it names, not what the restaurant could do at that moment.
_NOT_KEPT = frozenset({replies.INVALID_REQUEST, replies.UNKNOWN_MERCHANT})


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
        self.attention = Attention()  # bookings a reload left outside the rules (config_reload)

    # -- partner webhooks -----------------------------------------------------------------

    def webhook(self, partner_id: str, signature: str | None, body: bytes) -> Reply:
        now = self.clock()
        try:
            # What is wrong with the header itself is said, before the partner is looked
            # up (so it says nothing of which partners exist); a wrong partner or MAC is not.
            usable_timestamp(signature, now.timestamp())
        except UnusableSignature as exc:
            self.events.signature_refused(partner_id, str(exc))
            return problem(replies.UNAUTHORIZED, str(exc))
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
            payload = bodies.loads(body)
        except bodies.BadBody as exc:
            return problem(replies.BAD_JSON, f"body is {exc}")
        try:
            event = WebhookEvent.model_validate(payload)
        except ValidationError as exc:
            return problem(replies.INVALID_REQUEST, _first_error(exc))
        digest = hashlib.sha256(body).hexdigest()
        scope = f"event:{partner.id}"
        stored = self.store.recall(scope, event.id)
        if stored is not None:
            again = self._replay(stored, digest)
            booking_id = event.data.get("reservation_id")
            if event.type == "reservation.checked_in" and isinstance(booking_id, str):
                again = self._busy_as_it_stands(
                    again, event.merchant_id, booking_id, partner.id, now
                )
            return self._as_it_stands(again, partner)

        def record(reply: Reply) -> Remember:
            # "at": when it was received, so the retention knows how long it may be asked
            # for again (feed.service.retention); a retry is answered from digest and body.
            return (scope, event.id, {"digest": digest, "body": reply.body, "at": now.timestamp()})

        try:
            reply, committed = self._handle(partner, event, now, record)
        except DuplicateKey as dup:
            if dup.scope == scope:  # a concurrent delivery of the same event got there first
                return self._replay(dup.value, digest)
            raise
        if not committed:
            if reply.code == replies.CHANGED_MEANWHILE:
                return reply  # true only now: a retry of the event tries again
            if reply.code == TABLE_REMOVED:
                # True only until this server is reloaded (it runs a floor older than the
                # store's, floors.removed_units): nothing done, and not kept as the event's
                # answer, or every retry would get it and the change would never be made.
                return replies.floor_out_of_date(
                    reply.body["error"]["message"], "send the event again shortly"
                )
            if reply.code in _NOT_KEPT:
                # The event's data is not one we can act on (or names a restaurant this
                # server does not serve): nothing was done, and nothing is kept. Kept, its
                # id was spent on bad input: the partner's corrected event under the same id
                # was refused as "event id reused", and one naming a restaurant a reload
                # added since stayed refused. Sent again unchanged, it is refused again.
                return reply
            # A refusal changed nothing; it is stored so a retry gets the same answer.
            return self._replay(self.store.remember(*record(reply)), digest)
        return reply

    def _as_it_stands(self, reply: Reply, partner: Partner) -> Reply:
        """A stored answer of a booking's ("booked", to a reservation.requested; "seated", to
        a reservation.checked_in), sent again for a retry of its event, with the booking as
        it now stands: its status ("booked", "seated", "no_show", "cancelled"), its tables
        (where its guests sit now, or last sat, once checked in: a host may have moved
        them) and, to a reservation.requested, changed since, its time and size. A partner
        whose first answer was lost sends the event again, maybe minutes later: the stored
        answer said "booked" (or seated) at the first table and time after the restaurant
        had moved or cancelled the booking (and told the partner of it, which did not know
        the booking's id yet), and the partner showed the guest a table no longer theirs.
        (v3's CreateBooking, retried, answers the booking's status now too.) A refusal is
        stored as it stays true: that request did nothing (a check-in's "table busy" did
        something, marked the guests arrived: `_busy_as_it_stands` restates it)."""
        body = reply.body
        if body.get("status") not in ("booked", "seated"):
            return reply  # a refusal, or a cancellation's (final) answer
        booking_id = body.get("reservation_id")
        index = (
            self.store.recall(BOOKING_SCOPE, booking_id) if isinstance(booking_id, str) else None
        )
        if not isinstance(index, dict) or index.get("partner") != partner.id:
            return reply
        book = self.books.get(str(index.get("merchant_id")))
        if book is None:
            return reply
        day = date.fromisoformat(str(index["day"]))
        engine_id = str(index.get("reservation_id", booking_id))
        found = [(res, meta) for res, meta in book.reservations(day) if res.id == engine_id]
        opening = calendar.log_opening(book.restaurant, day)
        if not found or opening is None:
            return reply
        [(reservation, meta)] = found
        party = book.stand(day).parties.get(engine_id)  # checked in: where they sit
        tables = party.tables if party is not None and party.tables else reservation.tables
        now = {"status": reservation.status.value, "tables": list(tables)}
        if "unit" not in body:  # a reservation.checked_in's answer
            return Reply({**body, **now})
        start = opening + timedelta(minutes=reservation.at)
        size = meta.get("party_size")
        return Reply(
            {
                **body,
                **now,
                "unit": unit_name(tables),
                "party_size": size if isinstance(size, int) else body.get("party_size"),
                "start": start.astimezone(book.restaurant.tz).isoformat(),
                "start_sec": int(start.timestamp()),
            }
        )

    def _busy_as_it_stands(
        self,
        reply: Reply,
        merchant_id: str,
        booking_id: str,
        partner_id: str | None,
        now: datetime,
    ) -> Reply:
        """A stored answer to a check-in that found the table taken (TABLE_BUSY, the guests
        marked arrived), sent again for a retry (a partner's event, the host's
        Idempotency-Key), with the booking as it now stands. The partner whose first answer
        was lost sent the event again after the host had seated the guests at T5, got
        "T2 is still taken: the guests are marked arrived" and showed "check-in failed" to
        guests who were eating. Seated since (by the host's Seat…, maybe moved): what a
        check-in that seated them answers, with where they sit (or last sat). Still at the
        door: the busy answer worked out again at `now`. No longer booked: why, as a
        check-in now is refused. (`partner_id` None: the host, who sees every booking.)

        A retry never seats them, even at their own table free again: it is the first
        request's, and that one marked them arrived and left the table to the host (the
        tablet shows them waiting at the door, and the host seats them where it chooses; a
        retry minutes later would take a table the host may be giving to somebody else).
        A new check-in, not a retry of the old one, is a new request, and seats them."""
        error = reply.body.get("error")
        if not (reply.code == TABLE_BUSY and isinstance(error, dict) and error.get("arrived")):
            return reply
        book = self.books.get(merchant_id)
        index = self.store.recall(BOOKING_SCOPE, booking_id)
        if (
            book is None
            or not isinstance(index, dict)
            or index.get("merchant_id") != merchant_id
            or (partner_id is not None and index.get("partner") != partner_id)
        ):
            return reply
        day = date.fromisoformat(str(index["day"]))
        engine_id = str(index.get("reservation_id", booking_id))  # changed: a new engine id
        stand = book.stand(day)
        reservation = stand.book.get(engine_id)
        if reservation is None:
            return reply
        if reservation.status is ReservationStatus.SEATED:
            party = stand.parties.get(engine_id)
            tables = party.tables if party is not None and party.tables else reservation.tables
            return Reply({"reservation_id": booking_id, "status": "seated", "tables": list(tables)})
        if reservation.still_booked and reservation.arrived:
            room = index.get("room_id")
            area = room if isinstance(room, str) else None
            size = book.details(day, engine_id).get("party_size")
            taken = any(stand.occupant.get(t) is not None for t in reservation.tables)
            return _busy(book, day, engine_id, now, size, reservation.unit, area, taken)
        if reservation.still_booked:
            # Changed since to another day, where its guests are not at the door (arrived
            # stays with a change on its own day only): when it is due there, if later.
            later = self._later_day(book, day, engine_id, now, "check_in")
            if later is not None:
                return later
            return problem(
                replies.CHANGED_MEANWHILE,
                f"check_in not done: booking {booking_id} was changed since this check-in was"
                " answered and its guests are not marked arrived now: check it in again (a"
                " new request)",
            )
        why = _why_not_active(book, day, engine_id, now)
        return problem(RESERVATION_NOT_ACTIVE, f"check_in refused: {RESERVATION_NOT_ACTIVE}: {why}")

    @staticmethod
    def _replay(stored: Any, digest: str, reused: str = replies.EVENT_ID_REUSED) -> Reply:
        if stored.get("digest") != digest:
            what = "event id" if reused == replies.EVENT_ID_REUSED else "Idempotency-Key"
            return problem(reused, f"this {what} was used with another request")
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
            r = book.restaurant
            if not 1 <= data.party_size <= r.max_party_size:
                # Above the online limit but within the restaurant's: 409 (they call).
                why = f"data.party_size {online_sizes(r, data.party_size)}"
                return problem(BAD_PARTY_SIZE, why), False
            meta = {
                "source": "partner",
                "partner": partner.id,
                "partner_reservation_id": data.reservation_id,
                "name": data.name,
                "phone": data.phone,
                "email": data.email,
                "notes": data.notes,
                "event_id": event.id,
            }
            # An empty (or blank) reservation_id names no reservation: a partner without
            # ids of its own may send "" for it, and every request of its sharing that id
            # was answered with the first one's booking (or 409), booking nothing.
            if data.reservation_id is None or not data.reservation_id.strip():
                return self._book(book, start, data.party_size, now, meta, record, data.room_id)
            return self._book_once(book, partner, data, start, now, meta, record)
        name = "check_in" if event.type == "reservation.checked_in" else "cancel"
        return self._change(book, ref.reservation_id, name, now, partner.id, record)

    def _book_once(
        self,
        book: DayBook,
        partner: Partner,
        data: RequestedData,
        start: datetime,
        now: datetime,
        meta: dict[str, Any],
        record: Callable[[Reply], Remember],
    ) -> tuple[Reply, bool]:
        """A reservation.requested naming the partner's own `reservation_id`: one booking per
        id. The contract names only the event id as the retry's key, but a partner sending
        its reservation again under a new event id (its retry after a crash, say) is asking
        for the same reservation, not for a second table that would be held for nobody and
        become a no-show: the same request while that booking stands as made gets its
        answer again; another request, or one after the booking changed or ended, is 409
        `reservation id reused` naming our booking (check it in or cancel it by that id)."""
        assert data.reservation_id is not None
        once = (f"{PARTNER_RESERVATIONS}:{partner.id}", f"{book.restaurant.merchant_id}/"
                f"{data.reservation_id}")  # fmt: skip
        asked = (int(start.timestamp()), data.party_size, data.room_id)

        def twin_reply(twin: Any) -> tuple[Reply, bool]:
            return self._twin(book, twin, data.reservation_id or "", asked), False

        twin = self.store.recall(*once)
        if twin is not None:
            return twin_reply(twin)
        try:
            reply, made = self._book(
                book, start, data.party_size, now, meta, record, data.room_id, once=once
            )
        except DuplicateKey as dup:
            if dup.scope != once[0]:
                raise
            return twin_reply(dup.value)  # the same reservation, booked at once elsewhere
        if reply.code == replies.RESERVATION_ID_REUSED:  # booked meanwhile: seen by the write
            twin = self.store.recall(*once)
            if twin is not None:
                return twin_reply(twin)
        return reply, made

    def _twin(
        self, book: DayBook, twin: Any, reservation_id: str, asked: tuple[int, int, str | None]
    ) -> Reply:
        """The answer to a partner's reservation id booked already as `twin` records."""
        booking_id = str(twin.get("booking_id"))
        first = twin.get("reply") or {}
        index = self.store.recall(BOOKING_SCOPE, booking_id)
        as_made = False  # moved (booked again under another engine id), or gone
        if isinstance(index, dict) and index.get("reservation_id") == booking_id:
            stand = book.stand(date.fromisoformat(str(index["day"])))
            reservation = stand.book.get(booking_id)
            as_made = reservation is not None and reservation.status is ReservationStatus.BOOKED
        made = (first.get("start_sec"), first.get("party_size"), twin.get("room_id"))
        if as_made and made == asked:
            return Reply(dict(first))
        why = "for another time, size or room" if as_made else "and changed or ended since"
        return problem(
            replies.RESERVATION_ID_REUSED,
            f"reservation_id {reservation_id!r} is already our booking {booking_id}, made {why}:"
            " check it in or cancel it by that id; another reservation needs another"
            " reservation_id",
        )

    def _book(
        self,
        book: DayBook,
        start: datetime,
        party_size: int,
        now: datetime,
        meta: dict[str, Any],
        record: Callable[[Reply], Remember] | None,
        area: str | None = None,
        *,
        host: bool = False,
        over_pacing: bool = False,
        once: tuple[str, str] | None = None,
    ) -> tuple[Reply, bool]:
        r = book.restaurant
        found = calendar.slot_at(r, start)
        if found is None:
            why = calendar.why_not_a_slot(r, start)
            return problem(
                NOT_A_SLOT, f"{start.isoformat()} is not a slot at {r.name}: {why}"
            ), False
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
            records = [record(reply_for(operation))] if record is not None else []
            if once is not None:  # the partner's reservation id, with the booking it made
                made = {
                    "booking_id": booking_id,
                    "room_id": area,
                    "reply": reply_for(operation).body,
                }
                records.append((*once, made))
            return records

        def check() -> Refused | None:
            # Asked on each attempt of the write: the same reservation booked meanwhile (by
            # another event of it on another receiver) is not booked twice.
            if once is None or self.store.recall(*once) is None:
                return None
            return Refused(replies.RESERVATION_ID_REUSED, "booked meanwhile")

        # The room asked for is indexed as a v3 booking's is: a later UpdateBooking keeps it.
        index = {"room_id": area} if area is not None else None
        outcome = book.book(
            day, slot, party_size, now, meta, booking_id, remember, index, area,
            host=host, over_pacing=over_pacing, check=check,
        )  # fmt: skip
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
        """check_in or cancel of a booking we gave out (a partner's own ones only). A booking
        changed meanwhile (booked again as another engine reservation, maybe on another
        day) is looked up again and the action done to it as it now stands."""

        def read() -> Any:
            return self.store.recall(BOOKING_SCOPE, reservation_id)

        def attempt(index: Any) -> tuple[Reply, bool]:
            if (
                not isinstance(index, dict)
                or index.get("merchant_id") != book.restaurant.merchant_id
                or (partner_id is not None and index.get("partner") != partner_id)
            ):
                return problem(UNKNOWN_RESERVATION, f"no reservation {reservation_id}"), False
            return self._change_once(book, index, reservation_id, name, now, partner_id, record)

        return _redo_overtaken(read(), read, attempt, _where, reservation_id, name)

    def _change_once(
        self,
        book: DayBook,
        index: dict[str, Any],
        reservation_id: str,
        name: str,
        now: datetime,
        partner_id: str | None,
        record: Callable[[Reply], Remember] | None,
    ) -> tuple[Reply, bool]:
        """`_change` on the booking as `index` (just read) has it."""
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
        if name == "check_in":
            early = self._later_day(book, day, engine_id, now, name)
            if early is not None:
                return early, False
        if name == "cancel":
            late = book.cancel_refused(day, engine_id, now, host=partner_id is None)
            if late is not None:
                return problem(late.code, late.message), False
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
                room = index.get("room_id")
                area = room if isinstance(room, str) else None
                return self._arrived_at_a_busy_table(book, day, engine_id, now, meta, record, area)
            if code == RESERVATION_NOT_ACTIVE:
                why = _why_not_active(book, day, engine_id, now)
                return problem(code, f"{name} refused: {code}: {why}"), False
            if code == TOO_EARLY:
                return problem(
                    code, f"{name} refused: {code}: {_held_from(book, day, engine_id)}"
                ), False
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
        area: str | None = None,
    ) -> tuple[Reply, bool]:
        """The guests are here but somebody still sits at their table: they are marked
        arrived (never a no-show while they wait at the door) and told what fits now (in
        `area`, the room they booked, when they named one)."""
        size = book.details(day, engine_id).get("party_size")
        res = book.stand(day).book.get(engine_id)
        unit = res.unit if res is not None else "?"

        def busy_reply() -> Reply:
            return _busy(book, day, engine_id, now, size, unit, area)

        def remember(_operation: list[Any], _result: Result) -> list[Remember]:
            return [record(busy_reply())] if record is not None else []

        arrive = book.operate(
            day, now, "arrive", engine_id, meta=meta, remember=remember, keep_rejected=False
        )
        # Overtaken since the check-in was refused (the sweep wrote it a no-show, say): the
        # guests were not marked arrived, and the answer says what the arrive was told.
        if isinstance(arrive, Refused):
            return problem(arrive.code, arrive.message), False
        if isinstance(arrive.result, Rejected):
            code = arrive.result.code
            said = f"check_in refused: {code}"
            if code == RESERVATION_NOT_ACTIVE:
                said += ": " + _why_not_active(book, day, engine_id, now)
            return problem(code, said), False
        return busy_reply(), True

    def _resolve(self, book: DayBook, any_id: str, now: datetime) -> tuple[date, str] | None:
        """The day and engine id of a booking id we gave out, or of a party on today's log."""
        index = self.store.recall(BOOKING_SCOPE, any_id)
        if isinstance(index, dict) and index.get("merchant_id") == book.restaurant.merchant_id:
            return date.fromisoformat(str(index["day"])), str(index.get("reservation_id", any_id))
        day = self.today(book.restaurant, now)
        return None if day is None else (day, any_id)

    def host_hand(
        self, merchant_id: str, name: str, party_id: str, *args: Any, key: HostKey | None = None
    ) -> Reply:
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
        first: tuple[date, str] = found
        if name in ("seat", "arrive"):
            early = self._later_day(book, *first, now, name)
            if early is not None:
                return early

        def act(record: Callable[[Reply], Remember] | None) -> tuple[Reply, bool]:
            # A booking changed meanwhile (another engine reservation) is looked up again.
            def attempt(where: tuple[date, str]) -> tuple[Reply, bool]:
                day, engine_id = where
                operation = (name, engine_id, *args)

                def sits_in(applied: list[Any]) -> list[Remember]:
                    return self._room_where_seated(book, party_id, engine_id, applied)

                acting = self._operating(
                    book, day, now, operation, {"source": "host"}, party_id, sits_in
                )
                return acting(record)

            def read() -> tuple[date, str] | None:
                return self._resolve(book, party_id, now)

            return _redo_overtaken(first, read, attempt, lambda w: w, party_id, name)

        return self._host_once(merchant_id, name, key, act)

    def _room_where_seated(
        self, book: DayBook, booking_id: str, engine_id: str, applied: list[Any]
    ) -> list[Remember]:
        """The booking index of a booking made in a room (a partner's room_id) that the
        host seats or moves at `applied`'s unit: it names the room the guests now sit in,
        written with the operation. The host's hand may put them anywhere (PRODUCT.md:
        seat and move override), and the partner reading its booking (ListBookings, the
        booking UpdateBooking returns) is never shown a room it is not in, as after a change
        or a reload's re-homing (`index_on`). Nothing is sent: time and size did not change."""
        if applied[:1] not in (["seat"], ["move"]) or len(applied) < 4:
            return []
        index = self.store.recall(BOOKING_SCOPE, booking_id)
        if not (
            isinstance(index, dict)
            and index.get("merchant_id") == book.restaurant.merchant_id
            and index.get("reservation_id", booking_id) == engine_id
        ):
            return []  # a walk-in, or a booking that is another engine reservation now
        now_in = index_on(book.restaurant, index, str(applied[3]))
        return [] if now_in == index else [(BOOKING_SCOPE, booking_id, now_in)]

    def _later_day(
        self, book: DayBook, day: date, engine_id: str, now: datetime, name: str
    ) -> Reply | None:
        """A still-booked reservation of a day later than the one being served is refused
        "too early", with when it is due. The engine lets the host seat or mark arrived a
        booking at any time of its own day; on another day's log it would seat guests now at
        a table the floor shows free, and turn the booking into a visit that never was."""
        r = book.restaurant
        working = self.today(r, now) or now.astimezone(r.tz).date()
        reservation = book.stand(day).book.get(engine_id)
        opening = calendar.opening_instant(r, day)
        if day <= working or reservation is None or opening is None:
            return None
        if not reservation.still_booked:
            return None  # the engine's own refusal (not active) says more
        due = (opening + timedelta(minutes=reservation.at)).astimezone(r.tz)
        when = f"{due:%A %Y-%m-%d %H:%M}"
        return problem(
            TOO_EARLY, f"{name} refused: too early: the booking is for {when}, a later day"
        )

    @staticmethod
    def _operating(
        book: DayBook,
        day: date,
        now: datetime,
        operation: tuple[Any, ...],
        meta: dict[str, Any] | None,
        named: str | None = None,
        also: Callable[[list[Any]], list[Remember]] | None = None,
    ) -> Callable[[Callable[[Reply], Remember] | None], tuple[Reply, bool]]:
        """A host operation as `_host_once` runs it: applied with its reply remembered in
        the same transaction (and `also`'s records written over the stored ones); a refusal
        in words (about `named`, the id the host gave)."""
        name, *args = operation

        def answer(applied: list[Any], result: Result) -> dict[str, Any]:
            # The host sees its own id (a changed booking is another engine reservation).
            if named is not None and args and args[0] != named:
                applied = [named if i == 2 and v == args[0] else v for i, v in enumerate(applied)]
                if isinstance(result, list):
                    mine = f"{args[0]}@"
                    result = [
                        named + "@" + p[len(mine) :] if p.startswith(mine) else p for p in result
                    ]
            return {"operation": applied, "result": json_result(result)}

        def act(record: Callable[[Reply], Remember] | None) -> tuple[Reply, bool]:
            def remember(applied: list[Any], result: Result) -> list[Remember]:
                return [record(Reply(answer(applied, result)))] if record is not None else []

            outcome = book.operate(
                day,
                now,
                name,
                *args,
                meta=meta,
                remember=remember,
                keep_rejected=False,
                put=also,
            )
            if isinstance(outcome, Refused):
                return problem(outcome.code, outcome.message), False
            if isinstance(outcome.result, Rejected):
                code = outcome.result.code
                why = code if named is None else _in_words(code, named, tuple(args[1:]))
                if code == RESERVATION_NOT_ACTIVE and args:
                    why += ": " + _why_not_active(book, day, str(args[0]), now)
                return problem(code, f"{name} refused: {why}"), False
            return Reply(answer(outcome.operation, outcome.result)), True

        return act

    # -- the host tablet ------------------------------------------------------------------

    def floors(self) -> dict[str, FloorPlan]:
        """The floor plan each restaurant runs on here now (a reload changes it)."""
        return {m: book.restaurant.floor for m, book in self.books.items()}

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

    def _host_once(
        self,
        merchant_id: str,
        route: str,
        key: HostKey | None,
        act: Callable[[Callable[[Reply], Remember] | None], tuple[Reply, bool]],
        again: Callable[[Reply], Reply] | None = None,
    ) -> Reply:
        """`act` once per Idempotency-Key: its reply is stored with its change (the same
        transaction), and a retry with the key gets that reply (as `again` restates it, as
        things now stand) and changes nothing. Keys are scoped per restaurant and route; a
        refusal is not stored (a retry tries again).

        A refusal is checked against the key once more: the same request sent to another
        receiver at once may have made its change meanwhile (taken the slot, cancelled the
        booking) and so caused it; its reply, committed with that change, is the answer."""
        if key is None:
            return act(None)[0]
        idempotency_key, asked = key
        scope = f"host:{merchant_id}:{route}"
        digest = hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()
        stored = self.store.recall(scope, idempotency_key)
        if stored is not None:
            replayed = self._replay(stored, digest, replies.IDEMPOTENCY_KEY_REUSED)
            return replayed if again is None else again(replayed)

        def record(reply: Reply) -> Remember:
            # "at" for the retention, as a webhook's (feed.service.retention).
            at = self.clock().timestamp()
            return (scope, idempotency_key, {"digest": digest, "body": reply.body, "at": at})

        try:
            reply, committed = act(record)
        except DuplicateKey as dup:
            if dup.scope == scope:  # a concurrent retry with the same key got there first
                return self._replay(dup.value, digest, replies.IDEMPOTENCY_KEY_REUSED)
            raise
        if not committed:
            stored = self.store.recall(scope, idempotency_key)
            if stored is not None:
                return self._replay(stored, digest, replies.IDEMPOTENCY_KEY_REUSED)
        return reply

    def host_operation(
        self,
        merchant_id: str,
        name: str,
        *args: Any,
        meta: dict[str, Any] | None = None,
        key: HostKey | None = None,
    ) -> Reply:
        """One engine operation on today's log; its result, or the engine's refusal."""
        book = self.books.get(merchant_id)
        if book is None:
            return problem(replies.UNKNOWN_MERCHANT, f"no merchant {merchant_id}")
        now = self.clock()
        if name in ("check_in", "cancel"):  # on the booking's own day, whatever today is
            booking_id = str(args[0])

            def again(reply: Reply) -> Reply:
                if name != "check_in":
                    return reply
                return self._busy_as_it_stands(reply, merchant_id, booking_id, None, now)

            return self._host_once(
                merchant_id,
                name,
                key,
                lambda record: self._change(book, booking_id, name, now, None, record),
                again,
            )
        r = book.restaurant
        if name in ("walk_in", "quote"):
            size = args[-1]
            if not 1 <= size <= r.max_party_size:
                return problem(
                    BAD_PARTY_SIZE,
                    f"size: {r.name} seats parties of 1 to {r.max_party_size}, not {size}",
                )
        day = self.today(r, now)
        if day is None:
            return problem(replies.NO_SERVICE_TODAY, f"{r.name} is closed today{_next(r, now)}")
        if name in ("walk_in", "quote") and calendar.in_service(r, now) is None:
            # Walk-ins are taken only while a service is open (PRODUCT.md 3), so no wait is
            # quoted then either: a quote of 0 for a walk-in that would be refused misleads.
            return problem(replies.NO_SERVICE_NOW, f"{r.name} is not serving now{_next(r, now)}")
        if name in READS:  # reading the day never writes the log
            read = book.view(day, now, name, *args)
            if isinstance(read.result, Rejected):
                return problem(read.result.code, f"{name} refused: {read.result.code}")
            closing = book.wait_past_close(day, now, read.result) if name == "quote" else None
            if closing is not None:  # a wait ending after the close is no time to tell
                return problem(
                    replies.WAIT_PAST_CLOSE,
                    f"a party of {args[-1]} would wait about {read.result} minutes, past the"
                    f" {closing.astimezone(r.tz):%H:%M} close: no table is expected for them"
                    " before the service ends",
                )
            result = _public_board(book, day, read.result) if name == "board" else read.result
            return Reply({"operation": read.operation, "result": result})

        act = self._operating(book, day, now, (name, *args), meta)
        return self._host_once(merchant_id, name, key, act)

    def host_book(
        self,
        merchant_id: str,
        party_size: int,
        start: str,
        name: str,
        phone: str,
        key: HostKey | None = None,
        notes: str = "",
        over_pacing: bool = False,
    ) -> Reply:
        """A phone reservation: a local "YYYY-MM-DDTHH:MM" or an instant with an offset.
        The whole floor, parties up to max_party_size; beyond pacing only with
        `over_pacing` (the host says so)."""
        book = self.books.get(merchant_id)
        if book is None:
            return problem(replies.UNKNOWN_MERCHANT, f"no merchant {merchant_id}")
        try:
            when = datetime.fromisoformat(start)
        except ValueError:
            return problem(
                replies.INVALID_REQUEST,
                f"start: {start[:40]!r} is not ISO-8601 (YYYY-MM-DDTHH:MM, local time)",
            )
        try:
            check_day(when.date())
        except ValueError as exc:
            return problem(replies.INVALID_REQUEST, f"start: {exc}")
        meta = {"source": "host", "name": name, "phone": phone, "notes": notes}
        return self._host_once(
            merchant_id,
            "reserve",
            key,
            lambda record: self._book(
                book,
                when,
                party_size,
                self.clock(),
                meta,
                record,
                host=True,
                over_pacing=over_pacing,
            ),
        )

    def host_change(
        self,
        merchant_id: str,
        booking_id: str,
        party_size: int | None,
        start: str | None,
        key: HostKey | None = None,
        *,
        over_pacing: bool = False,
    ) -> Reply:
        """The host changes a booking's time or party size (the guest phoned): it is booked
        again by the availability rules, atomically, under the same booking id; a partner
        whose booking it is hears of it with the fields that changed. A change made
        meanwhile (the partner's UpdateBooking) is neither overwritten nor a refusal: this
        one is worked out again on the fresh record (LOOKUPS times at most). Beyond the new
        slot's pacing caps only with `over_pacing` (the host says so), as a phone booking:
        the booking is then marked over_pacing."""
        book = self.books.get(merchant_id)
        if book is None:
            return problem(replies.UNKNOWN_MERCHANT, f"no merchant {merchant_id}")
        now = self.clock()

        def act(record: Callable[[Reply], Remember] | None) -> tuple[Reply, bool]:
            # A change of the booking made meanwhile (a partner's UpdateBooking) makes this
            # one's cancel of the booking as read fail: worked out again on the fresh record.
            def read() -> Any:
                return self.store.recall(BOOKING_SCOPE, booking_id)

            def attempt(index: Any) -> tuple[Reply, bool]:
                return self._change_booking(
                    book, booking_id, index, party_size, start, now, record, over_pacing
                )

            return _redo_overtaken(read(), read, attempt, _where, booking_id, "change")

        return self._host_once(merchant_id, "change", key, act)

    def _change_booking(
        self,
        book: DayBook,
        booking_id: str,
        index: Any,
        party_size: int | None,
        start: str | None,
        now: datetime,
        record: Callable[[Reply], Remember] | None,
        over_pacing: bool = False,
    ) -> tuple[Reply, bool]:
        """`host_change` on the booking as `index` (just read) has it."""
        r = book.restaurant
        if not isinstance(index, dict) or index.get("merchant_id") != r.merchant_id:
            return problem(UNKNOWN_RESERVATION, f"no reservation {booking_id}"), False
        old_day = date.fromisoformat(str(index["day"]))
        engine_id = str(index.get("reservation_id", booking_id))
        reservation = book.stand(old_day).book.get(engine_id)
        opening = calendar.log_opening(r, old_day)  # a day closed since: moved off it
        details = book.details(old_day, engine_id)
        if reservation is None or opening is None:
            return problem(UNKNOWN_RESERVATION, f"no reservation {booking_id}"), False
        size = party_size if party_size is not None else details.get("party_size")
        if not isinstance(size, int):
            return problem(replies.INVALID_REQUEST, "party_size: give the party's size"), False
        if start is None:
            when = opening + timedelta(minutes=reservation.at)
        else:
            try:
                when = datetime.fromisoformat(start)
                check_day(when.date())
            except ValueError as exc:
                return problem(replies.INVALID_REQUEST, f"start: {str(exc)[:80]}"), False
        found = calendar.slot_at(r, when)
        if found is None:
            why = calendar.why_not_a_slot(r, when)
            said = f"{when.isoformat()} is not a slot at {r.name}: {why}"
            return problem(NOT_A_SLOT, said), False
        day, slot = found

        def shown(status: str, unit: str | None = None) -> Reply:
            body: dict[str, Any] = {
                "reservation_id": booking_id,
                "merchant_id": r.merchant_id,
                "status": status,
                "party_size": size,
                "start": slot.local.isoformat(),
                "start_sec": slot.start_sec,
            }
            if unit is not None:
                body.update(unit=unit, tables=unit_tables(unit))
            return Reply(body)

        # Nothing to change (a retry, an empty form): the booking as it stands now, no write.
        # As of now: a booking past its hold is a no-show (refused below, as any change).
        same = (
            (day, slot.minute, size) == (old_day, reservation.at, details.get("party_size"))
            and reservation.still_booked
            and not reservation.no_show_by(book.minute(old_day, now))
        )
        moves = int(index.get("moves", 0)) + 1
        new_engine_id = f"{booking_id}.{moves}"  # engine ids are never reused; the booking id stays
        moved = {
            **index,
            "day": day.isoformat(),
            "reservation_id": new_engine_id,
            "moves": moves,
        }
        if "start_sec" in index:  # a partner's v3 booking keeps its slot in the index
            moved.update(
                start_sec=slot.start_sec,
                duration_sec=calendar.duration_sec(r, day, slot, size),
                party_size=size,
            )
        meta = {"booking_id": booking_id, "source": "host"}  # the guest's details go along
        # A booking made in a room (a partner's room_id) stays in it while the restaurant
        # still has that area and a table there; else anywhere. Its index then names the
        # room the new table is in: the partner is never shown a room it is not in.
        room = index.get("room_id")
        keep = kept_room(r, room)

        if same:  # not stored: nothing was done
            return shown(status_word(reservation), reservation.unit), False
        answer = shown("booked")

        def put(operation: list[Any]) -> list[Remember]:
            unit = str(operation[3])
            answer.body.update(unit=unit, tables=unit_tables(unit))
            extra = [record(answer)] if record is not None else []
            return [(BOOKING_SCOPE, booking_id, index_on(r, moved, unit)), *extra]

        outcome = book.move(
            old_day, engine_id, day, slot, size, now, new_engine_id, meta, put, keep,
            host=True, over_pacing=over_pacing,
        )  # fmt: skip
        if isinstance(outcome, Refused) and keep is not None and outcome.code == SLOT_UNAVAILABLE:
            outcome = book.move(
                old_day, engine_id, day, slot, size, now, new_engine_id, meta, put,
                host=True, over_pacing=over_pacing,
            )  # fmt: skip
        if isinstance(outcome, Refused):
            message = outcome.message
            if outcome.code == RESERVATION_NOT_ACTIVE:
                message += ": " + _why_not_active(book, old_day, engine_id, now)
            return problem(outcome.code, message), False
        return answer, True

    def host_reservations(self, merchant_id: str, day: date | None) -> Reply:
        book = self.books.get(merchant_id)
        if book is None:
            return problem(replies.UNKNOWN_MERCHANT, f"no merchant {merchant_id}")
        if day is not None:
            try:
                check_day(day)
            except ValueError as exc:
                return problem(replies.INVALID_REQUEST, f"date: {exc}")
        r = book.restaurant
        day = day or self.today(r, self.clock()) or self.clock().astimezone(r.tz).date()
        opening = calendar.log_opening(r, day)  # a day closed since still lists its bookings
        rows: list[dict[str, Any]] = []
        if opening is not None:
            # As of now, as the floor shows it: a booking past its hold is a no-show here
            # before the clock's sweep writes it (reading never writes).
            stand, _, meta = book.snapshot(day, self.clock())
            for row in reservation_rows(book, day, stand, meta, opening):
                local = (opening + timedelta(minutes=row["at"])).astimezone(r.tz)
                rows.append(
                    {
                        "reservation_id": row["reservation_id"],
                        "unit": row["unit"],
                        "tables": unit_tables(row["unit"]),
                        "start": local.isoformat(),
                        "status": row["status"],
                        "party_size": row["size"],
                        "name": row["name"],
                        "phone": row["phone"],
                        "notes": row["notes"],
                        "source": row["source"],
                        "seated_at": row["seated_at"],
                        "area": row["area"],
                        "over_pacing": row["over_pacing"],
                        "moved_to": row["moved_to"],
                    }
                )
        rows = self._with_attention(merchant_id, day, rows)
        return Reply({"merchant_id": merchant_id, "day": day.isoformat(), "reservations": rows})

    def attention_now(self, merchant_id: str, day: date | None = None) -> list[Misfit]:
        """The bookings the last reload (or the start) found no longer fit the rules, of
        `day` or of every day, less those settled since (attention.still_standing)."""
        book = self.books.get(merchant_id)
        listed = [m for m in self.attention.of(merchant_id) if day is None or m.day == day]
        if book is None:
            return []
        return still_standing(listed, self.store, book.restaurant, self.clock())

    def _with_attention(
        self, merchant_id: str, day: date, rows: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Each row with `attention` (why it no longer fits the rules, or None), and the
        bookings the day's replay no longer shows (their table was removed) after them."""
        misfits = {m.booking_id: m for m in self.attention_now(merchant_id, day)}
        rows = marked(rows, misfits.values())
        listed = {row["reservation_id"] for row in rows}
        tz = self.books[merchant_id].restaurant.tz
        for m in misfits.values():
            if m.booking_id not in listed:
                shown = m.row(tz)
                rows.append(
                    {
                        "reservation_id": m.booking_id,
                        "unit": m.unit,
                        "tables": unit_tables(m.unit),
                        "start": shown["start"],
                        "status": "booked",
                        "party_size": m.party_size,
                        "name": m.name,
                        "phone": "",
                        "notes": "",
                        "source": "",
                        "seated_at": None,
                        "attention": m.attention,
                    }
                )
        return rows
