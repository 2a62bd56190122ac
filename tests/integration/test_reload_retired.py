"""A table a reload removed stays in the replay of the days it served, up to the reload
(feed.service.floors.Retired): a past day's rows on it read as they were, to the host and to
a partner asking after its booking, and it is never offered again."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from feed.cli import refuse_moved_openings
from feed.http.serving import sweep_no_shows
from feed.service.config_reload import Reloader, stored_parties_removed
from feed.service.floors import RETIRED_SCOPE, Retired, kept_floor, note_floor
from feed.service.floorview import FloorViews
from feed.service.notify import BOOKING, Notifier
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue.restaurant import load_restaurant
from store import open_store
from store.log import LogStore, StoreUnavailable
from tests.integration.test_floor_drift import CutAtTheFloorRecord

MARLOWES = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"
MID = "marlowes-kitchen"
TUESDAY = date(2026, 12, 1)
T2 = '[[tables]]\nid = "T2"\nx = 0\ny = 1\nseats = 2\n\n'
TABLEFINDER = Partner("tablefinder", None, None)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 12, day, hour, minute, tzinfo=UTC)  # London is UTC in December


def rows(receiver: Receiver, day: date) -> dict[str, dict[str, Any]]:
    listed = receiver.host_reservations(MID, day).body["reservations"]
    return {row["reservation_id"]: row for row in listed}


def _online_at_19_and_ada_at_20_30(receiver: Receiver) -> tuple[PartnerApi, str, str]:
    """Tuesday's two parties of 2 on T2: a partner's booking at 19:00 and Ada's (by phone)
    at 20:30. The partner's API, and both booking ids."""
    api = PartnerApi(receiver.books, receiver.store, receiver.clock)
    slot = {"merchant_id": MID, "service_id": "1000",
            "start_sec": int(at(1, 19).timestamp()), "duration_sec": 2700,
            "resources": {"party_size": 2}}  # fmt: skip
    created = api.create_booking(TABLEFINDER, {"slot": slot, "user_information": {"user_id": "u1"}})
    online = created.body["booking"]["booking_id"]
    ada = receiver.host_book(MID, 2, "2026-12-01T20:30", "Ada", "").body["reservation_id"]
    return api, online, ada


def test_a_past_days_rows_on_a_removed_table_read_as_they_were(any_db: str, tmp_path: Path) -> None:
    """Tuesday, T2 had a partner's booking at 19:00 whose guests never came (a no-show),
    Ada's at 20:30 who sat and left, and Cy's at 17:30, cancelled. On Friday a reload
    removes T2. Tuesday still lists all three as they ended, on T2; the partner reads
    NO_SHOW (not CANCELED); T2 is offered nowhere."""
    path = tmp_path / "marlowes.toml"
    path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    clock = [at(1, 12)]  # 2026-11-30 would do as well: bookings are made the same day
    store = open_store(any_db)
    try:
        settings = Settings(partners={"tablefinder": TABLEFINDER})
        receiver = Receiver([load_restaurant(path)], store, settings, lambda: clock[0])
        api, online, ada = _online_at_19_and_ada_at_20_30(receiver)
        cy = receiver.host_book(MID, 2, "2026-12-01T17:30", "Cy", "").body["reservation_id"]
        before = rows(receiver, TUESDAY)
        assert {before[b]["unit"] for b in (online, ada, cy)} == {"T2"}
        assert receiver.host_operation(MID, "cancel", cy).code is None
        clock[0] = at(1, 20, 30)
        assert receiver.host_operation(MID, "check_in", ada).code is None
        clock[0] = at(1, 22)
        assert receiver.host_operation(MID, "free", "T2").code is None
        was = {b: (r["status"], r["unit"]) for b, r in rows(receiver, TUESDAY).items()}
        assert was[online] == ("no-show", "T2"), was
        status = api.booking_status(TABLEFINDER, {"booking_id": online}).body
        assert status["booking_status"] == "NO_SHOW", status

        clock[0] = at(4, 18)
        path.write_text(path.read_text(encoding="utf-8").replace(T2, ""), encoding="utf-8")
        outcome = Reloader([path], receiver).reload()
        assert outcome.applied, outcome.problems

        now = {b: (r["status"], r["unit"]) for b, r in rows(receiver, TUESDAY).items()}
        assert now == was
        status = api.booking_status(TABLEFINDER, {"booking_id": online}).body
        assert status["booking_status"] == "NO_SHOW", status
        # A restart on the new file reads the same (the removed table is kept in the store).
        again = Receiver([load_restaurant(path)], store, settings, lambda: clock[0])
        assert {b: (r["status"], r["unit"]) for b, r in rows(again, TUESDAY).items()} == was

        # Never offered: not to seat a walk-in, not to book, not on the board.
        book = receiver.books[MID]
        friday = date(2026, 12, 4)
        assert "T2" not in book.free_units(friday, None, clock[0])
        assert "T2" not in book.stand(friday).occupant
        assert "T2" not in book.stand(TUESDAY).occupant
        booked = receiver.host_book(MID, 2, "2026-12-05T19:00", "Di", "").body
        assert booked["unit"] != "T2", booked
    finally:
        store.close()


