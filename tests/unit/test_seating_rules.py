"""Seed Part 1: the waitlist's seating rules, and the three host reports as regressions.

Marlowe's floor: T1 4, T2 2, T3 6, T4 2, T5 4, T6 4. By seats then floor order the
best-table ranking is T2, T4, T1, T5, T6, T3.
"""

from engine import run

TABLES = ("T1", "T2", "T3", "T4", "T5", "T6")

# Every table taken at minute 0, each by the party whose size fits it exactly.
FULL_ROOM = [
    ["walk_in", 0, "F1", 4], ["walk_in", 0, "F2", 2], ["walk_in", 0, "F3", 6],
    ["walk_in", 0, "F4", 2], ["walk_in", 0, "F5", 4], ["walk_in", 0, "F6", 4],
]  # fmt: skip

# Both 2-tops taken at minute 0; everything else free.
TWO_TOPS_TAKEN = [["walk_in", 0, "A", 2], ["walk_in", 0, "B", 2]]


def tables(**occupied: str) -> dict[str, str]:
    return {t: occupied.get(t, "free") for t in TABLES}


def board(waiting: list[str], **occupied: str) -> dict[str, object]:
    return {"tables": tables(**occupied), "waiting": waiting}


def test_full_room_fixture_seats_each_party_at_its_own_table() -> None:
    assert run(FULL_ROOM) == [
        "seated T1", "seated T2", "seated T3", "seated T4", "seated T5", "seated T6",
    ]  # fmt: skip


# -- the host reports -----------------------------------------------------------------------


def test_host_412_a_party_of_two_gets_the_free_two_top_not_the_earlier_four_top() -> None:
    # T1 (4 seats) comes first on the floor plan, but T2 has the fewest seats that fit.
    assert run([["walk_in", 0, "P", 2]]) == ["seated T2"]


def test_host_412_a_party_of_two_freed_onto_the_floor_takes_the_two_top_over_a_four_top() -> None:
    ops = [
        *TWO_TOPS_TAKEN,
        ["walk_in", 0, "C", 4], ["walk_in", 0, "D", 4], ["walk_in", 0, "E", 4],
        ["walk_in", 0, "G", 6],   # the room is full now
        ["walk_in", 1, "P", 2],   # waits
        ["free", 5, "T5"],        # a 4-top frees: P may take it (2 spare seats)
    ]  # fmt: skip
    assert run(ops)[-2:] == ["queued 1", ["P@T5"]]
    # but with a 2-top free as well, the 2-top is the best table
    ops_two_free = [*ops[:-1], ["free", 5, "T4"], ["free", 5, "T5"]]
    assert run(ops_two_free)[-2:] == [["P@T4"], []]


def test_host_419_a_single_diner_is_refused_the_four_top_before_thirty_minutes() -> None:
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 1], ["board", 29]]
    assert run(ops)[-2:] == ["queued 1", board(["P"], T2="A", T4="B")]


def test_host_419_a_single_diner_who_waited_exactly_thirty_minutes_gets_the_four_top() -> None:
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 1], ["board", 30]]
    assert run(ops)[-1] == board([], T1="P", T2="A", T4="B")


def test_host_427_two_parties_eligible_at_the_same_moment_are_both_seated() -> None:
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 1], ["walk_in", 0, "Q", 1], ["board", 30]]
    assert run(ops)[-3:] == [
        "queued 1",
        "queued 2",
        board([], T1="P", T2="A", T4="B", T5="Q"),
    ]


def test_host_427_a_free_lists_both_parties_that_became_eligible_by_waiting() -> None:
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 1], ["walk_in", 0, "Q", 1], ["free", 30, "T2"]]
    assert run(ops)[-1] == ["P@T1", "Q@T5"]


# -- rule 1 and 2: order and best table -----------------------------------------------------


def test_the_waitlist_seats_the_oldest_party_first() -> None:
    ops = [*FULL_ROOM, ["walk_in", 1, "P", 2], ["walk_in", 2, "Q", 2], ["free", 3, "T2"]]
    assert run(ops)[-3:] == ["queued 1", "queued 2", ["P@T2"]]


