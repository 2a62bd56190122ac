"""`floors.floor_drift`: how a server's floor plan differs from the floor in force on the
store (what /healthz says of a server running an out-of-date file); and the floors starts
and reloads keep on the store, one after the other even when kept at one moment."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from engine.floor import FloorPlan, Table
from engine.stand import PartyState
from feed.cli import refuse_moved_openings
from feed.service.config_reload import Reloader
from feed.service.floors import (
    BY_RELOAD,
    BY_UNDO,
    FLOOR_SCOPE,
    RETIRED_SCOPE,
    Retired,
    floor_drift,
    floor_history,
    floor_records,
    kept_floor,
    note_floor,
    replaced_floor,
    unit_ids,
)
from feed.service.notify import Notifier
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue.restaurant import load_restaurant
from store import open_store
from store.log import JSON, LogStore, StoreUnavailable, StoreUnwritable

MARLOWES = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"
MID = "marlowes-kitchen"
FRIDAY = date(2026, 12, 4)


def test_the_drift_names_tables_kept_lacking_redefined_and_a_new_order(any_db: str) -> None:
    floor = load_restaurant(MARLOWES).floor
    store = open_store(any_db)
    try:
        assert floor_drift(store, MID, floor) is None  # no floor kept yet: nothing to say
        note_floor(store, MID, floor, 1000.0)
        assert floor_drift(store, MID, floor) is None
        assert floor_drift(store, "marlowes", floor) is None  # another merchant's prefix

        t3 = floor.tables[2]
        bigger = dataclasses.replace(floor, tables=(
            *floor.tables[:2], dataclasses.replace(t3, seats=8), *floor.tables[3:],
            Table("T7", 2),
        ))  # fmt: skip
        said = floor_drift(store, MID, bigger)
        assert said == "it has T7, the floor in force does not; T3 is defined otherwise", said

        no_t2 = dataclasses.replace(floor, tables=(floor.tables[0], *floor.tables[2:]))
        note_floor(store, MID, no_t2, 2000.0)  # another server starts on a file without T2
        assert floor_drift(store, MID, floor) == "it has T2, the floor in force does not"
        assert floor_drift(store, MID, no_t2) is None

        # T1 (4) and T3 (6) swapped: the same ties (fewest seats, then floor order).
        swapped = dataclasses.replace(no_t2, tables=(no_t2.tables[1], no_t2.tables[0],
                                                     *no_t2.tables[2:]))  # fmt: skip
        assert floor_drift(store, MID, swapped) is None
        t1, t3, t4, t5, t6 = no_t2.tables  # T5 (4) before T1 (4): a party of 3 gets T5
        ties = dataclasses.replace(no_t2, tables=(t5, t3, t4, t1, t6))
        assert floor_drift(store, MID, ties) == "its tables are in another order"
        fewer = dataclasses.replace(no_t2, tables=no_t2.tables[:-1], combos=())
        said = floor_drift(store, MID, fewer)
        assert said is not None and said.startswith("the floor in force has T6, "), said
    finally:
        store.close()


def test_a_floor_replaced_since_is_known_and_one_only_an_undone_reload_kept_is_not(
    any_db: str,
) -> None:
    """The history of floors in force: Marlowe's floor kept at a start, replaced by a
    reload without T2, which a start on a floor with T7 replaced. Marlowe's floor and the
    one without T2 are known older floors (replaced_floor names what replaced each); the
    floor in force is not, nor one never kept, nor one a reload kept and was undone from
    (kept before records said how: the running floor kept again at its very instant)."""
    floor = load_restaurant(MARLOWES).floor
    no_t2 = dataclasses.replace(floor, tables=(floor.tables[0], *floor.tables[2:]))
    with_t7 = dataclasses.replace(no_t2, tables=(*no_t2.tables, Table("T7", 2)))
    store = open_store(any_db)
    try:
        assert replaced_floor(store, MID, floor) is None  # no history yet
        note_floor(store, MID, floor, 1000.0)
        note_floor(store, MID, no_t2, 2000.0, BY_RELOAD)
        note_floor(store, MID, with_t7, 3000.0)
        assert [(f.at, f.how) for f in floor_history(store, MID)] == [
            (1000.0, "start"), (2000.0, "reload"), (3000.0, "start"),
        ]  # fmt: skip
        found = replaced_floor(store, MID, floor)
        assert found is not None and (found[0].at, found[1].at) == (1000.0, 2000.0)
        found = replaced_floor(store, MID, no_t2)
        assert found is not None and (found[0].at, found[1].how) == (2000.0, "start")
        assert replaced_floor(store, MID, with_t7) is None  # the floor in force
        t3 = floor.tables[2]
        never = dataclasses.replace(floor, tables=(*floor.tables[:2], Table("T3", 8),
                                                   *floor.tables[3:]))  # fmt: skip
        assert t3.seats != 8 and replaced_floor(store, MID, never) is None

        # Records from before they said how: an undone reload's floor (T3 removed), then
        # the running one kept again at the same instant.
        other = "old-merchant"
        no_t3 = dataclasses.replace(floor, tables=(*floor.tables[:2], *floor.tables[3:]))
        for at, f in ((1000.0, floor), (2000.0, no_t3), (2000.0, floor)):
            _scope, key, value = floor_records(store, other, f, at)[0][-1]
            assert isinstance(value, dict)
            store.remember("floor", key, {k: v for k, v in value.items() if k != "how"})
        assert [f.undone for f in floor_history(store, other)] == [False, True, False]
        assert replaced_floor(store, other, no_t3) is None
        assert replaced_floor(store, other, floor) is None
    finally:
        store.close()


class CutAtTheFloorRecord:
    """A store that goes away as the floor record is written (the database restarted, the
    process killed there): every write holding it fails, nothing of that write is kept."""

    def __init__(self, store: LogStore) -> None:
        self.store = store
        self.cut = True  # off: every write goes through

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def remember(self, scope: str, key: str, value: JSON) -> JSON:
        if self.cut and scope == FLOOR_SCOPE:
            raise StoreUnavailable("the database went away")
        return self.store.remember(scope, key, value)

    def append_all(self, appends: Any, remember: Any = (), put: Any = (), outbox: Any = ()) -> None:
        if self.cut and any(scope == FLOOR_SCOPE for scope, _key, _value in remember):
            raise StoreUnavailable("the database went away")
        self.store.append_all(appends, remember, put, outbox)


def test_a_start_cut_off_as_it_keeps_its_floor_keeps_nothing_of_it(any_db: str) -> None:
    """A start on a file without T5 wrote T5's removal, then its floor record: cut between
    (the database restarting), T5 stood removed as of that start while the floor in force
    still had it and the other servers seated there, and the next start kept that removal,
    so every replay from then on dropped what was seated at T5 meanwhile. The removal and
    the floor record are kept together or not at all."""
    floor = load_restaurant(MARLOWES).floor
    no_t5 = dataclasses.replace(
        floor,
        tables=tuple(t for t in floor.tables if t.id != "T5"),
        combos=tuple(c for c in floor.combos if "T5" not in c.tables),
    )
    store = open_store(any_db)
    try:
        note_floor(store, MID, floor, 1000.0)
        cut = cast(LogStore, CutAtTheFloorRecord(store))
        with pytest.raises(StoreUnavailable):
            note_floor(cut, MID, no_t5, 2000.0)
        assert store.recall_prefix(RETIRED_SCOPE, f"{MID}/") == []
        assert "T5" in kept_floor(store, MID)[1]
        note_floor(store, MID, no_t5, 3000.0)  # started again, the database back
        retired = [Retired.of_record(v) for _k, v in store.recall_prefix(RETIRED_SCOPE, MID)]
        assert {(r.unit, r.at) for r in retired if r is not None} == {
            ("T5", 3000.0), ("T5+T6", 3000.0),
        }  # fmt: skip
    finally:
        store.close()


class StartedMeanwhile:
    """A store on which another server's start keeps its floor (`other`, at `at`) just
    before this start's first write of its floor: both read the store before either wrote."""

    def __init__(self, store: LogStore, other: FloorPlan, at: float) -> None:
        self.store = store
        self.other: FloorPlan | None = other
        self.at = at

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def append_all(self, appends: Any, remember: Any = (), put: Any = (), outbox: Any = ()) -> None:
        if self.other is not None and any(scope == FLOOR_SCOPE for scope, _k, _v in remember):
            other, self.other = self.other, None
            note_floor(self.store, MID, other, self.at)
        self.store.append_all(appends, remember, put, outbox)


