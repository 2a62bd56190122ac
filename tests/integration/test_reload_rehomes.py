"""A reload that removes a table still holding bookings ahead re-homes them on another unit
(feed.service.config_reload), or is refused: a booking is never dropped from the replay
under the new floor, and a partner is never told CANCELED of a booking that stands."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from feed.service.config_reload import Reloader
from feed.service.notify import BOOKING, Notifier
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue.restaurant import load_restaurant
from store import open_store

MARLOWES = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"
MID = "marlowes-kitchen"
NOW = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)  # Friday evening; London is UTC in December
SATURDAY = date(2026, 12, 5)
T2 = '[[tables]]\nid = "T2"\nx = 0\ny = 1\nseats = 2\n\n'
TABLEFINDER = Partner("tablefinder", None, None)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    copy = tmp_path / "marlowes.toml"
    copy.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    return copy


@pytest.fixture
def receiver(any_db: str, path: Path) -> Iterator[Receiver]:
    """Marlowe's on `any_db`, telling partner "tablefinder" (a notify URL nobody answers)."""
    partner = Partner("tablefinder", None, None, notify_url="http://127.0.0.1:9/n")
    settings = Settings(partners={"tablefinder": partner})
    notifier = Notifier({"tablefinder": partner}, coalesce_seconds=0)
    store = open_store(any_db)
    yield Receiver([load_restaurant(path)], store, settings, lambda: NOW, notifier)
    store.close()


