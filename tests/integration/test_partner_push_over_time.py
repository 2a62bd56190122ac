"""What partners are sent over time, against real `hoststand serve` processes and partner
endpoints on 127.0.0.1: a partner whose endpoint misbehaves for long (hangs, never answers)
costs the other partners nothing; every message still arrives once, in order per booking.

Waiting is polling with a bounded timeout; what is asserted is what arrived and in what
order relative to the other partner's requests, never how long anything took.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from feed.push.outbox import PER_PARTNER, replace_body
from feed.service.days import DayBook
from feed.venue.restaurant import Restaurant, load_restaurant
from store.sqlite import SQLiteStore
from tests.integration.partner_stub import AVAILABILITY, BOOKING, HangingPartner, PartnerStub
from tests.integration.server_process import (
    HOSTSTAND,
    NOW,
    SAMPLES,
    SECRETS,
    STARTUP_SECONDS,
    ServerProcess,
    booking_event,
    change_event,
    signed_post,
    start_server,
)
from tests.integration.test_operating import metrics, sample
from tests.integration.test_partner_updates import (
    MARLOWES,
    NOTIFY_TOKEN,
    SETTLE_SECONDS,
    TABLEFINDER,
    TODAY,
    TOMORROW,
    V3_PASSWORD,
    assert_canceled_once,
    at,
    host_auth,
    host_cancel,
    host_change,
    notifications_for,
    partner_book,
    poll,
    replaces_for,
    settle,
    start,
    stats,
    write_settings,
)
from tests.integration.test_send_process import TRICKLED

DINERLY = "dinerly"


def two_partner_settings(tmp: Path, stub: PartnerStub, other: str) -> Path:
    """tablefinder notified at `stub`, dinerly (Marlowe's only) at `other`; no feed
    destinations."""
    return write_settings(tmp, stub, dinerly_notify=other, feeds=False)


@pytest.fixture(scope="module")
def marlowes() -> Restaurant:
    return load_restaurant(SAMPLES / "marlowes.toml")


def current_replace(db: Path, r: Restaurant, day: date, now: datetime) -> dict[str, Any]:
    """The window for `day` the server would send at `now`, from its database."""
    with SQLiteStore(db) as store:
        [window] = replace_body(DayBook(store, r), [day], now)["extendedServiceAvailability"]
    return dict(window)


@pytest.fixture
def stub() -> Iterator[PartnerStub]:
    with PartnerStub(token=NOTIFY_TOKEN) as running:
        yield running


@pytest.fixture
def hanging() -> Iterator[HangingPartner]:
    with HangingPartner() as running:
        yield running


def dinerly_book(server: ServerProcess, size: int, start_: str) -> str:
    event = booking_event(f"evt-{uuid.uuid4().hex}", size, start_)
    reply = signed_post(server.base, DINERLY, SECRETS[DINERLY], event)
    assert reply.status_code == 200, reply.text
    return str(reply.json()["reservation_id"])


def test_a_partner_whose_endpoint_hangs_does_not_hold_back_another_partners_messages(
    tmp_path: Path, stub: PartnerStub, hanging: HangingPartner
) -> None:
    """The sender waited for every request of a round before the next: each of dinerly's
    requests held tablefinder's cancellation until it timed out (4 at a time, 10 s each, so
    a hundred of them held it minutes). Now tablefinder hears while dinerly's requests
    still hang, and dinerly's are only ever a few at once."""
    server = start(tmp_path / "hoststand.db", two_partner_settings(tmp_path, stub, hanging.base))
    try:
        for hhmm in ("18:30", "19:00", "19:30", "20:00"):  # each cancelled: one request each
            host_cancel(server, dinerly_book(server, 2, at(TOMORROW, hhmm)))
        poll(lambda: hanging.counts()[0] >= PER_PARTNER, 30, "dinerly's requests held", server)
        rid = partner_book(server, 2, at(TODAY, "20:00"))
        host_cancel(server, rid)
        stub.wait_for(
            lambda s: notifications_for(s, rid) != [], SETTLE_SECONDS, "tablefinder's cancel"
        )
        opened, closed = hanging.counts()
        assert closed == 0, "tablefinder heard only once dinerly's requests gave up"
        assert opened == PER_PARTNER  # dinerly's held requests hold its own senders only
    finally:
        server.stop()
    assert_canceled_once(stub, rid, at(TODAY, "20:00"), 2)
    assert [r.target for r in stub.acted(BOOKING)] == [rid]


