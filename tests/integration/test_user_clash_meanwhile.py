"""A user's two bookings are never both made overlapping (partner-formats.md section 2:
OVERLAPPING_RESERVATION), however the two requests interleave across receivers: the
check of the user's other bookings and the write are made on the same state, so one
landing between them (on another receiver on the same store) is seen by the other.

Two receivers on one real SQLite file; the other's booking or change lands at the
moment this one has checked the user's bookings and not yet written (or just before its
write's retry), as the races in test_changes_meanwhile.py are made."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue.restaurant import Restaurant, load_restaurant
from store.sqlite import SQLiteStore
from tests.integration.slots import HandClock

REPO = Path(__file__).resolve().parents[2]
MID = "marlowes-kitchen"
SATURDAY = date(2026, 12, 5)  # London is on UTC in December: dinner from 17:30
PARTNER = Partner("tablefinder", "s" * 32, None)
SETTINGS = Settings(partners={PARTNER.id: PARTNER})


@pytest.fixture(scope="module")
def marlowes() -> Restaurant:
    return load_restaurant(REPO / "samples" / "marlowes.toml")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        yield store


@pytest.fixture
def clock() -> HandClock:
    return HandClock(SATURDAY, "12:00")


@pytest.fixture
def mine(store: SQLiteStore, marlowes: Restaurant, clock: HandClock) -> PartnerApi:
    rec = Receiver([marlowes], store, SETTINGS, clock)
    return PartnerApi(rec.books, rec.store, rec.clock)


@pytest.fixture
def theirs(store: SQLiteStore, marlowes: Restaurant, clock: HandClock) -> PartnerApi:
    """The partner's API on another receiver on the same database."""
    rec = Receiver([marlowes], store, SETTINGS, clock)
    return PartnerApi(rec.books, rec.store, rec.clock)


def at(clock: HandClock, hhmm: str) -> int:
    hour, minute = (int(x) for x in hhmm.split(":"))
    return int(clock.now.replace(hour=hour, minute=minute).timestamp())


def create(api: PartnerApi, clock: HandClock, hhmm: str, user: str = "u1") -> Any:
    slot = {"merchant_id": MID, "start_sec": str(at(clock, hhmm)), "resources": {"party_size": 2}}
    return api.create_booking(PARTNER, {"slot": slot, "user_information": {"user_id": user}})


def update(api: PartnerApi, clock: HandClock, booking: str, hhmm: str) -> Any:
    moved = {"booking_id": booking, "slot": {"start_sec": at(clock, hhmm)}}
    return api.update_booking(PARTNER, {"booking": moved})


def before_the_next_call(api: PartnerApi, method: str, meanwhile: Callable[[], Any]) -> None:
    """Run `meanwhile` once, just before the next call of the day book's `method` (book,
    move): after the request has read the user's other bookings as they were."""
    book = api.books[MID]
    original = getattr(book, method)

    def overtaken(*args: Any, **kwargs: Any) -> Any:
        delattr(book, method)
        meanwhile()
        return original(*args, **kwargs)

    setattr(book, method, overtaken)


def before_the_next_write(store: SQLiteStore, meanwhile: Callable[[], Any]) -> None:
    """Run `meanwhile` once, just before the store's next append: this request has built
    its operation (and checked the user's bookings) on the day as it was."""
    original = store.append_all

    def overtaken(*args: Any, **kwargs: Any) -> Any:
        del store.append_all  # the class's own again, for the other's write too
        meanwhile()
        return original(*args, **kwargs)

    store.append_all = overtaken  # type: ignore[method-assign]


def confirmed(api: PartnerApi, user: str = "u1") -> list[int]:
    """Start times of the user's confirmed bookings, in order."""
    listed = api.list_bookings(PARTNER, {"user_id": user}).body["bookings"]
    return sorted(b["slot"]["start_sec"] for b in listed if b["status"] == "CONFIRMED")


def overlapping(reply: Any) -> bool:
    return reply.body.get("booking_failure", {}).get("cause") == "OVERLAPPING_RESERVATION"


def test_two_overlapping_creates_across_receivers_make_one_booking(
    mine: PartnerApi, theirs: PartnerApi, clock: HandClock
) -> None:
    before_the_next_call(mine, "book", lambda: create(theirs, clock, "18:30"))
    reply = create(mine, clock, "18:00")
    assert overlapping(reply), reply.body
    assert confirmed(mine) == [at(clock, "18:30")]


def test_a_create_whose_write_is_overtaken_checks_the_user_again(
    mine: PartnerApi, theirs: PartnerApi, clock: HandClock, store: SQLiteStore
) -> None:
    before_the_next_write(store, lambda: create(theirs, clock, "18:30"))
    reply = create(mine, clock, "18:00")
    assert overlapping(reply), reply.body
    assert confirmed(mine) == [at(clock, "18:30")]


def test_a_create_and_a_move_into_its_time_across_receivers_make_one_overlap_at_most(
    mine: PartnerApi, theirs: PartnerApi, clock: HandClock
) -> None:
    later = create(theirs, clock, "21:00").body["booking"]["booking_id"]
    before_the_next_call(mine, "book", lambda: update(theirs, clock, later, "18:30"))
    reply = create(mine, clock, "18:00")
    assert overlapping(reply), reply.body
    assert confirmed(mine) == [at(clock, "18:30")]


def test_a_move_into_a_time_another_booking_of_the_user_takes_meanwhile_is_refused(
    mine: PartnerApi, theirs: PartnerApi, clock: HandClock
) -> None:
    first = create(mine, clock, "21:00").body["booking"]["booking_id"]
    second = create(mine, clock, "17:30").body["booking"]["booking_id"]
    assert confirmed(mine) == [at(clock, "17:30"), at(clock, "21:00")]
    before_the_next_call(mine, "move", lambda: update(theirs, clock, second, "18:30"))
    reply = update(mine, clock, first, "18:00")
    assert overlapping(reply), reply.body
    assert confirmed(mine) == [at(clock, "18:30"), at(clock, "21:00")]


def test_a_move_whose_write_is_overtaken_checks_the_user_again(
    mine: PartnerApi, theirs: PartnerApi, clock: HandClock, store: SQLiteStore
) -> None:
    first = create(mine, clock, "21:00").body["booking"]["booking_id"]
    before_the_next_write(store, lambda: create(theirs, clock, "18:30"))
    reply = update(mine, clock, first, "18:00")
    assert overlapping(reply), reply.body
    assert confirmed(mine) == [at(clock, "18:30"), at(clock, "21:00")]


def test_another_users_booking_meanwhile_is_no_clash(
    mine: PartnerApi, theirs: PartnerApi, clock: HandClock, store: SQLiteStore
) -> None:
    before_the_next_write(store, lambda: create(theirs, clock, "18:30", user="u2"))
    reply = create(mine, clock, "18:00")
    assert reply.body["booking"]["status"] == "CONFIRMED", reply.body
    assert confirmed(mine) == [at(clock, "18:00")]
    assert confirmed(mine, "u2") == [at(clock, "18:30")]
