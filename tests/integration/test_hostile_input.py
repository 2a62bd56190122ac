"""No input gets a 5xx: malformed credentials, bodies, numbers and dates sent to a real
`hoststand serve` on 127.0.0.1 are each refused with a 4xx in the error shape, and a
refusal writes nothing (the store's logs, records and outbox are compared around it)."""

from __future__ import annotations

import base64
import json
import socket
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from feed.http.health import PROBE_SCOPE
from feed.push.outbox import SERVES_SCOPE
from store.generations import SCOPE as GENERATION_SCOPE
from store.turns import SCOPE as TURN_SCOPE
from tests.integration.server_process import (
    CONFIGS,
    HOST_TOKENS,
    HOSTSTAND,
    NOW,
    SECRETS,
    SETTINGS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    running_server,
    signed_post,
)

MARLOWES = "marlowes-kitchen"
HOST = f"/api/v1/restaurants/{MARLOWES}"
BEARER = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
BASIC = {
    "Authorization": "Basic " + base64.b64encode(b"tablefinder:sample-basic-password").decode()
}
V3_PATHS = [
    "BatchAvailabilityLookup",
    "CreateBooking",
    "UpdateBooking",
    "GetBookingStatus",
    "ListBookings",
    "BatchGetWaitEstimates",
    "CreateWaitlistEntry",
    "GetWaitlistEntry",
    "DeleteWaitlistEntry",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("hostile") / "hoststand.db") as running:
        yield running


def snapshot(server: ServerProcess, *, keep_refusals: bool = False) -> list[Any]:
    """Everything a request could change: the logs, the idempotency records, the outbox.
    With `keep_refusals`, a webhook's stored refusal (kept on purpose, so a retried delivery
    gets the same answer) is left out. The records the server writes on its own clock are
    left out too: the sweep's turns, export generations, the health write probe and the
    outbox sender's note of the restaurants it serves (one may land between two snapshots
    on a slow machine, whatever the request did)."""
    with sqlite3.connect(server.db) as conn:
        entries = conn.execute("SELECT * FROM log_entries ORDER BY 1, 2, 3").fetchall()
        records = conn.execute(
            "SELECT scope, key, value FROM idempotency WHERE scope NOT IN (?, ?, ?, ?)"
            " ORDER BY 1, 2",
            (TURN_SCOPE, GENERATION_SCOPE, PROBE_SCOPE, SERVES_SCOPE),
        ).fetchall()
        outbox = conn.execute("SELECT * FROM outbox ORDER BY id").fetchall()
    if keep_refusals:
        records = [r for r in records if not ('"error"' in r[2] and r[0].startswith("event:"))]
    return [entries, records, outbox]


def assert_error(reply: requests.Response, status: int, code: str | None = None) -> str:
    assert reply.status_code == status, (reply.status_code, reply.text)
    body = reply.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    if code is not None:
        assert body["error"]["code"] == code, body
    return str(body["error"]["message"])


def webhook(server: ServerProcess, body: dict[str, Any] | bytes) -> requests.Response:
    return signed_post(server.base, "tablefinder", SECRETS["tablefinder"], body)


def v3(server: ServerProcess, name: str, body: Any, headers: dict[str, str] = BASIC) -> Any:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return requests.post(f"{server.base}/v3/{name}", data=data, headers=headers, timeout=TIMEOUT)


def host(server: ServerProcess, method: str, path: str, **kwargs: Any) -> requests.Response:
    headers = {**BEARER, **kwargs.pop("headers", {})}
    url = f"{server.base}{HOST}{path}"
    return requests.request(method, url, headers=headers, timeout=TIMEOUT, **kwargs)


def new_id() -> str:
    return f"evt-{uuid.uuid4().hex}"


# -- credentials ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "t", ["²", "\uff11\uff17\uff19\uff16", "9" * 5000, "-5", ""], ids=lambda t: f"{len(t)}-chars"
)
def test_a_webhook_signature_with_a_timestamp_that_is_not_ascii_digits_is_refused_with_401(
    server: ServerProcess, t: str
) -> None:
    before = snapshot(server)
    body = json.dumps(booking_event(new_id(), 2, "2026-12-08T19:00:00+00:00")).encode()
    reply = requests.post(
        f"{server.base}/webhooks/tablefinder",
        data=body,
        headers={"Hoststand-Signature": f"t={t},v1=00".encode()},
        timeout=TIMEOUT,
    )
    assert_error(reply, 401, "unauthorized")
    assert snapshot(server) == before


