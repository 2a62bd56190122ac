"""v3 checks on every call which restaurants the partner may use (issue #12): a booking made
while the partner could use a restaurant is not shown, changed or listed once it may not."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from feed.service.days import DayBook
from feed.service.partner_api import PartnerApi
from feed.settings import Partner
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
START = int(datetime(2026, 12, 5, 19, 0, tzinfo=UTC).timestamp())
ANYWHERE = Partner(id="p", secret=None, merchants=None)
ELSEWHERE = Partner(id="p", secret=None, merchants=frozenset({"merch1"}))


@pytest.fixture
def api(tmp_path: Path) -> Iterator[PartnerApi]:
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        yield PartnerApi({marlowes.merchant_id: DayBook(store, marlowes)}, store, lambda: NOW)


def test_a_partner_no_longer_allowed_a_restaurant_cannot_see_or_change_its_bookings(
    api: PartnerApi,
) -> None:
    slot = {
        "merchant_id": "marlowes-kitchen",
        "service_id": "1000",
        "start_sec": str(START),
        "resources": {"party_size": 2},
    }
    made = api.create_booking(
        ANYWHERE, {"slot": slot, "user_information": {"user_id": "u1"}, "idempotency_token": "t"}
    )
    booking_id = made.body["booking"]["booking_id"]
    assert api.booking_status(ANYWHERE, {"booking_id": booking_id}).code is None
    assert api.booking_status(ELSEWHERE, {"booking_id": booking_id}).code == "bad arguments"
    cancel = {"booking": {"booking_id": booking_id, "status": "CANCELED"}}
    assert api.update_booking(ELSEWHERE, cancel).code == "bad arguments"
    assert api.list_bookings(ELSEWHERE, {"user_id": "u1"}).body == {"bookings": []}
    # Nothing changed: still confirmed for the partner while it may use the restaurant.
    status = api.booking_status(ANYWHERE, {"booking_id": booking_id}).body
    assert status["booking_status"] == "CONFIRMED"
