"""The same request sent to two receivers on one PostgreSQL database at once (a partner's or
a tablet's retry landing on another receiver) gets the reply of the one that acted, never a
refusal caused by its own twin: CreateBooking and CreateWaitlistEntry on their token, the
host API on its Idempotency-Key, UpdateBooking on the booking's state.

Each receiver here has its own store (its own connections) and its own replayed days, as
`hoststand serve` processes have. The race is made to happen, not hoped for: the second
receiver's store lets the first answer the same request at a chosen point of the second's
work (`Twin`), then goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from feed.service.days import BOOKING_SCOPE, DayBook
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.service.replies import Reply
from feed.settings import Partner, Settings
from feed.venue.restaurant import load_restaurant
from store.log import LogStore
from store.postgres import PostgresStore
from tests.integration.postgres import fresh_schema

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)  # Friday noon; bookings are for Saturday
SERVING = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)  # Friday's dinner: walk-ins and waitlist
SATURDAY_18 = int(datetime(2026, 12, 5, 18, 0, tzinfo=UTC).timestamp())  # London is on GMT
SATURDAY_19 = int(datetime(2026, 12, 5, 19, 0, tzinfo=UTC).timestamp())
SIX = 6  # T3 is Marlowe's only table for six: one booking fills the slot for that size
PARTNER = Partner(id="tablefinder", secret=None, merchants=None)
MARLOWES = "marlowes-kitchen"


class Twin:
    """A store that, at its first call of `method` whose arguments `when` accepts, lets the
    twin request run to its end on another receiver (`run`): before that call, or after it
    has answered (`after`). Everything else goes straight to `store`."""

    def __init__(
        self,
        store: LogStore,
        method: str,
        run: Callable[[], Any],
        *,
        after: bool,
        when: Callable[..., bool] = lambda *args: True,
    ) -> None:
        self.store = store
        self.method = method
        self.run = run
        self.after = after
        self.when = when
        self.answered: list[Any] = []  # what the twin answered, once it has run

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.store, name)
        if name != self.method:
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            due = not self.answered and self.when(*args)
            if due and not self.after:
                self.answered.append(self.run())
            result = real(*args, **kwargs)
            if due and self.after:
                self.answered.append(self.run())
            return result

        return call


@dataclass
class Receivers:
    """Receivers on one database, each with a store of its own."""

    url: str
    stores: ExitStack

    def store(self) -> PostgresStore:
        return self.stores.enter_context(PostgresStore(self.url))

    def partner_api(self, store: LogStore, now: datetime = NOW) -> PartnerApi:
        marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
        return PartnerApi({MARLOWES: DayBook(store, marlowes)}, store, lambda: now)


@pytest.fixture
def receivers() -> Iterator[Receivers]:
    with fresh_schema("twins") as url, ExitStack() as stores:
        yield Receivers(url, stores)


def slot(start_sec: int, size: int) -> dict[str, Any]:
    return {
        "merchant_id": MARLOWES,
        "service_id": "1000",
        "start_sec": str(start_sec),
        "resources": {"party_size": size},
    }


def create(start_sec: int, size: int, token: str, user: str = "u1") -> dict[str, Any]:
    return {
        "slot": slot(start_sec, size),
        "user_information": {"user_id": user, "given_name": "Ada", "family_name": "Lovelace"},
        "idempotency_token": token,
    }


def booking_of(reply: Reply) -> dict[str, Any]:
    assert "booking" in reply.body, reply.body
    booking: dict[str, Any] = reply.body["booking"]
    return booking


def on_booking(booking_id: str) -> Callable[..., bool]:
    """`when` for the first read of the booking's index."""
    return lambda scope, key, *_: scope == BOOKING_SCOPE and key == booking_id


# -- UpdateBooking: the booking as asked ------------------------------------------------------

# Where the twin lands in the second receiver's work: between its read of the booking and of
# the booking's state, or as it writes its own change.
WHILE_READING = ("recall", True)
WHILE_WRITING = ("append_all", False)