def test_todays_walk_in_that_sat_at_a_removed_table_and_left_stays_gone(
    any_db: str, tmp_path: Path
) -> None:
    """Friday 12:00 a walk-in of 2 sits at T2 and leaves at 13:00; at 18:00 a reload
    removes T2. Today's replay has the walk-in sit at T2 and leave, as it did: no party is
    shown sitting at another table it never sat at, and T2 is not on the board."""
    path = tmp_path / "marlowes.toml"
    path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    clock = [at(4, 12)]
    store = open_store(any_db)
    try:
        receiver = Receiver([load_restaurant(path)], store, Settings(), lambda: clock[0])
        walked = receiver.host_operation(MID, "walk_in", "W1", 2)
        assert walked.body["result"] == "seated T2", walked.body
        clock[0] = at(4, 13)
        assert receiver.host_operation(MID, "free", "T2").code is None
        clock[0] = at(4, 18)
        path.write_text(path.read_text(encoding="utf-8").replace(T2, ""), encoding="utf-8")
        assert Reloader([path], receiver).reload().applied
        stand = receiver.books[MID].stand(date(2026, 12, 4))
        assert stand.sittings() == []
        assert (stand.parties["W1"].state, stand.parties["W1"].tables) == ("gone", ("T2",))
        assert "T2" not in stand.occupant
        again = receiver.host_operation(MID, "walk_in", "W2", 2)
        assert again.body["result"] not in ("seated T2",), again.body
    finally:
        store.close()


def test_a_booking_whose_hold_ended_just_before_the_reload_is_a_no_show_not_dropped(
    any_db: str, tmp_path: Path
) -> None:
    """A partner's booking on T2 at 17:30 Friday: its hold ends at 17:45. At 17:45:05,
    before the clock's sweep has written the no-show, a reload removes T2: nothing is
    re-homed (its guests are no-shows already), and the booking is not dropped: the host
    lists it as a no-show on T2, the sweep writes it once and the partner hears NO_SHOW,
    and its GetBookingStatus says NO_SHOW, never CANCELED."""
    path = tmp_path / "marlowes.toml"
    path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    clock = [at(4, 12)]
    store = open_store(any_db)
    try:
        partner = Partner("tablefinder", None, None, notify_url="http://127.0.0.1:9/n")
        settings = Settings(partners={"tablefinder": partner})
        notifier = Notifier({"tablefinder": partner}, coalesce_seconds=0)
        receiver = Receiver([load_restaurant(path)], store, settings, lambda: clock[0], notifier)
        api = PartnerApi(receiver.books, receiver.store, receiver.clock)
        slot = {"merchant_id": MID, "service_id": "1000",
                "start_sec": int(at(4, 17, 30).timestamp()), "duration_sec": 2700,
                "resources": {"party_size": 2}}  # fmt: skip
        created = api.create_booking(
            TABLEFINDER, {"slot": slot, "user_information": {"user_id": "u1"}}
        )
        online = created.body["booking"]["booking_id"]
        friday = date(2026, 12, 4)
        assert rows(receiver, friday)[online]["unit"] == "T2"
        for item in store.pending(10**12):
            store.delivered(item.id, 0)

        clock[0] = at(4, 17, 45) + timedelta(seconds=5)
        path.write_text(path.read_text(encoding="utf-8").replace(T2, ""), encoding="utf-8")
        outcome = Reloader([path], receiver).reload()
        assert outcome.applied, outcome.problems
        assert outcome.rehomed == ()

        row = rows(receiver, friday)[online]
        assert (row["status"], row["unit"]) == ("no-show", "T2"), row
        status = api.booking_status(TABLEFINDER, {"booking_id": online}).body
        assert status["booking_status"] == "NO_SHOW", status
        clock[0] = at(4, 17, 45) + timedelta(seconds=10)
        assert sweep_no_shows(receiver) == 1
        told = [i.payload["status"] for i in store.pending(10**12) if i.kind == BOOKING]
        assert told == ["NO_SHOW"]
        status = api.booking_status(TABLEFINDER, {"booking_id": online}).body
        assert status["booking_status"] == "NO_SHOW", status
    finally:
        store.close()


