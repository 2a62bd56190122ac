"""The retention (store.retention, feed.service.retention): records that only answer
retries, delivered and moot messages and export records are removed once `[retention]
keep_days` past the moment they answer for; the logs, the booking index and each user's
bookings (what GetBookingStatus and ListBookings read) never are. On both stores, and through a real
`hoststand serve` (which runs it at start-up and hourly)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import requests

from feed.service import events as events_module
from feed.service.events import Events
from feed.service.retention import Retention, day_over, rules
from store import open_store
from store.log import OutboxMessage
from store.retention import BATCH, EXPORTS_KEPT, prune
from tests.integration.server_process import (
    HOST_TOKENS,
    NOW,
    NOW_T,
    SECRETS,
    SETTINGS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    signed_post,
    start_server,
)

DAY = 86400.0
MARLOWES = "marlowes-kitchen"
BASIC = ("tablefinder", "sample-basic-password")
HOST_AUTH = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
LATER = NOW + timedelta(days=40)  # the booking of Saturday 5 December is 39 days past


# -- the store's part: pages, exactly the records read, delivered messages, exports ---------


def test_a_pass_removes_only_records_past_their_time_in_pages(any_db: str) -> None:
    now = 1_800_000_000.0
    with closing(open_store(any_db)) as store:
        old = [(f"k{i:05d}", {"at": now - 40 * DAY}) for i in range(BATCH * 2 + 7)]
        recent = [(f"r{i:03d}", {"at": now - 2 * DAY}) for i in range(5)]
        for key, value in [*old, *recent]:
            store.remember("event:p1", key, value)
        store.remember("event:p1", "undated", {"digest": "x", "body": {"error": {}}})
        store.remember("booking", "bk-1", {"day": "2020-01-01"})  # not a rule's: kept
        store.remember("eventual", "k00000", {"at": 0})  # not "event:": kept

        removed = prune(store, now, 30 * DAY, {"event:": lambda _k, v: v.get("at")})

        assert removed.records == {"event:": len(old)}
        left = [key for key, _ in store.recall_prefix("event:p1", "")]
        assert left == sorted(["undated", *(key for key, _ in recent)])
        assert store.recall("booking", "bk-1") == {"day": "2020-01-01"}
        assert store.recall("eventual", "k00000") == {"at": 0}
        assert store.scopes() == ["booking", "event:p1", "eventual"]


def test_delivered_messages_and_old_exports_go_pending_and_dead_stay(any_db: str) -> None:
    now = 1_800_000_000.0
    with closing(open_store(any_db)) as store:
        messages = [
            OutboxMessage("p1", "booking", f"bk-{i}", {"n": i}, now - 50 * DAY) for i in range(4)
        ]
        store.append_all([], outbox=messages)
        ids = [item.id for item in store.pending(now, 10)]
        assert len(ids) == 4
        store.settle([(ids[0], now - 40 * DAY), (ids[1], now - DAY)], [(ids[2], None, "gone")])
        for i in range(EXPORTS_KEPT + 3):
            store.record_export({"finished_at": now - 40 * DAY + i, "n": i})
        store.record_export({"finished_at": now - DAY, "n": "recent"})

        removed = prune(store, now, 30 * DAY, {})

        assert (removed.delivered, removed.exports) == (1, 4)
        stats = store.outbox_stats()
        assert (stats["pending"], stats["delivered"], stats["dead"]) == (1, 1, 1)
        exports = store.exports(1000)
        assert len(exports) == EXPORTS_KEPT
        assert exports[0]["n"] == "recent"


def test_moot_messages_go_keep_days_after_they_were_made_moot_as_delivered_ones_and_dead_stay(
    any_db: str,
) -> None:
    """A replace made moot (no server served its restaurant; its day is noted to be told
    again) loses nothing when removed: it goes keep_days after it was made moot, however
    long it waited before; a dead one (a partner's refusal) stays for the operator."""
    now = 1_800_000_000.0
    with closing(open_store(any_db)) as store:
        messages = [
            OutboxMessage("p1", "availability", f"m/2027-01-0{i}", {"n": i}, now - 50 * DAY)
            for i in range(1, 5)
        ]
        store.append_all([], outbox=messages)
        ids = [item.id for item in store.pending(now, 10)]
        assert len(ids) == 4
        store.settle(
            [],
            [(ids[3], None, "HTTP 403: forbidden")],
            [(ids[0], now - 40 * DAY, "no server"), (ids[1], now - DAY, "no server")],
        )

        removed = prune(store, now, 30 * DAY, {})

        assert (removed.moot, removed.delivered) == (1, 0)
        assert removed.by_kind()["moot"] == 1
        stats = store.outbox_stats()
        assert (stats["pending"], stats["moot"], stats["dead"]) == (1, 1, 1)
        assert [item.id for item in store.pending(now, 10)] == [ids[2]]


def test_delivered_messages_and_exports_age_by_the_machines_clock_whatever_the_servers(
    any_db: str,
) -> None:
    """Delivered messages and export records are stamped with the machine's clock (delivery
    lag, export ages); the pass judged them by the server's, which --now pins (as the tests
    run it): pinned 40 days before the machine, it kept those 40 days old for ever, and
    pinned 40 days after, it removed a message delivered yesterday."""
    wall = 1_800_000_000.0
    with closing(open_store(any_db)) as store:
        messages = [
            OutboxMessage("p1", "booking", f"bk-{i}", {"n": i}, wall - 50 * DAY) for i in range(2)
        ]
        store.append_all([], outbox=messages)
        ids = [item.id for item in store.pending(wall, 10)]
        store.settle([(ids[0], wall - 40 * DAY), (ids[1], wall - DAY)], [])
        store.record_export({"finished_at": wall - 40 * DAY, "n": "old"})
        for i in range(EXPORTS_KEPT + 1):
            store.record_export({"finished_at": wall - DAY + i, "n": i})
        retention = Retention(store, 30, Events(), wall=lambda: wall)

        behind = retention.run(wall - 40 * DAY)
        assert (behind.delivered, behind.exports) == (1, 1)
        ahead = retention.run(wall + 40 * DAY)
        assert (ahead.delivered, ahead.exports) == (0, 0)
        assert store.outbox_stats()["delivered"] == 1
        assert len(store.exports(1000)) == EXPORTS_KEPT + 1


def test_each_rule_dates_its_records_by_the_booking_or_entry_they_answer_for(
    any_db: str,
) -> None:
    with closing(open_store(any_db)) as store:
        store.remember("booking", "bk-moved", {"day": "2026-12-20", "merchant_id": "m"})
        store.remember("waitlist", "wl-1", {"day": "2026-12-04", "created_time_seconds": 5})
        rule = rules(store)
        start = 1_796_000_000
        # A webhook's answer: when received, or the slot it booked.
        assert rule["event:"]("e", {"digest": "d", "body": {}, "at": 7.0}) == 7.0
        booked = {"digest": "d", "body": {"start_sec": start}, "at": 7.0}
        assert rule["event:"]("e", booked) == start
        cancelled = {"digest": "d", "body": {"reservation_id": "bk-moved"}}  # before "at"
        assert rule["event:"]("e", cancelled) == day_over(date(2026, 12, 20))
        assert rule["event:"]("e", {"digest": "d", "body": {"error": {}}}) is None
        # Received and first booked long ago, its booking moved later since: that day.
        moved = {"digest": "d", "body": {"reservation_id": "bk-moved", "start_sec": 9}, "at": 7.0}
        assert rule["event:"]("e", moved) == day_over(date(2026, 12, 20))
        assert rule["host:"]("k", moved) == day_over(date(2026, 12, 20))
        assert rules(store, cutoff=8.0)["event:"]("e", moved) == 9  # not before the cutoff
        # A partner's reservation id: its slot, or its booking's day once moved later.
        made = {"booking_id": "bk-moved", "reply": {"start_sec": start}}
        assert rule["partnerres:"]("m/r1", made) == day_over(date(2026, 12, 20))
        # With the pass's cutoff, a slot not before it is enough: the booking is not read.
        assert rules(store, cutoff=start)["partnerres:"]("m/r1", made) == start
        token = {"booking": {"booking_id": "bk-gone", "slot": {"start_sec": start}}}
        assert rule["v3create:"]("t", token) == start
        assert rule["v3wait:"]("t", {"waitlist_entry_id": "wl-1"}) == day_over(date(2026, 12, 4))
        assert rule["v3wait:"]("t", {"waitlist_entry_id": "wl-unknown"}) is None


# -- a real server ---------------------------------------------------------------------------


def settings_with(tmp_path: Path, keep_days: int) -> Path:
    path = tmp_path / f"server-{keep_days}.toml"
    sample = SETTINGS.read_text(encoding="utf-8")
    assert "\nkeep_days = 30\n" in sample  # the sample's [retention]
    path.write_text(sample.replace("\nkeep_days = 30\n", f"\nkeep_days = {keep_days}\n"))
    return path


def retention_line(server: ServerProcess) -> dict[str, Any]:
    """The server's log line of its retention pass (run at start-up), once written."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        for line in server.output().splitlines():
            if line.startswith("{") and json.loads(line).get("event") == "retention":
                return dict(json.loads(line))
        time.sleep(0.05)
    raise AssertionError(f"no retention line:\n{server.output()}")


def v3(server: ServerProcess, name: str, body: Any) -> Any:
    reply = requests.post(f"{server.base}/v3/{name}", json=body, auth=BASIC, timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    return reply.json()


def partner_view(server: ServerProcess, booking_ids: list[str], user: str, entry: str) -> Any:
    """What a partner can still ask about: each booking's status, the user's bookings, the
    waitlist entry."""
    return {
        "status": [v3(server, "GetBookingStatus", {"booking_id": b}) for b in booking_ids],
        "list": v3(server, "ListBookings", {"user_id": user}),
        "entry": v3(server, "GetWaitlistEntry", {"waitlist_entry_id": entry}),
    }


def serve(db: str, tmp_path: Path, now: datetime, settings: Path) -> ServerProcess:
    """A server on `db` that runs the retention as it starts: the turn of this hour, taken
    by the server before it, is handed back (a restart in the same hour would otherwise
    wait for the next hour's, as the servers sharing a store take turns)."""
    with closing(open_store(db)) as store:
        store.forget_range("turn", "retention/", "retention0")
    return start_server(
        db,
        now,
        workdir=tmp_path,
        settings=settings,
        extra=["--no-export", "--log-format", "json"],
        log=tmp_path / f"server-{time.monotonic_ns()}.log",
    )


def test_a_server_removes_what_only_answered_retries_and_partners_are_told_the_same(
    any_db: str, tmp_path: Path
) -> None:
    saturday = int(datetime(2026, 12, 5, 19, 0, tzinfo=UTC).timestamp())
    event = booking_event("evt-kept-40-days", 2, saturday, reservation_id="partner-res-1")
    user, token = "user-retention", "4242"
    server = serve(any_db, tmp_path, NOW, SETTINGS)
    try:
        hook = signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event, NOW_T)
        assert hook.status_code == 200, hook.text
        by_hook = hook.json()["reservation_id"]
        create = {
            "slot": {
                "merchant_id": MARLOWES,
                "service_id": "1000",
                "start_sec": str(saturday + 3600),
                "duration_sec": "2700",
                "resources": {"party_size": 2},
            },
            "user_information": {"user_id": user, "given_name": "Ada"},
            "idempotency_token": token,
            "payment_information": {"prepayment_status": "PREPAYMENT_NOT_PROVIDED"},
        }
        created = v3(server, "CreateBooking", create)
        by_v3 = created["booking"]["booking_id"]
        # Walk-ins (each tap with its Idempotency-Key) until the floor is full, so that a
        # partner's user joins the waitlist.
        for tap in range(30):
            walk_in = requests.post(
                f"{server.base}/api/v1/restaurants/{MARLOWES}/walk-ins",
                json={"size": 2},
                headers={**HOST_AUTH, "Idempotency-Key": f"tap-{tap}"},
                timeout=TIMEOUT,
            )
            assert walk_in.status_code == 200, walk_in.text
            if "seated" not in json.dumps(walk_in.json()):
                break
        taps = tap + 1
        entry = v3(
            server,
            "CreateWaitlistEntry",
            {
                "merchant_id": MARLOWES,
                "service_id": "1000",
                "party_size": 2,
                "user_information": {"user_id": "user-waiting", "given_name": "Bo"},
                "idempotency_token": "77",
            },
        )
        assert "waitlist_entry_id" in entry, entry
        entry = entry["waitlist_entry_id"]
        first = retention_line(server)
        assert first["removed"] == 0  # everything is today's or ahead
    finally:
        server.stop()

    # 40 days on, kept 100 days: nothing goes; what partners are told then.
    server = serve(any_db, tmp_path, LATER, settings_with(tmp_path, 100))
    try:
        assert retention_line(server)["removed"] == 0
        before = partner_view(server, [by_hook, by_v3], user, entry)
    finally:
        server.stop()
    with closing(open_store(any_db)) as store:
        log_length = len(store.entries(MARLOWES, date(2026, 12, 5)))

    server = serve(any_db, tmp_path, LATER, settings_with(tmp_path, 30))
    try:
        line = retention_line(server)
        assert line["keep_days"] == 30
        assert line["removed_event"] == 1
        assert line["removed_partnerres"] == 1
        assert line["removed_v3create"] == 1
        assert line["removed_v3wait"] == 1
        assert line["removed_host"] == taps
        assert line["removed"] == 4 + taps
        metrics = requests.get(f"{server.base}/metrics", timeout=TIMEOUT).text
        assert 'hoststand_retention_removed_total{kind="event"} 1.0' in metrics
        # The partner's bookings and entry read as they did.
        assert partner_view(server, [by_hook, by_v3], user, entry) == before
        # The event sent again now is a new request for a long-past slot: refused, and
        # nothing is booked.
        again = signed_post(
            server.base, "tablefinder", SECRETS["tablefinder"], event, int(LATER.timestamp())
        )
        assert again.status_code == 409, again.text
        # The CreateBooking's token again: a new booking of its long-past slot, refused.
        retried = v3(server, "CreateBooking", create)
        assert retried["booking_failure"]["cause"] == "SLOT_UNAVAILABLE", retried
    finally:
        server.stop()
    with closing(open_store(any_db)) as store:
        assert len(store.entries(MARLOWES, date(2026, 12, 5))) == log_length
        # The event id now answers with that refusal (kept 30 days from now).
        assert store.recall("event:tablefinder", "evt-kept-40-days")["body"] == again.json()
        assert store.recall("partnerres:tablefinder", f"{MARLOWES}/partner-res-1") is None
        assert store.recall("v3create:tablefinder", token) is None
        assert store.recall("booking", by_hook) is not None
        assert store.recall("booking", by_v3) is not None
        assert store.recall("user:tablefinder", f"{user}/{by_v3}") == MARLOWES
        assert store.recall("waitlist", entry) is not None


def test_the_retention_tells_the_events_what_it_removed(any_db: str) -> None:
    told: list[dict[str, int]] = []

    class Listener(events_module.Listener):
        def retained(self, removed: dict[str, int]) -> None:
            told.append(removed)

    with closing(open_store(any_db)) as store:
        store.remember("host:m:walk-ins", "k", {"digest": "d", "body": {}, "at": 1.0})
        events = Events([Listener()])
        Retention(store, 30, events).run(100 * DAY)
    assert told[0]["host"] == 1
    assert told[0]["delivered"] == 0


def test_two_servers_passing_at_once_remove_each_record_once_and_nothing_else(
    any_db: str,
) -> None:
    """As two servers on one store whose passes overlap (a turn handed over late): each
    deletes exactly the records it read, so between them every old record goes once, the
    recent ones stay, and neither fails."""
    now = 1_800_000_000.0
    old = {f"o{i:05d}" for i in range(BATCH * 3)}
    with closing(open_store(any_db)) as store:
        for key in sorted(old):
            store.remember("event:p1", key, {"at": now - 40 * DAY})
        for i in range(20):
            store.remember("event:p1", f"r{i:03d}", {"at": now})
    stores = [open_store(any_db), open_store(any_db)]
    try:
        with ThreadPoolExecutor(2) as pool:
            passes = list(
                pool.map(
                    lambda s: prune(s, now, 30 * DAY, {"event:": lambda _k, v: v.get("at")}),
                    stores,
                )
            )
        assert sum(p.records["event:"] for p in passes) == len(old)
        left = {key for key, _ in stores[0].recall_prefix("event:p1", "")}
        assert left == {f"r{i:03d}" for i in range(20)}
    finally:
        for s in stores:
            s.close()


def test_a_webhook_event_of_a_booking_moved_later_stays_while_the_booking_is_to_come(
    any_db: str, tmp_path: Path
) -> None:
    """A partner's reservation.requested booked Saturday 5 December; the guest phoned and the
    host moved it to Sunday 20 December. With keep_days = 1, a pass on Wednesday 9 December
    is past the first slot but not the booking: the event's record answers for the booking
    as it now is (the reservation id's and CreateBooking token's records already follow a
    move), so the event sent again is answered as the booking now stands, not refused as a
    request for a past slot (the partner would drop a booking the restaurant holds)."""
    saturday = int(datetime(2026, 12, 5, 19, 0, tzinfo=UTC).timestamp())
    event = booking_event("evt-moved-later", 2, saturday)
    keep_one_day = settings_with(tmp_path, 1)
    server = serve(any_db, tmp_path, NOW, keep_one_day)
    try:
        hook = signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event, NOW_T)
        assert hook.status_code == 200, hook.text
        booking_id = hook.json()["reservation_id"]
        moved = requests.post(
            f"{server.base}/api/v1/restaurants/{MARLOWES}/reservations/{booking_id}/change",
            json={"start": "2026-12-20T19:00"},
            headers=HOST_AUTH,
            timeout=TIMEOUT,
        )
        assert moved.status_code == 200, moved.text
    finally:
        server.stop()

    wednesday = NOW + timedelta(days=5)
    server = serve(any_db, tmp_path, wednesday, keep_one_day)
    try:
        line = retention_line(server)
        assert line["removed_event"] == 0, line
        again = signed_post(
            server.base, "tablefinder", SECRETS["tablefinder"], event, int(wednesday.timestamp())
        )
        assert again.status_code == 200, again.text
        assert again.json()["reservation_id"] == booking_id
        assert again.json()["status"] == "booked"
        assert again.json()["start_sec"] == moved.json()["start_sec"]
    finally:
        server.stop()


