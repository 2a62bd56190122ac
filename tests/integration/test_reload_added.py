"""A table a reload (or a start) adds is in the replay of a day from the instant it took
force only (feed.service.days.DayBook.additions), as one a reload removes is there up to its
removal (floors.Retired): the replay of the parties seated before it, on any server and after
any restart, reads as they were seated, never moved to the new table."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from feed.cli import refuse_moved_openings
from feed.service.config_reload import Reloader
from feed.service.receiver import Receiver
from feed.settings import Settings
from feed.venue.restaurant import load_restaurant
from store import open_store

MARLOWES = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"
MID = "marlowes-kitchen"
FRIDAY = date(2026, 12, 4)
SATURDAY = date(2026, 12, 5)
T7 = '[[tables]]\nid = "T7"\nx = 3\ny = 3\nseats = 4\n\n'
BEFORE = {"A": ("T2",), "B": ("T4",), "X": ("T1",), "Y": ("T5",), "Z": ("T3",), "U": ("T6",)}


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 12, day, hour, minute, tzinfo=UTC)  # London is UTC in December


def sitting(receiver: Receiver, day: date = FRIDAY) -> dict[str, tuple[str, ...]]:
    return {s.party_id: s.tables for s in receiver.books[MID].stand(day).sittings()}


def waiting(receiver: Receiver) -> list[str]:
    return list(receiver.books[MID].stand(FRIDAY).waiting)


def add_t7_before_t5(path: Path) -> None:
    """T7, a 4-top, listed before T5: it comes first among the 4-tops the seating pass
    reaches after T1."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('[[tables]]\nid = "T5"', T7 + '[[tables]]\nid = "T5"'), "utf-8")


