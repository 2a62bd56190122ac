"""A request whose connection closes before its body ends is no request: nothing is done
with what came of it, on the hot paths (v3 calls, signed webhooks) as on FastAPI's routes
(the host API), and it is logged as 499 (the client closed the request), never as a 500
with a traceback.

The body is cut as a partner's client cuts it when it fails mid-send: chunked, the whole
JSON in one chunk and the connection closed before the last (empty) chunk; or with a
Content-Length longer than what was sent. A real `hoststand serve` on 127.0.0.1, its
SQLite file in tmp_path; each test waits for the request's own log line.
"""

from __future__ import annotations

import base64
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from feed.service.signing import HEADER, sign
from tests.integration.server_process import (
    HOST_TOKENS,
    NOW_T,
    SECRETS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    running_server,
)

MARLOWES = "marlowes-kitchen"
HOST = f"/api/v1/restaurants/{MARLOWES}"
BEARER = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
BASIC = {
    "Authorization": "Basic " + base64.b64encode(b"tablefinder:sample-basic-password").decode()
}
SATURDAY_19 = 1796497200  # 2026-12-05 19:00 in London: a dinner slot
LOGGED_WITHIN = 10.0  # seconds for a cut request's log line to appear


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("cut") / "hoststand.db") as running:
        yield running


def request_lines(server: ServerProcess, route: str) -> list[str]:
    return [
        line
        for line in server.output().splitlines()
        if "hoststand.request" in line and f" route={route} " in line
    ]


def cut(
    server: ServerProcess,
    path: str,
    headers: dict[str, str],
    body: bytes,
    *,
    chunked: bool,
    route: str | None = None,
) -> str:
    """POST `body` to `path` and close the connection before the body ends; the request's
    log line (its `route`, by default the path), once the server has written it."""
    route = route or path
    before = len(request_lines(server, route))
    host, port = server.base.removeprefix("http://").split(":")
    head = [f"POST {path} HTTP/1.1", f"Host: {host}", "Content-Type: application/json"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    if chunked:  # the whole JSON in one chunk, never the last chunk
        head.append("Transfer-Encoding: chunked")
        sent = f"{len(body):x}\r\n".encode() + body + b"\r\n"
    else:  # a Content-Length 100 bytes longer than the body
        head.append(f"Content-Length: {len(body) + 100}")
        sent = body
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as conn:
        conn.sendall("\r\n".join(head).encode() + b"\r\n\r\n" + sent)
        conn.shutdown(socket.SHUT_WR)
    deadline = time.monotonic() + LOGGED_WITHIN
    while time.monotonic() < deadline:
        lines = request_lines(server, route)
        if len(lines) > before:
            return lines[-1]
        time.sleep(0.05)
    raise AssertionError(f"no log line for the cut request to {path}:\n{server.output()[-2000:]}")


def v3(server: ServerProcess, name: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = requests.post(f"{server.base}/v3/{name}", json=body, headers=BASIC, timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()
    return result


def create_booking(user_id: str, start_sec: int) -> dict[str, Any]:
    slot = {"merchant_id": MARLOWES, "start_sec": start_sec, "resources": {"party_size": 2}}
    return {"slot": slot, "user_information": {"user_id": user_id}}


def assert_no_traceback(server: ServerProcess) -> None:
    assert "Traceback" not in server.output(), server.output()[-3000:]


def test_a_create_booking_cut_before_its_last_chunk_books_nothing(server: ServerProcess) -> None:
    body = json.dumps(create_booking("u-cut-chunked", SATURDAY_19)).encode()
    line = cut(server, "/v3/CreateBooking", BASIC, body, chunked=True)
    assert v3(server, "ListBookings", {"user_id": "u-cut-chunked"}) == {"bookings": []}
    assert " status=499 " in line, line  # logged as the client closing it, not a 500
    assert_no_traceback(server)


def test_a_cancel_cut_short_of_its_content_length_leaves_the_booking_confirmed(
    server: ServerProcess,
) -> None:
    made = v3(server, "CreateBooking", create_booking("u-cut-cancel", SATURDAY_19 + 900))
    booking_id = made["booking"]["booking_id"]
    body = json.dumps({"booking": {"booking_id": booking_id, "status": "CANCELED"}}).encode()
    line = cut(server, "/v3/UpdateBooking", BASIC, body, chunked=False)
    status = v3(server, "GetBookingStatus", {"booking_id": booking_id})
    assert status["booking_status"] == "CONFIRMED"
    assert " status=499 " in line, line  # logged as the client closing it, not a 500
    assert_no_traceback(server)


def test_a_webhook_cut_before_its_last_chunk_books_nothing_and_its_event_is_still_new(
    server: ServerProcess,
) -> None:
    body = json.dumps(booking_event("e-cut-1", 2, "2026-12-05T19:30:00+00:00")).encode()
    signed = {HEADER: sign(SECRETS["tablefinder"], NOW_T, body)}
    line = cut(
        server,
        "/webhooks/tablefinder",
        signed,
        body,
        chunked=True,
        route="/webhooks/{partner_id}",
    )
    listed = requests.get(
        f"{server.base}{HOST}/reservations", params={"date": "2026-12-05"}, headers=BEARER
    ).json()["reservations"]
    assert [row for row in listed if row["start"].startswith("2026-12-05T19:30")] == []
    # The event id was not used up: the same event sent whole is booked.
    whole = requests.post(
        f"{server.base}/webhooks/tablefinder", data=body, headers=signed, timeout=TIMEOUT
    )
    assert whole.status_code == 200, whole.text
    assert whole.json()["status"] == "booked"
    assert " status=499 " in line, line  # logged as the client closing it, not a 500
    assert_no_traceback(server)


def test_a_host_request_cut_before_its_body_ends_is_499_without_a_traceback(
    server: ServerProcess,
) -> None:
    body = json.dumps({"size": 2, "party_id": "w-cut-1"}).encode()
    line = cut(
        server,
        f"{HOST}/walk-ins",
        BEARER,
        body,
        chunked=False,
        route="/api/v1/restaurants/{merchant_id}/walk-ins",
    )
    board = requests.get(f"{server.base}{HOST}/board", headers=BEARER, timeout=TIMEOUT)
    assert "w-cut-1" not in board.text
    assert " status=499 " in line, line  # logged as the client closing it, not a 500
    assert_no_traceback(server)
