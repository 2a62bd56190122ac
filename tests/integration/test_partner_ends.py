"""A booking partner's integration engineer against a real `hoststand serve` on 127.0.0.1,
the loose ends of the partner audit (tests/integration/test_partner_audit.py): every error
says what to send instead, agrees across routes, and changes nothing."""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import requests

from feed.service.signing import HEADER, sign
from tests.integration.postgres import BACKENDS, database
from tests.integration.server_process import (
    HOST_TOKENS,
    NOW_T,
    SAMPLES,
    SECRETS,
    ServerProcess,
    booking_event,
    running_server,
    signed_post,
    start_server,
)
from tests.integration.test_partner_audit import post, store_rows
from tests.integration.test_partner_v3 import (
    BASIC,
    HOST,
    HOST_AUTH,
    MARLOWES,
    booked,
    sec,
    slot,
    v3,
)


@pytest.fixture(scope="module", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """One server per store (SQLite, PostgreSQL); each test uses its own users and slots."""
    workdir = tmp_path_factory.mktemp("ends")
    with (
        database(request.param, workdir, "ends") as db,
        running_server(db, workdir=workdir) as running,
    ):
        yield running


def user() -> dict[str, str]:
    return {"user_id": f"u-{uuid.uuid4().hex}", "given_name": "Ada"}


def host_list(server: ServerProcess, day: str = "2026-12-12") -> list[dict[str, Any]]:
    """The host's reservations list of `day`."""
    reply = requests.get(
        f"{server.base}{HOST}/reservations", params={"date": day}, headers=HOST_AUTH, timeout=10
    )
    assert reply.status_code == 200, reply.text
    rows: list[dict[str, Any]] = reply.json()["reservations"]
    return rows


def webhook(server: ServerProcess, **data: Any) -> requests.Response:
    event = booking_event(f"evt-{uuid.uuid4().hex}", **data)
    return signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event)


# -- a party size below 1 --------------------------------------------------------------------

BOUND = "must be from 1 to 10 (the party sizes Marlowe's Kitchen takes online), not"


def test_a_party_size_below_one_is_told_the_sizes_taken_on_every_route(
    server: ServerProcess,
) -> None:
    """-1 was told "greater than or equal to 0", where CreateBooking refuses 0 (and a
    webhook's 21 "less than or equal to 20"): bounds no booking keeps. Every partner route
    now says the sizes the restaurant takes online, 1 to 10, for the plain lookup reader
    and pydantic's alike, and the waitlist's BELOW_MIN_PARTY_SIZE too; nothing is written."""
    booking_id = booked(server, sec(12, "12:30"), 2)
    before = store_rows(server)
    for size in (-1, 0, "-1", "0"):
        for key in ("party_size", "partySize"):  # the plain lookup reader, then pydantic
            if size in (0, "0"):
                continue  # proto3's unset in a lookup: that slot is not available (below)
            lookup = {
                "merchant_id": MARLOWES,
                "slot_time": [{"start_sec": sec(12, "19:00"), "resource_ids": {key: size}}],
            }
            reply = post(server, "BatchAvailabilityLookup", lookup)
            assert reply.status_code == 400, reply.text
            assert reply.json()["error"]["message"] == (
                f"slot_time.0.resource_ids.party_size {BOUND} {size}"
            )
        create = {"slot": slot(sec(12, "19:00"), 2), "user_information": user()}
        create["slot"]["resources"] = {"party_size": size}
        reply = post(server, "CreateBooking", create)
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["message"] == f"slot.resources.party_size {BOUND} {size}"
        change = {"booking_id": booking_id, "slot": {"resources": {"party_size": size}}}
        reply = post(server, "UpdateBooking", {"booking": change})
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["message"] == f"slot.resources.party_size {BOUND} {size}"
    for size in (-1, 0, 11, 21, 40):  # 40: 'bad party size' now, not 'invalid request'
        reply = webhook(server, party_size=size, start="2026-12-12T19:00:00+00:00")
        assert reply.status_code == 422, reply.text
        assert reply.json()["error"] == {
            "code": "bad party size",
            "message": f"data.party_size {BOUND} {size}",
        }
    entry = {"merchant_id": MARLOWES, "party_size": -1, "user_information": user()}
    below = v3(server, "CreateWaitlistEntry", entry)["waitlist_business_logic_failure"]
    assert below == {"cause": "BELOW_MIN_PARTY_SIZE", "description": f"party_size {BOUND} -1"}
    assert store_rows(server) == before
    # A size above the online limit is a slot we do not publish, and 0 (proto3's unset) a
    # size left out: not available, each slot answered, not 400.
    lookup = {
        "merchant_id": MARLOWES,
        "slot_time": [
            {"start_sec": sec(12, "19:00"), "resource_ids": {"party_size": size}}
            for size in (1001, 0, "0")
        ],
    }
    answers = v3(server, "BatchAvailabilityLookup", lookup)["slot_time_availability"]
    assert [a["available"] for a in answers] == [False, False, False]
    failed = v3(
        server, "CreateBooking", {"slot": slot(sec(12, "19:00"), 1001), "user_information": user()}
    )
    assert failed["booking_failure"]["cause"] == "SLOT_UNAVAILABLE", failed
    assert "parties of 1 to 10, not 1001" in failed["booking_failure"]["description"]
    assert store_rows(server) == before


