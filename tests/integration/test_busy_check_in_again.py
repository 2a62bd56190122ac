"""A check-in that found the booking's table taken, sent again (a partner's event whose
answer was lost, or the host's tap under the same Idempotency-Key), is answered with the
booking as it now stands, never with the stored "still taken" once that is no longer true.

Real `hoststand serve` processes on both stores, the clock pinned at Friday 2026-12-04
18:00 GMT: the partner's four are booked at T1 for 18:15, Wu sits at T1 and the partner's
check-in marks the guests arrived (409 table busy)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

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

MARLOWES = "marlowes-kitchen"
TABLEFINDER = "tablefinder"
HOST = f"/api/v1/restaurants/{MARLOWES}"
AUTH = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}


@pytest.fixture(params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerProcess]:
    with (
        database(request.param, tmp_path, "busyagain") as db,
        running_server(Path(db) if request.param == "sqlite" else db, workdir=tmp_path) as running,
    ):
        yield running


def host(
    server: ServerProcess, path: str, body: Any = None, key: str | None = None
) -> requests.Response:
    headers = AUTH if key is None else {**AUTH, "Idempotency-Key": key}
    return requests.post(f"{server.base}{HOST}{path}", json=body, headers=headers, timeout=TIMEOUT)


def ok(reply: requests.Response) -> Any:
    assert reply.status_code == 200, reply.text
    return reply.json()


def send(server: ServerProcess, event: dict[str, Any]) -> requests.Response:
    return signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], event)


def status_of(server: ServerProcess, booking_id: str) -> str:
    rows = requests.get(f"{server.base}{HOST}/reservations", headers=AUTH, timeout=TIMEOUT)
    [row] = [r for r in ok(rows)["reservations"] if r["reservation_id"] == booking_id]
    return str(row["status"])


def busy_table(server: ServerProcess) -> str:
    """The partner's booking of four at T1 for 18:15, with Wu sitting at T1 now."""
    booking = booking_event(f"evt-{uuid.uuid4().hex}", 4, "2026-12-04T18:15:00+00:00")
    booked = ok(send(server, booking))
    assert booked["tables"] == ["T1"], booked
    for party in ("X", "Y"):  # the 2-tops
        ok(host(server, "/walk-ins", {"size": 2, "party_id": party}))
    ok(host(server, "/walk-ins", {"size": 1, "party_id": "W", "name": "Wu"}))  # waits
    assert ok(host(server, "/parties/W/seat", {"unit": "T1"}))["result"] == ["W@T1"]
    return str(booked["reservation_id"])


def checked_in_at_a_busy_table(server: ServerProcess) -> tuple[str, dict[str, Any]]:
    """The booking id and the partner's check-in event, answered 409 table busy."""
    rid = busy_table(server)
    event = change_event(f"evt-{uuid.uuid4().hex}", "checked_in", rid)
    busy = send(server, event)
    assert busy.status_code == 409, busy.text
    assert busy.json()["error"]["code"] == "table busy" and busy.json()["error"]["arrived"]
    assert status_of(server, rid) == "arrived"
    return rid, event


def test_a_busy_check_in_sent_again_after_the_host_seated_the_guests_answers_where_they_sit(
    server: ServerProcess,
) -> None:
    """The partner's first answer was lost; it sent the event again after the host had
    seated the guests at T5 and was told "T1 is still taken": it showed "check-in failed"
    to guests who were eating."""
    rid, event = checked_in_at_a_busy_table(server)
    ok(host(server, f"/parties/{rid}/seat", {"unit": "T5"}))
    again = send(server, event)
    assert again.status_code == 200, again.text
    assert again.json() == {"reservation_id": rid, "status": "seated", "tables": ["T5"]}
    ok(host(server, f"/parties/{rid}/move", {"unit": "T6"}))
    moved = send(server, event)
    assert moved.status_code == 200, moved.text
    assert moved.json() == {"reservation_id": rid, "status": "seated", "tables": ["T6"]}
    ok(host(server, "/tables/T6/free"))  # they ate and left: checked in, where they last sat
    assert send(server, event).json() == moved.json()


