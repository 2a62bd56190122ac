"""PRODUCT.md section 1 extensions in the host's hand: seat, move, arrive, and the floor
option protect_reservations. One test per rule and per error code."""

from typing import Any

import pytest

from engine import HostStand, build_floor, config, run

TABLES = ("T1", "T2", "T3", "T4", "T5", "T6")
PROTECTED = build_floor(
    config.TABLES, config.COMBOS, dwell_minutes=config.DWELL_MINUTES, protect_reservations=True
)

FULL_ROOM = [
    ["walk_in", 0, "F1", 4], ["walk_in", 0, "F2", 2], ["walk_in", 0, "F3", 6],
    ["walk_in", 0, "F4", 2], ["walk_in", 0, "F5", 4], ["walk_in", 0, "F6", 4],
]  # fmt: skip


def tables(**occupied: str) -> dict[str, str]:
    return {t: occupied.get(t, "free") for t in TABLES}


def last(ops: list[Any], floor: Any = None) -> Any:
    return (run(ops) if floor is None else run(ops, floor=floor))[-1]


# -- seat -----------------------------------------------------------------------------------


def test_the_host_seats_a_waiting_party_at_a_table_too_roomy_for_the_pass() -> None:
    ops = [*FULL_ROOM, ["walk_in", 1, "P", 2], ["free", 2, "T3"], ["seat", 3, "P", "T3"]]
    ops += [["board", 3]]
    assert run(ops)[-3:] == [
        [],  # 4 spare seats: the pass leaves P waiting
        ["P@T3"],
        {"tables": tables(T1="F1", T2="F2", T3="P", T4="F4", T5="F5", T6="F6"), "waiting": []},
    ]


def test_the_host_seats_a_waiting_party_at_a_held_table() -> None:
    ops = [*FULL_ROOM, ["reserve", 0, "R1", "T1", 60], ["walk_in", 1, "P", 4]]
    ops += [["free", 50, "T1"], ["seat", 50, "P", "T1"]]
    assert run(ops)[-2:] == [[], ["P@T1"]]


def test_the_host_seats_a_party_on_a_pair_another_party_claims() -> None:
    ops = [*FULL_ROOM, ["walk_in", 0, "G", 8], ["walk_in", 0, "I", 3]]
    ops += [["free", 20, "T6"], ["seat", 21, "I", "T6"]]
    assert run(ops)[-2:] == [[], ["I@T6"]]  # G claims T5+T6 at 20


def test_the_host_may_put_a_party_of_any_size_on_a_combination() -> None:
    ops = [*FULL_ROOM, ["walk_in", 0, "P", 1], ["free", 1, "T5"], ["free", 1, "T6"]]
    assert run([*ops, ["seat", 1, "P", "T5+T6"]])[-3:] == [[], [], ["P@T5+T6"]]


def test_seating_a_reservation_checks_it_in_where_it_sits() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["seat", 10, "R1", "T5"], ["board", 50]]
    ops += [["check_in", 50, "R1"], ["free", 60, "T5"], ["board", 60]]
    assert run(ops)[1:] == [
        ["R1@T5"],  # no "too early" for the host
        {"tables": tables(T5="R1"), "waiting": []},  # its hold on T1 has ended
        "error: reservation not active",
        [],
        {"tables": tables(), "waiting": []},
    ]


def test_the_host_seats_an_arrived_reservation_after_its_no_show_minute() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["arrive", 50, "R1"], ["seat", 90, "R1", "T1"]]
    assert run(ops)[1:] == [True, ["R1@T1"]]


def test_a_reservation_is_never_too_small_for_a_table() -> None:
    assert run([["reserve", 0, "R1", "T3", 60], ["seat", 1, "R1", "T2"]])[-1] == ["R1@T2"]


