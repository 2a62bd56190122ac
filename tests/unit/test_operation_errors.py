"""Every error code and the order of checks (seed "How your code is run", PRODUCT.md 1)."""

import pytest

from engine import run

UNKNOWN_OPERATION = "error: unknown operation"
INVALID_ARGUMENTS = "error: invalid arguments"

TWO_TOPS_TAKEN = [["walk_in", 0, "A", 2], ["walk_in", 0, "B", 2]]


# -- unknown operation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "operation",
    [
        "walk_in",
        ("walk_in", 0, "P", 2),
        {"name": "walk_in"},
        None,
        5,
        [],
        [5, 0],
        [None],
        [["walk_in"], 0, "P", 2],
        ["Walk_in", 0, "P", 2],
        ["sit", 0, "P"],
        ["", 0],
    ],
)
def test_an_operation_that_is_not_a_named_list_is_an_unknown_operation(
    operation: object,
) -> None:
    assert run([operation]) == [UNKNOWN_OPERATION]


def test_an_unknown_name_is_reported_before_the_number_of_arguments() -> None:
    assert run([["dance"]]) == [UNKNOWN_OPERATION]


# -- invalid arguments: the shape -----------------------------------------------------------


@pytest.mark.parametrize(
    "operation",
    [
        ["walk_in"],
        ["walk_in", 0, "P"],
        ["walk_in", 0, "P", 2, 3],
        ["board"],
        ["board", 0, 1],
        ["free", 0],
        ["reserve", 0, "R1", "T1"],
        ["check_in", 0],
        ["quote", 0, 2, 2],
        ["cancel", 0, "R1", "x"],
        ["leave", 0],
    ],
)
def test_a_wrong_number_of_arguments_is_invalid_arguments(operation: list[object]) -> None:
    assert run([operation]) == [INVALID_ARGUMENTS]


@pytest.mark.parametrize("ts", ["0", 0.0, 1.5, None, True, False, [0]])
def test_a_ts_that_is_not_an_integer_is_invalid_arguments(ts: object) -> None:
    assert run([["walk_in", ts, "P", 2]]) == [INVALID_ARGUMENTS]


def test_a_ts_lower_than_the_last_one_is_invalid_arguments() -> None:
    assert run([["board", 10], ["walk_in", 9, "P", 2]]) == [
        {"tables": {t: "free" for t in ("T1", "T2", "T3", "T4", "T5", "T6")}, "waiting": []},
        INVALID_ARGUMENTS,
    ]


def test_an_equal_ts_is_fine() -> None:
    assert run([["walk_in", 10, "P", 2], ["walk_in", 10, "Q", 2]]) == ["seated T2", "seated T4"]


def test_an_operation_that_failed_its_argument_check_still_moves_the_clock() -> None:
    ops = [["walk_in", 10, "", 2], ["walk_in", 5, "P", 2]]
    assert run(ops) == [INVALID_ARGUMENTS, INVALID_ARGUMENTS]


def test_an_operation_with_a_bad_shape_does_not_move_the_clock() -> None:
    ops = [["walk_in", 10, "P"], ["nope", 20], ["walk_in", 30.0, "P", 2], ["walk_in", 5, "P", 2]]
    assert run(ops) == [INVALID_ARGUMENTS, UNKNOWN_OPERATION, INVALID_ARGUMENTS, "seated T2"]


def test_a_rejected_ts_does_not_lower_the_clock_either() -> None:
    ops = [["walk_in", 10, "P", 2], ["walk_in", 5, "Q", 2], ["walk_in", 7, "R", 2]]
    assert run(ops) == ["seated T2", INVALID_ARGUMENTS, INVALID_ARGUMENTS]


def test_a_negative_ts_is_a_valid_minute() -> None:
    assert run([["walk_in", -30, "P", 2]]) == ["seated T2"]


# -- invalid arguments: each operation's own arguments --------------------------------------


@pytest.mark.parametrize("size", [0, 11, -1, True, False, 2.0, "2", None])
def test_a_walk_in_size_outside_one_to_ten_or_not_an_integer_is_invalid(size: object) -> None:
    assert run([["walk_in", 0, "P", size]]) == [INVALID_ARGUMENTS]


@pytest.mark.parametrize(("size", "result"), [(1, "seated T2"), (10, "seated T1+T3")])
def test_walk_in_sizes_one_and_ten_are_accepted(size: int, result: str) -> None:
    assert run([["walk_in", 0, "P", size]]) == [result]


@pytest.mark.parametrize("party_id", ["", 7, None, True, ["P"]])
def test_a_walk_in_id_that_is_not_a_non_empty_string_is_invalid(party_id: object) -> None:
    assert run([["walk_in", 0, party_id, 2]]) == [INVALID_ARGUMENTS]


