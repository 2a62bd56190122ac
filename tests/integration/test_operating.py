"""Operating it (issue #15), on a real `hoststand serve` on 127.0.0.1: one log line per request
with its fields and nothing secret or personal, the events that matter in the log, /metrics
in the Prometheus text format, /healthz turning 503 past the backlog bound or with the store
down, and /readyz.

The server's clock is pinned (Friday 4 December 2026, 18:00 GMT); bookings are for Saturday.
Waiting is polling with a bounded timeout, never a fixed sleep.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from feed.service.signing import HEADER as SIGNATURE_HEADER
from feed.service.signing import sign
from tests.integration.postgres import fresh_schema
from tests.integration.server_process import (
    HOST_TOKENS,
    NOW_T,
    SECRETS,
    SETTINGS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    free_port,
    signed_post,
    start_server,
)

MARLOWES = "marlowes-kitchen"
HOST = f"/api/v1/restaurants/{MARLOWES}"
HOST_AUTH = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
BASIC = ("tablefinder", "sample-basic-password")  # samples/server.toml
SATURDAY_19 = 1_796_497_200  # Saturday 5 December 2026 19:00 in London (GMT)
GUEST = {"name": "Zelda Quux", "phone": "+44 7700 900123", "email": "zelda.quux@example.org"}
JSON_LOG = ("--log-format", "json")
SETTLE_SECONDS = 20


def poll(condition: Callable[[], bool], what: str, server: ServerProcess) -> None:
    deadline = time.monotonic() + SETTLE_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {SETTLE_SECONDS} s\n{server.output()[-4000:]}")
        time.sleep(0.05)


def log_lines(server: ServerProcess) -> list[dict[str, Any]]:
    """The server's JSON log lines (its start-up banner on stdout is text)."""
    return [json.loads(line) for line in server.output().splitlines() if line.startswith("{")]


def events(server: ServerProcess, event: str) -> list[dict[str, Any]]:
    return [line for line in log_lines(server) if line["event"] == event]


def metrics(server: ServerProcess) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of /metrics, parsed by prometheus_client's own parser."""
    reply = requests.get(f"{server.base}/metrics", timeout=TIMEOUT)
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(reply.text)
        for sample in family.samples
    }