def test_seat_runs_the_pass_again_so_a_lifted_claim_seats_others() -> None:
    ops = [*FULL_ROOM, ["reserve", 0, "R1", "T4", 40], ["walk_in", 0, "G", 8]]
    ops += [["walk_in", 0, "I", 3], ["free", 20, "T6"], ["free", 26, "T4"], ["free", 26, "T3"]]
    ops += [["seat", 26, "G", "T3+T4"]]
    # G claims T5+T6 and keeps I off T6; T4 is held by R1, so only the host can seat G
    assert run(ops)[-4:] == [[], [], [], ["G@T3+T4", "I@T6"]]


def test_seat_lists_who_the_start_pass_seated_before_its_own_party() -> None:
    ops = [["walk_in", 0, "A", 2], ["walk_in", 0, "B", 2], ["walk_in", 0, "P", 1]]
    ops += [["walk_in", 0, "X", 6], ["walk_in", 0, "Q", 5], ["seat", 30, "Q", "T5+T6"]]
    assert run(ops)[-1] == ["P@T1", "Q@T5+T6"]  # P has waited 30 minutes by then


@pytest.mark.parametrize(
    "operation",
    [["seat", 1, "", "T1"], ["seat", 1, "P", ""], ["seat", 1, 5, "T1"], ["seat", 1, "P", None]],
)
def test_seat_with_an_id_or_unit_not_a_non_empty_string_is_invalid_arguments(
    operation: list[Any],
) -> None:
    assert last([*FULL_ROOM, ["walk_in", 1, "P", 2], operation]) == "error: invalid arguments"


@pytest.mark.parametrize("unit", ["T9", "T6+T5", "T1+T2", "t1"])
def test_seat_at_a_unit_neither_a_table_nor_a_combination_is_unknown_table(unit: str) -> None:
    assert last([["seat", 0, "NOBODY", unit]]) == "error: unknown table"  # before the id


def test_seat_for_an_unknown_id_is_unknown_party() -> None:
    assert last([["walk_in", 0, "P", 2], ["seat", 1, "Q", "T1"]]) == "error: unknown party"


@pytest.mark.parametrize(
    "before",
    [
        [["walk_in", 0, "X", 2]],  # seated walk-in
        [["walk_in", 0, "X", 2], ["free", 1, "T2"]],  # gone
        [*FULL_ROOM, ["walk_in", 0, "X", 2], ["leave", 1, "X"]],  # left the queue
        [["reserve", 0, "X", "T1", 60], ["check_in", 50, "X"]],  # checked in
        [["reserve", 0, "X", "T1", 60], ["board", 75]],  # no-show
        [["reserve", 0, "X", "T1", 60], ["cancel", 1, "X"]],  # cancelled
    ],
)
def test_seat_for_an_id_neither_waiting_nor_still_booked_is_not_waiting(
    before: list[Any],
) -> None:
    assert last([*before, ["free", 80, "T5"], ["seat", 80, "X", "T5"]]) == "error: not waiting"


@pytest.mark.parametrize(("size", "unit"), [(3, "T2"), (5, "T1"), (9, "T5+T6"), (7, "T3")])
def test_seating_a_walk_in_larger_than_the_unit_is_table_too_small(size: int, unit: str) -> None:
    # checked before whether anyone sits there
    assert last([*FULL_ROOM, ["walk_in", 0, "P", size], ["seat", 1, "P", unit]]) == (
        "error: table too small"
    )


@pytest.mark.parametrize("unit", ["T2", "T5+T6", "T1+T3"])
def test_seating_where_someone_sits_at_a_table_of_the_unit_is_table_busy(unit: str) -> None:
    ops = [*FULL_ROOM, ["walk_in", 0, "P", 1], ["free", 1, "T5"], ["free", 1, "T1"]]
    assert last([*ops, ["seat", 1, "P", unit]]) == "error: table busy"


def test_a_failed_seat_changes_nothing() -> None:
    ops = [*FULL_ROOM, ["walk_in", 0, "P", 2], ["seat", 1, "P", "T1"], ["board", 1]]
    assert run(ops)[-2:] == [
        "error: table busy",
        {"tables": tables(T1="F1", T2="F2", T3="F3", T4="F4", T5="F5", T6="F6"), "waiting": ["P"]},
    ]


