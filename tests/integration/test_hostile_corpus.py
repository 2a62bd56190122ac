"""A hostile corpus against every route of a real `hoststand serve` on 127.0.0.1.

A few thousand requests, built from valid ones by swapping in wrong types, sizes, depths,
encodings, headers, dates, numbers, methods and paths. The rules checked: no answer is a
5xx, every refusal is in the error shape, a refused request changes nothing in the store
(logs, idempotency records, outbox), and the server is still healthy after the lot. The
same corpus runs on each store (an SQLite file, then PostgreSQL): a value one store keeps may
be one the other refuses.
"""

from __future__ import annotations

import base64
import itertools
import json
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests

from feed.push.outbox import SERVES_SCOPE
from feed.service.signing import HEADER, sign
from store.turns import SCOPE as TURN
from tests.integration.postgres import BACKENDS, database
from tests.integration.server_process import (
    HOST_TOKENS,
    NOW_T,
    SECRETS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    change_event,
    running_server,
)

MARLOWES = "marlowes-kitchen"
HOST = f"/api/v1/restaurants/{MARLOWES}"
BEARER = f"Bearer {HOST_TOKENS[MARLOWES]}"
BASIC = "Basic " + base64.b64encode(b"tablefinder:sample-basic-password").decode()
SECRET = SECRETS["tablefinder"]
START = "2026-12-11T19:00:00+00:00"
START_SEC = 1797102000  # 2026-12-11 19:00 GMT, a Friday dinner slot

# Values swapped in for each field of a valid body: wrong types, edges of ints and strings,
# dates and numbers that once broke the server, text a store or a path might choke on.
HOSTILE_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**63,
    10**40,
    1.5,
    "",
    "x" * 5000,
    "\u0000",
    "\ud800",
    "a/b",
    "..",
    "%2F",
    "\uff11\uff12",
    "tomorrow",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:00-12:00",
    "99999999999999999999",
    [],
    {},
    [[[[[]]]]],
    {"$ref": "#"},
]

# Whole bodies: not JSON, not objects, too deep, too big, odd encodings and numbers.
HOSTILE_BODIES: list[bytes] = [
    b"",
    b"{",
    b"null",
    b"[]",
    b"1",
    b'"x"',
    b"{}",
    b'{"a": NaN}',
    b'{"a": Infinity}',
    b'{"a": 1e400}',
    b'{"a": -1e400}',
    b'{"a": ' + b"9" * 5000 + b"}",
    b'{"a": "\\ud800"}',
    b'{"\\udfff": 1}',
    b"\xff\xfe{\x00}\x00",
    b"\xef\xbb\xbf{}",
    b'{"a": "\xff"}',
    b"[" * 600 + b"]" * 600,
    b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
    b'{"a": "' + b"x" * 70_000 + b'"}',
    b'{"a": 1, "a": 2}',
    b"\x00",
    b"{} trailing",
]


@dataclass
class Tally:
    sent: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class Tables:
    """The store's tables a refusal must leave as they were, read straight from either store."""

    def __init__(self, db: Path | str) -> None:
        self.conn: Any
        if isinstance(db, Path):
            self.conn, self.mark = sqlite3.connect(db), "?"
        else:
            self.conn, self.mark = psycopg.connect(db, autocommit=True), "%s"

    def snapshot(self) -> list[Any]:
        return [
            self.conn.execute("SELECT * FROM log_entries ORDER BY 1, 2, 3").fetchall(),
            # The clock's turns (store.turns) and the outbox sender's note of the restaurants
            # it serves (written every SERVES_SECONDS) are written by time, not by requests:
            # left out.
            self.conn.execute(
                "SELECT scope, key, value FROM idempotency"
                f" WHERE scope NOT IN ({self.mark}, {self.mark}) ORDER BY 1, 2",
                (TURN, SERVES_SCOPE),
            ).fetchall(),
            self.conn.execute("SELECT * FROM outbox ORDER BY id").fetchall(),
        ]

    def close(self) -> None:
        self.conn.close()