def add_t7_last(path: Path) -> None:
    """T7, a 4-top, listed after every other table."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("\n[[combos]]", "\n" + T7 + "[[combos]]", 1), "utf-8")


def a_full_floor_and_w_waiting(receiver: Receiver) -> None:
    """Friday 12:00: every table taken (Y at T5, U at T6), W (4) waiting."""
    for party, size in (("A", 2), ("B", 2), ("X", 4), ("Y", 4), ("Z", 6), ("U", 4), ("W", 4)):
        assert receiver.host_operation(MID, "walk_in", party, size).code is None
    assert sitting(receiver) == BEFORE
    assert waiting(receiver) == ["W"]


@pytest.mark.parametrize("add", [add_t7_before_t5, add_t7_last])
def test_a_table_a_reload_adds_leaves_where_earlier_parties_sat(
    any_db: str, tmp_path: Path, add: Callable[[Path], None]
) -> None:
    """Two servers on one store. At 12:00 every table is taken and W waits; at 12:05 one
    server reloads a file adding T7 (before T5, or last). Every replay (that server's, a
    restarted one's, the other server's) keeps Y at T5, U at T6 and W waiting until 12:05:
    T7 was not there. Replayed with T7 from the opening, Y read seated at T7 and U at T5
    (T7 before T5), or W seated at T7 since 12:00 (T7 last), T5 free while W sat there,
    where the other server showed W waiting. The next write after the reload seats W at
    T7, on every replay alike."""
    path = tmp_path / "marlowes.toml"
    path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    clock = [at(4, 12)]
    store, other = open_store(any_db), open_store(any_db)
    try:
        refuse_moved_openings(store, [(str(path), load_restaurant(path))], clock[0], start=True)
        a = Receiver([load_restaurant(path)], store, Settings(), lambda: clock[0])
        b = Receiver([load_restaurant(path)], other, Settings(), lambda: clock[0])
        a_full_floor_and_w_waiting(a)
        assert sitting(b) == BEFORE

        clock[0] = at(4, 12, 5)
        add(path)
        assert Reloader([path], a).reload().applied
        again = Receiver([load_restaurant(path)], open_store(any_db), Settings(), lambda: clock[0])
        try:
            for receiver in (a, b, again):
                assert sitting(receiver) == BEFORE
                assert waiting(receiver) == ["W"]
            # The board shows T7 free to seat W: it is on the floor from the reload on.
            board = a.host_operation(MID, "board").body["result"]
            assert board["tables"]["T7"] == "W", board

            clock[0] = at(4, 12, 10)
            assert a.host_operation(MID, "walk_in", "V", 2).code is None
            seated = {**BEFORE, "W": ("T7",)}
            assert sitting(a) == seated
            again.books[MID].reconfigure(again.books[MID].restaurant)  # replayed afresh
            assert sitting(again) == seated
            assert again.books[MID].stand(FRIDAY).parties["W"].state == "seated"
        finally:
            again.store.close()
    finally:
        store.close()
        other.close()


def test_a_table_a_start_adds_leaves_where_earlier_parties_sat(any_db: str, tmp_path: Path) -> None:
    """The server stops at 12:05 (every table taken, W waiting) and starts again on a file
    adding T7 before T5 (an edit made while no server ran): the day's replay keeps Y at T5,
    U at T6 and W waiting, T7 free from the start on. A day begun after it (Saturday) has
    T7 from its opening: the second 4-top walk-in sits there, before T5."""
    path = tmp_path / "marlowes.toml"
    path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    clock = [at(4, 12)]
    store = open_store(any_db)
    try:
        refuse_moved_openings(store, [(str(path), load_restaurant(path))], clock[0], start=True)
        a = Receiver([load_restaurant(path)], store, Settings(), lambda: clock[0])
        a_full_floor_and_w_waiting(a)

        clock[0] = at(4, 12, 5)
        add_t7_before_t5(path)
        refuse_moved_openings(store, [(str(path), load_restaurant(path))], clock[0], start=True)
        started = Receiver([load_restaurant(path)], store, Settings(), lambda: clock[0])
        assert sitting(started) == BEFORE
        assert waiting(started) == ["W"]
        clock[0] = at(4, 12, 10)
        assert started.host_operation(MID, "walk_in", "V", 2).code is None
        assert sitting(started) == {**BEFORE, "W": ("T7",)}

        clock[0] = at(5, 12)
        for party in ("P", "Q"):
            assert started.host_operation(MID, "walk_in", party, 4).code is None
        assert sitting(started, SATURDAY) == {"P": ("T1",), "Q": ("T7",)}
        restarted = Receiver([load_restaurant(path)], store, Settings(), lambda: clock[0])
        assert sitting(restarted, SATURDAY) == {"P": ("T1",), "Q": ("T7",)}
    finally:
        store.close()


def test_a_table_a_reload_puts_back_is_out_of_the_replay_while_it_was_removed(
    any_db: str, tmp_path: Path
) -> None:
    """Y sits at T5 from 12:00 and leaves at 12:02; a reload removes T5 (and T5+T6) at
    12:05; W (4) walks in at 12:06 and is told it waits (no 4-top free); a reload puts T5
    back at 12:10. Every replay has Y at T5 until 12:02, W waiting until the first write
    after 12:10 (then at T5): replayed with T5 all day, W read seated at T5 since 12:06,
    the host having told W to wait."""
    path = tmp_path / "marlowes.toml"
    text = MARLOWES.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    clock = [at(4, 12)]
    store = open_store(any_db)
    try:
        refuse_moved_openings(store, [(str(path), load_restaurant(path))], clock[0], start=True)
        a = Receiver([load_restaurant(path)], store, Settings(), lambda: clock[0])
        for party, size in (("A", 2), ("B", 2), ("X", 4), ("Y", 4), ("Z", 6), ("U", 4)):
            assert a.host_operation(MID, "walk_in", party, size).code is None
        assert sitting(a) == BEFORE
        clock[0] = at(4, 12, 2)
        assert a.host_operation(MID, "free", "T5").code is None
        clock[0] = at(4, 12, 5)
        t5 = '[[tables]]\nid = "T5"\nx = 1\ny = 1\nseats = 4\n\n'
        path.write_text(
            text.replace(t5, "").replace('[[combos]]\ntables = ["T5", "T6"]\n\n', ""), "utf-8"
        )
        assert Reloader([path], a).reload().applied
        clock[0] = at(4, 12, 6)
        assert a.host_operation(MID, "walk_in", "W", 4).body["result"] == "queued 1"
        clock[0] = at(4, 12, 10)
        path.write_text(text, encoding="utf-8")
        assert Reloader([path], a).reload().applied

        left = {p: t for p, t in BEFORE.items() if p != "Y"}
        again = Receiver([load_restaurant(path)], store, Settings(), lambda: clock[0])
        for receiver in (a, again):
            assert sitting(receiver) == left
            assert waiting(receiver) == ["W"]
            y = receiver.books[MID].stand(FRIDAY).parties["Y"]
            assert (y.state, y.tables) == ("gone", ("T5",))
        clock[0] = at(4, 12, 11)
        assert a.host_operation(MID, "walk_in", "V", 2).code is None
        restarted = Receiver([load_restaurant(path)], store, Settings(), lambda: clock[0])
        for receiver in (a, restarted):
            assert sitting(receiver) == {**left, "W": ("T5",)}
    finally:
        store.close()