def test_two_starts_at_once_keep_their_floors_one_after_the_other(any_db: str) -> None:
    """Two servers started at the same moment on a store with no floor kept, one on a file
    with T5 and one without: each read no floor and kept its own, so the later one, without
    T5, was in force with no removal of T5, and whatever the first seated at T5 meanwhile
    fell from every replay (a day's units come from the floor in force). Now the second
    start to write finds the first's floor and is kept after it, T5 removed as of then."""
    floor = load_restaurant(MARLOWES).floor
    no_t5 = dataclasses.replace(
        floor,
        tables=tuple(t for t in floor.tables if t.id != "T5"),
        combos=tuple(c for c in floor.combos if "T5" not in c.tables),
    )
    store = open_store(any_db)
    try:
        racing = cast(LogStore, StartedMeanwhile(store, floor, 2000.0))
        note_floor(racing, MID, no_t5, 3000.0)
        assert [
            (f.at, sorted(f.units) == sorted(unit_ids(floor))) for f in floor_history(store, MID)
        ] == [(2000.0, True), (3000.0, False)]
        assert "T5" not in kept_floor(store, MID)[1]
        retired = [Retired.of_record(v) for _k, v in store.recall_prefix(RETIRED_SCOPE, MID)]
        assert {(r.unit, r.at) for r in retired if r is not None} == {
            ("T5", 3000.0), ("T5+T6", 3000.0),
        }  # fmt: skip
    finally:
        store.close()


