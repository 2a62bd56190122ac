"""A booking partner's integration engineer against a real `hoststand serve` on 127.0.0.1:
requests a real integration sends by mistake, each answered with a clear 4xx (or a business
failure) that changes nothing, never a 5xx nor an untrue statement about a booking."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import requests

from feed.service.days import BOOKING_SCOPE
from store import open_store
from tests.integration.postgres import BACKENDS, database
from tests.integration.server_process import (
    SECRETS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    change_event,
    running_server,
    signed_post,
)
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
    workdir = tmp_path_factory.mktemp("audit")
    with (
        database(request.param, workdir, "audit") as db,
        running_server(db, workdir=workdir) as running,
    ):
        yield running


def store_rows(server: ServerProcess, day: date = date(2026, 12, 12)) -> tuple[Any, ...]:
    """What a refusal must leave as it was: the day's log and the booking indexes."""
    with closing(open_store(server.db)) as store:
        return (
            store.entries(MARLOWES, day),
            store.recall_prefix(BOOKING_SCOPE, ""),
            store.recall_prefix("user:tablefinder", ""),
        )


def post(server: ServerProcess, name: str, body: Any) -> requests.Response:
    return requests.post(f"{server.base}/v3/{name}", json=body, auth=BASIC, timeout=TIMEOUT)


# -- text with a NUL character ---------------------------------------------------------------


def test_text_with_a_nul_is_refused_by_every_route_and_changes_nothing(
    server: ServerProcess,
) -> None:
    """A NUL (\\u0000) in an id, a token or a name: 400 (422 in a path), on both stores. It was
    a 500 on PostgreSQL, whose text cannot hold one, wherever the text became a key of the
    store (a user id, an idempotency token, a booking or waitlist id, a webhook event id),
    and booked on SQLite what PostgreSQL could not keep."""
    booking_id = booked(server, sec(12, "19:00"), 2)
    before = store_rows(server)
    user = {"user_id": "nul\u0000user", "given_name": "Ada"}
    v3_calls: list[tuple[str, Any]] = [
        ("CreateBooking", {"slot": slot(sec(12, "20:00"), 2), "user_information": user}),
        (
            "CreateBooking",
            {
                "slot": slot(sec(12, "20:00"), 2),
                "user_information": {"user_id": f"u-{uuid.uuid4().hex}", "given_name": "A\u0000"},
                "idempotency_token": "t\u0000",
            },
        ),
        ("GetBookingStatus", {"booking_id": "bk-\u0000"}),
        ("UpdateBooking", {"booking": {"booking_id": "bk-\u0000", "status": "CANCELED"}}),
        ("ListBookings", {"user_id": "a\u0000"}),
        ("GetWaitlistEntry", {"waitlist_entry_id": "wl-\u0000"}),
        ("DeleteWaitlistEntry", {"waitlist_entry_id": "wl-\u0000"}),
    ]
    for name, body in v3_calls:
        reply = post(server, name, body)
        assert reply.status_code == 400, (name, reply.status_code, reply.text)
        assert "NUL" in reply.json()["error"]["message"], reply.text
    secret = SECRETS["tablefinder"]
    for event in (
        booking_event("evt-\u0000", 2, "2026-12-12T20:00:00+00:00"),
        change_event(f"evt-{uuid.uuid4().hex}", "cancelled", "bk-\u0000"),
    ):
        reply = signed_post(server.base, "tablefinder", secret, event)
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["code"] == "bad json", reply.text
    for path in (f"reservations/{booking_id}%00/cancel", "reservations/bk-%00/check-in"):
        reply = requests.post(f"{server.base}{HOST}/{path}", headers=HOST_AUTH, timeout=TIMEOUT)
        assert reply.status_code == 422, reply.text
        assert "control characters" in reply.json()["error"]["message"], reply.text
    assert store_rows(server) == before
    assert v3(server, "GetBookingStatus", {"booking_id": booking_id})["booking_status"] == (
        "CONFIRMED"
    )


