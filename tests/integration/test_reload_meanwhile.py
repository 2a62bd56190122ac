"""A table a reload removes, and a party seated there by a writer that has not switched to
the new floor: another server on the same store still running the old file, whether it
seats the party before the reload switches or after. The seat is refused (409 `table
removed`) or the reload is refused naming the party: never a party the host was told is
seated that the replay shows waiting, or one sitting at a table no floor has."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from feed.cli import refuse_moved_openings
from feed.http.statuses import status_of
from feed.service import config_reload
from feed.service.config_reload import Reloader
from feed.service.days import DayBook
from feed.service.floors import floor_history, kept_floor, note_floor
from feed.service.floorview import FloorViews
from feed.service.notify import Notifier
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.service.signing import sign
from feed.settings import Partner, Settings
from feed.venue.restaurant import load_restaurant
from store import open_store
from store.log import LogStore, StoreUnwritable
from store.sqlite import _Job
from tests.integration.full_disk import FullDiskStore

MARLOWES = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"
MID = "marlowes-kitchen"
FRIDAY = date(2026, 12, 4)
T5 = '[[tables]]\nid = "T5"\nx = 1\ny = 1\nseats = 4\n\n'
T5_T6 = '[[combos]]\ntables = ["T5", "T6"]\n\n'


def at(hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 12, 4, hour, minute, tzinfo=UTC)  # London is UTC in December


def sitting(receiver: Receiver) -> dict[str, tuple[str, ...]]:
    return {s.party_id: s.tables for s in receiver.books[MID].stand(FRIDAY).sittings()}


def waiting(receiver: Receiver) -> list[str]:
    return list(receiver.books[MID].stand(FRIDAY).waiting)


def marlowes(tmp_path: Path) -> Path:
    """A copy of Marlowe's file to reload."""
    path = tmp_path / "marlowes.toml"
    path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    return path


def remove_t5(path: Path) -> None:
    """The file without T5 (and its combo with T6), for the next reload."""
    path.write_text(path.read_text(encoding="utf-8").replace(T5, "").replace(T5_T6, ""))


def on_a_disk_to_fill(
    tmp_path: Path, path: Path, clock: list[datetime]
) -> tuple[FullForReplaces, Settings, Receiver]:
    """A server on `path` whose store's room the test sets (FullForReplaces), its floor
    kept, with a partner it sends availability replaces to."""
    partner = Partner("p", None, None, notify_url="http://127.0.0.1:9/")
    settings = Settings(partners={"p": partner})
    store = FullForReplaces(tmp_path / "full.db")
    r = load_restaurant(path)
    note_floor(store, MID, r.floor, clock[0].timestamp())
    return store, settings, Receiver([r], store, settings, lambda: clock[0], Notifier.of(settings))


class FullForReplaces(FullDiskStore):
    """A disk too full for the write of partners' replaces (an outbox message: one per day
    and partner, the reload's largest write) once `full_for_replaces` is set, whatever the
    writes before it; a small write after it (an undone reload's floor record, with the
    record of the floor it follows) still fits."""

    full_for_replaces = False

    def _write(self, conn: sqlite3.Connection, job: _Job) -> None:
        if not (self.full_for_replaces and job.outbox):
            super()._write(conn, job)
            return
        self.room = 0
        try:
            super()._write(conn, job)
        finally:
            self.room = None


def reload_undone(path: Path, store: FullForReplaces, receiver: Receiver) -> None:
    """Reload `path`: the store takes the new floor (with its fence entry) but refuses the
    partners' replaces, so the reload is undone whole."""
    store.full_for_replaces = True
    with pytest.raises(StoreUnwritable):
        Reloader([path], receiver).reload()
    store.full_for_replaces = False


