"""A host's or partner's action overtaken by another change of the same booking (the
clock's sweep, a partner's UpdateBooking, another receiver) answers from the booking as it
now stands: never a stale success, never a refusal the fresh record would not give.

Two receivers on one real SQLite file, each with a clock moved by hand; the other's
change is made at the moment this one has read the booking and not yet written."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from feed.http.serving import sweep_no_shows
from feed.http.statuses import status_of as status_code
from feed.service.days import LOOKUPS, DayBook
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.service.signing import sign
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
    return HandClock(SATURDAY, "17:00")


@pytest.fixture
def rec(store: SQLiteStore, marlowes: Restaurant, clock: HandClock) -> Receiver:
    return Receiver([marlowes], store, SETTINGS, clock)


@pytest.fixture
def other_clock() -> HandClock:
    return HandClock(SATURDAY, "17:00")


@pytest.fixture
def other(store: SQLiteStore, marlowes: Restaurant, other_clock: HandClock) -> Receiver:
    """Another receiver on the same database (its clock may be a minute ahead)."""
    return Receiver([marlowes], store, SETTINGS, other_clock)


def before_the_next(book: DayBook, name: str, meanwhile: Callable[[], Any]) -> None:
    """Run `meanwhile` once, just before `book`'s next `name` operation is written."""
    operate = book.operate

    def overtaken(day: date, now: Any, op: str, *args: Any, **kwargs: Any) -> Any:
        if op == name:
            del book.operate  # the class's own again
            meanwhile()
        return operate(day, now, op, *args, **kwargs)

    book.operate = overtaken  # type: ignore[method-assign]


def before_the_next_call(book: DayBook, method: str, meanwhile: Callable[[], Any]) -> None:
    """Run `meanwhile` once, just before `book`'s next call of `method` (move, stand)."""
    original = getattr(book, method)

    def overtaken(*args: Any, **kwargs: Any) -> Any:
        delattr(book, method)
        meanwhile()
        return original(*args, **kwargs)

    setattr(book, method, overtaken)


def test_a_busy_check_in_overtaken_by_the_sweep_answers_the_arrives_refusal(
    rec: Receiver, other: Receiver, clock: HandClock, other_clock: HandClock
) -> None:
    booked = rec.host_book(MID, 2, "2026-12-05T18:00", "Ann", "1").body
    ann, unit = booked["reservation_id"], booked["unit"]
    clock.at("17:50")
    assert rec.host_operation(MID, "walk_in", "W", 2).code is None
    seated = "W" in rec.books[MID].stand(SATURDAY).occupant.values()
    seat_or_move = "move" if seated else "seat"
    assert rec.host_hand(MID, seat_or_move, "W", unit).code is None  # Ann's table is taken
    clock.at("18:14")  # within Ann's hold: the check-in finds her table busy...
    other_clock.at("18:15")  # ...and the other receiver's sweep writes her a no-show
    before_the_next(rec.books[MID], "arrive", lambda: sweep_no_shows(other))
    reply = rec.host_operation(MID, "check_in", ann)
    assert reply.code == "reservation not active", reply.body
    assert reply.body["error"]["message"] == (
        "check_in refused: reservation not active: it became a no-show"
    )
    assert "arrived" not in reply.body["error"]
    rows = rec.host_reservations(MID, SATURDAY).body["reservations"]
    assert [row["status"] for row in rows if row["reservation_id"] == ann] == ["no-show"]


def webhook(rec: Receiver, kind: str, data: dict[str, Any]) -> Any:
    body = json.dumps(
        {"id": uuid.uuid4().hex, "type": f"reservation.{kind}", "merchant_id": MID, "data": data}
    ).encode()
    return rec.webhook(
        PARTNER.id, sign(PARTNER.secret or "", int(rec.clock().timestamp()), body), body
    )


def status_of(rec: Receiver, booking_id: str) -> list[str]:
    rows = rec.host_reservations(MID, SATURDAY).body["reservations"]
    return [row["status"] for row in rows if row["reservation_id"] == booking_id]


def test_a_partners_cancel_overtaken_by_a_host_change_cancels_the_booking_as_changed(
    rec: Receiver, other: Receiver
) -> None:
    at = "2026-12-05T18:00:00+00:00"
    booking = webhook(rec, "requested", {"party_size": 2, "start": at}).body["reservation_id"]
    before_the_next(rec.books[MID], "cancel", lambda: other.host_change(MID, booking, 3, None))
    cancelled = webhook(rec, "cancelled", {"reservation_id": booking})
    assert cancelled.code is None, cancelled.body
    assert cancelled.body["status"] == "cancelled"
    assert status_of(rec, booking) == ["cancelled"]  # the booking as changed, not still booked


