"""feed.http.hotpaths: the v3 POSTs and signed webhooks answered in plain ASGI in front of FastAPI.

The claim is that the hot path writes the bytes the FastAPI route would have written, so most
tests here send the same request to two apps and compare what comes back: the plain FastAPI
app (`create_app(receiver)`) and the same app behind `hot_app`, each over its own copy of a
fresh SQLite store. In process, a small hand-written ASGI driver calls the apps directly (and
a spy behind HotPaths shows which requests reached FastAPI); over HTTP, a real
`hoststand serve` on 127.0.0.1 (which runs `feed.http.serving.build`, i.e. the hot app) is compared
with the plain app in process for requests whose answers do not depend on random ids.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import shutil
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import pytest
import requests

import feed.http.server
import feed.service.days
import feed.service.partner_api
import feed.service.receiver
from feed.http import v3
from feed.http.hardening import Hardened
from feed.http.hotpaths import Answer as HotAnswer
from feed.http.hotpaths import ASGIApp, HotPaths, Message, Receive, Route, Scope, Send
from feed.http.hotpaths import Request as HotRequest
from feed.http.observe import Observed
from feed.http.server import MAX_BODY_BYTES, create_app, hot_app
from feed.http.serving import build
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.service.replies import Reply
from feed.service.signing import HEADER as SIGNATURE_HEADER
from feed.service.signing import sign
from feed.settings import Partner, load_settings
from feed.venue.restaurant import load_restaurant
from store.log import ConcurrencyConflict, LogStore, StoreUnavailable
from store.sqlite import SQLiteStore
from tests.integration.server_process import (
    CONFIGS,
    HOST_TOKENS,
    NOW,
    NOW_T,
    SECRETS,
    SETTINGS,
    STARTUP_SECONDS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    change_event,
    running_server,
)
from tests.integration.test_partner_v3 import (
    BASIC,
    ENDPOINTS,
    MARLOWES,
    SERVICE,
    basic,
    duration,
    sec,
    slot,
)

TABLEFINDER = "tablefinder"
DINERLY = "dinerly"
AUTH = basic(*BASIC)
WRONG_AUTH: dict[str, str | None] = {
    "missing": None,
    "wrong-password": basic(BASIC[0], "wrong-password"),
    "unknown-user": basic("nobody", BASIC[1]),
    "not-base64": "Basic !!not-base64!!",
    "bearer": f"Bearer {BASIC[1]}",
    "no-colon": "Basic " + base64.b64encode(b"tablefinder").decode(),
}
HOST_AUTH = f"Bearer {HOST_TOKENS[MARLOWES]}"


# -- an ASGI driver ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What an app sent back for one request."""

    status: int
    headers: tuple[tuple[str, str], ...]  # (lower-case name, value), sorted
    body: bytes
    reads: int = field(compare=False)  # http.request messages the app asked for

    def header(self, name: str) -> str | None:
        values = [v for k, v in self.headers if k == name]
        assert len(values) <= 1, self.headers
        return values[0] if values else None

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    app: ASGIApp,
    method: str,
    path: str,
    body: bytes = b"",
    headers: Iterable[tuple[str, str]] = (),
    *,
    chunks: Sequence[bytes] | None = None,
    length: bool = True,
) -> Answer:
    """One request straight through an ASGI app. The body goes in one message, or as `chunks`
    (more_body messages, no content-length: how a chunked upload arrives); `length=False`
    leaves out the content-length of a one-message body."""
    parts = [body] if chunks is None else list(chunks)
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    if length and chunks is None:
        raw.append((b"content-length", str(len(body)).encode()))
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": raw,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
        "state": {},
    }
    sent: list[Message] = []
    reads = 0

    async def receive() -> Message:
        nonlocal reads
        if reads < len(parts):
            reads += 1
            return {
                "type": "http.request",
                "body": parts[reads - 1],
                "more_body": reads < len(parts),
            }
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    async def run() -> None:
        await app(scope, receive, send)

    asyncio.run(run())
    starts = [m for m in sent if m["type"] == "http.response.start"]
    assert len(starts) == 1, sent
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    assert bodies and not bodies[-1].get("more_body", False), sent
    out = sorted((k.decode("latin-1"), v.decode("latin-1")) for k, v in starts[0]["headers"])
    return Answer(
        starts[0]["status"], tuple(out), b"".join(m.get("body", b"") for m in bodies), reads
    )


class Behind:
    """Stands between HotPaths and FastAPI and writes down every scope that reaches FastAPI."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[tuple[str, str | None, str | None]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.seen.append((scope["type"], scope.get("method"), scope.get("path")))
        await self.app(scope, receive, send)


def receiver_on(db: Path) -> Receiver:
    """Both sample restaurants and the sample settings, the clock pinned at NOW: the server's."""
    restaurants = [load_restaurant(config) for config in CONFIGS]
    return Receiver(restaurants, SQLiteStore(db), load_settings(SETTINGS, environ={}), lambda: NOW)


@dataclass
class Apps:
    """The plain FastAPI app and the hot app, each over its own copy of one fresh store."""

    plain: ASGIApp
    hot: HotPaths
    behind: Behind  # what the hot app passed on to FastAPI
    plain_receiver: Receiver
    hot_receiver: Receiver

    def both(self, method: str, path: str, body: bytes = b"", **kw: Any) -> tuple[Answer, Answer]:
        return call(self.plain, method, path, body, **kw), call(self.hot, method, path, body, **kw)


@contextmanager
def two_apps(folder: Path) -> Iterator[Apps]:
    """The plain app and the hot app over two copies of one freshly created store."""
    folder.mkdir(parents=True, exist_ok=True)
    SQLiteStore(folder / "fresh.db").close()
    shutil.copy(folder / "fresh.db", folder / "plain.db")
    shutil.copy(folder / "fresh.db", folder / "hot.db")
    plain_receiver = receiver_on(folder / "plain.db")
    hot_receiver = receiver_on(folder / "hot.db")
    hot = hot_app(create_app(hot_receiver), hot_receiver)
    behind = Behind(hot.app)
    hot.app = behind
    try:
        yield Apps(create_app(plain_receiver), hot, behind, plain_receiver, hot_receiver)
    finally:
        plain_receiver.store.close()
        hot_receiver.store.close()