def test_a_busy_check_in_sent_again_while_the_guests_wait_names_the_tables_free_now(
    server: ServerProcess,
) -> None:
    rid, event = checked_in_at_a_busy_table(server)
    assert ok(host(server, "/walk-ins", {"size": 4, "party_id": "Z"}))["result"] == "seated T5"
    again = send(server, event)
    assert again.status_code == 409, again.text
    error = again.json()["error"]
    assert (error["code"], error["arrived"], error["unit"]) == ("table busy", True, "T1")
    assert error["free_units"] == error["clear_units"] == ["T6", "T3"]  # T5 is Z's now
    assert error["message"] == (
        "T1 is still taken: the guests are marked arrived; free now for them: T6, T3"
    )
    assert status_of(server, rid) == "arrived"


def test_a_busy_check_in_sent_again_once_the_table_is_free_leaves_the_seating_to_the_host(
    server: ServerProcess,
) -> None:
    """A retry does nothing the first request did not: that one marked the guests arrived
    and left the table to the host, who seats them (Seat…) where it chooses. Told "T1 is
    still taken" once Wu had gone, the partner showed guests a table that was not taken."""
    rid, event = checked_in_at_a_busy_table(server)
    ok(host(server, "/tables/T1/free"))
    again = send(server, event)
    assert again.status_code == 409, again.text
    error = again.json()["error"]
    assert (error["code"], error["arrived"]) == ("table busy", True)
    assert error["free_units"] == ["T1", "T5", "T6", "T3"]
    assert error["message"] == (
        "T1 was taken when they checked in: the guests are marked arrived and wait for the"
        " host to seat them; free now for them: T1, T5, T6, T3"
    )
    assert status_of(server, rid) == "arrived"  # not seated by the retry
    board = requests.get(f"{server.base}{HOST}/board", headers=AUTH, timeout=TIMEOUT)
    assert ok(board)["result"]["tables"]["T1"] == f"held:{rid}"


def test_a_busy_check_in_sent_again_after_the_booking_was_cancelled_says_it_was_cancelled(
    server: ServerProcess,
) -> None:
    rid, event = checked_in_at_a_busy_table(server)
    ok(host(server, f"/reservations/{rid}/cancel"))
    again = send(server, event)
    assert again.status_code == 409, again.text
    assert again.json()["error"] == {
        "code": "reservation not active",
        "message": "check_in refused: reservation not active: it was cancelled",
    }


def test_a_busy_check_in_sent_again_after_the_host_moved_the_booking_to_a_later_day_says_when(
    server: ServerProcess,
) -> None:
    """Guests at the door who will come back tomorrow instead: they are not at the door
    for tomorrow's booking, and the check-in is too early for it."""
    rid, event = checked_in_at_a_busy_table(server)
    ok(host(server, f"/reservations/{rid}/change", {"start": "2026-12-05T19:00"}))
    again = send(server, event)
    assert again.status_code == 409, again.text
    assert again.json()["error"] == {
        "code": "too early",
        "message": "check_in refused: too early: the booking is for Saturday 2026-12-05 19:00,"
        " a later day",
    }


def test_a_busy_check_in_tapped_again_under_its_idempotency_key_answers_where_they_sit(
    server: ServerProcess,
) -> None:
    """The tablet sends a tap whose answer was lost again under the same key: after Seat…
    it was told the guests' table was still taken."""
    rid = busy_table(server)
    key = f"tap-{uuid.uuid4().hex}"
    busy = host(server, f"/reservations/{rid}/check-in", key=key)
    assert busy.status_code == 409, busy.text
    assert busy.json()["error"]["arrived"] is True
    ok(host(server, f"/parties/{rid}/seat", {"unit": "T5"}))
    again = host(server, f"/reservations/{rid}/check-in", key=key)
    assert again.status_code == 200, again.text
    assert again.json() == {"reservation_id": rid, "status": "seated", "tables": ["T5"]}
