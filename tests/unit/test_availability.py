"""Availability (PRODUCT.md section 3): spots per slot and party size, and the promise."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import MARLOWES, FloorPlan, HostStand, Rejected, build_floor
from feed.floor.availability import (
    Booking,
    Taken,
    bookable_tables,
    choose_unit,
    day_grid,
    day_opens,
    spots_open,
    spots_total,
)

AT = 600  # a fixed slot, minute 600 of the service day
ROUND_PAIRS = ["R1+R2", "R1+R3", "R2+R3"]


def guide_floor() -> FloorPlan:
    """The partner guide's floor: three round tables for 4-6, one for 6-8, pairs of rounds 9-10."""
    return build_floor(
        [("R1", 6, 4), ("R2", 6, 4), ("R3", 6, 4), ("L1", 8, 6)],
        [("R1", "R2"), ("R1", "R3"), ("R2", "R3")],
        combo_capacity=dict.fromkeys(ROUND_PAIRS, 10),
        combo_min_party=dict.fromkeys(ROUND_PAIRS, 9),
    )


def table_of(floor: FloorPlan, booked: list[Booking], sizes: range) -> dict[int, tuple[int, int]]:
    return {n: (spots_open(floor, booked, AT, n), spots_total(floor, n)) for n in sizes}


def test_the_guides_empty_floor_matches_its_first_table() -> None:
    assert table_of(guide_floor(), [], range(4, 11)) == {
        4: (3, 3), 5: (3, 3), 6: (4, 4), 7: (1, 1), 8: (1, 1), 9: (1, 1), 10: (1, 1),
    }  # fmt: skip


def test_one_booked_round_table_matches_the_guides_second_table() -> None:
    assert table_of(guide_floor(), [(("R1",), AT)], range(4, 11)) == {
        4: (2, 3), 5: (2, 3), 6: (3, 4), 7: (1, 1), 8: (1, 1), 9: (1, 1), 10: (1, 1),
    }  # fmt: skip


def test_a_party_of_ten_on_two_round_tables_matches_the_guides_third_table() -> None:
    assert table_of(guide_floor(), [(("R1", "R2"), AT)], range(4, 11)) == {
        4: (1, 3), 5: (1, 3), 6: (2, 4), 7: (1, 1), 8: (1, 1), 9: (0, 1), 10: (0, 1),
    }  # fmt: skip


def test_marlowes_empty_floor_offers_every_unit_for_every_size() -> None:
    expected = [2, 5, 3, 4, 1, 1, 2, 2, 1, 1]
    assert table_of(MARLOWES, [], range(1, 11)) == {
        n: (k, k) for n, k in zip(range(1, 11), expected, strict=True)
    }


def test_a_reservation_29_minutes_away_blocks_its_table() -> None:
    assert "T2" not in bookable_tables(MARLOWES, [(("T2",), AT + 29)], AT)
    assert "T2" not in bookable_tables(MARLOWES, [(("T2",), AT - 29)], AT)


def test_a_reservation_30_minutes_away_leaves_its_table_bookable() -> None:
    assert "T2" in bookable_tables(MARLOWES, [(("T2",), AT + 30)], AT)
    assert "T2" in bookable_tables(MARLOWES, [(("T2",), AT - 30)], AT)


def test_a_booked_combo_lowers_spots_for_every_size_its_tables_serve() -> None:
    before = table_of(MARLOWES, [], range(1, 11))
    after = table_of(MARLOWES, [(("T1", "T3"), AT)], range(1, 11))
    lowered = [n for n in range(1, 11) if after[n][0] < before[n][0]]
    assert lowered == [2, 3, 4, 5, 6, 7, 8, 9, 10]  # T1 serves 2-4, T3 4-6, T3+T4 7-8, T1+T3 8-10


def test_the_day_grid_agrees_with_spots_open_and_spots_total_in_every_cell() -> None:
    booked = [(("T1", "T3"), 600), (("T2",), 615), (("T5",), 660)]
    minutes = list(range(540, 720, 15))
    grid = day_grid(MARLOWES, booked, minutes, range(1, 11))
    assert grid == {
        (m, n): (spots_open(MARLOWES, booked, m, n), spots_total(MARLOWES, n))
        for m in minutes
        for n in range(1, 11)
    }


def test_a_booking_takes_the_unit_with_the_fewest_seats() -> None:
    assert choose_unit(MARLOWES, [], AT, 2) == "T2"  # not a four-top, though T1 comes first


def test_a_booking_takes_the_table_that_leaves_most_spots_for_other_sizes() -> None:
    floor = build_floor([("B", 4), ("C", 4), ("A", 4)], [("B", "C")])
    assert choose_unit(floor, [], AT, 4) == "A"  # B or C would end the 8-top combo