# -- a webhook's reservation id, sent again under another event id ---------------------------


def reservations_on(server: ServerProcess, day: str) -> list[Any]:
    reply = requests.get(
        f"{server.base}{HOST}/reservations",
        params={"date": day},
        headers=HOST_AUTH,
        timeout=TIMEOUT,
    )
    assert reply.status_code == 200, reply.text
    return [r for r in reply.json()["reservations"] if r["status"] == "booked"]


def requested(server: ServerProcess, reservation_id: str, start: str, size: int = 2) -> Any:
    event = booking_event(f"evt-{uuid.uuid4().hex}", size, start, reservation_id=reservation_id)
    return signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event)


def test_a_partner_reservation_sent_again_under_a_new_event_id_is_booked_once(
    server: ServerProcess,
) -> None:
    """The partner's data.reservation_id names one reservation: sent again under a new
    event id (the partner's retry after its own crash) it is the same booking, not a second
    table held for nobody; sent for another time, or once the booking is cancelled, it is
    409 naming our booking, and nothing is written. It booked a table each time."""
    partner_id = f"partner-res-{uuid.uuid4().hex[:8]}"
    first = requested(server, partner_id, "2026-12-21T19:00:00+00:00")
    assert first.status_code == 200, first.text
    booking_id = first.json()["reservation_id"]
    again = requested(server, partner_id, "2026-12-21T19:00:00+00:00")
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert [r["reservation_id"] for r in reservations_on(server, "2026-12-21")] == [booking_id]

    before = store_rows(server, date(2026, 12, 21))
    other = requested(server, partner_id, "2026-12-21T20:00:00+00:00", size=4)
    assert other.status_code == 409, other.text
    assert other.json()["error"]["code"] == "reservation id reused"
    assert booking_id in other.json()["error"]["message"]
    assert [r["reservation_id"] for r in reservations_on(server, "2026-12-21")] == [booking_id]
    assert store_rows(server, date(2026, 12, 21)) == before

    cancelled = signed_post(
        server.base,
        "tablefinder",
        SECRETS["tablefinder"],
        change_event(f"evt-{uuid.uuid4().hex}", "cancelled", booking_id),
    )
    assert cancelled.status_code == 200, cancelled.text
    after_cancel = requested(server, partner_id, "2026-12-21T19:00:00+00:00")
    assert after_cancel.status_code == 409, after_cancel.text
    assert "changed or ended since" in after_cancel.json()["error"]["message"]
    assert reservations_on(server, "2026-12-21") == []


def test_one_partner_reservation_sent_at_once_under_many_event_ids_is_booked_once(
    server: ServerProcess,
) -> None:
    partner_id = f"partner-res-{uuid.uuid4().hex[:8]}"
    with ThreadPoolExecutor(max_workers=6) as pool:
        replies = list(
            pool.map(lambda _: requested(server, partner_id, "2026-12-22T19:00:00+00:00"), range(6))
        )
    assert [r.status_code for r in replies] == [200] * 6, [r.text for r in replies]
    ids = {r.json()["reservation_id"] for r in replies}
    assert len(ids) == 1
    assert [r["reservation_id"] for r in reservations_on(server, "2026-12-22")] == list(ids)


def test_an_empty_partner_reservation_id_is_none_and_each_request_is_booked(
    server: ServerProcess,
) -> None:
    """A partner that has no reservation id of its own may send "" for it: that names no
    reservation, so two guests asking for the same time each get their own table. The
    first booking made with "" took that id for the partner's restaurant, and every later
    request with "" for the same time and size was answered with the first guest's booking
    (200, its table and our id: a booking the partner had not made), and for any other
    time 409 'reservation id reused', booking nothing."""
    first = requested(server, "", "2026-12-28T19:00:00+00:00")
    assert first.status_code == 200, first.text
    second = requested(server, "", "2026-12-28T19:00:00+00:00")
    assert second.status_code == 200, second.text
    other = requested(server, "", "2026-12-28T20:00:00+00:00", size=4)
    assert other.status_code == 200, other.text
    ids = [reply.json()["reservation_id"] for reply in (first, second, other)]
    assert len(set(ids)) == 3, ids
    assert sorted(r["reservation_id"] for r in reservations_on(server, "2026-12-28")) == sorted(ids)