def test_a_start_without_a_table_a_party_sits_at_is_refused_with_no_floor_kept(
    any_db: str, tmp_path: Path
) -> None:
    """A store whose floor was never kept (written before starts kept it): the check
    still finds Ann sitting at T2 from the log alone (a stand-in for T2), and refuses."""
    path = tmp_path / "marlowes.toml"
    path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    store = open_store(any_db)
    try:
        receiver = Receiver([load_restaurant(path)], store, Settings(), lambda: at(4, 18))
        walked = receiver.host_operation(MID, "walk_in", "A", 2, meta={"name": "Ann"})
        assert walked.body["result"] == "seated T2", walked.body
        assert store.recall_prefix("floor", "") == []
        path.write_text(path.read_text(encoding="utf-8").replace(T2, ""), encoding="utf-8")
        found = stored_parties_removed(store, load_restaurant(path), path, at(4, 18, 5))
        assert [line.split("; ")[0] for line in found] == [
            f"{path}: tables: T2 is not on the floor plan, but A (Ann, 2 guests) sits at it"
            " now (2026-12-04)"
        ]
    finally:
        store.close()


def test_the_quote_a_waiting_party_was_given_reads_the_same_after_a_reload(
    any_db: str, tmp_path: Path
) -> None:
    """Friday 12:00 Ann (2) sits at T2, Bo (2) at T4; Ann leaves at 12:05; four parties of
    4 fill T1, T5, T6, T3 and G (4) waits, quoted 24 minutes. A reload removes T2 (nobody
    sits there). The board still shows the quote G was given: its replay has Ann sit at T2
    and leave, not sit at T4 for good, which shifted every seating after it."""
    path = tmp_path / "marlowes.toml"
    path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    clock = [at(4, 12)]
    store = open_store(any_db)
    try:
        receiver = Receiver([load_restaurant(path)], store, Settings(), lambda: clock[0])
        for party, size in (("A", 2), ("B", 2)):
            assert receiver.host_operation(MID, "walk_in", party, size).code is None
        clock[0] = at(4, 12, 5)
        assert receiver.host_operation(MID, "free", "T2").code is None
        for party in ("C", "D", "E", "F", "G"):
            assert receiver.host_operation(MID, "walk_in", party, 4).code is None
        friday = date(2026, 12, 4)
        before = FloorViews(receiver.books[MID]).floor(friday, clock[0])["queue"]
        assert [(q["party_id"], q["quote"]) for q in before] == [("G", 24)]

        clock[0] = at(4, 12, 10)
        path.write_text(path.read_text(encoding="utf-8").replace(T2, ""), encoding="utf-8")
        assert Reloader([path], receiver).reload().applied
        after = FloorViews(receiver.books[MID]).floor(friday, clock[0])["queue"]
        assert [(q["party_id"], q["quote"]) for q in after] == [("G", 24)]
    finally:
        store.close()


def test_the_first_start_on_a_store_that_never_kept_its_floor_keeps_the_tables_its_logs_name(
    any_db: str, tmp_path: Path
) -> None:
    """A store written before starts kept the floor (no floor record): Tuesday, T2 had a
    partner's booking whose guests never came and Ada's, who sat; T2 is then taken out of
    the file while no server runs. The first start (the checks and records every start
    makes) finds T2 in Tuesday's log and keeps it for the replay up to then, as near as
    the log tells (2 seats: the largest party seen there): Tuesday still lists both on
    T2, the partner reads NO_SHOW (not CANCELED), and T2 is offered nowhere."""
    path = tmp_path / "marlowes.toml"
    path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    clock = [at(1, 12)]
    store = open_store(any_db)
    try:
        settings = Settings(partners={"tablefinder": TABLEFINDER})
        receiver = Receiver([load_restaurant(path)], store, settings, lambda: clock[0])
        api, online, ada = _online_at_19_and_ada_at_20_30(receiver)
        clock[0] = at(1, 20, 30)
        assert receiver.host_operation(MID, "check_in", ada).code is None
        clock[0] = at(1, 22)
        assert receiver.host_operation(MID, "free", "T2").code is None
        was = {b: (r["status"], r["unit"]) for b, r in rows(receiver, TUESDAY).items()}
        assert was == {online: ("no-show", "T2"), ada: ("seated", "T2")}, was
        assert store.recall_prefix("floor", "") == []  # as a store from before has it

        clock[0] = at(4, 18)
        path.write_text(path.read_text(encoding="utf-8").replace(T2, ""), encoding="utf-8")
        refuse_moved_openings(store, [(str(path), load_restaurant(path))], clock[0], start=True)
        again = Receiver([load_restaurant(path)], store, settings, lambda: clock[0])
        assert {b: (r["status"], r["unit"]) for b, r in rows(again, TUESDAY).items()} == was
        api = PartnerApi(again.books, again.store, again.clock)
        status = api.booking_status(TABLEFINDER, {"booking_id": online}).body
        assert status["booking_status"] == "NO_SHOW", status
        [(_key, kept)] = store.recall_prefix("retired", f"{MID}/")
        assert (kept["unit"], kept["seats"]) == ("T2", 2)
        friday = date(2026, 12, 4)
        assert "T2" not in again.books[MID].free_units(friday, None, clock[0])
        booked = again.host_book(MID, 2, "2026-12-05T19:00", "Di", "").body
        assert booked["unit"] != "T2", booked
        # Kept once: a later start finds the floor kept and reads no log for this.
        refuse_moved_openings(store, [(str(path), load_restaurant(path))], at(4, 19), start=True)
        assert len(store.recall_prefix("retired", f"{MID}/")) == 1
    finally:
        store.close()