# -- move -----------------------------------------------------------------------------------


def test_a_moved_party_sits_at_its_new_unit_and_leaves_its_tables_free() -> None:
    ops = [["walk_in", 0, "P", 2], ["move", 5, "P", "T1"], ["board", 5], ["free", 6, "T1"]]
    assert run(ops)[1:] == [[], {"tables": tables(T1="P"), "waiting": []}, []]


def test_move_runs_the_pass_and_lists_who_sat_but_not_the_moved_party() -> None:
    ops = [["walk_in", 0, "A", 2], ["walk_in", 0, "B", 2], ["walk_in", 0, "Q", 1]]
    assert run([*ops, ["move", 1, "A", "T3"]])[-1] == ["Q@T2"]


def test_a_moved_party_keeps_the_minute_it_first_sat() -> None:
    stand = HostStand()
    for op in [["walk_in", 3, "P", 2], ["move", 40, "P", "T1"]]:
        stand.apply(op)
    [sitting] = stand.sittings()
    assert (sitting.party_id, sitting.tables, sitting.seated_at, sitting.size) == (
        "P",
        ("T1",),
        3,
        2,
    )


def test_a_combined_party_moved_to_one_table_frees_the_other() -> None:
    ops = [["reserve", 0, "R1", "T5+T6", 60], ["check_in", 50, "R1"], ["move", 51, "R1", "T5"]]
    assert run([*ops, ["board", 51]])[-2:] == [[], {"tables": tables(T5="R1"), "waiting": []}]


def test_moving_a_party_to_the_unit_it_has_changes_nothing_but_the_pass_runs() -> None:
    ops = [["walk_in", 0, "A", 2], ["walk_in", 0, "B", 2], ["walk_in", 0, "P", 1]]
    ops += [["move", 30, "A", "T2"], ["board", 30]]
    assert run(ops)[-2:] == [["P@T1"], {"tables": tables(T1="P", T2="A", T4="B"), "waiting": []}]


def test_the_host_may_move_a_party_onto_a_held_table() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["walk_in", 50, "P", 4], ["move", 50, "P", "T1"]]
    assert run(ops)[1:] == ["seated T5", []]


def test_a_party_may_move_to_a_pair_that_includes_its_own_table() -> None:
    ops = [["walk_in", 0, "A", 4], ["walk_in", 0, "P", 4], ["move", 1, "P", "T5+T6"]]
    assert run([*ops, ["board", 1]])[-2:] == [
        [],
        {"tables": tables(T1="A", T5="P", T6="P"), "waiting": []},
    ]


@pytest.mark.parametrize(
    "operation", [["move", 1, "", "T1"], ["move", 1, "P", ""], ["move", 1, None, "T1"]]
)
def test_move_with_an_id_or_unit_not_a_non_empty_string_is_invalid_arguments(
    operation: list[Any],
) -> None:
    assert last([["walk_in", 0, "P", 2], operation]) == "error: invalid arguments"


def test_move_to_an_unknown_unit_is_unknown_table() -> None:
    assert last([["walk_in", 0, "P", 2], ["move", 1, "P", "T4+T3"]]) == "error: unknown table"


@pytest.mark.parametrize(
    "before",
    [[], [["reserve", 0, "R1", "T1", 60]]],  # a reservation never checked in
)
def test_move_for_an_id_that_is_no_party_is_unknown_party(before: list[Any]) -> None:
    assert last([*before, ["move", 1, "R1", "T2"]]) == "error: unknown party"


