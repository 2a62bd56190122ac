"""A reservation that is no longer active is refused with why: its guests are seated, it
became a no-show, or it was cancelled. Marlowe's on a real SQLite file, the clock moved by
hand."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from feed.service.receiver import Receiver
from feed.settings import Settings
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore
from tests.integration.slots import HandClock

REPO = Path(__file__).resolve().parents[2]
MID = "marlowes-kitchen"
SATURDAY = date(2026, 12, 5)


@pytest.fixture
def clock() -> HandClock:
    return HandClock(SATURDAY, "17:00")


@pytest.fixture
def rec(tmp_path: Path, clock: HandClock) -> Iterator[Receiver]:
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        yield Receiver([marlowes], store, Settings(), clock)


def booked(rec: Receiver) -> str:
    return str(rec.host_book(MID, 2, "2026-12-05T18:00", "Ann", "1").body["reservation_id"])


def message(reply: object) -> str:
    body = getattr(reply, "body", {})
    assert body["error"]["code"] == "reservation not active", body
    return str(body["error"]["message"])


def test_a_cancel_of_a_cancelled_reservation_says_it_was_cancelled(rec: Receiver) -> None:
    ann = booked(rec)
    assert rec.host_operation(MID, "cancel", ann).code is None
    said = message(rec.host_operation(MID, "cancel", ann))
    assert said == "cancel refused: reservation not active: it was cancelled"
    assert message(rec.host_hand(MID, "arrive", ann)).endswith(": it was cancelled")
    assert message(rec.host_change(MID, ann, 3, None)).endswith(": it was cancelled")


def test_a_check_in_of_seated_guests_says_they_are_seated(rec: Receiver, clock: HandClock) -> None:
    ann = booked(rec)
    clock.at("17:55")
    assert rec.host_operation(MID, "check_in", ann).code is None
    said = message(rec.host_operation(MID, "check_in", ann))
    assert said == "check_in refused: reservation not active: the guests are already seated"


def test_a_check_in_past_the_hold_says_it_became_a_no_show(rec: Receiver, clock: HandClock) -> None:
    ann = booked(rec)
    clock.at("18:16")  # past the hold, though no sweep has written the no-show
    said = message(rec.host_operation(MID, "check_in", ann))
    assert said == "check_in refused: reservation not active: it became a no-show"
    assert message(rec.host_hand(MID, "arrive", ann)).endswith(": it became a no-show")
