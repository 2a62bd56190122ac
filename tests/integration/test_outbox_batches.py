"""Availability replaces go out one request per restaurant: the sender batches a restaurant's
due days into one replace (a window each, every message id in the header), and each
restaurant's days fall due at the same moments (`replace_due`).

The sender runs against a real SQLite file and a partner stub on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from feed.http.metrics import Metrics
from feed.push import outbox
from feed.push.outbox import SERVES_SECONDS, OutboxSender, batches, replace_body
from feed.service.days import DayBook
from feed.service.events import Events
from feed.service.notify import AVAILABILITY, BOOKING, replace_due
from feed.settings import Partner
from feed.venue import calendar
from feed.venue.restaurant import load_restaurant
from store import open_store, retention
from store.log import LogAppend, NewEntry, OutboxItem, OutboxMessage
from store.retention import DAY
from store.sqlite import SQLiteStore
from tests.integration.partner_stub import UNAVAILABLE, PartnerStub

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"
MERCHANT = "marlowes-kitchen"
PARTNER = "tablefinder"
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
DAYS = [date(2026, 12, 5), date(2026, 12, 4), date(2026, 12, 6)]  # queued out of order


def item(id_: int, kind: str, key: str, partner: str = PARTNER) -> OutboxItem:
    payload: dict[str, str] = {"status": "CANCELED"}
    if kind == AVAILABILITY:
        merchant, day = key.split("/")
        payload = {"merchant_id": merchant, "day": day}
    return OutboxItem(id_, partner, kind, key, payload, 0.0, 0)


# -- batches ------------------------------------------------------------------------------------


def test_a_restaurants_replaces_share_a_request_and_a_booking_notification_goes_alone() -> None:
    items = [
        item(1, AVAILABILITY, "a/2026-12-05"),
        item(2, BOOKING, "b-1"),
        item(3, AVAILABILITY, "b/2026-12-05"),
        item(4, AVAILABILITY, "a/2026-12-06"),
        item(5, BOOKING, "b-2"),
        item(6, AVAILABILITY, "a/2026-12-05", partner="other"),
    ]
    groups = [[one.id for one in group] for group in batches(items)]
    assert groups == [[1, 4], [2], [3], [5], [6]]


def test_a_batch_holds_at_most_max_windows_days() -> None:
    days = [f"a/2027-01-{d:02d}" for d in range(1, outbox.MAX_WINDOWS + 3)]
    groups = batches([item(i, AVAILABILITY, key) for i, key in enumerate(days)])
    assert [len(group) for group in groups] == [outbox.MAX_WINDOWS, 2]


# -- replace_due --------------------------------------------------------------------------------

times = st.floats(min_value=1.7e9, max_value=1.9e9, allow_nan=False)
windows = st.floats(min_value=0.05, max_value=240.0)
merchants = st.text(min_size=1, max_size=30)


@given(merchants, times, windows)
def test_a_replace_is_due_within_one_window(merchant: str, now: float, window: float) -> None:
    due = replace_due(merchant, now, window)
    assert now <= due < now + window * (1 + 1e-9)


@given(merchants, times, windows, st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
def test_changes_before_a_restaurants_send_moment_go_out_with_it(
    merchant: str, now: float, window: float, share: float
) -> None:
    due = replace_due(merchant, now, window)
    later = now + (due - now) * share  # a later change, still before that moment
    assume(later < due)  # share near 1 can round `later` up to the moment itself: not before
    assert replace_due(merchant, later, window) == pytest.approx(due, abs=1e-6)


def test_without_a_window_a_replace_is_due_at_once() -> None:
    assert replace_due(MERCHANT, 1_796_400_000.5, 0.0) == 1_796_400_000.5


def test_restaurants_send_at_moments_spread_over_the_window() -> None:
    now = 1_796_400_000.0
    offsets = sorted(replace_due(f"bench-{i:03d}", now, 10.0) - now for i in range(20))
    assert len(set(offsets)) == 20
    assert offsets[0] < 2.5 and offsets[-1] > 7.5  # not bunched in one part of the window


# -- the sender against a real store and partner ------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        yield store


@pytest.fixture
def stub() -> Iterator[PartnerStub]:
    stub = PartnerStub(token="t")
    try:
        yield stub
    finally:
        stub.close()


def enqueue(store: SQLiteStore, message: OutboxMessage) -> None:
    day = date(2026, 1, 1)  # a log day of its own: the message is what is under test
    seq = len(store.entries("queue", day))
    entry = NewEntry(["board", seq], {"ok": True}, 0.0)
    store.append_all([LogAppend("queue", day, seq, [entry])], outbox=[message])


def test_a_restaurants_due_days_go_out_as_one_replace_listing_every_message_id(
    store: SQLiteStore, stub: PartnerStub
) -> None:
    r = load_restaurant(SAMPLE)
    assert r.merchant_id == MERCHANT
    book = DayBook(store, r)
    for day in DAYS:
        book.book(day, calendar.slots(r, day)[4], 2, NOW)
    now = time.time()
    for day in DAYS:
        payload = {"merchant_id": MERCHANT, "day": day.isoformat()}
        key = f"{MERCHANT}/{day.isoformat()}"
        enqueue(store, OutboxMessage(PARTNER, AVAILABILITY, key, payload, now, merge=True))
    partner = Partner(PARTNER, None, None, notify_url=stub.base, notify_token="t")
    sender = OutboxSender(store, {MERCHANT: book}, {PARTNER: partner}, clock=lambda: NOW)
    try:
        assert sender.run_once() == len(DAYS)
    finally:
        sender._pool.shutdown()
    [request] = stub.acted(AVAILABILITY)
    assert store.pending(now + 10**6) == []  # all three delivered by the one request
    assert len(request.message_ids) == len(set(request.message_ids)) == len(DAYS)
    body = request.json()
    assert body == replace_body(book, sorted(DAYS), NOW)  # a window per day, in day order
    starts = [w["startTimeRestrict"][:10] for w in body["extendedServiceAvailability"]]
    assert starts == [d.isoformat() for d in sorted(DAYS)]
    assert json.loads(request.body) == body
    assert store.outbox_stats(recent=10)["delivered"] == len(DAYS)


def test_a_replace_no_sender_on_the_store_serves_is_given_up_one_another_serves_is_left(
    any_db: str, stub: PartnerStub
) -> None:
    """A process without Marlowe's (its file removed from its configuration) leaves
    Marlowe's replace to a live sender that serves it, sends a booking's notification (built
    from its message alone), and once no sender serves Marlowe's gives the replace up: it
    used to claim it and retry it for ever, as nothing here can build it."""
    store = open_store(any_db)
    partner = Partner(PARTNER, None, None, notify_url=stub.base, notify_token="t")
    try:
        day = DAYS[0]
        payload = {"merchant_id": MERCHANT, "day": day.isoformat()}
        now = time.time()
        replace = OutboxMessage(PARTNER, AVAILABILITY, f"{MERCHANT}/{day}", payload, now)
        notification = OutboxMessage(PARTNER, BOOKING, "b1", {"status": "CANCELED"}, now)
        entry = NewEntry(["board", 0], {"ok": True}, 0.0)
        store.append_all(
            [LogAppend("queue", date(2026, 1, 1), 0, [entry])], outbox=[replace, notification]
        )
        serving = OutboxSender(store, {MERCHANT: DayBook(store, load_restaurant(SAMPLE))}, {})
        other = OutboxSender(store, {}, {PARTNER: partner})
        assert other.run_once() == 1  # the notification
        [left] = store.pending(time.time() + 10**6)
        assert left.kind == AVAILABILITY and left.attempts == 0  # never claimed here
        stopped = threading.Event()
        stopped.set()
        serving.loop(stopped)  # the serving one stops: it serves Marlowe's no longer
        assert other.run_once() == 0
        other._pool.shutdown()
        assert store.pending(time.time() + 10**6) == []
        counts = store.outbox_stats()
        assert (counts["delivered"], counts["dead"], counts["moot"]) == (1, 0, 1), counts
        assert [r.target for r in stub.acted(BOOKING)] == ["b1"]
        assert stub.acted(AVAILABILITY) == []
    finally:
        store.close()


def test_a_replace_a_live_sender_serves_is_left_to_it_whatever_the_senders_clocks_say(
    any_db: str, stub: PartnerStub
) -> None:
    """Senders on one store whose clocks differ by 2 minutes (one ahead, one behind the
    sender serving Marlowe's): each read only the records of the last intervals by its own
    clock, and the one ahead removed the others' as past, so both gave Marlowe's replace up
    as a restaurant no server serves while its server ran. A sender serving it is seen
    whatever the clocks say (within 5 minutes); once it stops, the replace is given up."""
    store = open_store(any_db)
    partner = Partner(PARTNER, None, None, notify_url=stub.base, notify_token="t")
    try:
        day = DAYS[0]
        payload = {"merchant_id": MERCHANT, "day": day.isoformat()}
        replace = OutboxMessage(PARTNER, AVAILABILITY, f"{MERCHANT}/{day}", payload, time.time())
        store.append_all([], outbox=[replace])
        serving = OutboxSender(store, {MERCHANT: DayBook(store, load_restaurant(SAMPLE))}, {})
        skewed = [
            OutboxSender(store, {}, {PARTNER: partner}, wall=lambda s=s: time.time() + s)
            for s in (120.0, -120.0)
        ]
        for sender in (*skewed, *skewed):
            assert sender.run_once() == 0
        [left] = store.pending(time.time() + 10**6)
        assert left.kind == AVAILABILITY and left.attempts == 0  # never claimed, never dead
        stopped = threading.Event()
        stopped.set()
        serving.loop(stopped)  # the serving one stops: it serves Marlowe's no longer
        assert skewed[0].run_once() == 0
        for sender in skewed:
            sender._pool.shutdown()
        assert store.pending(time.time() + 10**6) == []
        assert store.outbox_stats()["moot"] == 1
        assert stub.acted(AVAILABILITY) == []
    finally:
        store.close()


def samples(metrics: Metrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of what /metrics would answer, parsed by prometheus_client's parser."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for sample in family.samples
    }


def test_a_replace_made_moot_is_counted_moot_and_unserved_never_as_a_dead_delivery(
    any_db: str, stub: PartnerStub
) -> None:
    """A replace of a restaurant no sender on the store served was counted a dead delivery
    (hoststand_outbox_dead, hoststand_outbox_delivery_failures_total{outcome="dead"}, an
    ERROR delivery_dead line), though no request was made and nothing is lost: the first
    server serving the restaurant again tells partners of the day. Each rolling restart
    raised the operator's dead-deliveries alert so. Now it is counted moot, and its day is
    shown unserved (for a restaurant removed for good, it stays so)."""
    store = open_store(any_db)
    partner = Partner(PARTNER, None, None, notify_url=stub.base, notify_token="t")
    metrics = Metrics(store, [PARTNER])
    try:
        day = DAYS[0]
        payload = {"merchant_id": MERCHANT, "day": day.isoformat()}
        replace = OutboxMessage(PARTNER, AVAILABILITY, f"{MERCHANT}/{day}", payload, time.time())
        store.append_all([], outbox=[replace])
        unserving = OutboxSender(store, {}, {PARTNER: partner}, events=Events([metrics]))
        assert unserving.run_once() == 0
        unserving._pool.shutdown()
        found = samples(metrics)
        counts = store.outbox_stats()
    finally:
        store.close()
    assert (counts["pending"], counts["dead"], counts["moot"]) == (0, 0, 1), counts
    by_partner = frozenset({("partner", PARTNER)})
    assert found[("hoststand_outbox_dead", by_partner)] == 0
    dead_sends = frozenset({("partner", PARTNER), ("outcome", "dead")})
    assert found.get(("hoststand_outbox_delivery_failures_total", dead_sends), 0) == 0
    assert found[("hoststand_outbox_moot_total", by_partner)] == 1
    assert found[("hoststand_outbox_unserved_days", frozenset({("merchant", MERCHANT)}))] == 1
    assert stub.acted(AVAILABILITY) == []


def test_a_day_made_moot_waits_for_its_restaurants_server_by_the_senders_clock(
    any_db: str, stub: PartnerStub
) -> None:
    """A day made moot was forgotten once over by the machine's clock, whatever the clock
    the server runs by (`--now`): a server started on 2026-12-04 forgot 2026-12-05's note
    from 2026-12-07 on (the rolling-restart tests then failed), and the first server back
    told partners of nothing. Days are over by the clock the days are told by."""
    store = open_store(any_db)
    partner = Partner(PARTNER, None, None, notify_url=stub.base, notify_token="t")
    wall = [(NOW + timedelta(days=3)).timestamp()]  # the machine, three days on
    try:
        day = DAYS[0]
        payload = {"merchant_id": MERCHANT, "day": day.isoformat()}
        replace = OutboxMessage(PARTNER, AVAILABILITY, f"{MERCHANT}/{day}", payload, wall[0])
        store.append_all([], outbox=[replace])
        unserving = OutboxSender(
            store, {}, {PARTNER: partner}, clock=lambda: NOW, wall=lambda: wall[0]
        )
        note = (f"{day}/{MERCHANT}", MERCHANT)
        assert unserving.run_once() == 0
        assert store.recall_prefix(outbox.MOOT_SCOPE, "") == [note]
        wall[0] += SERVES_SECONDS  # its next look at the notes
        assert unserving.run_once() == 0
        unserving._pool.shutdown()
        assert store.recall_prefix(outbox.MOOT_SCOPE, "") == [note]
    finally:
        store.close()


def test_a_replace_made_moot_is_removed_keep_days_after_it_was_made_moot_not_after_it_was_queued(
    any_db: str, stub: PartnerStub
) -> None:
    """A replace queued 50 days before a sender that serves none of its restaurant made it
    moot is kept by a 30-day retention until 30 days after that, as a delivered message
    is kept 30 days after its delivery, and removed then."""
    store = open_store(any_db)
    partner = Partner(PARTNER, None, None, notify_url=stub.base, notify_token="t")
    made_moot = time.time()
    try:
        day = DAYS[0]
        payload = {"merchant_id": MERCHANT, "day": day.isoformat()}
        queued = made_moot - 50 * DAY
        store.append_all([], outbox=[OutboxMessage(PARTNER, AVAILABILITY, "k", payload, queued)])
        unserving = OutboxSender(store, {}, {PARTNER: partner}, wall=lambda: made_moot)
        assert unserving.run_once() == 0
        unserving._pool.shutdown()
        assert store.outbox_stats()["moot"] == 1
        retention.prune(store, made_moot + 29 * DAY, 30 * DAY, {})
        assert store.outbox_stats()["moot"] == 1  # not aged by its queueing, 79 days before
        retention.prune(store, made_moot + 31 * DAY, 30 * DAY, {})
        assert store.outbox_stats()["moot"] == 0
    finally:
        store.close()


def test_a_failed_message_is_due_again_by_the_senders_own_clock(
    any_db: str, stub: PartnerStub
) -> None:
    """A sender reads what is due by its own clock (`wall`) but stamped a failed message's
    retry, its claims and its deliveries with the machine's: a sender whose clock stood
    before the machine's (a test's, pinned to 2026-12-04) never sent a message that failed
    once again, however far on its clock went."""
    store = open_store(any_db)
    partner = Partner(PARTNER, None, None, notify_url=stub.base, notify_token="t")
    wall = [NOW.timestamp()]  # before the machine's, whatever the real date
    try:
        cancelled = OutboxMessage(PARTNER, BOOKING, "b1", {"status": "CANCELED"}, wall[0])
        store.append_all([], outbox=[cancelled])
        sender = OutboxSender(
            store, {}, {PARTNER: partner}, clock=lambda: NOW, wall=lambda: wall[0]
        )
        stub.fail_next(1, UNAVAILABLE)
        assert sender.run_once() == 0
        wall[0] += 3600  # past its back-off
        assert sender.run_once() == 1
        sender._pool.shutdown()
        assert [r.target for r in stub.acted(BOOKING)] == ["b1"]
        assert store.pending(wall[0] + 10**6) == []
    finally:
        store.close()