@pytest.mark.parametrize("method, after", [WHILE_READING, WHILE_WRITING])
def test_a_move_made_by_its_twin_on_another_receiver_answers_the_booking_moved(
    receivers: Receivers, method: str, after: bool
) -> None:
    first = receivers.partner_api(receivers.store())
    booking_id = booking_of(first.create_booking(PARTNER, create(SATURDAY_18, 2, "t1")))[
        "booking_id"
    ]
    move = {"booking": {"booking_id": booking_id, "slot": slot(SATURDAY_19, 2)}}
    twin = Twin(
        receivers.store(),
        method,
        lambda: first.update_booking(PARTNER, move),
        after=after,
        when=on_booking(booking_id) if method == "recall" else lambda *args: True,
    )
    second = receivers.partner_api(cast(LogStore, twin))
    answered = booking_of(second.update_booking(PARTNER, move))
    [done] = twin.answered
    assert answered == booking_of(done)
    assert answered["status"] == "CONFIRMED"
    assert answered["slot"]["start_sec"] == SATURDAY_19


def test_a_cancel_made_by_its_twin_on_another_receiver_answers_the_booking_canceled(
    receivers: Receivers,
) -> None:
    first = receivers.partner_api(receivers.store())
    booking_id = booking_of(first.create_booking(PARTNER, create(SATURDAY_18, 2, "t1")))[
        "booking_id"
    ]
    cancel = {"booking": {"booking_id": booking_id, "status": "CANCELED"}}
    twin = Twin(receivers.store(), "append_all", lambda: first.update_booking(PARTNER, cancel),
                after=False)  # fmt: skip
    second = receivers.partner_api(cast(LogStore, twin))
    answered = booking_of(second.update_booking(PARTNER, cancel))
    [done] = twin.answered
    assert answered == booking_of(done)
    assert answered["status"] == "CANCELED"
    # A cancel asked again afterwards is still told the booking was already cancelled.
    again = second.update_booking(PARTNER, cancel).body
    assert again["booking_failure"]["cause"] == "BOOKING_ALREADY_CANCELLED"


# -- CreateBooking and CreateWaitlistEntry: the token's booking or entry ----------------------


def on_scope(scope: str) -> Callable[..., bool]:
    return lambda asked, *_: asked == scope


@pytest.mark.parametrize(
    "method, scope",
    [
        # The twin books between this one's look for the token and for the user's bookings
        # (this one was refused SLOT_ALREADY_BOOKED_BY_USER),
        pytest.param("recall", "v3create:tablefinder", id="before-the-users-bookings"),
        # or between that and taking the slot's last table (refused SLOT_UNAVAILABLE).
        pytest.param("recall_prefix", "user:tablefinder", id="before-the-last-table"),
    ],
)
def test_a_create_booking_whose_twin_took_the_last_spot_answers_the_twins_booking(
    receivers: Receivers, method: str, scope: str
) -> None:
    first = receivers.partner_api(receivers.store())
    asked = create(SATURDAY_19, SIX, "last-spot")
    twin = Twin(receivers.store(), method, lambda: first.create_booking(PARTNER, asked),
                after=True, when=on_scope(scope))  # fmt: skip
    second = receivers.partner_api(cast(LogStore, twin))
    answered = second.create_booking(PARTNER, asked)
    [done] = twin.answered
    assert answered.body == done.body
    assert booking_of(answered)["status"] == "CONFIRMED"
    # Another token is still refused (one booking was made), and its refusal is not stored:
    # a retry of it tries again.
    for _ in range(2):
        other = second.create_booking(PARTNER, create(SATURDAY_19, SIX, "another", user="u2"))
        assert other.body["booking_failure"]["cause"] == "SLOT_UNAVAILABLE"
    assert second.store.recall("v3create:tablefinder", "another") is None