# A partner's answer: 200, then a body that never comes whole (it says 100000 bytes).
STALLED_200 = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    b'{"status": "ok", "pad'
)


def test_a_partner_answering_200_is_delivered_however_its_body_goes_on(
    tmp_path: Path, stub: PartnerStub
) -> None:
    """The 200 is the partner's answer. The sender read the body first: one that stalled
    (or trickled on for ever) failed the request when the read timed out, so the message
    was sent again and again, and never counted delivered."""
    with HangingPartner(STALLED_200) as partner:
        settings = two_partner_settings(tmp_path, stub, partner.base)
        server = start(tmp_path / "hoststand.db", settings)
        try:
            rid = dinerly_book(server, 2, at(TOMORROW, "19:00"))
            host_cancel(server, rid)
            outbox = settle(server)
        finally:
            server.stop()
        ids = partner.ids()
    assert outbox["dead"] == 0 and outbox["delivered"] >= 2  # a replace and the cancel
    assert len(ids) == len(set(ids)), "a message the partner answered 200 was sent again"


HARBOUR = "harbour-room"  # no online booking within 2 hours, no online cancel within 24


def feed_entries(db: Path, config: Path, out: Path) -> dict[tuple[int, int], dict[str, Any]]:
    """The availability feed `hoststand feed export` writes now, by (start, party size)."""
    export = ["feed", "export", "--config", str(config), "--db", str(db), "--out", str(out)]
    done = subprocess.run(
        [str(HOSTSTAND), "--now", NOW.isoformat(), *export, "--days", "2"],
        capture_output=True,
        text=True,
        timeout=STARTUP_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [path] = out.glob("availability-*.json")
    document = json.loads(path.read_text(encoding="utf-8"))
    return {
        (e["start_sec"], e["resources"]["party_size"]): e
        for group in document["service_availability"]
        for e in group["availability"]
    }


def test_a_replace_carries_the_booking_and_cancelling_cut_offs_the_feed_publishes(
    tmp_path: Path, stub: PartnerStub
) -> None:
    """A replace is a complete replacement of its window: written without the feed's
    scheduling_rule_overrides, it took them away, so the partner offered each slot up to
    its start and let guests cancel up to it (refused here: within 2 hours, within 24)."""
    db = tmp_path / "hoststand.db"
    settings = two_partner_settings(tmp_path, stub, stub.base)
    server = start_server(db, settings=settings, configs=[SAMPLES / "harbour.toml"])
    try:
        event = booking_event(f"evt-{uuid.uuid4().hex}", 2, at(TOMORROW, "19:00"), HARBOUR)
        reply = signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], event)
        assert reply.status_code == 200, reply.text
        settle(server)
    finally:
        server.stop()
    window = replaces_for(stub, TOMORROW, HARBOUR)[-1]
    feed = feed_entries(db, SAMPLES / "harbour.toml", tmp_path / "feed")
    sent = window["availability"]
    assert sent
    for entry in sent:
        start_sec = int(datetime.fromisoformat(entry["startTime"]).timestamp())
        published = feed[(start_sec, entry["resources"]["partySize"])]
        assert (entry["spotsOpen"], entry["spotsTotal"]) == (
            published["spots_open"],
            published["spots_total"],
        )
        assert entry["schedulingRuleOverrides"] == {
            "lastBookableSec": start_sec - 120 * 60,
            "lastOnlineCancellableSec": start_sec - 1440 * 60,
        }
        assert published["scheduling_rule_overrides"] == {
            "last_bookable_sec": start_sec - 120 * 60,
            "last_online_cancellable_sec": start_sec - 1440 * 60,
        }