T2 = '[[tables]]\nid = "T2"\nx = 0\ny = 1\nseats = 2\n\n'
T7 = '[[tables]]\nid = "T7"\nx = 3\ny = 3\nseats = 4\n\n'


def at(hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 12, 4, hour, minute, second, tzinfo=UTC)  # Friday, London is UTC


class KeptMeanwhile:
    """A store on which `meanwhile` (another server keeping its floor, by a start or a
    reload, and seating a party then) runs just before this writer's first write of a
    floor (`how` it takes force, when given), in `remember` or `put` (a reload in service
    writes it with its fence entry): both read the floor in force before either kept
    theirs."""

    def __init__(
        self, store: LogStore, meanwhile: Callable[[], None], how: str | None = None
    ) -> None:
        self.store = store
        self.meanwhile: Callable[[], None] | None = meanwhile
        self.how = how

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def _before(self, records: list[Any]) -> None:
        if self.meanwhile is not None and any(
            scope == FLOOR_SCOPE and (self.how is None or value.get("how") == self.how)
            for scope, _k, value in records
        ):
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()

    def remember(self, scope: str, key: str, value: JSON) -> JSON:
        self._before([(scope, key, value)])
        return self.store.remember(scope, key, value)

    def append_all(self, appends: Any, remember: Any = (), put: Any = (), outbox: Any = ()) -> None:
        self._before([*remember, *put])
        self.store.append_all(appends, remember, put, outbox)


class NoRoomForReplaces:
    """A store too full for the write of partners' replaces (outbox messages, a reload's
    largest write): refused, nothing of it kept; every other write fits."""

    def __init__(self, store: LogStore) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def append_all(self, appends: Any, remember: Any = (), put: Any = (), outbox: Any = ()) -> None:
        if outbox:
            raise StoreUnwritable("database or disk is full")
        self.store.append_all(appends, remember, put, outbox)


