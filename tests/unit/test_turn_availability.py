"""The availability promise under turn times and a live floor (PRODUCT.md section 3):
random floors, turns, bookings, seated parties and `now`; the engine takes every booking."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import FloorPlan, HostStand, Rejected, build_floor
from feed.floor.availability import Taken, Turns, choose_unit, day_grid, spots_open
from tests.unit.test_availability import floors

SLOTS = list(range(0, 360, 15))
SIZES = range(1, 11)
OVERSTAY = 15


@st.composite
def turn_tables(draw: st.DrawFn) -> dict[int, int]:
    return {n: draw(st.sampled_from([30, 45, 60, 70, 90, 120])) for n in SIZES}


class LiveDay:
    """Bookings made through choose_unit at minute `now`, mirrored in the engine (which
    must accept each), beside parties already seated."""

    def __init__(self, floor: FloorPlan, turns: Turns, now: int) -> None:
        self.floor, self.turns, self.now = floor, turns, now
        self.stand = HostStand(floor)
        self.seated: list[Taken] = []
        self.booked: dict[str, Taken] = {}
        self.count = 0

    def taken(self) -> list[Taken]:
        return [*self.seated, *self.booked.values()]

    def sit(self, unit: str, since: int, n: int) -> None:
        """A party of n seated at `since` (before now): past its turn, now + overstay."""
        end = max(since + self.turns[n], self.now + OVERSTAY)
        self.seated.append(Taken(tuple(unit.split("+")), since, end))

    def book(self, at: int, n: int) -> str | None:
        unit = choose_unit(self.floor, self.taken(), at, n, self.turns)
        if unit is None:
            return None
        self.count += 1
        rid = f"R{self.count}"
        assert self.stand.apply(["reserve", self.now, rid, unit, at]) is True, (unit, at)
        self.booked[rid] = Taken(tuple(unit.split("+")), at, at + self.turns[n], at)
        return rid

    def cancel(self, rid: str) -> None:
        assert not isinstance(self.stand.apply(["cancel", self.now, rid]), Rejected)
        del self.booked[rid]

    def open(self, at: int, n: int) -> int:
        return spots_open(self.floor, self.taken(), at, n, self.turns)

    def grid(self, slots: list[int]) -> dict[tuple[int, int], tuple[int, int]]:
        return day_grid(self.floor, self.taken(), slots, SIZES, self.turns)


def units_of(floor: FloorPlan) -> list[str]:
    return [t.id for t in floor.tables] + [c.id for c in floor.combos]


history = st.lists(st.tuples(st.sampled_from(SLOTS), st.integers(1, 10)), max_size=15)


@st.composite
def live_days(draw: st.DrawFn) -> tuple[LiveDay, list[int]]:
    floor = draw(floors())
    now = draw(st.sampled_from([-60, 0, 30, 95, 180]))
    day = LiveDay(floor, draw(turn_tables()), now)
    for unit in draw(st.lists(st.sampled_from(units_of(floor)), max_size=4, unique=True)):
        day.sit(unit, draw(st.integers(max(now - 200, -60), now)), draw(st.integers(1, 10)))
    future = [s for s in SLOTS if s > now]
    for at, n in draw(history):
        if at > now:
            day.book(at, n)
    return day, future


@settings(max_examples=250, deadline=None)
@given(live_days(), st.data())
def test_k_open_spots_take_exactly_k_bookings_with_turns_and_a_live_floor(
    live: tuple[LiveDay, list[int]], data: st.DataObject
) -> None:
    day, future = live
    if not future:
        return
    at = data.draw(st.sampled_from(future))
    n = data.draw(st.integers(1, 10))
    k = day.open(at, n)
    for _ in range(k):
        assert day.book(at, n) is not None
    assert choose_unit(day.floor, day.taken(), at, n, day.turns) is None
    assert day.open(at, n) == 0


@settings(max_examples=150, deadline=None)
@given(live_days(), st.data())
def test_a_booking_never_raises_availability_and_a_cancel_gives_it_back(
    live: tuple[LiveDay, list[int]], data: st.DataObject
) -> None:
    day, future = live
    if not future:
        return
    before = day.grid(future)
    rid = day.book(data.draw(st.sampled_from(future)), data.draw(st.integers(1, 10)))
    after = day.grid(future)
    assert all(after[cell][0] <= before[cell][0] for cell in before)
    if rid is not None:
        day.cancel(rid)
    assert day.grid(future) == before


@settings(max_examples=150, deadline=None)
@given(live_days())
def test_the_day_grid_agrees_with_spots_open_in_every_cell(live: tuple[LiveDay, list[int]]) -> None:
    day, future = live
    grid = day.grid(future)
    for at in future:
        for n in SIZES:
            assert grid[(at, n)][0] == day.open(at, n), (at, n)


@settings(max_examples=150, deadline=None)
@given(live_days(), st.data())
def test_no_booking_shares_a_table_with_a_party_whose_meal_overlaps(
    live: tuple[LiveDay, list[int]], data: st.DataObject
) -> None:
    day, future = live
    if not future:
        return
    at, n = data.draw(st.sampled_from(future)), data.draw(st.integers(1, 10))
    rid = day.book(at, n)
    if rid is None:
        return
    mine = day.booked[rid]
    for other in day.taken():
        if other is mine or not set(other.tables) & set(mine.tables):
            continue
        assert other.end <= mine.start or mine.end <= other.start, (other, mine)


def test_the_day_grid_is_the_same_whatever_its_span_cache_holds(monkeypatch) -> None:
    """`_blocked_per_turn` keeps how each (start, end, at) marks a day of given slots and
    turns. The same spans on a floor of 6 tables and one of 70 (64-bit lanes, then 128)
    must each give spots_open's answer, with the cache warm from the other floor and
    with it cleared after every second span (the bound). A Booking's empty meal (T4 at 95)
    blocks by the conflict rule only, on both paths."""
    import feed.floor.availability as availability

    turns = {n: (45, 45, 70, 70, 90, 90, 120, 120, 120, 120)[n - 1] for n in SIZES}
    small = build_floor([(f"T{i}", 2 + 2 * (i % 4)) for i in range(1, 7)], [("T1", "T2")])
    large = build_floor([(f"T{i}", 2 + 2 * (i % 4)) for i in range(1, 71)], [("T1", "T2")])
    spans = [("T1", 0, 45, 0), ("T2", 30, 120, None), ("T3", 60, 200, 60), ("T4", 95, 95, 95)]
    spans += [("T5", 150, 240, 150), ("T6", -60, 100, None)]
    for limit in (availability._SPAN_MARKS_KEPT, 2):
        monkeypatch.setattr(availability, "_SPAN_MARKS_KEPT", limit)
        for floor in (small, large, small):
            taken = [Taken((t,), s, e, at) for t, s, e, at in spans]
            grid = day_grid(floor, taken, SLOTS, SIZES, turns)
            for at in SLOTS:
                for n in SIZES:
                    assert grid[(at, n)][0] == spots_open(floor, taken, at, n, turns), (at, n)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([6, 40, 64, 70, 130]),  # tables: 64-bit lanes, then 128 and 192
    st.lists(st.sampled_from([0, 15, 30, 45, 60, 70, 90, 120]), min_size=2, max_size=6),
    st.lists(
        st.tuples(
            st.integers(0, 2**130),
            st.integers(-120, 400),
            st.integers(0, 200),
            st.one_of(st.none(), st.integers(-60, 400)),
        ),
        max_size=12,
    ),
    st.lists(st.integers(-60, 420), max_size=30, unique=True),
    st.integers(0, 2**130),
)
def test_the_packed_keys_hold_the_blocked_masks_of_every_turn(
    tables: int, turns: list[int], raw_spans: list[tuple[int, int, int, int | None]],
    minutes: list[int], keep_bits: int,
) -> None:  # fmt: skip
    """`_blocked_keys` (the export's rows with several turns) packs slot by slot what
    `_blocked_per_turn` gives turn by turn: the same masks, `keep` applied."""
    from feed.floor import availability

    all_tables = (1 << tables) - 1
    spans = [(m & all_tables, s, s + length, at) for m, s, length, at in raw_spans]
    minutes = sorted(minutes)
    ordered = sorted(set(turns))
    keep = {turn: (keep_bits >> i) & all_tables for i, turn in enumerate(ordered)}
    width = availability._lane_width(all_tables)
    by_turn = availability._blocked_per_turn(spans, minutes, turns, all_tables, keep)
    keys = availability._blocked_keys(spans, minutes, ordered, width, [keep[t] for t in ordered])
    size = width // 8
    unpacked = [
        [int.from_bytes(key[i * size : (i + 1) * size], "little") for key in keys]
        for i in range(len(ordered))
    ]
    assert unpacked == [by_turn[turn] for turn in ordered]