# -- a start of 0 ------------------------------------------------------------------------------


def test_a_start_of_zero_is_400_for_create_booking_as_for_update_booking(
    server: ServerProcess,
) -> None:
    """start_sec 0 (proto3's unset: a client that never filled it in) was SLOT_UNAVAILABLE
    from CreateBooking, a business failure about a time nobody asked for, and 400 from
    UpdateBooking. Both say it is a bad argument now; nothing is written. A real time in the
    past is still SLOT_UNAVAILABLE from both."""
    booking_id = booked(server, sec(12, "13:00"), 2)
    before = store_rows(server)
    for start in (0, "0"):
        body = {"slot": {**slot(sec(12, "19:00"), 2), "start_sec": start}}
        reply = post(server, "CreateBooking", {**body, "user_information": user()})
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["message"] == "slot.start_sec must be a Unix time, not 0"
        change = {"booking_id": booking_id, "slot": {"start_sec": start}}
        reply = post(server, "UpdateBooking", {"booking": change})
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["message"] == "slot.start_sec must be a Unix time, not 0"
    past = {"slot": {**slot(sec(12, "19:00"), 2), "start_sec": "1000"}, "user_information": user()}
    assert v3(server, "CreateBooking", past)["booking_failure"]["cause"] == "SLOT_UNAVAILABLE"
    moved = {"booking_id": booking_id, "slot": {"start_sec": "1000"}}
    changed = v3(server, "UpdateBooking", {"booking": moved})
    assert changed["booking_failure"]["cause"] == "SLOT_UNAVAILABLE"
    assert store_rows(server) == before


# -- a webhook's phone -------------------------------------------------------------------------


def test_a_webhook_phone_the_host_cannot_call_is_422(server: ServerProcess) -> None:
    """data.phone is the number the host calls the guest on. "call me" was booked and shown
    to the host as the guest's phone. The webhook says so now and books nothing. A national
    number is a number the restaurant's phone dials: booked, kept as written (v3's
    telephone, the partner format's, stays E.164). (5 KB of text: 50 characters at most.)"""
    before = store_rows(server)
    for phone, said in (
        ("call me", "a telephone number the host can call"),
        ("12345", "6 to 15 digits"),
        ("+44 (0)20 7946 0000", "national trunk prefix"),
        ("+0 20 7946 0000", "E.164"),
        ("9" * 5000, "at most 50 characters"),
    ):
        reply = webhook(server, party_size=2, start="2026-12-12T19:00:00+00:00", phone=phone)
        assert reply.status_code == 422, reply.text
        error = reply.json()["error"]
        assert error["code"] == "invalid request", error
        assert error["message"].startswith("data.phone: ") and said in error["message"], error
    for phone, said in (
        ("call me", "E.164"),
        ("020 7946 0000", "E.164"),
        ("+44 (0)20 7946 0000", "national trunk prefix"),
        ("9" * 5000, "at most 50 characters"),
    ):
        v3_body = {
            "slot": slot(sec(12, "19:00"), 2),
            "user_information": {**user(), "telephone": phone},
        }
        reply = post(server, "CreateBooking", v3_body)
        assert reply.status_code == 400, reply.text
        assert said in reply.json()["error"]["message"], reply.text
    assert store_rows(server) == before
    for start, phone in (
        ("2026-12-12T19:00:00+00:00", "+44 20 7946 0000"),
        ("2026-12-12T19:15:00+00:00", "020 7946 0000"),
    ):
        made = webhook(server, party_size=2, start=start, phone=phone)
        assert made.status_code == 200, made.text
    listed = [r.get("phone") for r in host_list(server)]
    assert "020 7946 0000" in listed and "+44 20 7946 0000" in listed, listed