def copy_of_marlowes(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    return path


def start(
    store: LogStore, path: Path, now: datetime, clock: Callable[[], datetime] | None = None
) -> None:
    """What `serve` does with its store as it starts on `path` (it keeps its floor) at
    `now`, its clock `clock` (None: pinned at `now`)."""
    refuse_moved_openings(store, [(str(path), load_restaurant(path))], now, start=True, clock=clock)


def started(store: LogStore, path: Path, clock: list[datetime]) -> Receiver:
    """A server started on `path` at `clock[0]` (keeping its floor), on that clock."""
    start(store, path, clock[0])
    return Receiver([load_restaurant(path)], store, Settings(), lambda: clock[0])


def four_tops_taken(server: Receiver) -> None:
    """X, Y and Z (4) walk in: T1, T5 and T6 taken, every 4-top of Marlowe's file."""
    for party in ("X", "Y", "Z"):
        assert server.host_operation(MID, "walk_in", party, 4).code is None


def seat_at_t7(server: Receiver, clock: list[datetime]) -> None:
    """P (4) walks in at 12:07 on a server whose floor has T7, every other 4-top taken."""
    clock[0] = at(12, 7)
    assert server.host_operation(MID, "walk_in", "P", 4).code is None
    assert sitting(server)["P"] == ("T7",)


def p_at_new_t7(path_a: Path, a: Receiver, clock: list[datetime], leaves: bool) -> None:
    """Server A reloads its file, now with T7, at 12:05 and seats P (4) there at 12:05:30,
    every other 4-top taken; P leaves at 12:05:45 when `leaves`."""
    clock[0] = at(12, 5)
    path_a.write_text(with_t7(path_a.read_text(encoding="utf-8")), "utf-8")
    assert Reloader([path_a], a).reload().applied
    clock[0] = at(12, 5, 30)
    assert a.host_operation(MID, "walk_in", "P", 4).code is None
    assert sitting(a)["P"] == ("T7",)
    if leaves:
        clock[0] = at(12, 5, 45)
        assert a.host_operation(MID, "free", "T7").code is None


def p_sat_at_t7_and_left(*servers: Receiver) -> None:
    """P sat at T7 and left, in every replay: on each of `servers`."""
    for server in servers:
        p = server.books[MID].stand(FRIDAY).parties["P"]
        assert (p.state, p.tables) == (PartyState.GONE, ("T7",))


def b_kept_after_a_at_12_06(store: LogStore) -> None:
    """B's start (at 12:06, without T2) kept after A's reload with T7 (12:05): T2 and T7
    removed as of 12:06."""
    assert [(f.at, f.how, "T7" in f.units) for f in floor_history(store, MID)] == [
        (at(12).timestamp(), "start", False),
        (at(12, 5).timestamp(), "reload", True),
        (at(12, 6).timestamp(), "start", False),
    ]
    retired = [Retired.of_record(v) for _k, v in store.recall_prefix(RETIRED_SCOPE, MID)]
    assert {(r.unit, r.at) for r in retired if r is not None} == {
        ("T2", at(12, 6).timestamp()), ("T7", at(12, 6).timestamp()),
    }  # fmt: skip


def sitting(server: Receiver) -> dict[str, tuple[str, ...]]:
    return {s.party_id: s.tables for s in server.books[MID].stand(FRIDAY).sittings()}


def with_t7(text: str) -> str:
    return text.replace("\n[[combos]]", "\n" + T7 + "[[combos]]", 1)


# B's edit of its file, the units its reload retires (as of 12:08) and what A is told:
# T2 removed (the reload keeps its floor with a fence entry on the day), or T8 added (none).
B_EDITS = {
    "removes-t2": (
        lambda text: text.replace(T2, ""),
        {"T2", "T7"},
        "it has T2, T7, the floor in force does not",
    ),
    "adds-t8": (
        lambda text: text.replace("\n[[combos]]", "\n" + T7.replace("T7", "T8") + "[[combos]]", 1),
        {"T7"},
        "it has T7, the floor in force does not; the floor in force has T8, it does not",
    ),
}


@pytest.mark.parametrize("b_edit", list(B_EDITS))
@pytest.mark.parametrize("b_at", [at(12, 5), at(12, 8)], ids=["b-first", "a-behind"])
@pytest.mark.parametrize("first", ["reload", "start"])
@pytest.mark.parametrize("p_left", [True, False], ids=["p-left", "p-sits"])
def test_a_reload_racing_another_floor_is_kept_after_it_and_refused_while_a_party_sits_there(
    any_db: str, tmp_path: Path, p_left: bool, first: str, b_at: datetime, b_edit: str
) -> None:
    """Two servers on one store in Friday's service, T1, T5 and T6 taken. Server B reloads
    a file without T2, or with T8 (at 12:05, or 12:08 on its clock when A's runs behind);
    before it writes its floor, server A keeps a floor with T7 (a reload of a file adding
    it, or A started again on that file) at 12:06 and seats P there at 12:07 (who leaves,
    T7 freed, or still sits there). B's reload had read the floor before A's and kept its
    own beside it, worked out on the floor before: in force before A's (B's own floor
    lost, T2 back in force), or after it with no removal of T7, so that T7 left every
    replay from the opening and P fell from it, on every server and after any restart.
    B's reload, refused by the store as the second to follow the same floor, is worked
    out again after A's at 12:08, as a start is: T7, which B's file lacks, is removed as
    one of its own tables is, refused while P sits there (kept once P left, T7 removed as
    of then); A is told its floor is out of date."""
    path_a = copy_of_marlowes(tmp_path / "a" / "marlowes.toml")
    path_b = copy_of_marlowes(tmp_path / "b" / "marlowes.toml")
    clock_a, clock_b = [at(12)], [at(12)]
    store_a, store_b, fresh = open_store(any_db), open_store(any_db), open_store(any_db)
    try:
        servers = [started(store_a, path_a, clock_a)]
        four_tops_taken(servers[0])

        def meanwhile() -> None:
            clock_a[0] = at(12, 6)
            path_a.write_text(with_t7(path_a.read_text(encoding="utf-8")), "utf-8")
            if first == "reload":
                assert Reloader([path_a], servers[0]).reload().applied
            else:
                start(store_a, path_a, clock_a[0])
                servers[0] = Receiver([load_restaurant(path_a)], store_a, Settings(),
                                      lambda: clock_a[0])  # fmt: skip
            seat_at_t7(servers[0], clock_a)
            if p_left:
                assert servers[0].host_operation(MID, "free", "T7").code is None
            clock_b[0] = at(12, 8)

        racing = cast(LogStore, KeptMeanwhile(store_b, meanwhile))
        b = Receiver([load_restaurant(path_b)], racing, Settings(), lambda: clock_b[0])
        edit, retiring, said_to_a = B_EDITS[b_edit]
        path_b.write_text(edit(path_b.read_text(encoding="utf-8")), "utf-8")
        clock_b[0] = b_at
        outcome = Reloader([path_b], b).reload()
        again = Receiver([load_restaurant(path_a)], fresh, Settings(), lambda: clock_a[0])
        if not p_left:
            assert not outcome.applied
            assert any("T7 is removed but P (4 guests) sits at it now" in p
                       for p in outcome.problems), outcome.problems  # fmt: skip
            assert [(f.at, f.how, "T7" in f.units) for f in floor_history(store_a, MID)] == [
                (at(12).timestamp(), "start", False),
                (at(12, 6).timestamp(), first, True),
            ]
            assert store_a.recall_prefix(RETIRED_SCOPE, f"{MID}/") == []
            for server in (servers[0], again):
                assert sitting(server)["P"] == ("T7",)
            return
        assert outcome.applied, outcome.problems

        assert [(f.at, f.how, "T7" in f.units) for f in floor_history(store_a, MID)] == [
            (at(12).timestamp(), "start", False),
            (at(12, 6).timestamp(), first, True),
            (at(12, 8).timestamp(), "reload", False),
        ]
        retired = [Retired.of_record(v) for _k, v in store_a.recall_prefix(RETIRED_SCOPE, MID)]
        assert {(r.unit, r.at) for r in retired if r is not None} == {
            (unit, at(12, 8).timestamp()) for unit in retiring
        }
        p_sat_at_t7_and_left(servers[0], b, again)
        assert floor_drift(store_a, MID, load_restaurant(path_b).floor) is None
        said = floor_drift(store_a, MID, load_restaurant(path_a).floor)
        assert said == said_to_a, said
    finally:
        for store in (store_a, store_b, fresh):
            store.close()


@pytest.mark.parametrize("p_left", [True, False], ids=["p-left", "p-sits"])
def test_a_start_racing_a_reload_is_kept_after_it_and_refused_while_a_party_sits_there(
    any_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], p_left: bool
) -> None:
    """Server B starts at 12:06 (its clock) on a file without T2 in Friday's service, T1,
    T5 and T6 taken; before it writes its floor, server A reloads a file adding T7 (12:05
    on its clock) and seats P there (12:05:30; P leaves at 12:05:45, or still sits). A
    reload kept no record of the floor it followed, so B's start took the floor it had
    read as the one it followed, kept its own after A's without removing T7, and P fell
    from every replay. Now the start is worked out again after the reload, its checks
    made again: refused while P sits at T7, which B's file lacks (as a start is when P
    sat there before it began), nothing kept; once P left, kept after A's floor, T7
    removed as of the start."""
    path_a = copy_of_marlowes(tmp_path / "a" / "marlowes.toml")
    path_b = copy_of_marlowes(tmp_path / "b" / "marlowes.toml")
    clock = [at(12)]
    store_a, store_b = open_store(any_db), open_store(any_db)
    try:
        a = started(store_a, path_a, clock)
        four_tops_taken(a)

        def meanwhile() -> None:
            p_at_new_t7(path_a, a, clock, leaves=p_left)

        path_b.write_text(path_b.read_text(encoding="utf-8").replace(T2, ""), "utf-8")
        racing = cast(LogStore, KeptMeanwhile(store_b, meanwhile))
        if not p_left:
            with pytest.raises(SystemExit):
                start(racing, path_b, at(12, 6))
            said = capsys.readouterr().err
            assert "T7 is not on the floor plan, but P (4 guests) sits at it now" in said, said
            assert [(f.how, "T7" in f.units) for f in floor_history(store_a, MID)] == [
                ("start", False), ("reload", True),
            ]  # fmt: skip
            assert store_a.recall_prefix(RETIRED_SCOPE, f"{MID}/") == []
            assert sitting(a)["P"] == ("T7",)
            return
        start(racing, path_b, at(12, 6))
        clock[0] = at(12, 6)
        b = Receiver([load_restaurant(path_b)], store_b, Settings(), lambda: clock[0])

        b_kept_after_a_at_12_06(store_a)
        p_sat_at_t7_and_left(a, b)
    finally:
        store_a.close()
        with contextlib.suppress(Exception):  # a refused start closes its store
            store_b.close()