# -- UpdateBooking naming another merchant or service ----------------------------------------


def test_an_update_naming_another_merchant_or_service_is_400_and_changes_nothing(
    server: ServerProcess,
) -> None:
    """UpdateBooking's slot may name the booking's merchant and service (partners echo
    them); another merchant was ignored, so the new time was read on this restaurant's clock
    and grid and the booking moved here, and an unknown service moved it too, where
    CreateBooking answers 400 for the same slot."""
    booking_id = booked(server, sec(12, "19:30"), 2)
    before = store_rows(server)
    for moved in (
        {"merchant_id": "merch1", "start_sec": str(sec(12, "20:00"))},
        {"merchant_id": MARLOWES, "service_id": "9999", "start_sec": str(sec(12, "20:00"))},
    ):
        reply = post(
            server, "UpdateBooking", {"booking": {"booking_id": booking_id, "slot": moved}}
        )
        assert reply.status_code == 400, reply.text
        assert set(reply.json()) == {"error"}, reply.text
    assert store_rows(server) == before
    same = {"merchant_id": MARLOWES, "service_id": "1000", "start_sec": str(sec(12, "20:00"))}
    moved = v3(server, "UpdateBooking", {"booking": {"booking_id": booking_id, "slot": same}})
    assert moved["booking"]["slot"]["start_sec"] == sec(12, "20:00"), moved


# -- a check-in too early says when it opens -------------------------------------------------


def test_a_webhook_check_in_too_early_says_when_the_check_in_opens(server: ServerProcess) -> None:
    """A partner's check-in before the booking's hold (15 minutes before its time) was told
    only "check_in refused: too early": nothing said when to try again. Now 18:00 in London,
    a booking at 20:30 tonight opens for check-in at 20:15; nothing is written."""
    made = requested(server, f"partner-res-{uuid.uuid4().hex[:8]}", "2026-12-04T20:30:00+00:00")
    assert made.status_code == 200, made.text
    booking_id = made.json()["reservation_id"]
    before = store_rows(server, date(2026, 12, 4))
    event = change_event(f"evt-{uuid.uuid4().hex}", "checked_in", booking_id)
    reply = signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event)
    assert reply.status_code == 409, reply.text
    error = reply.json()["error"]
    assert error["code"] == "too early"
    assert error["message"] == (
        "check_in refused: too early: the booking is at 20:30 (Europe/London); check-in opens"
        " at 20:15, 15 minutes before"
    )
    assert store_rows(server, date(2026, 12, 4))[0] == before[0]


# -- the waitlist's service ------------------------------------------------------------------


def test_the_waitlist_calls_refuse_a_service_the_merchant_does_not_have(
    server: ServerProcess,
) -> None:
    """BatchGetWaitEstimates and CreateWaitlistEntry took any service_id for the merchant's
    own (an entry joined the queue of a service that does not exist); CreateBooking answers
    400 for it, and so do they now, adding nobody to the queue."""
    before = store_rows(server, date(2026, 12, 4))
    estimates = {"merchant_id": MARLOWES, "service_id": "9999", "party_size": [2]}
    reply = post(server, "BatchGetWaitEstimates", estimates)
    assert reply.status_code == 400, reply.text
    assert "unknown service" in reply.json()["error"]["message"]
    entry = {
        "merchant_id": MARLOWES,
        "service_id": "9999",
        "party_size": 2,
        "user_information": {"user_id": f"u-{uuid.uuid4().hex}", "given_name": "Ada"},
        "idempotency_token": uuid.uuid4().hex,
    }
    reply = post(server, "CreateWaitlistEntry", entry)
    assert reply.status_code == 400, reply.text
    assert "unknown service" in reply.json()["error"]["message"]
    assert store_rows(server, date(2026, 12, 4)) == before
    assert set(v3(server, "BatchGetWaitEstimates", {**estimates, "service_id": "1000"})) >= {
        "waitlist_status"
    }


