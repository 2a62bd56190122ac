"""Real-time partner updates and the scheduled export, end to end: `hoststand serve` processes
on 127.0.0.1 talking to a partner stub that fails on purpose (503, 429, dropped connections,
slow answers, down for a while). Every notification arrives and is acted on once, the feed
arrives whole and valid, and nothing is lost to a killed server.

The server's clock is pinned (Friday 4 December 2026, 18:00 GMT); back-offs start at 0.2 s.
Waiting is polling with a bounded timeout, never a fixed sleep.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import requests
from click.testing import CliRunner

from feed.cli import main as cli
from feed.files.documents import CONFIRMATION_MODE_SYNCHRONOUS
from feed.push.delivery import MAX_DELAY
from feed.push.outbox import replace_body
from feed.service.days import DayBook
from feed.venue.restaurant import Restaurant, load_restaurant
from store.sqlite import SQLiteStore
from tests.integration.partner_stub import (
    AGAIN_AT_ONCE,
    AVAILABILITY,
    BOOKING,
    BUSY_FOR_A_DAY,
    DROP,
    DROP_AFTER,
    FORBIDDEN,
    REDIRECT,
    SLOW,
    TIMED_OUT,
    TOO_MANY,
    UNAVAILABLE,
    UPLOAD,
    PartnerStub,
    Request,
)
from tests.integration.server_process import (
    CONFIGS,
    HOST_TOKENS,
    HOSTSTAND,
    NOW,
    REPO,
    SECRETS,
    STARTUP_SECONDS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    change_event,
    free_port,
    signed_post,
)

MARLOWES = "marlowes-kitchen"
TABLEFINDER = "tablefinder"
NOTIFY_TOKEN = "stub-notify-token-tablefinder"
FEED_AUTH = "Bearer stub-feed-token"
TODAY = date(2026, 12, 4)
V3_PASSWORD = "partner-updates-basic-password"
TOMORROW = date(2026, 12, 5)
SETTLE_SECONDS = 40  # the longest back-off chain here is a few seconds; this is a bound only
NOTIFICATIONS = (BOOKING, AVAILABILITY)
FEED_KINDS = ("availability", "merchant", "service")


# -- the server, with settings that point at the stub ------------------------------------------


def write_settings(
    tmp: Path,
    stub: PartnerStub,
    dinerly_notify: str | None = None,
    feeds: bool = True,
    backlog_seconds: float | None = None,
) -> Path:
    """tablefinder notified at `stub`; dinerly (Marlowe's only) notified at `dinerly_notify`
    if given, else not; the feeds delivered to `stub` (/feeds) and a directory, or nowhere
    (not `feeds`); /healthz unhealthy once a message waits `backlog_seconds` (if given)."""
    dinerly = ""
    if dinerly_notify is not None:
        dinerly = f'notify_url = "{dinerly_notify}"\nnotify_token = "dinerly-notify-token"\n'
    destinations = ""
    if feeds:
        destinations = f"""
[[export.destinations]]
kind = "http"
url = "{stub.base}/feeds"
method = "PUT"
auth_value = "{FEED_AUTH}"

[[export.destinations]]
kind = "directory"
path = "{tmp / "partner-feeds"}"
"""
    health = ""
    if backlog_seconds is not None:
        health = f"\n[health]\nmax_backlog_seconds = {backlog_seconds}\n"
    path = tmp / "settings.toml"
    path.write_text(
        f"""
[[partners]]
id = "tablefinder"
secret = "{SECRETS["tablefinder"]}"
basic_user = "tablefinder"
basic_password = "{V3_PASSWORD}"
notify_url = "{stub.base}"
notify_token = "{NOTIFY_TOKEN}"

[[partners]]
id = "dinerly"
secret = "{SECRETS["dinerly"]}"
merchants = ["marlowes-kitchen"]
{dinerly}
[[hosts]]
merchant_id = "marlowes-kitchen"
token = "{HOST_TOKENS["marlowes-kitchen"]}"

[export]
interval_minutes = 60
days = 2
retry_base_seconds = 0.2
coalesce_seconds = 0.2
staging = "{tmp / "staging"}"
{destinations}{health}""",
        encoding="utf-8",
    )
    return path


def start(
    db: Path,
    settings: Path,
    now: datetime = NOW,
    configs: Sequence[Path] = CONFIGS,
    ready: str = "/healthz",
) -> ServerProcess:
    """`hoststand serve` of `configs` on `db` with `settings`; returns once `ready` answers
    200 (/healthz; /readyz where /healthz may well be unhealthy)."""
    port = free_port()
    log = db.with_name(f"{db.stem}-server-{port}.log")
    args = [str(HOSTSTAND), "--now", now.isoformat(), "serve"]
    for config in configs:
        args += ["--config", str(config)]
    args += ["--db", str(db), "--settings", str(settings), "--host", "127.0.0.1"]
    args += ["--port", str(port)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTSTAND_")}
    env["PYTHONUNBUFFERED"] = "1"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, cwd=db.parent, env=env
        )
    server = ServerProcess(process, f"http://127.0.0.1:{port}", db, log)
    try:
        poll(
            lambda: _healthy(server, ready),
            STARTUP_SECONDS,
            f"the server answering {ready}",
            server,
        )
    except BaseException:
        server.stop(kill=True)
        raise
    return server


def _healthy(server: ServerProcess, route: str = "/healthz") -> bool:
    if server.process.poll() is not None:
        raise AssertionError(f"hoststand serve exited early:\n{server.output()}")
    try:
        with requests.get(f"{server.base}{route}", timeout=1) as reply:
            return reply.status_code == 200
    except (requests.ConnectionError, requests.Timeout):  # bound, not yet serving
        return False


def poll(
    condition: Callable[[], bool],
    timeout: float,
    what: str,
    server: ServerProcess | None = None,
) -> None:
    """Wait until `condition()` holds; fail after `timeout` s with the server's log."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            log = server.output()[-4000:] if server is not None else ""
            raise AssertionError(f"no {what} within {timeout} s\n{log}")
        time.sleep(0.05)


@pytest.fixture
def stub() -> Iterator[PartnerStub]:
    with PartnerStub(token=NOTIFY_TOKEN) as running:
        yield running


@pytest.fixture
def settings(tmp_path: Path, stub: PartnerStub) -> Path:
    return write_settings(tmp_path, stub)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "hoststand.db"


@pytest.fixture
def server(db: Path, settings: Path) -> Iterator[ServerProcess]:
    running = start(db, settings)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def marlowes() -> Restaurant:
    return load_restaurant(CONFIGS[0])


# -- talking to the server ---------------------------------------------------------------------


def at(day: date, hhmm: str) -> str:
    """An instant in London on `day` (GMT in December, so +00:00)."""
    return f"{day.isoformat()}T{hhmm}:00+00:00"


def partner_book(server: ServerProcess, size: int, start_: str) -> str:
    event = booking_event(f"evt-{uuid.uuid4().hex}", size, start_)
    reply = signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], event)
    assert reply.status_code == 200, reply.text
    return str(reply.json()["reservation_id"])


