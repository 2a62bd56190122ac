"""A booking partner's integration engineer against a real `hoststand serve` on 127.0.0.1:
requests a real integration sends by mistake, each answered with a clear 4xx (or a business
failure) that changes nothing, never a 5xx nor an untrue statement about a booking."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import closing
from datetime import date
from typing import Any

import pytest
import requests

from feed.service.days import BOOKING_SCOPE
from store import open_store
from tests.integration.postgres import BACKENDS, database
from tests.integration.server_process import (
    HOST_TOKENS,
    SECRETS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    change_event,
    running_server,
    signed_post,
)
from tests.integration.test_partner_v3 import BASIC, MARLOWES, booked, sec, slot, v3

HOST = f"/api/v1/restaurants/{MARLOWES}"
HOST_AUTH = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}


@pytest.fixture(scope="module", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """One server per store (SQLite, PostgreSQL); each test uses its own users and slots."""
    workdir = tmp_path_factory.mktemp("audit")
    with (
        database(request.param, workdir, "audit") as db,
        running_server(db, workdir=workdir) as running,
    ):
        yield running


def store_rows(server: ServerProcess) -> tuple[Any, ...]:
    """What a refusal must leave as it was: the log of 2026-12-12 and the booking index."""
    with closing(open_store(server.db)) as store:
        return (
            store.entries(MARLOWES, date(2026, 12, 12)),
            store.recall_prefix(BOOKING_SCOPE, ""),
            store.recall_prefix("user:tablefinder", ""),
        )


def post(server: ServerProcess, name: str, body: Any) -> requests.Response:
    return requests.post(f"{server.base}/v3/{name}", json=body, auth=BASIC, timeout=TIMEOUT)


# -- text with a NUL character ---------------------------------------------------------------


def test_text_with_a_nul_is_refused_by_every_route_and_changes_nothing(
    server: ServerProcess,
) -> None:
    """A NUL (\\u0000) in an id, a token or a name: 400 (422 in a path), on both stores. It was
    a 500 on PostgreSQL, whose text cannot hold one, wherever the text became a key of the
    store (a user id, an idempotency token, a booking or waitlist id, a webhook event id),
    and booked on SQLite what PostgreSQL could not keep."""
    booking_id = booked(server, sec(12, "19:00"), 2)
    before = store_rows(server)
    user = {"user_id": "nul\u0000user", "given_name": "Ada"}
    v3_calls: list[tuple[str, Any]] = [
        ("CreateBooking", {"slot": slot(sec(12, "20:00"), 2), "user_information": user}),
        (
            "CreateBooking",
            {
                "slot": slot(sec(12, "20:00"), 2),
                "user_information": {"user_id": f"u-{uuid.uuid4().hex}", "given_name": "A\u0000"},
                "idempotency_token": "t\u0000",
            },
        ),
        ("GetBookingStatus", {"booking_id": "bk-\u0000"}),
        ("UpdateBooking", {"booking": {"booking_id": "bk-\u0000", "status": "CANCELED"}}),
        ("ListBookings", {"user_id": "a\u0000"}),
        ("GetWaitlistEntry", {"waitlist_entry_id": "wl-\u0000"}),
        ("DeleteWaitlistEntry", {"waitlist_entry_id": "wl-\u0000"}),
    ]
    for name, body in v3_calls:
        reply = post(server, name, body)
        assert reply.status_code == 400, (name, reply.status_code, reply.text)
        assert "NUL" in reply.json()["error"]["message"], reply.text
    secret = SECRETS["tablefinder"]
    for event in (
        booking_event("evt-\u0000", 2, "2026-12-12T20:00:00+00:00"),
        change_event(f"evt-{uuid.uuid4().hex}", "cancelled", "bk-\u0000"),
    ):
        reply = signed_post(server.base, "tablefinder", secret, event)
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["code"] == "bad json", reply.text
    for path in (f"reservations/{booking_id}%00/cancel", "reservations/bk-%00/check-in"):
        reply = requests.post(f"{server.base}{HOST}/{path}", headers=HOST_AUTH, timeout=TIMEOUT)
        assert reply.status_code == 422, reply.text
        assert "control characters" in reply.json()["error"]["message"], reply.text
    assert store_rows(server) == before
    assert v3(server, "GetBookingStatus", {"booking_id": booking_id})["booking_status"] == (
        "CONFIRMED"
    )