def test_a_booking_event_sent_again_is_answered_as_its_booking_now_stands(
    tmp_path: Path, stub: PartnerStub
) -> None:
    """A partner whose answer was lost sends the event again, maybe minutes later: it got
    the stored answer, "booked" at the first table and time, after the restaurant had moved
    the booking and then cancelled it (and told the partner, which did not know the booking
    id yet): the partner showed the guest a table that was no longer theirs."""
    server = start(tmp_path / "hoststand.db", two_partner_settings(tmp_path, stub, stub.base))
    try:
        event = booking_event(f"evt-{uuid.uuid4().hex}", 2, at(TOMORROW, "19:00"))
        first = signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], event).json()
        assert first["status"] == "booked"
        rid = first["reservation_id"]
        assert signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], event).json() == first
        host_change(server, rid, start=at(TOMORROW, "20:30"), party_size=4)
        moved = signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], event)
        assert moved.status_code == 200, moved.text
        now_stands = moved.json()
        assert (now_stands["reservation_id"], now_stands["status"]) == (rid, "booked")
        assert (now_stands["start"], now_stands["party_size"]) == (at(TOMORROW, "20:30"), 4)
        assert now_stands["start_sec"] == int(
            datetime.fromisoformat(at(TOMORROW, "20:30")).timestamp()
        )
        assert now_stands["tables"] == [now_stands["unit"]]
        host_cancel(server, rid)
        again = signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], event)
        assert again.status_code == 200, again.text
        assert {**again.json(), "status": "booked"} == now_stands
        assert again.json()["status"] == "cancelled"
    finally:
        server.stop()


def host_walk_in(server: ServerProcess, size: int) -> str:
    url = f"{server.base}/api/v1/restaurants/{MARLOWES}/walk-ins"
    reply = requests.post(url, json={"size": size}, headers=host_auth(), timeout=10)
    assert reply.status_code == 200, reply.text
    return str(reply.json()["result"])


def test_a_server_started_later_tells_partners_what_time_changed_while_it_was_down(
    tmp_path: Path, stub: PartnerStub, marlowes: Restaurant
) -> None:
    """Partners heard today's spots at 18:00, with two parties seated then (turns ending
    18:45). A server started at 18:40 (down meanwhile, or a restart) reads them still
    there until 18:55 (a party past its turn keeps its table until now + 15): the clock's
    watch took what it first saw for what partners had, and told them nothing until a
    write did, so they kept offering 18:45 at tables still taken."""
    db = tmp_path / "hoststand.db"
    settings = two_partner_settings(tmp_path, stub, stub.base)
    first = start(db, settings)
    try:
        assert host_walk_in(first, 2).startswith("seated")
        assert host_walk_in(first, 2).startswith("seated")
        settle(first)
    finally:
        first.stop()
    told = replaces_for(stub, TODAY)[-1]
    later = NOW + timedelta(minutes=40)
    now_true = current_replace(db, marlowes, TODAY, later)
    assert told != now_true  # what time alone changed
    second = start(db, settings, later)
    try:
        poll(
            lambda: replaces_for(stub, TODAY)[-1] == now_true,
            SETTLE_SECONDS,
            "a replace of today as it stands at 18:40",
            second,
        )
    finally:
        second.stop()


# -- the truth over an evening ----------------------------------------------------------------


def as_partner_holds(stub: PartnerStub) -> dict[tuple[int, int], tuple[int, int, int]]:
    """Marlowe's spots as the partner holds them, every replace applied in arrival order:
    (start, party size) -> (open, total, duration)."""
    held: dict[tuple[int, int], tuple[int, int, int]] = {}
    for request in stub.acted(AVAILABILITY):
        for window in request.json()["extendedServiceAvailability"]:
            if window["merchantId"] != MARLOWES:
                continue
            low, high = instant(window["startTimeRestrict"]), instant(window["endTimeRestrict"])
            for key in [k for k in held if low <= k[0] < high]:
                del held[key]
            for a in window["availability"]:
                key = (instant(a["startTime"]), a["resources"]["partySize"])
                held[key] = (a["spotsOpen"], a["spotsTotal"], int(a["duration"][:-1]))
    return held


def instant(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp())