def kept_refusal(before: list[Any], after: list[Any]) -> bool:
    """The only change a refusal may make: a webhook's refusal remembered for its event
    id (so a retried delivery gets the same answer)."""
    if before[0] != after[0] or before[2] != after[2]:
        return False
    added = set(after[1]) - set(before[1])
    return set(before[1]) <= set(after[1]) and all(
        scope.startswith("event:") and '"error"' in value for scope, _key, value in added
    )


def error_shaped(reply: requests.Response) -> bool:
    try:
        body = reply.json()
    except ValueError:
        return False
    return (
        isinstance(body, dict)
        and set(body) == {"error"}
        and isinstance(body["error"], dict)
        and set(body["error"]) == {"code", "message"}
    )


def variants(body: Any) -> Iterator[Any]:
    """`body` with one field (at any depth) swapped for each hostile value, or dropped."""
    if isinstance(body, dict):
        for name in body:
            for value in HOSTILE_VALUES:
                yield {**body, name: value}
            yield {k: v for k, v in body.items() if k != name}
            for inner in variants(body[name]):
                yield {**body, name: inner}
    elif isinstance(body, list) and body:
        for inner in variants(body[0]):
            yield [inner, *body[1:]]


class Corpus:
    def __init__(self, server: ServerProcess, tables: Tables) -> None:
        self.server = server
        self.http = requests.Session()
        self.db = tables
        self.tally = Tally()

    def send(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
    ) -> None:
        before = self.db.snapshot()
        try:
            reply = self.http.request(
                method,
                self.server.base + path,
                data=body,
                headers=headers or {},
                params=params,
                timeout=TIMEOUT,
            )
        except requests.ConnectionError as exc:  # a reset is not an answer, and is a bug
            self.tally.problems.append(f"{method} {path[:80]}: connection error {exc}")
            self.http = requests.Session()
            return
        self.tally.sent += 1
        status = reply.status_code
        self.tally.by_status[status] = self.tally.by_status.get(status, 0) + 1
        what = f"{method} {path[:80]} {body[:80]!r} -> {status} {reply.text[:160]}"
        if status >= 500:
            self.tally.problems.append(what)
        elif status >= 400 and method != "HEAD":
            # uvicorn's HTTP parser refuses a malformed request (a NUL in a header) before
            # any of our code runs, in plain text: not ours to shape, and nothing is read.
            protocol = status == 400 and reply.text == "Invalid HTTP request received."
            if not protocol and not error_shaped(reply):
                self.tally.problems.append("not the error shape: " + what)
            after = self.db.snapshot()
            if after != before and not kept_refusal(before, after):
                self.tally.problems.append("a refusal changed the store: " + what)

    def webhook(self, body: bytes, partner: str = "tablefinder", **headers: Any) -> None:
        signed = {HEADER: sign(SECRET, NOW_T, body), "Content-Type": "application/json"}
        self.send("POST", f"/webhooks/{partner}", body, {**signed, **headers})

    def json_variants(self, method: str, path: str, valid: Any, auth: dict[str, str]) -> None:
        for body in itertools.chain([valid], variants(valid)):
            self.send(method, path, encode(fresh_ids(body)), auth)


def encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=True).encode()


def fresh_ids(body: Any) -> Any:
    """A webhook event keeps its shape but gets a new id, so each is a new delivery."""
    if isinstance(body, dict) and isinstance(body.get("id"), str) and body["id"].startswith("e-"):
        return {**body, "id": f"e-{uuid.uuid4().hex}"}
    return body