def sample(
    found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    running = start_server(tmp_path_factory.mktemp("operating") / "hoststand.db", extra=JSON_LOG)
    try:
        yield running
    finally:
        running.stop()


def phone_booking(
    server: ServerProcess, start: str, request_id: str | None = None
) -> requests.Response:
    headers = dict(HOST_AUTH)
    if request_id is not None:
        headers["X-Request-Id"] = request_id
    body = {"party_size": 2, "start": start, "name": GUEST["name"], "phone": GUEST["phone"]}
    return requests.post(
        f"{server.base}{HOST}/reservations", json=body, headers=headers, timeout=TIMEOUT
    )


def v3_booking(server: ServerProcess, start_sec: int) -> requests.Response:
    body = {
        "slot": {
            "merchant_id": MARLOWES,
            "service_id": "1000",
            "start_sec": str(start_sec),
            "duration_sec": "2700",
            "resources": {"party_size": 2},
        },
        "user_information": {
            "user_id": "u-ops-1",
            "given_name": "Zelda",
            "family_name": "Quux",
            "telephone": GUEST["phone"],
            "email": GUEST["email"],
        },
        "idempotency_token": "ops-token-1",
    }
    return requests.post(f"{server.base}/v3/CreateBooking", json=body, auth=BASIC, timeout=TIMEOUT)


# -- the log ---------------------------------------------------------------------------------


def test_a_request_is_logged_once_with_its_route_status_duration_and_request_id(
    server: ServerProcess,
) -> None:
    reply = phone_booking(server, "2026-12-05T19:00", request_id="ops-req-1")
    assert reply.status_code == 200, reply.text
    assert reply.headers["X-Request-Id"] == "ops-req-1"
    poll(
        lambda: any(ln.get("request_id") == "ops-req-1" for ln in events(server, "request")),
        "request line",
        server,
    )
    [line] = [ln for ln in events(server, "request") if ln["request_id"] == "ops-req-1"]
    assert line["method"] == "POST"
    assert line["route"] == "/api/v1/restaurants/{merchant_id}/reservations"
    assert line["status"] == 200
    assert line["merchant"] == MARLOWES
    assert isinstance(line["duration_ms"], float | int) and line["duration_ms"] >= 0
    [booked] = [ln for ln in events(server, "book") if ln.get("request_id") == "ops-req-1"]
    assert booked["path"] == "host" and booked["outcome"] == "booked"
    assert booked["booking_id"] == reply.json()["reservation_id"]


def test_a_request_without_a_sane_request_id_gets_a_new_one(server: ServerProcess) -> None:
    given = requests.get(
        f"{server.base}/healthz", headers={"X-Request-Id": "two words; x=1"}, timeout=TIMEOUT
    )
    made = requests.get(f"{server.base}/healthz", timeout=TIMEOUT)
    for reply in (given, made):
        assert reply.headers["X-Request-Id"] != "two words; x=1"
        assert len(reply.headers["X-Request-Id"]) == 32
    assert given.headers["X-Request-Id"] != made.headers["X-Request-Id"]


def test_hot_path_requests_are_logged_with_their_route_template_and_partner(
    server: ServerProcess,
) -> None:
    body = json.dumps(booking_event("evt-ops-1", 2, "2026-12-05T19:15:00+00:00", **GUEST)).encode()
    headers = {
        SIGNATURE_HEADER: sign(SECRETS["tablefinder"], NOW_T, body),
        "X-Request-Id": "ops-hot-1",
    }
    reply = requests.post(
        f"{server.base}/webhooks/tablefinder", data=body, headers=headers, timeout=TIMEOUT
    )
    assert reply.status_code == 200, reply.text
    v3 = requests.post(
        f"{server.base}/v3/GetBookingStatus", json={"booking_id": "nope"}, auth=BASIC,
        headers={"X-Request-Id": "ops-hot-2"}, timeout=TIMEOUT,
    )  # fmt: skip
    assert v3.headers["X-Request-Id"] == "ops-hot-2"
    poll(
        lambda: (
            len([ln for ln in events(server, "request") if ln["request_id"].startswith("ops-hot-")])
            == 2
        ),
        "hot path lines",
        server,
    )
    lines = {ln["request_id"]: ln for ln in events(server, "request")}
    assert lines["ops-hot-1"]["route"] == "/webhooks/{partner_id}"
    assert lines["ops-hot-1"]["partner"] == "tablefinder"
    assert lines["ops-hot-1"]["merchant"] == MARLOWES
    assert lines["ops-hot-2"]["route"] == "/v3/GetBookingStatus"
    assert lines["ops-hot-2"]["partner"] == "tablefinder"
    assert lines["ops-hot-2"]["status"] == 400


def test_a_refused_signature_is_logged_with_the_partner_and_reason(server: ServerProcess) -> None:
    event = booking_event("evt-ops-bad", 2, "2026-12-05T19:15:00+00:00")
    reply = signed_post(server.base, "tablefinder", "not-the-secret-at-all", event)
    assert reply.status_code == 401
    poll(
        lambda: any(
            ln["reason"] == "signature does not match" for ln in events(server, "signature_refused")
        ),
        "refusal",
        server,
    )
    [line] = [
        ln
        for ln in events(server, "signature_refused")
        if ln["reason"] == "signature does not match"
    ]
    assert line["partner"] == "tablefinder"


def test_the_log_holds_no_secret_token_signature_or_guest_contact_detail(
    server: ServerProcess,
) -> None:
    assert phone_booking(server, "2026-12-05T20:00").status_code == 200
    assert v3_booking(server, SATURDAY_19 + 3600 + 1800).status_code == 200
    body = json.dumps(booking_event("evt-ops-2", 2, "2026-12-05T20:15:00+00:00", **GUEST)).encode()
    signature = sign(SECRETS["tablefinder"], NOW_T, body)
    reply = requests.post(
        f"{server.base}/webhooks/tablefinder", data=body, headers={SIGNATURE_HEADER: signature},
        timeout=TIMEOUT,
    )  # fmt: skip
    assert reply.status_code == 200, reply.text
    poll(lambda: len(events(server, "book")) >= 4, "booking lines", server)
    output = server.output()
    basic = base64.b64encode(":".join(BASIC).encode()).decode()
    forbidden = [
        HOST_TOKENS[MARLOWES], BASIC[1], basic, SECRETS["tablefinder"], SECRETS["dinerly"],
        signature, signature.split("v1=")[1], *GUEST.values(), "Zelda", "Quux", "Authorization",
    ]  # fmt: skip
    for secret in forbidden:
        assert secret not in output, secret


# -- /metrics --------------------------------------------------------------------------------


def test_metrics_count_bookings_by_path_and_outcome_and_requests_by_route_and_status(
    server: ServerProcess,
) -> None:
    before = metrics(server)
    assert phone_booking(server, "2026-12-05T21:00").status_code == 200
    refused = phone_booking(server, "2026-12-04T18:00")  # the slot has started
    assert refused.status_code != 200
    event = booking_event("evt-ops-3", 2, "2026-12-05T21:15:00+00:00")
    assert signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event).status_code == 200
    after = metrics(server)

    def grew(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert grew("hoststand_bookings_total", path="host", outcome="booked") == 1
    assert grew("hoststand_bookings_total", path="host", outcome="slot in the past") == 1
    assert grew("hoststand_bookings_total", path="webhook", outcome="booked") == 1
    route = "/api/v1/restaurants/{merchant_id}/reservations"
    assert grew("hoststand_http_requests_total", route=route, method="POST", status="200") == 1
    hot = "/webhooks/{partner_id}"
    assert grew("hoststand_http_requests_total", route=hot, method="POST", status="200") == 1
    assert grew("hoststand_http_request_duration_seconds_count", route=hot, method="POST") == 1
    assert sample(after, "hoststand_store_up") == 1
    assert ("hoststand_outbox_pending", frozenset({("partner", "tablefinder")})) in after


def test_every_app_has_its_own_registry(tmp_path: Path) -> None:
    from feed.http.metrics import Metrics
    from store.sqlite import SQLiteStore

    with SQLiteStore(tmp_path / "a.db") as one, SQLiteStore(tmp_path / "b.db") as two:
        first, second = Metrics(one, ["p"]), Metrics(two, ["p"])  # no duplicate registration
        first.booking("book", "v3", "booked")
        assert b'hoststand_bookings_total{outcome="booked",path="v3"} 1.0' in first.render()
        assert b"hoststand_bookings_total{" not in second.render()


# -- /healthz and /readyz --------------------------------------------------------------------


def test_healthz_reports_the_store_the_backlog_and_the_last_export(server: ServerProcess) -> None:
    # The start-up export runs beside the first requests: it is reported once it is done.
    deadline = time.monotonic() + 30
    while True:
        reply = requests.get(f"{server.base}/healthz", timeout=TIMEOUT)
        assert reply.status_code == 200
        health = reply.json()
        if health["last_export"] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert health["status"] == "ok" and health["store"] == "ok" and health["problems"] == []
    assert set(health["outbox"]) == {"pending", "dead", "oldest_pending_age_seconds"}
    assert health["max_backlog_seconds"] == 600
    assert health["last_export"]["outcome"] == "delivered"  # the start-up export
    assert health["last_export"]["age_seconds"] >= 0


def test_readyz_is_200_while_serving(server: ServerProcess) -> None:
    reply = requests.get(f"{server.base}/readyz", timeout=TIMEOUT)
    assert (reply.status_code, reply.json()) == (200, {"status": "ready"})


def write_settings(tmp: Path, partner_url: str, max_backlog: float) -> Path:
    """The sample settings with tablefinder told of changes at `partner_url`, quick back-offs
    and a backlog bound of `max_backlog` seconds."""
    text = SETTINGS.read_text(encoding="utf-8")
    text = text.replace(
        'basic_password = "sample-basic-password"',
        f'basic_password = "sample-basic-password"\nnotify_url = "{partner_url}"',
    )
    text = text.replace("coalesce_seconds = 10", "coalesce_seconds = 0\nretry_base_seconds = 0.2")
    text = text.replace("max_backlog_seconds = 600", f"max_backlog_seconds = {max_backlog}")
    text = text.replace('staging = "out"', f'staging = "{tmp / "out"}"')
    path = tmp / "settings.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_partner_that_is_down_logs_each_failure_and_turns_healthz_503_past_the_bound(
    tmp_path: Path,
) -> None:
    down = f"http://127.0.0.1:{free_port()}"  # nobody listens there: the partner is down
    settings = write_settings(tmp_path, down, max_backlog=1)
    server = start_server(tmp_path / "hoststand.db", settings=settings, extra=JSON_LOG)
    try:
        assert phone_booking(server, "2026-12-05T19:00").status_code == 200
        poll(lambda: bool(events(server, "delivery_failed")), "failed delivery in the log", server)
        failed = events(server, "delivery_failed")[0]
        assert failed["partner"] == "tablefinder"
        assert "ConnectionError" in failed["error"]
        assert failed["next_retry"].startswith("20")  # an ISO time
        assert failed["attempts"] >= 1

        def unhealthy() -> bool:
            return requests.get(f"{server.base}/healthz", timeout=TIMEOUT).status_code == 503

        poll(unhealthy, "503 from /healthz", server)
        health = requests.get(f"{server.base}/healthz", timeout=TIMEOUT).json()
        assert health["status"] == "unhealthy" and health["store"] == "ok"
        assert health["outbox"]["pending"] >= 1
        assert health["outbox"]["oldest_pending_age_seconds"] > 1
        assert "waited" in health["problems"][0]
        found = metrics(server)
        assert sample(found, "hoststand_outbox_pending", partner="tablefinder") >= 1
        assert (
            sample(found, "hoststand_outbox_oldest_pending_age_seconds", partner="tablefinder") > 1
        )
        assert (
            sample(
                found,
                "hoststand_outbox_delivery_failures_total",
                partner="tablefinder",
                outcome="retry",
            )
            >= 1
        )
        # still serving: the load balancer keeps sending it requests
        assert requests.get(f"{server.base}/readyz", timeout=TIMEOUT).status_code == 200
        # the requests were made by the server's sender process, which ends with it
        helpers = children(server.process.pid)
        assert [b"feed.push.sendproc" in command(pid) for pid in helpers] == [True]
    finally:
        assert server.stop() == 0
    poll(lambda: not any(map(running, helpers)), "end of the server's child processes", server)