def untrue_spots(server: ServerProcess, stub: PartnerStub, now: datetime) -> list[Any]:
    """The slots the partner holds open that BatchAvailabilityLookup says are not, or the
    other way round, from `now` on."""
    held = as_partner_holds(stub)
    keys = sorted(k for k in held if k[0] > now.timestamp())
    slot_time = [
        {"service_id": "1000", "start_sec": str(start), "duration_sec": str(held[start, n][2]),
         "resource_ids": {"party_size": n}}
        for start, n in keys
    ]  # fmt: skip
    reply = requests.post(
        f"{server.base}/v3/BatchAvailabilityLookup",
        json={"merchant_id": MARLOWES, "slot_time": slot_time},
        auth=(TABLEFINDER, V3_PASSWORD),
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    said = [a["available"] for a in reply.json()["slot_time_availability"]]
    assert len(said) == len(keys) > 0
    return [
        (k, held[k])
        for k, available in zip(keys, said, strict=True)
        if available != (held[k][0] > 0)
    ]


def untrue_notifications(server: ServerProcess, stub: PartnerStub) -> list[Any]:
    """Each booking's last notification that says otherwise than GetBookingStatus now."""
    last = {r.target: r.json() for r in stub.acted(BOOKING)}
    wrong = []
    for booking_id, told in last.items():
        reply = requests.post(
            f"{server.base}/v3/GetBookingStatus",
            json={"booking_id": booking_id},
            auth=(TABLEFINDER, V3_PASSWORD),
            timeout=10,
        )
        assert reply.status_code == 200, reply.text
        if reply.json()["booking_status"] != told["status"]:
            wrong.append((booking_id, told["status"], reply.json()["booking_status"]))
    return wrong


def test_over_an_evening_the_replaces_applied_in_order_say_what_the_lookup_says(
    tmp_path: Path, stub: PartnerStub
) -> None:
    """Partner bookings, walk-ins, a host cancel and move, a check-in, a no-show by the
    clock and two restarts later in the evening: after each, the partner's spots (its
    replaces applied in the order they came) are the lookup's, and each booking's last
    notification says its status as GetBookingStatus does."""
    db = tmp_path / "hoststand.db"
    settings = two_partner_settings(tmp_path, stub, stub.base)
    phases = [NOW, NOW + timedelta(minutes=65), NOW + timedelta(minutes=110)]
    server = start(db, settings, phases[0])
    try:
        at_seven = partner_book(server, 2, at(TODAY, "19:00"))
        late = partner_book(server, 4, at(TODAY, "19:30"))  # never comes: a no-show at 19:45
        cancelled = partner_book(server, 6, at(TODAY, "20:00"))
        moved = partner_book(server, 2, at(TOMORROW, "20:30"))
        host_walk_in(server, 2)
        host_walk_in(server, 4)
        host_cancel(server, cancelled)
        host_change(server, moved, start=at(TOMORROW, "21:00"))
        settle(server)
        assert untrue_spots(server, stub, phases[0]) == []
        assert untrue_notifications(server, stub) == []
    finally:
        server.stop()
    server = start(db, settings, phases[1])
    try:
        event = change_event(f"evt-{uuid.uuid4().hex}", "checked_in", at_seven)
        stamp = instant(phases[1].isoformat())
        checked_in = signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], event, t=stamp)
        assert checked_in.status_code in (200, 409), checked_in.text  # 409: T2 still taken
        poll(lambda: untrue_spots(server, stub, phases[1]) == [], SETTLE_SECONDS, "truth", server)
    finally:
        server.stop()
    server = start(db, settings, phases[2])
    try:
        poll(lambda: notifications_for(stub, late) != [], SETTLE_SECONDS, "no-show", server)
        settle(server)
        poll(lambda: untrue_spots(server, stub, phases[2]) == [], SETTLE_SECONDS, "truth", server)
        assert untrue_notifications(server, stub) == []
        told = {r.target: r.json()["status"] for r in stub.acted(BOOKING)}
        assert told == {cancelled: "CANCELED", moved: "CONFIRMED", late: "NO_SHOW"}
    finally:
        server.stop()


def test_a_feed_upload_that_hangs_does_not_hold_back_the_other_destinations(
    tmp_path: Path, stub: PartnerStub, hanging: HangingPartner
) -> None:
    """The export delivered to its destinations one after another: a partner's upload
    endpoint that hangs held the directory destination's copy until every attempt of it
    had timed out (six of 10 s, back-offs between), every run."""
    settings = two_partner_settings(tmp_path, stub, stub.base)
    published = tmp_path / "partner-feeds"
    with settings.open("a", encoding="utf-8") as f:
        f.write(
            f"""
[[export.destinations]]
kind = "http"
url = "{hanging.base}/feeds"
method = "PUT"

[[export.destinations]]
kind = "directory"
path = "{published}"
"""
        )
    server = start(tmp_path / "hoststand.db", settings)
    try:
        poll(lambda: hanging.counts()[0] >= 1, 30, "the upload held", server)
        poll(
            lambda: len(list(published.glob("*.json"))) == 3,
            SETTLE_SECONDS,
            "the feed in the directory",
            server,
        )
        assert hanging.counts()[1] == 0, "copied only once the upload had given up"
    finally:
        server.stop()


