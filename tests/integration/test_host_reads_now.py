"""What the host reads is the day as of now, with time's own changes applied before the
clock's sweep writes them (reading never writes): the reservations list says no-show the
minute a booking's hold is over, as the floor does. And no wait is quoted while no
service is open, as no walk-in is taken then. Marlowe's on a real SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from feed.http.statuses import status_of
from feed.service import replies
from feed.service.floorview import FloorViews
from feed.service.receiver import Receiver
from feed.settings import Settings
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore
from tests.integration.slots import HandClock

REPO = Path(__file__).resolve().parents[2]
MID = "marlowes-kitchen"
SATURDAY = date(2026, 12, 5)  # lunch 12:00-14:00 and dinner 17:30-21:30 (last seatings)


@pytest.fixture
def clock() -> HandClock:
    return HandClock(SATURDAY, "17:00")


@pytest.fixture
def rec(tmp_path: Path, clock: HandClock) -> Iterator[Receiver]:
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        yield Receiver([marlowes], store, Settings(), clock)


def statuses(rec: Receiver) -> dict[str, str]:
    rows = rec.host_reservations(MID, SATURDAY).body["reservations"]
    return {row["name"]: row["status"] for row in rows}


def floor_statuses(rec: Receiver, clock: HandClock) -> dict[str, str]:
    floor = FloorViews(rec.books[MID]).floor(SATURDAY, clock())
    return {row["name"]: row["status"] for row in floor["reservations"]}


def test_the_reservations_list_says_no_show_when_the_hold_is_over_as_the_floor_does(
    rec: Receiver, clock: HandClock
) -> None:
    for name, hhmm in (("Ann", "18:00"), ("Bo", "18:30")):
        assert rec.host_book(MID, 2, f"2026-12-05T{hhmm}", name, "1").code is None
    log_length = rec.books[MID].length(SATURDAY)
    for hhmm, ann, bo in (("18:14", "booked", "booked"), ("18:15", "no-show", "booked"),
                          ("18:45", "no-show", "no-show")):  # fmt: skip
        clock.at(hhmm)
        assert statuses(rec) == {"Ann": ann, "Bo": bo} == floor_statuses(rec, clock)
    assert rec.books[MID].length(SATURDAY) == log_length  # read, nothing written


@pytest.mark.parametrize("hhmm", ["11:00", "16:00", "23:30"])
def test_no_wait_is_quoted_while_no_service_is_open(
    rec: Receiver, clock: HandClock, hhmm: str
) -> None:
    clock.at(hhmm)
    for name in ("quote", "walk_in"):
        args = (4,) if name == "quote" else ("w-1", 4)
        refused = rec.host_operation(MID, name, *args)
        assert status_of(refused) == 409 and refused.code == replies.NO_SERVICE_NOW, name
        assert "the next service opens at" in refused.body["error"]["message"]
    clock.at("17:45")
    assert rec.host_operation(MID, "quote", 4).body["result"] == 0
