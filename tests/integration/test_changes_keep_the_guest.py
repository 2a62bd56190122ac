"""A booking changed (the host's change, a partner's UpdateBooking) is booked again under a
new engine reservation: what was true of the guest stays true. Guests already at the door
stay arrived (never a no-show while they stand there), and their name, phone and notes go
along. Marlowe's on a real SQLite file, the clock moved by hand."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue.restaurant import Restaurant, load_restaurant
from store.sqlite import SQLiteStore
from tests.integration.slots import HandClock

REPO = Path(__file__).resolve().parents[2]
MID = "marlowes-kitchen"
SATURDAY = date(2026, 12, 5)  # London is on UTC in December: dinner from 17:30
PARTNER = Partner("tablefinder", "s" * 32, None)


@pytest.fixture(scope="module")
def marlowes() -> Restaurant:
    return load_restaurant(REPO / "samples" / "marlowes.toml")


@pytest.fixture
def clock() -> HandClock:
    return HandClock(SATURDAY)


@pytest.fixture
def rec(tmp_path: Path, marlowes: Restaurant, clock: HandClock) -> Iterator[Receiver]:
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        yield Receiver([marlowes], store, Settings(partners={PARTNER.id: PARTNER}), clock)


def listed(rec: Receiver, booking_id: str) -> dict[str, Any]:
    rows = rec.host_reservations(MID, SATURDAY).body["reservations"]
    (row,) = [row for row in rows if row["reservation_id"] == booking_id]
    return dict(row)


@pytest.mark.parametrize(
    ("party_size", "start"),
    [(3, None), (None, "2026-12-05T18:15"), (3, "2026-12-05T18:15")],
    ids=["size", "time", "both"],
)
def test_arrived_guests_whose_booking_changes_stay_arrived_and_are_never_a_no_show(
    rec: Receiver, clock: HandClock, party_size: int | None, start: str | None
) -> None:
    clock.at("17:00")
    ann = rec.host_book(MID, 2, "2026-12-05T18:00", "Ann", "07700 900123").body["reservation_id"]
    clock.at("17:50")
    assert rec.host_hand(MID, "arrive", ann).code is None
    changed = rec.host_change(MID, ann, party_size, start)  # one more guest / another time
    assert changed.code is None, changed.body
    assert listed(rec, ann)["status"] == "arrived"
    clock.at("18:40")  # long past both times' holds: arrived guests are no no-show
    assert listed(rec, ann)["status"] == "arrived"
    checked_in = rec.host_operation(MID, "check_in", ann)
    assert checked_in.code is None, checked_in.body
    assert listed(rec, ann)["status"] == "seated"


def test_a_booking_moved_to_another_day_is_not_arrived_there(
    rec: Receiver, clock: HandClock
) -> None:
    clock.at("17:00")
    ann = rec.host_book(MID, 2, "2026-12-05T18:00", "Ann", "1").body["reservation_id"]
    clock.at("17:50")
    assert rec.host_hand(MID, "arrive", ann).code is None
    assert rec.host_change(MID, ann, None, "2026-12-06T18:00").code is None
    (row,) = rec.host_reservations(MID, date(2026, 12, 6)).body["reservations"]
    assert row["status"] == "booked"  # the guests are here today, not tomorrow


def v3_create(api: PartnerApi, start: datetime, size: int) -> str:
    created = api.create_booking(
        PARTNER,
        {
            "idempotency_token": uuid.uuid4().hex,
            "slot": {
                "merchant_id": MID,
                "service_id": "1000",
                "start_sec": str(int(start.timestamp())),
                "resources": {"party_size": size},
            },
            "user_information": {
                "user_id": uuid.uuid4().hex,
                "given_name": "Ada",
                "family_name": "Lovelace",
                "telephone": "+44 20 7946 0000",
            },
            "additional_request": "window seat, nut allergy",
        },
    ).body
    return str(created["booking"]["booking_id"])


@pytest.mark.parametrize(
    "slot",
    [
        {"resources": {"party_size": 3}},
        {"start_sec": str(int(datetime(2026, 12, 5, 20, 0, tzinfo=UTC).timestamp()))},
        {"start_sec": str(int(datetime(2026, 12, 6, 19, 0, tzinfo=UTC).timestamp()))},
    ],
    ids=["size", "time", "day"],
)
def test_a_partners_update_keeps_the_guests_name_phone_and_notes(
    rec: Receiver, clock: HandClock, slot: dict[str, Any]
) -> None:
    api = PartnerApi(rec.books, rec.store, rec.clock)
    booking = v3_create(api, datetime(2026, 12, 5, 19, 0, tzinfo=UTC), 2)
    before = listed(rec, booking)
    assert (before["name"], before["phone"], before["notes"]) == (
        "Ada Lovelace",
        "+44 20 7946 0000",
        "window seat, nut allergy",
    )
    updated = api.update_booking(PARTNER, {"booking": {"booking_id": booking, "slot": slot}})
    assert updated.body["booking"]["status"] == "CONFIRMED", updated.body
    index = rec.store.recall("booking", booking)
    day = date.fromisoformat(index["day"]) if isinstance(index, dict) else SATURDAY
    rows = rec.host_reservations(MID, day).body["reservations"]
    (after,) = [r for r in rows if r["reservation_id"] == booking and r["status"] == "booked"]
    assert {k: after[k] for k in ("name", "phone", "notes")} == {
        k: before[k] for k in ("name", "phone", "notes")
    }


@pytest.mark.parametrize(
    ("party_size", "start"), [(None, None), (2, "2026-12-05T18:00")], ids=["empty", "same"]
)
def test_a_change_to_what_the_booking_already_is_writes_nothing(
    rec: Receiver, clock: HandClock, party_size: int | None, start: str | None
) -> None:
    clock.at("17:00")
    ann = rec.host_book(MID, 2, "2026-12-05T18:00", "Ann", "1").body
    length = rec.books[MID].length(SATURDAY)
    for _ in range(2):
        same = rec.host_change(MID, ann["reservation_id"], party_size, start)
        assert same.code is None, same.body
        assert {k: same.body[k] for k in ("status", "party_size", "start", "unit")} == {
            "status": "booked",
            "party_size": 2,
            "start": ann["start"],
            "unit": ann["unit"],
        }
    assert rec.books[MID].length(SATURDAY) == length  # no cancel and book again


def test_an_empty_change_of_a_booking_past_its_hold_is_refused_as_any_change(
    rec: Receiver, clock: HandClock
) -> None:
    clock.at("17:00")
    ann = rec.host_book(MID, 2, "2026-12-05T18:00", "Ann", "1").body["reservation_id"]
    clock.at("18:16")  # a no-show by now, though no sweep has written it
    for size in (None, 3):
        refused = rec.host_change(MID, ann, size, None)
        assert refused.code == "reservation not active", refused.body
    assert listed(rec, ann)["status"] == "no-show"


def test_seat_and_move_of_a_changed_booking_answer_with_the_hosts_booking_id(
    rec: Receiver, clock: HandClock
) -> None:
    clock.at("17:00")
    ann = rec.host_book(MID, 2, "2026-12-05T18:00", "Ann", "1").body["reservation_id"]
    assert rec.host_change(MID, ann, 3, None).code is None  # now another engine reservation
    clock.at("17:55")
    seated = rec.host_hand(MID, "seat", ann, "T4", key=("k-seat", ["seat", ann, "T4"]))
    assert seated.code is None, seated.body
    assert seated.body["operation"][2] == ann and seated.body["result"] == [f"{ann}@T4"]
    again = rec.host_hand(MID, "seat", ann, "T4", key=("k-seat", ["seat", ann, "T4"]))
    assert again.body == seated.body  # the stored reply says the same
    moved = rec.host_hand(MID, "move", ann, "T1")
    assert moved.code is None, moved.body
    assert moved.body["operation"][2] == ann