def test_equal_tables_go_in_floor_plan_order() -> None:
    floor = build_floor([("B", 4), ("A", 4)])
    assert choose_unit(floor, [], AT, 4) == "B"


def test_equal_combos_go_in_combos_order() -> None:
    floor = build_floor([("X", 4), ("Y", 4), ("Z", 4), ("W", 4)], [("Z", "W"), ("X", "Y")])
    assert choose_unit(floor, [], AT, 8) == "Z+W"


def test_a_booking_never_takes_a_combo_outside_every_maximum_matching() -> None:
    pairs = ["B+C", "A+B", "C+D"]
    floor = build_floor(
        [("A", 5), ("B", 4), ("C", 4), ("D", 5)],
        [("B", "C"), ("A", "B"), ("C", "D")],
        combo_min_party=dict.fromkeys(pairs, 8),
    )
    assert spots_open(floor, [], AT, 8) == 2
    assert choose_unit(floor, [], AT, 8) == "A+B"  # B+C has fewer seats but leaves no 2nd pair


def test_no_unit_is_chosen_when_no_spot_is_open() -> None:
    booked = [(("T5", "T6"), AT), (("T3", "T4"), AT + 10)]
    assert spots_open(MARLOWES, booked, AT, 7) == 0
    assert choose_unit(MARLOWES, booked, AT, 7) is None


# -- the promise, on random floors and booking histories ----------------------------------

SLOTS = [60, 89, 90, 105, 119, 120, 150]  # 29 and 30 minutes apart, overlapping windows


@st.composite
def floors(draw: st.DrawFn) -> FloorPlan:
    choice = draw(st.sampled_from(["marlowes", "guide", "random", "random", "random"]))
    if choice == "marlowes":
        return MARLOWES
    if choice == "guide":
        return guide_floor()
    count = draw(st.integers(2, 6))  # few tables: combos share them
    ids = [f"T{i}" for i in range(1, count + 1)]
    tables = []
    for t in ids:
        seats = draw(st.integers(1, 8))
        tables.append((t, seats, draw(st.one_of(st.none(), st.integers(1, seats)))))
    pairs = draw(
        st.lists(
            st.tuples(st.sampled_from(ids), st.sampled_from(ids)).filter(lambda p: p[0] != p[1]),
            max_size=8,
            unique_by=lambda p: frozenset(p),
        )
    )
    # Wide, uneven combo ranges make combos of different capacities fit one size, so
    # they compete for tables and "fewest seats" alone would pick badly.
    capacity = {f"{a}+{b}": draw(st.integers(6, 12)) for a, b in pairs}
    min_party = {c: draw(st.integers(2, 6)) for c in capacity}
    large_from = draw(st.one_of(st.none(), st.integers(2, 7)))
    return build_floor(
        tables, pairs, large_from=large_from, combo_capacity=capacity, combo_min_party=min_party
    )


# A history step: book a party of n at a slot through choose_unit, or cancel the i-th
# reservation still booked (modulo their number).
steps = st.lists(
    st.one_of(
        st.tuples(st.just("book"), st.sampled_from(SLOTS), st.integers(1, 10)),
        st.tuples(st.just("cancel"), st.integers(0, 50), st.just(0)),
    ),
    max_size=25,
)


class Day:
    """Bookings made through choose_unit, mirrored in the engine, which must accept them."""

    def __init__(self, floor: FloorPlan) -> None:
        self.floor = floor
        self.stand = HostStand(floor)
        self.booked: dict[str, Booking] = {}  # reservation id -> (tables, at)
        self.count = 0

    def units(self) -> list[Booking]:
        return list(self.booked.values())

    def book(self, at: int, n: int) -> str | None:
        unit = choose_unit(self.floor, self.units(), at, n)
        if unit is not None:
            self.count += 1
            rid = f"R{self.count}"
            assert self.stand.apply(["reserve", 0, rid, unit, at]) is True
            self.booked[rid] = (tuple(unit.split("+")), at)
            return rid
        return None

    def cancel(self, rid: str) -> None:
        assert not isinstance(self.stand.apply(["cancel", 0, rid]), Rejected)
        del self.booked[rid]

    def grid(self) -> dict[tuple[int, int], tuple[int, int]]:
        return day_grid(self.floor, self.units(), SLOTS, range(1, 11))

    def play(self, history: list[tuple[str, int, int]]) -> None:
        for kind, a, b in history:
            if kind == "book":
                self.book(a, b)
            elif self.booked:
                self.cancel(list(self.booked)[a % len(self.booked)])