# -- one field in both spellings -------------------------------------------------------------


def test_a_field_given_in_both_spellings_with_two_values_is_400_and_changes_nothing(
    server: ServerProcess,
) -> None:
    """snake_case and lowerCamelCase are both accepted; one field given both ways with two
    values was read as whichever came last: a lookup answered for another merchant, a
    booking made at another time than the other spelling said. The same value twice is the
    same request."""
    lookup = {
        "merchant_id": MARLOWES,
        "merchantId": "merch1",
        "slot_time": [{"start_sec": sec(12, "19:00"), "resource_ids": {"party_size": 2}}],
    }
    reply = post(server, "BatchAvailabilityLookup", lookup)
    assert reply.status_code == 400, reply.text
    assert "merchant_id is given twice" in reply.json()["error"]["message"]
    before = store_rows(server)
    user = {"user_id": f"u-{uuid.uuid4().hex}", "given_name": "Ada"}
    both = {**slot(sec(12, "21:00"), 2), "startSec": str(sec(12, "21:15"))}
    reply = post(server, "CreateBooking", {"slot": both, "user_information": user})
    assert reply.status_code == 400, reply.text
    assert "start_sec is given twice" in reply.json()["error"]["message"]
    assert store_rows(server) == before
    same = {**slot(sec(12, "21:00"), 2), "startSec": str(sec(12, "21:00"))}
    made = v3(server, "CreateBooking", {"slot": same, "user_information": user})
    assert made["booking"]["slot"]["start_sec"] == sec(12, "21:00"), made


# -- a user id with a "/" ----------------------------------------------------------------------


def test_a_user_id_with_a_slash_lists_its_bookings_and_is_held_to_no_overlap(
    server: ServerProcess,
) -> None:
    """A user id holding a "/" ("accounts/...") was cut at its first "/" when its bookings
    were read back: ListBookings said it had none, and the same user booked the same time
    twice (no OVERLAPPING_RESERVATION), holding two tables for one party."""
    user = f"accounts/{uuid.uuid4().hex[:8]}"
    body = {"slot": slot(sec(12, "18:30"), 2), "user_information": {"user_id": user}}
    booking_id = v3(server, "CreateBooking", body)["booking"]["booking_id"]
    listed = v3(server, "ListBookings", {"user_id": user})["bookings"]
    assert [b["booking_id"] for b in listed] == [booking_id]
    before = store_rows(server)
    again = v3(server, "CreateBooking", body)
    assert again["booking_failure"]["cause"] == "OVERLAPPING_RESERVATION", again
    assert store_rows(server) == before
    assert v3(server, "ListBookings", {"user_id": user.split("/")[0]})["bookings"] == []


# -- why a slot is not published -------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "size", "duration", "why"),
    [
        (sec(12, "19:05"), 2, None, "slots are every 15 minutes: the nearest are 19:00 and 19:15"),
        (sec(25, "19:00"), 2, None, "closed on Friday 2026-12-25"),
        (sec(12, "16:00"), 2, None, "that day's slots run 12:00-14:00 and 17:30-21:30"),
        (sec(12, "19:00"), 11, None, "online bookings for parties of 1 to 10, not 11"),
        (sec(12, "19:00"), 2, 999, "published with duration_sec 2700, not 999"),
    ],
    ids=["off-grid", "closed-day", "outside-hours", "too-large", "duration"],
)
def test_a_slot_we_do_not_publish_fails_saying_why(
    server: ServerProcess, start: int, size: int, duration: int | None, why: str
) -> None:
    """SLOT_UNAVAILABLE for a slot we do not publish said only "not a slot we publish for
    that party size", whatever was wrong: a closed day, a time off the grid or outside the
    hours, a size partners cannot book or a duration we do not publish. The description
    says which, as a webhook's refusal of the same time does; nothing is written."""
    body = {
        "slot": {**slot(start, size), "duration_sec": duration},
        "user_information": {"user_id": f"u-{uuid.uuid4().hex}"},
    }
    before = store_rows(server)
    failed = v3(server, "CreateBooking", body)
    assert failed["booking_failure"]["cause"] == "SLOT_UNAVAILABLE", failed
    assert why in failed["booking_failure"]["description"], failed
    assert store_rows(server) == before


