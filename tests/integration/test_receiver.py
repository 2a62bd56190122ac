"""The receiver through a real `hoststand serve` on 127.0.0.1: signed partner webhooks, the
host tablet's API and the error shape, with the server's clock pinned at Friday 18:00 GMT.
The tests on one shared server (signatures, idempotency, partner isolation, refusals) run on
both stores; those that need a fresh floor run on SQLite."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import closing
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import requests

from feed.service.signing import sign
from store import open_store
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
    signed_post,
    start_server,
)

MARLOWES = "marlowes-kitchen"
TABLEFINDER = "tablefinder"
DINERLY = "dinerly"
HOST = f"/api/v1/restaurants/{MARLOWES}"
AUTH = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
UNSIGNED_DAY = date(2026, 12, 10)  # only refused deliveries ever name this day


def at(day: int, hhmm: str) -> str:
    """A December 2026 instant in London (GMT, so +00:00)."""
    return f"2026-12-{day:02d}T{hhmm}:00+00:00"


def new_id() -> str:
    return f"evt-{uuid.uuid4().hex}"


def post(
    server: ServerProcess,
    event: dict[str, Any] | bytes,
    partner: str = TABLEFINDER,
    t: int = NOW_T,
) -> requests.Response:
    return signed_post(server.base, partner, SECRETS[partner], event, t)


def book(server: ServerProcess, size: int, start: str, partner: str = TABLEFINDER) -> str:
    reply = post(server, booking_event(new_id(), size, start), partner)
    assert reply.status_code == 200, reply.text
    return str(reply.json()["reservation_id"])


def assert_error(reply: requests.Response, status: int, code: str) -> None:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


def host_get(server: ServerProcess, path: str, **params: Any) -> requests.Response:
    return requests.get(f"{server.base}{HOST}{path}", params=params, headers=AUTH, timeout=TIMEOUT)


def host_post(server: ServerProcess, path: str, body: Any = None) -> requests.Response:
    return requests.post(f"{server.base}{HOST}{path}", json=body, headers=AUTH, timeout=TIMEOUT)


def listed(server: ServerProcess, day: date) -> dict[str, dict[str, Any]]:
    """The host's reservation list for `day`, by reservation id."""
    reply = host_get(server, "/reservations", date=day.isoformat())
    assert reply.status_code == 200, reply.text
    return {row["reservation_id"]: row for row in reply.json()["reservations"]}


def reserves(server: ServerProcess, day: date, reservation_id: str) -> int:
    """How many reserve entries of the day's stored log book `reservation_id`."""
    with closing(open_store(server.db)) as store:
        entries = store.entries(MARLOWES, day)
    return sum(
        1 for e in entries if e.operation[0] == "reserve" and e.operation[2] == reservation_id
    )


def assert_nothing_written(server: ServerProcess, event_id: str) -> None:
    with closing(open_store(server.db)) as store:
        assert store.entries(MARLOWES, UNSIGNED_DAY) == []
        assert store.recall(f"event:{TABLEFINDER}", event_id) is None
    assert listed(server, UNSIGNED_DAY) == {}


