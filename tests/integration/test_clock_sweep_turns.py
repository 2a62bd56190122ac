"""The clock's sweep runs once per interval across the `serve` processes on one PostgreSQL,
not once per process: an interval's sweep is done by the process that took its turn."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from feed.http.serving import SWEEP_SECONDS
from feed.service.days import Applied, DayBook
from feed.venue import calendar
from feed.venue.restaurant import load_restaurant
from store import open_store
from store.log import LogEntry
from store.turns import Turns, served_by
from tests.integration.postgres import fresh_schema
from tests.integration.server_process import NOW, SAMPLES, ServerProcess, start_server

MARLOWES = "marlowes-kitchen"
TODAY = date(2026, 12, 4)
LATER = NOW + timedelta(minutes=50)  # 18:50: the 18:30 booking's hold ended at 18:45


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema("sweep") as fresh:
        yield fresh


def clock_boards(url: str) -> list[LogEntry]:
    with closing(open_store(url)) as store:
        return [
            e
            for e in store.entries(MARLOWES, TODAY)
            if e.operation[0] == "board" and e.meta == {"source": "clock"}
        ]


def book_past_its_hold(url: str) -> None:
    marlowes = load_restaurant(SAMPLES / "marlowes.toml")
    found = calendar.slot_at(marlowes, datetime(2026, 12, 4, 18, 30))
    assert found is not None
    with closing(open_store(url)) as store:
        outcome = DayBook(store, marlowes).book(TODAY, found[1], 2, NOW)
    assert isinstance(outcome, Applied) and outcome.result is True


def test_of_two_serve_processes_only_the_one_holding_the_intervals_turn_sweeps(
    url: str, tmp_path: Path
) -> None:
    """The interval's turn is held by a third process (this test) when both servers start:
    neither sweeps until the next interval, then one of them writes the no-show, once."""
    book_past_its_hold(url)
    with closing(open_store(url)) as store:
        # The turn of the processes serving the servers' restaurants (marlowes and merch1).
        other = Turns(store, served_by("sweep", [MARLOWES, "merch1"]), SWEEP_SECONDS)
        if other.until_next(time.time()) < SWEEP_SECONDS / 2:  # both must start inside it
            time.sleep(other.until_next(time.time()) + 0.05)
        held = other.interval(time.time())
        assert other.mine(time.time())
        servers: list[ServerProcess] = []
        try:
            for _ in range(2):
                servers.append(start_server(url, LATER, workdir=tmp_path))
            boundary = (held + 1) * SWEEP_SECONDS
            while time.time() < boundary - 0.3:
                assert clock_boards(url) == [], "a server swept in an interval it did not hold"
                time.sleep(0.1)
            deadline = time.monotonic() + SWEEP_SECONDS
            while not clock_boards(url) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.0)  # both servers woke at the boundary: let a second sweep show
            boards = clock_boards(url)
            holder = store.recall("turn", other.key(held + 1))
        finally:
            for server in servers:
                server.stop()
    assert len(boards) == 1, boards
    assert holder is not None and holder != other.holder  # one of the servers