@pytest.fixture
def apps(tmp_path: Path) -> Iterator[Apps]:
    with two_apps(tmp_path / "apps") as built:
        yield built


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apps]:
    """For tests whose requests change nothing (or only what no other test looks at)."""
    with two_apps(tmp_path_factory.mktemp("hot-shared")) as built:
        yield built


@pytest.fixture
def fixed_ids(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Booking ids from a counter instead of secrets.token_hex, so two runs of the same requests
    get the same ids; call the returned function to start the count again."""
    counter = itertools.count()

    def new_booking_id() -> str:
        return f"bk-{next(counter):016x}"

    for module in (
        feed.service.days,
        feed.service.partner_api,
        feed.service.receiver,
        feed.http.server,
    ):
        monkeypatch.setattr(module, "new_booking_id", new_booking_id)

    def restart() -> None:
        nonlocal counter
        counter = itertools.count()

    return restart


def watch_handlers(hot: HotPaths) -> list[str]:
    """Wrap every route handler of `hot` so each call is written down (by path or prefix)."""
    called: list[str] = []

    def watched(name: str, route: Route) -> Route:
        def handler(request: HotRequest) -> HotAnswer:
            called.append(name)
            return route.handler(request)

        return replace(route, handler=handler)

    hot.exact = {path: watched(path, route) for path, route in hot.exact.items()}
    hot.prefixes = {prefix: watched(prefix, route) for prefix, route in hot.prefixes.items()}
    return called


# -- requests ---------------------------------------------------------------------------------


def v3_headers(auth: str | None = AUTH) -> list[tuple[str, str]]:
    headers = [("content-type", "application/json")]
    return headers + ([("authorization", auth)] if auth is not None else [])


def signed_headers(
    body: bytes, partner: str = TABLEFINDER, t: int = NOW_T
) -> list[tuple[str, str]]:
    return [
        ("content-type", "application/json"),
        (SIGNATURE_HEADER, sign(SECRETS[partner], t, body)),
    ]


def encode(payload: Any) -> bytes:
    return payload if isinstance(payload, bytes) else json.dumps(payload).encode()


def new_event_id() -> str:
    return f"evt-{uuid.uuid4().hex}"


def lookup_slot(start_sec: int, size: int, camel: bool = False) -> dict[str, Any]:
    if camel:
        return {
            "serviceId": SERVICE,
            "startSec": str(start_sec),
            "durationSec": str(duration(size)),
            "resourceIds": {"partySize": size},
        }
    return {
        "service_id": SERVICE,
        "start_sec": str(start_sec),
        "duration_sec": str(duration(size)),
        "resource_ids": {"party_size": size},
    }


def lookups() -> dict[str, Any]:
    """Lookups on Monday 7 December (no test books that day): every kind of slot answer."""
    plain_slots = [
        lookup_slot(sec(7, "19:00"), 2),
        lookup_slot(sec(7, "19:15"), 4, camel=True),
        lookup_slot(sec(7, "16:00"), 2),  # between services
        lookup_slot(sec(7, "19:00"), 11),  # more than the restaurant seats
        {"start_sec": sec(7, "19:30"), "resource_ids": {"party_size": 6}},  # ints, no service
        {
            "start_sec": str(sec(7, "19:30")),
            "duration_sec": "60",
            "resource_ids": {"party_size": 2},
        },
        {"service_id": "999", "start_sec": str(sec(7, "19:30")), "resource_ids": {"party_size": 2}},
        {"start_sec": "0"},  # no party size: never available
    ]
    return {
        "plain": {"merchant_id": MARLOWES, "slot_time": plain_slots},
        "camel": {
            "merchantId": MARLOWES,
            "slotTime": [lookup_slot(sec(7, "20:00"), 2, camel=True)],
        },
        "empty": {"merchant_id": MARLOWES},
        "pydantic-floats": {
            "merchant_id": MARLOWES,
            "slot_time": [
                {"start_sec": float(sec(7, "19:00")), "resource_ids": {"party_size": 2.0}}
            ],
        },
        "pydantic-unknown-key": {
            "merchant_id": MARLOWES,
            "slot_time": [lookup_slot(sec(7, "19:00"), 2) | {"note": [1, {"deepKey": None}]}],
        },
        "pydantic-leading-zeros": {
            "merchant_id": MARLOWES,
            "slot_time": [
                {"start_sec": "0" + str(sec(7, "19:00")), "resource_ids": {"party_size": "02"}}
            ],
        },
        "negative-start": {"merchant_id": MARLOWES, "slot_time": [{"start_sec": -1}]},
        "no-start": {"merchant_id": MARLOWES, "slot_time": [{"service_id": SERVICE}]},
        "slots-not-a-list": {"merchant_id": MARLOWES, "slot_time": {"start_sec": 1}},
        "unknown-merchant": {
            "merchant_id": "nowhere",
            "slot_time": [lookup_slot(sec(7, "19:00"), 2)],
        },
        "no-merchant": {"slot_time": []},
    }


def user(user_id: str) -> dict[str, Any]:
    return {"user_id": user_id, "given_name": "Ada", "family_name": "Lovelace"}


def deterministic_v3() -> list[tuple[str, str, bytes, str | None]]:
    """(label, endpoint, body, Authorization) whose answers depend on nothing random and on no
    state that the tests of this module change: the same from any server started at NOW."""
    out: list[tuple[str, str, bytes, str | None]] = [
        (f"lookup-{label}", "BatchAvailabilityLookup", encode(payload), AUTH)
        for label, payload in lookups().items()
    ]
    create = {"slot": slot(sec(7, "19:00"), 2), "user_information": user("nobody-creates")}
    out += [
        (
            "create-unknown-merchant",
            "CreateBooking",
            encode({**create, "slot": slot(sec(7, "19:00"), 2, "nowhere")}),
            AUTH,
        ),
        (
            "create-not-a-slot",
            "CreateBooking",
            encode({**create, "slot": slot(sec(7, "16:00"), 2)}),
            AUTH,
        ),
        ("create-no-user", "CreateBooking", encode({"slot": create["slot"]}), AUTH),
        (
            "create-unknown-service",
            "CreateBooking",
            encode({**create, "slot": {**create["slot"], "service_id": "9"}}),
            AUTH,
        ),
        (
            "update-unknown",
            "UpdateBooking",
            encode({"booking": {"booking_id": "bk-nobody", "status": "CANCELED"}}),
            AUTH,
        ),
        ("update-no-booking", "UpdateBooking", encode({"idempotency_token": "x"}), AUTH),
        ("status-unknown", "GetBookingStatus", encode({"booking_id": "bk-nobody"}), AUTH),
        ("list-nobody", "ListBookings", encode({"user_id": "nobody-at-all"}), AUTH),
        ("list-camel", "ListBookings", encode({"userId": "nobody-at-all"}), AUTH),
        (
            "estimates",
            "BatchGetWaitEstimates",
            encode({"merchant_id": MARLOWES, "party_size": [1, 2, 4, 6, 10, 11, 2]}),
            AUTH,
        ),
        (
            "estimates-unknown",
            "BatchGetWaitEstimates",
            encode({"merchant_id": "nowhere", "party_size": [2]}),
            AUTH,
        ),
        (
            "waitlist-no-wait",
            "CreateWaitlistEntry",
            encode({"merchant_id": MARLOWES, "party_size": 2, "user_information": user("w")}),
            AUTH,
        ),
        (
            "waitlist-too-big",
            "CreateWaitlistEntry",
            encode({"merchant_id": MARLOWES, "party_size": 11, "user_information": user("w")}),
            AUTH,
        ),
        (
            "waitlist-unknown-merchant",
            "CreateWaitlistEntry",
            encode({"merchant_id": "nowhere", "party_size": 2, "user_information": user("w")}),
            AUTH,
        ),
        ("entry-unknown", "GetWaitlistEntry", encode({"waitlist_entry_id": "wl-nobody"}), AUTH),
        ("delete-unknown", "DeleteWaitlistEntry", encode({"waitlist_entry_id": "wl-nobody"}), AUTH),
    ]
    for name in ENDPOINTS:
        out += [
            (f"{name}-not-json", name, b'{"merchant_id": ', AUTH),
            (f"{name}-not-utf8", name, b'{"a": "\xff"}', AUTH),
            (f"{name}-array", name, b"[1, 2]", AUTH),
            (f"{name}-empty-body", name, b"", AUTH),
            (f"{name}-no-auth", name, b"{}", None),
            (f"{name}-wrong-password", name, b"{}", WRONG_AUTH["wrong-password"]),
        ]
    return out


def deterministic_webhooks() -> list[tuple[str, str, bytes, list[tuple[str, str]]]]:
    """(label, partner id, body, headers) of webhooks refused the same way by any fresh server."""
    event = encode(booking_event("hot-fixed-1", 2, "2026-12-09T19:00:00+00:00"))
    wrong_types = encode(booking_event("hot-fixed-2", "four", "2026-12-09T19:00:00+00:00"))  # type: ignore[arg-type]
    nowhere = encode(booking_event(new_event_id(), 2, "2026-12-09T19:00:00+00:00", "nowhere"))
    not_allowed = encode(booking_event(new_event_id(), 2, "2026-12-09T19:00:00+00:00", "merch1"))
    json_type = [("content-type", "application/json")]
    return [
        ("unsigned", TABLEFINDER, event, json_type),
        (
            "wrong-secret",
            TABLEFINDER,
            event,
            [*json_type, (SIGNATURE_HEADER, sign("nope", NOW_T, event))],
        ),
        ("stale-signature", TABLEFINDER, event, signed_headers(event, t=NOW_T - 3600)),
        ("unknown-partner", "nobody", event, signed_headers(event)),
        ("not-json", TABLEFINDER, b'{"id": ', signed_headers(b'{"id": ')),
        ("wrong-types", TABLEFINDER, wrong_types, signed_headers(wrong_types)),
        ("unknown-merchant", TABLEFINDER, nowhere, signed_headers(nowhere)),
        ("merchant-not-allowed", DINERLY, not_allowed, signed_headers(not_allowed, DINERLY)),
    ]


# -- in process: the hot path answers as FastAPI does -----------------------------------------


def test_every_v3_endpoint_and_the_webhooks_are_hot_paths(shared: Apps) -> None:
    assert set(shared.hot.exact) == {f"/v3/{name}" for name in ENDPOINTS}
    assert set(shared.hot.prefixes) == {"/webhooks/"}
    assert set(ENDPOINTS) == set(METHODS)


def scenario(
    send: Callable[[str, str, bytes, list[tuple[str, str]]], Answer],
) -> list[tuple[str, Answer]]:
    """A partner's and a host's day through every v3 endpoint and the webhooks; what each
    request got, labelled. Ids come from answers, so the same requests can go to another app."""
    out: list[tuple[str, Answer]] = []

    def v3_call(label: str, name: str, payload: Any, auth: str | None = AUTH) -> Any:
        answer = send("POST", f"/v3/{name}", encode(payload), v3_headers(auth))
        out.append((label, answer))
        return answer.json() if answer.status == 200 else None

    def hook(label: str, payload: Any, partner: str = TABLEFINDER, t: int = NOW_T) -> Any:
        body = encode(payload)
        answer = send("POST", f"/webhooks/{partner}", body, signed_headers(body, partner, t))
        out.append((label, answer))
        return answer.json()

    def host(label: str, path: str, payload: Any) -> None:
        headers = [("content-type", "application/json"), ("authorization", HOST_AUTH)]
        path = f"/api/v1/restaurants/{MARLOWES}{path}"
        out.append((label, send("POST", path, encode(payload), headers)))

    for label, payload in lookups().items():
        v3_call(f"lookup-{label}", "BatchAvailabilityLookup", payload)
    create = {
        "slot": slot(sec(7, "19:00"), 2),
        "user_information": user("ada"),
        "idempotency_token": "token-1",
    }
    booking = v3_call("create", "CreateBooking", create)
    assert booking["booking"]["status"] == "CONFIRMED", booking
    booking_id = booking["booking"]["booking_id"]
    v3_call("create-again", "CreateBooking", create)
    v3_call("create-overlap", "CreateBooking", {**create, "idempotency_token": "token-2"})
    v3_call("create-not-a-slot", "CreateBooking", {**create, "slot": slot(sec(7, "16:00"), 2)})
    v3_call("lookup-after-booking", "BatchAvailabilityLookup", lookups()["plain"])
    v3_call("status", "GetBookingStatus", {"booking_id": booking_id})
    v3_call("list", "ListBookings", {"user_id": "ada"})
    move = {
        "booking_id": booking_id,
        "slot": {"start_sec": str(sec(7, "19:30")), "resources": {"party_size": 4}},
    }
    v3_call("move", "UpdateBooking", {"booking": move})
    v3_call("status-moved", "GetBookingStatus", {"bookingId": booking_id})
    v3_call(
        "cancel", "UpdateBooking", {"booking": {"booking_id": booking_id, "status": "CANCELED"}}
    )
    v3_call(
        "cancel-again",
        "UpdateBooking",
        {"booking": {"booking_id": booking_id, "status": "CANCELED"}},
    )
    v3_call("list-cancelled", "ListBookings", {"user_id": "ada"})
    v3_call(
        "estimates-empty-floor",
        "BatchGetWaitEstimates",
        {"merchant_id": MARLOWES, "party_size": [2, 4, 11]},
    )
    wait = {
        "merchant_id": MARLOWES,
        "party_size": 2,
        "user_information": user("bo"),
        "idempotency_token": "w-1",
    }
    v3_call("waitlist-no-wait", "CreateWaitlistEntry", wait)
    for i, size in enumerate([6, 4, 4, 4, 2, 2]):
        host(f"walk-in-{i}", "/walk-ins", {"size": size, "party_id": f"fill-{i}"})
    v3_call(
        "estimates-full-floor",
        "BatchGetWaitEstimates",
        {"merchant_id": MARLOWES, "party_size": [2, 4, 6, 8]},
    )
    entry = v3_call("waitlist", "CreateWaitlistEntry", wait)
    assert "waitlist_entry_id" in entry, entry
    entry_id = {"waitlist_entry_id": entry["waitlist_entry_id"]}
    v3_call("waitlist-again", "CreateWaitlistEntry", wait)
    v3_call("waitlist-existing", "CreateWaitlistEntry", {**wait, "idempotency_token": "w-2"})
    v3_call("entry", "GetWaitlistEntry", entry_id)
    v3_call("delete", "DeleteWaitlistEntry", entry_id)
    v3_call("delete-again", "DeleteWaitlistEntry", entry_id)
    v3_call("entry-deleted", "GetWaitlistEntry", entry_id)

    event = booking_event("evt-1", 2, "2026-12-08T19:00:00+00:00", phone="+44 20 7946 0000")
    booked = hook("webhook-book", event)
    assert booked.get("status") == "booked", booked
    hook("webhook-replay", event)
    hook("webhook-id-reused", {**event, "data": {**event["data"], "party_size": 4}})
    hook("webhook-full-slot", booking_event("evt-2", 8, "2026-12-08T19:00:00+00:00"))
    hook("webhook-cancel", change_event("evt-3", "cancelled", booked["reservation_id"]))
    hook("webhook-cancel-again", change_event("evt-4", "cancelled", booked["reservation_id"]))
    hook(
        "webhook-other-partner",
        change_event("evt-5", "cancelled", booked["reservation_id"]),
        DINERLY,
    )
    hook(
        "webhook-old-signature",
        booking_event("evt-6", 2, "2026-12-08T20:00:00+00:00"),
        t=NOW_T - 301,
    )
    for label, partner, body, headers in deterministic_webhooks():
        out.append((f"webhook-{label}", send("POST", f"/webhooks/{partner}", body, headers)))
    for label, name, body, auth in deterministic_v3():
        out.append((label, send("POST", f"/v3/{name}", body, v3_headers(auth))))
    return out


def test_a_day_of_requests_gets_the_same_bytes_from_the_hot_path_as_from_fastapi(
    apps: Apps, fixed_ids: Callable[[], None]
) -> None:
    fixed_ids()
    plain = scenario(
        lambda method, path, body, headers: call(apps.plain, method, path, body, headers)
    )
    fixed_ids()
    hot = scenario(lambda method, path, body, headers: call(apps.hot, method, path, body, headers))
    assert [label for label, _ in hot] == [label for label, _ in plain]
    for (label, want), (_, got) in zip(plain, hot, strict=True):
        assert got == want, label
        assert got.header("content-type") == "application/json", label
        assert got.header("content-length") == str(len(got.body)), label
    # only the host tablet's walk-ins went on to FastAPI; the rest was answered in front of it
    assert {path for _, _, path in apps.behind.seen} == {f"/api/v1/restaurants/{MARLOWES}/walk-ins"}
    statuses = {label: answer.status for label, answer in hot}
    assert statuses["webhook-book"] == 200 and statuses["webhook-id-reused"] == 422
    assert statuses["move"] == 200 and statuses["entry"] == 200


@pytest.mark.parametrize("name", ["HealthCheck", *ENDPOINTS])
@pytest.mark.parametrize("wrong", list(WRONG_AUTH))
def test_missing_or_wrong_basic_credentials_get_401_with_www_authenticate(
    shared: Apps, name: str, wrong: str
) -> None:
    method = "GET" if name == "HealthCheck" else "POST"
    plain, hot = shared.both(method, f"/v3/{name}", b"{}", headers=v3_headers(WRONG_AUTH[wrong]))
    assert hot == plain
    assert hot.status == 401
    assert hot.header("www-authenticate") == 'Basic realm="hoststand"'
    assert hot.json()["error"]["code"] == "unauthorized"
    assert set(hot.json()) == {"error"} and set(hot.json()["error"]) == {"code", "message"}


def test_the_right_basic_credentials_get_no_www_authenticate(shared: Apps) -> None:
    plain, hot = shared.both("POST", "/v3/ListBookings", b'{"user_id": "x"}', headers=v3_headers())
    assert hot == plain
    assert hot.status == 200 and hot.header("www-authenticate") is None


# -- in process: bodies over 64 KiB -----------------------------------------------------------

PADDED = 64 * 1024 + 1  # one byte over the cap


def padded(payload: dict[str, Any], size: int) -> bytes:
    """`payload` as JSON padded with spaces to exactly `size` bytes (still valid JSON)."""
    body = json.dumps(payload).encode()
    assert len(body) <= size
    return body + b" " * (size - len(body))


def split(body: bytes, size: int = 16 * 1024) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def assert_too_large(answer: Answer) -> None:
    assert answer.status == 413, answer
    assert answer.json() == {
        "error": {"code": "body too large", "message": f"bodies are {MAX_BODY_BYTES} bytes at most"}
    }
    assert answer.header("content-type") == "application/json"
    assert answer.header("content-length") == str(len(answer.body))


def oversized_requests() -> dict[str, tuple[str, bytes, list[tuple[str, str]]]]:
    """(path, body, headers) per target: bodies that would be accepted were they not too long."""
    create = {"slot": slot(sec(9, "19:00"), 2), "user_information": user("too-large")}
    event = booking_event("evt-large", 2, "2026-12-09T19:00:00+00:00")
    webhook_body = padded(event, PADDED)
    v3_body = padded(create, PADDED)
    return {
        "v3": ("/v3/CreateBooking", v3_body, v3_headers()),
        "webhook": (f"/webhooks/{TABLEFINDER}", webhook_body, signed_headers(webhook_body)),
    }


@pytest.mark.parametrize("target", ["v3", "webhook"])
def test_a_declared_body_over_64_kib_gets_413_unread_and_unhandled(apps: Apps, target: str) -> None:
    path, body, headers = oversized_requests()[target]
    called = watch_handlers(apps.hot)
    plain, hot = apps.both("POST", path, body, headers=headers)
    assert_too_large(hot)
    assert hot == plain
    assert hot.reads == 0  # refused on its content-length: not one byte read
    assert called == [] and apps.behind.seen == []


@pytest.mark.parametrize("target", ["v3", "webhook"])
def test_a_chunked_body_over_64_kib_gets_413_and_is_read_no_further(
    apps: Apps, target: str
) -> None:
    path, body, headers = oversized_requests()[target]
    # 16 KiB messages: the fifth passes the cap (by one byte); two more would follow
    chunks = [*split(body), b" " * 1024, b" " * 1024]
    called = watch_handlers(apps.hot)
    plain, hot = apps.both("POST", path, headers=headers, chunks=chunks)
    assert_too_large(hot)
    assert hot == plain
    assert hot.reads == 5 < len(chunks)
    assert called == [] and apps.behind.seen == []


def test_an_undeclared_one_message_body_over_64_kib_gets_413(apps: Apps) -> None:
    path, body, headers = oversized_requests()["v3"]
    called = watch_handlers(apps.hot)
    assert_too_large(call(apps.hot, "POST", path, body, headers, length=False))
    assert called == []


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_a_body_of_exactly_64_kib_is_handled(apps: Apps, chunked: bool) -> None:
    body = padded({"user_id": "exactly-64-kib"}, MAX_BODY_BYTES)
    chunks = split(body) if chunked else None
    called = watch_handlers(apps.hot)
    plain, hot = apps.both("POST", "/v3/ListBookings", body, headers=v3_headers(), chunks=chunks)
    assert hot == plain
    assert hot.status == 200 and hot.json() == {"bookings": []}
    assert called == ["/v3/ListBookings"]


def test_an_oversized_body_without_credentials_gets_413_before_any_handler(apps: Apps) -> None:
    # The hot path caps the body before anything else; (the FastAPI v3 route reads the whole
    # body first and then answers 401, so here the two differ by design).
    _, body, _ = oversized_requests()["v3"]
    called = watch_handlers(apps.hot)
    answer = call(apps.hot, "POST", "/v3/CreateBooking", body, v3_headers(None))
    assert_too_large(answer)
    assert called == [] and answer.reads == 0


# -- in process: a busy store -----------------------------------------------------------------

METHODS = {
    name: method.__name__
    for name, (method, _) in v3.endpoints(PartnerApi({}, cast(LogStore, None), lambda: NOW)).items()
}


def assert_busy(answer: Answer) -> None:
    assert answer.status == 503, answer
    assert answer.header("retry-after") == "1"
    body = answer.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == "unavailable"
    assert answer.header("content-type") == "application/json"
    assert answer.header("content-length") == str(len(answer.body))


@pytest.mark.parametrize("error", [StoreUnavailable, ConcurrencyConflict])
@pytest.mark.parametrize("name", ENDPOINTS)
def test_a_busy_store_under_a_v3_call_gets_503_with_retry_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, error: type[Exception]
) -> None:
    def busy(_self: PartnerApi, _partner: Partner, _payload: Any) -> Reply:
        raise error("database is locked")

    monkeypatch.setattr(PartnerApi, METHODS[name], busy)  # before the apps take their methods
    with two_apps(tmp_path) as built:
        plain, hot = built.both("POST", f"/v3/{name}", b"{}", headers=v3_headers())
        assert built.behind.seen == []
    assert_busy(hot)
    assert hot == plain


@pytest.mark.parametrize("error", [StoreUnavailable, ConcurrencyConflict])
def test_a_busy_store_under_a_webhook_gets_503_with_retry_after(
    apps: Apps, monkeypatch: pytest.MonkeyPatch, error: type[Exception]
) -> None:
    def busy(_partner_id: str, _signature: str | None, _body: bytes) -> Reply:
        raise error("database is locked")

    monkeypatch.setattr(apps.plain_receiver, "webhook", busy)
    monkeypatch.setattr(apps.hot_receiver, "webhook", busy)
    body = encode(booking_event("evt-busy", 2, "2026-12-09T19:00:00+00:00"))
    plain, hot = apps.both("POST", f"/webhooks/{TABLEFINDER}", body, headers=signed_headers(body))
    assert_busy(hot)
    assert hot == plain
    assert apps.behind.seen == []


# -- in process: what the hot path leaves to FastAPI -------------------------------------------

EVENT = encode(booking_event("evt-passed-on", 2, "2026-12-09T19:00:00+00:00"))
PASSED_ON: list[tuple[str, str, str, int]] = [
    # (label, method, path, the status FastAPI gives)
    ("health-check", "GET", "/v3/HealthCheck", 200),
    ("healthz", "GET", "/healthz", 200),
    ("openapi", "GET", "/openapi.json", 200),
    ("get-a-v3-path", "GET", "/v3/BatchAvailabilityLookup", 405),
    ("put-a-v3-path", "PUT", "/v3/CreateBooking", 405),
    ("post-health-check", "POST", "/v3/HealthCheck", 405),
    ("other-case", "POST", "/v3/createbooking", 404),
    ("v3-slash", "POST", "/v3/", 404),
    ("get-a-webhook", "GET", f"/webhooks/{TABLEFINDER}", 405),
    ("webhook-empty-id", "POST", "/webhooks/", 404),
    ("webhook-no-slash", "POST", "/webhooks", 404),
    ("webhook-two-segments", "POST", "/webhooks/a/b", 404),
    ("webhook-encoded-slash", "POST", "/webhooks/table%2Ffinder", 404),
    ("webhook-id-201", "POST", "/webhooks/" + "p" * 201, 422),
]


def scope_path(path: str) -> str:
    """The path as a server puts it in the scope (percent-escapes decoded)."""
    return path.replace("%2F", "/")


@pytest.mark.parametrize(
    ("label", "method", "path", "status"), PASSED_ON, ids=[p[0] for p in PASSED_ON]
)
def test_requests_the_hot_path_does_not_take_get_fastapis_answer(
    shared: Apps, label: str, method: str, path: str, status: int
) -> None:
    headers = [*signed_headers(EVENT), ("authorization", AUTH)]
    before = len(shared.behind.seen)
    plain, hot = shared.both(method, scope_path(path), EVENT, headers=headers)
    # A write's path is routed without its trailing slash (feed.http.hotpaths.write_request).
    routed = scope_path(path) if method == "GET" else scope_path(path).rstrip("/")
    assert shared.behind.seen[before:] == [("http", method, routed)]
    assert hot == plain
    assert hot.status == status, hot
    if status >= 400:
        body = hot.json()
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}


@pytest.mark.parametrize(
    "path", ["/v3/CreateBooking/", f"/webhooks/{TABLEFINDER}/"], ids=["v3", "webhook"]
)
def test_a_hot_path_with_a_trailing_slash_is_the_hot_path(shared: Apps, path: str) -> None:
    """Answered as the path without the slash by both apps (FastAPI answered a 307, which a
    partner's client need not follow for a POST), and by the hot path itself."""
    headers = [*signed_headers(EVENT), ("authorization", AUTH)]
    before = len(shared.behind.seen)
    plain, hot = shared.both("POST", path, EVENT, headers=headers)
    assert shared.behind.seen[before:] == []
    assert hot.status == plain.status != 307
    assert set(hot.json()) == set(plain.json())


def test_a_webhook_id_of_200_characters_is_still_a_hot_path(shared: Apps) -> None:
    path = "/webhooks/" + "p" * 200
    plain, hot = shared.both("POST", path, EVENT, headers=signed_headers(EVENT))
    assert shared.behind.seen.count(("http", "POST", path)) == 0
    assert hot == plain
    assert hot.status == 401  # no such partner


def test_openapi_still_documents_the_hot_paths(shared: Apps) -> None:
    plain, hot = shared.both("GET", "/openapi.json")
    assert hot == plain
    paths = hot.json()["paths"]
    for name in ENDPOINTS:
        assert "post" in paths[f"/v3/{name}"], name
    assert "get" in paths["/v3/HealthCheck"]
    assert "post" in paths["/webhooks/{partner_id}"]


def test_lifespan_goes_through_the_hot_paths_and_starts_the_background_threads(
    tmp_path: Path,
) -> None:
    restaurants = [load_restaurant(config) for config in CONFIGS]
    settings = load_settings(SETTINGS, environ={})
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        app = build(restaurants, store, settings, lambda: NOW, tmp_path / "out", export=False)
        assert isinstance(app, Observed) and isinstance(app.app, Hardened)  # observed, then
        assert isinstance(app.app.app, HotPaths)  # our headers on every reply, then hot
        sent: list[str] = []
        running: list[str] = []

        async def lifespan() -> None:
            inbox: asyncio.Queue[Message] = asyncio.Queue()
            await inbox.put({"type": "lifespan.startup"})

            async def receive() -> Message:
                return await inbox.get()

            async def send(message: Message) -> None:
                sent.append(message["type"])
                if message["type"] == "lifespan.startup.complete":
                    running.extend(t.name for t in threading.enumerate() if t.is_alive())
                    await inbox.put({"type": "lifespan.shutdown"})

            scope = {
                "type": "lifespan",
                "asgi": {"version": "3.0", "spec_version": "2.0"},
                "state": {},
            }
            await app(scope, receive, send)

        asyncio.run(lifespan())
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert {"hoststand-outbox", "hoststand-no-shows"} <= set(running)
    alive = {t.name for t in threading.enumerate() if t.is_alive()}
    assert not {"hoststand-outbox", "hoststand-no-shows"} & alive  # stopped at shutdown


# -- in process: a repeated header is read as FastAPI reads it (the first) ----------------------


@pytest.mark.parametrize("target", ["v3", "webhook"])
def test_a_repeated_header_is_read_as_fastapi_reads_it(
    apps: Apps, fixed_ids: Callable[[], None], target: str
) -> None:
    if target == "v3":
        path, body = "/v3/ListBookings", b'{"user_id": "twice"}'
        headers = [*v3_headers(), ("authorization", WRONG_AUTH["wrong-password"] or "")]
    else:
        path = f"/webhooks/{TABLEFINDER}"
        body = encode(booking_event("evt-twice", 2, "2026-12-09T19:00:00+00:00"))
        headers = [*signed_headers(body), (SIGNATURE_HEADER, sign("nope", NOW_T, body))]
    fixed_ids()
    plain = call(apps.plain, "POST", path, body, headers)
    fixed_ids()
    hot = call(apps.hot, "POST", path, body, headers)
    assert plain.status == 200, plain  # FastAPI reads the first header
    assert hot == plain


# -- over HTTP: a real `hoststand serve` ------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Friday 4 December 18:00. Tests that change something use days nothing compares."""
    with running_server(tmp_path_factory.mktemp("hot-http") / "hoststand.db") as running:
        yield running


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ASGIApp]:
    """The plain FastAPI app in process over a fresh store, with the server's restaurants,
    settings and clock: what the server would answer without the hot paths."""
    receiver = receiver_on(tmp_path_factory.mktemp("hot-reference") / "hoststand.db")
    try:
        yield create_app(receiver)
    finally:
        receiver.store.close()


def shown(reply: requests.Response) -> tuple[Any, ...]:
    headers = reply.headers
    return (
        reply.status_code,
        headers.get("content-type"),
        headers.get("content-length"),
        headers.get("www-authenticate"),
        headers.get("retry-after"),
        reply.content,
    )


def shown_in_process(answer: Answer) -> tuple[Any, ...]:
    return (
        answer.status,
        answer.header("content-type"),
        answer.header("content-length"),
        answer.header("www-authenticate"),
        answer.header("retry-after"),
        answer.body,
    )


def http(
    server: ServerProcess,
    method: str,
    path: str,
    body: bytes = b"",
    headers: Iterable[tuple[str, str]] = (),
    **kw: Any,
) -> requests.Response:
    return requests.request(
        method,
        f"{server.base}{path}",
        data=body,
        headers=dict(headers),
        timeout=TIMEOUT,
        allow_redirects=False,
        **kw,
    )


V3_CASES = deterministic_v3()
WEBHOOK_CASES = deterministic_webhooks()


@pytest.mark.parametrize(("label", "name", "body", "auth"), V3_CASES, ids=[c[0] for c in V3_CASES])
def test_over_http_a_v3_call_gets_what_fastapi_would_answer(
    server: ServerProcess, reference: ASGIApp, label: str, name: str, body: bytes, auth: str | None
) -> None:
    headers = v3_headers(auth)
    reply = http(server, "POST", f"/v3/{name}", body, headers)
    assert shown(reply) == shown_in_process(call(reference, "POST", f"/v3/{name}", body, headers))
    if reply.status_code == 401:
        assert reply.headers["WWW-Authenticate"] == 'Basic realm="hoststand"'


@pytest.mark.parametrize(
    ("label", "partner", "body", "headers"), WEBHOOK_CASES, ids=[c[0] for c in WEBHOOK_CASES]
)
def test_over_http_a_refused_webhook_gets_what_fastapi_would_answer(
    server: ServerProcess,
    reference: ASGIApp,
    label: str,
    partner: str,
    body: bytes,
    headers: list[tuple[str, str]],
) -> None:
    path = f"/webhooks/{partner}"
    reply = http(server, "POST", path, body, headers)
    assert reply.status_code >= 400
    assert shown(reply) == shown_in_process(call(reference, "POST", path, body, headers))


def without_ids(body: Any) -> Any:
    """A reply with its random ids blanked."""
    if isinstance(body, dict):
        return {
            k: "<id>" if k in ("booking_id", "reservation_id") else without_ids(v)
            for k, v in body.items()
        }
    if isinstance(body, list):
        return [without_ids(v) for v in body]
    return body


def test_over_http_a_booking_and_a_webhook_get_what_fastapi_would_answer_but_their_ids(
    server: ServerProcess, reference: ASGIApp
) -> None:
    """Thursday 10 December: the ids are random, everything else is as FastAPI would say."""
    create = encode(
        {
            "slot": slot(sec(10, "19:00"), 2),
            "user_information": user("http-ada"),
            "idempotency_token": "http-1",
        }
    )
    event = encode(booking_event("evt-http-1", 4, "2026-12-10T20:00:00+00:00"))
    requests_ = [
        ("/v3/CreateBooking", create, v3_headers()),
        ("/v3/CreateBooking", create, v3_headers()),  # the stored reply, byte for byte
        ("/v3/ListBookings", encode({"user_id": "http-ada"}), v3_headers()),
        (f"/webhooks/{TABLEFINDER}", event, signed_headers(event)),
        (f"/webhooks/{TABLEFINDER}", event, signed_headers(event)),
    ]
    replies = []
    for path, body, headers in requests_:
        reply = http(server, "POST", path, body, headers)
        want = call(reference, "POST", path, body, headers)
        assert reply.status_code == want.status == 200, reply.text
        assert reply.headers["content-type"] == want.header("content-type") == "application/json"
        assert reply.headers["content-length"] == str(len(reply.content))
        assert without_ids(reply.json()) == without_ids(want.json())
        replies.append(reply.content)
    assert replies[1] == replies[0] and replies[4] == replies[3]
    assert (
        json.loads(replies[2])["bookings"][0]["booking_id"]
        == json.loads(replies[0])["booking"]["booking_id"]
    )


@pytest.mark.parametrize("target", ["v3", "webhook"])
@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_over_http_a_body_over_64_kib_gets_413_and_changes_nothing(
    server: ServerProcess, reference: ASGIApp, target: str, chunked: bool
) -> None:
    path, body, headers = oversized_requests()[target]
    data: Any = iter(split(body, 8192)) if chunked else body  # a generator: sent chunked
    reply = requests.post(f"{server.base}{path}", data=data, headers=dict(headers), timeout=TIMEOUT)
    if chunked:
        assert reply.request.headers.get("Transfer-Encoding") == "chunked"
    assert shown(reply) == shown_in_process(call(reference, "POST", path, body, headers))
    assert reply.status_code == 413
    assert reply.json()["error"]["code"] == "body too large"
    listed = http(
        server, "POST", "/v3/ListBookings", encode({"user_id": "too-large"}), v3_headers()
    )
    assert listed.json() == {"bookings": []}
    with SQLiteStore(server.db) as store:
        assert store.recall(f"event:{TABLEFINDER}", "evt-large") is None


# A redirect names the host asked; a health report its own store's state (the server's
# start-up export and its age), which the reference app in process does not share.
PASSED_ON_HTTP = [c for c in PASSED_ON if c[3] != 307 and c[0] != "healthz"]


@pytest.mark.parametrize(
    ("label", "method", "path", "status"), PASSED_ON_HTTP, ids=[p[0] for p in PASSED_ON_HTTP]
)
def test_over_http_requests_the_hot_path_does_not_take_get_fastapis_answer(
    server: ServerProcess, reference: ASGIApp, label: str, method: str, path: str, status: int
) -> None:
    headers = [*signed_headers(EVENT), ("authorization", AUTH)]
    reply = http(server, method, path, EVENT, headers)
    assert reply.status_code == status, reply.text
    assert shown(reply) == shown_in_process(
        call(reference, method, scope_path(path), EVENT, headers)
    )


def test_over_http_health_check_and_openapi_are_fastapis(
    server: ServerProcess, reference: ASGIApp
) -> None:
    for headers in ([("authorization", AUTH)], []):
        reply = http(server, "GET", "/v3/HealthCheck", headers=headers)
        assert shown(reply) == shown_in_process(
            call(reference, "GET", "/v3/HealthCheck", headers=headers)
        )
    assert http(server, "GET", "/v3/HealthCheck").headers["WWW-Authenticate"].startswith("Basic")
    spec = http(server, "GET", "/openapi.json")
    assert spec.content == call(reference, "GET", "/openapi.json").body
    assert "post" in spec.json()["paths"]["/webhooks/{partner_id}"]
    assert {f"/v3/{name}" for name in ENDPOINTS} <= set(spec.json()["paths"])


def wait_for_first_export(server: ServerProcess) -> None:
    """The export scheduler (a lifespan thread) records its first run at start-up."""
    deadline = time.monotonic() + 10 * STARTUP_SECONDS
    while time.monotonic() < deadline:
        with SQLiteStore(server.db) as store:
            if store.exports():
                return
        assert server.process.poll() is None, server.output()
        time.sleep(0.2)
    raise AssertionError(f"no export was recorded:\n{server.output()}")


def test_over_http_the_lifespan_reaches_fastapi_and_starts_the_background_threads(
    server: ServerProcess,
) -> None:
    wait_for_first_export(server)


@pytest.mark.slow
def test_over_http_a_locked_store_gets_503_with_retry_after_then_a_retry_succeeds(
    server: ServerProcess,
) -> None:
    wait_for_first_export(server)  # the start-up export must not be the one left waiting
    create = encode({"slot": slot(sec(11, "19:00"), 2), "user_information": user("locked-out")})
    event = encode(booking_event("evt-locked", 2, "2026-12-11T19:00:00+00:00"))
    calls = [
        ("/v3/CreateBooking", create, v3_headers()),
        (f"/webhooks/{TABLEFINDER}", event, signed_headers(event)),
    ]
    lock = sqlite3.connect(server.db, isolation_level=None)
    try:
        lock.execute("BEGIN IMMEDIATE")  # the write lock, held until the requests are answered
        for path, body, headers in calls:
            reply = http(server, "POST", path, body, headers)
            assert reply.status_code == 503, reply.text
            assert reply.headers["Retry-After"] == "1"
            assert reply.headers["content-type"] == "application/json"
            assert reply.json()["error"]["code"] == "unavailable"
            assert set(reply.json()["error"]) == {"code", "message"}
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    for path, body, headers in calls:
        reply = http(server, "POST", path, body, headers)
        assert reply.status_code == 200, reply.text


@pytest.mark.parametrize(
    "slot_json",
    [b'{"start_sec": 1, "note": NaN}', b'{"start_sec": "1", "service_id": "\\ud800"}'],
    ids=["nan", "lone-surrogate"],
)
def test_over_http_a_lookup_that_cannot_be_echoed_is_refused_in_the_error_shape(
    server: ServerProcess, slot_json: bytes
) -> None:
    body = b'{"merchant_id": "marlowes-kitchen", "slot_time": [' + slot_json + b"]}"
    reply = http(server, "POST", "/v3/BatchAvailabilityLookup", body, v3_headers())
    assert reply.status_code == 400, (reply.status_code, reply.text)
    assert reply.json()["error"]["code"] == "bad arguments"