def test_a_host_seat_overtaken_by_a_partners_update_seats_the_booking_as_updated(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    api = PartnerApi(rec.books, rec.store, rec.clock)
    start_sec = str(int(clock.now.replace(hour=18).timestamp()))
    created = api.create_booking(
        PARTNER,
        {
            "slot": {"merchant_id": MID, "start_sec": start_sec, "resources": {"party_size": 2}},
            "user_information": {"user_id": "u1"},
        },
    ).body
    booking = created["booking"]["booking_id"]
    clock.at("17:55")
    theirs = PartnerApi(other.books, other.store, other.clock)
    update = {"booking_id": booking, "slot": {"resources": {"party_size": 3}}}
    before_the_next(
        rec.books[MID], "seat", lambda: theirs.update_booking(PARTNER, {"booking": update})
    )
    seated = rec.host_hand(MID, "seat", booking, "T5")
    assert seated.code is None, seated.body
    assert seated.body["result"] == [f"{booking}@T5"]
    assert status_of(rec, booking) == ["seated"]


def v3_booking(api: PartnerApi, clock: HandClock, hhmm: str, size: int, user: str) -> str:
    hour, minute = (int(x) for x in hhmm.split(":"))
    start_sec = str(int(clock.now.replace(hour=hour, minute=minute).timestamp()))
    created = api.create_booking(
        PARTNER,
        {
            "slot": {"merchant_id": MID, "start_sec": start_sec, "resources": {"party_size": size}},
            "user_information": {"user_id": user},
        },
    ).body
    return str(created["booking"]["booking_id"])


def test_a_host_change_overtaken_by_a_partners_update_is_made_on_the_updated_booking(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    api = PartnerApi(rec.books, rec.store, rec.clock)
    booking = v3_booking(api, clock, "18:00", 2, "u1")
    theirs = PartnerApi(other.books, other.store, other.clock)
    update = {"booking_id": booking, "slot": {"resources": {"party_size": 3}}}
    before_the_next_call(
        rec.books[MID], "move", lambda: theirs.update_booking(PARTNER, {"booking": update})
    )
    changed = rec.host_change(MID, booking, None, "2026-12-05T19:00")  # the guest phoned
    assert changed.code is None, changed.body
    assert (changed.body["party_size"], changed.body["start"][11:16]) == (3, "19:00")
    mine = api.update_booking(PARTNER, {"booking": {"booking_id": booking}}).body["booking"]
    assert mine["status"] == "CONFIRMED"
    assert mine["slot"]["resources"]["party_size"] == 3  # the partner's size, kept
    assert mine["slot"]["start_sec"] == int(clock.now.replace(hour=19).timestamp())
    rows = rec.host_reservations(MID, SATURDAY).body["reservations"]
    assert [(r["status"], r["party_size"]) for r in rows if r["reservation_id"] == booking] == [
        ("booked", 3)
    ]


def test_a_status_read_overtaken_by_a_host_change_reads_the_booking_again(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    api = PartnerApi(rec.books, rec.store, rec.clock)
    booking = v3_booking(api, clock, "18:00", 2, "u1")
    before_the_next_call(
        rec.books[MID], "stand", lambda: other.host_change(MID, booking, None, "2026-12-05T19:00")
    )
    status = api.booking_status(PARTNER, {"booking_id": booking}).body
    assert status["booking_status"] == "CONFIRMED"  # changed, not cancelled


def before_each_of_the_next(
    book: DayBook, method: str, times: int, meanwhile: Callable[[], Any], op: str | None = None
) -> None:
    """Run `meanwhile` just before each of `book`'s next `times` calls of `method` (of its
    `op` operation only, when named): a booking that keeps changing under this action."""
    original = getattr(book, method)
    left = [times]

    def overtaken(*args: Any, **kwargs: Any) -> Any:
        if op is None or (len(args) > 2 and args[2] == op):
            left[0] -= 1
            if left[0] == 0:
                delattr(book, method)
            meanwhile()
        return original(*args, **kwargs)

    setattr(book, method, overtaken)


def v3_update(api: PartnerApi, booking: str, **slot: Any) -> Any:
    return api.update_booking(PARTNER, {"booking": {"booking_id": booking, **slot}})


def test_a_partners_update_overtaken_by_a_host_change_is_made_on_the_changed_booking(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    api = PartnerApi(rec.books, rec.store, rec.clock)
    booking = v3_booking(api, clock, "18:00", 2, "u1")
    before_the_next_call(
        rec.books[MID], "move", lambda: other.host_change(MID, booking, None, "2026-12-05T19:00")
    )
    updated = v3_update(api, booking, slot={"resources": {"party_size": 3}})
    assert "booking_failure" not in updated.body, updated.body
    mine = updated.body["booking"]
    assert mine["status"] == "CONFIRMED"
    assert mine["slot"]["resources"]["party_size"] == 3
    assert mine["slot"]["start_sec"] == int(clock.now.replace(hour=19).timestamp())  # the host's
    rows = rec.host_reservations(MID, SATURDAY).body["reservations"]
    assert [
        (r["status"], r["party_size"], r["start"][11:16])
        for r in rows
        if r["reservation_id"] == booking
    ] == [("booked", 3, "19:00")]


def test_a_partners_v3_cancel_overtaken_by_a_host_change_cancels_the_booking_as_changed(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    api = PartnerApi(rec.books, rec.store, rec.clock)
    booking = v3_booking(api, clock, "18:00", 2, "u1")
    before_the_next(rec.books[MID], "cancel", lambda: other.host_change(MID, booking, 3, None))
    cancelled = v3_update(api, booking, status="CANCELED")
    assert "booking_failure" not in cancelled.body, cancelled.body
    assert cancelled.body["booking"]["status"] == "CANCELED"
    assert cancelled.body["booking"]["slot"]["resources"]["party_size"] == 3  # as it was changed
    assert status_of(rec, booking) == ["cancelled"]
    status = api.booking_status(PARTNER, {"booking_id": booking}).body
    assert status["booking_status"] == "CANCELED"


def host_changes(other: Receiver, booking: str) -> Callable[[], Any]:
    """The host's changes of `booking`, a party of 3, 4, 5... one per call."""
    sizes = iter(range(3, 9))
    return lambda: other.host_change(MID, booking, next(sizes), None)


def test_a_partners_update_overtaken_at_every_lookup_says_the_booking_kept_changing(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    api = PartnerApi(rec.books, rec.store, rec.clock)
    booking = v3_booking(api, clock, "18:00", 2, "u1")
    before_each_of_the_next(rec.books[MID], "move", LOOKUPS, host_changes(other, booking))
    updated = v3_update(
        api, booking, slot={"start_sec": int(clock.now.replace(hour=19).timestamp())}
    )
    assert updated.code == "changed meanwhile", updated.body  # 409: the partner retries
    assert "booking_failure" not in updated.body  # never "not cancellable": it stands
    assert "retry" in updated.body["error"]["message"]
    rows = rec.host_reservations(MID, SATURDAY).body["reservations"]
    assert [
        (r["status"], r["party_size"], r["start"][11:16])
        for r in rows
        if r["reservation_id"] == booking
    ] == [("booked", 5, "18:00")]  # the host's last change, untouched by the update


def test_a_partners_v3_cancel_overtaken_at_every_lookup_says_the_booking_kept_changing(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    api = PartnerApi(rec.books, rec.store, rec.clock)
    booking = v3_booking(api, clock, "18:00", 2, "u1")
    changes = host_changes(other, booking)
    before_each_of_the_next(rec.books[MID], "operate", LOOKUPS, changes, op="cancel")
    cancelled = v3_update(api, booking, status="CANCELED")
    assert cancelled.code == "changed meanwhile", cancelled.body
    assert status_of(rec, booking) == ["booked"]
    assert api.booking_status(PARTNER, {"booking_id": booking}).body["booking_status"] == (
        "CONFIRMED"
    )
    again = v3_update(api, booking, status="CANCELED")  # the partner's retry
    assert again.body["booking"]["status"] == "CANCELED"
    assert status_of(rec, booking) == ["cancelled"]


def partner_updates(api: PartnerApi, booking: str) -> Callable[[], Any]:
    """The partner's UpdateBookings of `booking` to a party of 3, 4, 5... one per call."""
    sizes = iter(range(3, 9))

    def update() -> None:
        updated = v3_update(api, booking, slot={"resources": {"party_size": next(sizes)}})
        assert "booking" in updated.body, updated.body

    return update


def kept_changing(reply: Any, name: str) -> None:
    """`reply` says plainly that `name` was not done as the booking kept changing, and
    nothing about the copies of it since replaced (cancelled, not booked)."""
    assert reply.code == "changed meanwhile", reply.body
    assert status_code(reply) == 409
    message = reply.body["error"]["message"]
    assert message.startswith(f"{name} not done: booking "), message
    assert "retry" in message and "cancelled" not in message and "not booked" not in message


@pytest.fixture
def changing(rec: Receiver, other: Receiver, clock: HandClock) -> tuple[str, Callable[[], Any]]:
    """A partner's booking at 18:00 for 2, now 17:55, and the partner's updates of it made
    on the other receiver."""
    booking = v3_booking(PartnerApi(rec.books, rec.store, rec.clock), clock, "18:00", 2, "u1")
    clock.at("17:55")
    theirs = PartnerApi(other.books, other.store, other.clock)
    return booking, partner_updates(theirs, booking)


def test_a_host_check_in_overtaken_at_every_lookup_says_the_booking_kept_changing(
    rec: Receiver, changing: tuple[str, Callable[[], Any]]
) -> None:
    booking, updates = changing
    before_each_of_the_next(rec.books[MID], "operate", LOOKUPS, updates, op="check_in")
    kept_changing(rec.host_operation(MID, "check_in", booking), "check_in")
    assert status_of(rec, booking) == ["booked"]
    assert rec.host_operation(MID, "check_in", booking).code is None  # the host's retry


def test_a_host_seat_overtaken_at_every_lookup_says_the_booking_kept_changing(
    rec: Receiver, changing: tuple[str, Callable[[], Any]]
) -> None:
    booking, updates = changing
    before_each_of_the_next(rec.books[MID], "operate", LOOKUPS, updates, op="seat")
    kept_changing(rec.host_hand(MID, "seat", booking, "T5"), "seat")
    assert status_of(rec, booking) == ["booked"]


def test_a_host_change_overtaken_at_every_lookup_says_the_booking_kept_changing(
    rec: Receiver, changing: tuple[str, Callable[[], Any]]
) -> None:
    booking, updates = changing
    before_each_of_the_next(rec.books[MID], "move", LOOKUPS, updates)
    kept_changing(rec.host_change(MID, booking, None, "2026-12-05T19:00"), "change")
    rows = rec.host_reservations(MID, SATURDAY).body["reservations"]
    assert [
        (r["status"], r["party_size"], r["start"][11:16])
        for r in rows
        if r["reservation_id"] == booking
    ] == [("booked", 5, "18:00")]  # the partner's last update, untouched by the change


def test_a_partners_webhook_cancel_overtaken_at_every_lookup_is_not_kept_as_the_answer(
    rec: Receiver, other: Receiver
) -> None:
    at = "2026-12-05T18:00:00+00:00"
    booking = webhook(rec, "requested", {"party_size": 2, "start": at}).body["reservation_id"]
    changes = host_changes(other, booking)
    before_each_of_the_next(rec.books[MID], "operate", LOOKUPS, changes, op="cancel")
    body = json.dumps(
        {
            "id": "evt-cancel-1",
            "type": "reservation.cancelled",
            "merchant_id": MID,
            "data": {"reservation_id": booking},
        }
    ).encode()

    def deliver() -> Any:
        signature = sign(PARTNER.secret or "", int(rec.clock().timestamp()), body)
        return rec.webhook(PARTNER.id, signature, body)

    kept_changing(deliver(), "cancel")
    assert status_of(rec, booking) == ["booked"]
    again = deliver()  # the partner's retry of the same event is tried again, not replayed
    assert again.code is None, again.body
    assert again.body["status"] == "cancelled"
    assert status_of(rec, booking) == ["cancelled"]


def test_a_create_booking_retry_overtaken_by_a_host_change_answers_the_booking_as_changed(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    api = PartnerApi(rec.books, rec.store, rec.clock)
    start_sec = str(int(clock.now.replace(hour=18).timestamp()))
    request = {
        "slot": {"merchant_id": MID, "start_sec": start_sec, "resources": {"party_size": 2}},
        "user_information": {"user_id": "u1"},
        "idempotency_token": "tok-1",
    }
    booking = api.create_booking(PARTNER, request).body["booking"]["booking_id"]
    before_the_next_call(rec.books[MID], "stand", lambda: other.host_change(MID, booking, 3, None))
    retried = api.create_booking(PARTNER, request).body["booking"]  # the partner's retry
    assert retried["booking_id"] == booking
    assert retried["status"] == "CONFIRMED", retried  # changed, not cancelled
    assert retried["slot"]["resources"]["party_size"] == 3


def test_a_status_read_overtaken_at_every_read_says_the_booking_kept_changing(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    api = PartnerApi(rec.books, rec.store, rec.clock)
    booking = v3_booking(api, clock, "18:00", 2, "u1")
    reads = 3  # partner_api.STATUS_READS
    before_each_of_the_next(rec.books[MID], "stand", reads, host_changes(other, booking))
    status = api.booking_status(PARTNER, {"booking_id": booking})
    assert status.code == "changed meanwhile", status.body  # not CANCELED: it stands
    assert status_code(status) == 409
    listed = api.list_bookings(PARTNER, {"user_id": "u1"}).body["bookings"]  # read again
    assert [(b["status"], b["slot"]["resources"]["party_size"]) for b in listed] == [
        ("CONFIRMED", 5)
    ]


def test_an_unchanged_update_overtaken_at_every_status_read_answers_the_booking_as_changed(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    api = PartnerApi(rec.books, rec.store, rec.clock)
    booking = v3_booking(api, clock, "18:00", 2, "u1")
    reads = 3  # partner_api.STATUS_READS
    before_each_of_the_next(rec.books[MID], "stand", reads, host_changes(other, booking))
    mine = v3_update(api, booking).body["booking"]  # nothing to change: the booking as it is
    assert (mine["status"], mine["slot"]["resources"]["party_size"]) == ("CONFIRMED", 5)


def v3_create(api: PartnerApi, clock: HandClock, hhmm: str, size: int, user: str) -> Any:
    hour, minute = (int(x) for x in hhmm.split(":"))
    start_sec = str(int(clock.now.replace(hour=hour, minute=minute).timestamp()))
    return api.create_booking(
        PARTNER,
        {
            "slot": {"merchant_id": MID, "start_sec": start_sec, "resources": {"party_size": size}},
            "user_information": {"user_id": user},
        },
    )


def test_a_users_clash_read_overtaken_by_a_host_change_reads_the_booking_again(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    """The user's booking at 18:00, changed by the host (booked again under a new engine
    id) just as a CreateBooking of the same user at 18:30 reads it: it still overlaps."""
    api = PartnerApi(rec.books, rec.store, rec.clock)
    booking = v3_booking(api, clock, "18:00", 2, "u1")
    before_the_next_call(rec.books[MID], "stand", lambda: other.host_change(MID, booking, 3, None))
    second = v3_create(api, clock, "18:30", 2, "u1").body
    assert second.get("booking_failure", {}).get("cause") == "OVERLAPPING_RESERVATION", second
    rows = rec.host_reservations(MID, SATURDAY).body["reservations"]
    assert [r["status"] for r in rows if r["status"] == "booked"] == ["booked"]  # one only


def test_a_users_clash_read_overtaken_by_a_partners_update_reads_the_booking_again(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    """The same, with the user's booking moved to 18:15 by the partner's UpdateBooking
    (on another receiver) as the CreateBooking at 18:45 reads it: the 45-minute turn at
    18:00 would have ended by then, the one at 18:15 has not."""
    api = PartnerApi(rec.books, rec.store, rec.clock)
    booking = v3_booking(api, clock, "18:00", 2, "u1")
    theirs = PartnerApi(other.books, other.store, other.clock)
    at = int(clock.now.replace(hour=18, minute=15).timestamp())
    before_the_next_call(
        rec.books[MID], "stand", lambda: v3_update(theirs, booking, slot={"start_sec": at})
    )
    second = v3_create(api, clock, "18:45", 2, "u1").body
    assert second.get("booking_failure", {}).get("cause") == "OVERLAPPING_RESERVATION", second


def test_a_users_clash_read_overtaken_at_every_read_says_the_booking_kept_changing(
    rec: Receiver, other: Receiver, clock: HandClock
) -> None:
    api = PartnerApi(rec.books, rec.store, rec.clock)
    booking = v3_booking(api, clock, "18:00", 2, "u1")
    reads = 3  # partner_api.STATUS_READS
    before_each_of_the_next(rec.books[MID], "stand", reads, host_changes(other, booking))
    second = v3_create(api, clock, "18:30", 2, "u1")
    assert second.code == "changed meanwhile", second.body  # 409: not taken for cancelled
    assert status_code(second) == 409
    again = v3_create(api, clock, "18:30", 2, "u1").body  # the partner's retry
    assert again.get("booking_failure", {}).get("cause") == "OVERLAPPING_RESERVATION", again