@pytest.mark.parametrize("table", ["", 1, None])
def test_a_free_table_id_that_is_not_a_non_empty_string_is_invalid(table: object) -> None:
    assert run([["free", 0, table]]) == [INVALID_ARGUMENTS]


@pytest.mark.parametrize(
    "args",
    [["", "T1", 60], [1, "T1", 60], ["R1", "", 60], ["R1", 1, 60], ["R1", "T1", "60"],
     ["R1", "T1", 60.0], ["R1", "T1", True], ["R1", "T1", None]],
)  # fmt: skip
def test_reserve_with_badly_typed_arguments_is_invalid(args: list[object]) -> None:
    assert run([["reserve", 0, *args]]) == [INVALID_ARGUMENTS]


def test_reserve_checks_types_before_the_table() -> None:
    assert run([["reserve", 0, "R1", "T9", "60"]]) == [INVALID_ARGUMENTS]


@pytest.mark.parametrize("name", ["check_in", "cancel", "leave"])
@pytest.mark.parametrize("bad_id", ["", 3, None])
def test_an_id_that_is_not_a_non_empty_string_is_invalid(name: str, bad_id: object) -> None:
    assert run([[name, 0, bad_id]]) == [INVALID_ARGUMENTS]


@pytest.mark.parametrize("size", [0, 11, True, 3.0, "3", None])
def test_a_quote_size_outside_one_to_ten_is_invalid(size: object) -> None:
    assert run([["quote", 0, size]]) == [INVALID_ARGUMENTS]


def test_a_bad_size_is_reported_before_a_used_id() -> None:
    assert run([["walk_in", 0, "P", 2], ["walk_in", 1, "P", 0]])[-1] == INVALID_ARGUMENTS


# -- party exists ---------------------------------------------------------------------------


def test_a_walk_in_with_a_used_id_is_party_exists() -> None:
    assert run([["walk_in", 0, "P", 2], ["walk_in", 1, "P", 2]])[-1] == "error: party exists"


def test_party_ids_are_case_sensitive() -> None:
    assert run([["walk_in", 0, "P", 2], ["walk_in", 1, "p", 2]]) == ["seated T2", "seated T4"]


def test_a_party_id_is_never_reused_after_the_party_left() -> None:
    ops = [["walk_in", 0, "P", 2], ["free", 5, "T2"], ["walk_in", 6, "P", 2]]
    assert run(ops)[-1] == "error: party exists"


def test_a_walk_in_may_not_take_a_reservation_id() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["walk_in", 1, "R1", 2]]
    assert run(ops)[-1] == "error: party exists"


def test_a_reservation_may_not_take_a_walk_in_id() -> None:
    ops = [["walk_in", 0, "P", 2], ["reserve", 1, "P", "T3", 60]]
    assert run(ops)[-1] == "error: party exists"


def test_a_no_show_reservation_id_is_never_reused() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["reserve", 80, "R1", "T3", 120]]
    assert run(ops)[-1] == "error: party exists"


def test_a_failed_operation_does_not_use_up_its_id() -> None:
    ops = [
        ["walk_in", 0, "P", 0],
        ["reserve", 0, "R1", "T3", 0],   # invalid time
        ["reserve", 0, "R2", "T3", 60],
        ["reserve", 0, "R3", "T3", 70],  # table conflict
        ["walk_in", 1, "P", 2],
        ["walk_in", 1, "R1", 2],
        ["reserve", 1, "R3", "T1", 60],
    ]  # fmt: skip
    assert run(ops) == [
        INVALID_ARGUMENTS,
        "error: invalid time",
        True,
        "error: table conflict",
        "seated T2",
        "seated T4",
        True,
    ]


# -- unknown table and table not occupied ---------------------------------------------------


@pytest.mark.parametrize("table", ["T7", "t1", "T1 "])
def test_freeing_a_table_not_on_the_floor_is_unknown_table(table: str) -> None:
    assert run([["free", 0, table]]) == ["error: unknown table"]


def test_reserving_a_table_not_on_the_floor_is_unknown_table() -> None:
    assert run([["reserve", 0, "R1", "T7", 60]]) == ["error: unknown table"]


def test_reserve_checks_the_table_before_the_id() -> None:
    ops = [["walk_in", 0, "P", 2], ["reserve", 0, "P", "T7", 60]]
    assert run(ops)[-1] == "error: unknown table"


def test_freeing_a_free_table_is_table_not_occupied() -> None:
    assert run([["free", 0, "T1"]]) == ["error: table not occupied"]


def test_freeing_a_table_that_is_only_held_is_table_not_occupied() -> None:
    ops = [["reserve", 0, "R1", "T1", 30], ["free", 20, "T1"]]
    assert run(ops)[-1] == "error: table not occupied"


