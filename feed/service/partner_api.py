"""The partner's booking server (v3) and waitlist, over the service days.

Requests arrive normalised to snake_case; the answers use the partner's exact field names.
Business failures are 200 with `booking_failure` (or `waitlist_business_logic_failure`);
unknown merchants, slots or bookings are 400. Idempotency tokens are stored with the change
they made, so a retry gets the same booking (shown as it now is) and a failed attempt is
simply tried again. An UpdateBooking whose change is already made (by its twin on another
receiver, say) answers the booking as it now is; one overtaken by another change of the
booking (the host's) is made on the booking as it now stands.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from engine import Party, PartyState
from engine.errors import RESERVATION_NOT_ACTIVE, Rejected
from engine.holds import ReservationStatus
from engine.stand import Result
from feed.floor.availability import spots_total
from feed.service import replies
from feed.service.days import (
    BOOKING_SCOPE,
    LOOKUPS,
    TABLE_REMOVED,
    WAITLIST_FULL,
    Applied,
    DayBook,
    Refused,
    new_booking_id,
)
from feed.service.replies import Reply, changed_meanwhile, problem
from feed.service.rules import online_sizes
from feed.settings import Partner
from feed.venue import calendar
from feed.venue.calendar import Slot
from feed.venue.restaurant import Restaurant
from feed.venue.telephone import e164
from store.log import JSON, DuplicateKey, LogStore, Remember

CONFIRMED, CANCELED, NO_SHOW = "CONFIRMED", "CANCELED", "NO_SHOW"
SLOT_UNAVAILABLE = "SLOT_UNAVAILABLE"
OUTSIDE_CANCELLATION_WINDOW = "OUTSIDE_CANCELLATION_WINDOW"
OVERLAPPING_RESERVATION = "OVERLAPPING_RESERVATION"
BOOKING_ALREADY_CANCELLED = "BOOKING_ALREADY_CANCELLED"
BOOKING_NOT_CANCELLABLE = "BOOKING_NOT_CANCELLABLE"
PREPAYMENT_NOT_PROVIDED = "PREPAYMENT_NOT_PROVIDED"
SYNCHRONOUS = "CONFIRMATION_MODE_SYNCHRONOUS"
WAITLIST_SYNCHRONOUS = "WAITLIST_CONFIRMATION_MODE_SYNCHRONOUS"
WAITLIST_SCOPE = "waitlist"  # entry id -> merchant, day, partner, user, size, created
SLOTS_KEPT = 50_000  # remembered answers of _slot_of per restaurant (a few MB at most)
# A user's bookings that may overlap another day's are numbered in this scope (UserClash).
USER_WRITES = "userwrites"
# Seconds a number below a user's last is kept: far longer than a write's attempt (its read
# of the last number to its insert of the next), after which nobody reads it again.
USER_WRITES_KEPT = 3600.0
ESTIMATE_MIN_WIDTH = 15 * 60  # seconds: a seat time is a window, never a promise to the minute

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


@lru_cache(maxsize=4096)  # the same few field names arrive again and again
def _snake_key(key: str) -> str:
    return _CAMEL.sub(r"_\1", key).lower()


class FieldTwice(ValueError):
    """One field given in both spellings, with two values."""


def snake_case(value: Any) -> Any:
    """Keys of every object turned from lowerCamelCase to snake_case (values untouched).

    A field given in both spellings with two values ({"merchant_id": "a", "merchantId":
    "b"}) raises FieldTwice: which one the partner meant is not ours to guess, and the one
    written last was taken, booking or looking up at another merchant or time than the
    other spelling said. The same value twice is the same request."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key, new = _snake_key(str(k)), snake_case(v)
            if key in out and out[key] != new:
                raise FieldTwice(f"{key} is given twice (as {key} and in lowerCamelCase)")
            out[key] = new
        return out
    if isinstance(value, list):
        return [snake_case(v) for v in value]
    return value


# -- requests (pydantic at the edge; lax, so int64 strings become ints) ----------------------


class _Req(BaseModel):
    model_config = ConfigDict(extra="ignore")


_DIGITS = re.compile(r"-?[0-9]+")


def _json_int(value: Any) -> Any:
    """An integer field takes a JSON number or a string of digits (proto3's JSON mapping
    writes int64 as a string), nothing else pydantic's lax mode would turn into an int:
    not true/false (a bool is not a party of 1), nor text such as " 2", "+2", "2.0", "1_000"
    (the hot paths' plain reader refuses the same, so both read a body alike)."""
    if isinstance(value, bool):
        raise ValueError("expected a number, not true or false")
    if isinstance(value, str) and not _DIGITS.fullmatch(value):
        raise ValueError("expected a number or a string of digits")
    return value


JsonInt = Annotated[int, BeforeValidator(_json_int)]
MAX_UNIX_SECONDS = 10**11  # the year 5138: anything above is milliseconds, not seconds


def _unix_seconds(value: int) -> int:
    """A start in Unix seconds: one in milliseconds (13 digits, what many clients write by
    default) was told "less than or equal to 100000000000", a bound with no reason given."""
    if value > MAX_UNIX_SECONDS:
        raise ValueError(f"{value} is not a Unix time in seconds (milliseconds?)")
    return value


UnixSeconds = Annotated[int, BeforeValidator(_json_int), AfterValidator(_unix_seconds)]


class Resources(_Req):
    # No bound here: the bound a partner is told is the restaurant's (rules.online_sizes),
    # checked once the merchant is known; "greater than or equal to 0" named a size no
    # booking takes. The plain lookup reader reads 0..1000 itself and leaves the rest here.
    party_size: JsonInt | None = None
    room_id: str | None = None
    staff_id: str | None = None


class SlotIn(_Req):
    merchant_id: str | None = None
    service_id: str | None = None
    start_sec: UnixSeconds | None = Field(
        default=None, ge=0, json_schema_extra={"maximum": MAX_UNIX_SECONDS}
    )
    duration_sec: JsonInt | None = Field(default=None, ge=0, le=10**9)
    availability_tag: str | None = None
    resources: Resources | None = None


class SlotTime(_Req):
    service_id: str | None = None
    start_sec: UnixSeconds = Field(ge=0, json_schema_extra={"maximum": MAX_UNIX_SECONDS})
    duration_sec: JsonInt | None = Field(default=None, ge=0, le=10**9)
    availability_tag: str | None = None
    resource_ids: Resources | None = None

    @model_validator(mode="before")
    @classmethod
    def _not_resources(cls, data: Any) -> Any:
        """A SlotTime's party size is in `resource_ids`; `resources` is a Slot's name (in
        CreateBooking). Taken as an unknown field, it left the lookup without a size, so
        every slot read not available and the partner showed the restaurant full."""
        if isinstance(data, dict) and "resources" in data and "resource_ids" not in data:
            raise ValueError(
                "a lookup's slot_time names its party size in resource_ids, not resources"
                " (a booking's slot calls it resources)"
            )
        return data


def _telephone(value: str) -> str:
    """A guest's telephone (or none), kept as written for the host, once it is known to
    reduce to E.164: a number the host cannot dial, or "+44 (0)20 ...", is a bad argument."""
    if value:
        e164(value)
    return value


class UserInformation(_Req):
    # Names and email within the webhook's and the host's own bounds (a name of 200, an
    # email of 200): the guest's name is shown on the host's lists and tablet, and a body of
    # tens of KB of name was taken as it came.
    user_id: str = Field(min_length=1, max_length=200)
    given_name: str = Field(default="", max_length=100)
    family_name: str = Field(default="", max_length=100)
    # 50 at most, as a webhook's phone and the host's: 5 KB of digits was read through
    # (and echoed back whole in the refusal).
    telephone: Annotated[str, AfterValidator(_telephone)] = Field(default="", max_length=50)
    email: str = Field(default="", max_length=200)


class LookupRequest(_Req):
    merchant_id: str = Field(min_length=1)
    slot_time: list[SlotTime] = Field(default_factory=list, max_length=1000)


class CreateBookingRequest(_Req):
    slot: SlotIn
    user_information: UserInformation
    idempotency_token: str | None = Field(default=None, max_length=200)
    additional_request: str | None = Field(default=None, max_length=1000)


class BookingIn(_Req):
    booking_id: str = Field(min_length=1)
    status: str | None = None
    slot: SlotIn | None = None


class UpdateBookingRequest(_Req):
    booking: BookingIn
    idempotency_token: str | None = None


class BookingIdRequest(_Req):
    booking_id: str = Field(min_length=1)


class UserIdRequest(_Req):
    user_id: str = Field(min_length=1)