def t5_removed_undone_with_w_waiting(
    tmp_path: Path,
) -> tuple[Path, list[datetime], FullForReplaces, Settings, Receiver]:
    """A and B seated, W (1) waiting at 12:00; at 12:05 a reload of the file without T5
    is undone whole (`reload_undone`). The file, the clock, the store, settings, server."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    store, settings, receiver = on_a_disk_to_fill(tmp_path, path, clock)
    for party, size in (("A", 2), ("B", 2), ("W", 1)):
        assert receiver.host_operation(MID, "walk_in", party, size).code is None
    clock[0] = at(12, 5)
    remove_t5(path)
    reload_undone(path, store, receiver)
    return path, clock, store, settings, receiver


def two_servers(
    db: str, path: Path, clock: list[datetime]
) -> tuple[LogStore, LogStore, Receiver, Receiver]:
    """Two servers started on the same file and store (each keeps the floor it starts on,
    as `serve` does); A and B seated at T2 and T4, W (1) waits: too few for a free 4-top
    by the rules, which the host may overrule."""
    first, second = open_store(db), open_store(db)
    r = load_restaurant(path)
    note_floor(first, MID, r.floor, clock[0].timestamp())
    a = Receiver([r], first, Settings(), lambda: clock[0])
    b = Receiver([load_restaurant(path)], second, Settings(), lambda: clock[0])
    for party, size in (("A", 2), ("B", 2), ("W", 1)):
        assert a.host_operation(MID, "walk_in", party, size).code is None
    assert waiting(a) == waiting(b) == ["W"]
    return first, second, a, b


def all_but_t5_taken(receiver: Receiver) -> None:
    """Walk-ins A, B (2), W (1), X, Y (4) and Z (6): every table but T5 is taken (Y moved
    from T5 to T6), and W waits, kept from T5 (4 seats) by roominess until 12:30."""
    for party, size in (("A", 2), ("B", 2), ("W", 1)):
        assert receiver.host_operation(MID, "walk_in", party, size).code is None
    the_rest_but_t5_taken(receiver)


def the_rest_but_t5_taken(receiver: Receiver) -> None:
    """After A, B and W (two_servers): walk-ins X, Y (4) and Z (6) at `receiver`, Y moved
    from T5 to T6, so that every table but T5 is taken and W waits, kept from T5 (4 seats)
    by roominess until 12:30."""
    for party, size in (("X", 4), ("Y", 4), ("Z", 6)):
        assert receiver.host_operation(MID, "walk_in", party, size).code is None
    assert receiver.host_hand(MID, "move", "Y", "T6").code is None  # from T5


def reload_after(
    monkeypatch: pytest.MonkeyPatch, method: str, b: Receiver, a: Receiver, path: Path
) -> None:
    """Server A reloads `path` once, the moment server B's day book has done
    `DayBook.<method>` on its next write."""
    original = getattr(DayBook, method)

    def meanwhile(book: DayBook, *args: Any, **kw: Any) -> Any:
        found = original(book, *args, **kw)
        if book is b.books[MID]:
            monkeypatch.setattr(DayBook, method, original)
            assert Reloader([path], a).reload().applied
        return found

    monkeypatch.setattr(DayBook, method, meanwhile)


def units(receiver: Receiver, day: date = date(2026, 12, 5)) -> dict[str, tuple[str, Any]]:
    """Each booked reservation of `day` (Saturday) by name: its unit and its attention."""
    rows = receiver.host_reservations(MID, day).body["reservations"]
    return {r["name"]: (r["unit"], r["attention"]) for r in rows if r["status"] == "booked"}


def book_bo_while_the_reload_rehomes(monkeypatch: pytest.MonkeyPatch, b: Receiver) -> list[Any]:
    """Server B books Bo (4) for Saturday 19:00 once, when the next reload has made its
    checks and is about to re-home (config_reload._rehome); the list gets B's answer."""
    rehome = config_reload._rehome
    said: list[Any] = []

    def meanwhile(*args: Any, **kwargs: Any) -> Any:  # after the checks, before the switch
        monkeypatch.setattr(config_reload, "_rehome", rehome)
        said.append(b.host_book(MID, 4, "2026-12-05T19:00", "Bo", ""))
        return rehome(*args, **kwargs)

    monkeypatch.setattr(config_reload, "_rehome", meanwhile)
    return said


