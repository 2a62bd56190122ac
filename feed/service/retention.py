"""Which idempotency records only answer retries, and until when each may be asked for
(store.retention removes them `[retention] keep_days` later; the server runs it hourly).

Each rule gives the latest moment a record answers for: the slot of the booking it made,
the day of the booking or waitlist entry it acted on, or when it was received ("at",
stamped on records written since), whichever is latest. A record for which none of these
can be told is kept.

Why removing one cannot make a partner or host be told anything untrue, nor make anything
happen twice (a retry sent later than `keep_days` past that moment is taken as a new
request, and a new request about a past moment changes nothing):

- a webhook's event id (`event:<partner>`): dated by its booking as it now stands too (a
  booking moved to a later day keeps it, so a retry is answered as the booking is); its
  `reservation.requested` again books a start that is long past: refused (409, nothing
  booked); its `reservation.cancelled` or
  `.checked_in` again acts on the booking as it now stands: ended long ago, refused as
  not active (what it is), nothing changed.
- a partner's own reservation id (`partnerres:<partner>`): a `reservation.requested`
  naming it again for the same (past) slot is refused as above; one for a new slot books
  it, as a reservation id the partner gives a new reservation after keep_days is one.
- a CreateBooking token (`v3create:<partner>`): a retry books its (past) slot anew:
  SLOT_UNAVAILABLE, nothing booked. The booking itself is still there for
  GetBookingStatus and ListBookings (booking index, user records and logs are kept).
- a CreateWaitlistEntry token (`v3wait:<partner>`): its entry's day is over; the entry
  itself is kept (GetWaitlistEntry reads `waitlist`).
- a host's Idempotency-Key (`host:<merchant>:<route>`): a host write is of the day being
  served, so a retry keep_days later is a new tap on another day.
"""

from __future__ import annotations

import time as wallclock
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from feed.service.days import BOOKING_SCOPE
from feed.service.events import Events
from feed.service.partner_api import WAITLIST_SCOPE
from feed.service.receiver import PARTNER_RESERVATIONS as PARTNER_RESERVATIONS_SCOPE
from store.log import JSON, LogStore
from store.retention import DAY, Removed, Rule, prune

# The scopes (prefixes: one scope per partner, or per restaurant and route) of records
# that only answer retries. Written in receiver.py and partner_api.py.
EVENTS = "event:"
PARTNER_RESERVATIONS = f"{PARTNER_RESERVATIONS_SCOPE}:"
CREATE_TOKENS = "v3create:"
WAITLIST_TOKENS = "v3wait:"
HOST_KEYS = "host:"


def day_over(day: date) -> float:
    """A moment when the service day `day` is over wherever the restaurant is: its last
    service may run past midnight, and its zone be up to 14 hours ahead of UTC or 12
    behind, so two days after its UTC midnight."""
    return datetime.combine(day + timedelta(days=2), time(), UTC).timestamp()


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _latest(*times: float | None) -> float | None:
    known = [t for t in times if t is not None]
    return max(known) if known else None


def rules(store: LogStore, cutoff: float | None = None) -> Mapping[str, Rule]:
    """The rules of every scope that only answers retries, reading `store` where a record
    names a booking or entry whose day tells how long it matters. With the pass's `cutoff`,
    a record whose own slot is not before it is kept without reading its booking (a pass
    reads the records of a month of bookings every hour)."""

    def kept(start: float | None) -> bool:
        return start is not None and cutoff is not None and start >= cutoff

    def booking_day(booking_id: Any) -> float | None:
        if not isinstance(booking_id, str):
            return None
        index = store.recall(BOOKING_SCOPE, booking_id)
        if isinstance(index, dict) and isinstance(index.get("day"), str):
            try:
                return day_over(date.fromisoformat(index["day"]))
            except ValueError:
                return None
        return None

    def replied(key: str, value: JSON) -> float | None:
        # {"digest", "body", "at"}: a webhook's or a host key's stored answer.
        if not isinstance(value, dict):
            return None
        body = value.get("body")
        body = body if isinstance(body, dict) else {}
        # Its receipt and the slot it answered with, or, once both are past the cutoff, the
        # day of the booking it names as that booking now stands: a booking the host (or the
        # partner) moved to a later day is still to come, and the event sent again is
        # answered as it now stands (Receiver._replay), not refused as a request for a past
        # slot. A record from before "at" without a slot is dated by its booking alone.
        known = _latest(_number(value.get("at")), _number(body.get("start_sec")))
        if kept(known):
            return known
        return _latest(known, booking_day(body.get("reservation_id")))

    def reservation(key: str, value: JSON) -> float | None:
        # {"booking_id", "room_id", "reply": {... "start_sec"}}
        if not isinstance(value, dict):
            return None
        reply = value.get("reply")
        start = _number(reply.get("start_sec")) if isinstance(reply, dict) else None
        if kept(start):
            return start
        return _latest(start, booking_day(value.get("booking_id")))

    def created(key: str, value: JSON) -> float | None:
        # {"booking": {"booking_id", "slot": {"start_sec"...}}}
        booking = value.get("booking") if isinstance(value, dict) else None
        if not isinstance(booking, dict):
            return None
        slot = booking.get("slot")
        start = _number(slot.get("start_sec")) if isinstance(slot, dict) else None
        if kept(start):
            return start
        return _latest(start, booking_day(booking.get("booking_id")))

    def waiting(key: str, value: JSON) -> float | None:
        # {"waitlist_entry_id"}: the entry's index says its day.
        entry_id = value.get("waitlist_entry_id") if isinstance(value, dict) else None
        if not isinstance(entry_id, str):
            return None
        index = store.recall(WAITLIST_SCOPE, entry_id)
        if not isinstance(index, dict) or not isinstance(index.get("day"), str):
            return None
        try:
            over = day_over(date.fromisoformat(index["day"]))
        except ValueError:
            return None
        return _latest(over, _number(index.get("created_time_seconds")))

    return {
        EVENTS: replied,
        PARTNER_RESERVATIONS: reservation,
        CREATE_TOKENS: created,
        WAITLIST_TOKENS: waiting,
        HOST_KEYS: replied,
    }


class Retention:
    """The server's retention pass (store.retention.prune with these rules), told to the
    log and the metrics (`events.retained`)."""

    def __init__(
        self,
        store: LogStore,
        keep_days: int,
        events: Events,
        wall: Callable[[], float] = wallclock.time,
    ) -> None:
        """`wall`: this machine's clock (Unix seconds), which stamps delivered messages and
        export records; `run`'s `now` is the server's (pinned by --now), which dates the
        records that answer retries ("at", slots, days)."""
        self.store = store
        self.keep_days = keep_days
        self.events = events
        self.wall = wall

    def run(self, now: float, stop: Callable[[], bool] = lambda: False) -> Removed:
        keep = self.keep_days * DAY
        removed = prune(
            self.store, now, keep, rules(self.store, now - keep), stop, wall=self.wall()
        )
        self.events.retained(removed.by_kind(), self.keep_days)
        return removed