class WaitEstimatesRequest(_Req):
    merchant_id: str = Field(min_length=1)
    service_id: str | None = None
    party_size: list[JsonInt] = Field(default_factory=list, max_length=100)


class CreateWaitlistEntryRequest(_Req):
    merchant_id: str = Field(min_length=1)
    service_id: str | None = None
    party_size: JsonInt
    user_information: UserInformation
    additional_request: str | None = Field(default=None, max_length=1000)
    idempotency_token: str | None = Field(default=None, max_length=200)


class WaitlistEntryIdRequest(_Req):
    waitlist_entry_id: str = Field(min_length=1)


RequestT = TypeVar("RequestT", bound=BaseModel)


def parse(model: type[RequestT], payload: Any, *, normalised: bool = False) -> RequestT | Reply:
    try:
        return model.model_validate(payload if normalised else snake_case(payload))
    except FieldTwice as exc:
        return problem(replies.BAD_ARGUMENTS, str(exc))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return problem(replies.BAD_ARGUMENTS, f"{where}: {first['msg']}")


# -- the lookup's plain case, without pydantic ----------------------------------------------
# A 50-slot lookup spent most of its time validating 50 models. Requests in the plain
# shape (known keys in either spelling, ints or digit strings in range) are read here;
# anything else goes through LookupRequest, so the verdict is always pydantic's.

_SLOT_KEYS = {
    "service_id": "service_id",
    "serviceId": "service_id",
    "start_sec": "start_sec",
    "startSec": "start_sec",
    "duration_sec": "duration_sec",
    "durationSec": "duration_sec",
    "availability_tag": "availability_tag",
    "availabilityTag": "availability_tag",
    "resource_ids": "resource_ids",
    "resourceIds": "resource_ids",
}
_RESOURCE_KEYS = {
    "party_size": "party_size",
    "partySize": "party_size",
    "room_id": "room_id",
    "roomId": "room_id",
    "staff_id": "staff_id",
    "staffId": "staff_id",
}
_SLOT_SNAKE = frozenset(_SLOT_KEYS.values())
_RESOURCE_SNAKE = frozenset(_RESOURCE_KEYS.values())
_LOOKUP_KEYS = {"merchant_id", "merchantId", "slot_time", "slotTime"}
_NO_INT = -1
_UNSEEN = object()  # a slot _slot_of has not been asked about yet
PlainSlot = tuple[dict[str, Any], str | None, int, int | None, int | None]


def _plain_int(value: Any, high: int) -> int:
    """An int in 0..high given as a number or a string of digits, else _NO_INT."""
    if type(value) is str and 0 < len(value) <= 12 and value.isascii() and value.isdigit():
        if value[0] == "0" and value != "0":
            return _NO_INT  # leading zeros: let pydantic have its say
        value = int(value)
    if type(value) is int and 0 <= value <= high:
        return value
    return _NO_INT


def _plain_str(value: Any) -> bool:
    """None or an ASCII str: other text (a lone surrogate, say) is for pydantic to judge."""
    return value is None or (type(value) is str and value.isascii())


def _plain_keys(value: Any, names: dict[str, str], snake: frozenset[str]) -> dict[str, Any] | None:
    """The object with its keys in snake_case, if every key is a known one (once): the
    object itself when its keys are all snake_case already (partners mostly send that)."""
    if type(value) is not dict:
        return None
    if value.keys() <= snake:
        return value
    out = {names.get(k, ""): v for k, v in value.items()}
    return out if len(out) == len(value) and "" not in out else None


def _plain_slot(value: Any) -> PlainSlot | None:
    # The usual slot (snake_case keys, numbers as ints or digit strings) is read inline: a
    # 50-slot lookup calls this 50 times, and a call per field was most of its cost.
    slot: dict[str, Any] | None = value if type(value) is dict else None
    if slot is None or not slot.keys() <= _SLOT_SNAKE:
        slot = _plain_keys(value, _SLOT_KEYS, _SLOT_SNAKE)
        if slot is None:
            return None
    get = slot.get
    service_id, tag = get("service_id"), get("availability_tag")
    if not (
        (service_id is None or (type(service_id) is str and service_id.isascii()))
        and (tag is None or (type(tag) is str and tag.isascii()))
    ):
        return None
    start = get("start_sec")
    if not (type(start) is int and 0 <= start <= 10**11):
        start = _plain_int(start, 10**11)
        if start == _NO_INT:
            return None
    duration = get("duration_sec")
    if duration is not None and not (type(duration) is int and 0 <= duration <= 10**9):
        duration = _plain_int(duration, 10**9)
        if duration == _NO_INT:
            return None
    size = None
    if "resource_ids" in slot:
        resources: dict[str, Any] | None = slot["resource_ids"]
        if type(resources) is not dict or not resources.keys() <= _RESOURCE_SNAKE:
            resources = _plain_keys(resources, _RESOURCE_KEYS, _RESOURCE_SNAKE)
            if resources is None:
                return None
        room, staff = resources.get("room_id"), resources.get("staff_id")
        if not (
            (room is None or (type(room) is str and room.isascii()))
            and (staff is None or (type(staff) is str and staff.isascii()))
        ):
            return None
        size = resources.get("party_size")
        if size is not None and not (type(size) is int and 0 <= size <= 1000):
            size = _plain_int(size, 1000)
            if size == _NO_INT:
                return None
        if resources is not slot["resource_ids"]:  # renamed: the payload itself stays as sent
            slot = {**slot, "resource_ids": resources}
    return slot, service_id, start, duration, size


def _plain_lookup(payload: Any) -> tuple[str, list[PlainSlot]] | None:
    """(merchant_id, slots) of a lookup in the plain shape, or None (use pydantic)."""
    if type(payload) is not dict or not payload.keys() <= {
        "merchant_id",
        "merchantId",
        "slot_time",
        "slotTime",
    }:
        return None
    if len(payload) > 2 or ("merchant_id" in payload and "merchantId" in payload):
        return None
    merchant_id = payload.get("merchant_id", payload.get("merchantId"))
    slot_times = payload.get("slot_time", payload.get("slotTime", []))
    if ("slot_time" in payload and "slotTime" in payload) or type(slot_times) is not list:
        return None
    if not (merchant_id and _plain_str(merchant_id)) or len(slot_times) > 1000:
        return None
    slots = []
    for value in slot_times:
        slot = _plain_slot(value)
        if slot is None:
            return None
        slots.append(slot)
    return merchant_id, slots


def _as_asked(index: dict[str, Any], size: int, start: int, room: str | None) -> bool:
    """Whether a booking (its index) already has the party size, start and room asked."""
    return (
        size == index["party_size"] and start == index["start_sec"] and room == index.get("room_id")
    )


def _unchangeable(status: str) -> Reply | None:
    """The failure of a change to a booking in `status`, if it can no longer be changed."""
    if status == CANCELED:
        return failure(BOOKING_ALREADY_CANCELLED, "a cancelled booking cannot be changed")
    if status != CONFIRMED:
        return failure(BOOKING_NOT_CANCELLABLE, "this booking can no longer be changed")
    return None


def _resources(index: dict[str, Any]) -> dict[str, Any]:
    """A booking's slot.resources: its party size, and the room it was booked in (if any)."""
    resources: dict[str, Any] = {"party_size": index["party_size"]}
    if index.get("room_id") is not None:
        resources["room_id"] = index["room_id"]
    return resources


def _duration(r: Restaurant, start_sec: int, size: int) -> int:
    """duration_sec of a booking of `size` at `start_sec`: the turn in its slot's service."""
    found = calendar.slot_at_sec(r, start_sec)
    if found is None or not 1 <= size <= r.max_party_size:
        return r.duration_minutes(size) * 60
    return calendar.duration_sec(r, found[0], found[1], size)


STATUS_READS = 3  # reads of a booking's index while a concurrent change moves it (_fresh_status)


def _where(index: dict[str, Any]) -> tuple[Any, Any]:
    """The day and engine reservation a booking's index points at."""
    return index.get("day"), index.get("reservation_id")


def _reaches_another_day(r: Restaurant, day: date, start_sec: int, end_sec: int) -> bool:
    """Whether a booking of `day` from `start_sec` to `end_sec` may overlap a booking of
    another service day: its turn runs past the next day's first slot, or a turn from the
    day before's last slot (its longest) runs past its start. Only where a service runs
    late past midnight and the next day's opens early."""
    after = calendar.slots(r, day + timedelta(days=1))
    if after and after[0].start_sec < end_sec:
        return True
    before = calendar.slots(r, day - timedelta(days=1))
    if not before:
        return False
    last = before[-1]
    longest = max(
        calendar.duration_sec(r, day - timedelta(days=1), last, n)
        for n in range(1, r.max_party_size + 1)
    )
    return last.start_sec + longest > start_sec