@pytest.mark.parametrize("path", ["HealthCheck", *V3_PATHS])
def test_basic_credentials_that_are_not_base64_text_get_401_on_every_v3_path(
    server: ServerProcess, path: str
) -> None:
    method = "GET" if path == "HealthCheck" else "POST"
    for value in ("Basic éééé".encode(), b"Basic \xff\xfe", b"Basic //79"):  # "//79": not UTF-8
        reply = requests.request(
            method, f"{server.base}/v3/{path}", data=b"{}", headers={"Authorization": value}
        )
        assert_error(reply, 401, "unauthorized")
        assert reply.headers["WWW-Authenticate"] == 'Basic realm="hoststand"'


# -- bodies ---------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [33, 600, 10_000])
def test_json_nested_too_deep_is_refused_with_400_on_v3_webhooks_and_the_host_api(
    server: ServerProcess, depth: int
) -> None:
    before = snapshot(server)
    deep = b'{"a":' * depth + b"1" + b"}" * depth
    assert "nested deeper" in assert_error(v3(server, "CreateBooking", deep), 400, "bad arguments")
    assert "nested deeper" in assert_error(webhook(server, deep), 400, "bad json")
    listy = b"[" * depth + b"]" * depth
    assert_error(host(server, "POST", "/walk-ins", data=listy), 400, "bad json")
    assert snapshot(server) == before


def test_json_nested_32_deep_is_still_read(server: ServerProcess) -> None:
    body = json.dumps({"merchant_id": MARLOWES, "x": json.loads("[" * 30 + "]" * 30)}).encode()
    reply = v3(server, "BatchAvailabilityLookup", body)
    assert reply.status_code == 200, reply.text


def test_a_5000_digit_number_is_refused_with_400_by_webhooks_and_v3_alike(
    server: ServerProcess,
) -> None:
    before = snapshot(server)
    digits = "9" * 5000
    event = json.dumps(booking_event(new_id(), 2, 0)).replace('"party_size": 2', f'"n": {digits}')
    assert "5000 digits" in assert_error(webhook(server, event.encode()), 400, "bad json")
    lookup = f'{{"merchant_id": "{MARLOWES}", "slot_time": [], "n": {digits}}}'.encode()
    assert "5000 digits" in assert_error(v3(server, "BatchAvailabilityLookup", lookup), 400)
    assert snapshot(server) == before


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity"])
def test_a_number_that_is_not_finite_inside_a_lookup_slot_is_refused_not_echoed(
    server: ServerProcess, number: str
) -> None:
    slot = f'{{"start_sec": 1796756400, "resource_ids": {{"party_size": 2, "x": {number}}}}}'
    body = f'{{"merchant_id": "{MARLOWES}", "slot_time": [{slot}]}}'.encode()
    assert_error(v3(server, "BatchAvailabilityLookup", body), 400, "bad arguments")


def test_a_body_that_is_not_utf8_is_refused_with_400(server: ServerProcess) -> None:
    body = json.dumps({"merchant_id": MARLOWES}).encode("utf-16")
    assert "UTF-8" in assert_error(v3(server, "BatchAvailabilityLookup", body), 400)
    assert_error(webhook(server, b'{"id": "\xff"}'), 400, "bad json")


# -- dates ----------------------------------------------------------------------------------