def test_board_lists_the_waiting_parties_oldest_first() -> None:
    ops = [*FULL_ROOM, ["walk_in", 1, "Q", 2], ["walk_in", 1, "P", 3], ["board", 2]]
    assert run(ops)[-1]["waiting"] == ["Q", "P"]


def test_best_table_ties_go_to_the_lowest_floor_plan_order() -> None:
    ops = [["walk_in", 0, "P", 3], ["walk_in", 0, "Q", 3], ["walk_in", 0, "R", 4]]
    assert run(ops) == ["seated T1", "seated T5", "seated T6"]


def test_a_party_too_big_for_every_small_table_takes_the_six_top() -> None:
    assert run([["walk_in", 0, "P", 5]]) == ["seated T3"]


def test_a_table_taken_earlier_in_the_pass_is_gone_for_the_parties_after() -> None:
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 1], ["walk_in", 0, "Q", 1], ["walk_in", 0, "R", 1]]
    ops += [["walk_in", 0, "X", 4], ["walk_in", 0, "Y", 6]]  # T1 and T3 taken; T5, T6 free
    # at 30 P takes T5, Q takes T6, and R's best table is gone: nothing is left for R
    assert run([*ops, ["board", 30]])[-1] == board(
        ["R"], T1="X", T2="A", T3="Y", T4="B", T5="P", T6="Q"
    )


def test_a_party_that_cannot_be_seated_never_blocks_those_behind_it() -> None:
    # P (1) refuses T1 as too roomy; Q (3) behind it is seated there.
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 1], ["walk_in", 1, "Q", 3]]
    assert run(ops)[-2:] == ["queued 1", "seated T1"]


def test_a_party_no_free_table_fits_never_blocks_those_behind_it() -> None:
    ops = [["walk_in", 0, "G", 6], ["walk_in", 1, "P", 5], ["walk_in", 2, "Q", 2]]
    assert run(ops) == ["seated T3", "queued 1", "seated T2"]


def test_a_freed_table_goes_past_a_waiting_party_it_does_not_fit() -> None:
    ops = [*FULL_ROOM, ["walk_in", 1, "P", 5], ["walk_in", 2, "Q", 2], ["free", 3, "T1"]]
    assert run(ops)[-1] == ["Q@T1"]


# -- rule 3: roominess ----------------------------------------------------------------------


def test_two_spare_seats_are_not_too_roomy() -> None:
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "X", 4], ["walk_in", 0, "Y", 4], ["walk_in", 0, "Z", 4]]
    assert run([*ops, ["walk_in", 0, "P", 4]])[-1] == "seated T3"  # 6 seats for 4


def test_three_spare_seats_are_too_roomy_for_a_party_that_just_arrived() -> None:
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "X", 4], ["walk_in", 0, "Y", 4], ["walk_in", 0, "Z", 4]]
    assert run([*ops, ["walk_in", 0, "P", 3], ["board", 29]])[-2:] == [
        "queued 1",
        board(["P"], T1="X", T2="A", T4="B", T5="Y", T6="Z"),
    ]


def test_a_too_roomy_best_table_is_not_traded_for_a_bigger_one() -> None:
    # P (1): best table T1 is too roomy; T5, T6 and T3 are free too but never tried.
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 1], ["board", 29]]
    assert run(ops)[-1] == board(["P"], T2="A", T4="B")


def test_the_roominess_limit_is_waived_after_thirty_minutes_even_for_the_six_top() -> None:
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "X", 4], ["walk_in", 0, "Y", 4], ["walk_in", 0, "Z", 4]]
    ops += [["walk_in", 0, "P", 1], ["board", 29], ["board", 30]]
    results = run(ops)
    assert results[-2]["tables"]["T3"] == "free"
    assert results[-1]["tables"]["T3"] == "P"


# -- rule 4 and 5: when the pass runs and what results report -------------------------------