class UserClash:
    """A booking's or move's check of the same user's other bookings (`check`, the day
    book's: OVERLAPPING_RESERVATION or CHANGED_MEANWHILE, put in `said`), made inside the
    day's write and again on each of its retries, not before it: else another receiver
    could book or move the user's other booking into the overlap between the check and
    the write, and both would go through. On the same day the write's own retry makes
    that exact: the other write moved the day's log, so this one is worked out again.

    Two bookings on two service days can overlap too, where a late service's turn runs
    past the next day's first slot: their writes go to two logs and do not collide. Such
    a booking (`crosses`) is numbered among the user's other such writes: the check reads
    the user's last number before the bookings, and `records` inserts the next with the
    write. Of two at once, one inserts the number first; the other's write fails with
    DuplicateKey (nothing written) and is tried again, when its check sees the first."""

    def __init__(
        self,
        store: LogStore,
        partner: Partner,
        user_id: str,
        crosses: bool,
        clash: Callable[[], Reply | None],
    ) -> None:
        self.store = store
        self.scope = f"{USER_WRITES}:{partner.id}"
        self.user_id = user_id
        self.crosses = crosses
        self.clash = clash
        self.said: list[Reply] = []
        self.last = 0

    def _last_number(self) -> int:
        """The user's last number; the numbers below it written over USER_WRITES_KEPT
        seconds ago are forgotten meanwhile (`_forget`)."""
        prefix = f"{self.user_id}/"
        numbered = sorted(
            (int(key[len(prefix) :]), key, value)
            for key, value in self.store.recall_prefix(self.scope, prefix)
            if key[len(prefix) :].isdigit()  # not a user whose id goes on after a "/"
        )
        if not numbered:
            return 0
        self._forget(numbered)
        return numbered[-1][0]

    def _forget(self, numbered: list[tuple[int, str, JSON]]) -> None:
        """Drop the user's numbers that no write can still be taking the next one of:
        only the last is read (the next write inserts the one after it), and a write
        inserts its number moments after reading the last (within its own attempt), so a
        number below the last written long ago is never read again nor collided with.
        The last is always kept: a write that read it must collide with any other that
        read it. Numbers go up with time (each is inserted after the one before it was
        read), so one written before a number whose stamp is old is old too; a record
        from before the stamps (True) is known old that way only."""
        old = time.time() - USER_WRITES_KEPT
        cut = max(
            (n for n, _key, value in numbered if isinstance(value, dict) and _stamp(value) < old),
            default=0,
        )
        for n, key, _value in numbered[:-1]:
            if n <= cut:
                # Exactly this key: a range of numbers could hold another user's keys,
                # one whose id goes on after a "/" with digits ("u1/000000000003x/...").
                self.store.forget_range(self.scope, key, key + "\x01")

    def check(self) -> Refused | None:
        if self.crosses:
            self.last = self._last_number()  # before the bookings are read
        clash = self.clash()
        if clash is None:
            return None
        self.said.append(clash)
        return Refused(OVERLAPPING_RESERVATION, "this user has an overlapping booking")

    def records(self) -> list[Remember]:
        if not self.crosses:
            return []
        # Stamped with the real clock: how long ago it was written is what `_forget` asks.
        stamp: JSON = {"at": time.time()}
        return [(self.scope, f"{self.user_id}/{self.last + 1:012d}", stamp)]

    def lost(self, dup: DuplicateKey) -> bool:
        """Whether `dup` is another write of this user's taking the number first."""
        return dup.scope == self.scope


def out_of_date(outcome: Applied | Refused) -> Reply | None:
    """503 when `outcome` was refused because this server runs a floor plan older than
    the one in force (days.TABLE_REMOVED: another server sharing the store reloaded a file
    without a table this one would seat somebody at, the request's guests or a party its
    seating pass takes off the waitlist): nothing was done, and it is no business failure
    to tell the partner (the slot may well be free, the booking cancellable, the merchant
    open, the entry still waiting). A retry succeeds once the server is reloaded, or on
    another server; the operator's instruction (reload this server) is not the partner's."""
    if not isinstance(outcome, Refused) or outcome.code != TABLE_REMOVED:
        return None
    return replies.floor_out_of_date(outcome.message)


def _stamp(value: Mapping[str, Any]) -> float:
    at = value.get("at")
    return float(at) if isinstance(at, int | float) and not isinstance(at, bool) else math.inf


def _users_ids(store: LogStore, scope: str, user_id: str) -> list[str]:
    """The booking (or waitlist entry) ids a user's records in `scope` name: keys
    "<user id>/<id>". The id is what follows the user's own id, whatever that holds: a user
    id with a "/" ("accounts/7") was cut at its first "/", so ListBookings showed none of its
    bookings and the overlap and waiting checks missed them. Our ids hold no "/", so a key
    of another user whose id goes on after this one's and a "/" is never taken for one."""
    prefix = f"{user_id}/"
    ids = (key[len(prefix) :] for key, _value in store.recall_prefix(scope, prefix))
    return [one for one in ids if one and "/" not in one]


def _why_unpublished(
    r: Restaurant, start_sec: int, size: int, duration_sec: int | None = None
) -> str:
    """The booking_failure's description for a slot we do not publish: why, as a webhook's
    refusal says it (a closed day, outside the booking times, between two slots, a party
    size partners cannot book, a duration we do not publish for it). It said "not a slot we
    publish for that party size" alone, leaving the partner to guess which."""
    if not 1 <= size <= r.online_limit:
        return f"{r.name} takes online bookings for parties of 1 to {r.online_limit}, not {size}"
    if spots_total(r.online_floor, size) == 0:
        return f"{r.name} has no table for a party of {size}"
    when = datetime.fromtimestamp(start_sec, UTC)
    found = calendar.slot_at_sec(r, start_sec)
    if found is None:
        return f"{when.isoformat()} is not a slot at {r.name}: {calendar.why_not_a_slot(r, when)}"
    day, slot = found
    turn = calendar.duration_sec(r, day, slot, size)
    return (
        f"a party of {size} at {when.isoformat()} is published with duration_sec {turn},"
        f" not {duration_sec}"
    )


def _token_reused(req: CreateBookingRequest, stored: Reply) -> Reply | None:
    """400 when a CreateBooking's idempotency_token was used by a request for another
    booking (another merchant, start, party size, room or user), else None. The token names
    one request: a retry gets that request's booking, but a new request under a used token
    was answered with the old booking, a CONFIRMED for a time and size the partner did not
    ask for this time (its guest told the wrong booking), where a webhook's event id or the
    host's Idempotency-Key with another body is refused."""
    booking = stored.body.get("booking")
    if not isinstance(booking, dict):
        return None
    made = booking.get("slot") or {}
    resources = made.get("resources") or {}
    asked = req.slot.resources
    same = (
        req.slot.merchant_id == made.get("merchant_id")
        and req.slot.start_sec == made.get("start_sec")
        and (asked.party_size if asked else None) == resources.get("party_size")
        and (asked.room_id if asked else None) == resources.get("room_id")
        and req.user_information.user_id == (booking.get("user_information") or {}).get("user_id")
    )
    if same:
        return None
    return problem(
        replies.BAD_ARGUMENTS,
        f"idempotency_token {req.idempotency_token!r} was used for another booking request"
        f" ({booking.get('booking_id')}): a new booking needs a new token",
    )


def _unknown_service(book: DayBook, service_id: str | None) -> Reply | None:
    """400 for a service the restaurant does not have (dining has one per merchant), as
    CreateBooking answers: the waitlist calls took any service_id for the merchant's."""
    if service_id in (None, book.restaurant.service_id):
        return None
    return problem(replies.BAD_ARGUMENTS, f"unknown service {service_id!r}")


def failure(cause: str, description: str, key: str = "booking_failure") -> Reply:
    return Reply({key: {"cause": cause, "description": description}})


