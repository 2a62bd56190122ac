"""The same seating rules on other floor plans built with `build_floor` (PRODUCT.md 1 and 3)."""

import tracemalloc
from collections.abc import Callable

import pytest

from engine import FloorPlanError, Table, build_floor, run
from tests.unit.test_worked_examples import EXAMPLES


def test_the_seeds_floor_built_by_hand_gives_the_seeds_worked_examples() -> None:
    floor = build_floor(
        [("T1", 4), ("T2", 2), ("T3", 6), ("T4", 2), ("T5", 4), ("T6", 4)],
        [("T5", "T6"), ("T3", "T4"), ("T1", "T3")],
    )
    for operations, results in EXAMPLES.values():
        assert run(operations, floor=floor) == results


# -- best table -----------------------------------------------------------------------------


def test_the_best_table_is_the_one_with_fewest_seats_then_floor_plan_order() -> None:
    floor = build_floor([("Z", 4), ("X", 2), ("A", 4)])
    ops = [["walk_in", 0, "P", 2], ["walk_in", 0, "Q", 3], ["walk_in", 0, "R", 3]]
    # floor-plan order is the order given, not the alphabet: Z before A
    assert run(ops, floor=floor) == ["seated X", "seated Z", "seated A"]


def test_board_lists_tables_in_the_floor_plans_order() -> None:
    floor = build_floor([("Z", 4), ("X", 2), ("A", 4)])
    board = run([["walk_in", 0, "P", 2], ["board", 0]], floor=floor)[-1]
    assert list(board["tables"].items()) == [("Z", "free"), ("X", "P"), ("A", "free")]


def test_a_table_that_is_not_on_this_floor_is_unknown() -> None:
    floor = build_floor([("A", 4), ("B", 2)])
    assert run([["free", 0, "T1"], ["reserve", 0, "R1", "T1", 60]], floor=floor) == [
        "error: unknown table",
        "error: unknown table",
    ]


# -- per-table minimum party ----------------------------------------------------------------


def test_a_table_minimum_above_the_party_refuses_it_and_no_bigger_table_is_tried() -> None:
    # A is the best table for 2 but wants 4 or more; B would take anyone but is never tried
    # until A is taken; then B is P's best table and the next pass seats P there.
    floor = build_floor([("A", 4, 4), ("B", 6, 1)])
    ops = [["walk_in", 0, "P", 2], ["board", 0], ["walk_in", 0, "Q", 4], ["board", 0]]
    assert run(ops, floor=floor) == [
        "queued 1",
        {"tables": {"A": "free", "B": "free"}, "waiting": ["P"]},
        "seated A",
        {"tables": {"A": "Q", "B": "P"}, "waiting": []},
    ]


def test_a_table_minimum_below_the_roominess_limit_seats_a_small_party() -> None:
    floor = build_floor([("A", 6, 1), ("B", 6)])
    assert run([["walk_in", 0, "P", 1], ["walk_in", 0, "Q", 1]], floor=floor) == [
        "seated A",
        "queued 1",
    ]


def test_build_floor_accepts_table_values() -> None:
    floor = build_floor([Table("A", 4, 1), Table("B", 2)])
    assert run([["walk_in", 0, "P", 3], ["walk_in", 0, "Q", 1]], floor=floor) == [
        "seated A",
        "seated B",
    ]


# -- combinations, capacity and minimum -----------------------------------------------------


def test_the_large_threshold_is_one_more_than_the_largest_table() -> None:
    floor = build_floor([("A", 8), ("B", 4), ("C", 4)], [("B", "C")])
    # 7 and 8 fit table A; 9 is large and B+C (8 seats) cannot hold it
    ops = [["walk_in", 0, "P", 7], ["free", 1, "A"], ["walk_in", 1, "Q", 8]]
    ops += [["walk_in", 1, "G", 9]]
    assert run(ops, floor=floor) == ["seated A", [], "seated A", "queued 1"]