@pytest.mark.parametrize(
    "before",
    [
        [*FULL_ROOM, ["walk_in", 0, "P", 2]],  # waiting
        [["walk_in", 0, "P", 2], ["free", 1, "T2"]],  # gone
        [*FULL_ROOM, ["walk_in", 0, "P", 2], ["leave", 1, "P"]],  # left
    ],
)
def test_moving_a_party_that_is_not_sitting_is_not_seated(before: list[Any]) -> None:
    assert last([*before, ["free", 2, "T3"], ["move", 2, "P", "T3"]]) == "error: not seated"


def test_moving_a_walk_in_to_a_unit_smaller_than_it_is_table_too_small() -> None:
    assert last([["walk_in", 0, "P", 4], ["move", 1, "P", "T2"]]) == "error: table too small"


def test_moving_to_a_unit_where_another_party_sits_is_table_busy() -> None:
    ops = [["walk_in", 0, "A", 4], ["walk_in", 0, "P", 4], ["move", 1, "P", "T1+T3"]]
    assert last(ops) == "error: table busy"


# -- arrive ---------------------------------------------------------------------------------


def test_an_arrived_reservation_never_becomes_a_no_show() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["arrive", 50, "R1"], ["board", 200]]
    ops += [["check_in", 200, "R1"]]
    assert run(ops)[1:] == [True, {"tables": tables(T1="held:R1"), "waiting": []}, "seated T1"]


def test_arrive_twice_is_true_again() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["arrive", 50, "R1"], ["arrive", 51, "R1"]]
    assert run(ops)[1:] == [True, True]


def test_an_arrived_reservation_still_holds_only_from_its_time_minus_15() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["arrive", 10, "R1"], ["board", 44], ["board", 45]]
    assert run(ops)[1:] == [
        True,  # no "too early" for arrive
        {"tables": tables(), "waiting": []},
        {"tables": tables(T1="held:R1"), "waiting": []},
    ]


def test_an_arrived_reservation_holds_its_table_until_it_is_cancelled() -> None:
    ops = [["reserve", 0, "R1", "T2", 60], ["arrive", 50, "R1"], ["walk_in", 100, "P", 1]]
    ops += [["walk_in", 100, "Q", 1], ["cancel", 101, "R1"]]  # T1 is too roomy for Q
    assert run(ops)[2:] == ["seated T4", "queued 1", ["Q@T2"]]


def test_where_two_holds_meet_the_board_shows_the_earlier_reservation() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["reserve", 0, "R2", "T1", 90], ["arrive", 50, "R1"]]
    ops += [["board", 80], ["cancel", 81, "R1"], ["board", 81]]
    assert run(ops)[3:] == [
        {"tables": tables(T1="held:R1"), "waiting": []},
        [],
        {"tables": tables(T1="held:R2"), "waiting": []},
    ]


def test_arrive_with_an_id_not_a_non_empty_string_is_invalid_arguments() -> None:
    assert run([["arrive", 0, ""], ["arrive", 0, 7]]) == ["error: invalid arguments"] * 2


@pytest.mark.parametrize("before", [[], [["walk_in", 0, "R1", 2]]])
def test_arrive_for_an_id_that_is_no_reservation_is_unknown_reservation(before: list[Any]) -> None:
    assert last([*before, ["arrive", 1, "R1"]]) == "error: unknown reservation"


@pytest.mark.parametrize(
    "before",
    [
        [["check_in", 50, "R1"]],
        [["cancel", 1, "R1"]],
        [["board", 75]],  # a no-show
        [],  # arrive at 75 itself: expiry runs first
    ],
)
def test_arrive_for_a_reservation_no_longer_booked_is_not_active(before: list[Any]) -> None:
    ops = [["reserve", 0, "R1", "T1", 60], *before, ["arrive", 75, "R1"]]
    assert last(ops) == "error: reservation not active"


# -- protect_reservations -------------------------------------------------------------------

BOOKED_T2 = [["reserve", 0, "R1", "T2", 60]]


def test_protection_is_off_on_the_seeds_floor() -> None:
    assert last([*BOOKED_T2, ["walk_in", 20, "P", 2]]) == "seated T2"