def test_a_reload_undone_after_another_reload_followed_its_floor_leaves_that_floor_in_force(
    any_db: str, tmp_path: Path
) -> None:
    """Server B reloads a file without T2 at 12:05 in Friday's service (T1, T5 and T6
    taken) and keeps its floor; the store refuses the partners' replaces, so the reload is
    undone, the floor before it kept again. Just before that write, server A reloads a file
    without T2 and with T7 (12:06), following B's floor, and seats P at T7 (12:07). The
    undo, worked out on B's floor, was kept beside A's, which followed B's: B's floor read
    as undone (never in force) under A's, and T2, back in force by the undo, off again by
    A's floor with no removal, so what was seated there meanwhile fell from every replay.
    Now the undo follows B's floor as A's does: refused by the store, it finds A's floor
    in force, not the reload's to undo, and leaves it; B, on its old file again, is told
    its floor is out of date."""
    path_a = copy_of_marlowes(tmp_path / "a" / "marlowes.toml")
    path_b = copy_of_marlowes(tmp_path / "b" / "marlowes.toml")
    clock_a, clock_b = [at(12)], [at(12)]
    store_a, store_b, fresh = open_store(any_db), open_store(any_db), open_store(any_db)
    try:
        a = started(store_a, path_a, clock_a)
        four_tops_taken(a)

        def meanwhile() -> None:
            clock_a[0] = at(12, 6)
            path_a.write_text(with_t7(path_a.read_text(encoding="utf-8")).replace(T2, ""), "utf-8")
            assert Reloader([path_a], a).reload().applied
            seat_at_t7(a, clock_a)

        partner = Partner("p", None, None, notify_url="http://127.0.0.1:9/")
        settings = Settings(partners={"p": partner})
        full = cast(LogStore, NoRoomForReplaces(store_b))
        racing = cast(LogStore, KeptMeanwhile(full, meanwhile, how=BY_UNDO))
        b = Receiver([load_restaurant(path_b)], racing, settings, lambda: clock_b[0],
                     Notifier.of(settings))  # fmt: skip
        path_b.write_text(path_b.read_text(encoding="utf-8").replace(T2, ""), "utf-8")
        clock_b[0] = at(12, 5)
        with pytest.raises(StoreUnwritable):
            Reloader([path_b], b).reload()

        assert [(f.at, f.how, "T7" in f.units) for f in floor_history(store_a, MID)] == [
            (at(12).timestamp(), "start", False),
            (at(12, 5).timestamp(), "reload", False),
            (at(12, 6).timestamp(), "reload", True),
        ]
        assert "T2" not in kept_floor(store_a, MID)[1]
        again = Receiver([load_restaurant(path_a)], fresh, Settings(), lambda: clock_a[0])
        for server in (a, again):
            assert sitting(server)["P"] == ("T7",)
        assert floor_drift(store_a, MID, load_restaurant(path_a).floor) is None
        said = floor_drift(store_a, MID, b.books[MID].restaurant.floor)  # its old file
        assert (
            said == "it has T2, the floor in force does not; the floor in force has T7, it does not"
        )
    finally:
        for store in (store_a, store_b, fresh):
            store.close()