def test_a_feed_upload_whose_answer_trickles_is_cut_at_its_deadline_and_tried_again(
    tmp_path: Path, stub: PartnerStub
) -> None:
    """The export's uploads went on a plain session: each read of the destination's status
    line and headers had its timeout, none the whole, so a destination sending 'HTTP/1.1
    200 OK' a byte a second held the export thread (and every later run) for as long as it
    went on. Now the upload is cut at its deadline, as a partner's request is, and tried
    again."""
    settings = two_partner_settings(tmp_path, stub, stub.base)
    with HangingPartner(TRICKLED, every=1.0) as trickling:
        with settings.open("a", encoding="utf-8") as f:
            f.write(
                f"""
[[export.destinations]]
kind = "http"
url = "{trickling.base}/feeds"
method = "PUT"
"""
            )
        server = start(tmp_path / "hoststand.db", settings)
        try:
            poll(lambda: trickling.counts()[0] >= 1, 30, "the upload begun", server)
            # The whole answer would take ten minutes: cut, the upload is sent again.
            poll(lambda: trickling.counts()[1] >= 1, 60, "the trickle cut", server)
            poll(lambda: trickling.counts()[0] >= 2, 60, "the upload tried again", server)
        finally:
            server.stop()


FLOORPLAN = SAMPLES / "google-floorplan.toml"  # merch1, The Round Table
MERCH1 = "merch1"


def one_partner_settings(tmp: Path, stub: PartnerStub, backlog_seconds: float) -> Path:
    """tablefinder notified at `stub` (dinerly not notified), no feed destinations; /healthz
    unhealthy once a message waits `backlog_seconds`."""
    return write_settings(tmp, stub, feeds=False, backlog_seconds=backlog_seconds)


def serve(db: Path, settings: Path, configs: tuple[Path, ...]) -> ServerProcess:
    """`hoststand serve` of `configs` on `db`, once it is ready (/readyz: its /healthz may
    well be unhealthy, which is what is looked at)."""
    return start(db, settings, configs=configs, ready="/readyz")


def outbox_rows(db: Path) -> list[tuple[str, str, str]]:
    """(kind, merchant of a replace or "" for a notification, state) of each message."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT kind, payload, state FROM outbox ORDER BY id").fetchall()
    return [(k, str(json.loads(p).get("merchant_id", "")), state) for k, p, state in rows]


def health(server: ServerProcess) -> tuple[int, dict[str, Any]]:
    with requests.get(f"{server.base}/healthz", timeout=10) as reply:
        return reply.status_code, reply.json()


def test_a_restaurant_removed_from_the_configuration_has_its_replaces_made_moot_and_shown(
    tmp_path: Path, stub: PartnerStub
) -> None:
    """A restart without Marlowe's file (its operator removed it) left its pending replaces
    to be claimed and retried for ever (nothing can build them), and /healthz unhealthy once
    they waited max_backlog_seconds. Now a replace of a restaurant no server serves is made
    moot with a line saying so, counted moot (not dead: its servers may only be restarting),
    and its days stay shown unserved to the operator; a booking's notification, built from
    its message alone, is still sent; the other restaurant's replaces go out as before."""
    db = tmp_path / "hoststand.db"
    settings = one_partner_settings(tmp_path, stub, backlog_seconds=2)
    stub.stop()  # the partner is down: what the evening writes waits in the outbox
    server = serve(db, settings, (SAMPLES / "marlowes.toml", FLOORPLAN))
    try:
        rid = partner_book(server, 2, at(TOMORROW, "19:00"))
        host_cancel(server, rid)
    finally:
        assert server.stop() == 0
    assert ("availability", MARLOWES, "pending") in outbox_rows(db)
    stub.start()
    server = serve(db, settings, (FLOORPLAN,))  # Marlowe's is no longer served
    try:
        poll(lambda: stats(db)["pending"] == 0, SETTLE_SECONDS, "nothing pending", server)
        poll(lambda: health(server)[0] == 200, SETTLE_SECONDS, "a healthy server", server)
        code, body = health(server)
        found = metrics(server)
    finally:
        server.stop()
    assert code == 200 and body["status"] == "ok", body
    rows = outbox_rows(db)
    moot = rows.count(("availability", MARLOWES, "moot"))
    assert moot > 0 and body["outbox"]["dead"] == 0, body  # nothing a partner refused
    assert {row for row in rows if row[1] == MARLOWES} == {("availability", MARLOWES, "moot")}
    assert sample(found, "hoststand_outbox_dead", partner=TABLEFINDER) == 0
    assert sample(found, "hoststand_outbox_moot_total", partner=TABLEFINDER) == moot
    assert sample(found, "hoststand_outbox_unserved_days", merchant=MARLOWES) >= 1
    assert_canceled_once(stub, rid, at(TOMORROW, "19:00"), 2)  # still owed: it was sent
    windows = [w for r in stub.acted(AVAILABILITY) for w in r.json()["extendedServiceAvailability"]]
    assert {w["merchantId"] for w in windows} == {MERCH1}
    assert "marlowes-kitchen is served by no server on this store" in server.output()
    assert "delivery_moot" in server.output() and "delivery_dead" not in server.output()


