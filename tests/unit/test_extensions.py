"""PRODUCT.md section 1 extensions: combination reservations, cancel and leave."""

import pytest

from engine import run

TABLES = ("T1", "T2", "T3", "T4", "T5", "T6")

FULL_ROOM = [
    ["walk_in", 0, "F1", 4], ["walk_in", 0, "F2", 2], ["walk_in", 0, "F3", 6],
    ["walk_in", 0, "F4", 2], ["walk_in", 0, "F5", 4], ["walk_in", 0, "F6", 4],
]  # fmt: skip


def tables(**occupied: str) -> dict[str, str]:
    return {t: occupied.get(t, "free") for t in TABLES}


# -- combination reservations ---------------------------------------------------------------


@pytest.mark.parametrize("combo", ["T5+T6", "T3+T4", "T1+T3"])
def test_a_combination_can_be_reserved_in_its_listed_order(combo: str) -> None:
    assert run([["reserve", 0, "R1", combo, 60]]) == [True]


@pytest.mark.parametrize("unit", ["T6+T5", "T4+T3", "T1+T2", "T5+T5", "T5+T6+T1", "T5+", "+T5"])
def test_a_pair_not_written_as_a_listed_combination_is_unknown_table(unit: str) -> None:
    assert run([["reserve", 0, "R1", unit, 60]]) == ["error: unknown table"]


def test_a_combination_reservation_holds_both_tables_on_the_board() -> None:
    ops = [["reserve", 0, "R1", "T5+T6", 60], ["board", 44], ["board", 45], ["board", 75]]
    assert run(ops)[1:] == [
        {"tables": tables(), "waiting": []},
        {"tables": tables(T5="held:R1", T6="held:R1"), "waiting": []},
        {"tables": tables(), "waiting": []},
    ]


def test_the_waitlist_may_use_neither_table_of_a_held_combination() -> None:
    ops = [["reserve", 0, "R1", "T5+T6", 60]]
    ops += [["walk_in", 50, "P", 4], ["walk_in", 50, "Q", 4], ["walk_in", 50, "S", 7]]
    # P takes T1; Q's best is then T3 (2 spare seats); S has no usable pair
    assert run(ops)[1:] == ["seated T1", "seated T3", "queued 1"]


def test_a_combination_reservation_conflicts_with_a_booking_on_either_table() -> None:
    ops = [
        ["reserve", 0, "R1", "T6", 60],
        ["reserve", 0, "R2", "T5+T6", 80],
        ["reserve", 0, "R3", "T5+T6", 90],
        ["reserve", 0, "R4", "T5", 110],
        ["reserve", 0, "R5", "T5", 120],
        ["reserve", 0, "R6", "T1+T3", 90],
    ]  # fmt: skip
    assert run(ops) == [True, "error: table conflict", True, "error: table conflict", True, True]


def test_checking_in_a_combination_seats_the_party_on_both_tables() -> None:
    ops = [["reserve", 0, "R1", "T5+T6", 60], ["check_in", 50, "R1"], ["board", 50]]
    assert run(ops)[1:] == ["seated T5+T6", {"tables": tables(T5="R1", T6="R1"), "waiting": []}]


@pytest.mark.parametrize("size", [4, 7])
def test_checking_in_a_combination_with_anyone_at_either_table_is_table_busy(size: int) -> None:
    # a party of 4 sits at T1 then T5; a party of 7 sits at T5+T6
    ops = [["walk_in", 0, "X", 4], ["walk_in", 0, "Y", size], ["reserve", 0, "R1", "T5+T6", 60]]
    ops += [["check_in", 50, "R1"], ["free", 51, "T5"], ["check_in", 52, "R1"]]
    assert run(ops)[3:] == ["error: table busy", [], "seated T5+T6"]


def test_checking_in_a_combination_with_someone_at_the_second_table_is_table_busy() -> None:
    ops = [["walk_in", 0, "X", 4], ["walk_in", 0, "Y", 4], ["walk_in", 0, "Z", 4]]
    ops += [["free", 0, "T5"], ["reserve", 0, "R1", "T5+T6", 60], ["check_in", 50, "R1"]]
    assert run(ops)[2:] == ["seated T6", [], True, "error: table busy"]


