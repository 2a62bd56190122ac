"""The outbox and the export records of every store (an SQLite file, a PostgreSQL schema):
delivery order per key, back-off, merging of queued window replaces, claims, outcomes,
statistics, and atomicity with the log."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from datetime import date

import pytest

from store import open_store
from store.log import (
    Backlog,
    ConcurrencyConflict,
    DuplicateKey,
    LogAppend,
    LogStore,
    NewEntry,
    OutboxItem,
    OutboxMessage,
)

T0 = 1_796_400_000.0  # 2026-12-04 18:40 UTC, fixed: never today's clock
LATER = T0 + 10**6  # far past every back-off in these tests
DAY = date(2026, 12, 4)
MERCHANT = "marlowes-kitchen"
PARTNER = "tablefinder"
WINDOW = f"{MERCHANT}/{DAY.isoformat()}"


def booking(
    key: str, status: str = "CANCELED", at: float = T0, partner: str = PARTNER
) -> OutboxMessage:
    return OutboxMessage(partner, "booking", key, {"status": status, "id": key}, at)


def window(at: float = T0, key: str = WINDOW, partner: str = PARTNER) -> OutboxMessage:
    payload = {"merchant_id": MERCHANT, "day": key.split("/")[1]}
    return OutboxMessage(partner, "availability", key, payload, at, merge=True)


def entry(n: int) -> NewEntry:
    return NewEntry(["board", n], {"n": n}, T0 + n)


@pytest.fixture
def db(any_db: str) -> str:
    return any_db


@pytest.fixture
def store(db: str) -> Iterator[LogStore]:
    store = open_store(db)
    yield store
    store.close()


def enqueue(store: LogStore, *messages: OutboxMessage) -> None:
    """Each message with its own one-entry log append, as the service days write them."""
    for message in messages:
        seq = len(store.entries(MERCHANT, DAY))
        store.append_all([LogAppend(MERCHANT, DAY, seq, [entry(seq)])], outbox=[message])


def keys(items: list[OutboxItem]) -> list[tuple[str, str, str]]:
    return [(i.kind, i.key, i.payload.get("status", "")) for i in items]


# -- order -------------------------------------------------------------------------------------


def test_pending_gives_the_oldest_message_of_each_key_only(store: LogStore) -> None:
    enqueue(store, booking("bk-1", "CANCELED"), booking("bk-2"), booking("bk-1", "NO_SHOW"))
    assert keys(store.pending(T0)) == [
        ("booking", "bk-1", "CANCELED"),
        ("booking", "bk-2", "CANCELED"),
    ]


def test_the_next_message_of_a_key_is_due_once_the_one_before_is_delivered(
    store: LogStore,
) -> None:
    enqueue(store, booking("bk-1", "CANCELED"), booking("bk-1", "NO_SHOW"))
    [first] = store.pending(T0)
    store.delivered(first.id, T0 + 1)
    [second] = store.pending(T0 + 1)
    assert (second.payload["status"], second.attempts) == ("NO_SHOW", 0)
    assert second.id > first.id


def test_a_message_in_back_off_holds_back_later_ones_with_its_key(store: LogStore) -> None:
    enqueue(store, booking("bk-1", "CANCELED"), booking("bk-1", "NO_SHOW"))
    [first] = store.pending(T0)
    store.failed(first.id, T0 + 60, "HTTP 503")
    assert store.pending(T0 + 30) == []
    [again] = store.pending(T0 + 60)
    assert (again.id, again.attempts) == (first.id, 1)


def test_a_message_in_back_off_does_not_hold_back_other_keys(store: LogStore) -> None:
    enqueue(store, booking("bk-1"), booking("bk-2"), window())
    [first, *_] = store.pending(T0)
    store.failed(first.id, T0 + 60, "HTTP 503")
    assert keys(store.pending(T0 + 1)) == [
        ("booking", "bk-2", "CANCELED"),
        ("availability", WINDOW, ""),
    ]


def test_messages_in_back_off_do_not_use_up_the_limit_of_due_messages(
    store: LogStore,
) -> None:
    # A partner that is down (its messages in back-off) must not delay another partner's
    # messages queued after them: the limit counts messages that are due.
    enqueue(store, *(booking(f"bk-{n}", partner="dinerly") for n in range(3)))
    for item in store.pending(T0):
        store.failed(item.id, T0 + 300, "ConnectionError")
    enqueue(store, booking("bk-9"))
    assert keys(store.pending(T0 + 1, limit=2)) == [("booking", "bk-9", "CANCELED")]


def test_the_due_messages_of_partners_skipped_do_not_use_up_the_limit(store: LogStore) -> None:
    # A partner whose requests hang: the sender has as many of its requests in flight as
    # it makes at once, and its other due messages must not keep every other partner's out.
    enqueue(store, *(booking(f"bk-{n}", partner="dinerly") for n in range(3)))
    enqueue(store, booking("bk-9"))
    assert keys(store.pending(T0, limit=2, skip=["dinerly"])) == [("booking", "bk-9", "CANCELED")]
    assert len(store.pending(T0, limit=10, skip=["dinerly", PARTNER])) == 0
    assert len(store.pending(T0, limit=10, skip=[])) == 4


def test_a_given_up_message_no_longer_holds_back_its_key(store: LogStore) -> None:
    enqueue(store, booking("bk-1", "CANCELED"), booking("bk-1", "NO_SHOW"))
    [first] = store.pending(T0)
    store.failed(first.id, None, "HTTP 400: bad booking")
    assert keys(store.pending(T0)) == [("booking", "bk-1", "NO_SHOW")]


# -- merging -------------------------------------------------------------------------------------


def test_a_window_replace_joins_the_one_already_queued_for_that_window(
    store: LogStore,
) -> None:
    enqueue(store, window(T0), window(T0 + 5), window(T0 + 9))
    [queued] = store.pending(LATER)
    assert queued.created_at == T0  # lag is measured from the oldest change it carries
    assert store.outbox_stats()["pending"] == 1


def test_a_window_replace_joins_one_waiting_out_a_back_off(store: LogStore) -> None:
    enqueue(store, window(T0))
    [queued] = store.pending(T0)
    store.failed(queued.id, T0 + 60, "HTTP 503")
    enqueue(store, window(T0 + 1))
    assert store.pending(T0 + 30) == []
    assert [i.id for i in store.pending(T0 + 60)] == [queued.id]


def test_a_window_replace_queues_again_once_the_last_one_was_delivered(
    store: LogStore,
) -> None:
    enqueue(store, window(T0))
    [first] = store.pending(T0)
    store.delivered(first.id, T0 + 1)
    enqueue(store, window(T0 + 2))
    [second] = store.pending(T0 + 2)
    assert second.id != first.id and second.created_at == T0 + 2


def test_a_window_replace_does_not_join_one_being_sent(store: LogStore) -> None:
    # Its content was worked out when the sender took it: a later change needs its own send.
    enqueue(store, window(T0))
    [sending] = store.pending(T0)
    store.claim([sending.id], T0)
    enqueue(store, window(T0 + 1))
    assert store.outbox_stats()["pending"] == 2
    assert store.pending(T0 + 1) == []  # the one behind waits for the one being sent
    store.delivered(sending.id, T0 + 2)
    [behind] = store.pending(T0 + 2)
    assert behind.id != sending.id and behind.created_at == T0 + 1


def test_a_claim_of_a_sender_that_died_is_released_on_start(store: LogStore) -> None:
    enqueue(store, booking("bk-1"))
    [taken] = store.pending(T0)
    store.claim([taken.id], T0)
    assert store.pending(T0 + 1) == []
    store.release_claims()
    assert [i.id for i in store.pending(T0 + 1)] == [taken.id]


def test_a_message_is_claimed_by_one_sender_only(store: LogStore) -> None:
    # Two senders (processes) may read the same pending list: the second claim gets nothing.
    enqueue(store, booking("bk-1"), booking("bk-2"))
    due = [i.id for i in store.pending(T0)]
    assert store.claim(due, T0) == due
    assert store.claim(due, T0 + 1) == []


def test_a_delivered_message_cannot_be_claimed(store: LogStore) -> None:
    enqueue(store, booking("bk-1"))
    [item] = store.pending(T0)
    store.delivered(item.id, T0)
    assert store.claim([item.id], T0 + 1) == []


def test_window_replaces_merge_per_partner_and_per_window(store: LogStore) -> None:
    other_day = f"{MERCHANT}/2026-12-05"
    enqueue(store, window(T0), window(T0, key=other_day), window(T0, partner="dinerly"))
    enqueue(store, window(T0 + 1), window(T0 + 1, key=other_day), window(T0 + 1, partner="dinerly"))
    assert sorted((i.partner, i.key) for i in store.pending(LATER)) == [
        ("dinerly", WINDOW),
        (PARTNER, WINDOW),
        (PARTNER, other_day),
    ]


def test_booking_notifications_are_never_merged(store: LogStore) -> None:
    enqueue(store, booking("bk-1", "CANCELED"), booking("bk-1", "CANCELED"))
    assert store.outbox_stats()["pending"] == 2


# -- outcomes and statistics ---------------------------------------------------------------------


def test_a_delivered_message_is_counted_and_never_sent_again(store: LogStore) -> None:
    enqueue(store, booking("bk-1"))
    [item] = store.pending(T0)
    store.delivered(item.id, T0 + 2.5)
    assert store.pending(LATER) == []
    stats = store.outbox_stats()
    assert (stats["pending"], stats["delivered"], stats["dead"]) == (0, 1, 0)


def test_a_message_given_up_is_dead_and_never_sent_again(store: LogStore) -> None:
    enqueue(store, booking("bk-1"))
    [item] = store.pending(T0)
    store.failed(item.id, None, "HTTP 403: forbidden")
    assert store.pending(LATER) == []
    stats = store.outbox_stats()
    assert (stats["pending"], stats["delivered"], stats["dead"]) == (0, 0, 1)
    assert stats["oldest_pending_created_at"] is None


def test_a_moot_message_is_never_sent_again_and_counted_neither_pending_nor_dead(
    store: LogStore,
) -> None:
    """A replace made moot (no server served its restaurant; its day is told again once one
    does) was recorded dead, as a partner's refusal: the operator's dead count rose with
    every rolling restart. It has a state of its own."""
    enqueue(store, window(), booking("bk-1"))
    replace, notification = store.pending(T0)
    store.settle([], [(notification.id, None, "HTTP 403: forbidden")], [(replace.id, T0, "moot")])
    assert store.pending(LATER) == []
    stats = store.outbox_stats()
    assert (stats["pending"], stats["dead"], stats["moot"]) == (0, 1, 1)
    assert store.outbox_backlog() == {PARTNER: Backlog(pending=0, dead=1)}
    enqueue(store, window(at=T0 + 5))  # a later change of the window queues anew
    [again] = store.pending(LATER)
    assert again.key == WINDOW and again.id > replace.id


def test_every_failed_attempt_is_counted(store: LogStore) -> None:
    enqueue(store, booking("bk-1"))
    for n in range(3):
        [item] = store.pending(T0 + n)
        assert item.attempts == n
        store.failed(item.id, T0 + n + 1, f"HTTP 503 #{n}")
    [item] = store.pending(T0 + 3)
    assert item.attempts == 3


def test_stats_give_the_lag_from_change_to_delivery_and_the_oldest_pending(
    store: LogStore,
) -> None:
    enqueue(store, booking("bk-1", at=T0), booking("bk-2", at=T0 + 10), booking("bk-3", at=T0 + 20))
    one, two, three = store.pending(T0 + 20)
    store.delivered(two.id, T0 + 14)  # 4 s after its change
    store.delivered(one.id, T0 + 1.5)  # 1.5 s
    stats = store.outbox_stats()
    assert stats["recent_lags"] == [1.5, 4.0]
    assert stats["oldest_pending_created_at"] == three.created_at == T0 + 20
    assert store.outbox_stats(recent=1)["recent_lags"] == [4.0]  # the last delivered by id


def test_the_backlog_counts_pending_and_dead_messages_per_partner(store: LogStore) -> None:
    enqueue(store, booking("bk-1", at=T0), booking("bk-2", at=T0 + 10))
    enqueue(store, booking("bk-3", at=T0 + 5, partner="dinerly"))
    enqueue(store, booking("bk-4", at=T0 + 7, partner="dinerly"))
    first, _, third, fourth = sorted(store.pending(T0 + 20), key=lambda i: i.id)
    store.delivered(first.id, T0 + 11)
    store.failed(third.id, None, "HTTP 403: forbidden")
    store.failed(fourth.id, T0 + 30, "HTTP 503")  # in back-off: still pending
    assert store.outbox_backlog() == {
        PARTNER: Backlog(pending=1, dead=0, oldest_pending_created_at=T0 + 10),
        "dinerly": Backlog(pending=1, dead=1, oldest_pending_created_at=T0 + 7),
    }


def test_a_partner_with_everything_delivered_has_no_backlog(store: LogStore) -> None:
    assert store.outbox_backlog() == {}
    enqueue(store, booking("bk-1"))
    [item] = store.pending(T0)
    store.delivered(item.id, T0 + 1)
    assert store.outbox_backlog() == {}


def test_pending_messages_survive_closing_and_reopening_the_file(db: str) -> None:
    with closing(open_store(db)) as store:
        enqueue(store, booking("bk-1"), window())
        [first, _] = store.pending(T0)
        store.failed(first.id, T0 + 5, "ConnectionError")
    with closing(open_store(db)) as reopened:
        assert keys(reopened.pending(T0 + 5)) == [
            ("booking", "bk-1", "CANCELED"),
            ("availability", WINDOW, ""),
        ]
        assert reopened.pending(T0 + 5)[0].attempts == 1


# -- atomic with the log -------------------------------------------------------------------------


def test_a_message_commits_with_the_log_entry_that_reports_it(store: LogStore) -> None:
    store.append_all([LogAppend(MERCHANT, DAY, 0, [entry(0)])], outbox=[booking("bk-1")])
    assert [e.seq for e in store.entries(MERCHANT, DAY)] == [0]
    assert keys(store.pending(T0)) == [("booking", "bk-1", "CANCELED")]


def test_an_append_that_loses_the_race_writes_no_message(store: LogStore) -> None:
    store.append_all([LogAppend(MERCHANT, DAY, 0, [entry(0)])])
    with pytest.raises(ConcurrencyConflict):
        store.append_all(
            [LogAppend(MERCHANT, DAY, 0, [entry(1)])], outbox=[booking("bk-1"), window()]
        )
    assert store.pending(LATER) == []
    assert store.outbox_stats()["pending"] == 0


def test_an_append_with_a_key_already_stored_writes_no_message(store: LogStore) -> None:
    store.remember("event:tablefinder", "evt-1", {"status": 200})
    with pytest.raises(DuplicateKey):
        store.append_all(
            [LogAppend(MERCHANT, DAY, 0, [entry(0)])],
            remember=[("event:tablefinder", "evt-1", {"status": 200})],
            outbox=[booking("bk-1")],
        )
    assert store.entries(MERCHANT, DAY) == []
    assert store.pending(LATER) == []


def test_an_append_that_fails_in_the_second_log_writes_no_message(store: LogStore) -> None:
    store.append_all([LogAppend(MERCHANT, date(2026, 12, 5), 0, [entry(0)])])
    with pytest.raises(ConcurrencyConflict):
        store.append_all(
            [
                LogAppend(MERCHANT, DAY, 0, [entry(0)]),
                LogAppend(MERCHANT, date(2026, 12, 5), 0, [entry(1)]),
            ],
            outbox=[booking("bk-1")],
        )
    assert store.entries(MERCHANT, DAY) == []
    assert store.pending(LATER) == []


# -- export records ------------------------------------------------------------------------------


def export_record(n: int, outcome: str = "delivered") -> dict[str, object]:
    return {
        "started_at": T0 + n,
        "finished_at": T0 + n + 0.5,
        "destination": f"PUT http://127.0.0.1/feeds/{n}",
        "outcome": outcome,
        "attempts": 1,
        "files": [f"availability-{int(T0) + n}-0-of-1.json"],
        "bytes": 100 + n,
        "entries": n,
        "error": "",
        "generation_timestamp": int(T0) + n,
    }


def test_export_records_come_back_newest_first(store: LogStore) -> None:
    for n in range(5):
        store.record_export(export_record(n, "failed" if n == 3 else "delivered"))
    assert [r["started_at"] for r in store.exports()] == [T0 + n for n in (4, 3, 2, 1, 0)]
    assert store.exports()[1] == export_record(3, "failed")


def test_export_records_are_limited_to_the_most_recent(store: LogStore) -> None:
    for n in range(5):
        store.record_export(export_record(n))
    assert [r["bytes"] for r in store.exports(limit=2)] == [104, 103]


def test_export_records_survive_reopening_the_file(db: str) -> None:
    with closing(open_store(db)) as store:
        store.record_export(export_record(1))
    with closing(open_store(db)) as reopened:
        assert reopened.exports() == [export_record(1)]
