"""A receiver on PostgreSQL whose database goes down (connections cut, new ones refused), as
a real process on 127.0.0.1: HealthCheck says so (503), and every call answers at once that
the database is unreachable, not that the store is busy after waiting for a connection."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.integration.postgres import fresh_schema
from tests.integration.server_process import TIMEOUT, ServerProcess, start_server
from tests.integration.tcp_proxy import TcpProxy

BASIC = ("tablefinder", "sample-basic-password")
RELAY_PORT = 8348
SERVER_PORT = 8349
CALLS = 12  # more than the pool's connections: each one the stop cut fails one call first


@pytest.fixture
def relay() -> Iterator[tuple[TcpProxy, str]]:
    with fresh_schema("down") as url:
        proxy, via = TcpProxy.before(url, port=RELAY_PORT)
        try:
            yield proxy, via
        finally:
            proxy.stop()


@pytest.fixture
def server(relay: tuple[TcpProxy, str], tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_server(relay[1], workdir=tmp_path, port=SERVER_PORT, extra=["--no-export"])
    try:
        yield process
    finally:
        process.stop()


def health_check(server: ServerProcess) -> requests.Response:
    return requests.get(f"{server.base}/v3/HealthCheck", auth=BASIC, timeout=TIMEOUT)


def booking_status(server: ServerProcess) -> requests.Response:
    return requests.post(
        f"{server.base}/v3/GetBookingStatus",
        json={"booking_id": "bk-none"},
        auth=BASIC,
        timeout=TIMEOUT,
    )


def replies_until_unreachable(server: ServerProcess, path: str) -> list[requests.Response]:
    """Replies to `path` until one says the database is unreachable (at most CALLS)."""
    replies = []
    for _ in range(CALLS):
        reply = health_check(server) if path == "HealthCheck" else booking_status(server)
        replies.append(reply)
        if "unreachable" in reply.text:
            break
    return replies


def test_health_check_is_503_and_calls_say_unreachable_while_the_database_is_down(
    relay: tuple[TcpProxy, str], server: ServerProcess
) -> None:
    proxy, _ = relay
    assert health_check(server).status_code == 200
    answered = booking_status(server)
    assert "unknown booking" in answered.text, answered.text  # the store was read
    proxy.stop()
    checks = replies_until_unreachable(server, "HealthCheck")
    assert [r.status_code for r in checks] == [503] * len(checks)
    assert "the store is unreachable" in checks[-1].json()["error"]["message"], checks[-1].text
    calls = replies_until_unreachable(server, "GetBookingStatus")
    assert [r.status_code for r in calls] == [503] * len(calls)
    message = calls[-1].json()["error"]["message"]
    assert "the store is unreachable" in message and "busy" not in message, message
    proxy.start()  # back: healthy again
    checks = [health_check(server) for _ in range(CALLS)]
    assert checks[-1].status_code == 200, checks[-1].text