def a_adds_t7(path_a: Path, a: Receiver, clock_a: list[datetime]) -> None:
    """Server A reloads its file, now with T7, at 12:06."""
    clock_a[0] = at(12, 6)
    path_a.write_text(with_t7(path_a.read_text(encoding="utf-8")), "utf-8")
    assert Reloader([path_a], a).reload().applied


@pytest.mark.parametrize("b_edit", list(B_EDITS))
def test_a_reload_without_a_table_another_server_added_is_refused_while_a_party_sits_there(
    any_db: str, tmp_path: Path, b_edit: str
) -> None:
    """Servers A and B start on one file in Friday's service, T1, T5 and T6 taken. A
    reloads a file adding T7 (12:06) and seats P there (12:07); B, whose file never had T7,
    reloads an edit of it (T2 removed, or T8 added) at 12:08. B's stand never knew T7, so
    its reload saw nobody there and retired T7 as a unit of the floor in force its file
    lacks, with no refusal: P left every replay, read waiting, on every server. What B's
    file lacks of the floor in force is what B's reload removes: refused naming P, as a
    reload removing a table of its own file is, until P's table is freed."""
    path_a = copy_of_marlowes(tmp_path / "a" / "marlowes.toml")
    path_b = copy_of_marlowes(tmp_path / "b" / "marlowes.toml")
    clock_a, clock_b = [at(12)], [at(12)]
    store_a, store_b, fresh = open_store(any_db), open_store(any_db), open_store(any_db)
    try:
        a = started(store_a, path_a, clock_a)
        b = Receiver([load_restaurant(path_b)], store_b, Settings(), lambda: clock_b[0])
        four_tops_taken(a)
        a_adds_t7(path_a, a, clock_a)
        seat_at_t7(a, clock_a)

        edit, _retiring, _said = B_EDITS[b_edit]
        path_b.write_text(edit(path_b.read_text(encoding="utf-8")), "utf-8")
        clock_b[0] = at(12, 8)
        outcome = Reloader([path_b], b).reload()
        assert not outcome.applied
        assert any(
            "T7 is removed but P (4 guests) sits at it now" in p for p in outcome.problems
        ), outcome.problems
        assert [(f.how, "T7" in f.units) for f in floor_history(store_a, MID)] == [
            ("start", False), ("reload", True),
        ]  # fmt: skip
        assert store_a.recall_prefix(RETIRED_SCOPE, f"{MID}/") == []
        again = Receiver([load_restaurant(path_a)], fresh, Settings(), lambda: clock_a[0])
        for server in (a, again):
            assert sitting(server)["P"] == ("T7",)

        clock_a[0] = clock_b[0] = at(12, 9)
        assert a.host_operation(MID, "free", "T7").code is None
        assert Reloader([path_b], b).reload().applied  # nobody there now: T7 removed
        assert "T7" not in kept_floor(store_a, MID)[1]
        assert floor_drift(store_a, MID, load_restaurant(path_b).floor) is None
    finally:
        for store in (store_a, store_b, fresh):
            store.close()


SATURDAY = date(2026, 12, 5)


