"""The tablet's floor shows each waiting walk-in the quote it was given: the quote for its
size at its minute, just before it joined. The first view after a start (or a reload)
replays the day's log for them, and asked the engine a quote before each walk-in (a seating
pass and a count over the queue each: operations x queue length, the 1,000 parties a
waitlist may hold made it seconds). It now counts the waiting parties by size as it replays
and works the quote out from the counts; it must give what asking the engine gave (kept here
as the oracle) on random logs, with the host's seats, on floors with and without
protect_reservations."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from engine import MARLOWES, HostStand, Rejected, build_floor, config
from feed.service.floorview import _QuotesGiven
from store.log import LogEntry
from tests.unit.test_engine_properties import PARTY_IDS, SETTINGS, UNITS, valid_operations

PROTECTING = build_floor(
    config.TABLES, config.COMBOS, dwell_minutes=config.DWELL_MINUTES, protect_reservations=True
)


@st.composite
def logs(draw: st.DrawFn) -> list[list[Any]]:
    """Valid operations with the host's seats of waiting parties among them."""
    ops: list[list[Any]] = draw(valid_operations(max_size=60))
    for i in sorted(draw(st.lists(st.integers(0, len(ops)), max_size=6)), reverse=True):
        ts = ops[i - 1][1] if i > 0 else 0
        ops.insert(i, ["seat", ts, draw(PARTY_IDS), draw(st.sampled_from(UNITS))])
    return ops


def written(floor: Any, operations: list[list[Any]]) -> list[LogEntry]:
    """The day's log as the server writes it: each operation with the engine's result."""
    stand = HostStand(floor)
    entries = []
    for seq, op in enumerate(operations):
        result = stand.apply(op)
        shown = str(result) if isinstance(result, Rejected) else result
        entries.append(LogEntry(seq, op, shown, 0.0))
    return entries


def asked(floor: Any, entries: list[LogEntry]) -> dict[str, int]:
    """The old way: the engine's quote asked before each walk-in the log says joined."""
    stand = HostStand(floor)
    given: dict[str, int] = {}
    for entry in entries:
        op = entry.operation
        if op and op[0] == "walk_in" and str(entry.result).startswith("queued"):
            quoted = stand.apply(["quote", op[1], op[3]])
            if isinstance(quoted, int):
                given[str(op[2])] = quoted
        stand.apply(op)
    return given


@SETTINGS
@given(logs(), st.booleans(), st.integers(0, 60))
def test_the_floors_quotes_given_are_the_quotes_the_engine_gave_before_each_walk_in_joined(
    operations: list[list[Any]], protecting: bool, split: int
) -> None:
    floor = PROTECTING if protecting else MARLOWES
    entries = written(floor, operations)
    replayed = _QuotesGiven(HostStand(floor))
    replayed.take(entries[:split])  # a view, then the entries written since (catch_up)
    replayed.take(entries[split:])
    assert replayed.given == asked(floor, entries)


def test_a_long_queue_is_quoted_as_the_engine_quotes_it() -> None:
    """Marlowe's full but for the 6-top, then 300 parties of 1 and 2 over 75 minutes: the 6-top
    is too roomy for them until one has waited 30 minutes, when a walk-in's own pass seats it
    there (ahead of the walk-in); parties leave from the middle and tables are freed."""
    ops: list[list[Any]] = [
        *(["walk_in", 0, p, n] for p, n in [("A", 4), ("B", 2), ("C", 6), ("D", 2), ("E", 4)]),
        ["walk_in", 0, "F", 4],
        ["free", 0, "T3"],
    ]
    for i in range(300):
        minute = i // 4
        ops.append(["walk_in", minute, f"w{i}", 2 if i % 3 else 1])
        if i % 37 == 36:
            ops.append(["leave", minute, f"w{i - 20}"])
        if i % 53 == 52:
            ops.append(["free", minute, "T2"])
        if i % 59 == 58:
            ops.append(["free", minute, "T3"])
    entries = written(MARLOWES, ops)
    replayed = _QuotesGiven(HostStand(MARLOWES))
    replayed.take(entries)
    expected = asked(MARLOWES, entries)
    assert len(expected) > 250 and len(set(expected.values())) > 5
    assert replayed.given == expected


def test_a_walk_in_whose_own_pass_seats_a_party_ahead_is_quoted_behind_those_left() -> None:
    """The 6-top is too roomy for a 2 until it has waited 30 minutes: the walk-in at minute
    31 is quoted after its operation's pass seats the first 2 there, behind one party."""
    ops: list[list[Any]] = [
        *(["walk_in", 0, p, n] for p, n in [("A", 4), ("B", 2), ("C", 6), ("D", 2), ("E", 4)]),
        ["walk_in", 0, "F", 4],
        ["free", 0, "T3"],
        ["walk_in", 0, "w0", 2],
        ["walk_in", 0, "w1", 2],
        ["walk_in", 31, "w2", 2],
        ["walk_in", 31, "w3", 2],
    ]
    entries = written(MARLOWES, ops)
    assert entries[-2].result == "queued 2"  # w0 sits at T3: w1, then w2
    replayed = _QuotesGiven(HostStand(MARLOWES))
    replayed.take(entries)
    assert replayed.given == asked(MARLOWES, entries)
    assert replayed.given["w2"] == replayed.given["w1"] < replayed.given["w3"]