def test_a_replace_another_server_on_the_store_serves_is_left_to_it_not_given_up(
    tmp_path: Path, stub: PartnerStub
) -> None:
    """Two servers on one store, each with a restaurant of its own: a replace of Marlowe's
    is due at both, and the one without Marlowe's leaves it to the other (never gives it
    up as a restaurant no server serves)."""
    db = tmp_path / "hoststand.db"
    settings = one_partner_settings(tmp_path, stub, backlog_seconds=600)
    stub.stop()  # Marlowe's messages wait, due at both servers, until the partner is back
    marlowes_server = serve(db, settings, (SAMPLES / "marlowes.toml",))
    merch1_server = serve(db, settings, (FLOORPLAN,))
    try:
        rids = [partner_book(marlowes_server, 2, at(TOMORROW, t)) for t in ("18:30", "19:00")]
        for rid in rids:
            host_cancel(marlowes_server, rid)
        stub.start()
        outbox = settle(marlowes_server)
    finally:
        merch1_server.stop()
        marlowes_server.stop()
    assert outbox["dead"] == 0, outbox
    assert "served by no server" not in merch1_server.output()
    windows = [w for r in stub.acted(AVAILABILITY) for w in r.json()["extendedServiceAvailability"]]
    assert MARLOWES in {w["merchantId"] for w in windows}
    for rid, t in zip(rids, ("18:30", "19:00"), strict=True):
        assert_canceled_once(stub, rid, at(TOMORROW, t), 2)


def test_a_replace_given_up_while_its_restaurants_server_restarts_is_sent_once_it_is_back(
    tmp_path: Path, stub: PartnerStub, marlowes: Restaurant
) -> None:
    """Two servers on one store, each with a restaurant of its own, restarted one by one (a
    rolling upgrade). While Marlowe's server restarted, nobody said it served Marlowe's, so
    the other server gave Marlowe's pending replace of tomorrow up as a removed
    restaurant's; the restarted server told partners of today only, and the partner kept
    tomorrow's 19:00 as it was before the booking. Now a server serving the restaurant again
    tells partners of every day given up meanwhile, as it now stands."""
    db = tmp_path / "hoststand.db"
    settings = one_partner_settings(tmp_path, stub, backlog_seconds=600)
    stub.stop()  # Marlowe's replace of tomorrow waits in the outbox
    marlowes_server = serve(db, settings, (SAMPLES / "marlowes.toml",))
    merch1_server = serve(db, settings, (FLOORPLAN,))
    try:
        partner_book(marlowes_server, 2, at(TOMORROW, "19:00"))
        assert marlowes_server.stop() == 0  # its turn in the rolling restart
        poll(
            lambda: ("availability", MARLOWES, "moot") in outbox_rows(db),
            SETTLE_SECONDS,
            "Marlowe's replace made moot while no server served it",
            merch1_server,
        )
        stub.start()
        marlowes_server = serve(db, settings, (SAMPLES / "marlowes.toml",))
        poll(
            lambda: replaces_for(stub, TOMORROW) != [],
            SETTLE_SECONDS,
            "tomorrow's window sent",
            marlowes_server,
        )
        settle(marlowes_server)
    finally:
        merch1_server.stop()
        marlowes_server.stop()
    [window] = replaces_for(stub, TOMORROW)
    assert window == current_replace(db, marlowes, TOMORROW, NOW)


