"""A store that stays locked is the receiver's problem, not the client's: 503, Retry-After."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from feed.http.server import create_app
from feed.service.receiver import Receiver
from feed.service.signing import sign
from feed.settings import Settings, load_settings
from feed.venue.restaurant import load_restaurant
from store.log import StoreUnavailable
from store.sqlite import SQLiteStore
from tests.integration.full_disk import FullDiskStore

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)


class LockedStore(SQLiteStore):
    """A real store whose reads of idempotency records find the database locked."""

    def recall(self, scope: str, key: str) -> Any:
        raise StoreUnavailable("database is locked")


def call(
    app: Any, path: str, body: bytes, headers: dict[str, str], method: str = "POST"
) -> tuple[int, dict[str, str], Any]:
    """One HTTP request straight through the ASGI app (no network, no extra client library)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    headers_out = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], headers_out, json.loads(data)


def signed_booking(settings: Settings, event_id: str) -> tuple[bytes, dict[str, str]]:
    """A partner's signed booking webhook for Friday 19:00: (body, headers)."""
    body = json.dumps(
        {
            "id": event_id,
            "type": "reservation.requested",
            "merchant_id": "marlowes-kitchen",
            "data": {"party_size": 2, "start": "2026-12-04T19:00:00+00:00"},
        }
    ).encode()
    secret = settings.partners["tablefinder"].secret
    assert secret is not None
    signature = sign(secret, int(NOW.timestamp()), body)
    return body, {"content-type": "application/json", "hoststand-signature": signature}


def test_a_locked_store_answers_503_with_retry_after_and_the_error_shape(tmp_path: Path) -> None:
    settings = load_settings(REPO / "samples" / "server.toml")
    store = LockedStore(tmp_path / "hoststand.db")
    try:
        receiver = Receiver(
            [load_restaurant(REPO / "samples" / "marlowes.toml")], store, settings, lambda: NOW
        )
        body, headers = signed_booking(settings, "e1")
        status, headers, reply = call(create_app(receiver), "/webhooks/tablefinder", body, headers)
    finally:
        store.close()
    assert status == 503
    assert headers["retry-after"] == "1"
    assert reply["error"]["code"] == "unavailable"
    assert set(reply) == {"error"} and set(reply["error"]) == {"code", "message"}


class OnceLockedStore(SQLiteStore):
    """A real store whose first append finds the database locked."""

    locked = True

    def append_all(self, *args: Any, **kwargs: Any) -> None:
        if self.locked:
            self.locked = False
            raise StoreUnavailable("database is locked")
        super().append_all(*args, **kwargs)


def test_a_delivery_that_met_a_busy_store_is_processed_afresh_when_retried(
    tmp_path: Path,
) -> None:
    settings = load_settings(REPO / "samples" / "server.toml")
    store = OnceLockedStore(tmp_path / "hoststand.db")
    try:
        receiver = Receiver(
            [load_restaurant(REPO / "samples" / "marlowes.toml")], store, settings, lambda: NOW
        )
        app = create_app(receiver)
        body, headers = signed_booking(settings, "e2")
        first, _, _ = call(app, "/webhooks/tablefinder", body, headers)
        second, _, reply = call(app, "/webhooks/tablefinder", body, headers)
    finally:
        store.close()
    assert first == 503
    assert second == 200  # the 503 was not stored as this event's answer
    assert reply["status"] == "booked"


def test_a_full_disk_answers_503_with_retry_after_saying_the_store_cannot_be_written(
    tmp_path: Path,
) -> None:
    settings = load_settings(REPO / "samples" / "server.toml")
    store = FullDiskStore(tmp_path / "hoststand.db")
    try:
        receiver = Receiver(
            [load_restaurant(REPO / "samples" / "marlowes.toml")], store, settings, lambda: NOW
        )
        app = create_app(receiver)
        body, headers = signed_booking(settings, "e3")
        store.room = 0
        status, answer_headers, reply = call(app, "/webhooks/tablefinder", body, headers)
        written = [
            store.entries("marlowes-kitchen", d) for d in store.service_dates("marlowes-kitchen")
        ]
        store.room = None  # the operator frees the disk: the partner's retry books
        retried, _, booked = call(app, "/webhooks/tablefinder", body, headers)
    finally:
        store.close()
    assert status == 503
    assert answer_headers["retry-after"] == "1"
    assert reply["error"]["code"] == "unavailable"
    assert reply["error"]["message"].startswith("the store cannot be written")
    assert "busy" not in reply["error"]["message"]
    assert written == []
    assert (retried, booked["status"]) == (200, "booked")


def test_healthz_and_the_partners_health_check_are_503_while_the_disk_cannot_be_written(
    tmp_path: Path,
) -> None:
    settings = load_settings(REPO / "samples" / "server.toml")
    store = FullDiskStore(tmp_path / "hoststand.db")
    basic = base64.b64encode(b"tablefinder:sample-basic-password").decode()
    try:
        receiver = Receiver(
            [load_restaurant(REPO / "samples" / "marlowes.toml")], store, settings, lambda: NOW
        )
        app = create_app(receiver)
        app.state.readiness.serving()

        def get(path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
            status, _, reply = call(app, path, b"", headers or {}, method="GET")
            return status, reply

        assert get("/healthz")[0] == 200
        store.room = 0  # the disk is full: reads still answer, writes fail
        healthz = get("/healthz")
        check = get("/v3/HealthCheck", {"authorization": f"Basic {basic}"})
        ready = get("/readyz")
        store.room = None  # space freed
        healthy_again = get("/healthz")[0]
    finally:
        store.close()
    assert healthz[0] == 503
    assert (healthz[1]["status"], healthz[1]["store"]) == ("unhealthy", "unwritable")
    assert healthz[1]["problems"][0].startswith("the store cannot be written")
    assert check[0] == 503
    assert check[1]["error"]["message"].startswith("the store cannot be written")
    assert ready == (200, {"status": "ready"})  # it still answers lookups and the board
    assert healthy_again == 200