# -- reserve: invalid time and table conflict -----------------------------------------------


@pytest.mark.parametrize("at", [10, 9, -5])
def test_a_reservation_not_after_now_is_invalid_time(at: int) -> None:
    assert run([["reserve", 10, "R1", "T1", at]]) == ["error: invalid time"]


def test_reserve_checks_the_id_before_the_time() -> None:
    ops = [["walk_in", 0, "P", 2], ["reserve", 10, "P", "T1", 5]]
    assert run(ops)[-1] == "error: party exists"


def test_reserve_checks_the_time_before_conflicts() -> None:
    ops = [["reserve", 0, "R1", "T1", 20], ["reserve", 10, "R2", "T1", 10]]
    assert run(ops)[-1] == "error: invalid time"


def test_a_reservation_too_close_to_a_booked_one_is_table_conflict() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["reserve", 0, "R2", "T1", 40]]
    assert run(ops)[-1] == "error: table conflict"


# -- check_in -------------------------------------------------------------------------------


def test_checking_in_an_unknown_id_is_unknown_reservation() -> None:
    assert run([["check_in", 0, "R1"]]) == ["error: unknown reservation"]


def test_checking_in_a_walk_in_is_unknown_reservation() -> None:
    assert run([["walk_in", 0, "P", 2], ["check_in", 1, "P"]])[-1] == "error: unknown reservation"


def test_checking_in_a_reservation_that_was_refused_is_unknown_reservation() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["reserve", 0, "R2", "T1", 70], ["check_in", 60, "R2"]]
    assert run(ops)[-1] == "error: unknown reservation"


def test_checking_in_a_seated_reservation_is_reservation_not_active() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["check_in", 45, "R1"], ["check_in", 46, "R1"]]
    assert run(ops)[-1] == "error: reservation not active"


def test_checking_in_before_the_hold_is_too_early_even_when_the_table_is_busy() -> None:
    ops = [["walk_in", 0, "P", 4], ["reserve", 0, "R1", "T1", 60], ["check_in", 44, "R1"]]
    assert run(ops)[-1] == "error: too early"


def test_checking_in_to_an_occupied_table_is_table_busy() -> None:
    ops = [["walk_in", 0, "P", 4], ["reserve", 0, "R1", "T1", 60], ["check_in", 45, "R1"]]
    assert run(ops)[-1] == "error: table busy"


# -- leave ----------------------------------------------------------------------------------


def test_leave_for_an_unknown_id_is_unknown_party() -> None:
    assert run([["leave", 0, "P"]]) == ["error: unknown party"]


def test_leave_for_a_seated_party_is_not_waiting() -> None:
    assert run([["walk_in", 0, "P", 2], ["leave", 1, "P"]])[-1] == "error: not waiting"


# -- a failed operation changes nothing beyond the start of the operation -------------------


def test_a_failed_operation_leaves_the_board_as_it_was() -> None:
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 5], ["walk_in", 0, "W", 6]]
    ops += [["reserve", 0, "R1", "T4", 60]]
    failures = [
        ["walk_in", 1, "Q", 0], ["walk_in", 1, "P", 2], ["free", 1, "T1"], ["free", 1, "T9"],
        ["reserve", 1, "R2", "T4", 70], ["reserve", 1, "R3", "T1", 1], ["check_in", 1, "R1"],
        ["check_in", 1, "Z"], ["quote", 1, 0], ["leave", 1, "A"], ["cancel", 1, "P"],
    ]  # fmt: skip
    tail = [["board", 50], ["walk_in", 50, "S", 2]]
    results = run([*ops, *failures, *tail])
    assert all(isinstance(r, str) and r.startswith("error: ") for r in results[-13:-2])
    assert results[-2:] == run([*ops, *tail])[-2:]
    assert results[-2]["waiting"] == ["W"]
    assert results[-1] == "seated T1"


def test_a_failed_operation_still_runs_the_start_of_operation_pass() -> None:
    # P (1) becomes eligible for T1 at 30; the failed walk_in's pass seats it,
    # so the free at the same minute has nobody left to list.
    base = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 1]]
    assert run([*base, ["free", 30, "T2"]])[-1] == ["P@T1"]
    assert run([*base, ["walk_in", 30, "X", 0], ["free", 30, "T2"]])[-2:] == [
        INVALID_ARGUMENTS,
        [],
    ]


def test_an_operation_with_a_bad_shape_runs_no_pass() -> None:
    base = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 1]]
    assert run([*base, ["walk_in", 30, "X"], ["free", 30, "T2"]])[-2:] == [
        INVALID_ARGUMENTS,
        ["P@T1"],
    ]