def saturday_units(server: Receiver) -> dict[str, str]:
    listed = server.host_reservations(MID, SATURDAY).body["reservations"]
    return {row["name"]: row["unit"] for row in listed if row["status"] == "booked"}


@pytest.mark.parametrize("b_edit", list(B_EDITS))
@pytest.mark.parametrize("room", [True, False], ids=["room-elsewhere", "no-room"])
def test_a_reload_on_a_file_without_a_table_another_server_added_rehomes_its_bookings_ahead(
    any_db: str, tmp_path: Path, room: bool, b_edit: str
) -> None:
    """Server A reloads a file adding T7 (12:06) and books (12:07) Saturday 19:00 for four parties
    of 4 (T7, T1, T5, T6), and a fifth at T3 (6) when no room is left; server B, on a
    file that never had T7, reloads an edit of it at 12:08. Its replay never had the
    booking on T7 (the engine rejects a reserve on an unknown table), so its reload retired
    T7 with the booking on it: dropped from every replay, its guests expected nowhere.
    What B's file lacks of the floor in force is what B's reload removes: the booking is
    booked again on T3, as one on a table of its own file would be, or the reload is
    refused naming it when no table is left."""
    path_a = copy_of_marlowes(tmp_path / "a" / "marlowes.toml")
    path_b = copy_of_marlowes(tmp_path / "b" / "marlowes.toml")
    clock_a, clock_b = [at(12)], [at(12)]
    store_a, store_b, fresh = open_store(any_db), open_store(any_db), open_store(any_db)
    try:
        a = started(store_a, path_a, clock_a)
        b = Receiver([load_restaurant(path_b)], store_b, Settings(), lambda: clock_b[0])
        a_adds_t7(path_a, a, clock_a)
        clock_a[0] = at(12, 7)
        names = ["A1", "A2", "A3", "A4"] + ([] if room else ["A5"])
        for name in names:
            booked = a.host_book(MID, 4, "2026-12-05T19:00", name, "", over_pacing=True)
            assert booked.code is None, booked.body
        units = saturday_units(a)
        on_t7 = [name for name, unit in units.items() if unit == "T7"]
        assert len(on_t7) == 1 and ("T3" in units.values()) is not room, units

        edit, _retiring, _said = B_EDITS[b_edit]
        path_b.write_text(edit(path_b.read_text(encoding="utf-8")), "utf-8")
        clock_b[0] = at(12, 8)
        outcome = Reloader([path_b], b).reload()
        again = Receiver([load_restaurant(path_a)], fresh, Settings(), lambda: clock_a[0])
        if room:
            assert outcome.applied, outcome.problems
            assert [(r["from"], r["to"]) for r in outcome.rehomed] == [("T7", "T3")]
            assert "T7" not in kept_floor(store_a, MID)[1]
            for server in (a, b, again):
                assert saturday_units(server)[on_t7[0]] == "T3"
        else:
            assert not outcome.applied
            assert any("T7 is removed but booking" in p and f"({on_t7[0]}, 4 guests)" in p
                       for p in outcome.problems), outcome.problems  # fmt: skip
            assert "T7" in kept_floor(store_a, MID)[1]
            for server in (a, again):
                assert saturday_units(server)[on_t7[0]] == "T7"
    finally:
        for store in (store_a, store_b, fresh):
            store.close()


def test_a_start_worked_out_again_after_another_floor_is_kept_as_of_its_clock_then(
    any_db: str, tmp_path: Path
) -> None:
    """Server B starts on a file without T2, its clock read at 12:04 in Friday's service
    (T1, T5 and T6 taken); before it writes its floor, server A reloads a file adding T7
    (12:05), seats P there (12:05:30) and frees T7 (12:05:45). B's start, refused by the
    store as the second to follow the same floor, was worked out again after A's as of
    12:04, its first instant: T7 retired before it was in force, so P's stay at T7 fell
    from every replay (P read seated at T3, and still there, on A, on B and after any
    restart). Now it is kept as of its clock then (12:06), as a reload worked out again
    is: T7 removed as of 12:06, P seated there and gone on every server."""
    path_a = copy_of_marlowes(tmp_path / "a" / "marlowes.toml")
    path_b = copy_of_marlowes(tmp_path / "b" / "marlowes.toml")
    clock = [at(12)]
    store_a, store_b, fresh = open_store(any_db), open_store(any_db), open_store(any_db)
    try:
        a = started(store_a, path_a, clock)
        four_tops_taken(a)

        def meanwhile() -> None:
            p_at_new_t7(path_a, a, clock, leaves=True)
            clock[0] = at(12, 6)

        path_b.write_text(path_b.read_text(encoding="utf-8").replace(T2, ""), "utf-8")
        racing = cast(LogStore, KeptMeanwhile(store_b, meanwhile))
        start(racing, path_b, at(12, 4), clock=lambda: clock[0])

        b = Receiver([load_restaurant(path_b)], store_b, Settings(), lambda: clock[0])
        again = Receiver([load_restaurant(path_b)], fresh, Settings(), lambda: clock[0])
        p_sat_at_t7_and_left(a, b, again)

        b_kept_after_a_at_12_06(store_a)
    finally:
        for store in (store_a, store_b, fresh):
            store.close()


