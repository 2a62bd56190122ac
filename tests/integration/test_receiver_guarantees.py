"""The receiver's guarantees under load and failure, through real `hoststand serve` processes:
one booking for the last unit however many ask at once (one process or two on one file), and
after a SIGKILL every acknowledged booking is there exactly once and replays as answered.
Each runs on both stores: an SQLite file and a PostgreSQL schema."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest
import requests

from engine import HostStand, Rejected
from engine.errors import TABLE_CONFLICT
from feed.floor.availability import choose_unit
from feed.service.days import json_result, still_booked
from feed.venue import calendar
from feed.venue.restaurant import Restaurant, load_restaurant
from store import open_store
from store.log import ConcurrencyConflict, LogEntry, NewEntry
from store.sqlite import SQLiteStore
from tests.integration.server_process import (
    HOST_TOKENS,
    NOW,
    SAMPLES,
    SECRETS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    running_server,
    signed_post,
    start_server,
)

MARLOWES = "marlowes-kitchen"
PARTNER = "tablefinder"
RACE_DAY = date(2026, 12, 5)  # Saturday
RACE_START = "2026-12-05T19:00:00+00:00"  # nine fit only T1+T3: one unit in the slot
RACERS = 50
RETRIES = 20


@pytest.fixture(scope="module")
def marlowes() -> Restaurant:
    return load_restaurant(SAMPLES / "marlowes.toml")


def send(base: str, event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    reply = signed_post(base, PARTNER, SECRETS[PARTNER], event)
    return reply.status_code, reply.json()


def stored_log(db: str, day: date) -> list[LogEntry]:
    with closing(open_store(db)) as store:
        return store.entries(MARLOWES, day)


def fill_around_the_last_unit(base: str) -> None:
    """Two couples in the race slot, on tables that leave T1+T3 (the nine's unit) open."""
    for i in range(2):
        status, body = send(base, booking_event(f"couple-{i}", 2, RACE_START))
        assert status == 200, body
        assert not {"T1", "T3"} & set(body["tables"]), body


def race(bases: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """RACERS distinct bookings of nine for the race slot, released together, spread evenly
    over the servers; the replies in sending order."""
    barrier = threading.Barrier(RACERS)

    def racer(i: int) -> tuple[int, dict[str, Any]]:
        event = booking_event(f"race-{i}", 9, RACE_START, name=f"Party {i}")
        barrier.wait(timeout=TIMEOUT)
        return send(bases[i % len(bases)], event)

    with ThreadPoolExecutor(max_workers=RACERS) as pool:
        return list(pool.map(racer, range(RACERS)))


def assert_exactly_one_booked(db: str, replies: list[tuple[int, dict[str, Any]]]) -> None:
    assert Counter(status for status, _ in replies) == {200: 1, 409: RACERS - 1}, replies
    refusals = {body["error"]["code"] for status, body in replies if status == 409}
    assert refusals == {"slot unavailable"}
    (winner,) = [body for status, body in replies if status == 200]
    assert winner["tables"] == ["T1", "T3"]
    log = stored_log(db, RACE_DAY)
    assert [e.seq for e in log] == list(range(len(log)))
    nines = [e for e in log if e.operation[0] == "reserve" and e.operation[3] == "T1+T3"]
    assert [e.operation[2] for e in nines] == [winner["reservation_id"]]
    assert len(log) == 3  # the two couples and the one nine: no refused request was written


def test_fifty_simultaneous_requests_for_the_last_unit_book_it_exactly_once(
    any_db: str, tmp_path: Path
) -> None:
    with running_server(any_db, workdir=tmp_path) as server:
        fill_around_the_last_unit(server.base)
        replies = race([server.base])
    assert_exactly_one_booked(any_db, replies)


def test_two_server_processes_on_one_database_book_the_last_unit_exactly_once(
    any_db: str, tmp_path: Path
) -> None:
    with (
        running_server(any_db, workdir=tmp_path) as first,
        running_server(any_db, workdir=tmp_path) as second,
    ):
        fill_around_the_last_unit(first.base)
        replies = race([first.base, second.base])
    assert_exactly_one_booked(any_db, replies)


FOURS_START = "2026-12-05T20:00:00+00:00"  # Saturday 20:00, nothing else booked at it
FOURS = 4  # Marlowe's units for a party of four (spots_total)


def test_two_server_processes_booking_one_slot_get_exactly_one_winner_per_unit(
    any_db: str, tmp_path: Path
) -> None:
    """Parties of four race for a slot over two processes: as many win as the slot has
    units, each unit is booked once, every other request is refused."""
    tries = 4 * FOURS
    barrier = threading.Barrier(tries)

    def racer(i: int) -> tuple[int, dict[str, Any]]:
        event = booking_event(f"four-{i}", 4, FOURS_START, name=f"Four {i}")
        barrier.wait(timeout=TIMEOUT)
        return send(bases[i % 2], event)

    with (
        running_server(any_db, workdir=tmp_path) as first,
        running_server(any_db, workdir=tmp_path) as second,
        ThreadPoolExecutor(max_workers=tries) as pool,
    ):
        bases = [first.base, second.base]
        replies = list(pool.map(racer, range(tries)))
    assert Counter(status for status, _ in replies) == {200: FOURS, 409: tries - FOURS}, replies
    units = [body["unit"] for status, body in replies if status == 200]
    assert len(set(units)) == FOURS
    log = stored_log(any_db, RACE_DAY)
    assert [e.seq for e in log] == list(range(FOURS))
    assert sorted(e.operation[3] for e in log) == sorted(units)


def test_without_the_stores_seq_key_two_writers_would_both_book_the_last_unit(
    tmp_path: Path, marlowes: Restaurant
) -> None:
    """The control: what each server does in the race, minus the store that stops it."""
    found = calendar.slot_at(marlowes, datetime.fromisoformat(RACE_START))
    assert found is not None
    day, slot = found
    ts = calendar.minute_of(marlowes, day, NOW)
    # Two writers read the same (empty) log at the same moment, as two servers do.
    mine, theirs = HostStand(marlowes.floor), HostStand(marlowes.floor)
    unit_mine = choose_unit(marlowes.floor, still_booked(mine, ts), slot.minute, 9)
    unit_theirs = choose_unit(marlowes.floor, still_booked(theirs, ts), slot.minute, 9)
    assert unit_mine == unit_theirs == "T1+T3"
    op_mine = ["reserve", ts, "bk-mine", unit_mine, slot.minute]
    op_theirs = ["reserve", ts, "bk-theirs", unit_theirs, slot.minute]
    # The race happens: each writer's own state accepts its booking, so both would say 200 ...
    assert mine.apply(op_mine) is True
    assert theirs.apply(op_theirs) is True
    # ... and one day holding both is a double booking of T1+T3.
    day_state = HostStand(marlowes.floor)
    assert day_state.apply(op_mine) is True
    assert day_state.apply(op_theirs) == Rejected(TABLE_CONFLICT)
    # What prevents it: both append at the seq they read; the key refuses the second writer.
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        store.append(MARLOWES, day, 0, [NewEntry(op_mine, True, NOW.timestamp())])
        with pytest.raises(ConcurrencyConflict):
            store.append(MARLOWES, day, 0, [NewEntry(op_theirs, True, NOW.timestamp())])
        assert [e.operation for e in store.entries(MARLOWES, day)] == [op_mine]


def test_one_event_delivered_by_many_threads_at_once_books_once_and_every_reply_agrees(
    any_db: str, tmp_path: Path
) -> None:
    event = booking_event("retried", 4, RACE_START)
    barrier = threading.Barrier(RETRIES)

    def deliver(_i: int) -> tuple[int, dict[str, Any]]:
        barrier.wait(timeout=TIMEOUT)
        return send(server.base, event)

    with (
        running_server(any_db, workdir=tmp_path) as server,
        ThreadPoolExecutor(max_workers=RETRIES) as pool,
    ):
        replies = list(pool.map(deliver, range(RETRIES)))
    assert replies == [replies[0]] * RETRIES
    assert replies[0][0] == 200
    log = stored_log(any_db, RACE_DAY)
    assert [e.operation[2] for e in log] == [replies[0][1]["reservation_id"]]


# -- a crash in the middle of a stream of bookings -------------------------------------------

STREAM = 60
KILL_AFTER = 20  # responses
DINNER = ["17:30", "18:30", "19:30", "20:30", "21:30"]


def stream_events() -> list[dict[str, Any]]:
    """Bookings over five days and five dinner slots an hour apart, mostly small parties."""
    events = []
    for i in range(STREAM):
        day = 5 + i % 5  # Saturday 5 .. Wednesday 9 December
        start = f"2026-12-{day:02d}T{DINNER[(i // 5) % 5]}:00+00:00"
        events.append(booking_event(f"stream-{i}", [2, 4, 3, 2, 6, 5][i % 6], start))
    return events


class Stream:
    """Sends the events one by one until the server stops answering; records every reply."""

    def __init__(self, base: str, events: list[dict[str, Any]]) -> None:
        self.base = base
        self.events = events
        self.replies: dict[str, tuple[int, dict[str, Any]]] = {}
        self.lost: list[str] = []  # sent, no reply: done or not, nobody knows
        self.enough = threading.Event()
        # Set by the test as it kills the server: the stream waits for it once it has
        # KILL_AFTER replies, so the rest cannot all be answered before the kill (a busy
        # machine could delay the test's kill that long: "the stream finished before it").
        self.killing = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self) -> None:
        try:
            for event in self.events:
                try:
                    self.replies[event["id"]] = send(self.base, event)
                except requests.RequestException:
                    self.lost.append(event["id"])
                    return
                if len(self.replies) == KILL_AFTER:
                    self.enough.set()
                    self.killing.wait(timeout=60)
        finally:
            self.enough.set()


def reserve_ids(db: str) -> Counter[str]:
    """How many times each booking id is reserved in the whole stored log of Marlowe's."""
    ids: Counter[str] = Counter()
    with closing(open_store(db)) as store:
        for day in store.service_dates(MARLOWES):
            for entry in store.entries(MARLOWES, day):
                if entry.operation[0] == "reserve":
                    ids[entry.operation[2]] += 1
    return ids


def test_after_a_sigkill_every_acknowledged_booking_is_stored_once_and_replays_as_answered(
    any_db: str, tmp_path: Path, marlowes: Restaurant
) -> None:
    db = any_db
    events = stream_events()
    by_id = {e["id"]: e for e in events}
    server = start_server(db, workdir=tmp_path)
    stream = Stream(server.base, events)
    try:
        stream.thread.start()
        assert stream.enough.wait(timeout=60)
        stream.killing.set()  # the next booking goes out as the kill does
        server.stop(kill=True)
        stream.thread.join(timeout=60)
        assert not stream.thread.is_alive()
    finally:
        server.stop(kill=True)
    acknowledged = {eid: body for eid, (status, body) in stream.replies.items() if status == 200}
    assert len(stream.replies) >= KILL_AFTER
    assert len(stream.replies) < STREAM, "the stream finished before the kill"
    assert len(acknowledged) > len(stream.replies) // 2  # most of the stream was bookable
    assert {status for status, _ in stream.replies.values()} <= {200, 409}

    with running_server(db, workdir=tmp_path) as restarted:
        # Every booking that got a 200 is in the log exactly once; nothing is there twice.
        counts = reserve_ids(db)
        for body in acknowledged.values():
            assert counts[body["reservation_id"]] == 1, body
        assert max(counts.values()) == 1

        # Each day's log replays to the results that were stored (and answered).
        for day in {date.fromisoformat(b["start"][:10]) for b in acknowledged.values()}:
            stand = HostStand(marlowes.floor)
            log = stored_log(db, day)
            assert [e.seq for e in log] == list(range(len(log)))
            for entry in log:
                assert json_result(stand.apply(entry.operation)) == entry.result
            for body in acknowledged.values():
                if body["start"].startswith(day.isoformat()):
                    held = stand.book.get(body["reservation_id"])
                    assert held is not None and held.unit == body["unit"], body

        # The restarted server says the same: re-sent events replay their stored replies.
        for eid, (status, body) in stream.replies.items():
            assert send(restarted.base, by_id[eid]) == (status, body)
        assert_host_lists_them(restarted, acknowledged.values())

        # An event whose reply was lost may be sent again: it is booked at most once.
        for eid in stream.lost:
            again = send(restarted.base, by_id[eid])
            assert send(restarted.base, by_id[eid]) == again
            if again[0] == 200:
                acknowledged[eid] = again[1]
        counts = reserve_ids(db)
        assert set(counts) == {b["reservation_id"] for b in acknowledged.values()}
        assert set(counts.values()) == {1}


def assert_host_lists_them(server: ServerProcess, bodies: Any) -> None:
    headers = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
    rows: dict[str, dict[str, Any]] = {}
    for day in sorted({b["start"][:10] for b in bodies}):
        with requests.get(
            f"{server.base}/api/v1/restaurants/{MARLOWES}/reservations",
            params={"date": day},
            headers=headers,
            timeout=TIMEOUT,
        ) as reply:
            assert reply.status_code == 200, reply.text
            rows.update({r["reservation_id"]: r for r in reply.json()["reservations"]})
    for body in bodies:
        row = rows[body["reservation_id"]]
        assert (row["status"], row["tables"], row["start"]) == (
            "booked",
            body["tables"],
            body["start"],
        )