def test_a_record_written_again_after_another_pass_removed_it_stays(any_db: str) -> None:
    """Two passes overlapping (a long pass of a big store runs past the hour, and the next
    hour's server starts its own): this pass has read an old partner reservation id's
    record, the other removes it, and the partner gives that reservation id a new booking
    (a new record under the same key) before this pass removes what it read. It removes
    only the record it read, never the new one: without it, the new booking's reservation
    id sent again under a new event id (the partner's retry after a crash) would book a
    second table."""
    now = 1_800_000_000.0
    scope, key = "partnerres:p1", "m/r-1"
    old = {"booking_id": "bk-old", "reply": {"start_sec": now - 40 * DAY}}
    new = {"booking_id": "bk-new", "reply": {"start_sec": now + DAY}}
    with closing(open_store(any_db)) as store, closing(open_store(any_db)) as other:
        store.remember(scope, key, old)

        def meanwhile(_key: str, value: Any) -> float:
            # Asked once this pass has read its page: the other pass and the partner act.
            if value == old:
                other.forget_range(scope, key, key + "\x01")
                assert other.remember(scope, key, new) == new
            return float(value["reply"]["start_sec"])

        removed = prune(store, now, 30 * DAY, {"partnerres:": meanwhile})

        assert removed.records == {"partnerres:": 0}
        assert store.recall(scope, key) == new