def seed(corpus: Corpus) -> dict[str, str]:
    """A few real bookings and parties for the change routes to point at."""
    base, auth = corpus.server.base, {"Authorization": BASIC}
    hooked = requests.post(
        f"{base}/webhooks/tablefinder",
        data=(body := encode(booking_event("seed-1", 2, START))),
        headers={HEADER: sign(SECRET, NOW_T, body)},
        timeout=TIMEOUT,
    ).json()["reservation_id"]
    slot = {
        "merchant_id": MARLOWES,
        "service_id": "1000",
        "start_sec": str(START_SEC),
        "duration_sec": "2700",
        "resources": {"party_size": 2},
    }
    created = requests.post(
        f"{base}/v3/CreateBooking",
        json={"slot": slot, "user_information": {"user_id": "u-1"}, "idempotency_token": "t"},
        headers=auth,
        timeout=TIMEOUT,
    ).json()["booking"]["booking_id"]
    phoned = requests.post(
        f"{base}{HOST}/reservations",
        json={"party_size": 2, "start": "2026-12-11T20:00"},
        headers={"Authorization": BEARER},
        timeout=TIMEOUT,
    ).json()["reservation_id"]
    return {"webhook": hooked, "v3": created, "host": phoned, "slot": json.dumps(slot)}