def test_the_waitlist_does_not_give_a_table_booked_before_the_partys_turn_is_over() -> None:
    # P would be done at 20 + 45 = 65, after R1's 60: it gets the next best table
    assert last([*BOOKED_T2, ["walk_in", 20, "P", 2]], PROTECTED) == "seated T4"


def test_a_table_is_usable_when_the_turn_ends_exactly_at_the_booking() -> None:
    assert last([*BOOKED_T2, ["walk_in", 15, "P", 2]], PROTECTED) == "seated T2"


def test_the_roominess_limit_applies_to_the_best_table_among_the_usable_ones() -> None:
    ops = [*BOOKED_T2, ["reserve", 0, "R2", "T4", 60], ["walk_in", 20, "P", 1]]
    assert last(ops) == "seated T2"
    assert last(ops, PROTECTED) == "queued 1"  # best usable is T1: 3 spare seats


def test_a_30_minute_wait_does_not_lift_protection_and_protection_is_no_hold() -> None:
    ops = [*FULL_ROOM, ["reserve", 0, "R1", "T2", 100], ["walk_in", 0, "P", 2]]
    ops += [["free", 60, "T2"], ["board", 60]]
    assert run(ops, floor=PROTECTED)[-2:] == [
        [],
        {"tables": tables(T1="F1", T3="F3", T4="F4", T5="F5", T6="F6"), "waiting": ["P"]},
    ]


def test_a_large_party_is_kept_off_a_pair_booked_before_the_large_turn_is_over() -> None:
    ops = [["reserve", 0, "R1", "T6", 100], ["walk_in", 0, "G", 8]]
    assert last(ops) == "seated T5+T6"
    assert last(ops, PROTECTED) == "seated T3+T4"  # done at 120, after R1's 100


def test_the_large_turn_is_the_floors() -> None:
    floor = build_floor(
        config.TABLES, config.COMBOS, large_turn_minutes=90, protect_reservations=True
    )
    assert last([["reserve", 0, "R1", "T6", 100], ["walk_in", 0, "G", 8]], floor) == "seated T5+T6"


def test_protection_does_not_change_which_pair_a_large_party_claims() -> None:
    ops = [*FULL_ROOM, ["reserve", 0, "R1", "T6", 200], ["walk_in", 0, "G", 8]]
    ops += [["walk_in", 80, "I", 3], ["free", 100, "T6"]]
    # G claims T5+T6 though it could not sit there before R1; I (waited 20) stays off T6
    assert last(ops, PROTECTED) == []


def test_a_cancelled_reservation_no_longer_protects_its_table() -> None:
    ops = [*FULL_ROOM, *BOOKED_T2, ["walk_in", 1, "P", 2], ["free", 20, "T2"]]
    assert run([*ops, ["cancel", 21, "R1"]], floor=PROTECTED)[-2:] == [[], ["P@T2"]]


def test_protection_does_not_stop_the_host_seating_a_party() -> None:
    ops = [*FULL_ROOM, *BOOKED_T2, ["walk_in", 1, "P", 2], ["free", 20, "T2"]]
    assert run([*ops, ["seat", 20, "P", "T2"]], floor=PROTECTED)[-2:] == [[], ["P@T2"]]


def test_protection_does_not_stop_the_host_moving_a_party() -> None:
    ops = [*BOOKED_T2, ["walk_in", 20, "Q", 2], ["move", 21, "Q", "T2"], ["board", 21]]
    assert run(ops, floor=PROTECTED)[1:] == [
        "seated T4",
        [],
        {"tables": tables(T2="Q"), "waiting": []},
    ]


def test_a_quote_sees_protection_as_the_pass_does() -> None:
    ops = [*FULL_ROOM, *BOOKED_T2, ["free", 20, "T2"], ["quote", 20, 2]]
    assert last(ops) == 0
    assert last(ops, PROTECTED) == 23  # ceil(45 * 1 / 2)