def test_a_party_at_the_large_threshold_never_takes_a_single_table() -> None:
    floor = build_floor([("A", 6), ("B", 4), ("C", 4)], [("B", "C")])
    assert run([["walk_in", 0, "G", 7]], floor=floor) == ["seated B+C"]
    ops = [["walk_in", 0, "X", 4], ["walk_in", 0, "G", 7], ["board", 40]]
    assert run(ops, floor=floor)[1:] == [
        "queued 1",
        {"tables": {"A": "free", "B": "X", "C": "free"}, "waiting": ["G"]},
    ]


def test_an_explicit_large_threshold_sends_smaller_parties_to_combinations() -> None:
    floor = build_floor(
        [("A", 4), ("B", 4), ("C", 2)],
        [("A", "B")],
        large_from=4,
        combo_min_party={"A+B": 4},
    )
    ops = [["walk_in", 0, "P", 4], ["walk_in", 0, "Q", 3]]
    assert run(ops, floor=floor) == ["seated A+B", "queued 1"]


def test_a_combination_capacity_and_minimum_replace_the_defaults() -> None:
    floor = build_floor(
        [("A", 4), ("B", 4), ("C", 2)],
        [("A", "B")],
        combo_capacity={"A+B": 10},
        combo_min_party={"A+B": 5},
    )
    assert run([["walk_in", 0, "G", 5]], floor=floor) == ["seated A+B"]
    assert run([["walk_in", 0, "G", 10]], floor=floor) == ["seated A+B"]


def test_a_combination_defaults_to_the_sum_of_seats_and_the_roominess_limit() -> None:
    floor = build_floor([("A", 4), ("B", 4), ("C", 2)], [("A", "B")])
    # A+B: 8 seats, so 5 is too roomy and 9 does not fit
    ops = [["walk_in", 0, "G", 5], ["walk_in", 0, "H", 9], ["walk_in", 0, "J", 6]]
    assert run(ops, floor=floor) == ["queued 1", "queued 2", "seated A+B"]


def test_combinations_with_equal_seats_go_to_the_one_listed_first() -> None:
    floor = build_floor([("A", 3), ("B", 3), ("C", 3), ("D", 3)], [("C", "D"), ("A", "B")])
    ops = [["walk_in", 0, "G", 5], ["walk_in", 0, "H", 6]]
    assert run(ops, floor=floor) == ["seated C+D", "seated A+B"]


def test_a_combination_reservation_uses_this_floors_combo_ids() -> None:
    floor = build_floor([("A", 3), ("B", 3), ("C", 4)], [("A", "B")])
    ops = [["reserve", 0, "R1", "A+B", 60], ["reserve", 0, "R2", "B+A", 90], ["board", 45]]
    assert run(ops, floor=floor) == [
        True,
        "error: unknown table",
        {"tables": {"A": "held:R1", "B": "held:R1", "C": "free"}, "waiting": []},
    ]


# -- claims on another floor ----------------------------------------------------------------

CLAIM_FLOOR = build_floor([("A", 3), ("B", 3), ("C", 4)], [("A", "B")])  # large from 5
CLAIM_FILL = [["walk_in", 0, "X", 3], ["walk_in", 0, "Y", 3], ["walk_in", 0, "Z", 4]]


def test_a_large_party_claims_its_pair_on_another_floor() -> None:
    ops = [*CLAIM_FILL, ["walk_in", 0, "G", 6], ["walk_in", 0, "I", 2], ["free", 20, "A"]]
    assert run(ops, floor=CLAIM_FLOOR)[-1] == []


def test_a_large_party_waiting_under_twenty_minutes_claims_nothing_on_another_floor() -> None:
    ops = [*CLAIM_FILL, ["walk_in", 0, "G", 6], ["walk_in", 0, "I", 2], ["free", 19, "A"]]
    assert run(ops, floor=CLAIM_FLOOR)[-1] == ["I@A"]


# -- quotes: classes are this floor's distinct table sizes ----------------------------------

QUOTE_FLOOR = build_floor([("A", 3), ("B", 3), ("C", 5)], dwell_minutes={3: 30, 5: 60})
QUOTE_FILL = [["walk_in", 0, "X", 3], ["walk_in", 0, "Y", 3], ["walk_in", 0, "Z", 5]]