# -- a compressed body -------------------------------------------------------------------------


def test_a_compressed_body_is_415_naming_content_encoding_on_every_route(
    server: ServerProcess,
) -> None:
    """A gzip body was refused as "not JSON: not UTF-8", which sent an integration engineer
    to look at the JSON rather than the header. Every route that takes a body (v3, webhooks,
    the host API, the operator's reload) says the encoding is not accepted, 415 with
    Accept-Encoding: identity, and nothing is written; identity is the body as it is."""
    before = store_rows(server)
    create = {"slot": slot(sec(12, "20:00"), 2), "user_information": user()}
    event = booking_event(f"evt-{uuid.uuid4().hex}", 2, "2026-12-12T20:00:00+00:00")
    host = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
    calls: list[tuple[str, Any, dict[str, str], Any]] = [
        ("/v3/CreateBooking", create, {}, BASIC),
        ("/v3/BatchAvailabilityLookup", {"merchant_id": MARLOWES, "slot_time": []}, {}, BASIC),
        ("/webhooks/tablefinder", event, {}, None),
        (f"{HOST}/reservations", {"party_size": 2, "start": "2026-12-12T20:00"}, host, None),
        (f"{HOST}/walk-ins", {"size": 2}, host, None),
        (
            "/api/v1/admin/reload",
            {},
            {"Authorization": "Bearer sample-admin-token-change-me"},
            None,
        ),
    ]
    for path, body, headers, auth in calls:
        for coding in ("gzip", "GZIP", "deflate", "br", "identity, gzip"):
            data = json.dumps(body).encode()
            if path.startswith("/webhooks/"):
                headers = {HEADER: sign(SECRETS["tablefinder"], NOW_T, data)}
            reply = requests.post(
                f"{server.base}{path}",
                data=gzip.compress(data),
                headers={**headers, "Content-Encoding": coding},
                auth=auth,
                timeout=10,
            )
            assert reply.status_code == 415, (path, coding, reply.text)
            assert reply.headers["Accept-Encoding"] == "identity"
            error = reply.json()["error"]
            assert error["code"] == "unsupported content encoding", error
            assert error["message"] == (
                f"Content-Encoding {coding!r} is not accepted: send the body uncompressed"
                " (no Content-Encoding, or identity)"
            )
    assert store_rows(server) == before
    reply = requests.post(
        f"{server.base}/v3/CreateBooking",
        json=create,
        headers={"Content-Encoding": "identity"},
        auth=BASIC,
        timeout=10,
    )
    assert reply.status_code == 200 and "booking" in reply.json(), reply.text


# -- a trailing slash ----------------------------------------------------------------------------