@pytest.fixture(scope="module", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """One server per store for the tests that each use their own event ids, days and slots."""
    workdir = tmp_path_factory.mktemp("receiver")
    with (
        database(request.param, workdir, "receiver") as db,
        running_server(db, workdir=workdir) as running,
    ):
        yield running


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server on an empty database, for the host tests that depend on the whole floor."""
    with running_server(tmp_path / "hoststand.db") as running:
        yield running


# -- signatures -----------------------------------------------------------------------------


def unsigned_booking() -> tuple[str, bytes]:
    event_id = new_id()
    start = f"{UNSIGNED_DAY.isoformat()}T19:00:00+00:00"
    return event_id, json.dumps(booking_event(event_id, 2, start)).encode()


def test_a_webhook_without_a_signature_is_refused_with_401_and_writes_nothing(
    server: ServerProcess,
) -> None:
    event_id, body = unsigned_booking()
    reply = requests.post(f"{server.base}/webhooks/{TABLEFINDER}", data=body, timeout=TIMEOUT)
    assert_error(reply, 401, "unauthorized")
    assert_nothing_written(server, event_id)


def test_a_webhook_signed_with_another_secret_is_refused_with_401_and_writes_nothing(
    server: ServerProcess,
) -> None:
    event_id, body = unsigned_booking()
    reply = signed_post(server.base, TABLEFINDER, SECRETS[DINERLY], body, NOW_T)
    assert_error(reply, 401, "unauthorized")
    assert_nothing_written(server, event_id)


def test_a_webhook_whose_body_was_changed_after_signing_is_refused_with_401(
    server: ServerProcess,
) -> None:
    event_id, body = unsigned_booking()
    signature = sign(SECRETS[TABLEFINDER], NOW_T, body)
    tampered = body.replace(b'"party_size": 2', b'"party_size": 4')
    reply = requests.post(
        f"{server.base}/webhooks/{TABLEFINDER}",
        data=tampered,
        headers={"Hoststand-Signature": signature},
        timeout=TIMEOUT,
    )
    assert_error(reply, 401, "unauthorized")
    assert_nothing_written(server, event_id)


def test_a_signature_more_than_five_minutes_old_is_refused_with_401_and_writes_nothing(
    server: ServerProcess,
) -> None:
    event_id, body = unsigned_booking()
    assert_error(post(server, body, t=NOW_T - 301), 401, "unauthorized")
    assert_nothing_written(server, event_id)


def test_a_signature_more_than_five_minutes_in_the_future_is_refused_with_401(
    server: ServerProcess,
) -> None:
    event_id, body = unsigned_booking()
    assert_error(post(server, body, t=NOW_T + 301), 401, "unauthorized")
    assert_nothing_written(server, event_id)


def test_a_signature_exactly_five_minutes_old_is_still_accepted(server: ServerProcess) -> None:
    reply = post(server, booking_event(new_id(), 2, at(5, "17:30")), t=NOW_T - 300)
    assert reply.status_code == 200, reply.text


def test_a_webhook_for_an_unknown_partner_is_refused_with_401_and_writes_nothing(
    server: ServerProcess,
) -> None:
    event_id, body = unsigned_booking()
    reply = signed_post(server.base, "nobody", SECRETS[TABLEFINDER], body, NOW_T)
    assert_error(reply, 401, "unauthorized")
    assert_nothing_written(server, event_id)


# -- bookings and idempotency ---------------------------------------------------------------


def test_a_valid_booking_gets_200_with_its_table_and_shows_in_the_host_list(
    server: ServerProcess,
) -> None:
    reply = post(server, booking_event(new_id(), 4, at(5, "18:00"), reservation_id="tf-1"))
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == "booked"
    assert body["merchant_id"] == MARLOWES
    assert body["party_size"] == 4
    assert body["start"] == "2026-12-05T18:00:00+00:00"
    assert body["tables"] == body["unit"].split("+")
    row = listed(server, date(2026, 12, 5))[body["reservation_id"]]
    assert row["status"] == "booked"
    assert row["tables"] == body["tables"]
    assert row["party_size"] == 4
    assert row["source"] == "partner"
    assert row["start"] == body["start"]


def test_a_start_in_unix_seconds_books_the_same_slot_as_its_iso_form(
    server: ServerProcess,
) -> None:
    start_sec = 1796506200  # 2026-12-05T21:30:00Z, the last seating
    reply = post(server, booking_event(new_id(), 2, start_sec))
    assert reply.status_code == 200, reply.text
    assert reply.json()["start"] == at(5, "21:30")
    assert reply.json()["start_sec"] == start_sec


def test_the_same_event_delivered_twice_gets_the_identical_reply_and_books_once(
    server: ServerProcess,
) -> None:
    event = booking_event(new_id(), 2, at(5, "18:30"))
    first = post(server, event)
    again = post(server, event, t=NOW_T + 60)  # a retry is signed afresh; the body is the same
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    assert reserves(server, date(2026, 12, 5), first.json()["reservation_id"]) == 1


def test_a_replayed_reply_is_byte_for_byte_the_first_reply(server: ServerProcess) -> None:
    # Partners compare deliveries; the stored reply must not come back with its keys reordered.
    event = booking_event(new_id(), 2, at(5, "18:45"))
    first = post(server, event)
    again = post(server, event)
    assert first.status_code == again.status_code == 200
    assert again.content == first.content


def test_a_refused_event_delivered_again_gets_the_same_refusal_even_after_the_slot_frees(
    server: ServerProcess,
) -> None:
    holder = book(server, 9, at(5, "20:00"))
    refused = booking_event(new_id(), 9, at(5, "20:00"))
    assert_error(post(server, refused), 409, "slot unavailable")
    cancelled = post(server, change_event(new_id(), "cancelled", holder))
    assert cancelled.status_code == 200, cancelled.text
    assert_error(post(server, refused), 409, "slot unavailable")


def test_an_event_id_reused_with_another_body_is_refused_with_422_and_books_nothing(
    server: ServerProcess,
) -> None:
    event_id = new_id()
    first = post(server, booking_event(event_id, 2, at(5, "19:30")))
    assert first.status_code == 200, first.text
    assert_error(post(server, booking_event(event_id, 2, at(5, "21:00"))), 422, "event id reused")
    starts = [row["start"] for row in listed(server, date(2026, 12, 5)).values()]
    assert at(5, "21:00") not in starts


def test_an_event_refused_for_its_data_keeps_nothing_so_the_corrected_event_books_under_its_id(
    server: ServerProcess,
) -> None:
    # Kept, the refusal spent the id on bad input: the partner's corrected event under the
    # same id was told "event id reused" and never booked.
    event_id = new_id()
    bad = booking_event(event_id, 2, "2026-12-05T18:30:00")  # no offset: which 18:30?
    assert_error(post(server, bad), 422, "invalid request")
    with closing(open_store(server.db)) as store:
        assert store.recall(f"event:{TABLEFINDER}", event_id) is None
    assert_error(post(server, bad), 422, "invalid request")  # refused again, as it is
    fixed = post(server, booking_event(event_id, 2, at(5, "18:30")))
    assert fixed.status_code == 200, fixed.text
    assert reserves(server, date(2026, 12, 5), fixed.json()["reservation_id"]) == 1


def test_event_ids_are_per_partner_so_two_partners_may_use_the_same_one(
    server: ServerProcess,
) -> None:
    event_id = new_id()
    mine = post(server, booking_event(event_id, 2, at(6, "17:30")), TABLEFINDER)
    theirs = post(server, booking_event(event_id, 2, at(6, "17:30")), DINERLY)
    assert mine.status_code == theirs.status_code == 200
    assert mine.json()["reservation_id"] != theirs.json()["reservation_id"]


# -- partner isolation ----------------------------------------------------------------------


def test_a_partner_cannot_cancel_another_partners_reservation(server: ServerProcess) -> None:
    theirs = book(server, 4, at(6, "18:00"), TABLEFINDER)
    assert_error(
        post(server, change_event(new_id(), "cancelled", theirs), DINERLY),
        404,
        "unknown reservation",
    )
    assert listed(server, date(2026, 12, 6))[theirs]["status"] == "booked"


def test_a_partner_cannot_check_in_another_partners_reservation(server: ServerProcess) -> None:
    theirs = book(server, 4, at(4, "18:15"), TABLEFINDER)  # check-in would be allowed now
    assert_error(
        post(server, change_event(new_id(), "checked_in", theirs), DINERLY),
        404,
        "unknown reservation",
    )
    assert listed(server, date(2026, 12, 4))[theirs]["status"] == "booked"


def test_a_partner_cannot_book_a_restaurant_it_is_not_allowed_to_use(
    server: ServerProcess,
) -> None:
    # The control: merch1 takes a booking from a partner that may use every restaurant.
    allowed = post(server, booking_event(new_id(), 4, "2026-12-05T18:00:00-08:00", "merch1"))
    assert allowed.status_code == 200, allowed.text
    refused = booking_event(new_id(), 4, "2026-12-05T18:15:00-08:00", "merch1")
    assert_error(post(server, refused, DINERLY), 404, "unknown merchant")


# -- the engine's refusals ------------------------------------------------------------------


def test_a_partner_can_check_in_its_reservation_within_fifteen_minutes_of_it(
    server: ServerProcess,
) -> None:
    rid = book(server, 2, at(4, "18:15"))
    reply = post(server, change_event(new_id(), "checked_in", rid))
    assert reply.status_code == 200, reply.text
    assert reply.json()["status"] == "seated"
    assert listed(server, date(2026, 12, 4))[rid]["status"] == "seated"


def test_checking_in_more_than_fifteen_minutes_early_is_refused_with_409_too_early(
    server: ServerProcess,
) -> None:
    rid = book(server, 2, at(7, "19:00"))
    reply = post(server, change_event(new_id(), "checked_in", rid))
    assert_error(reply, 409, "too early")
    assert "Monday 2026-12-07 19:00" in reply.json()["error"]["message"]
    assert listed(server, date(2026, 12, 7))[rid]["status"] == "booked"


def test_cancelling_a_cancelled_reservation_is_refused_with_409_not_active(
    server: ServerProcess,
) -> None:
    rid = book(server, 2, at(7, "19:30"))
    first = post(server, change_event(new_id(), "cancelled", rid))
    assert first.status_code == 200, first.text
    assert first.json()["status"] == "cancelled"
    assert_error(
        post(server, change_event(new_id(), "cancelled", rid)), 409, "reservation not active"
    )


def test_a_booking_for_a_full_slot_is_refused_with_409_slot_unavailable(
    server: ServerProcess,
) -> None:
    book(server, 9, at(7, "20:00"))  # T1+T3 is the only unit for nine
    assert_error(post(server, booking_event(new_id(), 9, at(7, "20:00"))), 409, "slot unavailable")


def test_a_booking_at_a_time_that_is_not_a_slot_is_refused_with_409(
    server: ServerProcess,
) -> None:
    assert_error(post(server, booking_event(new_id(), 2, at(7, "19:07"))), 409, "not a slot")


def test_a_booking_for_a_slot_that_has_started_is_refused_with_409(
    server: ServerProcess,
) -> None:
    assert_error(post(server, booking_event(new_id(), 2, at(4, "17:45"))), 409, "slot in the past")


def test_a_change_to_a_reservation_nobody_made_is_refused_with_404(
    server: ServerProcess,
) -> None:
    event = change_event(new_id(), "cancelled", "bk-0000000000000000")
    assert_error(post(server, event), 404, "unknown reservation")


# -- bad input ------------------------------------------------------------------------------


def test_a_body_that_is_not_json_is_refused_with_400(server: ServerProcess) -> None:
    assert_error(post(server, b'{"id": "x", "type": '), 400, "bad json")


@pytest.mark.parametrize(
    "event",
    [
        booking_event("typed-1", "four", at(8, "19:00")),  # type: ignore[arg-type]
        booking_event("typed-2", 4, at(8, "19:00")) | {"type": "reservation.eaten"},
        booking_event("typed-3", 4, at(8, "19:00")) | {"data": [4]},
        booking_event("typed-4", 4, "2026-12-08T19:00:00"),  # no offset
        {"type": "reservation.requested", "merchant_id": MARLOWES, "data": {}},
        ["not", "an", "object"],
    ],
    ids=[
        "size-string",
        "unknown-type",
        "data-list",
        "no-offset",
        "no-id",
        "list",
    ],
)
def test_a_body_with_wrong_types_is_refused_with_422_and_books_nothing(
    server: ServerProcess, event: Any
) -> None:
    reply = post(server, json.dumps(event).encode())
    assert_error(reply, 422, "invalid request")
    assert listed(server, date(2026, 12, 8)) == {}


@pytest.mark.parametrize("start", [10**20, "99999999999999999999"], ids=["number", "digits"])
def test_a_start_in_unix_seconds_past_any_date_is_refused_with_422_not_a_500(
    server: ServerProcess, start: int | str
) -> None:
    assert_error(post(server, booking_event(new_id(), 2, start)), 422, "invalid request")


def test_a_body_over_64_kib_is_refused_with_413(server: ServerProcess) -> None:
    event = booking_event(new_id(), 2, at(8, "19:00"), note="x" * (64 * 1024))
    assert_error(post(server, event), 413, "body too large")
    assert listed(server, date(2026, 12, 8)) == {}


def test_a_body_over_64_kib_sent_in_chunks_without_a_length_is_refused_with_413(
    server: ServerProcess,
) -> None:
    body = json.dumps(booking_event(new_id(), 2, at(8, "19:00"), note="x" * (64 * 1024))).encode()
    chunks = (body[i : i + 8192] for i in range(0, len(body), 8192))
    signature = sign(SECRETS[TABLEFINDER], NOW_T, body)
    reply = requests.post(
        f"{server.base}/webhooks/{TABLEFINDER}",
        data=chunks,
        headers={"Hoststand-Signature": signature},
        timeout=TIMEOUT,
    )
    assert_error(reply, 413, "body too large")


def test_a_booking_for_an_unknown_merchant_is_refused_with_404(server: ServerProcess) -> None:
    reply = post(server, booking_event(new_id(), 2, at(8, "19:00"), "nowhere"))
    assert_error(reply, 404, "unknown merchant")


def test_unknown_paths_and_methods_answer_in_the_error_shape(server: ServerProcess) -> None:
    missing = requests.get(f"{server.base}/nowhere", timeout=TIMEOUT)
    assert_error(missing, 404, "not found")
    wrong_method = requests.get(f"{server.base}/webhooks/{TABLEFINDER}", timeout=TIMEOUT)
    assert_error(wrong_method, 405, "method not allowed")
    bad_query = host_get(server, "/quote", size="many")
    assert_error(bad_query, 422, "invalid request")


# -- the host tablet ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-token-wrong-token"}, {"Authorization": "Basic x"}],
    ids=["missing", "wrong", "not-bearer"],
)
def test_the_host_api_refuses_a_missing_or_wrong_token_with_401(
    server: ServerProcess, headers: dict[str, str]
) -> None:
    base = f"{server.base}{HOST}"
    for reply in (
        requests.get(f"{base}/board", headers=headers, timeout=TIMEOUT),
        requests.get(f"{base}/reservations", headers=headers, timeout=TIMEOUT),
        requests.post(f"{base}/walk-ins", json={"size": 2}, headers=headers, timeout=TIMEOUT),
        requests.post(
            f"{base}/reservations",
            json={"party_size": 2, "start": "2026-12-08T19:00"},
            headers=headers,
            timeout=TIMEOUT,
        ),
    ):
        assert_error(reply, 401, "unauthorized")
    assert listed(server, date(2026, 12, 8)) == {}


def test_one_restaurants_token_does_not_open_another_restaurant(server: ServerProcess) -> None:
    headers = {"Authorization": f"Bearer {HOST_TOKENS['merch1']}"}
    reply = requests.get(f"{server.base}{HOST}/board", headers=headers, timeout=TIMEOUT)
    assert_error(reply, 401, "unauthorized")


def test_a_walk_in_is_seated_when_a_table_is_free(fresh: ServerProcess) -> None:
    reply = host_post(fresh, "/walk-ins", {"size": 2, "party_id": "w-ada"})
    assert reply.status_code == 200, reply.text
    assert reply.json()["result"] == "seated T2"
    assert reply.json()["operation"][0] == "walk_in"


def test_a_walk_in_is_queued_when_every_table_is_taken(fresh: ServerProcess) -> None:
    for i, size in enumerate([4, 2, 6, 2, 4, 4]):
        seated = host_post(fresh, "/walk-ins", {"size": size, "party_id": f"w-{i}"})
        assert seated.json()["result"].startswith("seated"), seated.text
    queued = host_post(fresh, "/walk-ins", {"size": 2, "party_id": "w-late"})
    assert queued.status_code == 200, queued.text
    assert queued.json()["result"] == "queued 1"


def test_freeing_a_table_seats_the_next_party_that_fits(fresh: ServerProcess) -> None:
    for i, size in enumerate([4, 2, 6, 2, 4, 4]):
        host_post(fresh, "/walk-ins", {"size": size, "party_id": f"w-{i}"})
    host_post(fresh, "/walk-ins", {"size": 2, "party_id": "w-late"})
    freed = host_post(fresh, "/tables/T2/free")
    assert freed.status_code == 200, freed.text
    assert freed.json()["result"] == ["w-late@T2"]
    assert_error(host_post(fresh, "/tables/T9/free"), 404, "unknown table")


def test_freeing_a_table_nobody_sits_at_is_refused_with_409(fresh: ServerProcess) -> None:
    assert_error(host_post(fresh, "/tables/T1/free"), 409, "table not occupied")


def test_the_board_shows_every_table_and_the_queue(fresh: ServerProcess) -> None:
    host_post(fresh, "/walk-ins", {"size": 2, "party_id": "w-ada"})
    reply = host_get(fresh, "/board")
    assert reply.status_code == 200, reply.text
    tables = {t: "free" for t in ("T1", "T2", "T3", "T4", "T5", "T6")} | {"T2": "w-ada"}
    assert reply.json()["result"] == {"tables": tables, "waiting": []}


def test_a_quote_on_an_empty_floor_is_no_wait(fresh: ServerProcess) -> None:
    reply = host_get(fresh, "/quote", size=4)
    assert reply.status_code == 200, reply.text
    assert reply.json()["result"] == 0


def test_a_waiting_party_can_leave_the_queue_once(fresh: ServerProcess) -> None:
    for i, size in enumerate([4, 2, 6, 2, 4, 4]):
        host_post(fresh, "/walk-ins", {"size": size, "party_id": f"w-{i}"})
    host_post(fresh, "/walk-ins", {"size": 2, "party_id": "w-late"})
    left = host_post(fresh, "/parties/w-late/leave")
    assert left.status_code == 200, left.text
    assert host_get(fresh, "/board").json()["result"]["waiting"] == []
    assert_error(host_post(fresh, "/parties/w-late/leave"), 409, "not waiting")
    assert_error(host_post(fresh, "/parties/w-nobody/leave"), 404, "unknown party")


def test_a_phone_reservation_can_be_checked_in_by_the_host(fresh: ServerProcess) -> None:
    booked = host_post(
        fresh,
        "/reservations",
        {"party_size": 4, "start": "2026-12-04T18:15", "name": "Grace", "phone": "+44 20 1"},
    )
    assert booked.status_code == 200, booked.text
    rid = booked.json()["reservation_id"]
    assert booked.json()["status"] == "booked"
    seated = host_post(fresh, f"/reservations/{rid}/check-in")
    assert seated.status_code == 200, seated.text
    assert seated.json() == {
        "reservation_id": rid,
        "status": "seated",
        "tables": booked.json()["tables"],
    }
    row = listed(fresh, date(2026, 12, 4))[rid]
    assert (row["status"], row["name"], row["source"]) == ("seated", "Grace", "host")


def test_the_host_can_cancel_a_partners_reservation(fresh: ServerProcess) -> None:
    rid = book(fresh, 2, at(4, "20:00"))
    cancelled = host_post(fresh, f"/reservations/{rid}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert listed(fresh, date(2026, 12, 4))[rid]["status"] == "cancelled"


def test_a_phone_reservation_at_a_time_that_is_not_a_slot_is_refused_with_409(
    fresh: ServerProcess,
) -> None:
    reply = host_post(fresh, "/reservations", {"party_size": 2, "start": "2026-12-04T19:10"})
    assert_error(reply, 409, "not a slot")


def test_the_reservation_list_defaults_to_the_service_day_running_now(
    fresh: ServerProcess,
) -> None:
    rid = book(fresh, 2, at(4, "21:00"))
    reply = requests.get(f"{fresh.base}{HOST}/reservations", headers=AUTH, timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    assert reply.json()["day"] == "2026-12-04"
    assert [row["reservation_id"] for row in reply.json()["reservations"]] == [rid]


# -- the process ----------------------------------------------------------------------------


def test_healthz_answers_ok(server: ServerProcess) -> None:
    reply = requests.get(f"{server.base}/healthz", timeout=TIMEOUT)
    assert reply.status_code == 200
    assert reply.json()["status"] == "ok"
    assert reply.json()["store"] == "ok"


def test_the_openapi_document_lists_the_webhook_and_host_paths(server: ServerProcess) -> None:
    reply = requests.get(f"{server.base}/openapi.json", timeout=TIMEOUT)
    assert reply.status_code == 200
    paths = reply.json()["paths"]
    assert "/webhooks/{partner_id}" in paths
    for path in (
        "walk-ins",
        "tables/{table_id}/free",
        "board",
        "quote",
        "reservations",
        "reservations/{reservation_id}/check-in",
        "reservations/{reservation_id}/cancel",
        "parties/{party_id}/leave",
    ):
        assert f"/api/v1/restaurants/{{merchant_id}}/{path}" in paths


def test_sigterm_stops_the_server_with_exit_code_0(tmp_path: Path) -> None:
    running = start_server(tmp_path / "hoststand.db")
    code = running.stop()
    assert code == 0, f"exit code {code}\n{running.output()}"