def test_a_server_on_the_old_file_is_refused_a_seat_at_a_table_a_reload_removed(
    any_db: str, tmp_path: Path
) -> None:
    """Server A reloads a file without T5; server B, not reloaded yet, is asked to seat W
    at T5: 409 `table removed`, naming T5 and what to do, and nothing written (both boards
    show W waiting, as the replay after any restart would). Reloaded, B seats W elsewhere."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    first, second, a, b = two_servers(any_db, path, clock)
    try:
        clock[0] = at(12, 5)
        remove_t5(path)
        assert Reloader([path], a).reload().applied
        clock[0] = at(12, 6)
        reply = b.host_hand(MID, "seat", "W", "T5")
        assert (status_of(reply), reply.code) == (409, "table removed"), reply.body
        message = reply.body["error"]["message"]
        assert message.startswith("table T5 is no longer on the floor plan"), message
        assert "reload this server" in message
        assert waiting(a) == waiting(b) == ["W"]
        assert sitting(a) == sitting(b) == {"A": ("T2",), "B": ("T4",)}

        assert Reloader([path], b).reload().applied
        assert b.host_hand(MID, "seat", "W", "T6").code is None
        assert sitting(a) == sitting(b) == {"A": ("T2",), "B": ("T4",), "W": ("T6",)}
    finally:
        first.close()
        second.close()


def test_a_party_seated_at_a_removed_table_while_the_reload_runs_refuses_the_reload(
    any_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Server B (still on the old file) seats W at T5 after server A's reload checked that
    nobody sits there and before it switches: the reload is refused naming W at T5, as it
    would have been a moment later; A keeps T5 on its floor and its board shows W there;
    the floor in force is still the old one, so B may go on using T5. Once W has left,
    the same reload applies."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    first, second, a, b = two_servers(any_db, path, clock)
    try:
        clock[0] = at(12, 5)
        remove_t5(path)
        rehome = config_reload._rehome
        said: list[Any] = []

        def meanwhile(*args: Any, **kwargs: Any) -> Any:  # after the checks, before the switch
            monkeypatch.setattr(config_reload, "_rehome", rehome)
            said.append(b.host_hand(MID, "seat", "W", "T5"))
            return rehome(*args, **kwargs)

        monkeypatch.setattr(config_reload, "_rehome", meanwhile)
        outcome = Reloader([path], a).reload()
        assert said[0].code is None, said[0].body
        assert [p.split(": ", 2)[2].split(";")[0] for p in outcome.problems] == [
            "T5 is removed but W (1 guest) sits at it now"
        ]
        assert a.books[MID].restaurant.floor.table("T5") is not None
        assert sitting(a) == sitting(b) == {"A": ("T2",), "B": ("T4",), "W": ("T5",)}
        assert "T5" in kept_floor(first, MID)[1]
        assert b.host_hand(MID, "move", "W", "T6").code is None
        assert b.host_hand(MID, "move", "W", "T5").code is None

        clock[0] = at(12, 30)
        assert b.host_operation(MID, "free", "T5").code is None
        outcome = Reloader([path], a).reload()
        assert outcome.applied, outcome.problems
        assert "T5" not in kept_floor(first, MID)[1]
        assert sitting(a) == {"A": ("T2",), "B": ("T4",)}
    finally:
        first.close()
        second.close()


def test_a_reload_removing_a_table_undone_whole_leaves_the_table_usable(tmp_path: Path) -> None:
    """The store takes the reload's new floor (with its fence entry) but refuses the
    partners' replaces: the reload is undone whole, the old floor kept in force again, so
    the host may still seat W at T5 (not refused as a removed table)."""
    _path, _clock, store, _settings, receiver = t5_removed_undone_with_w_waiting(tmp_path)
    try:
        assert receiver.books[MID].restaurant.floor.table("T5") is not None
        assert "T5" in kept_floor(store, MID)[1]
        assert receiver.host_hand(MID, "seat", "W", "T5").code is None
        assert sitting(receiver)["W"] == ("T5",)
    finally:
        store.close()


def test_a_server_on_the_old_file_books_on_a_table_still_in_force_not_the_removed_one(
    any_db: str, tmp_path: Path
) -> None:
    """Ann (4) holds T1 and Cy (2) a 2-top at 19:00. Server A reloads a file without T5;
    server B, not reloaded yet, is asked for a party of 4 at 19:00 by a partner
    (CreateBooking), then for Cy's change to 4 guests: each time its rules choose T5, which
    the floor in force lacks. Each is booked on a table still in force (T6, then the 6-top
    T3: never refused while one fits), both servers and a fresh replay list them there, and
    the host's next party of 4 is refused as no table for 4, not as a removed table."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    first, second, a, b = two_servers(any_db, path, clock)

    def units(receiver: Receiver) -> dict[str, str]:
        rows = receiver.host_reservations(MID, FRIDAY).body["reservations"]
        return {r["reservation_id"]: r["unit"] for r in rows if r["status"] == "booked"}

    try:
        cy = b.host_book(MID, 2, "2026-12-04T19:00", "Cy", "").body["reservation_id"]
        ann = b.host_book(MID, 4, "2026-12-04T19:00", "Ann", "").body["reservation_id"]
        assert units(b)[ann] == "T1"
        clock[0] = at(12, 5)
        remove_t5(path)
        assert Reloader([path], a).reload().applied
        clock[0] = at(12, 6)
        api = PartnerApi(b.books, b.store, b.clock)
        slot = {"merchant_id": MID, "service_id": "1000",
                "start_sec": int(at(19).timestamp()), "duration_sec": 4200,
                "resources": {"party_size": 4}}  # fmt: skip
        created = api.create_booking(
            Partner("p", None, None), {"slot": slot, "user_information": {"user_id": "u1"}}
        )
        assert created.body.get("booking", {}).get("status") == "CONFIRMED", created.body
        online = created.body["booking"]["booking_id"]
        changed = b.host_change(MID, cy, 4, None)
        assert changed.code is None, changed.body
        assert units(b) == {ann: "T1", online: "T6", cy: "T3"}, units(b)
        assert units(a) == units(b)
        refused = b.host_book(MID, 4, "2026-12-04T19:00", "Di", "")
        assert refused.code == "slot unavailable", refused.body
        assert "no table for 4" in refused.body["error"]["message"], refused.body
        again = Receiver([load_restaurant(path)], open_store(any_db), Settings(), lambda: clock[0])
        assert units(again) == units(b)  # the replay keeps each where it was told
    finally:
        first.close()
        second.close()


