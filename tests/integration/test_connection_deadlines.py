"""A connection is held only as long as a real HTTP server would hold it: a request's line
and headers within the settings' [http] head_seconds, its body within body_seconds, an idle
kept-alive connection closed, and a connection past max_connections refused on arrival.
The tablets' event streams are long-lived on purpose and stay open past every bound.

Each refusal the connection makes itself (a 408, a 503 at the cap) is logged and counted
though the app never sees it.

A real `hoststand serve` on 127.0.0.1 with short bounds (a settings file in tmp_path) and
raw sockets; a test waits for the server to close a socket, with a deadline far past the
bound, never for a guessed time.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from feed.service.signing import HEADER, sign
from tests.integration.server_process import (
    HOST_TOKENS,
    NOW_T,
    SECRETS,
    SETTINGS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    start_server,
)

MARLOWES = "marlowes-kitchen"
HOST = f"/api/v1/restaurants/{MARLOWES}"
BASIC = "Basic " + base64.b64encode(b"tablefinder:sample-basic-password").decode()
CLOSED_WITHIN = 30.0  # seconds: far past every bound here, so only a hang fails
SATURDAY_19 = 1796497200  # 2026-12-05 19:00 in London: a dinner slot
NO_ROUTE = "(none)"  # the route label of a request the connection refused before the app
OPEN = "hoststand_http_connections_open"


def settings_with(tmp: Path, http: str) -> Path:
    """The sample settings with their [http] section replaced by `http`."""
    text = SETTINGS.read_text(encoding="utf-8")
    text = re.sub(r"\n\[http\]\n(?:[^\[\n][^\n]*\n?)*", "\n", text)
    path = tmp / "server.toml"
    path.write_text(f"{text}\n[http]\n{http}\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("deadlines")
    settings = settings_with(tmp, "head_seconds = 1\nbody_seconds = 8\nkeep_alive_seconds = 1")
    running = start_server(tmp / "hoststand.db", settings=settings)
    try:
        yield running
    finally:
        running.stop()


def connect(server: ServerProcess, sent: bytes = b"") -> socket.socket:
    host, port = server.base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=TIMEOUT)
    if sent:
        sock.sendall(sent)
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (fails past CLOSED_WITHIN)."""
    sock.settimeout(CLOSED_WITHIN)
    got = b""
    with sock:
        while chunk := sock.recv(65536):
            got += chunk
    return got


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def webhook_head(body: bytes) -> bytes:
    signature = sign(SECRETS["tablefinder"], NOW_T, body)
    return (
        "POST /webhooks/tablefinder HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\n{HEADER}: {signature}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()


def test_a_connection_that_never_sends_a_request_is_closed(server: ServerProcess) -> None:
    assert read_until_closed(connect(server)) == b""


def test_a_client_that_sends_half_a_request_line_and_stops_is_answered_408_and_closed(
    server: ServerProcess,
) -> None:
    assert status_of(read_until_closed(connect(server, b"GET /hea"))) == 408


def test_a_client_stuck_in_its_headers_is_answered_408_and_closed(server: ServerProcess) -> None:
    sent = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: appl"
    assert status_of(read_until_closed(connect(server, sent))) == 408


def test_a_body_that_stops_midway_is_answered_408_closed_and_books_nothing(
    server: ServerProcess,
) -> None:
    slot = {"merchant_id": MARLOWES, "start_sec": SATURDAY_19, "resources": {"party_size": 2}}
    body = json.dumps({"slot": slot, "user_information": {"user_id": "u-stuck"}}).encode()
    head = (
        f"POST /v3/CreateBooking HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {BASIC}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    assert status_of(read_until_closed(connect(server, head + body[:-5]))) == 408
    listed = requests.post(
        f"{server.base}/v3/ListBookings",
        json={"user_id": "u-stuck"},
        headers={"Authorization": BASIC},
        timeout=TIMEOUT,
    )
    assert listed.json() == {"bookings": []}, listed.text
    assert "Traceback" not in server.output(), server.output()[-3000:]


# A request whose body stops midway, on a hot path (v3) and on a FastAPI route (the host's).
CUT_BODIES = [
    pytest.param(
        "/v3/CreateBooking",
        "/v3/CreateBooking",
        BASIC,
        {"slot": {"merchant_id": MARLOWES, "start_sec": SATURDAY_19}, "user_information": {}},
        id="hot-path",
    ),
    pytest.param(
        f"{HOST}/walk-ins",
        "/api/v1/restaurants/{merchant_id}/walk-ins",
        f"Bearer {HOST_TOKENS[MARLOWES]}",
        {"size": 2, "party_id": "w-half"},
        id="fastapi-route",
    ),
]


def half_a_post(path: str, auth: str, body: dict[str, object], request_id: str) -> bytes:
    """A POST's head and all but the last bytes of its body, sent as `request_id`."""
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {auth}\r\n"
        f"X-Request-Id: {request_id}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    ).encode()
    return head + data[:-5]


def logged(server: ServerProcess, request_id: str) -> str:
    """The request's log line, once the server has written it."""
    pattern = re.compile(rf"hoststand\.request .* request_id={re.escape(request_id)}( |$)")
    deadline = time.monotonic() + CLOSED_WITHIN
    while time.monotonic() < deadline:
        for line in server.output().splitlines():
            if pattern.search(line):
                return line
        time.sleep(0.05)
    raise AssertionError(f"no log line for {request_id}:\n{server.output()[-2000:]}")


def scraped(server: ServerProcess) -> str:
    reply = requests.get(f"{server.base}/metrics", timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    return reply.text


def counted(server: ServerProcess, route: str, method: str = "POST") -> dict[str, float]:
    """/metrics' count of requests to `route` by `method`, by status."""
    return {
        sample.labels["status"]: sample.value
        for family in text_string_to_metric_families(scraped(server))
        for sample in family.samples
        if sample.name == "hoststand_http_requests_total"
        and sample.labels["route"] == route
        and sample.labels["method"] == method
    }


def gauge(text: str, name: str) -> float:
    """The value of the metric `name` (no labels) in a scrape's `text`."""
    values = [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    ]
    assert len(values) == 1, f"{name} not in /metrics:\n{text}"
    return values[0]


@pytest.mark.parametrize(("path", "route", "auth", "body"), CUT_BODIES)
def test_a_body_past_body_seconds_is_logged_and_counted_as_the_408_its_client_was_told(
    server: ServerProcess, path: str, route: str, auth: str, body: dict[str, object]
) -> None:
    before = counted(server, route)
    request_id = f"late-{uuid.uuid4().hex}"
    sent = half_a_post(path, auth, body, request_id)
    assert status_of(read_until_closed(connect(server, sent))) == 408
    line = logged(server, request_id)
    assert " status=408 " in line, line  # not 499: the client did not close it, we did
    after = counted(server, route)
    assert after.get("408", 0) == before.get("408", 0) + 1, (before, after)
    assert after.get("499", 0) == before.get("499", 0), (before, after)


@pytest.mark.parametrize(("path", "route", "auth", "body"), CUT_BODIES)
def test_a_body_its_client_cuts_within_body_seconds_is_still_logged_and_counted_499(
    server: ServerProcess, path: str, route: str, auth: str, body: dict[str, object]
) -> None:
    before = counted(server, route)
    request_id = f"cut-{uuid.uuid4().hex}"
    sock = connect(server, half_a_post(path, auth, body, request_id))
    sock.shutdown(socket.SHUT_WR)  # the client gives up mid-body, long before the deadline
    assert read_until_closed(sock) == b""  # nobody left to answer
    line = logged(server, request_id)
    assert " status=499 " in line, line
    after = counted(server, route)
    assert after.get("499", 0) == before.get("499", 0) + 1, (before, after)
    assert after.get("408", 0) == before.get("408", 0), (before, after)


def test_a_request_stuck_in_its_headers_is_logged_and_counted_as_a_408_with_no_route(
    server: ServerProcess,
) -> None:
    """Never seen by the app (the connection answers it), yet an operator under a slowloris
    attack sees each in the log and in /metrics."""
    before = counted(server, NO_ROUTE, "GET")
    request_id = f"stuck-{uuid.uuid4().hex}"
    sent = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: {request_id}\r\nAcc"
    assert status_of(read_until_closed(connect(server, sent.encode()))) == 408
    line = logged(server, request_id)
    assert ' route="(none)" status=408 ' in line, line
    assert " method=GET " in line, line
    after = counted(server, NO_ROUTE, "GET")
    assert after.get("408", 0) == before.get("408", 0) + 1, (before, after)


def test_a_request_stuck_in_its_request_line_is_counted_408_and_its_path_is_never_a_label(
    server: ServerProcess,
) -> None:
    path = f"/stuck-{uuid.uuid4().hex}"
    before = counted(server, NO_ROUTE, "GET")
    assert status_of(read_until_closed(connect(server, f"GET {path}".encode()))) == 408
    after = counted(server, NO_ROUTE, "GET")
    assert after.get("408", 0) == before.get("408", 0) + 1, (before, after)
    assert path not in scraped(server)


def test_open_connections_are_shown_in_metrics_while_they_are_open(
    server: ServerProcess,
) -> None:
    """Three tablets' event streams (open past every deadline) and the scrape itself."""
    url = f"{server.base}{HOST}/events"
    params = {"token": HOST_TOKENS[MARLOWES], "day": "2026-12-08"}
    with contextlib.ExitStack() as streams:
        for _ in range(3):
            reply = streams.enter_context(
                requests.get(url, params=params, stream=True, timeout=CLOSED_WITHIN)
            )
            assert reply.status_code == 200, reply.text
        _poll(lambda: gauge(scraped(server), OPEN) >= 4, "4 connections open")
    # Closed, by the client: only the scrape's own stays (the others' bounds are a second).
    _poll(lambda: gauge(scraped(server), OPEN) == 1, "the scrape's connection alone open")


def _poll(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + CLOSED_WITHIN
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def test_an_idle_kept_alive_connection_is_closed(server: ServerProcess) -> None:
    answer = read_until_closed(connect(server, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
    assert status_of(answer) == 200


def test_a_slow_steady_body_that_takes_longer_than_the_head_deadline_is_booked(
    server: ServerProcess,
) -> None:
    """Ten pieces a fifth of a second apart: the body takes longer than head_seconds and
    ends well within body_seconds."""
    body = json.dumps(booking_event("slow-body", 2, SATURDAY_19 + 3600)).encode()
    sock = connect(server, webhook_head(body))
    step = len(body) // 10 + 1
    for start in range(0, len(body), step):
        time.sleep(0.2)  # the pace of a slow client, not a wait for the server
        sock.sendall(body[start : start + step])
    sock.settimeout(CLOSED_WITHIN)
    with sock:
        answer = sock.recv(65536)
    assert status_of(answer) == 200, answer


def test_a_tablets_event_stream_stays_open_past_every_deadline(server: ServerProcess) -> None:
    """The stream is opened with a stuck request line and a stuck body beside it; once the
    server has closed both (each past its bound), the stream still tells of a booking."""
    url = f"{server.base}{HOST}/events"
    params = {"token": HOST_TOKENS[MARLOWES], "day": "2026-12-08"}
    with requests.get(url, params=params, stream=True, timeout=CLOSED_WITHIN) as reply:
        assert reply.status_code == 200, reply.text
        lines = reply.iter_lines(decode_unicode=True)
        assert "event: bookings" in _until(lines, "event: bookings")
        body = json.dumps(booking_event("beside-stream", 2, SATURDAY_19 + 7200)).encode()
        stuck_head = connect(server, b"GET /hea")
        stuck_body = connect(server, webhook_head(body) + body[:10])
        assert status_of(read_until_closed(stuck_head)) == 408
        assert status_of(read_until_closed(stuck_body)) == 408
        tuesday = {"party_size": 2, "start": "2026-12-08T19:00", "name": "Bo"}
        booked = requests.post(
            f"{server.base}{HOST}/reservations",
            json=tuesday,
            headers={"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"},
            timeout=TIMEOUT,
        )
        assert booked.status_code == 200, booked.text
        assert "event: bookings" in _until(lines, "event: bookings")


def _until(lines: Iterator[str], wanted: str) -> list[str]:
    seen: list[str] = []
    for line in lines:
        seen.append(line)
        if line == wanted:
            break
    return seen


def test_connections_past_max_connections_are_answered_503_and_closed(tmp_path: Path) -> None:
    """Six at once against a cap of three: those past it are refused on arrival; the
    others are held (until their head deadline closes them, silently: nothing was asked)."""
    settings = settings_with(tmp_path, "head_seconds = 3\nmax_connections = 3")
    server = start_server(tmp_path / "hoststand.db", settings=settings)
    try:
        socks = [connect(server) for _ in range(6)]
        answers = [read_until_closed(sock) for sock in socks]
        refused = [a for a in answers if a]
        assert {status_of(a) for a in refused} == {503}, answers
        assert len(refused) >= 3, answers
        # Once they are closed, the server serves again.
        assert requests.get(f"{server.base}/healthz", timeout=TIMEOUT).status_code == 200
    finally:
        server.stop()


def test_connections_refused_at_the_cap_are_counted_and_logged_a_line_a_second_saying_how_many(
    tmp_path: Path,
) -> None:
    """Thirty at once against a cap of three: every one refused is counted, and the log says
    how many in all, in fewer lines than connections (a line a second at most: a flood of
    connections is not a flood of the log)."""
    settings = settings_with(tmp_path, "head_seconds = 3\nmax_connections = 3")
    server = start_server(tmp_path / "hoststand.db", settings=settings)
    try:
        socks = [connect(server) for _ in range(30)]
        answers = [read_until_closed(sock) for sock in socks]
        refused = [a for a in answers if a]
        assert {status_of(a) for a in refused} == {503}, answers
        assert len(refused) >= 10, answers
        assert gauge(scraped(server), "hoststand_http_connections_refused_total") == len(refused)
        lines: list[str] = []

        def all_logged() -> bool:
            lines[:] = [line for line in server.output().splitlines() if " status=503 " in line]
            return sum(int(line.rsplit(" refused=", 1)[1]) for line in lines) == len(refused)

        _poll(all_logged, f"{len(refused)} refusals logged:\n{server.output()[-3000:]}")
        assert all(' method=- route="(none)" status=503 ' in line for line in lines), lines
        assert all(" WARNING hoststand.request request " in line for line in lines), lines
        assert len(lines) < len(refused), lines
    finally:
        server.stop()


AT_ARRIVAL = b"too many connections"  # the body of our refusal on arrival (uvicorn's differs)


def _get(conn: http.client.HTTPConnection, path: str) -> tuple[int, bytes]:
    conn.request("GET", path)
    reply = conn.getresponse()
    return reply.status, reply.read()


@pytest.mark.parametrize("held", ["idle", "event-streams"])
def test_with_exactly_max_connections_open_a_request_on_one_of_them_is_served(
    tmp_path: Path, held: str
) -> None:
    """Three open against a cap of three (two held: idle kept-alive connections, or tablets'
    event streams; the third asks): the third is served, not answered uvicorn's own 503
    (never logged nor counted), and only a fourth is refused, on arrival."""
    settings = settings_with(tmp_path, "keep_alive_seconds = 60\nmax_connections = 3")
    server = start_server(tmp_path / "hoststand.db", settings=settings)
    host, port = server.base.removeprefix("http://").split(":")
    with contextlib.ExitStack() as stack:
        stack.callback(server.stop)
        for _ in range(2):
            if held == "idle":
                conn = http.client.HTTPConnection(host, int(port), timeout=CLOSED_WITHIN)
                stack.callback(conn.close)
                assert _get(conn, "/healthz")[0] == 200  # and kept alive
            else:
                url = f"{server.base}{HOST}/events"
                params = {"token": HOST_TOKENS[MARLOWES], "day": "2026-12-08"}
                stream = stack.enter_context(
                    requests.get(url, params=params, stream=True, timeout=CLOSED_WITHIN)
                )
                assert stream.status_code == 200, stream.text
        # The server may not have seen the readiness check's connection close yet: the third
        # is then refused on arrival (a fourth), and opened again until it is the third.
        deadline = time.monotonic() + CLOSED_WITHIN
        while True:
            third = http.client.HTTPConnection(host, int(port), timeout=CLOSED_WITHIN)
            stack.callback(third.close)
            try:
                status, body = _get(third, "/healthz")
            except (ConnectionError, http.client.RemoteDisconnected):
                status, body = 503, AT_ARRIVAL
            if not (status == 503 and AT_ARRIVAL in body):
                break
            assert time.monotonic() < deadline, "the third connection was always refused"
            third.close()
        assert status == 200, (status, body)
        assert _get(third, "/healthz")[0] == 200  # and again, on the same connection
        fourth = http.client.HTTPConnection(host, int(port), timeout=CLOSED_WITHIN)
        stack.callback(fourth.close)
        try:
            status, body = _get(fourth, "/healthz")
        except (ConnectionError, http.client.RemoteDisconnected):
            status, body = 503, AT_ARRIVAL  # refused before the request was read
        assert (status, AT_ARRIVAL in body) == (503, True), (status, body)