@settings(max_examples=200, deadline=None)
@given(floors(), steps, st.sampled_from(SLOTS), st.integers(1, 10))
def test_k_open_spots_take_exactly_k_bookings(
    floor: FloorPlan, history: list[tuple[str, int, int]], at: int, n: int
) -> None:
    day = Day(floor)
    day.play(history)
    k = spots_open(floor, day.units(), at, n)
    for _ in range(k):
        assert day.book(at, n) is not None
    assert choose_unit(floor, day.units(), at, n) is None
    assert spots_open(floor, day.units(), at, n) == 0


@settings(max_examples=200, deadline=None)
@given(floors(), steps)
def test_a_booking_never_raises_availability_anywhere(
    floor: FloorPlan, history: list[tuple[str, int, int]]
) -> None:
    day = Day(floor)
    before = day.grid()
    for step in history:
        day.play([step])
        after = day.grid()
        if step[0] == "book":
            assert all(after[cell][0] <= before[cell][0] for cell in before)
        before = after


@settings(max_examples=200, deadline=None)
@given(floors(), steps, st.sampled_from(SLOTS), st.integers(1, 10))
def test_a_cancellation_gives_back_exactly_what_the_booking_took(
    floor: FloorPlan, history: list[tuple[str, int, int]], at: int, n: int
) -> None:
    day = Day(floor)
    day.play(history)
    before = day.grid()
    rid = day.book(at, n)
    if rid is not None:
        day.cancel(rid)
    assert day.grid() == before


def test_releasing_a_floor_forgets_its_work_but_not_its_answers() -> None:
    from engine import MARLOWES
    from feed.floor import availability

    before = [availability.spots_total(MARLOWES, n) for n in range(1, 11)]
    availability.release(MARLOWES)
    assert id(MARLOWES) not in availability._UNITS
    assert [availability.spots_total(MARLOWES, n) for n in range(1, 11)] == before


def test_a_released_floors_work_is_freed_at_once_not_left_for_the_garbage_collector() -> None:
    """An export lets go of every floor it worked out itself, restaurant by restaurant: what
    was kept for it (its rows, hundreds a restaurant) must go then, by reference counting.
    A cycle through it (a row function of a kept plan holding the floor's parts object)
    left it all for the cyclic collector, to be walked again and again until found."""
    import gc

    from feed.floor import availability

    def worked_out_now() -> int:
        return sum(isinstance(o, availability._Units) for o in gc.get_objects())

    floor = build_floor([("T1", 2), ("T2", 4), ("T3", 6), ("T4", 6)], [("T3", "T4")])
    turns = {1: 45, 2: 45, 3: 70, 4: 70, 5: 90, 6: 90, 7: 120, 8: 120, 9: 120, 10: 120, 11: 120}
    was = gc.isenabled()
    gc.disable()
    try:
        before = worked_out_now()
        # Sizes with different turns and large parties on the combo: every kind of row function.
        day_opens(floor, [Taken(("T3",), 60, 150, 60)], range(0, 240, 15), range(1, 12), turns)
        assert worked_out_now() == before + 1
        availability.release(floor)
        assert worked_out_now() == before
    finally:
        if was:
            gc.enable()


def test_two_column_sets_worked_out_at_once_on_one_floor_do_not_mix_their_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server works out the same floor's days for different columns at the same time (a
    partner's lookup on the event loop, the export on its thread: the export leaves out
    sizes no unit seats). Here the other thread's turn comes, deterministically, while
    this day is halfway through its rows: its rows must neither vanish nor be another
    column set's."""
    from feed.floor import availability

    floor = build_floor([("T1", 2), ("T2", 2), ("T3", 4), ("T4", 4), ("T5", 6)])
    partner = [(n, None) for n in range(1, 7)]
    export = [1, 2, 3, 4]
    minutes = list(range(0, 240, 15))
    first = [Taken(("T1",), 30, 30, 30)]  # a booking: the conflict rule only (no turns)
    second = [*first, Taken(("T3",), 120, 120, 120)]  # a slot or two the first had not
    expected = day_opens(build_floor(list(floor.tables)), second, minutes, export)
    availability.release(floor)
    day_opens(floor, first, minutes, export)  # the export's table holds the first day's rows
    real_row_of = availability._Units.row_of
    interleaved: list[bool] = []

    def row_of(units: Any, columns: Any) -> Any:
        if not interleaved:  # the other thread's turn: the partner's columns, another day
            interleaved.append(True)
            day_opens(floor, [Taken(("T5",), 60, 60, 60)], minutes, partner)
        return real_row_of(units, columns)

    monkeypatch.setattr(availability._Units, "row_of", row_of)
    assert day_opens(floor, second, minutes, export) == expected
    assert interleaved == [True]