def test_a_server_on_the_old_file_seats_only_at_tables_in_force_and_takes_unrelated_writes(
    any_db: str, tmp_path: Path
) -> None:
    """X, Y and Z fill T1, T6 and T3; W and a partner's waiting entry (parties of 1) wait
    with T5 free (too few for a 4-top until they have waited 30 minutes). Server A reloads
    a file without T5. Half an hour on, server B (not reloaded) takes a walk-in to the
    waitlist, and a partner's booking, cancellation, waitlist entry and its deletion: its
    seating pass, which any write of the day runs first, would have seated W at T5, and
    every one of them was refused (409 table removed, a partner asked to retry). The pass
    on B now seats only at tables in force: each is done, W still waits (what needed T5
    waits), and A, B and a fresh replay on the floor in force agree."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    first, second, a, b = two_servers(any_db, path, clock)
    partner = Partner("p", None, None)
    api_a = PartnerApi(a.books, a.store, a.clock)
    api_b = PartnerApi(b.books, b.store, b.clock)
    slot = {"merchant_id": MID, "service_id": "1000",
            "start_sec": int(at(19).timestamp()), "duration_sec": 2700,
            "resources": {"party_size": 2}}  # fmt: skip

    def book(api: PartnerApi, user: str) -> Any:
        return api.create_booking(
            partner, {"slot": slot, "user_information": {"user_id": user}}
        )  # fmt: skip

    def join(api: PartnerApi, user: str) -> Any:
        asked = {"merchant_id": MID, "party_size": 1, "user_information": {"user_id": user}}
        return api.create_waitlist_entry(partner, asked)

    try:
        the_rest_but_t5_taken(b)
        booking = book(api_a, "u1").body["booking"]["booking_id"]
        entry = join(api_a, "u2").body["waitlist_entry_id"]
        assert waiting(b) == ["W", entry]
        clock[0] = at(12, 5)
        remove_t5(path)
        assert Reloader([path], a).reload().applied
        clock[0] = at(12, 31)
        walked = b.host_operation(MID, "walk_in", "V", 2)
        assert walked.code is None, walked.body
        assert waiting(b) == ["W", entry, "V"]
        created = book(api_b, "u3")
        assert created.body["booking"]["status"] == "CONFIRMED", created.body
        cancelled = api_b.update_booking(
            partner, {"booking": {"booking_id": booking, "status": "CANCELED"}}
        )
        assert cancelled.body["booking"]["status"] == "CANCELED", cancelled.body
        joined = join(api_b, "u4").body["waitlist_entry_id"]
        assert api_b.delete_waitlist_entry(partner, {"waitlist_entry_id": entry}).body == {}
        assert waiting(a) == waiting(b) == ["W", "V", joined]
        assert sitting(a) == sitting(b)
        assert "T5" not in b.books[MID].stand(FRIDAY).occupant
        asked = {"booking_id": booking}
        assert api_a.booking_status(partner, asked).body["booking_status"] == "CANCELED"
        again = Receiver([load_restaurant(path)], open_store(any_db), Settings(), lambda: clock[0])
        assert waiting(again) == waiting(b) and sitting(again) == sitting(b)
    finally:
        first.close()
        second.close()


def test_a_partners_event_on_a_server_on_the_old_file_while_a_reload_runs_is_done(
    any_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Server B (not reloaded) works out a partner's webhook event (cancel its 19:00
    booking) while server A's reload removes T5: B read the floor in force before the
    reload, and its seating pass seated W (waiting half an hour) at T5, which the check
    before its write finds removed. The event names no table: B works it out again on the
    floor in force and cancels the booking, W waiting (it was answered 503, send it again,
    for a table the partner never named); sent again, the event gets the same answer."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    secret = "s" * 32
    partner = Partner("p", secret, None)
    settings = Settings(partners={"p": partner})
    first, second = open_store(any_db), open_store(any_db)
    note_floor(first, MID, load_restaurant(path).floor, clock[0].timestamp())
    a = Receiver([load_restaurant(path)], first, settings, lambda: clock[0])
    b = Receiver([load_restaurant(path)], second, settings, lambda: clock[0])

    def send(receiver: Receiver, event: dict[str, Any]) -> Any:
        body = json.dumps(event).encode()
        return receiver.webhook("p", sign(secret, int(clock[0].timestamp()), body), body)

    try:
        all_but_t5_taken(b)
        asked = {"party_size": 2, "start": "2026-12-04T19:00:00+00:00", "name": "Ada"}
        made = send(a, {"id": "e1", "type": "reservation.requested", "merchant_id": MID,
                        "data": asked})  # fmt: skip
        booking = made.body["reservation_id"]
        clock[0] = at(12, 31)
        remove_t5(path)
        reload_after(monkeypatch, "_on_floor_in_force", b, a, path)  # B read the floor
        cancel = {"id": "e2", "type": "reservation.cancelled", "merchant_id": MID,
                  "data": {"reservation_id": booking}}  # fmt: skip
        done = send(b, cancel)
        assert done.code is None, done.body
        assert "T5" not in kept_floor(first, MID)[1]  # the reload applied meanwhile
        assert waiting(b) == ["W"]

        clock[0] = at(12, 32)
        again = send(b, cancel)
        assert (again.code, again.body) == (None, done.body)
        rows = a.host_reservations(MID, FRIDAY).body["reservations"]
        assert [r["status"] for r in rows if r["reservation_id"] == booking] == ["cancelled"]
        assert waiting(a) == waiting(b) == ["W"]
    finally:
        first.close()
        second.close()


def test_a_table_back_after_a_reload_undone_is_removed_as_of_the_next_start_not_the_undone_reload(
    tmp_path: Path,
) -> None:
    """A reload removing T5 is undone whole (the store refused the partners' replaces), so
    the host seats W at T5 at 12:06, and frees it at 12:40. At 13:00 the server starts on
    the file without T5: T5 is retired as of that start. Its record from the undone
    reload (12:05) is not the one in force: the day's replay lost T5 from 12:05 on and
    read W's seat and its freeing otherwise (W shown sitting at T5 after 12:40, where
    the host saw W seated at 12:06 and gone)."""
    path, clock, store, settings, receiver = t5_removed_undone_with_w_waiting(tmp_path)
    try:
        clock[0] = at(12, 6)
        assert receiver.host_hand(MID, "seat", "W", "T5").code is None
        clock[0] = at(12, 40)
        assert receiver.host_operation(MID, "free", "T5").code is None
        clock[0] = at(13)
        refuse_moved_openings(store, [(str(path), load_restaurant(path))], clock[0], start=True)
        again = Receiver([load_restaurant(path)], store, settings, lambda: clock[0])
        w = again.books[MID].stand(FRIDAY).parties["W"]
        assert (w.state, w.tables, w.seated_at, w.ended_at) == ("gone", ("T5",), 6, 40)
        assert waiting(again) == []
        assert again.host_operation(MID, "walk_in", "V", 2).code is None
        assert "W" not in again.books[MID].stand(FRIDAY).occupant.values()
    finally:
        store.close()


def test_a_reload_removing_a_table_before_the_day_opens_leaves_its_opening_free_to_move(
    any_db: str, tmp_path: Path
) -> None:
    """At 09:00, before Friday's lunch and with nothing on its log, a reload removes T5;
    at 09:05 another moves Friday's opening to 11:30. Nobody can be seated at T5 before
    the service opens, so the first reload writes nothing on the day (no fence entry):
    the second applies, where it was refused as if the day had bookings or walk-ins, and
    so was a start on that file."""
    path = marlowes(tmp_path)
    clock = [at(9)]
    store = open_store(any_db)
    try:
        r = load_restaurant(path)
        note_floor(store, MID, r.floor, clock[0].timestamp())
        receiver = Receiver([r], store, Settings(), lambda: clock[0])
        remove_t5(path)
        assert Reloader([path], receiver).reload().applied
        assert "T5" not in kept_floor(store, MID)[1]
        clock[0] = at(9, 5)
        lunch = 'friday = [\n  { open = "12:00"'
        text = path.read_text(encoding="utf-8")
        assert lunch in text
        path.write_text(text.replace(lunch, lunch.replace("12:00", "11:30")), encoding="utf-8")
        outcome = Reloader([path], receiver).reload()
        assert outcome.applied, outcome.problems
        refuse_moved_openings(store, [(str(path), load_restaurant(path))], clock[0], start=True)
        clock[0] = at(11, 30)
        assert receiver.host_operation(MID, "walk_in", "W", 4).code is None
    finally:
        store.close()


def test_a_server_on_the_old_file_queues_a_walk_in_only_a_removed_combination_would_seat(
    any_db: str, tmp_path: Path
) -> None:
    """Server A reloads a file without the combination T5+T6 (both tables kept); Z (6)
    sits at T3. Server B, not reloaded yet, takes a walk-in of 7: its seating pass put
    them at T5+T6, which the floor in force lacks (every replay then shows them waiting,
    the host having been told they sit there), and then refused the walk-in (409 table
    removed). B's pass now joins only tables the floor in force joins: V is queued, as A
    and a fresh replay have it."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    first, second, a, b = two_servers(any_db, path, clock)
    try:
        assert b.host_operation(MID, "walk_in", "Z", 6).code is None
        assert sitting(b)["Z"] == ("T3",)
        clock[0] = at(12, 5)
        path.write_text(path.read_text(encoding="utf-8").replace(T5_T6, ""), encoding="utf-8")
        assert Reloader([path], a).reload().applied
        clock[0] = at(12, 6)
        reply = b.host_operation(MID, "walk_in", "V", 7)
        assert reply.code is None, reply.body
        assert waiting(a) == waiting(b) == ["W", "V"]
        assert sitting(a) == sitting(b)
        again = Receiver([load_restaurant(path)], open_store(any_db), Settings(), lambda: clock[0])
        assert waiting(again) == ["W", "V"]
    finally:
        first.close()
        second.close()


