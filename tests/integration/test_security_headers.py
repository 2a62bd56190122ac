"""Every response of a real `hoststand serve` tells the browser not to sniff its type, not
to be framed and not to send our URLs on: the tablet's page, its script, the host API's
JSON (a guest's name in it), its errors, the partners' hot paths, /docs and /metrics."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.integration.server_process import (
    HOST_TOKENS,
    SECRETS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    running_server,
    signed_post,
)

HOST = "/api/v1/restaurants/marlowes-kitchen"
AUTH = {"Authorization": f"Bearer {HOST_TOKENS['marlowes-kitchen']}"}
EXPECTED = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    db: Path = tmp_path_factory.mktemp("headers") / "hoststand.db"
    with running_server(db) as running:
        yield running


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("/", {}, 200),
        ("/host/marlowes-kitchen", {}, 200),
        ("/tablet/tablet.js", {}, 200),
        ("/docs", {}, 200),
        ("/openapi.json", {}, 200),
        ("/metrics", {}, 200),
        ("/healthz", {}, 200),
        (f"{HOST}/floor", AUTH, 200),
        (f"{HOST}/reservations", AUTH, 200),
        (f"{HOST}/floor", {}, 401),
        ("/no/such/page", {}, 404),
    ],
)
def test_every_response_forbids_sniffing_framing_and_referrers(
    server: ServerProcess, path: str, headers: dict[str, str], status: int
) -> None:
    reply = requests.get(f"{server.base}{path}", headers=headers, timeout=TIMEOUT)
    assert reply.status_code == status, reply.text
    assert {k: reply.headers.get(k) for k in EXPECTED} == EXPECTED


def test_a_partners_webhook_reply_forbids_sniffing_framing_and_referrers(
    server: ServerProcess,
) -> None:
    event = booking_event("ev-headers", 2, "2026-12-04T19:00:00+00:00", name="<b>Ada</b>")
    reply = signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event)
    assert reply.status_code == 200, reply.text
    assert {k: reply.headers.get(k) for k in EXPECTED} == EXPECTED


def test_the_host_page_keeps_its_own_content_security_policy(server: ServerProcess) -> None:
    reply = requests.get(f"{server.base}/host/marlowes-kitchen", timeout=TIMEOUT)
    policy = reply.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