def running(pid: int) -> bool:
    """Is the process there and not ended (a zombie has ended: only its parent has not
    collected it, and an orphan's parent here is whatever runs as pid 1)?"""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def command(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_a_store_that_stays_locked_turns_healthz_and_readyz_503(tmp_path: Path) -> None:
    with fresh_schema("ops") as url:
        server = start_server(url, workdir=tmp_path, extra=JSON_LOG)
        try:
            with psycopg.connect(url) as holder:  # a transaction holds both tables' locks
                holder.execute("LOCK TABLE outbox, idempotency IN ACCESS EXCLUSIVE MODE")
                with ThreadPoolExecutor(2) as pool:  # each waits out the lock timeout (5 s)
                    health = pool.submit(requests.get, f"{server.base}/healthz", timeout=TIMEOUT)
                    ready = pool.submit(requests.get, f"{server.base}/readyz", timeout=TIMEOUT)
                    health_reply, ready_reply = health.result(), ready.result()
                holder.rollback()
            assert health_reply.status_code == 503, health_reply.text
            assert health_reply.json()["store"] == "unavailable"
            assert ready_reply.status_code == 503
            assert ready_reply.json() == {"status": "store unavailable"}
            # the lock gone, it is healthy and ready again
            assert requests.get(f"{server.base}/healthz", timeout=TIMEOUT).status_code == 200
            assert requests.get(f"{server.base}/readyz", timeout=TIMEOUT).status_code == 200
        finally:
            assert server.stop() == 0
