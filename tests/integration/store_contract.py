"""The contract every `LogStore` backend passes: subclass `StoreContract`, define `make_store`.

Each service day's log is gap-free from seq 0, an append is all or nothing, and a second writer
at a taken seq gets ConcurrencyConflict.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import pytest

from engine import HostStand, Rejected, run
from store.log import (
    ConcurrencyConflict,
    DuplicateKey,
    LogAppend,
    LogEntry,
    LogStore,
    NewEntry,
    StoreError,
)

MERCHANT = "marlowes"
OTHER_MERCHANT = "the-anchor"
DAY = date(2024, 3, 9)
NEXT_DAY = date(2024, 3, 10)
RECEIVED = 1_709_971_200.25  # 2024-03-09 08:00:00.25 UTC, fixed: never today's clock

# Part of the seed's first worked example plus a reservation and a rejection.
SERVICE = [
    ["walk_in", 0, "P1", 2], ["walk_in", 1, "P2", 2], ["walk_in", 2, "P3", 6],
    ["walk_in", 3, "P4", 4], ["walk_in", 4, "P5", 4], ["walk_in", 5, "P6", 4],
    ["reserve", 6, "R1", "T5+T6", 200], ["free", 20, "T4"], ["free", 21, "T9"],
    ["walk_in", 22, "P1", 2], ["quote", 23, 4], ["board", 30],
]  # fmt: skip


def entry(n: int, **meta: object) -> NewEntry:
    return NewEntry(["board", n], {"n": n}, RECEIVED + n, dict(meta))


class StoreContract:
    """Tests every backend inherits; a subclass only says how to open its store."""

    def make_store(self, tmp_path: Path) -> LogStore:
        raise NotImplementedError

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[LogStore]:
        store = self.make_store(tmp_path)
        yield store
        store.close()

    # -- appending and reading -----------------------------------------------------------

    def test_a_day_with_no_appends_has_an_empty_log(self, store: LogStore) -> None:
        assert store.entries(MERCHANT, DAY) == []
        assert store.service_dates(MERCHANT) == []

    def test_an_entry_comes_back_with_everything_it_was_appended_with(
        self, store: LogStore
    ) -> None:
        meta = {"party_size": 4, "guest": "Zoë O'Neil", "source": "partner-a", "key": "k1"}
        new = NewEntry(["reserve", -30, "R1", "T1", 60], True, RECEIVED, meta)
        store.append(MERCHANT, DAY, 0, [new])
        assert store.entries(MERCHANT, DAY) == [
            LogEntry(0, ["reserve", -30, "R1", "T1", 60], True, RECEIVED, meta)
        ]

    def test_append_returns_the_entries_as_stored_with_their_seqs(self, store: LogStore) -> None:
        written = store.append(MERCHANT, DAY, 0, [entry(0), entry(1)])
        assert written == store.entries(MERCHANT, DAY)
        assert [e.seq for e in written] == [0, 1]

    def test_several_entries_in_one_append_take_consecutive_seqs(self, store: LogStore) -> None:
        store.append(MERCHANT, DAY, 0, [entry(0)])
        store.append(MERCHANT, DAY, 1, [entry(1), entry(2), entry(3)])
        assert [e.seq for e in store.entries(MERCHANT, DAY)] == [0, 1, 2, 3]
        assert [e.operation for e in store.entries(MERCHANT, DAY)][3] == ["board", 3]

    def test_entries_after_a_seq_are_only_the_later_ones_in_order(self, store: LogStore) -> None:
        store.append(MERCHANT, DAY, 0, [entry(n) for n in range(5)])
        assert [e.seq for e in store.entries(MERCHANT, DAY, after_seq=2)] == [3, 4]
        assert store.entries(MERCHANT, DAY, after_seq=4) == []

    def test_entries_with_a_limit_are_the_first_ones(self, store: LogStore) -> None:
        store.append(MERCHANT, DAY, 0, [entry(n) for n in range(5)])
        assert [e.seq for e in store.entries(MERCHANT, DAY, limit=1)] == [0]
        assert [e.seq for e in store.entries(MERCHANT, DAY, after_seq=1, limit=2)] == [2, 3]
        assert len(store.entries(MERCHANT, DAY, limit=None)) == 5

    def test_json_values_come_back_as_json(self, store: LogStore) -> None:
        result = {"tables": {"T2": "P1", "T1": "free"}, "waiting": ("P2",), "none": None}
        store.append(MERCHANT, DAY, 0, [NewEntry(["board", 0], result, RECEIVED, {"x": 1.5})])
        (stored,) = store.entries(MERCHANT, DAY)
        expected = {"tables": {"T1": "free", "T2": "P1"}, "waiting": ["P2"], "none": None}
        assert stored.result == expected  # the tuple comes back as a list
        assert stored.meta == {"x": 1.5}

    def test_received_at_keeps_its_fraction_of_a_second(self, store: LogStore) -> None:
        store.append(MERCHANT, DAY, 0, [NewEntry(["board", 0], {}, 1_709_971_200.123456)])
        assert store.entries(MERCHANT, DAY)[0].received_at == 1_709_971_200.123456

    # -- one writer per seq --------------------------------------------------------------

    def test_an_append_at_a_taken_seq_is_a_conflict_and_writes_nothing(
        self, store: LogStore
    ) -> None:
        store.append(MERCHANT, DAY, 0, [entry(0), entry(1)])
        with pytest.raises(ConcurrencyConflict):
            store.append(MERCHANT, DAY, 1, [entry(10), entry(11), entry(12)])
        assert [e.operation for e in store.entries(MERCHANT, DAY)] == [["board", 0], ["board", 1]]

    def test_an_append_past_the_end_of_the_log_is_a_conflict_and_leaves_no_gap(
        self, store: LogStore
    ) -> None:
        store.append(MERCHANT, DAY, 0, [entry(0)])
        with pytest.raises(ConcurrencyConflict):
            store.append(MERCHANT, DAY, 2, [entry(2)])
        with pytest.raises(ConcurrencyConflict):
            store.append(OTHER_MERCHANT, DAY, 1, [entry(1)])
        assert [e.seq for e in store.entries(MERCHANT, DAY)] == [0]
        assert store.entries(OTHER_MERCHANT, DAY) == []

    def test_a_writer_that_lost_can_append_after_rereading_the_log(self, store: LogStore) -> None:
        store.append(MERCHANT, DAY, 0, [entry(0)])
        with pytest.raises(ConcurrencyConflict):
            store.append(MERCHANT, DAY, 0, [entry(1)])
        store.append(MERCHANT, DAY, len(store.entries(MERCHANT, DAY)), [entry(1)])
        assert [e.seq for e in store.entries(MERCHANT, DAY)] == [0, 1]

    def test_an_append_needs_an_expected_seq_of_zero_or_more_and_an_entry(
        self, store: LogStore
    ) -> None:
        with pytest.raises(ValueError):
            store.append(MERCHANT, DAY, -1, [entry(0)])
        with pytest.raises(ValueError):
            store.append(MERCHANT, DAY, 0, [])
        assert store.entries(MERCHANT, DAY) == []

    # -- days and merchants --------------------------------------------------------------

    def test_each_merchant_and_day_has_its_own_log_from_seq_zero(self, store: LogStore) -> None:
        store.append(MERCHANT, DAY, 0, [entry(0), entry(1)])
        store.append(MERCHANT, NEXT_DAY, 0, [entry(5)])
        store.append(OTHER_MERCHANT, DAY, 0, [entry(7)])
        assert [e.operation for e in store.entries(MERCHANT, NEXT_DAY)] == [["board", 5]]
        assert [e.operation for e in store.entries(OTHER_MERCHANT, DAY)] == [["board", 7]]
        assert len(store.entries(MERCHANT, DAY)) == 2

    def test_service_dates_are_the_days_with_entries_in_date_order(self, store: LogStore) -> None:
        store.append(MERCHANT, NEXT_DAY, 0, [entry(0)])
        store.append(MERCHANT, date(2023, 12, 31), 0, [entry(0)])
        store.append(MERCHANT, DAY, 0, [entry(0), entry(1)])
        store.append(OTHER_MERCHANT, date(2025, 1, 1), 0, [entry(0)])
        assert store.service_dates(MERCHANT) == [date(2023, 12, 31), DAY, NEXT_DAY]
        assert store.service_dates(MERCHANT, since=DAY) == [DAY, NEXT_DAY]
        assert store.service_dates(MERCHANT, since=NEXT_DAY + timedelta(days=1)) == []

    # -- idempotency records -------------------------------------------------------------

    def test_a_remembered_value_is_recalled(self, store: LogStore) -> None:
        assert store.remember("webhook", "k1", {"status": 201, "body": [1, 2]}) == {
            "status": 201,
            "body": [1, 2],
        }
        assert store.recall("webhook", "k1") == {"status": 201, "body": [1, 2]}

    def test_remembering_a_stored_key_keeps_and_returns_the_first_value(
        self, store: LogStore
    ) -> None:
        store.remember("webhook", "k1", "first")
        assert store.remember("webhook", "k1", "second") == "first"
        assert store.recall("webhook", "k1") == "first"

    def test_an_unknown_key_recalls_none(self, store: LogStore) -> None:
        assert store.recall("webhook", "never") is None

    def test_the_same_key_in_two_scopes_is_two_records(self, store: LogStore) -> None:
        store.remember("partner-a", "k1", 1)
        store.remember("partner-b", "k1", 2)
        assert (store.recall("partner-a", "k1"), store.recall("partner-b", "k1")) == (1, 2)

    def test_an_append_with_a_new_key_stores_the_entry_and_the_key(self, store: LogStore) -> None:
        store.append(MERCHANT, DAY, 0, [entry(0)], remember=[("webhook", "k1", {"status": 201})])
        assert store.recall("webhook", "k1") == {"status": 201}
        assert len(store.entries(MERCHANT, DAY)) == 1

    def test_an_append_with_a_stored_key_fails_with_the_stored_value_and_writes_nothing(
        self, store: LogStore
    ) -> None:
        store.append(MERCHANT, DAY, 0, [entry(0)], remember=[("webhook", "k1", {"status": 201})])
        with pytest.raises(DuplicateKey) as raised:
            store.append(MERCHANT, DAY, 1, [entry(1)], remember=[("webhook", "k1", {"x": 0})])
        assert raised.value.value == {"status": 201}
        assert (raised.value.scope, raised.value.key) == ("webhook", "k1")
        assert len(store.entries(MERCHANT, DAY)) == 1

    def test_a_stored_key_is_reported_even_when_the_seq_is_also_taken(
        self, store: LogStore
    ) -> None:
        # A retried webhook must get its first response back, whatever happened to the log since.
        store.append(MERCHANT, DAY, 0, [entry(0)], remember=[("webhook", "k1", "done")])
        with pytest.raises(DuplicateKey):
            store.append(MERCHANT, DAY, 0, [entry(0)], remember=[("webhook", "k1", "again")])

    def test_an_append_that_conflicts_does_not_store_its_key(self, store: LogStore) -> None:
        store.append(MERCHANT, DAY, 0, [entry(0)])
        with pytest.raises(ConcurrencyConflict):
            store.append(MERCHANT, DAY, 0, [entry(1)], remember=[("webhook", "k2", "lost")])
        assert store.recall("webhook", "k2") is None

    def test_several_keys_commit_with_the_entry_or_not_at_all(self, store: LogStore) -> None:
        store.remember("booking", "b2", "earlier")
        with pytest.raises(DuplicateKey):
            store.append(
                MERCHANT, DAY, 0, [entry(0)], remember=[("webhook", "k3", 1), ("booking", "b2", 2)]
            )
        assert store.recall("webhook", "k3") is None
        assert store.entries(MERCHANT, DAY) == []
        store.append(
            MERCHANT, DAY, 0, [entry(0)], remember=[("webhook", "k3", 1), ("booking", "b3", 2)]
        )
        assert (store.recall("webhook", "k3"), store.recall("booking", "b3")) == (1, 2)

    def test_appends_to_two_logs_commit_together_or_not_at_all(self, store: LogStore) -> None:
        other = date(2024, 3, 10)
        store.append(MERCHANT, other, 0, [entry(0)])
        with pytest.raises(ConcurrencyConflict):
            store.append_all(
                [LogAppend(MERCHANT, DAY, 0, [entry(0)]), LogAppend(MERCHANT, other, 0, [entry(1)])]
            )
        assert store.entries(MERCHANT, DAY) == []
        store.append_all(
            [LogAppend(MERCHANT, DAY, 0, [entry(0)]), LogAppend(MERCHANT, other, 1, [entry(1)])],
            put=[("booking", "b1", {"day": "2024-03-10"})],
        )
        assert [len(store.entries(MERCHANT, d)) for d in (DAY, other)] == [1, 2]
        assert store.recall("booking", "b1") == {"day": "2024-03-10"}

    def test_put_replaces_a_stored_value(self, store: LogStore) -> None:
        store.remember("booking", "b1", {"v": 1})
        store.append_all(
            [LogAppend(MERCHANT, DAY, 0, [entry(0)])], put=[("booking", "b1", {"v": 2})]
        )
        assert store.recall("booking", "b1") == {"v": 2}

    def test_a_failed_append_does_not_put_its_records(self, store: LogStore) -> None:
        store.append(MERCHANT, DAY, 0, [entry(0)])
        with pytest.raises(ConcurrencyConflict):
            store.append_all([LogAppend(MERCHANT, DAY, 0, [entry(1)])], put=[("booking", "b9", 1)])
        assert store.recall("booking", "b9") is None

    def test_keys_are_listed_by_prefix_in_key_order(self, store: LogStore) -> None:
        for key in ("u1/b2", "u1/b1", "u10/b3", "u2/b4"):
            store.remember("user", key, key)
        store.remember("other", "u1/b5", 0)
        assert store.recall_prefix("user", "u1/") == [("u1/b1", "u1/b1"), ("u1/b2", "u1/b2")]
        assert store.recall_prefix("user", "u%/") == []

    # -- the log is the day ----------------------------------------------------------------

    def test_operations_are_the_entries_operations_in_seq_order(self, store: LogStore) -> None:
        store.append(MERCHANT, DAY, 0, [entry(0), entry(1)])
        store.append(MERCHANT, DAY, 2, [entry(2)])
        assert store.operations(MERCHANT, DAY) == [entry(n).operation for n in range(3)]
        assert store.operations(MERCHANT, NEXT_DAY) == []

    def test_the_version_changes_with_every_commit_and_only_then(self, store: LogStore) -> None:
        before = store.version()
        assert store.version() == before
        store.entries(MERCHANT, DAY)  # reading changes nothing
        assert store.version() == before
        store.append(MERCHANT, DAY, 0, [entry(0)])
        after = store.version()
        assert after != before
        store.remember("webhook", "k", 1)
        assert store.version() != after

    def test_the_log_version_changes_with_every_append(self, store: LogStore) -> None:
        before = store.log_version()
        store.entries(MERCHANT, DAY)  # reading changes nothing
        assert store.log_version() == before
        store.append(MERCHANT, DAY, 0, [entry(0)])
        after = store.log_version()
        assert after != before
        store.append_all([LogAppend(MERCHANT, NEXT_DAY, 0, [entry(0)])])
        assert store.log_version() != after

    def test_replaying_the_stored_log_gives_the_stored_results(self, store: LogStore) -> None:
        stand = HostStand()
        for seq, operation in enumerate(SERVICE):
            result = stand.apply(operation)
            stored = str(result) if isinstance(result, Rejected) else result
            store.append(MERCHANT, DAY, seq, [NewEntry(operation, stored, RECEIVED + seq)])
        log = store.entries(MERCHANT, DAY)
        replay = HostStand()
        replayed = [replay.apply(e.operation) for e in log]
        assert [str(r) if isinstance(r, Rejected) else r for r in replayed] == [
            e.result for e in log
        ]
        assert [e.result for e in log] == run(SERVICE)
        assert "error: unknown table" in [e.result for e in log]

    # -- lifetime ------------------------------------------------------------------------

    def test_a_closed_store_refuses_calls_with_a_store_error(self, tmp_path: Path) -> None:
        store = self.make_store(tmp_path)
        store.close()
        with pytest.raises(StoreError):
            store.entries(MERCHANT, DAY)
        store.close()  # closing twice is harmless