def remove_t2(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert T2 in text
    path.write_text(text.replace(T2, ""), encoding="utf-8")


def partner_books(api: PartnerApi, hhmm: str, size: int = 2) -> dict[str, Any]:
    hour, minute = map(int, hhmm.split(":"))
    start = int(datetime(2026, 12, 5, hour, minute, tzinfo=UTC).timestamp())
    slot = {"merchant_id": MID, "service_id": "1000", "start_sec": start,
            "duration_sec": 2700, "resources": {"party_size": size}}  # fmt: skip
    created = api.create_booking(TABLEFINDER, {"slot": slot, "user_information": {"user_id": "u1"}})
    assert "booking" in created.body, created.body
    booking: dict[str, Any] = created.body["booking"]
    return booking


def rows(receiver: Receiver, day: date = SATURDAY) -> dict[str, dict[str, Any]]:
    listed = receiver.host_reservations(MID, day).body["reservations"]
    return {row["reservation_id"]: row for row in listed}


def booking_notices(receiver: Receiver) -> list[tuple[str, str]]:
    """The booking notifications queued: (status, booking id); each marked delivered."""
    out = []
    for item in receiver.store.pending(10**12):
        if item.kind == BOOKING:
            out.append((item.payload["status"], item.payload["name"].rsplit("/", 1)[-1]))
        receiver.store.delivered(item.id, 0)
    return out


def test_a_reload_removing_a_table_rehomes_its_bookings_ahead(
    receiver: Receiver, path: Path
) -> None:
    """A partner's booking (19:00) and the host's (20:30) are on T2; a reload removes T2.
    Both are booked again on another table at their own time and size, under the same
    booking ids: the host's list shows them booked on it (nothing to look at), the partner
    is told nothing (its slot and size did not change) and reads CONFIRMED with its slot,
    and the host can change and cancel its own."""
    api = PartnerApi(receiver.books, receiver.store, receiver.clock)
    online = partner_books(api, "19:00")
    ada = receiver.host_book(MID, 2, "2026-12-05T20:30", "Ada", "07700 900123")
    assert ada.code is None, ada.body
    ada_id = ada.body["reservation_id"]
    before = rows(receiver)
    assert (before[online["booking_id"]]["unit"], before[ada_id]["unit"]) == ("T2", "T2")
    booking_notices(receiver)

    remove_t2(path)
    outcome = Reloader([path], receiver).reload()

    assert outcome.applied, outcome.problems
    assert outcome.attention == ()
    assert {(r["reservation_id"], r["from"], r["to"]) for r in outcome.body()["rehomed"]} == {
        (online["booking_id"], "T2", "T4"),
        (ada_id, "T2", "T4"),
    }
    after = rows(receiver)
    assert set(after) == {online["booking_id"], ada_id}
    for booking_id, hhmm in ((online["booking_id"], "19:00"), (ada_id, "20:30")):
        row = after[booking_id]
        assert (row["status"], row["unit"], row["start"][11:16], row["party_size"]) == (
            "booked", "T4", hhmm, 2
        )  # fmt: skip
        assert row["attention"] is None
    assert (after[ada_id]["name"], after[ada_id]["phone"]) == ("Ada", "07700 900123")
    assert receiver.attention_now(MID) == []
    assert booking_notices(receiver) == []  # nothing the partner sees changed

    status = api.booking_status(TABLEFINDER, {"booking_id": online["booking_id"]}).body
    assert status["booking_status"] == "CONFIRMED", status
    [listed] = api.list_bookings(TABLEFINDER, {"user_id": "u1"}).body["bookings"]
    assert listed["slot"]["start_sec"] == online["slot"]["start_sec"]
    assert listed["status"] == "CONFIRMED"

    changed = receiver.host_change(MID, ada_id, 3, None)
    assert changed.code is None, changed.body
    cancelled = receiver.host_operation(MID, "cancel", ada_id)
    assert cancelled.code is None and cancelled.body["status"] == "cancelled", cancelled.body
    assert rows(receiver)[ada_id]["status"] == "cancelled"
    cancel = {"booking": {"booking_id": online["booking_id"], "status": "CANCELED"}}
    gone = api.update_booking(TABLEFINDER, cancel)
    assert gone.body["booking"]["status"] == "CANCELED", gone.body


def test_a_reload_removing_a_table_whose_booking_has_nowhere_to_go_is_refused(
    receiver: Receiver, path: Path
) -> None:
    """Saturday 19:00 is full (every table booked); a reload removing T2 would leave Bo's
    booking there without a table: refused, naming the booking and what to do, and
    nothing is written or changed."""
    sizes = {"Ada": 2, "Bo": 2, "Cy": 4, "Dee": 4, "Eve": 4, "Flo": 6}
    ids = {}
    for name, size in sizes.items():
        booked = receiver.host_book(MID, size, "2026-12-05T19:00", name, "")
        assert booked.code is None, booked.body
        ids[name] = booked.body["reservation_id"]
    units = {r["name"]: r["unit"] for r in rows(receiver).values()}
    assert units == {"Ada": "T2", "Bo": "T4", "Cy": "T5", "Dee": "T6", "Eve": "T1", "Flo": "T3"}
    running = receiver.books[MID].restaurant
    entries = [e.operation for e in receiver.store.entries(MID, SATURDAY)]

    remove_t2(path)
    outcome = Reloader([path], receiver).reload()

    assert outcome.problems == (
        f"{path}: tables: T2 is removed but booking {ids['Ada']} (Ada, 2 guests) is booked"
        " on it on 2026-12-05 at 19:00, and no other table is free for it then; cancel or"
        " move it first, or keep table T2",
    )
    assert receiver.books[MID].restaurant == running
    assert [e.operation for e in receiver.store.entries(MID, SATURDAY)] == entries
    assert rows(receiver)[ids["Ada"]]["unit"] == "T2"

    # Moved to 20:30 by the host, it is re-homed by the same reload.
    assert receiver.host_change(MID, ids["Ada"], None, "2026-12-05T20:30").code is None
    assert Reloader([path], receiver).reload().applied
    assert rows(receiver)[ids["Ada"]]["unit"] == "T4"


def test_a_removed_table_with_only_past_or_cancelled_bookings_is_accepted(
    receiver: Receiver, path: Path
) -> None:
    """T2 held a booking Friday at 17:30 (its hold long over by 18:00: a no-show) and one
    on Saturday that was cancelled: removing it is accepted, and nothing is re-homed; the
    day being served gets only the reload's fence, a `board` at its log's last minute
    (config_reload._retire), which changes nothing there."""
    friday = receiver.books[MID]
    early = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    done = friday.book(
        date(2026, 12, 4),
        next(s for s in calendar_slots(receiver, date(2026, 12, 4)) if s.local.hour == 17),
        2,
        early,
        {"name": "Past"},
        host=True,
    )
    assert done.rejected is None and done.operation[3] == "T2"  # type: ignore[union-attr]
    cancelled = receiver.host_book(MID, 2, "2026-12-05T19:00", "Gone", "").body["reservation_id"]
    assert receiver.host_operation(MID, "cancel", cancelled).code is None
    saturday = [e.operation for e in receiver.store.entries(MID, SATURDAY)]
    friday_log = [e.operation for e in receiver.store.entries(MID, date(2026, 12, 4))]

    remove_t2(path)
    outcome = Reloader([path], receiver).reload()

    assert outcome.applied, outcome.problems
    assert outcome.body()["rehomed"] == []
    assert [e.operation for e in receiver.store.entries(MID, SATURDAY)] == saturday
    last = friday_log[-1][1]
    assert [e.operation for e in receiver.store.entries(MID, date(2026, 12, 4))] == [
        *friday_log,
        ["board", last],
    ]


def calendar_slots(receiver: Receiver, day: date) -> list[Any]:
    from feed.venue import calendar

    return calendar.slots(receiver.books[MID].restaurant, day)


TERRACE = MARLOWES.parent / "terrace.toml"
P3 = '[[tables]]\nid = "P3"\nseats = 2\narea = "patio"\n'


def test_a_rehomed_booking_keeps_its_room_while_a_table_there_is_free(tmp_path: Path) -> None:
    """The Terrace: two partner bookings for 2 in the patio on Friday, at 19:00 (P3) and
    20:30 (P3), and the patio's 4-tops booked at 20:30. A reload removes P3: the 19:00
    one stays in the patio (P1), the 20:30 one has no patio table left and goes to the
    dining room, the room its partner is then shown. Neither is told anything."""
    path = tmp_path / "terrace.toml"
    text = TERRACE.read_text(encoding="utf-8")
    assert P3 in text
    path.write_text(text, encoding="utf-8")
    store = open_store(str(tmp_path / "terrace.db"))
    mid, friday = "the-terrace", date(2026, 12, 4)
    now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    receiver = Receiver([load_restaurant(path)], store, Settings(), lambda: now)
    api = PartnerApi(receiver.books, store, lambda: now)
    try:

        def create(hhmm: str, size: int, user: str) -> str:
            hour, minute = map(int, hhmm.split(":"))
            at = int(datetime(2026, 12, 4, hour, minute, tzinfo=UTC).timestamp())
            resources = {"party_size": size, "room_id": "patio"}
            slot = {"merchant_id": mid, "start_sec": str(at), "resources": resources}
            body = {"slot": slot, "user_information": {"user_id": user}}
            booked = api.create_booking(TABLEFINDER, body).body
            assert "booking" in booked, booked
            return str(booked["booking"]["booking_id"])

        early, late = create("19:00", 2, "u1"), create("20:30", 2, "u2")
        create("20:30", 4, "u3")
        create("20:30", 4, "u4")
        units = {
            r["reservation_id"]: r["unit"]
            for r in receiver.host_reservations(mid, friday).body["reservations"]
        }
        assert (units[early], units[late]) == ("P3", "P3")
        path.write_text(text.replace(P3, ""), encoding="utf-8")

        outcome = Reloader([path], receiver).reload()

        assert outcome.applied, outcome.problems
        assert {(r["reservation_id"], r["to"]) for r in outcome.rehomed} == {
            (early, "P1"),
            (late, "M1"),
        }
        rooms = {
            b["booking_id"]: (b["status"], b["slot"]["resources"].get("room_id"))
            for user in ("u1", "u2")
            for b in api.list_bookings(TABLEFINDER, {"user_id": user}).body["bookings"]
        }
        assert rooms == {early: ("CONFIRMED", "patio"), late: ("CONFIRMED", "main")}
    finally:
        store.close()


def test_a_reload_removing_a_table_a_party_sits_at_now_is_refused_until_it_is_free(
    receiver: Receiver, path: Path
) -> None:
    """Friday 18:00: a walk-in of 2 sits at T2. A file without T2 would replay the day on a
    floor where that party sits nowhere: the board would lose guests who are eating. The
    reload is refused, naming the table and the party, until the host frees the table."""
    walked = receiver.host_operation(MID, "walk_in", "W1", 2)
    assert walked.code is None and walked.body["result"] == "seated T2", walked.body
    friday = date(2026, 12, 4)
    remove_t2(path)
    outcome = Reloader([path], receiver).reload()
    assert outcome.problems == (
        f"{path}: tables: T2 is removed but W1 (2 guests) sits at it now; free the table or"
        " move the party to a table the new file keeps first, or keep T2",
    )
    book = receiver.books[MID]
    assert book.restaurant == load_restaurant(MARLOWES)  # nothing changed
    assert book.stand(friday).occupant["T2"] == "W1"
    assert receiver.host_operation(MID, "free", "T2").code is None
    assert Reloader([path], receiver).reload().applied
    assert "T2" not in book.stand(friday).occupant
