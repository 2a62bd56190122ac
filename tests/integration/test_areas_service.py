"""Seating areas through the service (issue #14): v3 lookups and bookings that name a
room_id are answered and booked within that area, an unknown room_id is never available,
webhooks may name one too, and the host's list shows each booking's area.

The Terrace (samples/terrace.toml): the dining room seats parties of 4 at M3, M4 and M5,
the patio at P1 and P2; parties of 5 and 6 only at M5 in the dining room.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from feed.service.days import DayBook
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.service.signing import sign
from feed.settings import Partner, Settings
from feed.venue import calendar
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore
from tests.integration.slots import HandClock

REPO = Path(__file__).resolve().parents[2]
TERRACE = load_restaurant(REPO / "samples" / "terrace.toml")
MARLOWES = load_restaurant(REPO / "samples" / "marlowes.toml")
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)  # Tuesday morning (Lisbon = UTC in winter)
FRIDAY = date(2026, 12, 4)
SECRET = "s3cret-s3cret-s3cret"
PARTNER = Partner(id="tablefinder", secret=SECRET, merchants=None)


def start(hhmm: str, r: Any = TERRACE, day: date = FRIDAY) -> int:
    return next(s.start_sec for s in calendar.slots(r, day) if s.local.strftime("%H:%M") == hhmm)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "hoststand.db")
    yield store
    store.close()


@pytest.fixture
def receiver(store: SQLiteStore) -> Receiver:
    settings = Settings(partners={PARTNER.id: PARTNER})
    return Receiver([TERRACE, MARLOWES], store, settings, clock=lambda: NOW)


@pytest.fixture
def api(receiver: Receiver, store: SQLiteStore) -> PartnerApi:
    return PartnerApi(receiver.books, store, lambda: NOW)


def lookup(
    api: PartnerApi, asked: list[tuple[int, int, str | None]], merchant: str = TERRACE.merchant_id
) -> list[bool]:
    slots = []
    for start_sec, size, room in asked:
        resources: dict[str, Any] = {"party_size": size}
        if room is not None:
            resources["room_id"] = room
        slots.append({"start_sec": str(start_sec), "resource_ids": resources})
    reply = api.lookup(PARTNER, {"merchant_id": merchant, "slot_time": slots})
    return [a["available"] for a in reply.body["slot_time_availability"]]


def create(
    api: PartnerApi,
    start_sec: int,
    size: int,
    room: str | None,
    user: str,
    merchant: str = TERRACE.merchant_id,
) -> dict[str, Any]:
    resources: dict[str, Any] = {"party_size": size}
    if room is not None:
        resources["room_id"] = room
    slot = {"merchant_id": merchant, "start_sec": str(start_sec), "resources": resources}
    reply = api.create_booking(PARTNER, {"slot": slot, "user_information": {"user_id": user}})
    return dict(reply.body)


def test_two_bookings_fill_the_patio_for_four_and_leave_the_dining_room_open(
    api: PartnerApi,
) -> None:
    at = start("19:00")
    assert lookup(api, [(at, 4, "patio"), (at, 4, "main"), (at, 4, None)]) == [True, True, True]
    for user in ("u1", "u2"):
        booked = create(api, at, 4, "patio", user)
        assert booked["booking"]["slot"]["resources"] == {"party_size": 4, "room_id": "patio"}
    assert create(api, at, 4, "patio", "u3")["booking_failure"]["cause"] == "SLOT_UNAVAILABLE"
    assert lookup(api, [(at, 4, "patio"), (at, 4, "main"), (at, 4, None)]) == [False, True, True]
    book = api.books[TERRACE.merchant_id]
    slot = calendar.slot_at_sec(TERRACE, at)
    assert slot is not None
    assert [book.spots(FRIDAY, slot[1], 4, NOW, area) for area in ("patio", "main", None)] == [
        0,
        3,
        3,
    ]
    units = sorted(r.unit for r, _ in book.reservations(FRIDAY))
    assert units == ["P1", "P2"]


def test_a_party_only_one_area_can_seat_is_unavailable_in_the_other(api: PartnerApi) -> None:
    at = start("20:00")
    assert lookup(api, [(at, 6, "patio"), (at, 6, "main"), (at, 6, None)]) == [False, True, True]
    assert create(api, at, 6, "patio", "u1")["booking_failure"]["cause"] == "SLOT_UNAVAILABLE"


def test_an_unknown_room_is_never_available_nor_booked(api: PartnerApi) -> None:
    at = start("19:00")
    assert lookup(api, [(at, 2, "bar")]) == [False]
    assert create(api, at, 2, "bar", "u1")["booking_failure"]["cause"] == "SLOT_UNAVAILABLE"
    # A restaurant without areas has no room either (it used to answer available).
    m = start("19:00", MARLOWES)
    assert lookup(api, [(m, 2, "bar"), (m, 2, None)], MARLOWES.merchant_id) == [False, True]
    failed = create(api, m, 2, "bar", "u2", MARLOWES.merchant_id)
    assert failed["booking_failure"]["cause"] == "SLOT_UNAVAILABLE"


def test_a_lookup_without_a_room_sees_the_whole_floor(api: PartnerApi) -> None:
    at = start("19:00")
    for user in ("u1", "u2", "u3"):
        assert "booking" in create(api, at, 4, "main", user)
    assert lookup(api, [(at, 4, "main"), (at, 4, "patio"), (at, 4, None)]) == [False, True, True]
    assert "booking" in create(api, at, 4, None, "u4")  # any area: the patio has one
    assert "booking" in create(api, at, 4, None, "u5")
    assert lookup(api, [(at, 4, None)]) == [False]


def test_an_update_keeps_the_booking_in_its_room_unless_it_names_another(api: PartnerApi) -> None:
    booking = create(api, start("19:00"), 4, "patio", "u1")["booking"]
    later = {"booking_id": booking["booking_id"], "slot": {"start_sec": start("20:00")}}
    moved = api.update_booking(PARTNER, {"booking": later}).body["booking"]
    assert moved["slot"]["resources"] == {"party_size": 4, "room_id": "patio"}
    book = api.books[TERRACE.merchant_id]
    assert [r.unit for r, _ in book.reservations(FRIDAY) if r.status.name == "BOOKED"] == ["P1"]
    inside = {
        "booking_id": booking["booking_id"],
        "slot": {"resources": {"party_size": 4, "room_id": "main"}},
    }
    moved = api.update_booking(PARTNER, {"booking": inside}).body["booking"]
    assert moved["slot"]["resources"] == {"party_size": 4, "room_id": "main"}
    assert [r.unit for r, _ in book.reservations(FRIDAY) if r.status.name == "BOOKED"] == ["M3"]
    nowhere = {
        "booking_id": booking["booking_id"],
        "slot": {"resources": {"party_size": 4, "room_id": "roof"}},
    }
    failed = api.update_booking(PARTNER, {"booking": nowhere}).body
    assert failed["booking_failure"]["cause"] == "SLOT_UNAVAILABLE"


def webhook(receiver: Receiver, data: dict[str, Any], event_id: str) -> Any:
    body = json.dumps(
        {
            "id": event_id,
            "type": "reservation.requested",
            "merchant_id": TERRACE.merchant_id,
            "data": data,
        }
    ).encode()
    return receiver.webhook(PARTNER.id, sign(SECRET, int(receiver.clock().timestamp()), body), body)


def test_a_webhook_naming_a_room_books_in_it_and_the_hosts_list_shows_the_area(
    receiver: Receiver,
) -> None:
    at = start("19:00")
    patio = webhook(receiver, {"party_size": 2, "start": at, "room_id": "patio"}, "e1")
    anywhere = webhook(receiver, {"party_size": 2, "start": at}, "e2")
    assert patio.body["unit"] == "P3" and anywhere.body["unit"] == "M1"
    unknown = webhook(receiver, {"party_size": 2, "start": at, "room_id": "roof"}, "e3")
    assert unknown.code == "slot unavailable"
    listed = receiver.host_reservations(TERRACE.merchant_id, FRIDAY).body["reservations"]
    assert [(row["unit"], row["area"]) for row in listed] == [("P3", "patio"), ("M1", "main")]


def test_the_host_list_has_no_area_where_areas_are_not_set(
    receiver: Receiver, store: SQLiteStore
) -> None:
    book = DayBook(store, MARLOWES)
    slot = calendar.slot_at_sec(MARLOWES, start("19:00", MARLOWES))
    assert slot is not None
    book.book(FRIDAY, slot[1], 2, NOW)
    listed = receiver.host_reservations(MARLOWES.merchant_id, FRIDAY).body["reservations"]
    assert [row["area"] for row in listed] == [None]


def test_a_webhook_booking_keeps_its_room_on_a_later_update(
    receiver: Receiver, api: PartnerApi
) -> None:
    booked = webhook(receiver, {"party_size": 2, "start": start("19:00"), "room_id": "patio"}, "e1")
    assert booked.body["unit"] == "P3"
    booking_id = booked.body["reservation_id"]
    status = api.booking_status(PARTNER, {"booking_id": booking_id}).body
    assert status["booking_status"] == "CONFIRMED"
    later = {"booking_id": booking_id, "slot": {"start_sec": start("20:00")}}
    moved = api.update_booking(PARTNER, {"booking": later}).body["booking"]
    assert moved["slot"]["resources"] == {"party_size": 2, "room_id": "patio"}
    book = api.books[TERRACE.merchant_id]
    assert [r.unit for r, _ in book.reservations(FRIDAY) if r.status.name == "BOOKED"] == ["P3"]


def test_a_busy_check_in_names_the_free_tables_of_the_room_the_guests_booked(
    store: SQLiteStore,
) -> None:
    clock = HandClock(FRIDAY, "10:00")
    receiver = Receiver([TERRACE], store, Settings(partners={PARTNER.id: PARTNER}), clock)
    booked = webhook(receiver, {"party_size": 2, "start": start("19:00"), "room_id": "patio"}, "e1")
    assert booked.body["unit"] == "P3", booked.body
    clock.at("18:50")
    merchant = TERRACE.merchant_id
    assert receiver.host_operation(merchant, "walk_in", "W", 2).code is None
    seated = "W" in receiver.books[merchant].stand(FRIDAY).occupant.values()
    assert receiver.host_hand(merchant, "move" if seated else "seat", "W", "P3").code is None
    busy = receiver.host_operation(merchant, "check_in", booked.body["reservation_id"])
    assert busy.code == "table busy", busy.body
    assert busy.body["error"]["free_units"] == ["P1", "P2"]  # the patio's, not M1 and M2


def test_a_busy_check_in_sent_again_names_the_free_tables_of_the_guests_room_as_of_now(
    store: SQLiteStore,
) -> None:
    """A partner's check-in event sent again is answered with the busy answer worked out
    again (the tables free now), still within the room the guests booked."""
    clock = HandClock(FRIDAY, "10:00")
    receiver = Receiver([TERRACE], store, Settings(partners={PARTNER.id: PARTNER}), clock)
    booked = webhook(receiver, {"party_size": 2, "start": start("19:00"), "room_id": "patio"}, "e1")
    assert booked.body["unit"] == "P3", booked.body
    clock.at("18:50")
    merchant = TERRACE.merchant_id
    assert receiver.host_operation(merchant, "walk_in", "W", 2).code is None
    seated = "W" in receiver.books[merchant].stand(FRIDAY).occupant.values()
    assert receiver.host_hand(merchant, "move" if seated else "seat", "W", "P3").code is None
    event = {
        "id": "e2",
        "type": "reservation.checked_in",
        "merchant_id": merchant,
        "data": {"reservation_id": booked.body["reservation_id"]},
    }
    body = json.dumps(event).encode()

    def check_in() -> Any:
        return receiver.webhook(PARTNER.id, sign(SECRET, int(clock().timestamp()), body), body)

    busy = check_in()
    assert busy.code == "table busy", busy.body
    assert busy.body["error"]["free_units"] == ["P1", "P2"]
    assert receiver.host_operation(merchant, "walk_in", "V", 4).code is None
    sits = "V" in receiver.books[merchant].stand(FRIDAY).occupant.values()
    assert receiver.host_hand(merchant, "move" if sits else "seat", "V", "P1").code is None
    again = check_in()
    assert again.code == "table busy", again.body
    assert again.body["error"]["free_units"] == ["P2"]  # the patio's free now, not M3 or M4


def test_a_host_change_keeps_a_partner_booking_in_its_room_and_records_where_it_went(
    receiver: Receiver, api: PartnerApi
) -> None:
    booking_id = create(api, start("19:00"), 4, "patio", "u1")["booking"]["booking_id"]
    merchant = TERRACE.merchant_id
    changed = receiver.host_change(merchant, booking_id, None, "2026-12-04T20:00")
    assert changed.body["unit"] == "P1", changed.body  # M3 seats 4 too, but not in the patio
    status = api.booking_status(PARTNER, {"booking_id": booking_id}).body
    assert status["booking_status"] == "CONFIRMED"
    for user in ("u2", "u3"):  # the patio is full for four at 21:30
        assert create(api, start("21:30"), 4, "patio", user)["booking"]
    changed = receiver.host_change(merchant, booking_id, None, "2026-12-04T21:30")
    assert changed.body["unit"] == "M3", changed.body  # the host may seat them inside
    moved = api.update_booking(PARTNER, {"booking": {"booking_id": booking_id}}).body
    assert moved["booking"]["slot"]["resources"] == {"party_size": 4, "room_id": "main"}


def test_a_booking_the_host_seats_or_moves_into_another_room_is_read_in_that_room(
    store: SQLiteStore,
) -> None:
    """The host may seat a patio booking inside (the host's hand); the partner's
    ListBookings then names the room the guests sit in, and follows them back out. A booking
    made without a room is still read without one."""
    clock = HandClock(FRIDAY, "10:00")
    receiver = Receiver([TERRACE], store, Settings(partners={PARTNER.id: PARTNER}), clock)
    api = PartnerApi(receiver.books, store, clock)
    patio = create(api, start("19:00"), 4, "patio", "u1")["booking"]["booking_id"]
    anywhere = create(api, start("19:00"), 2, None, "u2")["booking"]["booking_id"]

    def rooms(user: str) -> list[Any]:
        listed = api.list_bookings(PARTNER, {"user_id": user}).body["bookings"]
        return [b["slot"]["resources"].get("room_id") for b in listed]

    clock.at("18:50")
    merchant = TERRACE.merchant_id
    assert receiver.host_hand(merchant, "seat", patio, "M3").body["result"] == [f"{patio}@M3"]
    assert rooms("u1") == ["main"]
    assert receiver.host_hand(merchant, "move", patio, "P2").code is None
    assert rooms("u1") == ["patio"]
    assert receiver.host_hand(merchant, "seat", anywhere, "P3").code is None
    assert rooms("u2") == [None]
