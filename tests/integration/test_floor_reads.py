"""Every write reads the restaurant's floor in force from the store once, after the day's
log, and works itself out on that read (its seating pass, its table's choice, the check
before its append); a lookup reads it once for all its days. Read at each of those steps,
it cost a booking three store round trips where one is as safe: the write's own append
loses to a reload's fence entry whatever it read (days.DayBook._for_write)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from feed.service.floors import FLOOR_SCOPE, note_floor
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.service.signing import sign
from feed.settings import Partner, Settings
from feed.venue.restaurant import load_restaurant
from store.log import JSON
from store.sqlite import SQLiteStore

MARLOWES = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"
MID = "marlowes-kitchen"
SECRET = "s" * 32
PARTNER = Partner("p", SECRET, None, "user", "password")
NOW = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)  # a Friday's dinner (London is UTC then)


class FloorReadsCounted(SQLiteStore):
    """An SQLite store that counts the reads of the floor in force (floors.floor_in_force)."""

    floor_reads = 0

    def recall_last(self, scope: str, prefix: str) -> tuple[str, JSON] | None:
        if scope == FLOOR_SCOPE:
            self.floor_reads += 1
        return super().recall_last(scope, prefix)


def start_sec(day: int, hour: int, minute: int = 0) -> int:
    return int(datetime(2026, 12, day, hour, minute, tzinfo=UTC).timestamp())


class Server:
    """One server's receiver and partner API on a counted store, its floor kept (as
    `serve` keeps it when it starts)."""

    def __init__(self, tmp_path: Path) -> None:
        self.store = FloorReadsCounted(tmp_path / "hoststand.db")
        restaurant = load_restaurant(MARLOWES)
        note_floor(self.store, MID, restaurant.floor, NOW.timestamp())
        settings = Settings(partners={"p": PARTNER})
        self.receiver = Receiver([restaurant], self.store, settings, lambda: NOW)
        self.api = PartnerApi(self.receiver.books, self.store, lambda: NOW)
        self.events = 0

    def webhook(self, start: int, size: int = 2) -> Any:
        self.events += 1
        data = {"reservation_id": f"r{self.events}", "party_size": size, "name": "Ada",
                "start": datetime.fromtimestamp(start, UTC).isoformat()}  # fmt: skip
        event = {"id": f"e{self.events}", "type": "reservation.requested",
                 "merchant_id": MID, "data": data}  # fmt: skip
        body = json.dumps(event).encode()
        reply = self.receiver.webhook("p", sign(SECRET, int(NOW.timestamp()), body), body)
        assert reply.code is None, reply.body
        return reply.body

    def create(self, start: int) -> str:
        self.events += 1
        slot = {"merchant_id": MID, "service_id": "1000", "start_sec": start,
                "duration_sec": 2700, "resources": {"party_size": 2}}  # fmt: skip
        user = {"user_id": f"u{self.events}", "given_name": "Bo"}
        asked = {"slot": slot, "user_information": user, "idempotency_token": f"t{self.events}"}
        reply = self.api.create_booking(PARTNER, asked)
        assert reply.body["booking"]["status"] == "CONFIRMED", reply.body
        return str(reply.body["booking"]["booking_id"])

    def lookup(self, days: range) -> Any:
        slots = [{"service_id": "1000", "start_sec": start_sec(day, 19), "duration_sec": 2700,
                  "resource_ids": {"party_size": 2}} for day in days]  # fmt: skip
        reply = self.api.lookup(PARTNER, {"merchant_id": MID, "slot_time": slots})
        assert reply.code is None, reply.body
        return reply.body


def host_book(server: Server) -> None:
    reply = server.receiver.host_book(MID, 4, "2026-12-05T20:00", "Cy", "")
    assert reply.code is None, reply.body


def walk_in(server: Server) -> None:
    reply = server.receiver.host_operation(MID, "walk_in", "W", 2)
    assert reply.code is None, reply.body


def host_cancel(server: Server) -> None:
    booking = server.webhook(start_sec(5, 19, 30))["reservation_id"]
    server.store.floor_reads = 0
    reply = server.receiver.host_operation(MID, "cancel", booking)
    assert reply.code is None, reply.body


def host_change(server: Server) -> None:
    booking = server.webhook(start_sec(5, 19, 30))["reservation_id"]
    server.store.floor_reads = 0
    reply = server.receiver.host_change(MID, booking, 4, "2026-12-05T21:00")
    assert reply.code is None, reply.body


WRITES: dict[str, Callable[[Server], object]] = {
    "a-partners-webhook-booking": lambda server: server.webhook(start_sec(5, 19)),
    "a-v3-create-booking": lambda server: server.create(start_sec(5, 19)),
    "the-hosts-phone-booking": host_book,
    "the-hosts-walk-in": walk_in,
    "the-hosts-cancel": host_cancel,
    "the-hosts-change-of-time-and-size": host_change,
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_a_write_on_days_already_read_reads_the_floor_in_force_once(
    tmp_path: Path, write: Callable[[Server], object]
) -> None:
    """Today and Saturday read already (a booking on each), the write reads the floor in
    force from the store once (it read it three times: a booking's seating pass, its
    table's choice and the check before its append each read it again)."""
    server = Server(tmp_path)
    try:
        server.webhook(start_sec(4, 21, 30))
        server.webhook(start_sec(5, 18))
        server.store.floor_reads = 0
        write(server)
        assert server.store.floor_reads == 1
    finally:
        server.store.close()


def test_a_lookup_of_days_already_read_reads_the_floor_in_force_once(tmp_path: Path) -> None:
    """A lookup of 19:00 on each of ten days, asked again: one read for them all."""
    server = Server(tmp_path)
    try:
        first = server.lookup(range(5, 15))
        server.store.floor_reads = 0
        assert server.lookup(range(5, 15)) == first
        assert server.store.floor_reads == 1
    finally:
        server.store.close()