def partner_cancel(server: ServerProcess, reservation_id: str) -> None:
    event = change_event(f"evt-{uuid.uuid4().hex}", "cancelled", reservation_id)
    reply = signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], event)
    assert reply.status_code == 200, reply.text


def v3_update(server: ServerProcess, booking: dict[str, Any]) -> Any:
    reply = requests.post(
        f"{server.base}/v3/UpdateBooking",
        json={"booking": booking},
        auth=(TABLEFINDER, V3_PASSWORD),
        timeout=TIMEOUT,
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def host_change(server: ServerProcess, reservation_id: str, **change: Any) -> Any:
    url = f"{server.base}/api/v1/restaurants/{MARLOWES}/reservations/{reservation_id}/change"
    reply = requests.post(url, json=change, headers=host_auth(), timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    return reply.json()


def host_auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}


def host_cancel(server: ServerProcess, reservation_id: str) -> None:
    url = f"{server.base}/api/v1/restaurants/{MARLOWES}/reservations/{reservation_id}/cancel"
    reply = requests.post(url, headers=host_auth(), timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    assert reply.json()["status"] == "cancelled"


def board(server: ServerProcess) -> None:
    url = f"{server.base}/api/v1/restaurants/{MARLOWES}/board"
    reply = requests.get(url, headers=host_auth(), timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text


# -- what the store and the stub hold ---------------------------------------------------------


def stats(db: Path) -> dict[str, Any]:
    with SQLiteStore(db) as store:
        result: dict[str, Any] = store.outbox_stats()
        return result


def settle(server: ServerProcess, timeout: float = SETTLE_SECONDS) -> dict[str, Any]:
    """Wait until no message is pending; the outbox statistics then."""
    poll(lambda: stats(server.db)["pending"] == 0, timeout, "empty outbox", server)
    return stats(server.db)


def settle_after_restart(db: Path, settings: Path) -> dict[str, Any]:
    """`hoststand serve` started again on `db` (after one was killed) and run until no
    message is pending, then stopped; the outbox statistics read once it has stopped: its
    first look at today may send a replace after `settle` (a clean stop waits for what is
    in flight), which the partner acts on and counts read at `settle` would not know of."""
    restarted = start(db, settings)
    try:
        settle(restarted)
    finally:
        restarted.stop()
    return stats(db)


def tried_while_down(db: Path) -> bool:
    """Some pending message has failed at least once."""
    with SQLiteStore(db) as store:
        return any(item.attempts > 0 for item in store.pending(time.time() + 10**6))


def notifications_for(stub: PartnerStub, booking_id: str) -> list[Request]:
    return [r for r in stub.acted(BOOKING) if r.target == booking_id]


def replaces_for(stub: PartnerStub, day: date, merchant: str = MARLOWES) -> list[dict[str, Any]]:
    """The windows for `merchant`'s `day` in the availability replaces acted on, in arrival
    order (a replace carries a window for each day of the restaurant that changed; the
    other restaurant's windows, its day under another zone, are not these)."""
    bodies = [r.json() for r in stub.acted(AVAILABILITY)]
    return [
        window
        for b in bodies
        for window in b["extendedServiceAvailability"]
        if window["startTimeRestrict"][:10] == day.isoformat() and window["merchantId"] == merchant
    ]


def current_replace(db: Path, restaurant: Restaurant, day: date) -> dict[str, Any]:
    """The window for `day` the server would send now, from its database."""
    with SQLiteStore(db) as store:
        body = replace_body(DayBook(store, restaurant), [day], NOW)
    [window] = body["extendedServiceAvailability"]
    return window


def assert_acted_once(stub: PartnerStub, db: Path) -> None:
    """Every notification the stub acted on carried its own message id, the outbox counts one
    delivery per message, and a duplicate was only ever a resend of one acted on. The counts
    are read from `db` until they agree with what the stub acted on (or 10 s pass): a running
    server's clock may still send a replace of today after `settle`, acted on before the
    store marks it delivered."""
    with contextlib.suppress(AssertionError):
        poll(lambda: len(stub.acted_ids()) == stats(db)["delivered"], 10, "agreeing counts")
    acted = stub.acted(BOOKING) + stub.acted(AVAILABILITY)
    assert all(r.message_ids for r in acted)
    ids = stub.acted_ids()
    assert len(ids) == len(set(ids)) == stats(db)["delivered"]
    assert {one for r in stub.duplicates() for one in r.message_ids} <= set(ids)


def assert_canceled_once(stub: PartnerStub, booking_id: str, start_: str, size: int) -> None:
    [notification] = notifications_for(stub, booking_id)
    assert notification.method == "PATCH"
    assert notification.path == (
        f"/v1alpha/notification/partners/{TABLEFINDER}/bookings/{booking_id}"
    )
    assert notification.query == {"updateMask": ["status"]}
    assert notification.headers["authorization"] == f"Bearer {NOTIFY_TOKEN}"
    body = notification.json()
    assert body["name"] == f"partners/{TABLEFINDER}/bookings/{booking_id}"
    assert body["status"] == "CANCELED"
    assert (body["merchantId"], body["serviceId"]) == (MARLOWES, "1000")
    assert body["startTime"] == start_.replace("+00:00", "Z")
    assert body["partySize"] == size


# -- booking notifications ---------------------------------------------------------------------


def test_a_host_cancel_of_a_partner_booking_is_notified_once_as_canceled(
    server: ServerProcess, stub: PartnerStub
) -> None:
    rid = partner_book(server, 2, at(TODAY, "19:00"))
    host_cancel(server, rid)
    outbox = settle(server)
    assert_canceled_once(stub, rid, at(TODAY, "19:00"), 2)
    assert notifications_for(stub, rid)[0].json()["duration"] == "2700s"  # 45 min for two
    assert replaces_for(stub, TODAY)
    assert outbox["dead"] == 0
    assert_acted_once(stub, Path(server.db))


def test_a_partner_cancelling_its_own_booking_gets_a_replace_but_no_notification(
    server: ServerProcess, stub: PartnerStub, marlowes: Restaurant
) -> None:
    rid = partner_book(server, 4, at(TOMORROW, "20:00"))
    partner_cancel(server, rid)
    outbox = settle(server)
    assert stub.acted(BOOKING) == []
    replaces = replaces_for(stub, TOMORROW)
    assert replaces
    assert replaces[-1] == current_replace(server.db, marlowes, TOMORROW)
    assert outbox["dead"] == 0


def test_a_partners_own_change_of_size_and_time_is_never_notified_back_to_it(
    server: ServerProcess, stub: PartnerStub
) -> None:
    rid = partner_book(server, 2, at(TOMORROW, "19:00"))
    moved = v3_update(server, {"booking_id": rid, "slot": {"resources": {"party_size": 4}}})
    assert moved["booking"]["status"] == "CONFIRMED"
    later = int(datetime.fromisoformat(at(TOMORROW, "20:00")).timestamp())
    again = v3_update(server, {"booking_id": rid, "slot": {"start_sec": str(later)}})
    assert again["booking"]["status"] == "CONFIRMED"
    outbox = settle(server)
    assert stub.acted(BOOKING) == []  # no CANCELED, no echo of its own change
    assert replaces_for(stub, TOMORROW)
    assert outbox["dead"] == 0


def test_a_partners_own_v3_cancel_is_never_notified_back_to_it(
    server: ServerProcess, stub: PartnerStub
) -> None:
    rid = partner_book(server, 2, at(TOMORROW, "18:00"))
    cancelled = v3_update(server, {"booking_id": rid, "status": "CANCELED"})
    assert cancelled["booking"]["status"] == "CANCELED"
    settle(server)
    assert notifications_for(stub, rid) == []


def test_a_host_change_of_a_partner_booking_is_notified_with_the_fields_that_changed(
    server: ServerProcess, stub: PartnerStub
) -> None:
    rid = partner_book(server, 2, at(TOMORROW, "19:00"))
    changed = host_change(server, rid, start=at(TOMORROW, "20:30"))
    assert changed["reservation_id"] == rid  # one booking id for its whole life
    settle(server)
    [moved] = notifications_for(stub, rid)
    assert moved.method == "PATCH" and moved.query == {"updateMask": ["startTime"]}
    body = moved.json()
    assert body["name"] == f"partners/{TABLEFINDER}/bookings/{rid}"
    assert (body["status"], body["startTime"], body["partySize"]) == (
        "CONFIRMED",
        at(TOMORROW, "20:30").replace("+00:00", "Z"),
        2,
    )
    host_change(server, rid, party_size=4)
    settle(server)
    resized = notifications_for(stub, rid)[-1]
    assert resized.query == {"updateMask": ["duration,partySize"]}
    assert (resized.json()["partySize"], resized.json()["duration"]) == (4, "4200s")
    # The host's list and cancel use the same id, and the cancel is told as one.
    url = f"{server.base}/api/v1/restaurants/{MARLOWES}/reservations"
    listed = requests.get(url, params={"date": TOMORROW.isoformat()}, headers=host_auth())
    assert [r["reservation_id"] for r in listed.json()["reservations"]] == [rid]
    host_cancel(server, rid)
    settle(server)
    assert notifications_for(stub, rid)[-1].json()["status"] == "CANCELED"
    assert len(notifications_for(stub, rid)) == 3


def test_a_replace_carries_the_partners_camel_case_window(
    server: ServerProcess, stub: PartnerStub
) -> None:
    partner_book(server, 2, at(TOMORROW, "19:00"))
    settle(server)
    [window] = replaces_for(stub, TOMORROW)
    request = stub.acted(AVAILABILITY)[-1]
    assert request.method == "POST"
    assert request.path == f"/v1alpha/inventory/partners/{TABLEFINDER}/availability:replace"
    assert (window["merchantId"], window["serviceId"]) == (MARLOWES, "1000")
    assert window["startTimeRestrict"] < window["endTimeRestrict"]
    nineteen = [a for a in window["availability"] if a["startTime"] == "2026-12-05T19:00:00Z"]
    two = [a for a in nineteen if a["resources"] == {"partySize": 2}]
    assert len(two) == 1 and two[0]["spotsOpen"] < two[0]["spotsTotal"]
    keys = {"startTime", "duration", "spotsTotal", "spotsOpen", "resources", "confirmationMode"}
    assert all(set(a) == keys for a in window["availability"])
    # The same confirmation mode as the feed's entries.
    assert {a["confirmationMode"] for a in window["availability"]} == {
        CONFIRMATION_MODE_SYNCHRONOUS
    }


def test_a_partner_booking_past_its_hold_is_notified_once_as_a_no_show(
    db: Path, settings: Path, stub: PartnerStub
) -> None:
    first = start(db, settings)
    try:
        rid = partner_book(first, 2, at(TODAY, "18:30"))
        settle(first)
    finally:
        first.stop()
    # The hold ends at 18:45; nobody touches the stand: the clock's sweep (at start-up,
    # then every few seconds) writes the no-show, and reading the board writes nothing.
    later = start(db, settings, NOW + timedelta(minutes=50))
    try:
        board(later)
        poll(lambda: notifications_for(stub, rid) != [], SETTLE_SECONDS, "no-show", later)
        outbox = settle(later)
    finally:
        later.stop()
    [notification] = notifications_for(stub, rid)
    assert notification.json()["status"] == "NO_SHOW"
    assert notification.json()["startTime"] == "2026-12-04T18:30:00Z"
    assert outbox["dead"] == 0
    assert_acted_once(stub, db)


# -- a partner that fails on purpose -----------------------------------------------------------


def test_every_message_arrives_once_through_503s_429s_and_dropped_connections(
    server: ServerProcess, stub: PartnerStub
) -> None:
    stub.fail_next(3, UNAVAILABLE, NOTIFICATIONS)
    stub.fail_next(1, TOO_MANY, NOTIFICATIONS)
    stub.fail_next(1, DROP, NOTIFICATIONS)
    stub.fail_next(1, DROP_AFTER, NOTIFICATIONS)  # acted on, but the answer is lost
    kept = partner_book(server, 2, at(TODAY, "19:00"))
    first = partner_book(server, 2, at(TODAY, "19:30"))
    second = partner_book(server, 4, at(TOMORROW, "20:00"))
    host_cancel(server, first)
    host_cancel(server, second)
    outbox = settle(server)
    assert stub.failures_left() == 0
    assert_canceled_once(stub, first, at(TODAY, "19:30"), 2)
    assert_canceled_once(stub, second, at(TOMORROW, "20:00"), 4)
    assert notifications_for(stub, kept) == []
    assert replaces_for(stub, TODAY) and replaces_for(stub, TOMORROW)
    assert len(stub.duplicates()) == 1  # the resend after the lost answer, not acted on again
    assert outbox["dead"] == 0
    assert_acted_once(stub, Path(server.db))


@pytest.mark.parametrize(
    "answer",
    [
        # A load balancer in front of the partner answers 408 when the request did not get
        # through in time: it was given up as refused for good, and the partner never heard.
        TIMED_OUT,
        # Followed, the redirect turned the PATCH (and the replace's POST) into a GET of the
        # other page, whose 200 marked the message delivered: the partner never had it.
        REDIRECT,
    ],
)
def test_a_notification_and_a_replace_answered_408_or_a_redirect_are_sent_again_and_arrive_once(
    server: ServerProcess, stub: PartnerStub, marlowes: Restaurant, answer: str
) -> None:
    stub.fail_next(1, answer, [BOOKING])
    stub.fail_next(1, answer, [AVAILABILITY])
    rid = partner_book(server, 2, at(TODAY, "20:00"))
    host_cancel(server, rid)
    outbox = settle(server)
    assert stub.failures_left() == 0
    assert_canceled_once(stub, rid, at(TODAY, "20:00"), 2)
    assert replaces_for(stub, TODAY)[-1] == current_replace(server.db, marlowes, TODAY)
    assert [a for a in stub.attempts() if a[1] == "/moved"] == []  # a redirect never followed
    assert outbox["dead"] == 0
    assert_acted_once(stub, Path(server.db))


def test_a_slow_partner_still_gets_the_notification(
    server: ServerProcess, stub: PartnerStub
) -> None:
    stub.fail_next(1, SLOW, [BOOKING])
    rid = partner_book(server, 2, at(TODAY, "20:00"))
    host_cancel(server, rid)
    outbox = settle(server)
    assert_canceled_once(stub, rid, at(TODAY, "20:00"), 2)
    assert stub.duplicates() == []
    assert outbox["dead"] == 0


def test_a_partner_asking_us_to_wait_a_day_is_tried_again_within_the_longest_back_off(
    server: ServerProcess, stub: PartnerStub
) -> None:
    # Retry-After: 86400 was honoured whole: the cancellation waited a day (and every later
    # message of the booking behind it), where a partner must hear within minutes.
    stub.fail_next(1, BUSY_FOR_A_DAY, [BOOKING])
    rid = partner_book(server, 2, at(TODAY, "20:00"))
    asked = time.time()
    host_cancel(server, rid)
    poll(lambda: tried_while_down(server.db), 10, "the refused attempt", server)
    with SQLiteStore(server.db) as store:
        [waiting] = [i for i in store.pending(time.time() + 10**6) if i.kind == BOOKING]
    assert waiting.key == rid and waiting.attempts == 1
    with contextlib.closing(sqlite3.connect(server.db)) as conn:
        [(retry_at,)] = conn.execute("SELECT retry_at FROM outbox WHERE id = ?", (waiting.id,))
    assert asked < retry_at <= time.time() + MAX_DELAY


def test_a_partner_asking_us_to_retry_at_once_is_still_retried_with_back_off(
    server: ServerProcess, stub: PartnerStub
) -> None:
    # Retry-After: 0 was honoured as it stood: a partner answering 429 with it (for ever)
    # got the message again every round, 20 times a second. Retry-After is the least wait.
    stub.fail_next(1, AGAIN_AT_ONCE, [BOOKING])
    rid = partner_book(server, 2, at(TODAY, "20:00"))
    host_cancel(server, rid)
    poll(lambda: tried_while_down(server.db), 10, "the refused attempt", server)
    [refused] = stub.refused_at()
    with contextlib.closing(sqlite3.connect(server.db)) as conn:
        [(retry_at, attempts)] = conn.execute(
            "SELECT retry_at, attempts FROM outbox WHERE kind = 'booking' AND key = ?", (rid,)
        )
    assert attempts == 1
    assert retry_at >= refused + 0.2 / 2  # retry_base_seconds 0.2: the first back-off's least
    outbox = settle(server)
    assert_canceled_once(stub, rid, at(TODAY, "20:00"), 2)
    assert outbox["dead"] == 0


def test_a_change_made_while_a_replace_is_in_flight_reaches_the_partner(
    server: ServerProcess, stub: PartnerStub, marlowes: Restaurant
) -> None:
    stub.fail_next(1, SLOW, [AVAILABILITY])
    partner_book(server, 2, at(TOMORROW, "19:00"))
    stub.wait_for(lambda s: s.in_flight(AVAILABILITY) == 1, 10, "a replace in flight")
    partner_book(server, 2, at(TOMORROW, "19:00"))  # its replace is not the one in flight
    settle(server)
    replaces = replaces_for(stub, TOMORROW)
    assert replaces[-1] == current_replace(server.db, marlowes, TOMORROW)


def test_a_partner_down_for_a_while_gets_everything_once_it_is_back(
    server: ServerProcess, stub: PartnerStub, marlowes: Restaurant
) -> None:
    stub.stop()
    kept = partner_book(server, 2, at(TODAY, "19:00"))
    first = partner_book(server, 2, at(TODAY, "19:30"))
    second = partner_book(server, 6, at(TOMORROW, "20:00"))
    partner_book(server, 2, at(TOMORROW, "19:00"))
    host_cancel(server, first)
    host_cancel(server, second)
    poll(lambda: tried_while_down(server.db), 10, "failed attempt while down", server)
    stub.start()
    outbox = settle(server)
    assert_canceled_once(stub, first, at(TODAY, "19:30"), 2)
    assert_canceled_once(stub, second, at(TOMORROW, "20:00"), 6)
    assert notifications_for(stub, kept) == []
    for day in (TODAY, TOMORROW):
        assert replaces_for(stub, day)[-1] == current_replace(server.db, marlowes, day)
    assert outbox["dead"] == 0
    assert_acted_once(stub, Path(server.db))


def test_a_server_killed_with_messages_pending_delivers_them_after_a_restart(
    db: Path, settings: Path, stub: PartnerStub, marlowes: Restaurant
) -> None:
    first = start(db, settings)
    try:
        stub.stop()
        rid = partner_book(first, 2, at(TODAY, "19:00"))
        host_cancel(first, rid)
        partner_book(first, 4, at(TOMORROW, "19:30"))
        poll(lambda: tried_while_down(db), 10, "failed attempt while down", first)
    finally:
        first.stop(kill=True)
    assert stats(db)["pending"] > 0
    stub.start()
    outbox = settle_after_restart(db, settings)
    assert_canceled_once(stub, rid, at(TODAY, "19:00"), 2)
    for day in (TODAY, TOMORROW):
        assert replaces_for(stub, day)[-1] == current_replace(db, marlowes, day)
    assert outbox["dead"] == 0
    assert_acted_once(stub, db)


def test_a_server_killed_while_a_notification_is_in_flight_resends_it_after_a_restart(
    db: Path, settings: Path, stub: PartnerStub
) -> None:
    first = start(db, settings)
    try:
        stub.fail_next(1, SLOW, [BOOKING])
        rid = partner_book(first, 2, at(TODAY, "19:00"))
        host_cancel(first, rid)
        stub.wait_for(lambda s: s.in_flight(BOOKING) == 1, 10, "a notification in flight")
    finally:
        first.stop(kill=True)
    outbox = settle_after_restart(db, settings)
    assert_canceled_once(stub, rid, at(TODAY, "19:00"), 2)  # the partner acted on it once
    stub.wait_for(lambda s: s.in_flight(BOOKING) == 0, 10, "the slow answer finished")
    [resent] = stub.duplicates(BOOKING)  # the same message id before and after the restart
    assert resent.target == rid
    assert outbox["dead"] == 0
    assert_acted_once(stub, db)


# -- the scheduled export ----------------------------------------------------------------------


def exports(db: Path) -> list[dict[str, Any]]:
    with SQLiteStore(db) as store:
        return list(store.exports())


def wait_for_export(server: ServerProcess) -> dict[str, dict[str, Any]]:
    """The start-up export's records, by destination kind ("http" or "directory")."""
    poll(lambda: len(exports(server.db)) >= 2, 30, "export records", server)
    records = exports(server.db)
    return {("http" if r["destination"].startswith("PUT ") else "directory"): r for r in records}


def schema(kind: str) -> Any:
    return json.loads((REPO / "schemas" / f"{kind}_feed.schema.json").read_text(encoding="utf-8"))


def assert_feed_whole_and_valid(stub: PartnerStub, directory: Path, files: list[str]) -> None:
    uploads = stub.uploads()
    assert sorted(uploads) == sorted(files)
    assert {name.split("-")[0] for name in files} == set(FEED_KINDS)
    assert len({name.split("-")[1] for name in files}) == 1  # one generation_timestamp
    for name in files:
        document = json.loads(uploads[name])
        jsonschema.validate(document, schema(name.split("-")[0]))
        assert uploads[name] == (directory / name).read_bytes()
    for request in stub.acted(UPLOAD):
        assert request.method == "PUT"
        assert request.headers["authorization"] == FEED_AUTH
        assert request.headers["content-type"] == "application/json"


def test_the_start_up_export_reaches_the_partner_whole_and_valid(
    server: ServerProcess, stub: PartnerStub, tmp_path: Path
) -> None:
    records = wait_for_export(server)
    http, directory = records["http"], records["directory"]
    assert http["outcome"] == directory["outcome"] == "delivered", records
    assert http["files"] == directory["files"] and len(http["files"]) == 3
    assert http["attempts"] == 3  # one per file
    assert_feed_whole_and_valid(stub, tmp_path / "partner-feeds", http["files"])
    availability = [n for n in http["files"] if n.startswith("availability-")]
    [entries] = [json.loads(stub.uploads()[n])["service_availability"] for n in availability]
    assert entries  # two days of the two restaurants


def test_an_upload_failing_for_a_while_still_delivers_the_whole_feed(
    db: Path, settings: Path, stub: PartnerStub, tmp_path: Path
) -> None:
    stub.fail_next(2, UNAVAILABLE, [UPLOAD])
    stub.fail_next(1, TOO_MANY, [UPLOAD])
    stub.fail_next(1, DROP, [UPLOAD])
    server = start(db, settings)
    try:
        records = wait_for_export(server)
    finally:
        server.stop()
    http = records["http"]
    assert http["outcome"] == "delivered", records
    assert http["attempts"] == 3 + 4  # every file once, plus the four failures
    assert stub.failures_left() == 0
    assert_feed_whole_and_valid(stub, tmp_path / "partner-feeds", http["files"])


def test_an_upload_answered_with_a_redirect_is_sent_again_not_taken_as_delivered(
    db: Path, settings: Path, stub: PartnerStub, tmp_path: Path
) -> None:
    stub.fail_next(1, REDIRECT, [UPLOAD])  # followed, a GET of the other page took its place
    server = start(db, settings)
    try:
        records = wait_for_export(server)
    finally:
        server.stop()
    http = records["http"]
    assert (http["outcome"], http["attempts"]) == ("delivered", 3 + 1), records
    assert_feed_whole_and_valid(stub, tmp_path / "partner-feeds", http["files"])
    assert [a for a in stub.attempts() if a[1] == "/moved"] == []


def test_an_upload_refused_with_403_is_recorded_as_failed_at_once(
    db: Path, settings: Path, stub: PartnerStub
) -> None:
    stub.fail_next(1, FORBIDDEN, [UPLOAD])
    server = start(db, settings)
    try:
        records = wait_for_export(server)
    finally:
        server.stop()
    http, directory = records["http"], records["directory"]
    assert (http["outcome"], http["attempts"]) == ("failed", 1), records
    assert "403" in http["error"]
    assert directory["outcome"] == "delivered"
    assert stub.acted(UPLOAD) == []  # no later file of a feed that cannot arrive whole
    status = subprocess.run(
        [str(HOSTSTAND), "--now", NOW.isoformat(), "feed", "status", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=STARTUP_SECONDS,
        check=False,
    )
    assert status.returncode == 0, status.stderr
    [line] = [line for line in status.stdout.splitlines() if f"PUT {stub.base}/feeds" in line]
    assert "failed" in line and "1 attempt(s)" in line and "403" in line


def test_feed_status_lists_the_exports_and_the_outbox(
    server: ServerProcess, stub: PartnerStub
) -> None:
    rid = partner_book(server, 2, at(TODAY, "19:00"))
    host_cancel(server, rid)
    outbox = settle(server)
    wait_for_export(server)
    result = CliRunner().invoke(
        cli, ["--now", NOW.isoformat(), "feed", "status", "--db", str(server.db)]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "recent exports (newest first):"
    assert any(f"PUT {stub.base}/feeds" in line and "delivered" in line for line in lines)
    assert any(str(server.db.parent / "partner-feeds") in line for line in lines)
    assert f"outbox: 0 pending, {outbox['delivered']} delivered, 0 given up" in lines
    assert any(line.startswith(f"  delivery lag over the last {outbox['delivered']}:")
               for line in lines)  # fmt: skip
