"""What partners must be told when a day changes: the outbox messages of one change.

A change to the still-booked reservations changes the day's availability: every partner
with a notify URL that may use the restaurant gets one availability replace for that day
(merged while queued; its content is worked out when it is sent; due at the restaurant's
next send moment, so its changed days go out together). A partner's booking that
we cancelled or that became a no-show gets a booking notification, unless the partner's own
request cancelled it. Pure: the caller gives the time and writes the messages.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from engine.holds import Reservation, ReservationStatus
from feed.settings import Partner, Settings
from feed.venue import calendar
from feed.venue.restaurant import Restaurant
from store.log import OutboxMessage

AVAILABILITY = "availability"
# A restaurant sends at most one replace per this many seconds, with every day that changed
# meanwhile, so the changes of a busy moment go out as one send (partners want them within
# minutes; a replace per booking would cost both sides). See `replace_due`.
COALESCE_SECONDS = 10.0  # the default of settings' [export] coalesce_seconds
BOOKING = "booking"
_STATUS = {ReservationStatus.CANCELLED: "CANCELED", ReservationStatus.NO_SHOW: "NO_SHOW"}


def replace_due(merchant_id: str, now: float, window: float) -> float:
    """When the replace of a restaurant's day changed at `now` is sent: the restaurant's
    next send moment, less than `window` away.

    Each restaurant sends at its own moments, `window` apart and offset by a hash of its id.
    Every day of the restaurant that changes within one window is then due at the same
    moment and goes out in one request (see `outbox.batches`), and the restaurants' sends
    are spread over the window instead of all falling due after the same busy second. Under
    a steady flow of changes a restaurant sends once per window."""
    if window <= 0:
        return now
    phase = zlib.crc32(merchant_id.encode("utf-8")) / 2**32 * window
    return phase + math.ceil((now - phase) / window) * window


UPDATE_MASK = "_updateMask"  # kept with a booking notification, sent in its URL


def scheduling_overrides(r: Restaurant, start_sec: int) -> dict[str, int]:
    """An availability entry's scheduling_rule_overrides, the feed's and a replace's alike
    (a replace replaces the feed's entries of its window, these with them): the last second
    it can be booked online (when min_advance_minutes is set) and cancelled online (when
    cancel_cutoff_minutes is)."""
    out: dict[str, int] = {}
    if r.min_advance_minutes:
        out["last_bookable_sec"] = start_sec - r.min_advance_minutes * 60
    if r.cancel_cutoff_minutes:
        out["last_online_cancellable_sec"] = start_sec - r.cancel_cutoff_minutes * 60
    return out


def _duration(r: Restaurant, size: int, start: datetime | None = None) -> str:
    """A booking's duration: its party's turn in the service its slot is in."""
    if not 1 <= size <= r.max_party_size:
        return "0s"
    found = calendar.slot_at(r, start) if start is not None and r.varied_turns else None
    if found is not None:
        return f"{calendar.duration_sec(r, found[0], found[1], size)}s"
    return f"{r.duration_minutes(size) * 60}s"


def booking_payload(
    r: Restaurant,
    partner_id: str,
    booking_id: str,
    start: datetime,
    size: int,
    status: str,
    mask: Sequence[str],
) -> dict[str, Any]:
    """A booking notification's body (the booking as it now is, camelCase) and its mask."""
    return {
        "name": f"partners/{partner_id}/bookings/{booking_id}",
        "merchantId": r.merchant_id,
        "serviceId": r.service_id,
        "startTime": rfc3339(start),
        "duration": _duration(r, size, start),
        "partySize": size,
        "status": status,
        UPDATE_MASK: ",".join(mask),
    }


def rfc3339(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Notifier:
    """Turns a day's reservation changes into outbox messages for the configured partners."""

    def __init__(
        self, partners: Mapping[str, Partner], coalesce_seconds: float = COALESCE_SECONDS
    ) -> None:
        self.partners = {p.id: p for p in partners.values() if p.notify_url}
        self.coalesce_seconds = coalesce_seconds

    @classmethod
    def of(cls, settings: Settings) -> Notifier:
        """The notifier of a settings file's partners, as `serve` (and the CLI given
        --settings) tells them."""
        return cls(settings.partners, settings.export.coalesce_seconds)

    def messages(
        self,
        r: Restaurant,
        day: date,
        opening: datetime,
        changed: Sequence[Reservation],
        details: Mapping[str, Mapping[str, Any]],
        operations: Sequence[tuple[list[Any], Mapping[str, Any]]],
        now: float,
        floor_changed: bool = False,
    ) -> list[OutboxMessage]:
        """`changed`: reservations that left or joined the still-booked set; `operations`:
        the appended operations with their meta (who asked for the change). `floor_changed`:
        somebody sat down or got up (the live floor changes the day's availability too)."""
        if not (changed or floor_changed) or not self.partners:
            return []
        out = self.replaces(r, day, now)
        asked = {
            str(op[2]): meta.get("partner")
            for op, meta in operations
            if op and op[0] == "cancel" and len(op) > 2 and meta.get("source") == "partner"
        }
        moved = {
            str(op[2]): dict(meta)
            for op, meta in operations
            if op and op[0] == "cancel" and len(op) > 2 and meta.get("moved_to")
        }
        by_id = {res.id: res for res in changed}
        for reservation in changed:  # booking notifications
            if reservation.id in moved:  # a move: one change of the booking, not a cancel
                new = by_id.get(str(moved[reservation.id]["moved_to"]))
                if new is not None:  # the same day (across days, DayBook tells it)
                    out += self.move_messages(
                        r,
                        (day, reservation, details.get(reservation.id, {})),
                        (day, new, details.get(new.id, {})),
                        moved[reservation.id],
                        now,
                    )
                continue
            status = _STATUS.get(reservation.status)
            info = details.get(reservation.id, {})
            partner = self.partners.get(str(info.get("partner")))
            if status is None or partner is None or asked.get(reservation.id) == partner.id:
                continue
            size = int(info.get("party_size") or 0)
            booking_id = str(info.get("booking_id", reservation.id))
            start = opening + timedelta(minutes=reservation.at)
            payload = booking_payload(r, partner.id, booking_id, start, size, status, ["status"])
            out.append(OutboxMessage(partner.id, BOOKING, booking_id, payload, now))
        return out

    def move_messages(
        self,
        r: Restaurant,
        old: tuple[date, Reservation, Mapping[str, Any]],
        new: tuple[date, Reservation, Mapping[str, Any]],
        asked_by: Mapping[str, Any],
        now: float,
    ) -> list[OutboxMessage]:
        """A partner's booking moved (time, day or size) on our side: the booking as it now
        is, with the fields that changed in its update mask. Nothing when the partner asked."""
        (old_day, old_res, old_info), (new_day, new_res, new_info) = old, new
        partner = self.partners.get(str(old_info.get("partner")))
        if partner is None or (
            asked_by.get("source") == "partner" and asked_by.get("partner") == partner.id
        ):
            return []
        old_open = calendar.log_opening(r, old_day)
        new_open = calendar.opening_instant(r, new_day)
        if old_open is None or new_open is None:
            return []
        old_start = old_open + timedelta(minutes=old_res.at)
        new_start = new_open + timedelta(minutes=new_res.at)
        old_size = int(old_info.get("party_size") or 0)
        new_size = int(new_info.get("party_size") or 0)
        mask = [
            name
            for name, changed in (
                ("startTime", old_start != new_start),
                (
                    "duration",
                    _duration(r, old_size, old_start) != _duration(r, new_size, new_start),
                ),
                ("partySize", old_size != new_size),
            )
            if changed
        ]
        if not mask:
            return []
        booking_id = str(new_info.get("booking_id", old_info.get("booking_id", old_res.id)))
        payload = booking_payload(r, partner.id, booking_id, new_start, new_size, "CONFIRMED", mask)
        return [OutboxMessage(partner.id, BOOKING, booking_id, payload, now)]

    def replaces(self, r: Restaurant, day: date, now: float) -> list[OutboxMessage]:
        """One availability replace of `day` for every partner that may use `r`."""
        return [
            OutboxMessage(
                p.id,
                AVAILABILITY,
                f"{r.merchant_id}/{day.isoformat()}",
                {"merchant_id": r.merchant_id, "day": day.isoformat()},
                now,
                merge=True,
                not_before=replace_due(r.merchant_id, now, self.coalesce_seconds),
            )
            for p in self.partners.values()
            if p.may_use(r.merchant_id)
        ]