def test_the_pass_at_the_start_of_board_seats_a_party_whose_wait_made_it_eligible() -> None:
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 1], ["board", 31]]
    assert run(ops)[-1] == board([], T1="P", T2="A", T4="B")


def test_the_pass_at_the_start_of_quote_seats_a_party_whose_wait_made_it_eligible() -> None:
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 1], ["quote", 30, 3], ["quote", 30, 1]]
    # P takes T1, so a new party of 3 still finds T5 (0); a new single finds no
    # 2-top and T5 too roomy: ceil(45 * (0 + 1) / 2) = 23 since nobody waits.
    assert run(ops)[-2:] == [0, 23]
    assert run([*ops, ["board", 30]])[-1] == board([], T1="P", T2="A", T4="B")


def test_free_lists_parties_seated_by_the_start_pass_before_those_seated_after_it() -> None:
    ops = [
        ["walk_in", 0, "A", 2], ["walk_in", 0, "B", 2], ["walk_in", 0, "D", 4],
        ["walk_in", 0, "E", 4], ["walk_in", 0, "G", 4],  # only T3 stays free
        ["walk_in", 0, "P", 1],  # T3 too roomy for now
        ["walk_in", 3, "Q", 2],  # T3 too roomy
        ["free", 30, "T2"],      # start pass: P (waited 30) gets T3; then Q gets T2
    ]  # fmt: skip
    assert run(ops)[-3:] == ["queued 1", "queued 2", ["P@T3", "Q@T2"]]


def test_free_returns_an_empty_list_when_nobody_is_seated() -> None:
    assert run([["walk_in", 0, "P", 2], ["free", 5, "T2"]]) == ["seated T2", []]


def test_a_freed_table_is_free_on_the_board() -> None:
    ops = [["walk_in", 0, "P", 2], ["free", 5, "T2"], ["board", 5]]
    assert run(ops)[-1] == board([])


def test_walk_in_numbers_its_place_in_the_queue_from_one() -> None:
    ops = [*FULL_ROOM, ["walk_in", 1, "P", 2], ["walk_in", 1, "Q", 5], ["walk_in", 2, "R", 1]]
    assert run(ops)[-3:] == ["queued 1", "queued 2", "queued 3"]


def test_walk_in_numbers_its_place_after_the_start_pass_seated_someone_ahead() -> None:
    ops = [
        ["walk_in", 0, "A", 2], ["walk_in", 0, "B", 2], ["walk_in", 0, "D", 4],
        ["walk_in", 0, "E", 4], ["walk_in", 0, "G", 4],
        ["walk_in", 0, "P", 1], ["walk_in", 3, "Q", 2],
        ["walk_in", 30, "R", 2],  # start pass seats P at T3; R is behind Q only
    ]  # fmt: skip
    assert run(ops)[-1] == "queued 2"


def test_walk_in_reports_only_its_own_party_even_when_the_start_pass_seats_others() -> None:
    ops = [*TWO_TOPS_TAKEN, ["walk_in", 0, "P", 1], ["walk_in", 30, "Q", 3]]
    # P takes T1 in the start pass; Q gets the next 4-top
    assert run(ops)[-1] == "seated T5"


def test_a_new_walk_in_joins_the_end_of_the_queue() -> None:
    ops = [*FULL_ROOM, ["walk_in", 1, "P", 2], ["walk_in", 2, "Q", 2], ["board", 2]]
    assert run(ops)[-1]["waiting"] == ["P", "Q"]


def test_a_party_id_that_reads_like_a_board_word_is_still_a_party_id() -> None:
    """Seed, "How your code is run": a party id is any non-empty string, and board shows
    "the id of the party sitting there"; "free" and "held:R1" are such ids (engine/stand.py
    _board says why they are not refused)."""
    ops = [["walk_in", 0, "free", 2], ["walk_in", 0, "held:R1", 2], ["board", 0]]
    assert run(ops)[-1] == board([], T2="free", T4="held:R1")
