"""Turns on every store: of several processes, one does each interval's work; and each
generation_timestamp is taken by one export only."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from feed.files.scheduler import ExportScheduler
from feed.http.serving import Background
from feed.service.receiver import Receiver
from feed.settings import ExportSettings, Settings
from feed.venue.restaurant import Restaurant, load_restaurant
from store import generations, open_store
from store.log import LogStore
from store.turns import KEEP, SCOPE, Turns

T0 = 1_796_400_000.0  # 2026-12-04 18:40 UTC, an interval start for 60 s and 3600 s
NOW = datetime.fromtimestamp(T0, UTC)
SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture
def stores(any_db: str) -> Iterator[list[LogStore]]:
    """Three stores on one database: three processes."""
    opened = [open_store(any_db) for _ in range(3)]
    yield opened
    for store in opened:
        store.close()


def test_of_several_processes_exactly_one_takes_each_intervals_turn(
    stores: list[LogStore],
) -> None:
    turns = [Turns(store, "export", 60) for store in stores]
    for interval in range(3):
        barrier = threading.Barrier(len(turns))
        taken: list[bool] = [False] * len(turns)

        def take(i: int, now: float, barrier: threading.Barrier, taken: list[bool]) -> None:
            barrier.wait()
            taken[i] = turns[i].mine(now)

        threads = [
            threading.Thread(target=take, args=(i, T0 + 60 * interval + i, barrier, taken))
            for i in range(3)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert taken.count(True) == 1


def test_a_turn_taken_stays_with_its_process_for_the_whole_interval(
    stores: list[LogStore],
) -> None:
    first, second = Turns(stores[0], "export", 60), Turns(stores[1], "export", 60)
    assert first.mine(T0)
    assert not second.mine(T0 + 59.9)
    assert first.mine(T0 + 59.9)  # asking again is harmless
    assert second.mine(T0 + 60)


def test_turns_of_different_jobs_are_independent(stores: list[LogStore]) -> None:
    assert Turns(stores[0], "export", 60).mine(T0)
    assert Turns(stores[1], "sweep", 60).mine(T0)


def test_the_next_turn_is_at_the_start_of_the_next_interval(stores: list[LogStore]) -> None:
    turns = Turns(stores[0], "export", 3600)
    assert turns.until_next(T0) == 3600
    assert turns.until_next(T0 + 600.5) == 2999.5


def test_the_turns_of_long_past_intervals_are_forgotten(stores: list[LogStore]) -> None:
    turns = Turns(stores[0], "sweep", 10)
    start = int(T0 // 10) * 10
    for i in range(2 * KEEP + 1):  # one turn every interval, as a lone sweeper takes them
        assert turns.mine(start + 10 * i)
    kept = stores[1].recall_prefix(SCOPE, "sweep/")
    assert 0 < len(kept) <= 2 * KEEP
    assert stores[1].recall(SCOPE, turns.key(turns.interval(start))) is None  # forgotten
    assert stores[1].recall(SCOPE, turns.key(turns.interval(start) + 2 * KEEP)) is not None


def test_forget_range_drops_only_its_scope_and_range(stores: list[LogStore]) -> None:
    store = stores[0]
    for key in ("a/1", "a/2", "b/1"):
        store.remember(SCOPE, key, 1)
    store.remember("other", "a/1", 1)
    assert store.forget_range(SCOPE, "a/", "a/2") == 1
    assert [k for k, _ in store.recall_prefix(SCOPE, "")] == ["a/2", "b/1"]
    assert store.recall("other", "a/1") == 1


def test_recall_last_reads_the_last_record_under_its_prefix_only(
    stores: list[LogStore],
) -> None:
    store = stores[0]
    assert store.recall_last("floor", "m/") is None
    for key, value in (("m/0002", 2), ("m/0010", 10), ("m/0002/000001", 3), ("m2/9", 9)):
        store.remember("floor", key, {"v": value})
    store.remember("other", "m/9999", {"v": 0})
    assert store.recall_last("floor", "m/") == ("m/0010", {"v": 10})
    assert store.recall_last("floor", "m/0002") == ("m/0002/000001", {"v": 3})
    assert store.recall_last("floor", "m2/") == ("m2/9", {"v": 9})
    assert store.recall_last("floor", "n/") is None
    every = store.recall_prefix("floor", "m/")
    assert store.recall_last("floor", "m/") == every[-1]


def test_exports_asking_for_one_generation_timestamp_each_get_one_of_their_own(
    stores: list[LogStore],
) -> None:
    stamp = int(T0)
    barrier = threading.Barrier(len(stores))
    taken: list[int] = [0] * len(stores)

    def take(i: int) -> None:
        barrier.wait()
        taken[i] = generations.take(stores[i], stamp)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == [stamp, stamp + 1, stamp + 2]
    assert generations.take(stores[0], stamp + 1) == stamp + 3  # never one taken before


def test_generation_records_a_week_old_are_forgotten(stores: list[LogStore]) -> None:
    old = int(T0)
    assert generations.take(stores[0], old) == old
    now = old + generations.KEEP_SECONDS + 1
    assert generations.take(stores[1], now) == now
    assert stores[2].recall(generations.SCOPE, generations.key(old)) is None


def test_receivers_running_different_restaurants_each_export_theirs_every_interval(
    stores: list[LogStore], tmp_path: Path
) -> None:
    """Receivers on one store may run different restaurant files (a rolling upgrade, a
    restaurant per receiver): the interval's export turn went to whichever asked first, and
    a feed holds only its writer's restaurants, so the restaurants only the others served
    went without a scheduled export for as long as they kept losing the race. Each set of
    restaurants now takes its own turn; receivers of the same restaurants still share one."""
    marlowes = load_restaurant(SAMPLES / "marlowes.toml")
    merch1 = load_restaurant(SAMPLES / "google-floorplan.toml")
    settings = ExportSettings(interval_minutes=1)

    def receiver(store: LogStore, restaurants: list[Restaurant], name: str) -> ExportScheduler:
        return ExportScheduler(restaurants, store, settings, tmp_path / name, clock=lambda: NOW)

    only_marlowes = receiver(stores[0], [marlowes], "a")
    only_merch1 = receiver(stores[1], [merch1], "b")
    also_marlowes = receiver(stores[2], [marlowes], "c")
    assert only_marlowes.turns.mine(T0)
    assert only_merch1.turns.mine(T0)  # merch1's feed is exported in this interval too
    assert not also_marlowes.turns.mine(T0)  # marlowes-kitchen's once only
    # Whatever the order of the files, a set of restaurants is one set.
    both = receiver(stores[0], [marlowes, merch1], "d")
    both_again = receiver(stores[1], [merch1, marlowes], "e")
    assert both.turns.mine(T0 + 60)
    assert not both_again.turns.mine(T0 + 60)


def test_receivers_running_different_restaurants_each_sweep_theirs_every_interval(
    stores: list[LogStore], tmp_path: Path
) -> None:
    """The clock's sweep (no-shows, waits reaching 30 minutes, the waitlist's close) writes
    the days of its process's restaurants only, and its turn went to whichever process on the
    store asked first: a restaurant only the others served was not swept in the intervals a
    receiver of other restaurants won, its no-shows written late, or never while it lost.
    Each set of restaurants now takes its own turn; receivers of the same ones share one."""
    marlowes = load_restaurant(SAMPLES / "marlowes.toml")
    merch1 = load_restaurant(SAMPLES / "google-floorplan.toml")

    def receiver(store: LogStore, r: Restaurant) -> Background:
        served = Receiver([r], store, Settings(), lambda: NOW)
        return Background(served, [r], Settings(), tmp_path / "staging", export=False)

    only_marlowes = receiver(stores[0], marlowes)
    only_merch1 = receiver(stores[1], merch1)
    also_marlowes = receiver(stores[2], marlowes)
    try:
        assert only_merch1.sweep_turns.mine(T0)
        assert only_marlowes.sweep_turns.mine(T0)  # marlowes-kitchen is swept this interval
        assert not also_marlowes.sweep_turns.mine(T0)  # by one of its receivers only
    finally:
        for background in (only_marlowes, only_merch1, also_marlowes):
            background.close()