@pytest.mark.parametrize("table", ["T5", "T6"])
def test_freeing_either_table_of_a_checked_in_combination_frees_both(table: str) -> None:
    ops = [["reserve", 0, "R1", "T5+T6", 60], ["check_in", 50, "R1"], ["free", 60, table]]
    ops += [["board", 60], ["free", 60, "T5"], ["free", 60, "T6"]]
    assert run(ops)[2:] == [
        [],
        {"tables": tables(), "waiting": []},
        "error: table not occupied",
        "error: table not occupied",
    ]


def test_a_checked_in_combination_party_is_freed_and_its_pair_reused() -> None:
    ops = [
        ["reserve", 0, "R1", "T5+T6", 60],
        ["walk_in", 50, "G", 8],   # T5+T6 held; T3+T4 is free
        ["walk_in", 50, "H", 8],   # no usable pair left
        ["check_in", 50, "R1"],
        ["free", 70, "T5"],        # frees T5 and T6: H sits there
    ]  # fmt: skip
    assert run(ops)[1:] == ["seated T3+T4", "queued 1", "seated T5+T6", ["H@T5+T6"]]


# -- cancel ---------------------------------------------------------------------------------


def test_cancel_ends_the_hold_and_the_pass_seats_the_queue() -> None:
    ops = [
        *FULL_ROOM,
        ["reserve", 0, "R1", "T1", 30],
        ["free", 20, "T1"],   # held: nobody sits
        ["walk_in", 21, "P", 3],
        ["cancel", 22, "R1"],
        ["board", 22],
    ]  # fmt: skip
    assert run(ops)[-4:] == [
        [],
        "queued 1",
        ["P@T1"],
        {"tables": tables(T1="P", T2="F2", T3="F3", T4="F4", T5="F5", T6="F6"), "waiting": []},
    ]


def test_cancel_with_nobody_to_seat_returns_an_empty_list() -> None:
    assert run([["reserve", 0, "R1", "T1", 30], ["cancel", 1, "R1"]]) == [True, []]


def test_a_cancelled_reservation_no_longer_holds_its_table() -> None:
    ops = [["reserve", 0, "R1", "T1", 30], ["cancel", 1, "R1"], ["board", 20]]
    assert run(ops)[-1] == {"tables": tables(), "waiting": []}


def test_a_cancelled_reservation_no_longer_conflicts() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["cancel", 1, "R1"], ["reserve", 2, "R2", "T3", 70]]
    assert run(ops) == [True, [], True]


def test_cancelling_a_combination_frees_both_tables_for_a_large_party() -> None:
    ops = [
        ["walk_in", 0, "X", 8],  # T5+T6
        ["reserve", 0, "R1", "T3+T4", 40],
        ["walk_in", 30, "G", 7],  # T3+T4 held, T1+T3 too: T3 is held
        ["cancel", 31, "R1"],
    ]  # fmt: skip
    assert run(ops)[2:] == ["queued 1", ["G@T3+T4"]]


def test_cancel_lists_parties_seated_by_its_start_pass_too() -> None:
    ops = [["walk_in", 0, "A", 2], ["walk_in", 0, "B", 2], ["walk_in", 0, "P", 1]]
    ops += [["reserve", 0, "R1", "T3", 100], ["cancel", 30, "R1"]]
    assert run(ops)[-1] == ["P@T1"]


def test_cancelling_an_unknown_id_is_unknown_reservation() -> None:
    assert run([["cancel", 0, "R1"]]) == ["error: unknown reservation"]


def test_cancelling_a_walk_in_is_unknown_reservation() -> None:
    assert run([["walk_in", 0, "P", 2], ["cancel", 1, "P"]])[-1] == "error: unknown reservation"