def test_a_rolling_restart_counts_no_dead_delivery_and_shows_the_restaurant_unserved_meanwhile(
    tmp_path: Path, stub: PartnerStub
) -> None:
    """Two servers on one store, each with a restaurant of its own, restarted one by one.
    While Marlowe's server restarted, the other made Marlowe's pending replace moot and
    counted it a dead delivery (hoststand_outbox_dead, hoststand_outbox_delivery_failures_total
    {outcome="dead"}, an ERROR delivery_dead line), though the restarted server told partners
    of the day: every rolling restart raised the operator's dead-deliveries alert for
    nothing lost. Now it is counted moot, and the day is shown unserved
    (hoststand_outbox_unserved_days) only until the restaurant's server is back."""
    db = tmp_path / "hoststand.db"
    settings = one_partner_settings(tmp_path, stub, backlog_seconds=600)
    stub.stop()  # Marlowe's replace of tomorrow waits in the outbox
    marlowes_server = serve(db, settings, (SAMPLES / "marlowes.toml",))
    merch1_server = serve(db, settings, (FLOORPLAN,))
    try:
        partner_book(marlowes_server, 2, at(TOMORROW, "19:00"))
        assert marlowes_server.stop() == 0  # its turn in the rolling restart
        poll(
            lambda: any(m == MARLOWES and state != "pending" for _, m, state in outbox_rows(db)),
            SETTLE_SECONDS,
            "Marlowe's replace settled while no server served it",
            merch1_server,
        )
        meanwhile = metrics(merch1_server)
        assert sample(meanwhile, "hoststand_outbox_dead", partner=TABLEFINDER) == 0, "not lost"
        poll(
            lambda: (
                sample(metrics(merch1_server), "hoststand_outbox_moot_total", partner=TABLEFINDER)
                > 0
            ),
            SETTLE_SECONDS,
            "Marlowe's replace counted moot",
            merch1_server,
        )
        stub.start()
        marlowes_server = serve(db, settings, (SAMPLES / "marlowes.toml",))
        poll(
            lambda: replaces_for(stub, TOMORROW) != [],
            SETTLE_SECONDS,
            "tomorrow's window sent",
            marlowes_server,
        )
        settle(marlowes_server)
        after = [metrics(merch1_server), metrics(marlowes_server)]
    finally:
        merch1_server.stop()
        marlowes_server.stop()
    for found in (meanwhile, *after):
        assert sample(found, "hoststand_outbox_dead", partner=TABLEFINDER) == 0
        dead = sample(
            found, "hoststand_outbox_delivery_failures_total", outcome="dead", partner=TABLEFINDER
        )
        assert dead == 0
    assert sample(meanwhile, "hoststand_outbox_unserved_days", merchant=MARLOWES) >= 1
    for found in after:  # told again: nothing left unserved
        assert sample(found, "hoststand_outbox_unserved_days", merchant=MARLOWES) == 0
    assert "delivery_dead" not in merch1_server.output()
    assert "delivery_moot" in merch1_server.output()
    assert "moot_retold merchant=marlowes-kitchen" in marlowes_server.output()


def test_events_sent_again_for_a_party_the_host_moved_answer_the_table_they_sit_at_now(
    tmp_path: Path, stub: PartnerStub
) -> None:
    """Checked in at one table, then moved by the host: the stored answers of the booking
    and check-in events named the first table, so a partner retrying either (its first
    answer lost) was told its guests sat where they no longer did."""
    server = start(tmp_path / "hoststand.db", two_partner_settings(tmp_path, stub, stub.base))
    try:
        booking = booking_event(f"evt-{uuid.uuid4().hex}", 4, at(TODAY, "18:15"))
        rid = signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], booking).json()[
            "reservation_id"
        ]
        checked_in = change_event(f"evt-{uuid.uuid4().hex}", "checked_in", rid)
        seated = signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], checked_in).json()
        [first] = seated["tables"]
        to = "T6" if first == "T5" else "T5"
        url = f"{server.base}/api/v1/restaurants/{MARLOWES}/parties/{rid}/move"
        moved = requests.post(url, json={"unit": to}, headers=host_auth(), timeout=10)
        assert moved.status_code == 200, moved.text
        again = signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], checked_in)
        assert again.status_code == 200, again.text
        assert again.json() == {"reservation_id": rid, "status": "seated", "tables": [to]}
        booked_again = signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], booking).json()
        assert (booked_again["status"], booked_again["unit"]) == ("seated", to)
        assert booked_again["tables"] == [to]
    finally:
        server.stop()