class PartnerApi:
    """Booking server v3 and waitlist calls for one authenticated partner at a time."""

    def __init__(
        self, books: dict[str, DayBook], store: LogStore, clock: Callable[[], datetime]
    ) -> None:
        self.books = books
        self.store = store
        self.clock = clock

    # -- helpers ---------------------------------------------------------------------------

    def _book_of(self, partner: Partner, merchant_id: str | None) -> DayBook | Reply:
        book = self.books.get(merchant_id or "")
        if book is None or not partner.may_use(book.restaurant.merchant_id):
            return problem(replies.BAD_ARGUMENTS, f"unknown merchant {merchant_id!r}")
        return book

    def _index(self, partner: Partner, booking_id: str) -> dict[str, Any] | Reply:
        index = self.store.recall(BOOKING_SCOPE, booking_id)
        unknown = problem(replies.BAD_ARGUMENTS, f"unknown booking {booking_id!r}")
        if (
            not isinstance(index, dict)
            or index.get("partner") != partner.id
            or str(index.get("merchant_id")) not in self.books
            or not partner.may_use(str(index.get("merchant_id")))  # checked on every call
        ):
            return unknown
        return self._complete(index) or unknown

    def _complete(self, index: dict[str, Any]) -> dict[str, Any] | None:
        """The index with its slot and party size. A booking made by webhook (or by the host)
        is indexed by merchant, day and engine id only: the rest is read from its day's log,
        so v3 can show, cancel and change it like one of its own. None if it is not there."""
        if all(k in index for k in ("start_sec", "duration_sec", "party_size")):
            return index
        book = self.books[str(index["merchant_id"])]
        r, day = book.restaurant, date.fromisoformat(str(index["day"]))
        reservation_id = str(index["reservation_id"])
        reservation = book.stand(day).book.get(reservation_id)
        opening = calendar.log_opening(r, day)  # a day closed since still has its bookings
        if reservation is None or opening is None:
            return None
        size = book.details(day, reservation_id).get("party_size")
        if not isinstance(size, int):
            return None
        start = opening + timedelta(minutes=reservation.at)
        return {
            **index,
            "start_sec": int(start.timestamp()),
            "duration_sec": _duration(r, int(start.timestamp()), size),
            "party_size": size,
        }

    def _fresh_status(
        self, partner: Partner, booking_id: str, index: dict[str, Any], now: datetime
    ) -> tuple[dict[str, Any], str]:
        """The booking's index and status, read again while it reads CANCELED because a
        change (the host's) booked it again after the index was read: its old engine
        reservation is cancelled, the booking is not. At most STATUS_READS reads."""
        status = self._status(index, now)
        for _ in range(STATUS_READS - 1):
            if status != CANCELED:
                break
            fresh = self._index(partner, booking_id)
            if isinstance(fresh, Reply) or _where(fresh) == _where(index):
                break
            index, status = fresh, self._status(fresh, now)
        return index, status

    def _kept_changing(
        self, partner: Partner, booking_id: str, index: dict[str, Any], status: str
    ) -> bool:
        """Whether a CANCELED that `_fresh_status` ended on is of a copy of the booking
        replaced since: it was changed at every read, and CANCELED would be untrue of it
        (the answer is then CHANGED_MEANWHILE, 409: the partner retries)."""
        if status != CANCELED:
            return False
        fresh = self._index(partner, booking_id)
        return not isinstance(fresh, Reply) and _where(fresh) != _where(index)

    def _status(self, index: dict[str, Any], now: datetime) -> str:
        """CONFIRMED while booked or seated, NO_SHOW once past its hold, CANCELED if cancelled."""
        book = self.books[str(index["merchant_id"])]
        day = date.fromisoformat(str(index["day"]))
        reservation = book.stand(day).book.get(str(index["reservation_id"]))
        if reservation is None:
            return CANCELED  # a move that never landed cannot happen; be safe rather than 500
        if reservation.status is ReservationStatus.CANCELLED:
            return CANCELED
        if reservation.status is ReservationStatus.NO_SHOW:
            return NO_SHOW
        # A booked reservation past at + 15 is a no-show (the clock's sweep records it soon),
        # unless its guests have arrived: they are at the door, not missing. On a day closed
        # since it was booked, the sweep cancels it instead (DayBook.cancel_closed).
        if (
            reservation.status is ReservationStatus.BOOKED
            and not reservation.arrived
            and book.minute(day, now) >= reservation.at + 15
        ):
            return CANCELED if book.closed_since(day) else NO_SHOW
        return CONFIRMED

    def _users_clash(
        self,
        partner: Partner,
        user_id: str,
        r: Restaurant,
        start_sec: int,
        size: int,
        now: datetime,
        ignore: str | None = None,
    ) -> Reply | None:
        """The same user's other confirmed bookings at this restaurant: one whose turn
        overlaps this one is OVERLAPPING_RESERVATION (a guest cannot eat two meals at once).
        That includes the same time again, at the same party size or another:
        partner-formats.md section 2 says a request duplicating a booking of the same user
        fails with OVERLAPPING_RESERVATION, so SLOT_ALREADY_BOOKED_BY_USER is never sent.

        A booking being changed as it is read (the host's change or an UpdateBooking cancel
        its engine reservation and book it again under another) reads cancelled: it is read
        again (`_fresh_status`), as the partner's own reads of it are. One that kept
        changing at every read is CHANGED_MEANWHILE (409, the partner retries), not taken
        for cancelled: a booking overlapping it would be accepted."""
        mine = (start_sec, start_sec + _duration(r, start_sec, size))
        for booking_id in _users_ids(self.store, f"user:{partner.id}", user_id):
            index = self.store.recall(BOOKING_SCOPE, booking_id)
            if (
                booking_id == ignore
                or not isinstance(index, dict)
                or index.get("merchant_id") != r.merchant_id
                or str(index.get("merchant_id")) not in self.books
            ):
                continue
            full = self._complete(index)
            if full is None:
                continue
            full, status = self._fresh_status(partner, booking_id, full, now)
            if self._kept_changing(partner, booking_id, full, status):
                return changed_meanwhile(booking_id, "checking this user's other bookings")
            if status != CONFIRMED:
                continue
            other = (int(full["start_sec"]), int(full["start_sec"]) + int(full["duration_sec"]))
            if other[0] < mine[1] and mine[0] < other[1]:
                return failure(
                    OVERLAPPING_RESERVATION,
                    f"this user's booking {booking_id} overlaps that time at {r.name}",
                )
        return None

    def _clash(
        self,
        partner: Partner,
        user_id: str,
        r: Restaurant,
        day: date,
        start_sec: int,
        size: int,
        now: datetime,
        ignore: str | None = None,
    ) -> UserClash:
        """The check of the user's other bookings for a booking or move (see UserClash)."""
        end = start_sec + _duration(r, start_sec, size)

        def clash() -> Reply | None:
            return self._users_clash(partner, user_id, r, start_sec, size, now, ignore)

        return UserClash(
            self.store, partner, user_id, _reaches_another_day(r, day, start_sec, end), clash
        )

    def _booking(self, booking_id: str, index: dict[str, Any], status: str) -> dict[str, Any]:
        r = self.books[str(index["merchant_id"])].restaurant
        return {
            "booking_id": booking_id,
            "slot": {
                "merchant_id": r.merchant_id,
                "service_id": r.service_id,
                "start_sec": index["start_sec"],
                "duration_sec": index["duration_sec"],
                "resources": _resources(index),
                "confirmation_mode": SYNCHRONOUS,
            },
            "user_information": index.get("user", {}),
            "status": status,
            "payment_information": {"prepayment_status": PREPAYMENT_NOT_PROVIDED},
        }

    @staticmethod
    def _slot_of(r: Restaurant, start_sec: int, duration_sec: int | None, size: int) -> Any:
        """(day, slot) when this is a published slot for `size`, else None; remembered per
        restaurant, as partners ask for the same slots all day."""
        known = r.memo.setdefault("v3_slot_of", {})
        key = (start_sec, duration_sec, size)
        try:
            return known[key]
        except KeyError:
            pass
        found = None
        # Partners book the online floor, parties up to max_online_party_size.
        if 1 <= size <= r.online_limit and spots_total(r.online_floor, size) > 0:
            found = calendar.slot_at_sec(r, start_sec)
            # Only a duration left out is "any": 0 (or "0") is a duration we never publish.
            if (
                found is not None
                and duration_sec is not None
                and duration_sec != calendar.duration_sec(r, found[0], found[1], size)
            ):
                found = None
        if len(known) >= SLOTS_KEPT:
            known.clear()
        known[key] = found
        return found

    # -- booking server ----------------------------------------------------------------------

    def lookup(self, partner: Partner, payload: Any) -> Reply:
        fast = _plain_lookup(payload)
        if fast is not None:
            merchant_id, asked_slots = fast
            # The plain reader has checked a room_id is None or ASCII text.
            rooms = [(slot[0].get("resource_ids") or {}).get("room_id") for slot in asked_slots]
        else:  # anything unusual: pydantic, for its verdict and its error message
            try:
                normalised = snake_case(payload)
            except FieldTwice as exc:
                return problem(replies.BAD_ARGUMENTS, str(exc))
            req = parse(LookupRequest, normalised, normalised=True)
            if isinstance(req, Reply):
                return req
            merchant_id = req.merchant_id
            asked_slots = [
                (
                    echoed,
                    t.service_id,
                    t.start_sec,
                    t.duration_sec,
                    t.resource_ids.party_size if t.resource_ids else None,
                )
                for echoed, t in zip(normalised.get("slot_time", []), req.slot_time, strict=True)
            ]
            rooms = [t.resource_ids.room_id if t.resource_ids else None for t in req.slot_time]
        book = self._book_of(partner, merchant_id)
        if isinstance(book, Reply):
            return book
        r, now = book.restaurant, self.clock()
        for i, asked in enumerate(asked_slots):
            # A negative size is no number of guests: a bad argument, told the sizes taken.
            # 0 is proto3's unset, read as a size left out: not available, as one above the
            # online limit is (a slot we do not publish); each slot gets its answer.
            if asked[4] is not None and asked[4] < 0:
                return problem(
                    replies.BAD_ARGUMENTS,
                    f"slot_time.{i}.resource_ids.party_size {online_sizes(r, asked[4])}",
                )
        available = [False] * len(asked_slots)
        # A room_id asks within that area (an unknown one: nothing open).
        known = r.memo.setdefault("v3_slot_of", {})  # see _slot_of
        where: list[int] = []
        items: list[tuple[date, Slot, int, str | None]] = []
        for i, (_, service_id, start_sec, duration_sec, size) in enumerate(asked_slots):
            if size and (service_id is None or service_id == r.service_id):
                found = known.get((start_sec, duration_sec, size), _UNSEEN)
                if found is _UNSEEN:
                    found = self._slot_of(r, start_sec, duration_sec, size)
                if found is not None:
                    where.append(i)
                    items.append((found[0], found[1], size, rooms[i]))
        for i, open_ in zip(where, book.spots_flat(items, now), strict=True):
            available[i] = open_ > 0
        answers = [
            {"slot_time": asked[0], "available": ok}
            for asked, ok in zip(asked_slots, available, strict=True)
        ]
        return Reply({"slot_time_availability": answers})

    def _once(
        self,
        scope: str,
        token: str | None,
        made: str,
        attempt: Callable[[], Reply],
        replay: Callable[[Reply], Reply] = lambda reply: reply,
    ) -> Reply:
        """`attempt` once per idempotency token: the reply stored with the token when there
        is one (through `replay`: it was stored when made), else the attempt's (whose change
        stores its reply, `made` in it, under the token in the same transaction; a failure
        is not stored, so a retry tries again).

        A failure is checked against the token once more: the same request sent to another
        receiver at once may have made its change meanwhile (the last spot of a slot, the
        user's booking or waiting entry), and this one was refused for it. Its reply was
        committed with that change, so it is there to be read and is the answer."""
        if token:
            stored = self.store.recall(scope, token)
            if stored is not None:
                return replay(Reply(stored))
        reply = attempt()
        if token and made not in reply.body:
            stored = self.store.recall(scope, token)
            if stored is not None:
                return replay(Reply(stored))
        return reply

    def create_booking(self, partner: Partner, payload: Any) -> Reply:
        req = parse(CreateBookingRequest, payload)
        if isinstance(req, Reply):
            return req
        token_scope = f"v3create:{partner.id}"

        def replay(stored: Reply) -> Reply:
            return _token_reused(req, stored) or self._as_it_now_is(partner, stored)

        return self._once(
            token_scope,
            req.idempotency_token,
            "booking",
            lambda: self._create_booking(partner, req, token_scope),
            replay,
        )

    def _as_it_now_is(self, partner: Partner, reply: Reply) -> Reply:
        """A stored booking answer with the booking as it is now. A retry with a used token
        gets the same booking, but the reply stored with the token is the booking as it was
        made (a fresh one is as it is, and is not read again): since cancelled, moved or
        resized, that would tell the partner something false about it. Its id is read
        again, as GetBookingStatus would."""
        booking = reply.body.get("booking")
        if not isinstance(booking, dict) or not isinstance(booking.get("booking_id"), str):
            return reply
        booking_id = booking["booking_id"]
        index = self._index(partner, booking_id)
        if isinstance(index, Reply):
            return reply
        # Read again while a change (the host's) books it again meanwhile: its old engine
        # reservation reads cancelled, the booking is not.
        index, status = self._fresh_status(partner, booking_id, index, self.clock())
        if self._kept_changing(partner, booking_id, index, status):
            return changed_meanwhile(booking_id, "reading the booking")
        return Reply({"booking": self._booking(booking_id, index, status)})

    def _create_booking(
        self, partner: Partner, req: CreateBookingRequest, token_scope: str
    ) -> Reply:
        book = self._book_of(partner, req.slot.merchant_id)
        if isinstance(book, Reply):
            return book
        r, now, slot_in = book.restaurant, self.clock(), req.slot
        if slot_in.service_id not in (None, r.service_id):
            return problem(replies.BAD_ARGUMENTS, f"unknown service {slot_in.service_id!r}")
        size = slot_in.resources.party_size if slot_in.resources else None
        room = slot_in.resources.room_id if slot_in.resources else None
        if slot_in.start_sec is None:
            return problem(replies.BAD_ARGUMENTS, "slot.start_sec is required")
        # 0 is proto3's unset (a client that never filled the field in): a bad argument, as
        # UpdateBooking answers it, not SLOT_UNAVAILABLE, which tells the partner a time was
        # asked and is taken (partner-formats.md: business failures are for the slot asked).
        if slot_in.start_sec <= 0:
            return problem(
                replies.BAD_ARGUMENTS,
                f"slot.start_sec must be a Unix time, not {slot_in.start_sec}",
            )
        if size is None:
            return problem(replies.BAD_ARGUMENTS, "slot.resources.party_size is required")
        if size < 1:
            return problem(
                replies.BAD_ARGUMENTS, f"slot.resources.party_size {online_sizes(r, size)}"
            )
        found = self._slot_of(r, slot_in.start_sec, slot_in.duration_sec, size)
        if found is None:
            return failure(
                SLOT_UNAVAILABLE, _why_unpublished(r, slot_in.start_sec, size, slot_in.duration_sec)
            )
        day, slot = found
        user = req.user_information
        user_scope = f"user:{partner.id}"
        clash = self._clash(partner, user.user_id, r, day, slot.start_sec, size, now)
        booking_id = new_booking_id()
        index = {
            "start_sec": slot.start_sec,
            "duration_sec": calendar.duration_sec(r, day, slot, size),
            "party_size": size,
            "user": user.model_dump(),
            "moves": 0,
        }
        if room is not None:
            index["room_id"] = room
        response = {
            "booking": self._booking(booking_id, {**index, "merchant_id": r.merchant_id}, CONFIRMED)
        }

        def remember(_op: list[Any], _result: Result) -> list[Remember]:
            records: list[Remember] = [(user_scope, f"{user.user_id}/{booking_id}", r.merchant_id)]
            records += clash.records()
            if req.idempotency_token:
                records.append((token_scope, req.idempotency_token, response))
            return records

        meta = {
            "source": "partner",
            "partner": partner.id,
            "name": f"{user.given_name} {user.family_name}".strip(),
            "phone": user.telephone,
            "email": user.email,
            "user_id": user.user_id,
            "notes": req.additional_request or "",
        }
        for _ in range(LOOKUPS):
            try:
                outcome = book.book(
                    day, slot, size, now, meta, booking_id, remember, index, room,
                    check=clash.check,
                )  # fmt: skip
                break
            except DuplicateKey as dup:
                if dup.scope == token_scope:  # the same token, concurrently: one booking only
                    return _token_reused(req, Reply(dup.value)) or Reply(dup.value)
                if not clash.lost(dup):
                    raise
        else:
            return problem(
                replies.CHANGED_MEANWHILE,
                "booking not made: this user's other bookings kept changing while it was"
                " tried: retry",
            )
        if isinstance(outcome, Refused) and clash.said:
            return clash.said[-1]
        if (stale := out_of_date(outcome)) is not None:
            return stale
        if isinstance(outcome, Refused) or outcome.rejected is not None:
            return failure(SLOT_UNAVAILABLE, getattr(outcome, "message", "no table left"))
        return Reply(response)

    def update_booking(self, partner: Partner, payload: Any) -> Reply:
        req = parse(UpdateBookingRequest, payload)
        if isinstance(req, Reply):
            return req
        booking_id = req.booking.booking_id
        index = self._index(partner, booking_id)
        if isinstance(index, Reply):
            return index
        cancel = req.booking.status is not None and req.booking.status.upper() in (
            "CANCELED",
            "CANCELLED",
        )
        # Spelled in any case, as CANCELED is: "confirmed" with a new slot is a change.
        if (
            not cancel
            and req.booking.status is not None
            and req.booking.status.upper() != CONFIRMED
        ):
            return problem(
                replies.BAD_ARGUMENTS,
                f"cannot set status {req.booking.status}: a partner sets CANCELED, or CONFIRMED"
                " (or no status) with a new slot",
            )
        new = req.booking.slot or SlotIn()
        asked_size = new.resources.party_size if new.resources else None
        # 0 is not "unchanged": a field left out is; a zero start or party is a bad argument.
        now = self.clock()
        book = self.books[str(index["merchant_id"])]
        if not cancel and asked_size is not None and asked_size < 1:
            return problem(
                replies.BAD_ARGUMENTS,
                f"slot.resources.party_size {online_sizes(book.restaurant, asked_size)}",
            )
        if not cancel and new.start_sec is not None and new.start_sec <= 0:
            return problem(
                replies.BAD_ARGUMENTS, f"slot.start_sec must be a Unix time, not {new.start_sec}"
            )
        # A change stays at the booking's restaurant and service: naming another one is a
        # bad argument (as CreateBooking's unknown service), not a change made where the
        # booking is, whose time would be read on another restaurant's clock and grid.
        if not cancel and new.merchant_id not in (None, book.restaurant.merchant_id):
            return problem(
                replies.BAD_ARGUMENTS,
                f"booking {booking_id} is at {book.restaurant.merchant_id!r}, not"
                f" {new.merchant_id!r}: a booking cannot move to another merchant (book"
                " there anew, then cancel this one)",
            )
        if not cancel and new.service_id not in (None, book.restaurant.service_id):
            return problem(replies.BAD_ARGUMENTS, f"unknown service {new.service_id!r}")
        index, status = self._fresh_status(partner, booking_id, index, now)
        # A change of the booking made meanwhile (the host's: it cancels the engine
        # reservation read here and books the party again under another) makes this one's
        # cancel or move of the booking as read fail although the booking stands: the
        # request is worked out again on the fresh record, LOOKUPS times in all. What the
        # partner left out (the time, when it asks for another size) is the booking's as it
        # now stands, so the host's change is kept, not undone.
        for _ in range(LOOKUPS):
            if cancel:
                reply = self._cancel(partner, book, booking_id, index, status, now)
            else:
                reply = self._update_once(partner, book, booking_id, index, status, new, now)
            told = reply.body.get("booking")
            shown_cancelled = isinstance(told, dict) and told.get("status") == CANCELED
            if "booking_failure" not in reply.body and not shown_cancelled:
                return reply  # made (on the booking as it stood), or a bad argument
            fresh = self._index(partner, booking_id)
            if isinstance(fresh, Reply) or _where(fresh) == _where(index):
                return reply  # refused (or cancelled) as the booking stands: the answer
            index, status = fresh, self._status(fresh, now)
        return changed_meanwhile(booking_id, "cancel" if cancel else "update")

    def _update_once(
        self,
        partner: Partner,
        book: DayBook,
        booking_id: str,
        index: dict[str, Any],
        status: str,
        new: SlotIn,
        now: datetime,
    ) -> Reply:
        """`update_booking`'s move or resize of the booking as `index` (just read) has it."""
        asked_size = new.resources.party_size if new.resources else None
        size = asked_size if asked_size is not None else int(index["party_size"])
        start = new.start_sec if new.start_sec is not None else int(index["start_sec"])
        asked_room = new.resources.room_id if new.resources else None
        room = asked_room if asked_room is not None else index.get("room_id")  # kept unless asked
        # A booking's duration is the restaurant's turn for its party size (PRODUCT.md's
        # turn(n); the format lists a new duration_sec as an update, but we publish one
        # duration per size and slot): a duration_sec that is neither the booking's own (the
        # partner echoing it back, often with a new size) nor the turn of the booking as
        # changed is asked of a slot we do not publish, SLOT_UNAVAILABLE as CreateBooking
        # answers it, and nothing changes. It was answered 200 with the booking unchanged,
        # which a partner takes for the change made.
        r = book.restaurant
        if new.duration_sec is not None and new.duration_sec not in (
            index.get("duration_sec"),
            _duration(r, start, size),
        ):
            return _unchangeable(status) or failure(
                SLOT_UNAVAILABLE,
                _why_unpublished(r, start, size, new.duration_sec)
                + " (a booking's duration is the restaurant's turn for its party size)",
            )
        if _as_asked(index, size, start, room):
            return Reply({"booking": self._booking(booking_id, index, status)})  # idempotent
        return self._move(partner, book, booking_id, index, status, size, start, room, now)

    def _move(
        self,
        partner: Partner,
        book: DayBook,
        booking_id: str,
        index: dict[str, Any],
        status: str,
        size: int,
        start: int,
        room: str | None,
        now: datetime,
    ) -> Reply:
        refused = _unchangeable(status)
        if refused is not None:
            return refused
        # A change cancels the booking as it stands and books the party again (book.move):
        # inside cancel_cutoff_minutes that gives up the slot a cancel may not give up, so a
        # move, resize or change of room is refused as the cancel would be (else moving a
        # booking away and cancelling it there would get round the cutoff).
        late = book.cancel_refused(
            date.fromisoformat(str(index["day"])), str(index["reservation_id"]), now
        )
        if late is not None:
            return failure(OUTSIDE_CANCELLATION_WINDOW, f"no online change: {late.message}")
        r = book.restaurant
        # The turn time follows the party size, so an update's duration (often the old one,
        # echoed back by the partner) is not held against it.
        duration = None
        found = self._slot_of(r, start, duration, size)
        if found is None:
            return failure(SLOT_UNAVAILABLE, _why_unpublished(r, start, size))
        day, slot = found
        user_id = (index.get("user") or {}).get("user_id")
        clash = None
        if isinstance(user_id, str) and user_id:
            clash = self._clash(partner, user_id, r, day, slot.start_sec, size, now, booking_id)
        moves = int(index.get("moves", 0)) + 1
        engine_id = f"{booking_id}.{moves}"  # engine ids are never reused; the booking id stays
        moved = {
            **index,
            "day": day.isoformat(),
            "reservation_id": engine_id,
            "start_sec": slot.start_sec,
            "duration_sec": calendar.duration_sec(r, day, slot, size),
            "party_size": size,
            "moves": moves,
        }
        if room is not None:
            moved["room_id"] = room
        meta = {"source": "partner", "partner": partner.id, "booking_id": booking_id}
        for _ in range(LOOKUPS):
            try:
                outcome = book.move(
                    date.fromisoformat(str(index["day"])),
                    str(index["reservation_id"]),
                    day,
                    slot,
                    size,
                    now,
                    engine_id,
                    meta,
                    lambda _op: [(BOOKING_SCOPE, booking_id, moved)],
                    room,
                    check=clash.check if clash is not None else None,
                    remember=clash.records if clash is not None else None,
                )
                break
            except DuplicateKey as dup:
                if clash is None or not clash.lost(dup):
                    raise
        else:
            return changed_meanwhile(booking_id, "update")
        if isinstance(outcome, Refused) and clash is not None and clash.said:
            return clash.said[-1]
        if (stale := out_of_date(outcome)) is not None:
            return stale
        if isinstance(outcome, Refused):
            if outcome.code == RESERVATION_NOT_ACTIVE:
                return failure(BOOKING_NOT_CANCELLABLE, "this booking can no longer be changed")
            return failure(SLOT_UNAVAILABLE, outcome.message)
        return Reply({"booking": self._booking(booking_id, moved, CONFIRMED)})

    def _cancel(
        self,
        partner: Partner,
        book: DayBook,
        booking_id: str,
        index: dict[str, Any],
        status: str,
        now: datetime,
    ) -> Reply:
        if status == CANCELED:
            return failure(BOOKING_ALREADY_CANCELLED, "the booking is already cancelled")
        if status != CONFIRMED:
            return failure(BOOKING_NOT_CANCELLABLE, "the booking is past or no-show")
        day = date.fromisoformat(str(index["day"]))
        late = book.cancel_refused(day, str(index["reservation_id"]), now)
        if late is not None:
            return failure(OUTSIDE_CANCELLATION_WINDOW, late.message)
        cancelled = Reply({"booking": self._booking(booking_id, index, CANCELED)})  # before
        # Who asked is logged: the partner is not notified of its own cancellation.
        meta = {"source": "partner", "partner": partner.id}
        outcome = book.operate(
            day, now, "cancel", str(index["reservation_id"]), meta=meta, keep_rejected=False
        )
        if (stale := out_of_date(outcome)) is not None:
            return stale
        if isinstance(outcome, Refused) or isinstance(outcome.result, Rejected):
            # Cancelled meanwhile by the same request sent to another receiver at once (a
            # partner's retry): cancelled as asked, not a booking that cannot be cancelled.
            fresh = self._index(partner, booking_id)
            if not isinstance(fresh, Reply) and self._status(fresh, now) == CANCELED:
                return Reply({"booking": self._booking(booking_id, fresh, CANCELED)})
            return failure(BOOKING_NOT_CANCELLABLE, "the booking can no longer be cancelled")
        return cancelled

    def booking_status(self, partner: Partner, payload: Any) -> Reply:
        req = parse(BookingIdRequest, payload)
        if isinstance(req, Reply):
            return req
        index = self._index(partner, req.booking_id)
        if isinstance(index, Reply):
            return index
        index, status = self._fresh_status(partner, req.booking_id, index, self.clock())
        if self._kept_changing(partner, req.booking_id, index, status):
            return changed_meanwhile(req.booking_id, "GetBookingStatus")
        return Reply(
            {
                "booking_id": req.booking_id,
                "booking_status": status,
                "prepayment_status": PREPAYMENT_NOT_PROVIDED,
            },
        )

    def list_bookings(self, partner: Partner, payload: Any) -> Reply:
        req = parse(UserIdRequest, payload)
        if isinstance(req, Reply):
            return req
        now = self.clock()
        bookings = []
        for booking_id in _users_ids(self.store, f"user:{partner.id}", req.user_id):
            index = self.store.recall(BOOKING_SCOPE, booking_id)
            merchant = str(index.get("merchant_id")) if isinstance(index, dict) else ""
            if isinstance(index, dict) and merchant in self.books and partner.may_use(merchant):
                index, status = self._fresh_status(partner, booking_id, index, now)
                if self._kept_changing(partner, booking_id, index, status):
                    return changed_meanwhile(booking_id, "ListBookings")
                bookings.append(self._booking(booking_id, index, status))
        return Reply({"bookings": bookings})

    # -- waitlist ----------------------------------------------------------------------------

    def _estimate(
        self,
        book: DayBook,
        day: date,
        size: int,
        quote: int,
        now: datetime,
        entry_id: str | None = None,
    ) -> dict[str, Any]:
        """A wait estimate; for an entry already waiting (`entry_id`), the parties ahead of
        it, never itself or those behind."""
        floor = book.restaurant.floor
        queue = book.stand(day).queue()
        ids = [p.id for p in queue]
        if entry_id is not None and entry_id in ids:
            queue = queue[: ids.index(entry_id)]
        if floor.is_large(size):
            ahead = sum(1 for p in queue if p.size is not None and floor.is_large(p.size))
        else:
            cls = floor.quote_class(size)
            ahead = sum(
                1
                for p in queue
                if p.size is not None
                and not floor.is_large(p.size)
                and floor.quote_class(p.size) == cls
            )
        start = int(now.timestamp()) + quote * 60
        end = start + max(ESTIMATE_MIN_WIDTH, quote * 15)
        # Nobody is seated after the service's close (the entry is CANCELED then): a range
        # running past it told the partner a seat time the restaurant cannot give. The start
        # is before the close (a wait reaching it is no estimate: wait_past_close).
        closing = calendar.service_closing(book.restaurant, day, now)
        if closing is not None:
            end = min(end, int(closing.timestamp()))
        return {
            "party_size": size,
            "wait_length": {
                "parties_ahead_count": ahead,
                "estimated_seat_time_range": {"start_seconds": start, "end_seconds": end},
            },
            "waitlist_confirmation_mode": WAITLIST_SYNCHRONOUS,
        }

    def wait_estimates(self, partner: Partner, payload: Any) -> Reply:
        req = parse(WaitEstimatesRequest, payload)
        if isinstance(req, Reply):
            return req
        book = self._book_of(partner, req.merchant_id)
        if isinstance(book, Reply):
            return book
        if (unknown := _unknown_service(book, req.service_id)) is not None:
            return unknown
        r, now = book.restaurant, self.clock()
        day = calendar.in_service(r, now)
        if day is None:  # a status other than OPEN: no other field
            return Reply({"waitlist_status": "CLOSED_OTHER"})
        # Sizes above max_online_party_size are no partner's to queue (see
        # create_waitlist_entry): left out, as a size the restaurant cannot serve is.
        sizes = [
            n
            for n in dict.fromkeys(req.party_size)
            if 1 <= n <= r.online_limit and spots_total(r.floor, n) > 0
        ]
        *quotes, board = book.peek(day, now, [*(["quote", n] for n in sizes), ["board"]])
        # With the waitlist full, or partners' share of it, only a party a table is free for
        # now could come: a size that would wait is left out, as CreateWaitlistEntry would
        # refuse it (WAITLIST_FULL).
        waiting = board["waiting"]
        full = (
            len(waiting) >= r.waitlist_limit
            or book.partners_waiting(day, waiting) >= r.partner_waitlist_limit
        )
        # A wait that runs past the service's close is no estimate (nobody is seated after
        # it): that size is left out, as one the restaurant cannot serve is.
        kept = [
            (n, int(q))
            for n, q in zip(sizes, quotes, strict=True)
            if book.wait_past_close(day, now, int(q)) is None and not (full and q != 0)
        ]
        if sizes and not kept:
            return Reply({"waitlist_status": "CLOSED_OTHER"})
        if kept and all(q == 0 for _n, q in kept):
            return Reply({"waitlist_status": "CLOSED_NO_WAIT"})
        estimates = [self._estimate(book, day, n, q, now) for n, q in kept]
        return Reply({"waitlist_status": "OPEN", "wait_estimate": estimates})

    def create_waitlist_entry(self, partner: Partner, payload: Any) -> Reply:
        req = parse(CreateWaitlistEntryRequest, payload)
        if isinstance(req, Reply):
            return req
        token_scope = f"v3wait:{partner.id}"
        return self._once(
            token_scope,
            req.idempotency_token,
            "waitlist_entry_id",
            lambda: self._create_waitlist_entry(partner, req, token_scope),
            lambda stored: self._entry_token_reused(req, stored) or stored,
        )

    def _entry_token_reused(self, req: CreateWaitlistEntryRequest, stored: Reply) -> Reply | None:
        """400 when a CreateWaitlistEntry's idempotency_token was used by a request for
        another entry (another merchant, party size or user), else None: as CreateBooking's
        (_token_reused), a party of 6 was told it waits under a party of 2's entry."""
        entry_id = stored.body.get("waitlist_entry_id")
        index = self.store.recall(WAITLIST_SCOPE, str(entry_id))
        if not isinstance(index, dict):
            return None
        made = (index.get("merchant_id"), index.get("party_size"), index.get("user_id"))
        if made == (req.merchant_id, req.party_size, req.user_information.user_id):
            return None
        return problem(
            replies.BAD_ARGUMENTS,
            f"idempotency_token {req.idempotency_token!r} was used for another waitlist entry"
            f" ({entry_id}): a new entry needs a new token",
        )

    def _create_waitlist_entry(
        self, partner: Partner, req: CreateWaitlistEntryRequest, token_scope: str
    ) -> Reply:
        book = self._book_of(partner, req.merchant_id)
        if isinstance(book, Reply):
            return book
        if (unknown := _unknown_service(book, req.service_id)) is not None:
            return unknown
        r, now = book.restaurant, self.clock()
        key = "waitlist_business_logic_failure"
        day = calendar.in_service(r, now)
        if day is None:
            return failure("MERCHANT_CLOSED", f"{r.name} is not serving now", key)
        size = req.party_size
        if size < 1:
            return failure("BELOW_MIN_PARTY_SIZE", f"party_size {online_sizes(r, size)}", key)
        # max_online_party_size bounds a partner's waitlist as it bounds its bookings: a
        # restaurant whose parties above 8 book by phone would not expect a party of 12 in
        # its queue from an app, told a seat time the host never gave it. The host's own
        # walk-ins go up to max_party_size; the queue seats on every table (walk-in ones
        # included), so the floor stays the whole floor.
        if size > r.online_limit:
            why = f"parties above {r.online_limit} join the waitlist at {r.name}, not online"
            return failure("ABOVE_MAX_PARTY_SIZE", why, key)
        if spots_total(r.floor, size) == 0:
            return failure("ABOVE_MAX_PARTY_SIZE", f"{r.name} cannot seat {size}", key)
        user = req.user_information
        user_scope = f"wluser:{partner.id}"
        stand = book.stand(day)
        for other_id in _users_ids(self.store, user_scope, user.user_id):
            party = stand.parties.get(other_id)
            if party is not None and party.state is PartyState.WAITING:
                other = self.store.recall(WAITLIST_SCOPE, other_id)
                # An entry of an earlier service of the day is over (see _queue_closed).
                if (
                    not isinstance(other, dict)
                    or self._queue_closed(book, other, party, now) is None
                ):
                    return failure("EXISTING_WAITLIST_ENTRY", "this user is already waiting", key)
        [quoted] = book.peek(day, now, [["quote", size]])
        if quoted == 0:
            return failure("NO_WAIT", "a table is free: walk right in", key)
        closing = book.wait_past_close(day, now, int(quoted))
        if closing is not None:
            return failure(
                "WAITLIST_FULL",
                f"a party of {size} would wait past the"
                f" {closing.astimezone(r.tz):%H:%M} close: no more on the waitlist for it",
                key,
            )
        entry_id = "wl-" + new_booking_id()[3:]
        response = {"waitlist_entry_id": entry_id}
        created = int(now.timestamp())

        def remember(_op: list[Any], _result: Result) -> list[Remember]:
            index = {
                "merchant_id": r.merchant_id,
                "day": day.isoformat(),
                "partner": partner.id,
                "party_size": size,
                "user_id": user.user_id,
                "created_time_seconds": created,
            }
            records: list[Remember] = [
                (WAITLIST_SCOPE, entry_id, index),
                (user_scope, f"{user.user_id}/{entry_id}", r.merchant_id),
            ]
            if req.idempotency_token:
                records.append((token_scope, req.idempotency_token, response))
            return records

        meta = {
            "source": "partner",
            "partner": partner.id,
            "name": f"{user.given_name} {user.family_name}".strip(),
            "party_size": size,
        }
        try:
            outcome = book.operate(
                day,
                now,
                "walk_in",
                entry_id,
                size,
                meta=meta,
                remember=remember,
                keep_rejected=False,
            )
        except DuplicateKey as dup:
            if dup.scope == token_scope:
                return self._entry_token_reused(req, Reply(dup.value)) or Reply(dup.value)
            raise
        if (stale := out_of_date(outcome)) is not None:
            return stale
        if isinstance(outcome, Refused) and outcome.code == WAITLIST_FULL:
            return failure("WAITLIST_FULL", outcome.message, key)
        if isinstance(outcome, Refused):
            return failure("MERCHANT_CLOSED", outcome.message, key)
        if isinstance(outcome.result, Rejected):
            return problem(replies.BAD_ARGUMENTS, f"walk-in refused: {outcome.result.code}")
        return Reply(response)

    def _entry(self, partner: Partner, entry_id: str) -> dict[str, Any] | Reply:
        index = self.store.recall(WAITLIST_SCOPE, entry_id)
        if (
            not isinstance(index, dict)
            or index.get("partner") != partner.id
            or str(index.get("merchant_id")) not in self.books
            or not partner.may_use(str(index.get("merchant_id")))
        ):
            return problem(replies.BAD_ARGUMENTS, f"unknown waitlist entry {entry_id!r}")
        return index

    def _waiting_party(
        self, partner: Partner, payload: Any, missing: str = replies.BAD_ARGUMENTS
    ) -> tuple[str, dict[str, Any], DayBook, date, Party | None] | Reply:
        """The entry a request names: its id, index record, day and engine party. An
        unknown entry is refused with `missing` (a delete of what does not exist is 404)."""
        req = parse(WaitlistEntryIdRequest, payload)
        if isinstance(req, Reply):
            return req
        entry_id = req.waitlist_entry_id
        index = self._entry(partner, entry_id)
        if isinstance(index, Reply):
            return problem(missing, f"unknown waitlist entry {entry_id!r}")
        book = self.books[str(index["merchant_id"])]
        day = date.fromisoformat(str(index["day"]))
        return entry_id, index, book, day, book.stand(day).parties.get(entry_id)

    def get_waitlist_entry(self, partner: Partner, payload: Any) -> Reply:
        found = self._waiting_party(partner, payload)
        if isinstance(found, Reply):
            return found
        entry_id, index, book, day, party = found
        opening = calendar.opening_instant(book.restaurant, day)
        created = int(index["created_time_seconds"])
        times: dict[str, int] = {"created_time_seconds": created}

        def instant(minute: int) -> int:
            # The engine keeps whole minutes; a state is never before the entry's creation
            # (kept to the second), which may fall inside that minute.
            assert opening is not None
            return max(created, int((opening + timedelta(minutes=minute)).timestamp()))

        now = self.clock()
        state = "WAITING"
        closed = self._queue_closed(book, index, party, now)
        if party is not None and opening is not None and party.seated_at is not None:
            state = "SEATED"  # the log's word, even if the host seated them after closing
            times["seated_time_seconds"] = instant(party.seated_at)
        elif party is not None and opening is not None and party.state is PartyState.LEFT:
            state = "CANCELED"
            times["canceled_time_seconds"] = instant(party.ended_at or 0)
        elif closed is not None:
            state = "CANCELED"  # the queue closed with the party unseated: see _queue_closed
            times["canceled_time_seconds"] = max(created, closed)
        entry: dict[str, Any] = {"waitlist_entry_state": state, "waitlist_entry_state_times": times}
        if state == "WAITING":
            size = int(index["party_size"])
            quote = book.own_quote(day, now, entry_id, size)
            # As BatchGetWaitEstimates: a wait running past the service's close is no
            # estimate (nobody is seated after it; the entry is CANCELED at the close unless
            # seated before), so a waiting entry is then told no seat time at all.
            if book.wait_past_close(day, now, quote) is None:
                entry["wait_estimate"] = self._estimate(book, day, size, quote, now, entry_id)
        return Reply({"waitlist_entry": entry})

    @staticmethod
    def _queue_closed(
        book: DayBook, index: dict[str, Any], party: Party | None, now: datetime
    ) -> int | None:
        """When an entry stopped being in any queue without being seated or leaving it
        (Unix seconds), or None while it still waits.

        An entry joins the queue of the service running when it was created (entries are
        taken only then), and that queue ends when the service closes: a party still waiting
        at the close was never seated and is not waiting for the next service or the next
        day, whose queues it never joined. So, as partner-formats.md's states go, it left
        the queue unseated: CANCELED, at the close. An entry whose party is in no queue of
        its day at all is the same, from when it was created. (A party the host seats after
        the close is SEATED: get_waitlist_entry reads the log's seating first.)"""
        created = int(index["created_time_seconds"])
        if party is None:
            return created
        if party.state is not PartyState.WAITING:
            return None  # seated or left: the log says when
        r, day = book.restaurant, date.fromisoformat(str(index["day"]))
        created_at = datetime.fromtimestamp(created, UTC)
        closing = calendar.service_closing(r, day, created_at) or calendar.closing_instant(r, day)
        if closing is None or now < closing:
            return None
        return int(closing.timestamp())

    def delete_waitlist_entry(self, partner: Partner, payload: Any) -> Reply:
        reply, left = self._delete_waitlist_entry(partner, payload)
        if left is not None and isinstance(left.result, Rejected):
            # Seated (or gone) between the read and the leave (the host seated the party, on
            # another receiver say): answered as it now stands, never "deleted". No longer
            # waiting, the second pass does not try to leave again.
            reply, _ = self._delete_waitlist_entry(partner, payload)
        return reply

    def _delete_waitlist_entry(
        self, partner: Partner, payload: Any
    ) -> tuple[Reply, Applied | None]:
        """The answer to a DeleteWaitlistEntry, and the leave's outcome when one was tried."""
        found = self._waiting_party(partner, payload, missing=replies.NOT_FOUND)
        if isinstance(found, Reply):
            return found, None
        entry_id, index, book, day, party = found
        if party is not None and party.state in (PartyState.SEATED, PartyState.GONE):
            # Seated (or seated and gone): nothing can be cancelled any more, and saying {}
            # would tell the partner it was. The spec puts a business failure in the answer.
            when = "was seated" if party.seated_at is not None else "is no longer waiting"
            return failure(
                "CAUSE_UNSPECIFIED",
                f"the party {when}: a seated entry cannot be deleted",
                "waitlist_business_logic_failure",
            ), None
        if (
            party is None
            or party.state is PartyState.LEFT
            or self._queue_closed(book, index, party, self.clock()) is not None
        ):
            return Reply({}), None  # already cancelled: deleting again changes nothing
        left = book.operate(day, self.clock(), "leave", entry_id, keep_rejected=False)
        if (stale := out_of_date(left)) is not None:
            return stale, None  # not left: never {} (deleted)
        return Reply({}), left if isinstance(left, Applied) else None