def test_a_waitlist_entry_made_by_its_twin_on_another_receiver_answers_the_twins_entry(
    receivers: Receivers,
) -> None:
    first = receivers.partner_api(receivers.store(), SERVING)
    host = Receiver([load_restaurant(REPO / "samples" / "marlowes.toml")], receivers.store(),
                    Settings(), lambda: SERVING)  # fmt: skip
    for i, size in enumerate([4, 2, 6, 2, 4, 4]):  # every table taken: a party has to wait
        walked = host.host_operation(MARLOWES, "walk_in", f"w{i}", size)
        assert walked.code is None, walked.body
    asked = {
        "merchant_id": MARLOWES,
        "service_id": "1000",
        "party_size": 2,
        "user_information": {"user_id": "u1", "given_name": "Ada"},
        "idempotency_token": "wait-1",
    }
    twin = Twin(receivers.store(), "recall", lambda: first.create_waitlist_entry(PARTNER, asked),
                after=True, when=on_scope("v3wait:tablefinder"))  # fmt: skip
    second = receivers.partner_api(cast(LogStore, twin), SERVING)
    answered = second.create_waitlist_entry(PARTNER, asked)
    [done] = twin.answered
    assert "waitlist_entry_id" in answered.body, answered.body
    assert answered.body == done.body


# -- the host API: the Idempotency-Key's reply ------------------------------------------------


def host(store: LogStore, now: datetime = NOW) -> Receiver:
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    return Receiver([marlowes], store, Settings(), lambda: now)


def keyed_twin(receivers: Receivers, route: str, run: Callable[[], Reply]) -> Twin:
    """A store letting the twin run just after this one's look for the key found nothing."""
    return Twin(receivers.store(), "recall", run, after=True,
                when=on_scope(f"host:{MARLOWES}:{route}"))  # fmt: skip


def test_a_phone_booking_whose_twin_took_the_last_table_answers_the_twins_booking(
    receivers: Receivers,
) -> None:
    first = host(receivers.store())
    key = ("phone-1", {"party_size": 9, "start": "2026-12-05T19:00"})

    def reserve(receiver: Receiver) -> Reply:
        return receiver.host_book(MARLOWES, 9, "2026-12-05T19:00", "Ada", "", key=key)

    twin = keyed_twin(receivers, "reserve", lambda: reserve(first))
    answered = reserve(host(cast(LogStore, twin)))
    [done] = twin.answered
    assert answered.code is None, answered.body  # nine fit only T1+T3: the twin has it
    assert answered.body == done.body


def test_a_host_cancel_made_by_its_twin_on_another_receiver_answers_the_twins_reply(
    receivers: Receivers,
) -> None:
    first = host(receivers.store())
    booked = first.host_book(MARLOWES, 2, "2026-12-05T19:00", "Ada", "")
    reservation_id = booked.body["reservation_id"]
    key = ("cancel-1", reservation_id)

    def cancel(receiver: Receiver) -> Reply:
        return receiver.host_operation(MARLOWES, "cancel", reservation_id, key=key)

    twin = keyed_twin(receivers, "cancel", lambda: cancel(first))
    answered = cancel(host(cast(LogStore, twin)))
    [done] = twin.answered
    assert answered.code is None, answered.body
    assert (
        answered.body
        == done.body
        == {
            "reservation_id": reservation_id,
            "status": "cancelled",
            "seated": done.body["seated"],
        }
    )


def test_a_walk_in_added_by_its_twin_on_another_receiver_answers_the_twins_reply(
    receivers: Receivers,
) -> None:
    first = host(receivers.store(), SERVING)
    key = ("walk-1", {"size": 2, "party_id": "w-ada"})

    def walk_in(receiver: Receiver) -> Reply:
        return receiver.host_operation(MARLOWES, "walk_in", "w-ada", 2, key=key)

    twin = keyed_twin(receivers, "walk_in", lambda: walk_in(first))
    answered = walk_in(host(cast(LogStore, twin), SERVING))
    [done] = twin.answered
    assert answered.code is None, answered.body
    assert answered.body == done.body