# -- long and unicode names ------------------------------------------------------------------


def test_a_guests_name_is_bounded_as_the_webhooks_and_unicode_comes_back_as_sent(
    server: ServerProcess,
) -> None:
    """A v3 guest's names and email had no bound: 30 KB of given_name was booked and shown
    on the host's lists, where a webhook's name or a phone booking's is 200 at most. Each
    name is 100 at most now (400, nothing written); a name of that length in any script
    comes back exactly as sent, to the partner and on the host's list."""
    user_id = f"u-{uuid.uuid4().hex}"
    before = store_rows(server)
    for field in ("given_name", "family_name", "email"):
        body = {
            "slot": slot(sec(12, "21:30"), 2),
            "user_information": {"user_id": user_id, field: "Zoë " * 3000},
        }
        reply = post(server, "CreateBooking", body)
        assert reply.status_code == 400, reply.text[:300]
        assert field in reply.json()["error"]["message"], reply.text
    assert store_rows(server) == before
    given, family = "Zoë 🍷 Åsa" + "\u0640" * 90, "Nguyễn \u202eRTL 山田"
    body = {
        "slot": slot(sec(12, "21:30"), 2),
        "user_information": {"user_id": user_id, "given_name": given, "family_name": family},
    }
    made = v3(server, "CreateBooking", body)["booking"]
    assert made["user_information"]["given_name"] == given
    [listed] = v3(server, "ListBookings", {"user_id": user_id})["bookings"]
    assert listed["user_information"] == made["user_information"]
    rows = requests.get(
        f"{server.base}{HOST}/reservations",
        params={"date": "2026-12-12"},
        headers=HOST_AUTH,
        timeout=TIMEOUT,
    ).json()["reservations"]
    assert [r["name"] for r in rows if r["reservation_id"] == made["booking_id"]] == [
        f"{given} {family}"
    ]


# -- the horizon, said as the days it counts -------------------------------------------------


def test_a_slot_past_the_horizon_is_refused_with_the_dates_it_counts(
    server: ServerProcess,
) -> None:
    """horizon_days counts days from today's date (today the first: 2026-12-04 to
    2027-01-02 for 30 days). A slot on 2027-01-03 at 12:00 is under 30 x 24 hours ahead of
    18:00 on 2026-12-04, and was refused as "more than 30 days ahead", which is untrue of
    it; the refusal names the dates instead, for v3 and webhooks alike."""
    jan3 = sec(4, "12:00") + 30 * 86400
    assert jan3 - sec(4, "18:00") < 30 * 86400
    said = "is not bookable yet: bookings open 30 days ahead, 2026-12-04 to 2027-01-02"
    body = {"slot": slot(jan3, 2), "user_information": {"user_id": f"u-{uuid.uuid4().hex}"}}
    failed = v3(server, "CreateBooking", body)
    assert failed["booking_failure"]["cause"] == "SLOT_UNAVAILABLE", failed
    assert said in failed["booking_failure"]["description"], failed
    event = booking_event(f"evt-{uuid.uuid4().hex}", 2, jan3)
    reply = signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event)
    assert reply.status_code == 409, reply.text
    assert said in reply.json()["error"]["message"], reply.text


