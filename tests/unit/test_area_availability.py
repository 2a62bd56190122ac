"""Availability per seating area (issue #14): spots in an area count its units only, a
booking in an area takes one of its units, and the promise holds per area."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import FloorPlan, HostStand, Rejected, build_floor
from feed.floor.availability import (
    AreaUnits,
    Booking,
    choose_unit,
    day_grid,
    day_opens,
    spots_open,
    spots_total,
)

AT = 600
MAIN: AreaUnits = frozenset({"M1", "M2", "M3", "M1+M2"})
PATIO: AreaUnits = frozenset({"P1", "P2", "P1+P2", "P2+M3"})  # P2+M3 crosses into main


def two_rooms() -> FloorPlan:
    return build_floor(
        [("M1", 4, 3), ("M2", 4, 3), ("M3", 2), ("P1", 4, 3), ("P2", 4, 3)],
        [("M1", "M2"), ("P1", "P2"), ("P2", "M3")],
        large_from=5,
    )


def test_spots_total_of_an_area_counts_its_own_units() -> None:
    floor = two_rooms()
    assert [spots_total(floor, 4, a) for a in (MAIN, PATIO, None)] == [2, 2, 4]
    assert [spots_total(floor, 2, a) for a in (MAIN, PATIO, None)] == [1, 0, 1]
    # Large parties: main has M1+M2; patio has P1+P2 and the cross-area P2+M3 (they
    # share P2, so one at a time).
    assert [spots_total(floor, 6, a) for a in (MAIN, PATIO, None)] == [1, 1, 2]


def test_a_booking_in_an_area_takes_one_of_its_units() -> None:
    floor = two_rooms()
    assert choose_unit(floor, [], AT, 4, area=PATIO) == "P1"
    assert choose_unit(floor, [], AT, 4, area=MAIN) == "M1"
    assert choose_unit(floor, [], AT, 2, area=PATIO) is None  # no small table on the patio


def test_a_booking_in_one_area_leaves_the_others_spots_alone() -> None:
    floor = two_rooms()
    booked: list[Booking] = [(("P1",), AT)]
    assert spots_open(floor, booked, AT, 4, area=PATIO) == 1
    assert spots_open(floor, booked, AT, 4, area=MAIN) == 2
    assert spots_open(floor, booked, AT, 4) == 3


def test_a_cross_area_combo_counts_in_its_first_tables_area_and_uses_the_others_table() -> None:
    floor = two_rooms()
    booked: list[Booking] = [(("P1",), AT)]  # P1+P2 is gone: only P2+M3 seats 6 outside
    assert choose_unit(floor, booked, AT, 6, area=PATIO) == "P2+M3"
    booked.append((("P2", "M3"), AT))
    assert spots_open(floor, booked, AT, 2, area=MAIN) == 0  # M3 went with it


def test_the_day_rows_of_area_columns_agree_with_spots_open() -> None:
    floor = two_rooms()
    booked: list[Booking] = [(("M1",), AT), (("P1", "P2"), AT + 60)]
    minutes = [AT - 60, AT, AT + 30, AT + 60, AT + 90]
    columns = [(n, a) for a in (MAIN, PATIO) for n in range(1, 9)]
    rows = day_opens(floor, booked, minutes, columns)
    for minute, row in zip(minutes, rows, strict=True):
        assert row == [spots_open(floor, booked, minute, n, area=a) for n, a in columns]


# ---------------------------------------------------------------- properties

SLOTS = [60, 89, 90, 105, 119, 120, 150]


@st.composite
def floors_with_areas(draw: st.DrawFn) -> tuple[FloorPlan, list[frozenset[str]]]:
    """A random floor whose tables stand in one to three areas; a combo belongs to its
    first table's area, and may cross into another one."""
    count = draw(st.integers(2, 7))
    ids = [f"T{i}" for i in range(1, count + 1)]
    tables = []
    for t in ids:
        seats = draw(st.integers(1, 8))
        tables.append((t, seats, draw(st.one_of(st.none(), st.integers(1, seats)))))
    area_count = draw(st.integers(1, 3))
    area_of = {t: draw(st.integers(0, area_count - 1)) for t in ids}
    pairs = draw(
        st.lists(
            st.tuples(st.sampled_from(ids), st.sampled_from(ids)).filter(lambda p: p[0] != p[1]),
            max_size=8,
            unique_by=lambda p: frozenset(p),
        )
    )
    capacity = {f"{a}+{b}": draw(st.integers(6, 12)) for a, b in pairs}
    min_party = {c: draw(st.integers(2, 6)) for c in capacity}
    large_from = draw(st.one_of(st.none(), st.integers(2, 7)))
    floor = build_floor(
        tables, pairs, large_from=large_from, combo_capacity=capacity, combo_min_party=min_party
    )
    areas = [
        frozenset(
            [t for t in ids if area_of[t] == i] + [f"{a}+{b}" for a, b in pairs if area_of[a] == i]
        )
        for i in range(area_count)
    ]
    return floor, areas


