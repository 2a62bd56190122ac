"""The partner's booking server (v3) and waitlist through a real `hoststand serve` on 127.0.0.1:
the partner's own requests, every failure cause we emit, idempotency, lookups that agree with
bookings, HTTP Basic auth and a full round. Each server's clock is pinned (--now)."""

from __future__ import annotations

import base64
import os
import random
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.integration.server_process import (
    CONFIGS,
    HOST_TOKENS,
    HOSTSTAND,
    NOW,
    TIMEOUT,
    ServerProcess,
    free_port,
    running_server,
    start_server,
    wait_healthy,
)

MARLOWES = "marlowes-kitchen"
SERVICE = "1000"
BASIC = ("tablefinder", "sample-basic-password")
OTHER_BASIC = ("otherpartner", "other-sample-basic-password")
HOST = f"/api/v1/restaurants/{MARLOWES}"
HOST_AUTH = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}

# NOW is Friday 4 December 2026, 18:00 GMT (London = UTC in December): dinner is running.
NOW_SEC = int(NOW.timestamp())
# Saturday 5 December 2026: 19:00 is inside dinner, 16:00 between lunch and dinner.
DINNER = datetime(2026, 12, 5, 19, 0, tzinfo=UTC)
DINNER_SEC = int(DINNER.timestamp())
BETWEEN_SERVICES = datetime(2026, 12, 5, 16, 0, tzinfo=UTC)

ENDPOINTS = [
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


# -- helpers ---------------------------------------------------------------------------------


def sec(day: int, hhmm: str) -> int:
    """Unix seconds of a December 2026 wall-clock time in London (GMT)."""
    hour, minute = (int(part) for part in hhmm.split(":"))
    return int(datetime(2026, 12, day, hour, minute, tzinfo=UTC).timestamp())


def duration(size: int) -> int:
    """The turn of a party of `size` in seconds: 45/70/90 minutes, 120 for 7 or more."""
    if size <= 2:
        return 2700
    if size <= 4:
        return 4200
    if size <= 6:
        return 5400
    return 7200


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def new_user() -> str:
    return f"user-{uuid.uuid4().hex[:12]}"


def new_token() -> str:
    return str(uuid.uuid4().int % 10**20)


def post(
    server: ServerProcess, name: str, body: Any, auth: tuple[str, str] | None = BASIC
) -> requests.Response:
    return requests.post(f"{server.base}/v3/{name}", json=body, auth=auth, timeout=TIMEOUT)


def v3(server: ServerProcess, name: str, body: Any, auth: tuple[str, str] = BASIC) -> Any:
    """A v3 call that must answer 200; its JSON body."""
    reply = post(server, name, body, auth)
    assert reply.status_code == 200, reply.text
    return reply.json()


def assert_bad_arguments(reply: requests.Response) -> None:
    assert reply.status_code == 400, reply.text
    body = reply.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}


def assert_failure(body: Any, cause: str, key: str = "booking_failure") -> None:
    """A business failure: HTTP 200 with only `key {cause, description}` set."""
    assert set(body) == {key}, body
    assert set(body[key]) == {"cause", "description"}, body
    assert body[key]["cause"] == cause, body
    assert isinstance(body[key]["description"], str)


def slot(start_sec: int, size: int, merchant: str = MARLOWES) -> dict[str, Any]:
    return {
        "merchant_id": merchant,
        "service_id": SERVICE,
        "start_sec": str(start_sec),
        "duration_sec": str(duration(size)),
        "resources": {"party_size": size},
    }


def create(
    server: ServerProcess,
    start_sec: int,
    size: int,
    user: str | None = None,
    token: str | None = None,
    auth: tuple[str, str] = BASIC,
) -> Any:
    body = {
        "slot": slot(start_sec, size),
        "user_information": {"user_id": user or new_user(), "given_name": "Ada"},
        "idempotency_token": token or new_token(),
        "payment_information": {"prepayment_status": "PREPAYMENT_NOT_PROVIDED"},
    }
    return v3(server, "CreateBooking", body, auth)


def booked(server: ServerProcess, start_sec: int, size: int, user: str | None = None) -> str:
    """Create a booking that must be confirmed; its id."""
    body = create(server, start_sec, size, user)
    assert body.get("booking", {}).get("status") == "CONFIRMED", body
    return str(body["booking"]["booking_id"])


def available(server: ServerProcess, start_sec: int, size: int) -> bool:
    slot_time = {
        "service_id": SERVICE,
        "start_sec": str(start_sec),
        "duration_sec": str(duration(size)),
        "resource_ids": {"party_size": size},
    }
    body = v3(
        server, "BatchAvailabilityLookup", {"merchant_id": MARLOWES, "slot_time": [slot_time]}
    )
    [answer] = body["slot_time_availability"]
    return bool(answer["available"])


def update(server: ServerProcess, booking: dict[str, Any], auth: tuple[str, str] = BASIC) -> Any:
    return v3(server, "UpdateBooking", {"booking": booking}, auth)


def cancel(server: ServerProcess, booking_id: str) -> Any:
    return update(server, {"booking_id": booking_id, "status": "CANCELED"})


def status(server: ServerProcess, booking_id: str) -> str:
    body = v3(server, "GetBookingStatus", {"booking_id": booking_id})
    return str(body["booking_status"])


def bookings_of(server: ServerProcess, user: str, auth: tuple[str, str] = BASIC) -> list[Any]:
    return list(v3(server, "ListBookings", {"user_id": user}, auth)["bookings"])


def estimates(server: ServerProcess, sizes: list[int]) -> Any:
    body = {"merchant_id": MARLOWES, "service_id": SERVICE, "party_size": sizes}
    return v3(server, "BatchGetWaitEstimates", body)


def join(
    server: ServerProcess, size: int, user: str | None = None, token: str | None = None
) -> Any:
    body = {
        "merchant_id": MARLOWES,
        "service_id": SERVICE,
        "party_size": size,
        "user_information": {"user_id": user or new_user(), "given_name": "Ada"},
        "idempotency_token": token or new_token(),
    }
    return v3(server, "CreateWaitlistEntry", body)


def entry(server: ServerProcess, entry_id: str) -> Any:
    return v3(server, "GetWaitlistEntry", {"waitlist_entry_id": entry_id})["waitlist_entry"]


