"""A waiting party's own quote is the seed's quote with only the parties ahead of it
waiting. It was worked out by taking the party and every one behind it off a copy of the
queue (a `leave` each, a seating pass each: quadratic in the queue); it is now one quote
over the parties ahead, and must give what the leaves gave (kept here as the oracle)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from engine import HostStand, build_floor, config
from feed.service.days import quote_ahead_of
from tests.unit.test_engine_properties import SETTINGS, valid_operations

PROTECTING = build_floor(
    config.TABLES, config.COMBOS, dwell_minutes=config.DWELL_MINUTES, protect_reservations=True
)


def by_leaves(stand: HostStand, ts: int, party_id: str, size: int) -> Any:
    """The old way: the party and those behind it leave a copy, then a quote."""
    ids = [p.id for p in stand.queue()]
    for pid in ids[ids.index(party_id) :] if party_id in ids else []:
        stand.apply(["leave", ts, pid])  # one a pass seated meanwhile is refused: it sits
    return stand.apply(["quote", ts, size])


@SETTINGS
@given(valid_operations(), st.sampled_from([0, 0, 1, 5, 20, 30]), st.booleans(), st.data())
def test_a_waiting_partys_own_quote_is_what_taking_it_and_those_behind_off_the_queue_gave(
    operations: list[list[Any]], later: int, protecting: bool, data: st.DataObject
) -> None:
    stand = HostStand(PROTECTING) if protecting else HostStand()
    for op in operations:
        stand.apply(op)
    queue = stand.queue()
    assume(queue)
    party = data.draw(st.sampled_from(queue))
    assert party.size is not None
    ts = (stand.last_ts or 0) + later
    # Time's own pass at `ts` may seat the party itself: it waits no more, and its quote is
    # nobody's (the leaves then quoted a room where it sits and those behind had gone).
    moved = copy.deepcopy(stand)
    moved.apply(["board", ts])
    assume(party.id in moved.waiting)
    own = quote_ahead_of(copy.deepcopy(stand), ts, party.id, party.size)
    assert own == by_leaves(copy.deepcopy(stand), ts, party.id, party.size)


def test_a_party_unknown_to_the_queue_is_quoted_behind_every_party_waiting() -> None:
    stand = HostStand()
    for i, size in enumerate([4, 2, 6, 2, 4, 4, 4, 4]):
        stand.apply(["walk_in", 0, f"P{i}", size])
    assert quote_ahead_of(copy.deepcopy(stand), 0, "nobody", 4) == stand.apply(["quote", 0, 4])
