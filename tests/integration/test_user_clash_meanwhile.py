"""A user's two bookings are never both made overlapping (partner-formats.md section 2:
OVERLAPPING_RESERVATION), however the two requests interleave across receivers: the
check of the user's other bookings and the write are made on the same state, so one
landing between them (on another receiver on the same store) is seen by the other.

Two receivers on one real store (a SQLite file; a PostgreSQL schema when configured): the
other's booking or change lands at the moment this one has checked the user's bookings
and not yet written (or just before its write's retry), as the races in
test_changes_meanwhile.py are made."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue.restaurant import Restaurant, load_restaurant
from store import open_store
from store.log import LogStore
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
def store(any_db: str) -> Iterator[LogStore]:
    """One store (a SQLite file, a PostgreSQL schema) that both receivers write."""
    opened = open_store(any_db)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def clock() -> HandClock:
    return HandClock(SATURDAY, "12:00")


@pytest.fixture
def mine(store: LogStore, marlowes: Restaurant, clock: HandClock) -> PartnerApi:
    rec = Receiver([marlowes], store, SETTINGS, clock)
    return PartnerApi(rec.books, rec.store, rec.clock)


@pytest.fixture
def theirs(store: LogStore, marlowes: Restaurant, clock: HandClock) -> PartnerApi:
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


def before_the_next_write(store: LogStore, meanwhile: Callable[[], Any]) -> None:
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
    mine: PartnerApi, theirs: PartnerApi, clock: HandClock, store: LogStore
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
    mine: PartnerApi, theirs: PartnerApi, clock: HandClock, store: LogStore
) -> None:
    first = create(mine, clock, "21:00").body["booking"]["booking_id"]
    before_the_next_write(store, lambda: create(theirs, clock, "18:30"))
    reply = update(mine, clock, first, "18:00")
    assert overlapping(reply), reply.body
    assert confirmed(mine) == [at(clock, "18:30"), at(clock, "21:00")]


def test_another_users_booking_meanwhile_is_no_clash(
    mine: PartnerApi, theirs: PartnerApi, clock: HandClock, store: LogStore
) -> None:
    before_the_next_write(store, lambda: create(theirs, clock, "18:30", user="u2"))
    reply = create(mine, clock, "18:00")
    assert reply.body["booking"]["status"] == "CONFIRMED", reply.body
    assert confirmed(mine) == [at(clock, "18:00")]
    assert confirmed(mine, "u2") == [at(clock, "18:30")]


# A late Friday dinner (last seating 01:30, a party of 2 turns in 45 minutes) and a
# Saturday that opens at 02:00: a Friday booking at 01:30 and a Saturday one at 02:00 are
# on two service days (two logs) and overlap from 02:00 to 02:15.
FRIDAY = date(2026, 12, 4)
LATE_FRIDAY = """friday = [
  { open = "12:00", close = "15:00", last_seating = "14:00" },
  { open = "17:30", close = "02:00", last_seating = "01:30" },
]
saturday = [
  { open = "02:00", close = "05:00", last_seating = "04:00" },
  { open = "12:00", close = "15:00", last_seating = "14:00" },
  { open = "17:30", close = "23:00", last_seating = "21:30" },
]"""


@pytest.fixture
def night_owls(tmp_path: Path) -> Restaurant:
    text = (REPO / "samples" / "marlowes.toml").read_text(encoding="utf-8")
    start, end = text.index("friday = ["), text.index("sunday = [")
    path = tmp_path / "late.toml"
    path.write_text(text[:start] + LATE_FRIDAY + "\n" + text[end:], encoding="utf-8")
    return load_restaurant(path)


def night_api(store: LogStore, r: Restaurant, clock: HandClock) -> PartnerApi:
    rec = Receiver([r], store, SETTINGS, clock)
    return PartnerApi(rec.books, rec.store, rec.clock)


def saturday(clock: HandClock, hhmm: str) -> str:
    hour, minute = (int(x) for x in hhmm.split(":"))
    return str(int(clock.now.replace(day=5, hour=hour, minute=minute).timestamp()))


def create_at(api: PartnerApi, start_sec: str, user: str = "u1") -> Any:
    slot = {"merchant_id": MID, "start_sec": start_sec, "resources": {"party_size": 2}}
    return api.create_booking(PARTNER, {"slot": slot, "user_information": {"user_id": user}})


def test_bookings_on_two_days_that_overlap_are_one_too_many(
    store: LogStore, night_owls: Restaurant
) -> None:
    clock = HandClock(FRIDAY, "12:00")
    api = night_api(store, night_owls, clock)
    friday_late = create_at(api, saturday(clock, "01:30")).body
    assert friday_late["booking"]["status"] == "CONFIRMED", friday_late
    reply = create_at(api, saturday(clock, "02:00"))
    assert overlapping(reply), reply.body


def test_two_overlapping_creates_on_two_days_across_receivers_make_one_booking(
    store: LogStore, night_owls: Restaurant
) -> None:
    clock = HandClock(FRIDAY, "12:00")
    mine, theirs = night_api(store, night_owls, clock), night_api(store, night_owls, clock)
    before_the_next_write(store, lambda: create_at(theirs, saturday(clock, "02:00")))
    reply = create_at(mine, saturday(clock, "01:30"))  # Friday's log; theirs, Saturday's
    assert overlapping(reply), reply.body
    assert confirmed(mine) == [int(saturday(clock, "02:00"))]


def test_a_move_onto_another_day_into_a_time_the_user_took_meanwhile_is_refused(
    store: LogStore, night_owls: Restaurant
) -> None:
    clock = HandClock(FRIDAY, "12:00")
    mine, theirs = night_api(store, night_owls, clock), night_api(store, night_owls, clock)
    early = create_at(mine, saturday(clock, "04:00")).body["booking"]["booking_id"]
    before_the_next_write(store, lambda: create_at(theirs, saturday(clock, "01:30")))
    moved = {"booking_id": early, "slot": {"start_sec": saturday(clock, "02:00")}}
    reply = mine.update_booking(PARTNER, {"booking": moved})
    assert overlapping(reply), reply.body
    assert confirmed(mine) == [int(saturday(clock, "01:30")), int(saturday(clock, "04:00"))]


def test_a_user_books_across_midnight_again_after_cancelling(
    store: LogStore, night_owls: Restaurant
) -> None:
    """The numbers of a user's cross-day writes only go up: a booking cancelled and made
    again (the same time, on either day) is not held up by its own earlier number."""
    clock = HandClock(FRIDAY, "12:00")
    api = night_api(store, night_owls, clock)
    for hhmm in ("01:30", "01:30", "02:00"):
        made = create_at(api, saturday(clock, hhmm)).body
        assert made["booking"]["status"] == "CONFIRMED", made
        cancel = {"booking_id": made["booking"]["booking_id"], "status": "CANCELED"}
        assert api.update_booking(PARTNER, {"booking": cancel}).body["booking"]["status"] == (
            "CANCELED"
        )
    assert confirmed(api) == []
    assert [k for k, _ in store.recall_prefix(f"userwrites:{PARTNER.id}", "u1/")] == [
        f"u1/{n:012d}" for n in (1, 2, 3)
    ]


def test_a_create_across_midnight_sent_twice_at_once_makes_one_booking(
    store: LogStore, night_owls: Restaurant
) -> None:
    """The same request (one idempotency token) on two receivers at once: the one that
    loses the user's number is answered with the other's booking, not refused."""
    clock = HandClock(FRIDAY, "12:00")
    mine, theirs = night_api(store, night_owls, clock), night_api(store, night_owls, clock)
    slot = {
        "merchant_id": MID,
        "start_sec": saturday(clock, "01:30"),
        "resources": {"party_size": 2},
    }
    request = {"slot": slot, "user_information": {"user_id": "u1"}, "idempotency_token": "t-1"}
    made: list[Any] = []
    before_the_next_write(store, lambda: made.append(theirs.create_booking(PARTNER, request)))
    reply = mine.create_booking(PARTNER, request)
    assert reply.body["booking"]["status"] == "CONFIRMED", reply.body
    assert reply.body["booking"]["booking_id"] == made[0].body["booking"]["booking_id"]
    assert confirmed(mine) == [int(saturday(clock, "01:30"))]


def test_the_old_numbers_of_a_users_cross_day_writes_are_forgotten(
    store: LogStore, night_owls: Restaurant
) -> None:
    """Each cross-day write adds a number for its user, and only the last is ever read: the
    ones below it written over an hour ago (a write takes the next moments after reading
    the last) are forgotten at the user's next cross-day write, the last one always kept;
    the numbers still go up. Records from before the numbers were stamped go once a
    later one is old. Another user's records, one whose id goes on after a "/", stay."""
    scope = f"userwrites:{PARTNER.id}"
    long_ago = {"at": time.time() - 2 * 3600}
    for n in (1, 2):
        store.remember(scope, f"u1/{n:012d}", True)  # before the stamps
    for n in (3, 4, 5):
        store.remember(scope, f"u1/{n:012d}", long_ago)
    other = ["u1/000000000003x/000000000001", "u1/000000000004/000000000001"]
    for key in other:
        store.remember(scope, key, long_ago)
    clock = HandClock(FRIDAY, "12:00")
    api = night_api(store, night_owls, clock)
    made = create_at(api, saturday(clock, "01:30")).body
    assert made["booking"]["status"] == "CONFIRMED", made

    def keys() -> list[str]:
        return [k for k, _ in store.recall_prefix(scope, "u1/") if k not in other]

    assert keys() == [f"u1/{n:012d}" for n in (5, 6)]
    reply = create_at(api, saturday(clock, "02:00"))
    assert overlapping(reply), reply.body  # still checked against the booking at 01:30
    assert keys() == [f"u1/{n:012d}" for n in (6,)]  # read (5 old, gone); none taken
    cancel = {"booking_id": made["booking"]["booking_id"], "status": "CANCELED"}
    assert api.update_booking(PARTNER, {"booking": cancel}).body["booking"]["status"] == (
        "CANCELED"
    )
    again = create_at(api, saturday(clock, "02:00")).body
    assert again["booking"]["status"] == "CONFIRMED", again
    assert keys() == [f"u1/{n:012d}" for n in (6, 7)]  # 6 is young: kept
    assert [k for k, _ in store.recall_prefix(scope, "u1/") if k in other] == sorted(other)