@pytest.mark.parametrize("there", ["seated", "booked"])
def test_a_start_without_a_table_another_server_added_is_refused_while_someone_is_there(
    any_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], there: str
) -> None:
    """Server A reloads a file adding T7 (12:06) and seats P there, or books Saturday on
    it (12:07); server B starts (12:08) on an edit of a file that never had T7 (T2
    removed). A start reads what sits and is booked on the floor in force from the store,
    not from its file (stored_parties_removed, stored_units_removed): refused naming P or
    the booking, nothing kept, as a reload is."""
    path_a = copy_of_marlowes(tmp_path / "a" / "marlowes.toml")
    path_b = copy_of_marlowes(tmp_path / "b" / "marlowes.toml")
    clock_a = [at(12)]
    store_a, store_b = open_store(any_db), open_store(any_db)
    try:
        a = started(store_a, path_a, clock_a)
        if there == "seated":
            four_tops_taken(a)
        a_adds_t7(path_a, a, clock_a)
        if there == "seated":
            seat_at_t7(a, clock_a)
        else:
            clock_a[0] = at(12, 7)
            assert a.host_book(MID, 4, "2026-12-05T19:00", "A1", "").code is None
            assert saturday_units(a)["A1"] == "T7"
        path_b.write_text(path_b.read_text(encoding="utf-8").replace(T2, ""), "utf-8")
        with pytest.raises(SystemExit):
            start(store_b, path_b, at(12, 8))
        said = capsys.readouterr().err
        assert "T7 is not on the floor plan, but " in said, said
        assert ("P (4 guests) sits at it now" if there == "seated" else "still booked") in said
        assert [f.how for f in floor_history(store_a, MID)] == ["start", "reload"]
        assert store_a.recall_prefix(RETIRED_SCOPE, f"{MID}/") == []
    finally:
        store_a.close()
        with contextlib.suppress(Exception):  # a refused start closes its store
            store_b.close()


@pytest.mark.parametrize("b_at", [at(12, 5), at(12, 8)], ids=["b-first", "a-behind"])
def test_a_reload_racing_another_floor_rehomes_the_bookings_on_what_that_floor_added(
    any_db: str, tmp_path: Path, b_at: datetime
) -> None:
    """Server B reloads a file without T2 (12:05, or 12:08 on its clock when A's runs
    behind); before it writes its floor, server A reloads a file adding T7 (12:06) and
    books (12:07) Saturday 19:00 for four parties of 4, one on T7. B's reload, worked out
    again after A's floor, retired T7, which its file lacks, with the booking on it: its
    re-homing read B's stand, which never had T7. Now it is booked again on T3, as one on
    a table of B's own file is, on every server."""
    path_a = copy_of_marlowes(tmp_path / "a" / "marlowes.toml")
    path_b = copy_of_marlowes(tmp_path / "b" / "marlowes.toml")
    clock_a, clock_b = [at(12)], [at(12)]
    store_a, store_b, fresh = open_store(any_db), open_store(any_db), open_store(any_db)
    try:
        a = started(store_a, path_a, clock_a)
        on_t7: list[str] = []

        def meanwhile() -> None:
            a_adds_t7(path_a, a, clock_a)
            clock_a[0] = at(12, 7)
            for name in ("A1", "A2", "A3", "A4"):
                booked = a.host_book(MID, 4, "2026-12-05T19:00", name, "", over_pacing=True)
                assert booked.code is None, booked.body
            on_t7.extend(n for n, unit in saturday_units(a).items() if unit == "T7")
            assert len(on_t7) == 1
            clock_b[0] = at(12, 8)

        racing = cast(LogStore, KeptMeanwhile(store_b, meanwhile))
        b = Receiver([load_restaurant(path_b)], racing, Settings(), lambda: clock_b[0])
        path_b.write_text(path_b.read_text(encoding="utf-8").replace(T2, ""), "utf-8")
        clock_b[0] = b_at
        outcome = Reloader([path_b], b).reload()
        assert outcome.applied, outcome.problems
        assert [(r["from"], r["to"]) for r in outcome.rehomed] == [("T7", "T3")]
        assert [f.how for f in floor_history(store_a, MID)] == ["start", "reload", "reload"]
        assert "T7" not in kept_floor(store_a, MID)[1]
        again = Receiver([load_restaurant(path_b)], fresh, Settings(), lambda: clock_b[0])
        for server in (a, b, again):
            assert saturday_units(server)[on_t7[0]] == "T3"
    finally:
        for store in (store_a, store_b, fresh):
            store.close()