@pytest.mark.parametrize(
    "before",
    [
        [["cancel", 1, "R1"]],  # already cancelled
        [["check_in", 50, "R1"]],  # checked in
        [["board", 75]],  # no-show
    ],
)
def test_cancelling_a_reservation_no_longer_booked_is_not_active(before: list[object]) -> None:
    ops = [["reserve", 0, "R1", "T1", 60], *before, ["cancel", 80, "R1"]]
    assert run(ops)[-1] == "error: reservation not active"


def test_a_cancelled_reservation_cannot_check_in() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["cancel", 1, "R1"], ["check_in", 50, "R1"]]
    assert run(ops)[-1] == "error: reservation not active"


def test_a_cancelled_reservation_id_is_never_reused() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["cancel", 1, "R1"], ["reserve", 2, "R1", "T1", 60]]
    assert run(ops)[-1] == "error: party exists"


# -- leave ----------------------------------------------------------------------------------


def test_a_waiting_party_that_leaves_is_off_the_queue() -> None:
    ops = [*FULL_ROOM, ["walk_in", 1, "P", 2], ["walk_in", 1, "Q", 2], ["leave", 2, "P"]]
    ops += [["board", 2], ["walk_in", 3, "S", 2]]
    results = run(ops)
    assert results[-3] == []
    assert results[-2]["waiting"] == ["Q"]
    assert results[-1] == "queued 2"


def test_a_leaving_claimer_lets_the_party_behind_it_sit() -> None:
    ops = [*FULL_ROOM, ["walk_in", 0, "G", 8], ["walk_in", 0, "I", 3], ["free", 20, "T6"]]
    ops += [["leave", 21, "G"]]
    assert run(ops)[-2:] == [[], ["I@T6"]]


def test_a_party_seated_by_the_start_pass_can_no_longer_leave() -> None:
    ops = [["walk_in", 0, "A", 2], ["walk_in", 0, "B", 2], ["walk_in", 0, "P", 1]]
    ops += [["walk_in", 0, "Q", 1], ["leave", 30, "Q"]]
    # the start pass at 30 seats P at T1 and Q at T5 before Q could leave
    assert run(ops)[-1] == "error: not waiting"


def test_leave_returns_parties_seated_by_its_start_pass() -> None:
    ops = [["walk_in", 0, "A", 2], ["walk_in", 0, "B", 2], ["walk_in", 0, "G", 6]]
    ops += [["walk_in", 0, "P", 1], ["walk_in", 0, "Q", 5], ["leave", 30, "Q"]]
    # at 30 P takes T1; Q (5) has no table (T3 is taken) and leaves
    assert run(ops)[-1] == ["P@T1"]


def test_leave_for_an_unknown_id_is_unknown_party() -> None:
    assert run([["walk_in", 0, "P", 2], ["leave", 1, "Q"]])[-1] == "error: unknown party"


@pytest.mark.parametrize(
    "before",
    [
        [],  # seated
        [["free", 5, "T2"]],  # seated and gone
    ],
)
def test_leave_for_a_party_not_in_the_queue_is_not_waiting(before: list[object]) -> None:
    ops = [["walk_in", 0, "P", 2], *before, ["leave", 10, "P"]]
    assert run(ops)[-1] == "error: not waiting"


def test_leaving_twice_is_not_waiting() -> None:
    ops = [*FULL_ROOM, ["walk_in", 1, "P", 2], ["leave", 2, "P"], ["leave", 3, "P"]]
    assert run(ops)[-2:] == [[], "error: not waiting"]


def test_a_checked_in_reservation_is_not_waiting() -> None:
    ops = [["reserve", 0, "R1", "T1", 60], ["check_in", 50, "R1"], ["leave", 51, "R1"]]
    assert run(ops)[-1] == "error: not waiting"


def test_a_party_that_left_keeps_its_id() -> None:
    ops = [*FULL_ROOM, ["walk_in", 1, "P", 2], ["leave", 2, "P"], ["walk_in", 3, "P", 2]]
    assert run(ops)[-1] == "error: party exists"