# -- an idempotency token used again for another booking -------------------------------------


def test_a_used_token_sent_with_another_booking_request_is_400_not_the_old_booking(
    server: ServerProcess,
) -> None:
    """A retry with the token gets its booking; a request for another time, size or user
    under a used token was answered with the old booking, CONFIRMED at a time and size the
    partner had not asked for this time. It is 400 now and books nothing."""
    token, user = uuid.uuid4().hex, {"user_id": f"u-{uuid.uuid4().hex}", "given_name": "Ada"}
    first = {
        "slot": slot(sec(12, "18:00"), 2),
        "user_information": user,
        "idempotency_token": token,
    }
    made = v3(server, "CreateBooking", first)["booking"]
    assert v3(server, "CreateBooking", first)["booking"] == made
    before = store_rows(server)
    other_user = {**user, "user_id": f"u-{uuid.uuid4().hex}"}
    for changed in (
        {**first, "slot": slot(sec(12, "20:45"), 2)},
        {**first, "slot": slot(sec(12, "18:00"), 4)},
        {**first, "user_information": other_user},
    ):
        reply = post(server, "CreateBooking", changed)
        assert reply.status_code == 400, reply.text
        assert made["booking_id"] in reply.json()["error"]["message"], reply.text
    assert store_rows(server) == before


def test_a_used_waitlist_token_sent_for_another_party_is_400_not_the_old_entry(
    tmp_path: Path,
) -> None:
    """As CreateBooking's: a party of 6 sent under a party of 2's token was told it waits,
    under the party of 2's entry id. It is 400 now and adds nobody to the queue."""
    with running_server(tmp_path / "hoststand.db") as fresh:
        for size in (4, 2, 6, 2, 4, 4):  # every table taken: a party of 2 waits
            walked = requests.post(
                f"{fresh.base}{HOST}/walk-ins",
                json={"size": size},
                headers=HOST_AUTH,
                timeout=TIMEOUT,
            )
            assert walked.status_code == 200, walked.text
        token, user = uuid.uuid4().hex, {"user_id": "waiting-user", "given_name": "Ada"}
        body = {
            "merchant_id": MARLOWES,
            "party_size": 2,
            "user_information": user,
            "idempotency_token": token,
        }
        entry = v3(fresh, "CreateWaitlistEntry", body)
        assert v3(fresh, "CreateWaitlistEntry", body) == entry
        before = store_rows(fresh, date(2026, 12, 4))
        for changed in (
            {**body, "party_size": 6},
            {**body, "user_information": {**user, "user_id": "another-user"}},
        ):
            reply = post(fresh, "CreateWaitlistEntry", changed)
            assert reply.status_code == 400, reply.text
            assert entry["waitlist_entry_id"] in reply.json()["error"]["message"], reply.text
        assert store_rows(fresh, date(2026, 12, 4)) == before


def test_an_update_with_status_confirmed_in_any_case_changes_the_booking(
    server: ServerProcess,
) -> None:
    """CANCELED is taken in any case ("canceled"); "confirmed" with a new slot was 400
    "cannot set status confirmed", which named nothing a partner could set. A status it
    cannot set says which it can; neither changes anything."""
    booking_id = booked(server, sec(12, "20:15"), 2)
    before = store_rows(server)
    reply = post(
        server, "UpdateBooking", {"booking": {"booking_id": booking_id, "status": "NO_SHOW"}}
    )
    assert reply.status_code == 400, reply.text
    assert "a partner sets CANCELED" in reply.json()["error"]["message"]
    assert store_rows(server) == before
    moved = {
        "booking_id": booking_id,
        "status": "confirmed",
        "slot": {"start_sec": sec(12, "20:30")},
    }
    answer = v3(server, "UpdateBooking", {"booking": moved})["booking"]
    assert (answer["status"], answer["slot"]["start_sec"]) == ("CONFIRMED", sec(12, "20:30"))