@pytest.fixture(scope="module", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("corpus")
    with (
        database(request.param, workdir, "corpus") as db,
        running_server(Path(db) if request.param == "sqlite" else db, workdir=workdir) as running,
    ):
        yield running


@pytest.fixture
def tables(server: ServerProcess) -> Iterator[Tables]:
    read = Tables(server.db)
    yield read
    read.close()


def test_no_hostile_request_gets_a_5xx_or_changes_anything_when_refused(
    server: ServerProcess, tables: Tables
) -> None:
    corpus = Corpus(server, tables)
    ids = seed(corpus)
    slot = json.loads(ids["slot"])
    basic = {"Authorization": BASIC, "Content-Type": "application/json"}
    bearer = {"Authorization": BEARER, "Content-Type": "application/json"}
    user = {"user_id": "u-2", "given_name": "Ada", "telephone": "+44 20 7946 0000"}

    # Valid bodies of every JSON route, each then broken field by field.
    v3_bodies: dict[str, Any] = {
        "BatchAvailabilityLookup": {
            "merchant_id": MARLOWES,
            "slot_time": [
                {
                    "service_id": "1000",
                    "start_sec": str(START_SEC),
                    "duration_sec": "2700",
                    "resource_ids": {"party_size": 2},
                }
            ],
        },
        "CreateBooking": {"slot": slot, "user_information": user, "idempotency_token": "x"},
        "UpdateBooking": {
            "booking": {"booking_id": ids["webhook"], "slot": {"resources": {"party_size": 3}}}
        },
        "GetBookingStatus": {"booking_id": ids["v3"]},
        "ListBookings": {"user_id": "u-1"},
        "BatchGetWaitEstimates": {"merchant_id": MARLOWES, "party_size": [2, 4]},
        "CreateWaitlistEntry": {"merchant_id": MARLOWES, "party_size": 2, "user_information": user},
        "GetWaitlistEntry": {"waitlist_entry_id": "wl-nobody"},
        "DeleteWaitlistEntry": {"waitlist_entry_id": "wl-nobody"},
    }
    for name, valid in v3_bodies.items():
        corpus.json_variants("POST", f"/v3/{name}", valid, basic)
    corpus.json_variants(
        "POST",
        "/v3/UpdateBooking",
        {"booking": {"booking_id": ids["webhook"], "status": "CANCELED"}},
        basic,
    )
    corpus.json_variants("POST", f"{HOST}/walk-ins", {"size": 2, "party_id": "w-1"}, bearer)
    corpus.json_variants(
        "POST", f"{HOST}/reservations", {"party_size": 2, "start": "2026-12-11T21:00"}, bearer
    )
    for valid in (
        booking_event("e-1", 2, START, reservation_id="p-1"),
        change_event("e-2", "checked_in", ids["webhook"]),
        change_event("e-3", "cancelled", ids["host"]),
    ):
        for body in itertools.chain([valid], variants(valid)):
            corpus.webhook(encode(fresh_ids(body)))

    # Whole hostile bodies on every route that takes one, with and without credentials.
    json_routes = [f"/v3/{name}" for name in v3_bodies] + [
        f"{HOST}/walk-ins",
        f"{HOST}/reservations",
    ]
    for path, body in itertools.product(json_routes, HOSTILE_BODIES):
        auth = basic if path.startswith("/v3/") else bearer
        corpus.send("POST", path, body, auth)
        corpus.send("POST", path, body, {"Content-Type": "application/json"})
    for body in HOSTILE_BODIES:
        corpus.webhook(body)
        corpus.send("POST", "/webhooks/tablefinder", body, {HEADER: "t=1,v1=00"})

    # Headers: credentials and signatures in every wrong shape, on every kind of route.
    bad_auth = [
        "",
        "Basic",
        "Basic éééé",
        "Basic " + "A" * 10_000,
        "Basic Og==",
        "Basic //79",
        "Bearer",
        "Bearer " + "é" * 100,
        "Bearer\x00x",
        BEARER + " trailing",
        "Digest x",
    ]
    signatures = ["t=²,v1=00", "t=" + "9" * 5000 + ",v1=00", "t=,v1=", "v1=00", ",,,,", "t=1" * 500]
    for value in bad_auth:
        header = {"Authorization": value.encode("utf-8")}
        corpus.send("GET", "/v3/HealthCheck", b"", header)
        corpus.send("POST", "/v3/GetBookingStatus", b'{"booking_id": "x"}', header)
        corpus.send("GET", f"{HOST}/board", b"", header)
        corpus.send("POST", f"{HOST}/walk-ins", b'{"size": 2}', header)
    event = encode(booking_event("e-sig", 2, START))
    for value in signatures:
        corpus.send("POST", "/webhooks/tablefinder", event, {HEADER: value.encode("utf-8")})
    for key in ["", "k k", "k" * 300, "é"]:
        header = {"Authorization": BEARER, "Idempotency-Key": key.encode("utf-8")}
        corpus.send("POST", f"{HOST}/tables/T1/free", b"", header)

    # Paths and methods: every route, every method, path parameters of every odd shape.
    segments = ["T1", "%2F", "a%2Fb", "..", "%2e%2e", "%00", "%ff", "é", "x" * 300, "%20", "a;b"]
    templates = [
        "/healthz",
        "/openapi.json",
        "/docs",
        "/v3/HealthCheck",
        "/webhooks/{}",
        f"{HOST}/walk-ins",
        f"{HOST}/board",
        f"{HOST}/quote",
        f"{HOST}/reservations",
        HOST + "/tables/{}/free",
        HOST + "/reservations/{}/check-in",
        HOST + "/reservations/{}/cancel",
        HOST + "/parties/{}/leave",
        "/api/v1/restaurants/{}/board",
        "/nowhere/{}",
    ] + [f"/v3/{name}" for name in v3_bodies]
    methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]
    for template, method in itertools.product(templates, methods):
        for segment in segments if "{}" in template else [""]:
            path = template.replace("{}", segment)
            corpus.send(method, path, b"{}", bearer if HOST in path else basic)

    # Queries and dates.
    for value in ["9999-12-31", "0001-01-01", "1969-12-31", "2026-02-30", "x", "", "2026-12-11"]:
        corpus.send("GET", f"{HOST}/reservations", headers=bearer, params={"date": value})
    for value in ["0", "11", "21", "-1", "1e400", "9" * 5000, "\uff12", "", "2"]:
        corpus.send("GET", f"{HOST}/quote", headers=bearer, params={"size": value})

    print(f"{corpus.tally.sent} requests, by status: {sorted(corpus.tally.by_status.items())}")
    assert corpus.tally.sent > 2000, corpus.tally
    assert corpus.tally.problems == [], "\n".join(corpus.tally.problems[:40])
    healthy = requests.get(f"{server.base}/healthz", timeout=TIMEOUT)
    assert healthy.status_code == 200
    board = requests.get(f"{server.base}{HOST}/board", headers=bearer, timeout=TIMEOUT)
    assert board.status_code == 200
    assert server.process.poll() is None
    assert "Traceback" not in server.output(), server.output()[-3000:]