def test_a_table_the_first_start_recovers_goes_last_in_floor_order_not_first(
    any_db: str, tmp_path: Path
) -> None:
    """A store from before floors were kept; Marlowe's file then had T9, a 2-top, last.
    Tuesday, P (6) walked in and was seated at T3, and Q (2), seated at T2, was moved to
    T9. T9 is then taken out of the file while no server runs. The first start keeps T9
    for Tuesday's replay (as a 6-top: the log does not tell its seats), at the end of the
    floor order, where a restaurant adds a table: put first, it changed which table the
    rules chose, and the replay's seating pass seated P at T9 and so could not move Q
    there, showing both at tables they never sat at (P at T9, Q at T2)."""
    t9 = '[[tables]]\nid = "T9"\nx = 2\ny = 2\nseats = 2\n\n'
    text = MARLOWES.read_text(encoding="utf-8")
    combos = text.index("[[combos]]")
    path = tmp_path / "marlowes.toml"
    path.write_text(text[:combos] + t9 + text[combos:], encoding="utf-8")
    clock = [at(1, 12)]
    store = open_store(any_db)
    try:
        receiver = Receiver([load_restaurant(path)], store, Settings(), lambda: clock[0])
        assert receiver.host_operation(MID, "walk_in", "P", 6).code is None
        assert receiver.host_operation(MID, "walk_in", "Q", 2).code is None
        assert receiver.host_hand(MID, "move", "Q", "T9").code is None
        stand = receiver.books[MID].stand(TUESDAY)
        was = {p: stand.parties[p].tables for p in ("P", "Q")}
        assert was == {"P": ("T3",), "Q": ("T9",)}, was
        assert store.recall_prefix("floor", "") == []  # as a store from before has it

        clock[0] = at(4, 18)
        path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
        refuse_moved_openings(store, [(str(path), load_restaurant(path))], clock[0], start=True)
        again = Receiver([load_restaurant(path)], store, Settings(), lambda: clock[0])
        stand = again.books[MID].stand(TUESDAY)
        assert {p: stand.parties[p].tables for p in ("P", "Q")} == was
        [(_key, kept)] = store.recall_prefix("retired", f"{MID}/")
        assert (kept["unit"], kept["place"]) == ("T9", 6)  # after Marlowe's six tables
    finally:
        store.close()


def test_a_reload_cut_off_as_it_keeps_its_floor_keeps_nothing_of_it(
    any_db: str, tmp_path: Path
) -> None:
    """A reload removing T2 before the day's service wrote T2's removal, then its floor
    record: cut between (the database restarting), T2 stood removed as of the reload while
    the floor in force still had it (the reload failed, every server seated there), and a
    start without T2 later kept that removal, dropping from every replay what sat at T2
    meanwhile. The removal and the floor record are kept together or not at all."""
    path = tmp_path / "marlowes.toml"
    path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    store = open_store(any_db)
    try:
        note_floor(store, MID, load_restaurant(path).floor, at(4, 8).timestamp())
        cut = CutAtTheFloorRecord(store)
        cut.cut = False
        clock = [at(4, 9)]  # no service yet, nothing on today's log: no fence entry
        receiver = Receiver(
            [load_restaurant(path)], cast(LogStore, cut), Settings(), lambda: clock[0]
        )
        path.write_text(path.read_text(encoding="utf-8").replace(T2, ""), encoding="utf-8")
        cut.cut = True
        with pytest.raises(StoreUnavailable):
            Reloader([path], receiver).reload()
        assert store.recall_prefix(RETIRED_SCOPE, f"{MID}/") == []
        assert "T2" in kept_floor(store, MID)[1]
        cut.cut = False
        clock[0] = at(4, 9, 5)
        assert Reloader([path], receiver).reload().applied
        retired = [Retired.of_record(v) for _k, v in store.recall_prefix(RETIRED_SCOPE, MID)]
        assert {(r.unit, r.at) for r in retired if r is not None} == {
            ("T2", at(4, 9, 5).timestamp())
        }
    finally:
        store.close()