class Day:
    """Bookings through choose_unit (in an area or anywhere), mirrored in the engine."""

    def __init__(self, floor: FloorPlan, areas: list[frozenset[str]]) -> None:
        self.floor, self.areas = floor, areas
        self.stand = HostStand(floor)
        self.booked: dict[str, Booking] = {}
        self.count = 0

    def units(self) -> list[Booking]:
        return list(self.booked.values())

    def area(self, i: int | None) -> AreaUnits:
        return None if i is None else self.areas[i % len(self.areas)]

    def book(self, at: int, n: int, area: AreaUnits) -> str | None:
        unit = choose_unit(self.floor, self.units(), at, n, area=area)
        if unit is None:
            return None
        assert area is None or unit in area
        self.count += 1
        rid = f"R{self.count}"
        assert self.stand.apply(["reserve", 0, rid, unit, at]) is True
        self.booked[rid] = (tuple(unit.split("+")), at)
        return unit

    def grid(self, area: AreaUnits) -> dict[tuple[int, int], tuple[int, int]]:
        return day_grid(self.floor, self.units(), SLOTS, range(1, 11), area=area)

    def play(self, history: list[tuple[str, int, int, int | None]]) -> None:
        for kind, a, b, room in history:
            if kind == "book":
                self.book(a, b, self.area(room))
            elif self.booked:
                rid = list(self.booked)[a % len(self.booked)]
                assert not isinstance(self.stand.apply(["cancel", 0, rid]), Rejected)
                del self.booked[rid]


rooms = st.one_of(st.none(), st.integers(0, 2))
steps = st.lists(
    st.one_of(
        st.tuples(st.just("book"), st.sampled_from(SLOTS), st.integers(1, 10), rooms),
        st.tuples(st.just("cancel"), st.integers(0, 50), st.just(0), st.just(None)),
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(floors_with_areas(), steps, st.sampled_from(SLOTS), st.integers(1, 10), rooms)
def test_k_open_spots_in_an_area_take_exactly_k_bookings_in_it(
    floor_areas: tuple[FloorPlan, list[frozenset[str]]],
    history: list[tuple[str, int, int, int | None]],
    at: int,
    n: int,
    room: int | None,
) -> None:
    day = Day(*floor_areas)
    day.play(history)
    area = day.area(room)
    k = spots_open(day.floor, day.units(), at, n, area=area)
    for _ in range(k):
        assert day.book(at, n, area) is not None
    assert choose_unit(day.floor, day.units(), at, n, area=area) is None
    assert spots_open(day.floor, day.units(), at, n, area=area) == 0


@settings(max_examples=200, deadline=None)
@given(floors_with_areas(), steps, st.sampled_from(SLOTS), st.integers(1, 10), st.integers(0, 2))
def test_a_booking_in_one_area_never_lowers_anothers_spots_but_through_a_shared_table(
    floor_areas: tuple[FloorPlan, list[frozenset[str]]],
    history: list[tuple[str, int, int, int | None]],
    at: int,
    n: int,
    room: int,
) -> None:
    day = Day(*floor_areas)
    day.play(history)
    mine = day.area(room)
    others = [a for a in day.areas if a != mine]
    before = [day.grid(a) for a in others]
    unit = day.book(at, n, mine)
    if unit is None:
        return
    for other, grid in zip(others, before, strict=True):
        # The tables the other area's units stand on: its own and those its cross-area
        # combos borrow. Only a booking on one of them can lower its spots.
        reach = {t for u in other for t in u.split("+")}
        if not reach & set(unit.split("+")):
            assert day.grid(other) == grid
        else:
            after = day.grid(other)
            assert all(after[c][0] <= grid[c][0] for c in grid)


@settings(max_examples=100, deadline=None)
@given(floors_with_areas(), steps)
def test_area_spots_never_exceed_the_whole_floors(
    floor_areas: tuple[FloorPlan, list[frozenset[str]]],
    history: list[tuple[str, int, int, int | None]],
) -> None:
    day = Day(*floor_areas)
    day.play(history)
    whole = day.grid(None)
    for area in day.areas:
        grid = day.grid(area)
        assert all(grid[c][0] <= whole[c][0] and grid[c][1] <= whole[c][1] for c in grid)