def test_a_reload_adding_a_table_undone_whole_leaves_the_table_out_of_every_replay(
    tmp_path: Path,
) -> None:
    """X (4) sits at T1. A reload adding T9 (a 4-top, first in the file) and removing T5
    is undone whole (the store refused the partners' replaces): T9 never served, so it is
    in no day's replay; the old floor kept again had retired it as of the undo, and the
    replay of the day, on this server and any other, seated X at T9 (first in order), a
    table the running floor never had, with T1 shown free."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    store, settings, receiver = on_a_disk_to_fill(tmp_path, path, clock)
    try:
        assert receiver.host_operation(MID, "walk_in", "X", 4).code is None
        assert sitting(receiver) == {"X": ("T1",)}
        clock[0] = at(12, 5)
        text = path.read_text(encoding="utf-8")
        first_table = text.index("[[tables]]")
        t9 = '[[tables]]\nid = "T9"\nx = 3\ny = 3\nseats = 4\n\n'
        path.write_text(text[:first_table] + t9 + text[first_table:], encoding="utf-8")
        remove_t5(path)
        reload_undone(path, store, receiver)
        assert "T9" not in {x.unit for x in receiver.books[MID].retirements()}
        assert sitting(receiver) == {"X": ("T1",)}
        again = Receiver([load_restaurant(MARLOWES)], store, settings, lambda: clock[0])
        assert sitting(again) == {"X": ("T1",)}
    finally:
        store.close()


def test_a_booking_taken_on_a_removed_table_for_a_day_ahead_while_the_reload_runs_is_booked_again(
    any_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ann (4) holds T1 on Saturday at 19:00. While server A's reload removing T5 runs (its
    days read, its new floor not yet kept), server B, still on the old file, books Bo (4)
    there: its rules choose T5. The reload books Bo again on a table the new floor keeps
    (T6, in its `rehomed`), as it does the bookings it found first: Bo was left on T5 and
    listed for attention on A alone ('table T5 removed'), B's file still having T5, until
    B's own reload moved it. A, B and a fresh replay agree, nothing for attention."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    first, second, a, b = two_servers(any_db, path, clock)
    try:
        ann = b.host_book(MID, 4, "2026-12-05T19:00", "Ann", "")
        assert ann.body["unit"] == "T1", ann.body
        clock[0] = at(12, 5)
        remove_t5(path)
        said = book_bo_while_the_reload_rehomes(monkeypatch, b)
        outcome = Reloader([path], a).reload()
        assert outcome.applied, outcome.problems
        assert said[0].body["unit"] == "T5", said[0].body
        bo = said[0].body["reservation_id"]
        assert [(r["reservation_id"], r["from"], r["to"]) for r in outcome.rehomed] == [
            (bo, "T5", "T6")
        ]
        assert outcome.attention == ()
        assert units(a) == units(b) == {"Ann": ("T1", None), "Bo": ("T6", None)}, units(a)
        assert a.attention_now(MID) == b.attention_now(MID) == []
        again = Receiver([load_restaurant(path)], open_store(any_db), Settings(), lambda: clock[0])
        assert units(again) == units(a)
    finally:
        first.close()
        second.close()


LATE_FRIDAY = (
    '\n[[special_days]]\ndate = "2026-12-04"\n'
    'services = [{ open = "17:30", close = "01:00", last_seating = "23:30" }]\n'
)


@pytest.mark.parametrize("late", [True, False], ids=["dinner-to-1am", "closed-at-23"])
def test_a_reload_after_midnight_checks_the_service_still_running_not_a_closed_one(
    any_db: str, tmp_path: Path, late: bool
) -> None:
    """Y (4) sits at T5 from 22:30 on Friday. With Friday's dinner running to 01:00, a
    reload removing T5 at 00:30 is refused naming Y: Friday is the day being served. With
    Friday closed at 23:00, the reload at 00:30 applies (Saturday is the day being served):
    Y, never freed, can no longer be freed or moved, and Friday's replay keeps T5 for Y on
    this server and on any other."""
    path = marlowes(tmp_path)
    if late:
        path.write_text(path.read_text(encoding="utf-8") + LATE_FRIDAY, encoding="utf-8")
    clock = [at(22, 30)]
    store = open_store(any_db)
    try:
        r = load_restaurant(path)
        note_floor(store, MID, r.floor, clock[0].timestamp())
        receiver = Receiver([r], store, Settings(), lambda: clock[0])
        for party, size in (("X", 4), ("Y", 4), ("Z", 6), ("V", 4)):
            assert receiver.host_operation(MID, "walk_in", party, size).code is None
        assert sitting(receiver)["Y"] == ("T5",)
        clock[0] = datetime(2026, 12, 5, 0, 30, tzinfo=UTC)
        remove_t5(path)
        outcome = Reloader([path], receiver).reload()
        if late:
            assert [p.split(": ", 2)[2].split(";")[0] for p in outcome.problems] == [
                "T5 is removed but Y (4 guests) sits at it now"
            ]
            return
        assert outcome.applied, outcome.problems
        again = Receiver([load_restaurant(path)], open_store(any_db), Settings(), lambda: clock[0])
        assert sitting(receiver)["Y"] == sitting(again)["Y"] == ("T5",)
    finally:
        store.close()


def test_a_booking_taken_on_a_removed_table_meanwhile_with_no_other_table_refuses_the_reload(
    any_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saturday at 19:00 T1, T6 and T3 are booked for parties of 4, T5 is free. While
    server A's reload removing T5 runs, server B (old file) books Bo (4) at T5, the only
    table left. Nothing else can take Bo: the reload is refused naming Bo (as it would
    have been had Bo booked a moment earlier), the old floor stays in force, and both
    servers list Bo on T5, nothing for attention."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    first, second, a, b = two_servers(any_db, path, clock)
    try:
        booked = {n: b.host_book(MID, 4, "2026-12-05T19:00", n, "").body for n in "PQRS"}
        on_t5 = [body["reservation_id"] for body in booked.values() if body["unit"] == "T5"]
        assert len(on_t5) == 1, booked
        assert b.host_operation(MID, "cancel", on_t5[0]).code is None
        clock[0] = at(12, 5)
        remove_t5(path)
        said = book_bo_while_the_reload_rehomes(monkeypatch, b)
        outcome = Reloader([path], a).reload()
        assert said[0].body["unit"] == "T5", said[0].body
        assert [p.split(": ", 2)[2].split(",")[0] for p in outcome.problems] == [
            f"T5 is removed but booking {said[0].body['reservation_id']} (Bo"
        ], outcome.problems
        assert "T5" in kept_floor(first, MID)[1]
        assert a.books[MID].restaurant.floor.table("T5") is not None
        assert units(a) == units(b)
        assert units(a)["Bo"] == ("T5", None)
        assert a.attention_now(MID) == b.attention_now(MID) == []
        assert "T5" in a.books[MID].stand(date(2026, 12, 5)).floor.table_rank
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize(
    "hook",
    [
        pytest.param("_outbox", id="after-its-checks"),
        pytest.param("_on_floor_in_force", id="after-its-floor-read"),
    ],
)
def test_a_walk_in_a_reload_overtakes_is_added_and_replayed_on_the_floor_in_force(
    any_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook: str
) -> None:
    """Server B (not reloaded) adds walk-in V at 12:31 while server A's reload removes T5,
    landing either after B's checks and before its append (the fence entry makes the
    append lose), or between B's read of the floor in force and its seating pass (which
    then seats W, waiting half an hour, at T5). V names no table: B works it out again on
    the floor in force and adds V, W waiting, and every replay says the same.
    - After its checks: B's entry, stamped with the request's clock (not after the
      reload's instant), was replayed on the floor before the reload, whose pass seated W
      at T5: server A, and any server started afresh, showed W sitting at a removed table
      while B's host was told W waits.
    - After its floor read: the walk-in was refused 409 `table removed` (reload this
      server, then choose another table) for a table the host never named, where a moment
      later the same walk-in on B is added."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    first, second = open_store(any_db), open_store(any_db)
    note_floor(first, MID, load_restaurant(path).floor, clock[0].timestamp())
    a = Receiver([load_restaurant(path)], first, Settings(), lambda: clock[0])
    b = Receiver([load_restaurant(path)], second, Settings(), lambda: clock[0])
    try:
        all_but_t5_taken(b)
        clock[0] = at(12, 31)
        remove_t5(path)
        reload_after(monkeypatch, hook, b, a, path)
        added = b.host_operation(MID, "walk_in", "V", 2)
        assert added.code is None, added.body
        assert "T5" not in kept_floor(first, MID)[1]  # the reload applied meanwhile
        assert waiting(b) == ["W", "V"]
        assert waiting(a) == waiting(b) and sitting(a) == sitting(b)
        again = Receiver([load_restaurant(path)], open_store(any_db), Settings(), lambda: clock[0])
        assert waiting(again) == waiting(b) and sitting(again) == sitting(b)
    finally:
        first.close()
        second.close()


def test_a_server_on_the_old_file_reads_its_days_on_the_floor_in_force(
    any_db: str, tmp_path: Path
) -> None:
    """W (1) waits with every table but T5 taken, kept from the 4-top by roominess until
    12:30; server B has read the day. Server A reloads a file without T5, and at 12:31
    takes a walk-in, V. B, not reloaded (its file still has T5), replayed V's entry on its
    file's floor, whose pass seated W at T5: its board, the tablet's floor and the
    partner's view of the day showed W seated at a table no longer on the floor plan,
    where A and any replay on the floor in force have W waiting. B reads the day on the
    floor in force, as it writes it: W waits, T5 is on none of its reads."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    first, second, a, b = two_servers(any_db, path, clock)
    try:
        the_rest_but_t5_taken(b)
        assert waiting(b) == ["W"]
        clock[0] = at(12, 5)
        remove_t5(path)
        assert Reloader([path], a).reload().applied
        clock[0] = at(12, 31)
        assert a.host_operation(MID, "walk_in", "V", 2).code is None
        assert waiting(a) == ["W", "V"]

        assert waiting(b) == ["W", "V"]
        assert sitting(b) == sitting(a)
        said = b.host_operation(MID, "board").body["result"]
        assert said == a.host_operation(MID, "board").body["result"], said
        assert said["waiting"] == ["W", "V"] and "T5" not in said["tables"], said
        doc = FloorViews(b.books[MID]).floor(FRIDAY, clock[0])
        assert [p["party_id"] for p in doc["queue"]] == ["W", "V"]
        assert not any(t.get("occupant") for t in doc["tables"] if t["id"] == "T5"), doc
        again = Receiver([load_restaurant(path)], open_store(any_db), Settings(), lambda: clock[0])
        assert waiting(again) == waiting(b) and sitting(again) == sitting(b)
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize(
    "t3", [pytest.param(None, id="same-file"), pytest.param(5, id="t3-changed-too")]
)
def test_a_reload_undone_on_a_server_another_reload_already_switched_keeps_the_floor_in_force(
    tmp_path: Path, t3: int | None
) -> None:
    """Servers A and B run Marlowe's file on one store; at 12:05 A reloads the file without
    T5. At 12:06 B is reloaded on that file (or on one that also asks 5 guests at least of
    T3), and the store refuses the partners' replaces: B's reload is undone whole, B keeps
    running its old file. The floor in force is A's again, without T5, and B is still
    refused a seat at T5. B's undo kept its running floor (with T5) in force again,
    though that was not the floor in force before B's reload (the same file's kept none
    at all): T5 was back for every server without --restore-floor, A told it was out of
    date, and B seated W at T5, which A's floor does not have."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    partner = Partner("p", None, None, notify_url="http://127.0.0.1:9/")
    settings = Settings(partners={"p": partner})
    store = FullForReplaces(tmp_path / "full.db")
    note_floor(store, MID, load_restaurant(path).floor, clock[0].timestamp())
    b = Receiver([load_restaurant(path)], store, settings, lambda: clock[0], Notifier.of(settings))
    other = open_store(str(tmp_path / "full.db"))
    try:
        a = Receiver([load_restaurant(path)], other, Settings(), lambda: clock[0])
        for party, size in (("A", 2), ("B", 2), ("W", 1)):
            assert a.host_operation(MID, "walk_in", party, size).code is None
        clock[0] = at(12, 5)
        remove_t5(path)
        assert Reloader([path], a).reload().applied
        in_force = floor_history(store, MID)
        newer = path
        if t3 is not None:
            newer = tmp_path / "newer.toml"
            seats = 'id = "T3"\nx = 1\ny = 0\nseats = 6\n'
            newer.write_text(path.read_text().replace(seats, f"{seats}min_party = {t3}\n"))
        clock[0] = at(12, 6)
        store.full_for_replaces = True
        with pytest.raises(StoreUnwritable):
            Reloader([newer], b).reload()
        store.full_for_replaces = False
        assert b.books[MID].restaurant.floor.table("T5") is not None  # B runs its old file
        assert "T5" not in kept_floor(store, MID)[1]
        assert floor_history(store, MID)[-1].fingerprint == in_force[-1].fingerprint
        if t3 is None:
            assert floor_history(store, MID) == in_force
        reply = b.host_hand(MID, "seat", "W", "T5")
        assert (status_of(reply), reply.code) == (409, "table removed"), reply.body
        assert waiting(a) == waiting(b) == ["W"]
    finally:
        other.close()
        store.close()