@pytest.mark.parametrize("start", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:00-12:00"])
def test_a_date_out_of_range_is_refused_with_422_and_says_the_range(
    server: ServerProcess, start: str
) -> None:
    before = snapshot(server, keep_refusals=True)
    message = assert_error(webhook(server, booking_event(new_id(), 2, start)), 422)
    assert "out of range" in message and "9998-12-31" in message
    reply = host(server, "POST", "/reservations", json={"party_size": 2, "start": start})
    assert "out of range" in assert_error(reply, 422, "invalid request")
    local = start[:16]  # the host's local form, YYYY-MM-DDTHH:MM
    reply = host(server, "POST", "/reservations", json={"party_size": 2, "start": local})
    assert "out of range" in assert_error(reply, 422, "invalid request")
    assert snapshot(server, keep_refusals=True) == before


@pytest.mark.parametrize("day", ["9999-12-31", "0001-01-01", "1969-12-31"])
def test_a_reservation_list_for_a_date_out_of_range_is_refused_with_422(
    server: ServerProcess, day: str
) -> None:
    reply = host(server, "GET", "/reservations", params={"date": day})
    assert "out of range" in assert_error(reply, 422, "invalid request")


def test_a_webhook_start_in_words_says_what_a_start_looks_like(server: ServerProcess) -> None:
    message = assert_error(webhook(server, booking_event(new_id(), 2, "tomorrow")), 422)
    assert "'tomorrow'" in message and "ISO-8601" in message and "Unix seconds" in message


def test_create_booking_for_a_party_of_0_says_the_party_size_is_the_problem(
    server: ServerProcess,
) -> None:
    body = {
        "slot": {"merchant_id": MARLOWES, "start_sec": 1796756400, "resources": {"party_size": 0}},
        "user_information": {"user_id": "u-zero"},
    }
    message = assert_error(v3(server, "CreateBooking", body), 400, "bad arguments")
    assert "party_size must be from 1 to 10" in message


# -- v3 changes to bookings made by webhook -------------------------------------------------


def webhook_booking(server: ServerProcess, size: int, start: str) -> str:
    reply = webhook(server, booking_event(new_id(), size, start))
    assert reply.status_code == 200, reply.text
    return str(reply.json()["reservation_id"])


def test_v3_can_resize_a_booking_made_by_webhook(server: ServerProcess) -> None:
    booking_id = webhook_booking(server, 2, "2026-12-09T19:00:00+00:00")
    change = {"booking": {"booking_id": booking_id, "slot": {"resources": {"party_size": 4}}}}
    reply = v3(server, "UpdateBooking", change)
    assert reply.status_code == 200, reply.text
    booking = reply.json()["booking"]
    assert booking["status"] == "CONFIRMED"
    assert booking["slot"]["resources"] == {"party_size": 4}
    assert booking["slot"]["start_sec"] == 1796842800


def test_v3_can_cancel_a_booking_made_by_webhook_and_says_so_once(server: ServerProcess) -> None:
    booking_id = webhook_booking(server, 2, "2026-12-09T20:00:00+00:00")
    cancel = {"booking": {"booking_id": booking_id, "status": "CANCELED"}}
    reply = v3(server, "UpdateBooking", cancel)
    assert reply.status_code == 200, reply.text
    assert reply.json()["booking"]["status"] == "CANCELED"
    assert reply.json()["booking"]["slot"]["resources"] == {"party_size": 2}
    before = snapshot(server)
    again = v3(server, "UpdateBooking", cancel)
    assert again.json()["booking_failure"]["cause"] == "BOOKING_ALREADY_CANCELLED"
    assert snapshot(server) == before


def test_a_refused_v3_resize_of_a_webhook_booking_writes_nothing(server: ServerProcess) -> None:
    booking_id = webhook_booking(server, 2, "2026-12-09T21:00:00+00:00")
    before = snapshot(server)
    change = {"booking": {"booking_id": booking_id, "slot": {"resources": {"party_size": 19}}}}
    reply = v3(server, "UpdateBooking", change)
    assert reply.status_code == 200, reply.text
    assert reply.json()["booking_failure"]["cause"] == "SLOT_UNAVAILABLE"
    assert snapshot(server) == before
    status = v3(server, "GetBookingStatus", {"booking_id": booking_id})
    assert status.json()["booking_status"] == "CONFIRMED"


# -- serve ----------------------------------------------------------------------------------


def test_a_serve_that_cannot_listen_exits_3_and_exports_nothing(tmp_path: Path) -> None:
    """The sample settings stage feeds in ./out: a second server on a taken port must not
    have written there (over the running server's feeds) before failing to bind."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        args = [str(HOSTSTAND), "--now", NOW.isoformat(), "serve"]
        args += ["--config", str(CONFIGS[0]), "--settings", str(SETTINGS)]
        args += ["--db", str(tmp_path / "second.db"), "--port", str(port)]
        done = subprocess.run(
            args, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
        )
    assert done.returncode == 3, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no out/, no database