def test_a_quote_uses_the_smallest_table_size_that_fits_as_its_class() -> None:
    # P (2) waits in class 3: ceil(30 * 2 / 2) = 30; class 5 has nobody waiting: 60
    ops = [*QUOTE_FILL, ["walk_in", 1, "P", 2], ["quote", 2, 1], ["quote", 2, 3]]
    ops += [["quote", 2, 4], ["quote", 2, 5]]
    assert run(ops, floor=QUOTE_FLOOR)[-5:] == ["queued 1", 30, 30, 60, 60]


def test_a_quote_rounds_up_on_another_floor() -> None:
    # two waiting in class 3 and a new one: ceil(30 * 3 / 2) = 45
    ops = [*QUOTE_FILL, ["walk_in", 1, "P", 2], ["walk_in", 1, "Q", 3], ["quote", 2, 1]]
    assert run(ops, floor=QUOTE_FLOOR)[-1] == 45


def test_a_quote_is_zero_when_a_table_of_this_floor_is_free() -> None:
    assert run([["walk_in", 0, "X", 3], ["quote", 0, 3]], floor=QUOTE_FLOOR) == ["seated A", 0]


def test_a_huge_table_costs_the_floor_no_entry_per_seat() -> None:
    # A dict with an entry per party size up to the largest table hung `serve` on a file
    # with seats = 10**18; memory is the deterministic measure of that loop.
    tracemalloc.start()
    try:
        build_floor([("A", 10**6), ("B", 2)], [("A", "B")])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_quote_classes_on_a_floor_with_a_huge_table_are_the_smallest_table_that_fits() -> None:
    floor = build_floor([("A", 10**18), ("B", 2), ("C", 4)], max_party=10**18)
    assert [floor.quote_class(n) for n in (0, 1, 2, 3, 4, 5, 10**9, 10**18, 10**18 + 1)] == [
        None,
        2,
        2,
        4,
        4,
        10**18,
        10**18,
        10**18,
        None,
    ]
    ops = [["walk_in", 0, "P", 10**9], ["quote", 1, 5], ["walk_in", 2, "Q", 3]]
    assert run(ops, floor=floor) == ["queued 1", 120, "seated C"]


# -- bad floor plans ------------------------------------------------------------------------

BAD_FLOORS: dict[str, Callable[[], object]] = {
    "no tables": lambda: build_floor([]),
    "duplicate table": lambda: build_floor([("A", 4), ("A", 2)]),
    "empty table id": lambda: build_floor([("", 4)]),
    "plus in table id": lambda: build_floor([("A+B", 4)]),
    "zero seats": lambda: build_floor([("A", 0)]),
    "negative seats": lambda: build_floor([("A", -2)]),
    "boolean seats": lambda: build_floor([("A", True)]),
    "string seats": lambda: build_floor([("A", "4")]),  # type: ignore[list-item]
    "min party zero": lambda: build_floor([("A", 4, 0)]),
    "min party above seats": lambda: build_floor([("A", 4, 5)]),
    "combo of unknown table": lambda: build_floor([("A", 4)], [("A", "B")]),
    "combo of one table twice": lambda: build_floor([("A", 4)], [("A", "A")]),
    "combo of three tables": lambda: build_floor([("A", 4), ("B", 4), ("C", 4)], [("A", "B", "C")]),
    "combo listed twice": lambda: build_floor([("A", 4), ("B", 4)], [("A", "B"), ("A", "B")]),
    "combo minimum above capacity": lambda: build_floor(
        [("A", 4), ("B", 4)], [("A", "B")], combo_min_party={"A+B": 9}
    ),
    "combo capacity zero": lambda: build_floor(
        [("A", 4), ("B", 4)], [("A", "B")], combo_capacity={"A+B": 0}
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FLOORS))
def test_a_floor_plan_the_rules_cannot_run_on_raises_floor_plan_error(case: str) -> None:
    with pytest.raises(FloorPlanError):
        BAD_FLOORS[case]()


def test_floor_plan_error_is_a_value_error() -> None:
    assert issubclass(FloorPlanError, ValueError)