def host_post(server: ServerProcess, path: str, body: Any = None) -> Any:
    reply = requests.post(
        f"{server.base}{HOST}{path}", json=body, headers=HOST_AUTH, timeout=TIMEOUT
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def board(server: ServerProcess) -> dict[str, Any]:
    reply = requests.get(f"{server.base}{HOST}/board", headers=HOST_AUTH, timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    return dict(reply.json()["result"])


def fill_floor(server: ServerProcess) -> dict[str, str]:
    """Seat host walk-ins at every table; table id -> the walk-in sitting there."""
    for i, size in enumerate([6, 4, 4, 4, 2, 2]):
        host_post(server, "/walk-ins", {"size": size, "party_id": f"fill-{i}"})
    tables = board(server)["tables"]
    assert all(party.startswith("fill-") for party in tables.values()), tables
    return dict(tables)


@contextmanager
def server_with_settings(db: Path, settings: Path) -> Iterator[ServerProcess]:
    """`hoststand serve` at NOW with our own settings file (the helper uses the sample one)."""
    port = free_port()
    args = [str(HOSTSTAND), "--now", NOW.isoformat(), "serve"]
    for config in CONFIGS:
        args += ["--config", str(config)]
    args += ["--db", str(db), "--settings", str(settings), "--host", "127.0.0.1"]
    args += ["--port", str(port)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTSTAND_")}
    log = db.with_name(f"{db.stem}-server-{port}.log")
    with open(log, "wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, cwd=db.parent, env=env
        )
    server = ServerProcess(process, f"http://127.0.0.1:{port}", db, log)
    try:
        wait_healthy(server)
        yield server
    finally:
        server.stop()


# -- servers ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Friday 18:00: booking tests each use their own day (or their own slots) and users."""
    with running_server(tmp_path_factory.mktemp("v3") / "hoststand.db") as running:
        yield running


@pytest.fixture(scope="module")
def closed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Saturday 16:00, between lunch and dinner."""
    db = tmp_path_factory.mktemp("v3-closed") / "hoststand.db"
    with running_server(db, BETWEEN_SERVICES) as running:
        yield running


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Saturday 19:00 with every table free; the tests using it change nothing."""
    db = tmp_path_factory.mktemp("v3-quiet") / "hoststand.db"
    with running_server(db, DINNER) as running:
        yield running


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Saturday 19:00 with every table taken and nobody leaving; tests add their own parties."""
    db = tmp_path_factory.mktemp("v3-full") / "hoststand.db"
    with running_server(db, DINNER) as running:
        fill_floor(running)
        yield running


@pytest.fixture
def dinner(tmp_path: Path) -> Iterator[ServerProcess]:
    """Saturday 19:00 on an empty database, for a test that needs the whole floor to itself."""
    with running_server(tmp_path / "hoststand.db", DINNER) as running:
        yield running


@pytest.fixture(scope="module")
def two_partners(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Two partners with Basic credentials; the second may only use Marlowe's."""
    folder = tmp_path_factory.mktemp("v3-partners")
    settings = folder / "server.toml"
    settings.write_text(
        f"""
[[partners]]
id = "tablefinder"
basic_user = "{BASIC[0]}"
basic_password = "{BASIC[1]}"

[[partners]]
id = "other"
basic_user = "{OTHER_BASIC[0]}"
basic_password = "{OTHER_BASIC[1]}"
merchants = ["{MARLOWES}"]
""",
        encoding="utf-8",
    )
    with server_with_settings(folder / "hoststand.db", settings) as running:
        yield running


# -- HTTP Basic auth -------------------------------------------------------------------------


def test_health_check_answers_200_to_a_partner_with_basic_credentials(
    server: ServerProcess,
) -> None:
    with requests.get(f"{server.base}/v3/HealthCheck", auth=BASIC, timeout=TIMEOUT) as reply:
        assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("name", ["HealthCheck", *ENDPOINTS])
def test_every_endpoint_answers_401_to_missing_or_wrong_basic_credentials(
    server: ServerProcess, name: str
) -> None:
    wrong: list[dict[str, str]] = [
        {},
        {"Authorization": basic(BASIC[0], "wrong-password")},
        {"Authorization": basic("nobody", BASIC[1])},
        {"Authorization": "Basic !!not-base64!!"},
        {"Authorization": f"Bearer {BASIC[1]}"},
    ]
    method = "GET" if name == "HealthCheck" else "POST"
    for headers in wrong:
        with requests.request(
            method, f"{server.base}/v3/{name}", json={}, headers=headers, timeout=TIMEOUT
        ) as reply:
            assert reply.status_code == 401, (headers, reply.text)
            assert reply.headers.get("WWW-Authenticate", "").lower().startswith("basic")


@pytest.mark.parametrize(
    "credentials",
    [("dinerly", ""), ("dinerly", "sample-webhook-secret-dinerly"), ("dinerly", BASIC[1])],
)
def test_a_partner_without_basic_credentials_cannot_log_in(
    server: ServerProcess, credentials: tuple[str, str]
) -> None:
    with requests.get(f"{server.base}/v3/HealthCheck", auth=credentials, timeout=TIMEOUT) as r:
        assert r.status_code == 401
    reply = post(server, "ListBookings", {"user_id": "anyone"}, auth=credentials)
    assert reply.status_code == 401


# -- BatchAvailabilityLookup -----------------------------------------------------------------


def test_lookup_answers_the_partners_sample_request_by_echoing_its_slot(
    server: ServerProcess,
) -> None:
    slot_time = {
        "service_id": SERVICE,
        "start_sec": str(sec(7, "19:00")),
        "duration_sec": "2700",
        "resource_ids": {"party_size": 2},
    }
    body = v3(
        server, "BatchAvailabilityLookup", {"merchant_id": MARLOWES, "slot_time": [slot_time]}
    )
    assert body == {"slot_time_availability": [{"slot_time": slot_time, "available": True}]}


def test_lookup_accepts_lower_camel_case_and_echoes_the_slot_in_snake_case(
    server: ServerProcess,
) -> None:
    camel = {
        "serviceId": SERVICE,
        "startSec": str(sec(7, "19:15")),
        "durationSec": "4200",
        "resourceIds": {"partySize": 4},
    }
    body = v3(server, "BatchAvailabilityLookup", {"merchantId": MARLOWES, "slotTime": [camel]})
    snake = {
        "service_id": SERVICE,
        "start_sec": str(sec(7, "19:15")),
        "duration_sec": "4200",
        "resource_ids": {"party_size": 4},
    }
    assert body == {"slot_time_availability": [{"slot_time": snake, "available": True}]}


def test_lookup_answers_exactly_one_availability_per_requested_slot_in_order(
    server: ServerProcess,
) -> None:
    good = sec(8, "19:00")

    def slot_time(start: int, size: int, **extra: Any) -> dict[str, Any]:
        return {
            "service_id": SERVICE,
            "start_sec": start,
            "duration_sec": duration(size),
            "resource_ids": {"party_size": size},
            **extra,
        }

    requested = [
        (slot_time(good, 2), True),
        (slot_time(good, 2), True),  # the same slot twice is answered twice
        (slot_time(good + 300, 2), False),  # 19:05: not on the 15-minute grid
        (slot_time(sec(8, "21:45"), 2), False),  # after the last seating
        (slot_time(sec(25, "19:00"), 2), False),  # Christmas Day: closed
        (slot_time(sec(4, "18:00"), 2), False),  # already started
        (slot_time(good, 0), False),
        (slot_time(good, 11), False),
        ({**slot_time(good, 2), "duration_sec": 1800}, False),  # not the turn of a pair
        ({**slot_time(good, 2), "service_id": "9999"}, False),
        ({"service_id": SERVICE, "start_sec": good, "duration_sec": 2700}, False),  # no size
        (slot_time(good, 10), True),
    ]
    body = v3(
        server,
        "BatchAvailabilityLookup",
        {"merchant_id": MARLOWES, "slot_time": [s for s, _ in requested]},
    )
    assert body == {
        "slot_time_availability": [{"slot_time": s, "available": a} for s, a in requested]
    }


def test_lookup_for_an_unknown_merchant_is_400(server: ServerProcess) -> None:
    reply = post(
        server,
        "BatchAvailabilityLookup",
        {"merchant_id": "nobody", "slot_time": [{"start_sec": str(sec(8, "19:00"))}]},
    )
    assert_bad_arguments(reply)


def test_lookup_agrees_with_booking_on_random_states(server: ServerProcess) -> None:
    """A lookup that says available is followed by a booking that succeeds; one that says
    not, by a booking that fails, whatever bookings and cancellations came before."""
    rng = random.Random(20261204)
    starts = [sec(4, hhmm) for hhmm in ("17:45", "18:00", "18:15", "18:30", "19:00")]
    starts += [sec(9, hhmm) for hhmm in ("18:30", "18:45", "19:00", "19:30", "20:00", "20:45")]
    active: list[str] = []
    outcomes: set[bool] = set()

    def attempt(start: int, size: int) -> bool:
        body = create(server, start, size)
        if "booking" in body:
            assert body.get("booking", {}).get("status") == "CONFIRMED", body
            active.append(body["booking"]["booking_id"])
            return True
        assert_failure(body, "SLOT_UNAVAILABLE")
        return False

    for _ in range(20):
        attempt(rng.choice(starts), rng.randint(1, 10))
    for check in range(60):
        if active and rng.random() < 0.3:
            gone = active.pop(rng.randrange(len(active)))
            assert cancel(server, gone)["booking"]["status"] == "CANCELED"
        start = rng.choice(starts) + (300 if rng.random() < 0.05 else 0)
        size = rng.randint(1, 10)
        says = available(server, start, size)
        assert attempt(start, size) == says, (check, start, size, says)
        outcomes.add(says)
    assert outcomes == {True, False}  # both answers were put to the test


# -- CreateBooking ---------------------------------------------------------------------------


def test_the_partners_sample_create_booking_request_confirms_a_new_booking(
    server: ServerProcess,
) -> None:
    start = sec(10, "19:00")
    request = {
        "idempotency_token": "18307119013960637991",
        "payment_information": {"prepayment_status": "PREPAYMENT_NOT_PROVIDED"},
        "slot": {
            "confirmation_mode": "CONFIRMATION_MODE_SYNCHRONOUS",
            "duration_sec": "2700",
            "merchant_id": MARLOWES,
            "resources": {"party_size": 2},
            "service_id": SERVICE,
            "start_sec": str(start),
        },
        "user_information": {
            "email": "john.smith@gmail.com",
            "family_name": "Smith",
            "given_name": "John",
            "telephone": "+12091111111",
            "user_id": "1111111111111111111",
        },
    }
    body = v3(server, "CreateBooking", request)
    assert set(body) == {"booking"}
    booking = body["booking"]
    assert booking["booking_id"]
    assert booking["status"] == "CONFIRMED"
    assert booking["slot"] == {
        "merchant_id": MARLOWES,
        "service_id": SERVICE,
        "start_sec": start,
        "duration_sec": 2700,
        "resources": {"party_size": 2},
        "confirmation_mode": "CONFIRMATION_MODE_SYNCHRONOUS",
    }
    assert booking["user_information"] == request["user_information"]
    assert booking["payment_information"] == {"prepayment_status": "PREPAYMENT_NOT_PROVIDED"}
    assert status(server, booking["booking_id"]) == "CONFIRMED"


def test_create_booking_accepts_lower_camel_case_field_names(server: ServerProcess) -> None:
    user = new_user()
    request = {
        "idempotencyToken": new_token(),
        "slot": {
            "merchantId": MARLOWES,
            "serviceId": SERVICE,
            "startSec": str(sec(10, "20:00")),
            "durationSec": "4200",
            "resources": {"partySize": 3},
        },
        "userInformation": {"userId": user, "givenName": "Ada", "familyName": "Lovelace"},
    }
    booking = v3(server, "CreateBooking", request)["booking"]
    assert booking["status"] == "CONFIRMED"
    assert booking["slot"]["start_sec"] == sec(10, "20:00")
    assert booking["slot"]["resources"] == {"party_size": 3}
    assert booking["user_information"]["user_id"] == user
    assert booking["user_information"]["family_name"] == "Lovelace"


@pytest.mark.parametrize(
    ("start", "size", "duration_sec"),
    [
        (sec(11, "19:05"), 2, 2700),  # not on the 15-minute grid
        (sec(11, "21:45"), 2, 2700),  # after the last seating
        (sec(11, "16:00"), 2, 2700),  # between lunch and dinner
        (sec(25, "19:00"), 2, 2700),  # Christmas Day: closed
        (sec(4, "18:00"), 2, 2700),  # has already started
        (sec(4, "17:30"), 2, 2700),  # in the past
        (sec(11, "19:00"), 2, 1800),  # not the turn of a pair
        (sec(11, "19:00"), 11, 7200),  # no table seats eleven
    ],
)
def test_booking_a_slot_we_do_not_publish_fails_with_slot_unavailable(
    server: ServerProcess, start: int, size: int, duration_sec: int
) -> None:
    request = {
        "slot": {
            "merchant_id": MARLOWES,
            "service_id": SERVICE,
            "start_sec": str(start),
            "duration_sec": str(duration_sec),
            "resources": {"party_size": size},
        },
        "user_information": {"user_id": new_user()},
        "idempotency_token": new_token(),
    }
    assert_failure(v3(server, "CreateBooking", request), "SLOT_UNAVAILABLE")


def test_booking_a_slot_with_no_unit_left_fails_with_slot_unavailable(
    server: ServerProcess,
) -> None:
    start = sec(12, "19:00")  # six guests: only T3 seats them
    booked(server, start, 6)
    assert not available(server, start, 6)
    assert_failure(create(server, start, 6), "SLOT_UNAVAILABLE")


def test_the_same_user_booking_the_same_slot_again_fails_with_overlapping_reservation(
    server: ServerProcess,
) -> None:
    # partner-formats.md section 2: a request duplicating a booking of the same user (same
    # party size and time) fails with OVERLAPPING_RESERVATION; another size then overlaps too.
    user, start = new_user(), sec(13, "19:00")
    booked(server, start, 2, user)
    assert_failure(create(server, start, 2, user), "OVERLAPPING_RESERVATION")
    assert_failure(create(server, start, 4, user), "OVERLAPPING_RESERVATION")  # any size
    assert len(bookings_of(server, user)) == 1


def test_a_users_booking_whose_turn_overlaps_another_fails_with_overlapping_reservation(
    server: ServerProcess,
) -> None:
    user = new_user()
    booked(server, sec(13, "20:30"), 4, user)  # 70 minutes: until 21:40
    assert_failure(create(server, sec(13, "21:30"), 2, user), "OVERLAPPING_RESERVATION")
    assert_failure(create(server, sec(13, "20:00"), 2, user), "OVERLAPPING_RESERVATION")
    booked(server, sec(13, "19:45"), 2, user)  # 45 minutes: done at 20:30
    assert len(bookings_of(server, user)) == 2


def test_moving_a_booking_onto_another_of_the_users_turns_fails_with_overlapping_reservation(
    server: ServerProcess,
) -> None:
    user = new_user()
    booked(server, sec(13, "12:00"), 2, user)
    later = booked(server, sec(13, "13:30"), 2, user)
    moved = update(server, {"booking_id": later, "slot": {"start_sec": str(sec(13, "12:30"))}})
    assert_failure(moved, "OVERLAPPING_RESERVATION")


def test_a_user_may_book_the_same_time_again_after_cancelling(server: ServerProcess) -> None:
    user, start = new_user(), sec(13, "13:00")
    cancel(server, booked(server, start, 2, user))
    booked(server, start, 2, user)


@pytest.mark.parametrize(
    "request_body",
    [
        {"slot": slot(sec(14, "19:00"), 2, "nobody"), "user_information": {"user_id": "u"}},
        {
            "slot": {**slot(sec(14, "19:00"), 2), "service_id": "9999"},
            "user_information": {"user_id": "u"},
        },
        {
            "slot": {**slot(sec(14, "19:00"), 2), "resources": {}},
            "user_information": {"user_id": "u"},
        },
        {"slot": slot(sec(14, "19:00"), 2)},  # no user
        {"user_information": {"user_id": "u"}},  # no slot
        {"slot": {**slot(sec(14, "19:00"), 2), "start_sec": "soon"}, "user_information": {}},
        *(
            {
                "slot": slot(sec(14, "19:00"), 2),
                "user_information": {"user_id": "u", "telephone": t},
            }
            for t in ("+44 (0)20 7946 0000", "020 7946 0000", "+44", "+44 20 7946 0000 ext 2")
        ),
    ],
)
def test_create_booking_with_bad_arguments_is_400(
    server: ServerProcess, request_body: dict[str, Any]
) -> None:
    assert_bad_arguments(post(server, "CreateBooking", request_body))
    assert available(server, sec(14, "19:00"), 2)


def test_a_body_that_is_not_a_json_object_is_400(server: ServerProcess) -> None:
    for data in (b"{not json", b"[1, 2]"):
        reply = requests.post(
            f"{server.base}/v3/CreateBooking",
            data=data,
            auth=BASIC,
            headers={"Content-Type": "application/json"},
            timeout=TIMEOUT,
        )
        assert_bad_arguments(reply)


# -- idempotency -----------------------------------------------------------------------------


def test_retrying_create_booking_with_the_same_token_returns_the_same_booking(
    server: ServerProcess,
) -> None:
    user, token, start = new_user(), new_token(), sec(15, "19:00")
    first = create(server, start, 6, user, token)
    again = create(server, start, 6, user, token)
    assert again == first
    assert first["booking"]["status"] == "CONFIRMED"
    assert [b["booking_id"] for b in bookings_of(server, user)] == [first["booking"]["booking_id"]]
    assert not available(server, start, 6)  # one table taken, not two attempts' worth


def test_a_retried_create_booking_shows_the_booking_as_it_now_is(server: ServerProcess) -> None:
    user, start = new_user(), sec(15, "18:00")
    cancelled_token, moved_token = new_token(), new_token()
    first = create(server, start, 2, user, cancelled_token)["booking"]
    cancel(server, first["booking_id"])
    again = create(server, start, 2, user, cancelled_token)["booking"]
    assert again["booking_id"] == first["booking_id"]
    assert again["status"] == "CANCELED"
    other_user, later = new_user(), sec(15, "21:00")
    other = create(server, start, 2, other_user, moved_token)["booking"]
    update(server, {"booking_id": other["booking_id"], "slot": {"start_sec": str(later)}})
    again = create(server, start, 2, other_user, moved_token)["booking"]
    assert again["booking_id"] == other["booking_id"]
    assert (again["status"], again["slot"]["start_sec"]) == ("CONFIRMED", later)
    # The retries booked nothing.
    assert [b["booking_id"] for b in bookings_of(server, user)] == [first["booking_id"]]
    assert [b["booking_id"] for b in bookings_of(server, other_user)] == [other["booking_id"]]


def test_a_new_token_never_returns_an_old_booking(server: ServerProcess) -> None:
    user, start = new_user(), sec(15, "20:30")
    old = booked(server, start, 2, user)
    other = create(server, start, 2)  # another user, a new token: a new booking
    assert other["booking"]["booking_id"] != old
    same_user = create(server, start, 2, user)  # a new token for a duplicate: a failure
    assert_failure(same_user, "OVERLAPPING_RESERVATION")


def test_a_failed_create_booking_is_processed_again_when_retried(server: ServerProcess) -> None:
    start, token, user = sec(15, "13:00"), new_token(), new_user()
    blocker = booked(server, start, 6)
    assert_failure(create(server, start, 6, user, token), "SLOT_UNAVAILABLE")
    cancel(server, blocker)
    retried = create(server, start, 6, user, token)
    assert retried["booking"]["status"] == "CONFIRMED"
    assert retried["booking"]["booking_id"] != blocker
    assert create(server, start, 6, user, token) == retried


def test_the_same_update_twice_returns_the_same_booking(server: ServerProcess) -> None:
    booking_id = booked(server, sec(16, "19:00"), 6)
    move = {
        "booking_id": booking_id,
        "slot": {"start_sec": str(sec(16, "20:30")), "duration_sec": "5400"},
    }
    first = update(server, move)
    again = update(server, move)
    assert again == first
    assert first["booking"]["slot"]["start_sec"] == sec(16, "20:30")
    assert available(server, sec(16, "19:00"), 6)
    assert not available(server, sec(16, "20:30"), 6)


# -- UpdateBooking ---------------------------------------------------------------------------


def test_cancelling_a_booking_answers_it_canceled_and_gives_its_table_back(
    server: ServerProcess,
) -> None:
    start = sec(17, "19:00")
    booking_id = booked(server, start, 6)
    assert not available(server, start, 6)
    body = cancel(server, booking_id)
    assert set(body) == {"booking"}
    assert body["booking"]["booking_id"] == booking_id
    assert body["booking"]["status"] == "CANCELED"
    assert status(server, booking_id) == "CANCELED"
    assert available(server, start, 6)


def test_cancelling_a_cancelled_booking_fails_with_booking_already_cancelled(
    server: ServerProcess,
) -> None:
    booking_id = booked(server, sec(17, "20:30"), 2)
    cancel(server, booking_id)
    assert_failure(cancel(server, booking_id), "BOOKING_ALREADY_CANCELLED")
    assert status(server, booking_id) == "CANCELED"


def test_changing_a_cancelled_booking_fails_with_booking_already_cancelled(
    server: ServerProcess,
) -> None:
    start = sec(17, "13:00")
    booking_id = booked(server, start, 2)
    cancel(server, booking_id)
    resized = update(server, {"booking_id": booking_id, "slot": {"resources": {"party_size": 4}}})
    assert_failure(resized, "BOOKING_ALREADY_CANCELLED")
    assert status(server, booking_id) == "CANCELED"


def test_moving_a_booking_to_a_new_time_releases_the_old_slot(server: ServerProcess) -> None:
    old, new = sec(18, "19:00"), sec(18, "20:30")
    user = new_user()
    booking_id = booked(server, old, 6, user)
    moved = update(
        server,
        {"booking_id": booking_id, "slot": {"start_sec": str(new), "duration_sec": "5400"}},
    )
    assert moved["booking"]["booking_id"] == booking_id
    assert moved["booking"]["status"] == "CONFIRMED"
    assert moved["booking"]["slot"]["start_sec"] == new
    assert available(server, old, 6)
    assert not available(server, new, 6)
    [listed] = bookings_of(server, user)
    assert listed["slot"]["start_sec"] == new
    assert status(server, booking_id) == "CONFIRMED"


def test_changing_the_party_size_rebooks_the_party_at_the_same_time(
    server: ServerProcess,
) -> None:
    start = sec(18, "13:00")
    booking_id = booked(server, start, 2)
    assert available(server, start, 6)
    resized = update(server, {"booking_id": booking_id, "slot": {"resources": {"party_size": 6}}})
    assert resized["booking"]["booking_id"] == booking_id
    assert resized["booking"]["slot"]["resources"] == {"party_size": 6}
    assert resized["booking"]["slot"]["duration_sec"] == 5400
    assert resized["booking"]["slot"]["start_sec"] == start
    assert not available(server, start, 6)
    assert status(server, booking_id) == "CONFIRMED"


def test_a_booking_may_move_into_the_window_of_its_own_table(server: ServerProcess) -> None:
    old, new = sec(24, "19:00"), sec(24, "19:15")  # only T3 seats six: the move frees it first
    booking_id = booked(server, old, 6)
    moved = update(server, {"booking_id": booking_id, "slot": {"start_sec": str(new)}})
    assert moved["booking"]["slot"]["start_sec"] == new
    assert status(server, booking_id) == "CONFIRMED"
    assert not available(server, new, 6)


def test_moving_a_booking_to_another_day_releases_the_old_days_slot(
    server: ServerProcess,
) -> None:
    old, new = sec(24, "13:00"), sec(27, "13:00")
    user = new_user()
    booking_id = booked(server, old, 6, user)
    camel = {"bookingId": booking_id, "slot": {"startSec": str(new), "durationSec": "5400"}}
    moved = update(server, camel)
    assert moved["booking"]["slot"]["start_sec"] == new
    assert available(server, old, 6)
    assert not available(server, new, 6)
    [listed] = bookings_of(server, user)
    assert listed["slot"]["start_sec"] == new
    assert status(server, booking_id) == "CONFIRMED"


def test_a_move_to_a_full_slot_fails_with_slot_unavailable_and_keeps_the_old_booking(
    server: ServerProcess,
) -> None:
    old, full_slot = sec(19, "19:00"), sec(19, "20:30")
    user = new_user()
    booking_id = booked(server, old, 6, user)
    booked(server, full_slot, 6)
    refused = update(
        server,
        {"booking_id": booking_id, "slot": {"start_sec": str(full_slot), "duration_sec": "5400"}},
    )
    assert_failure(refused, "SLOT_UNAVAILABLE")
    assert status(server, booking_id) == "CONFIRMED"
    [listed] = bookings_of(server, user)
    assert listed["slot"]["start_sec"] == old
    assert not available(server, old, 6)  # the old booking still holds its table


def test_a_resize_with_no_table_for_the_new_size_keeps_the_old_booking(
    server: ServerProcess,
) -> None:
    start, user = sec(19, "13:00"), new_user()
    booking_id = booked(server, start, 2, user)
    booked(server, start, 6)
    refused = update(server, {"booking_id": booking_id, "slot": {"resources": {"party_size": 6}}})
    assert_failure(refused, "SLOT_UNAVAILABLE")
    assert status(server, booking_id) == "CONFIRMED"
    [listed] = bookings_of(server, user)
    assert listed["slot"]["resources"] == {"party_size": 2}


def test_a_move_to_a_slot_we_do_not_publish_fails_with_slot_unavailable(
    server: ServerProcess,
) -> None:
    start = sec(20, "19:00")
    booking_id = booked(server, start, 2)
    refused = update(
        server,
        {"booking_id": booking_id, "slot": {"start_sec": str(sec(20, "19:05"))}},
    )
    assert_failure(refused, "SLOT_UNAVAILABLE")
    assert status(server, booking_id) == "CONFIRMED"


@pytest.mark.parametrize("name", ["UpdateBooking", "GetBookingStatus"])
def test_an_unknown_booking_is_400(server: ServerProcess, name: str) -> None:
    body: dict[str, Any] = {"booking_id": "bk-0000000000000000"}
    if name == "UpdateBooking":
        body = {"booking": {**body, "status": "CANCELED"}}
    assert_bad_arguments(post(server, name, body))


# -- GetBookingStatus and ListBookings -------------------------------------------------------


def test_a_booking_whose_time_plus_15_minutes_has_passed_is_a_no_show(tmp_path: Path) -> None:
    db = tmp_path / "hoststand.db"
    with running_server(db) as at_six:
        booking_id = booked(at_six, sec(4, "19:00"), 2)
    with running_server(db, datetime(2026, 12, 4, 19, 14, tzinfo=UTC)) as at_fourteen_past:
        assert status(at_fourteen_past, booking_id) == "CONFIRMED"
    with running_server(db, datetime(2026, 12, 4, 19, 15, tzinfo=UTC)) as later:
        assert status(later, booking_id) == "NO_SHOW"
        assert_failure(cancel(later, booking_id), "BOOKING_NOT_CANCELLABLE")
        resized = update(
            later, {"booking_id": booking_id, "slot": {"resources": {"party_size": 4}}}
        )
        assert_failure(resized, "BOOKING_NOT_CANCELLABLE")


def test_list_bookings_lists_every_booking_of_that_user_and_no_other(
    server: ServerProcess,
) -> None:
    user = new_user()
    mine = {booked(server, sec(21, "19:00"), 2, user), booked(server, sec(21, "20:30"), 4, user)}
    gone = booked(server, sec(21, "18:00"), 2, user)
    cancel(server, gone)
    booked(server, sec(21, "19:00"), 2)  # somebody else
    listed = {b["booking_id"]: b for b in bookings_of(server, user)}
    assert set(listed) == mine | {gone}
    assert listed[gone]["status"] == "CANCELED"
    assert all(listed[b]["status"] == "CONFIRMED" for b in mine)
    assert all(b["user_information"]["user_id"] == user for b in listed.values())
    assert bookings_of(server, new_user()) == []


def test_list_bookings_lists_only_the_calling_partners_bookings(
    two_partners: ServerProcess,
) -> None:
    user = "shared-user-id"
    ours = booked(two_partners, sec(22, "19:00"), 2, user)
    theirs = create(two_partners, sec(22, "20:30"), 2, user, auth=OTHER_BASIC)
    theirs_id = theirs["booking"]["booking_id"]
    assert [b["booking_id"] for b in bookings_of(two_partners, user)] == [ours]
    others = bookings_of(two_partners, user, OTHER_BASIC)
    assert [b["booking_id"] for b in others] == [theirs_id]


def test_a_partner_cannot_see_or_change_another_partners_booking(
    two_partners: ServerProcess,
) -> None:
    booking_id = booked(two_partners, sec(22, "13:00"), 2)
    reply = post(two_partners, "GetBookingStatus", {"booking_id": booking_id}, OTHER_BASIC)
    assert_bad_arguments(reply)
    body = {"booking": {"booking_id": booking_id, "status": "CANCELED"}}
    assert_bad_arguments(post(two_partners, "UpdateBooking", body, OTHER_BASIC))
    assert status(two_partners, booking_id) == "CONFIRMED"


def test_a_partner_cannot_see_or_delete_another_partners_waitlist_entry(tmp_path: Path) -> None:
    settings = tmp_path / "server.toml"
    settings.write_text(
        f"""
[[partners]]
id = "tablefinder"
basic_user = "{BASIC[0]}"
basic_password = "{BASIC[1]}"

[[partners]]
id = "other"
basic_user = "{OTHER_BASIC[0]}"
basic_password = "{OTHER_BASIC[1]}"

[[hosts]]
merchant_id = "{MARLOWES}"
token = "{HOST_TOKENS[MARLOWES]}"
""",
        encoding="utf-8",
    )
    server = start_server(tmp_path / "hoststand.db", DINNER, settings=settings)
    try:
        fill_floor(server)
        entry_id = join(server, 2)["waitlist_entry_id"]
        asked = {"waitlist_entry_id": entry_id}
        assert_bad_arguments(post(server, "GetWaitlistEntry", asked, OTHER_BASIC))
        refused = post(server, "DeleteWaitlistEntry", asked, OTHER_BASIC)
        assert refused.status_code in (400, 404), refused.text
        assert set(refused.json()) == {"error"}
        assert entry(server, entry_id)["waitlist_entry_state"] == "WAITING"
        assert entry_id in board(server)["waiting"]
    finally:
        server.stop()


def test_a_merchant_the_partner_may_not_use_is_an_unknown_merchant(
    two_partners: ServerProcess,
) -> None:
    lookup = {"merchant_id": "merch1", "slot_time": []}
    assert_bad_arguments(post(two_partners, "BatchAvailabilityLookup", lookup, OTHER_BASIC))
    assert v3(two_partners, "BatchAvailabilityLookup", lookup) == {"slot_time_availability": []}


# -- a full round ----------------------------------------------------------------------------


def test_a_full_round_of_lookup_create_status_list_resize_and_cancel(
    server: ServerProcess,
) -> None:
    user, start = new_user(), sec(23, "19:00")
    assert available(server, start, 2)
    booking_id = booked(server, start, 2, user)
    assert v3(server, "GetBookingStatus", {"booking_id": booking_id}) == {
        "booking_id": booking_id,
        "booking_status": "CONFIRMED",
        "prepayment_status": "PREPAYMENT_NOT_PROVIDED",
    }
    assert [b["booking_id"] for b in bookings_of(server, user)] == [booking_id]
    resized = update(server, {"booking_id": booking_id, "slot": {"resources": {"party_size": 4}}})
    assert resized["booking"]["slot"]["resources"] == {"party_size": 4}
    assert resized["booking"]["slot"]["duration_sec"] == 4200
    [listed] = bookings_of(server, user)
    assert listed["slot"]["resources"] == {"party_size": 4}
    assert listed["status"] == "CONFIRMED"
    assert cancel(server, booking_id)["booking"]["status"] == "CANCELED"
    assert status(server, booking_id) == "CANCELED"
    [listed] = bookings_of(server, user)
    assert listed["status"] == "CANCELED"
    assert available(server, start, 4)


# -- BatchGetWaitEstimates -------------------------------------------------------------------


def test_wait_estimates_are_closed_no_wait_when_every_size_would_be_seated_now(
    quiet: ServerProcess,
) -> None:
    # A status other than OPEN sets no other field (the waitlist spec).
    assert estimates(quiet, list(range(1, 11))) == {"waitlist_status": "CLOSED_NO_WAIT"}


def test_wait_estimates_leave_out_sizes_that_cannot_be_seated(dinner: ServerProcess) -> None:
    fill_floor(dinner)
    body = estimates(dinner, [0, 2, 11, -1, 4])
    assert body["waitlist_status"] == "OPEN"
    assert [e["party_size"] for e in body["wait_estimate"]] == [2, 4]
    for estimate in body["wait_estimate"]:
        assert estimate["waitlist_confirmation_mode"] == "WAITLIST_CONFIRMATION_MODE_SYNCHRONOUS"


def test_wait_estimates_are_open_with_parties_ahead_and_a_later_seat_time_when_tables_are_full(
    dinner: ServerProcess,
) -> None:
    fill_floor(dinner)
    join(dinner, 2)
    join(dinner, 1)
    body = estimates(dinner, [2, 4])
    assert body["waitlist_status"] == "OPEN"
    by_size = {e["party_size"]: e["wait_length"] for e in body["wait_estimate"]}
    assert by_size[2]["parties_ahead_count"] == 2  # a single and a pair wait for two-tops
    assert by_size[4]["parties_ahead_count"] == 0
    for wait in by_size.values():
        window = wait["estimated_seat_time_range"]
        assert DINNER_SEC < window["start_seconds"] < window["end_seconds"]
    pairs, fours = by_size[2], by_size[4]
    assert (
        pairs["estimated_seat_time_range"]["start_seconds"]
        >= fours["estimated_seat_time_range"]["start_seconds"]
    )


def test_wait_estimates_are_closed_other_outside_opening_hours(closed: ServerProcess) -> None:
    assert estimates(closed, [2, 4]) == {"waitlist_status": "CLOSED_OTHER"}


# -- CreateWaitlistEntry ---------------------------------------------------------------------


def test_joining_the_waitlist_outside_opening_hours_fails_with_merchant_closed(
    closed: ServerProcess,
) -> None:
    assert_failure(join(closed, 2), "MERCHANT_CLOSED", "waitlist_business_logic_failure")


@pytest.mark.parametrize(
    ("size", "cause"), [(11, "ABOVE_MAX_PARTY_SIZE"), (0, "BELOW_MIN_PARTY_SIZE")]
)
def test_joining_the_waitlist_with_a_size_no_table_takes_fails_with_its_cause(
    quiet: ServerProcess, size: int, cause: str
) -> None:
    assert_failure(join(quiet, size), cause, "waitlist_business_logic_failure")


def test_joining_the_waitlist_when_that_size_would_be_seated_at_once_fails_with_no_wait(
    quiet: ServerProcess,
) -> None:
    assert_failure(join(quiet, 2), "NO_WAIT", "waitlist_business_logic_failure")
    assert board(quiet)["waiting"] == []


def test_joining_the_waitlist_returns_an_entry_that_waits_with_an_estimate(
    full: ServerProcess,
) -> None:
    body = join(full, 2)
    assert set(body) == {"waitlist_entry_id"}
    entry_id = body["waitlist_entry_id"]
    assert entry_id in board(full)["waiting"]
    found = entry(full, entry_id)
    assert found["waitlist_entry_state"] == "WAITING"
    assert found["waitlist_entry_state_times"] == {"created_time_seconds": DINNER_SEC}
    estimate = found["wait_estimate"]
    assert estimate["party_size"] == 2
    assert estimate["wait_length"]["estimated_seat_time_range"]["start_seconds"] > DINNER_SEC


def test_retrying_create_waitlist_entry_with_the_same_token_returns_the_same_entry(
    full: ServerProcess,
) -> None:
    user = new_user()
    camel = {
        "merchantId": MARLOWES,
        "serviceId": SERVICE,
        "partySize": 4,
        "userInformation": {"userId": user},
        "idempotencyToken": new_token(),
    }
    first = v3(full, "CreateWaitlistEntry", camel)
    again = v3(full, "CreateWaitlistEntry", camel)
    assert again == first
    assert board(full)["waiting"].count(first["waitlist_entry_id"]) == 1


def test_a_failed_create_waitlist_entry_is_processed_again_when_retried(
    dinner: ServerProcess,
) -> None:
    user, token = new_user(), new_token()
    assert_failure(join(dinner, 2, user, token), "NO_WAIT", "waitlist_business_logic_failure")
    fill_floor(dinner)
    retried = join(dinner, 2, user, token)
    assert entry(dinner, retried["waitlist_entry_id"])["waitlist_entry_state"] == "WAITING"


def test_the_same_user_joining_again_while_waiting_fails_with_existing_waitlist_entry(
    full: ServerProcess,
) -> None:
    user = new_user()
    join(full, 2, user)
    assert_failure(
        join(full, 4, user), "EXISTING_WAITLIST_ENTRY", "waitlist_business_logic_failure"
    )


def test_a_user_whose_entry_was_deleted_may_join_again(full: ServerProcess) -> None:
    user = new_user()
    first = join(full, 2, user)["waitlist_entry_id"]
    v3(full, "DeleteWaitlistEntry", {"waitlist_entry_id": first})
    second = join(full, 2, user)["waitlist_entry_id"]
    assert second != first


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("BatchGetWaitEstimates", {"merchant_id": "nobody", "party_size": [2]}),
        (
            "CreateWaitlistEntry",
            {"merchant_id": "nobody", "party_size": 2, "user_information": {"user_id": "u"}},
        ),
        ("CreateWaitlistEntry", {"merchant_id": MARLOWES, "party_size": 2}),
        ("GetWaitlistEntry", {"waitlist_entry_id": "wl-0000000000000000"}),
        ("GetWaitlistEntry", {}),
        ("DeleteWaitlistEntry", {}),
    ],
)
def test_waitlist_calls_with_an_unknown_merchant_or_entry_are_400(
    quiet: ServerProcess, name: str, body: dict[str, Any]
) -> None:
    assert_bad_arguments(post(quiet, name, body))


def test_deleting_a_waitlist_entry_that_does_not_exist_is_404(quiet: ServerProcess) -> None:
    reply = post(quiet, "DeleteWaitlistEntry", {"waitlist_entry_id": "wl-0000000000000000"})
    assert reply.status_code == 404, reply.text
    assert set(reply.json()) == {"error"}


# -- GetWaitlistEntry and DeleteWaitlistEntry ------------------------------------------------


def test_a_new_entry_counts_the_parties_ahead_of_it_not_itself(dinner: ServerProcess) -> None:
    fill_floor(dinner)
    quoted = estimates(dinner, [2])["wait_estimate"][0]["wait_length"]
    first = join(dinner, 2)["waitlist_entry_id"]
    second = join(dinner, 2)["waitlist_entry_id"]
    mine = entry(dinner, first)["wait_estimate"]["wait_length"]
    assert mine["parties_ahead_count"] == 0
    # Its estimate is its own: what it was told before joining, not one behind itself.
    assert mine["estimated_seat_time_range"] == quoted["estimated_seat_time_range"]
    behind = entry(dinner, second)["wait_estimate"]["wait_length"]
    assert behind["parties_ahead_count"] == 1
    start = behind["estimated_seat_time_range"]["start_seconds"]
    assert start > mine["estimated_seat_time_range"]["start_seconds"]


def test_deleting_a_seated_entry_says_it_cannot_and_changes_nothing(
    dinner: ServerProcess,
) -> None:
    tables = fill_floor(dinner)
    entry_id = join(dinner, 2)["waitlist_entry_id"]
    two_top = next(t for t, party in tables.items() if party == "fill-4")
    host_post(dinner, f"/tables/{two_top}/free")
    answer = v3(dinner, "DeleteWaitlistEntry", {"waitlist_entry_id": entry_id})
    assert_failure(answer, "CAUSE_UNSPECIFIED", "waitlist_business_logic_failure")
    assert "seated" in answer["waitlist_business_logic_failure"]["description"]
    assert entry(dinner, entry_id)["waitlist_entry_state"] == "SEATED"
    assert board(dinner)["tables"][two_top] == entry_id


def test_a_waiting_entry_is_seated_when_a_table_is_freed(dinner: ServerProcess) -> None:
    tables = fill_floor(dinner)
    entry_id = join(dinner, 2)["waitlist_entry_id"]
    two_top = next(t for t, party in tables.items() if party == "fill-4")
    host_post(dinner, f"/tables/{two_top}/free")
    found = entry(dinner, entry_id)
    assert found["waitlist_entry_state"] == "SEATED"
    assert found["waitlist_entry_state_times"] == {
        "created_time_seconds": DINNER_SEC,
        "seated_time_seconds": DINNER_SEC,
    }
    assert board(dinner)["tables"][two_top] == entry_id


def test_deleting_a_waitlist_entry_cancels_it_and_takes_it_off_the_board(
    full: ServerProcess,
) -> None:
    entry_id = join(full, 2)["waitlist_entry_id"]
    assert v3(full, "DeleteWaitlistEntry", {"waitlist_entry_id": entry_id}) == {}
    assert entry_id not in board(full)["waiting"]
    found = entry(full, entry_id)
    assert found["waitlist_entry_state"] == "CANCELED"
    assert found["waitlist_entry_state_times"] == {
        "created_time_seconds": DINNER_SEC,
        "canceled_time_seconds": DINNER_SEC,
    }
    assert "wait_estimate" not in found
    assert v3(full, "DeleteWaitlistEntry", {"waitlist_entry_id": entry_id}) == {}


def test_a_resize_that_echoes_the_old_duration_is_moved_to_the_new_turn_time(
    server: ServerProcess,
) -> None:
    start = sec(14, "19:30")
    booking_id = booked(server, start, 2)
    answer = update(
        server,
        {
            "booking_id": booking_id,
            "slot": {
                "start_sec": start,
                "duration_sec": duration(2),
                "resources": {"party_size": 4},
            },
        },
    )
    assert answer["booking"]["slot"]["resources"]["party_size"] == 4
    assert answer["booking"]["slot"]["duration_sec"] == duration(4)
    assert status(server, booking_id) == "CONFIRMED"


def test_an_update_asking_only_for_another_duration_fails_and_changes_nothing(
    server: ServerProcess,
) -> None:
    """A booking's duration is the restaurant's turn for its party size: a new duration_sec
    alone was answered 200 with the booking unchanged, which the partner took for done."""
    start = sec(14, "18:00")
    user = new_user()
    booking_id = booked(server, start, 2, user)
    longer = {"booking_id": booking_id, "slot": {"duration_sec": str(duration(6))}}
    answer = update(server, longer)
    assert_failure(answer, "SLOT_UNAVAILABLE")
    assert f"duration_sec {duration(2)}" in answer["booking_failure"]["description"]
    [listed] = bookings_of(server, user)
    assert listed["slot"]["duration_sec"] == duration(2)
    assert status(server, booking_id) == "CONFIRMED"


def test_an_update_echoing_the_bookings_own_duration_answers_the_booking_unchanged(
    server: ServerProcess,
) -> None:
    start = sec(14, "18:30")
    booking_id = booked(server, start, 2)
    same = update(server, {"booking_id": booking_id, "slot": {"duration_sec": duration(2)}})
    assert same["booking"]["slot"]["duration_sec"] == duration(2)
    assert same["booking"]["slot"]["start_sec"] == start
    assert status(server, booking_id) == "CONFIRMED"


# -- the floor's truth (issue #11) -------------------------------------------------------------


@pytest.fixture
def full_floor(tmp_path: Path) -> Iterator[ServerProcess]:
    """Friday 18:00 with walk-ins at all six tables."""
    with running_server(tmp_path / "hoststand.db") as running:
        for i, size in enumerate((4, 2, 6, 2, 4, 4)):
            reply = requests.post(
                f"{running.base}{HOST}/walk-ins",
                json={"size": size, "party_id": f"W{i}"},
                headers=HOST_AUTH,
                timeout=TIMEOUT,
            )
            assert reply.status_code == 200 and reply.json()["result"].startswith("seated")
        yield running


def test_a_partner_is_not_offered_a_table_that_walk_ins_are_eating_at(
    full_floor: ServerProcess,
) -> None:
    soon = sec(4, "18:15")
    assert not available(full_floor, soon, 4)
    assert_failure(create(full_floor, soon, 4), "SLOT_UNAVAILABLE")
    # The parties of 4 keep their tables 70 minutes: from 19:15 a party of 4 can book.
    assert not available(full_floor, sec(4, "19:00"), 4)
    assert available(full_floor, sec(4, "19:15"), 4)
    assert booked(full_floor, sec(4, "19:15"), 4)


def test_a_partner_cannot_book_beyond_the_horizon(server: ServerProcess) -> None:
    far = int((NOW + timedelta(days=50)).replace(hour=19, minute=0).timestamp())
    assert not available(server, far, 2)
    assert_failure(create(server, far, 2), "SLOT_UNAVAILABLE")


def test_state_times_are_never_before_the_entry_was_created(tmp_path: Path) -> None:
    # The clock stands 30 s into a minute: the entry is created then, to the second, and
    # seated in the same minute, which the engine keeps whole.
    with running_server(tmp_path / "hoststand.db", DINNER + timedelta(seconds=30)) as server:
        tables = fill_floor(server)
        entry_id = join(server, 2)["waitlist_entry_id"]
        host_post(server, f"/tables/{next(t for t, p in tables.items() if p == 'fill-4')}/free")
        times = entry(server, entry_id)["waitlist_entry_state_times"]
    assert times["created_time_seconds"] == DINNER_SEC + 30
    assert times["seated_time_seconds"] >= times["created_time_seconds"]


@pytest.mark.parametrize(
    "slot_change", [{"start_sec": "0"}, {"resources": {"party_size": 0}}], ids=["start", "size"]
)
def test_a_zero_start_or_party_size_in_update_booking_is_a_bad_argument(
    server: ServerProcess, slot_change: dict[str, Any]
) -> None:
    booking_id = booked(server, sec(24, "19:00"), 2)
    reply = post(
        server, "UpdateBooking", {"booking": {"booking_id": booking_id, "slot": slot_change}}
    )
    assert_bad_arguments(reply)
    status = v3(server, "GetBookingStatus", {"booking_id": booking_id})
    assert status["booking_status"] == "CONFIRMED"


def test_the_guests_request_name_and_phone_reach_the_hosts_list(server: ServerProcess) -> None:
    body = {
        "slot": slot(sec(24, "20:30"), 2),
        "user_information": {
            "user_id": new_user(),
            "given_name": "Ada",
            "family_name": "Lovelace",
            "telephone": "+44 20 7946 0000",
        },
        "idempotency_token": new_token(),
        "additional_request": "a table by the window, one guest in a wheelchair",
    }
    booking_id = v3(server, "CreateBooking", body)["booking"]["booking_id"]
    reply = requests.get(
        f"{server.base}{HOST}/reservations",
        params={"date": "2026-12-24"},
        headers=HOST_AUTH,
        timeout=TIMEOUT,
    )
    rows = {row["reservation_id"]: row for row in reply.json()["reservations"]}
    row = rows[booking_id]
    assert (row["name"], row["phone"]) == ("Ada Lovelace", "+44 20 7946 0000")
    assert row["notes"] == "a table by the window, one guest in a wheelchair"