def test_a_write_to_a_path_with_a_trailing_slash_is_answered_as_the_path_without_it(
    server: ServerProcess,
) -> None:
    """POST /v3/CreateBooking/ got a 307 to the path without the slash, which a partner's
    client need not follow for a POST (many answer it as a failure, or follow it as a GET):
    the booking was neither made nor refused. It is answered as the route without the slash
    now, for v3, webhooks and the host API alike; a GET keeps its redirect."""
    create = {"slot": slot(sec(12, "20:15"), 2), "user_information": user()}
    reply = requests.post(
        f"{server.base}/v3/CreateBooking/",
        json=create,
        auth=BASIC,
        allow_redirects=False,
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    booking_id = reply.json()["booking"]["booking_id"]
    status = requests.post(
        f"{server.base}/v3/GetBookingStatus//",
        json={"booking_id": booking_id},
        auth=BASIC,
        allow_redirects=False,
        timeout=10,
    )
    assert status.status_code == 200 and status.json()["booking_status"] == "CONFIRMED"
    data = json.dumps(
        booking_event(f"evt-{uuid.uuid4().hex}", 2, "2026-12-12T20:15:00+00:00")
    ).encode()
    headers = {HEADER: sign(SECRETS["tablefinder"], NOW_T, data)}
    reply = requests.post(
        f"{server.base}/webhooks/tablefinder/",
        data=data,
        headers=headers,
        allow_redirects=False,
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    host = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
    phone = {"party_size": 2, "start": "2026-12-12T20:15", "name": "Bo"}
    reply = requests.post(
        f"{server.base}{HOST}/reservations/",
        json=phone,
        headers=host,
        allow_redirects=False,
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    cancelled = requests.post(
        f"{server.base}{HOST}/reservations/{reply.json()['reservation_id']}/cancel/",
        headers=host,
        allow_redirects=False,
        timeout=10,
    )
    assert cancelled.status_code == 200, cancelled.text
    unknown = requests.post(
        f"{server.base}/v3/Nowhere/", json={}, auth=BASIC, allow_redirects=False, timeout=10
    )
    assert unknown.status_code == 404, unknown.text
    page = requests.get(f"{server.base}/host/{MARLOWES}/", allow_redirects=False, timeout=10)
    assert page.status_code == 307, page.text


# -- the waitlist and max_online_party_size ----------------------------------------------------


def test_the_waitlist_stops_at_max_online_party_size_as_bookings_do(tmp_path: Path) -> None:
    """A restaurant whose parties above 4 book by phone (max_online_party_size = 4) had a
    partner's party of 6 joining its queue online and estimates for it, where a booking
    for 6 is refused. The waitlist stops at the same size now (ABOVE_MAX_PARTY_SIZE, the size
    left out of the estimates), adding nobody; the host still adds a party of 6."""
    source = (SAMPLES / "marlowes.toml").read_text(encoding="utf-8")
    config = tmp_path / "marlowes.toml"
    config.write_text(
        source.replace("max_party_size = 10\n", "max_party_size = 10\nmax_online_party_size = 4\n"),
        encoding="utf-8",
    )
    fresh = start_server(tmp_path / "hoststand.db", configs=[config])
    try:
        host = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
        for size in (4, 2, 6, 2, 4, 4):  # every table taken: parties wait
            walked = requests.post(
                f"{fresh.base}{HOST}/walk-ins", json={"size": size}, headers=host, timeout=10
            )
            assert walked.status_code == 200, walked.text
        before = store_rows(fresh, date(2026, 12, 4))
        estimates = v3(
            fresh,
            "BatchGetWaitEstimates",
            {"merchant_id": MARLOWES, "party_size": [2, 4, 5, 6]},
        )
        assert estimates["waitlist_status"] == "OPEN", estimates
        assert [e["party_size"] for e in estimates["wait_estimate"]] == [2, 4]
        entry = {"merchant_id": MARLOWES, "party_size": 6, "user_information": user()}
        refused = v3(fresh, "CreateWaitlistEntry", entry)["waitlist_business_logic_failure"]
        assert refused == {
            "cause": "ABOVE_MAX_PARTY_SIZE",
            "description": "parties above 4 join the waitlist at Marlowe's Kitchen, not online",
        }
        assert store_rows(fresh, date(2026, 12, 4)) == before
        four = v3(fresh, "CreateWaitlistEntry", {**entry, "party_size": 4})
        assert "waitlist_entry_id" in four, four
        walked = requests.post(
            f"{fresh.base}{HOST}/walk-ins", json={"size": 6}, headers=host, timeout=10
        )
        assert walked.status_code == 200, walked.text
    finally:
        fresh.stop()


# -- a lookup's resources ----------------------------------------------------------------------


def test_a_lookup_naming_its_party_size_in_resources_is_400_not_all_unavailable(
    server: ServerProcess,
) -> None:
    """A SlotTime calls its resources resource_ids; a partner sending a booking's name for
    it (resources) had it ignored as an unknown field, so every slot read not available and
    the restaurant looked full. It is 400 naming the field now, in either spelling; a
    CreateBooking with resource_ids already names slot.resources.party_size."""
    for key in ("resources", "Resources"):
        slot_time = {"start_sec": str(sec(12, "19:00")), key: {"party_size": 2}}
        lookup = {"merchant_id": MARLOWES, "slot_time": [slot_time]}
        reply = post(server, "BatchAvailabilityLookup", lookup)
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["message"] == (
            "slot_time.0: Value error, a lookup's slot_time names its party size in"
            " resource_ids, not resources (a booking's slot calls it resources)"
        )
    fine = {"start_sec": str(sec(12, "19:00")), "resourceIds": {"partySize": 2}}
    answer = v3(server, "BatchAvailabilityLookup", {"merchantId": MARLOWES, "slotTime": [fine]})
    assert answer["slot_time_availability"][0]["available"] is True
    create = {"slot": {**slot(sec(12, "19:00"), 2)}, "user_information": user()}
    create["slot"]["resource_ids"] = create["slot"].pop("resources")
    reply = post(server, "CreateBooking", create)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["message"] == "slot.resources.party_size is required"


def test_the_api_document_lists_the_415_of_a_compressed_body(server: ServerProcess) -> None:
    paths = requests.get(f"{server.base}/openapi.json", timeout=10).json()["paths"]
    for path in ("/v3/CreateBooking", "/webhooks/{partner_id}", f"{HOST}/walk-ins"):
        template = path.replace(MARLOWES, "{merchant_id}")
        assert "415" in paths[template]["post"]["responses"], template


# -- what is wrong with a webhook's signature header ---------------------------------------------


def test_a_webhook_signature_header_that_signs_nothing_now_says_what_is_wrong(
    server: ServerProcess,
) -> None:
    """Every refused signature was "unknown partner or bad signature": a sender whose clock
    runs six minutes off, or who sends no header or no t=, could not tell what to fix. What
    is wrong with the header itself is said now, the same for every partner id (known or
    not, so nothing is told of which exist); a wrong secret or an unknown partner with a
    usable header still says only "unknown partner or bad signature". Nothing is written."""
    before = store_rows(server)
    data = json.dumps(
        booking_event(f"evt-{uuid.uuid4().hex}", 2, "2026-12-12T21:00:00+00:00")
    ).encode()
    stale = sign(SECRETS["tablefinder"], NOW_T - 360, data)
    cases = [
        ({}, "no Hoststand-Signature header: sign each request, Hoststand-Signature: t="),
        ({HEADER: "v1=abc"}, "Hoststand-Signature needs one t=<unix seconds>: t=<unix"),
        ({HEADER: stale}, f"Hoststand-Signature t={NOW_T - 360} is 360 seconds from our clock"),
    ]
    for partner in ("tablefinder", "nobody"):
        for headers, said in cases:
            reply = requests.post(
                f"{server.base}/webhooks/{partner}", data=data, headers=headers, timeout=10
            )
            assert reply.status_code == 401, reply.text
            error = reply.json()["error"]
            assert error["code"] == "unauthorized" and error["message"].startswith(said), error
    assert "check the sender's clock" in error["message"]
    for partner, secret in (("tablefinder", SECRETS["dinerly"]), ("nobody", "x")):
        headers = {HEADER: sign(secret, NOW_T, data)}
        reply = requests.post(
            f"{server.base}/webhooks/{partner}", data=data, headers=headers, timeout=10
        )
        assert reply.status_code == 401, reply.text
        assert reply.json()["error"]["message"] == "unknown partner or bad signature"
    assert store_rows(server) == before


# -- a start in milliseconds -------------------------------------------------------------------


def test_a_start_in_milliseconds_is_told_it_is_not_seconds(server: ServerProcess) -> None:
    """Many clients write times in milliseconds; such a start_sec was told "less than or
    equal to 100000000000", a bound with no reason. It says seconds were expected now, in a
    lookup (either reader) and a booking alike, as a webhook's start does; nothing is
    written."""
    before = store_rows(server)
    millis = sec(12, "19:00") * 1000
    for start in (millis, str(millis)):
        for key in ("start_sec", "startSec"):
            lookup = {
                "merchant_id": MARLOWES,
                "slot_time": [{key: start, "resource_ids": {"party_size": 2}}],
            }
            reply = post(server, "BatchAvailabilityLookup", lookup)
            assert reply.status_code == 400, reply.text
            assert reply.json()["error"]["message"] == (
                f"slot_time.0.start_sec: Value error, {millis} is not a Unix time in seconds"
                " (milliseconds?)"
            )
        create = {"slot": {**slot(sec(12, "19:00"), 2), "start_sec": start}}
        reply = post(server, "CreateBooking", {**create, "user_information": user()})
        assert reply.status_code == 400, reply.text
        assert "is not a Unix time in seconds (milliseconds?)" in reply.json()["error"]["message"]
    assert store_rows(server) == before