def test_a_second_servers_reload_leaves_a_table_removed_as_of_the_first_reload(
    any_db: str, tmp_path: Path
) -> None:
    """W (1) waits with every table but T5 taken, kept from the 4-top by roominess until
    12:30. Server A reloads a file without T5 at 12:05; at 12:31 A takes a walk-in, V, and
    W still waits (T5 is gone). At 12:40 server B is reloaded on the same file: T5 stays
    removed as of 12:05, when it left the floor in force. B's reload retired T5 again as
    of 12:40: every replay from then on (B's own, a restarted server's) kept T5 until
    12:40 and seated W there at 12:31, where A and the host saw W waiting."""
    path = marlowes(tmp_path)
    clock = [at(12)]
    first, second, a, b = two_servers(any_db, path, clock)
    try:
        the_rest_but_t5_taken(b)
        clock[0] = at(12, 5)
        remove_t5(path)
        assert Reloader([path], a).reload().applied
        clock[0] = at(12, 31)
        assert a.host_operation(MID, "walk_in", "V", 2).code is None
        assert waiting(a) == waiting(b) == ["W", "V"]
        clock[0] = at(12, 40)
        assert Reloader([path], b).reload().applied
        assert waiting(b) == waiting(a) == ["W", "V"]
        assert sitting(b) == sitting(a)
        again = Receiver([load_restaurant(path)], open_store(any_db), Settings(), lambda: clock[0])
        assert waiting(again) == ["W", "V"] and sitting(again) == sitting(a)
        clock[0] = at(12, 41)
        assert b.host_operation(MID, "walk_in", "U", 2).code is None
        assert waiting(a) == waiting(b) == ["W", "V", "U"]
    finally:
        first.close()
        second.close()
