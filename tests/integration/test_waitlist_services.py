"""A waitlist entry waits in the queue of the service it joined, and that queue ends with the
service: an entry still unseated at the close is CANCELED then (it left the queue unseated),
never WAITING with a seat estimate for a later service or day it never joined. The partner's
calls over PartnerApi on a real SQLite file, the clock moved by hand."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from feed.http.statuses import status_of
from feed.service.days import DayBook
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
MARLOWES = "marlowes-kitchen"
PARTNER = Partner("tablefinder", None, None)
SATURDAY = date(2026, 12, 5)  # lunch 12:00-15:00, dinner 17:30-23:00 (London = UTC)
LUNCH = datetime(2026, 12, 5, 13, 0, tzinfo=UTC)
LUNCH_CLOSE = int(datetime(2026, 12, 5, 15, 0, tzinfo=UTC).timestamp())
BETWEEN = datetime(2026, 12, 5, 16, 0, tzinfo=UTC)
DINNER = datetime(2026, 12, 5, 19, 0, tzinfo=UTC)
NEXT_LUNCH = datetime(2026, 12, 6, 13, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[PartnerApi, DayBook, SQLiteStore, Clock]]:
    """Saturday's lunch with every table taken by the host's walk-ins."""
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        book = DayBook(store, load_restaurant(REPO / "samples" / "marlowes.toml"))
        clock = Clock(LUNCH)
        for i, size in enumerate([6, 4, 4, 4, 2, 2]):
            book.operate(SATURDAY, LUNCH, "walk_in", f"fill-{i}", size, meta={"source": "host"})
        assert book.stand(SATURDAY).queue() == []
        yield PartnerApi({MARLOWES: book}, store, clock), book, store, clock


def join(api: PartnerApi, user: str, token: str) -> Any:
    return api.create_waitlist_entry(
        PARTNER,
        {
            "merchant_id": MARLOWES,
            "party_size": 2,
            "user_information": {"user_id": user},
            "idempotency_token": token,
        },
    ).body


def entry(api: PartnerApi, entry_id: str) -> dict[str, Any]:
    return dict(
        api.get_waitlist_entry(PARTNER, {"waitlist_entry_id": entry_id}).body["waitlist_entry"]
    )


def test_an_entry_still_waiting_when_its_service_closes_is_canceled_at_the_close(
    world: tuple[PartnerApi, DayBook, SQLiteStore, Clock],
) -> None:
    api, _book, _store, clock = world
    entry_id = join(api, "guest", "t-1")["waitlist_entry_id"]
    assert entry(api, entry_id)["waitlist_entry_state"] == "WAITING"  # at lunch: it waits
    closed = {
        "waitlist_entry_state": "CANCELED",
        "waitlist_entry_state_times": {
            "created_time_seconds": int(LUNCH.timestamp()),
            "canceled_time_seconds": LUNCH_CLOSE,
        },
    }
    for later in (BETWEEN, DINNER, NEXT_LUNCH):  # no estimate for a queue it never joined
        clock.now = later
        assert entry(api, entry_id) == closed, later


def test_deleting_an_entry_whose_service_closed_changes_nothing(
    world: tuple[PartnerApi, DayBook, SQLiteStore, Clock],
) -> None:
    api, _book, store, clock = world
    entry_id = join(api, "guest", "t-1")["waitlist_entry_id"]
    clock.now = NEXT_LUNCH
    before = store.entries(MARLOWES, SATURDAY)
    assert api.delete_waitlist_entry(PARTNER, {"waitlist_entry_id": entry_id}).body == {}
    assert store.entries(MARLOWES, SATURDAY) == before  # nothing written to yesterday's log
    assert entry(api, entry_id)["waitlist_entry_state_times"]["canceled_time_seconds"] == (
        LUNCH_CLOSE
    )


def test_a_guest_whose_lunch_entry_closed_may_join_the_dinner_waitlist(
    world: tuple[PartnerApi, DayBook, SQLiteStore, Clock],
) -> None:
    api, book, _store, clock = world
    lunch_entry = join(api, "guest", "t-1")["waitlist_entry_id"]
    clock.now = DINNER
    for i, size in enumerate([6, 4, 4, 4, 2, 2]):  # dinner's own full floor
        book.operate(SATURDAY, DINNER, "walk_in", f"dinner-{i}", size, meta={"source": "host"})
    joined = join(api, "guest", "t-2")
    assert set(joined) == {"waitlist_entry_id"}, joined
    assert joined["waitlist_entry_id"] != lunch_entry
    assert entry(api, joined["waitlist_entry_id"])["waitlist_entry_state"] == "WAITING"


def test_a_change_after_the_close_takes_the_waitlist_off_before_its_pass_seats_anyone(
    world: tuple[PartnerApi, DayBook, SQLiteStore, Clock],
) -> None:
    _, book, store, _ = world
    book.operate(SATURDAY, LUNCH, "walk_in", "late", 2, meta={"source": "host"})
    assert [p.id for p in book.stand(SATURDAY).queue()] == ["late"]
    table = next(t for t, who in book.stand(SATURDAY).occupant.items() if who == "fill-5")
    # Lunch has closed and no sweep has come by: the host frees a 2-top.
    freed = book.operate(SATURDAY, BETWEEN, "free", table, meta={"source": "host"})
    assert freed.result == [], freed  # nobody seated: "late" was lunch's, and lunch is over
    assert book.stand(SATURDAY).queue() == []
    ops = [e.operation for e in store.entries(MARLOWES, SATURDAY, after_seq=-1)][-2:]
    assert [op[0] for op in ops] == ["leave", "free"] and ops[0][2] == "late"


def test_a_wait_that_would_run_past_the_close_is_not_estimated_nor_joined(
    world: tuple[PartnerApi, DayBook, SQLiteStore, Clock],
) -> None:
    """At 14:00 the only 6-top is taken for 90 minutes, past lunch's 15:00 close: a party
    of 6 is told no seat time (it would be after the close) and cannot join; a party of 2
    still waits 23 minutes, well before it."""
    api, _book, store, clock = world
    clock.now = datetime(2026, 12, 5, 14, 0, tzinfo=UTC)
    asked = {"merchant_id": MARLOWES, "party_size": [2, 6]}
    estimates = api.wait_estimates(PARTNER, asked).body
    assert estimates["waitlist_status"] == "OPEN"
    assert [e["party_size"] for e in estimates["wait_estimate"]] == [2]
    only_six = api.wait_estimates(PARTNER, {**asked, "party_size": [6]}).body
    assert only_six == {"waitlist_status": "CLOSED_OTHER"}
    entries = len(store.entries(MARLOWES, SATURDAY))
    refused = api.create_waitlist_entry(
        PARTNER,
        {"merchant_id": MARLOWES, "party_size": 6, "user_information": {"user_id": "six"}},
    ).body
    failure = refused["waitlist_business_logic_failure"]
    assert failure["cause"] == "WAITLIST_FULL"
    assert "past the 15:00 close" in failure["description"]
    assert len(store.entries(MARLOWES, SATURDAY)) == entries  # nothing written
    clock.now = LUNCH  # at 13:00 the same wait ends at 14:30: estimated
    assert [e["party_size"] for e in api.wait_estimates(PARTNER, asked).body["wait_estimate"]] == [
        2,
        6,
    ]


def test_the_hosts_quote_of_a_wait_past_the_close_says_so(tmp_path: Path) -> None:
    clock = Clock(datetime(2026, 12, 5, 14, 0, tzinfo=UTC))
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver(
            [load_restaurant(REPO / "samples" / "marlowes.toml")], store, Settings(), clock
        )
        for i, size in enumerate([6, 4, 4, 4, 2, 2]):
            assert receiver.host_operation(MARLOWES, "walk_in", f"fill-{i}", size).code is None
        assert receiver.host_operation(MARLOWES, "quote", 2).body["result"] == 23
        past = receiver.host_operation(MARLOWES, "quote", 6)
        assert status_of(past) == 409 and past.code == "wait past close"
        assert past.body["error"]["message"] == (
            "a party of 6 would wait about 90 minutes, past the 15:00 close: no table is"
            " expected for them before the service ends"
        )


def test_deleting_an_entry_the_host_seats_meanwhile_says_it_was_seated(
    world: tuple[PartnerApi, DayBook, SQLiteStore, Clock],
) -> None:
    api, book, store, _clock = world
    entry_id = join(api, "guest", "t-1")["waitlist_entry_id"]
    host = DayBook(store, book.restaurant)  # another receiver's, on the same file
    [table] = [t for t, p in host.stand(SATURDAY).occupant.items() if p == "fill-4"]
    operate = book.operate

    def overtaken(day: date, now: Any, op: str, *args: Any, **kwargs: Any) -> Any:
        if op == "leave":  # read as waiting; the host frees a table, which seats it
            del book.operate
            host.operate(SATURDAY, LUNCH, "free", table, meta={"source": "host"})
            assert host.stand(SATURDAY).parties[entry_id].seated_at is not None
        return operate(day, now, op, *args, **kwargs)

    book.operate = overtaken  # type: ignore[method-assign]
    deleted = api.delete_waitlist_entry(PARTNER, {"waitlist_entry_id": entry_id}).body
    assert deleted["waitlist_business_logic_failure"]["cause"] == "CAUSE_UNSPECIFIED", deleted
    assert entry(api, entry_id)["waitlist_entry_state"] == "SEATED"


def test_a_waiting_entry_is_given_no_seat_time_past_the_close(
    world: tuple[PartnerApi, DayBook, SQLiteStore, Clock],
) -> None:
    """A party of 6 joins at 13:00, told 14:30. At 14:00 its wait runs 90 minutes, past
    lunch's 15:00 close: it still waits, but is told no seat time (as BatchGetWaitEstimates
    leaves the size out) rather than 15:30, when nobody is seated any more."""
    api, _book, _store, clock = world
    joined = api.create_waitlist_entry(
        PARTNER,
        {"merchant_id": MARLOWES, "party_size": 6, "user_information": {"user_id": "six"}},
    ).body
    entry_id = joined["waitlist_entry_id"]
    at_once = entry(api, entry_id)
    seat = at_once["wait_estimate"]["wait_length"]["estimated_seat_time_range"]
    assert seat["start_seconds"] == int(datetime(2026, 12, 5, 14, 30, tzinfo=UTC).timestamp())
    clock.now = datetime(2026, 12, 5, 14, 0, tzinfo=UTC)
    later = entry(api, entry_id)
    assert later == {
        "waitlist_entry_state": "WAITING",
        "waitlist_entry_state_times": {"created_time_seconds": int(LUNCH.timestamp())},
    }
    asked = {"merchant_id": MARLOWES, "party_size": [6]}
    assert api.wait_estimates(PARTNER, asked).body == {"waitlist_status": "CLOSED_OTHER"}


def test_a_seat_time_range_ends_no_later_than_the_close(
    world: tuple[PartnerApi, DayBook, SQLiteStore, Clock],
) -> None:
    """At 13:10 a party of 6 waits 90 minutes (the only 6-top is taken): from 14:40, and the
    range, a quarter of the wait wide, ran to 15:02:30, past lunch's 15:00 close, when
    nobody is seated any more. The estimate and the entry that joins on it end at the close."""
    api, _book, _store, clock = world
    clock.now = datetime(2026, 12, 5, 13, 10, tzinfo=UTC)
    told = {
        "start_seconds": int(datetime(2026, 12, 5, 14, 40, tzinfo=UTC).timestamp()),
        "end_seconds": LUNCH_CLOSE,
    }
    asked = {"merchant_id": MARLOWES, "party_size": [6]}
    [six] = api.wait_estimates(PARTNER, asked).body["wait_estimate"]
    assert six["wait_length"]["estimated_seat_time_range"] == told
    joined = api.create_waitlist_entry(
        PARTNER,
        {"merchant_id": MARLOWES, "party_size": 6, "user_information": {"user_id": "six"}},
    ).body
    waiting = entry(api, joined["waitlist_entry_id"])
    assert waiting["wait_estimate"]["wait_length"]["estimated_seat_time_range"] == told
