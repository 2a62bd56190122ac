"""Seed Part 3: large parties on combined tables, and claims against starvation.

COMBOS in order: T5+T6 (8 seats), T3+T4 (8), T1+T3 (10).
"""

from engine import run

TABLES = ("T1", "T2", "T3", "T4", "T5", "T6")

FULL_ROOM = [
    ["walk_in", 0, "F1", 4], ["walk_in", 0, "F2", 2], ["walk_in", 0, "F3", 6],
    ["walk_in", 0, "F4", 2], ["walk_in", 0, "F5", 4], ["walk_in", 0, "F6", 4],
]  # fmt: skip


# T2, T4 and T5 taken (T1 taken and freed again): T1+T3 (10 seats) is the only usable pair.
ONLY_T1_T3_USABLE = [
    ["walk_in", 0, "X", 2], ["walk_in", 0, "Y", 2], ["walk_in", 0, "Z", 4],
    ["walk_in", 0, "W", 4], ["free", 0, "T1"],
]  # fmt: skip


def tables(**occupied: str) -> dict[str, str]:
    return {t: occupied.get(t, "free") for t in TABLES}


def full(**overrides: str) -> dict[str, str]:
    occupied = {t: f"F{t[1]}" for t in TABLES}
    occupied.update(overrides)
    return occupied


# -- rule 1: who uses a combination ---------------------------------------------------------


def test_a_party_of_seven_is_seated_at_a_combination() -> None:
    assert run([["walk_in", 0, "G", 7], ["board", 0]]) == [
        "seated T5+T6",
        {"tables": tables(T5="G", T6="G"), "waiting": []},
    ]


def test_a_party_of_six_never_uses_a_combination() -> None:
    ops = [["walk_in", 0, "X", 6], ["walk_in", 1, "P", 6], ["walk_in", 1, "Q", 5], ["board", 40]]
    results = run(ops)
    assert results[1:3] == ["queued 1", "queued 2"]
    assert results[-1]["waiting"] == ["P", "Q"]  # T5+T6 free all along


def test_a_party_of_ten_is_accepted_and_seated_at_the_only_pair_that_fits() -> None:
    assert run([["walk_in", 0, "G", 10]]) == ["seated T1+T3"]


def test_a_party_of_eleven_is_not_a_party() -> None:
    assert run([["walk_in", 0, "G", 11]]) == ["error: invalid arguments"]


# -- rule 2: usable pairs and freeing -------------------------------------------------------


def test_the_second_listed_pair_is_used_when_a_table_of_the_first_is_taken() -> None:
    assert run([["walk_in", 0, "X", 4], ["walk_in", 0, "Y", 4], ["walk_in", 0, "G", 7]]) == [
        "seated T1",
        "seated T5",
        "seated T3+T4",
    ]


def test_a_pair_with_a_table_taken_earlier_in_the_same_pass_is_not_usable() -> None:
    ops = [
        ["walk_in", 0, "X", 8],  # T5+T6
        ["walk_in", 0, "F1", 4], ["walk_in", 0, "F3", 6], ["walk_in", 0, "F2", 2],
        ["walk_in", 0, "F4", 2],
        ["walk_in", 0, "P", 4], ["walk_in", 0, "G", 7],
        ["free", 5, "T6"],       # frees T5 and T6: P takes T5 first, so G cannot have the pair
    ]  # fmt: skip
    assert run(ops)[-3:] == ["queued 1", "queued 2", ["P@T5"]]


def test_a_held_table_is_never_part_of_a_usable_pair() -> None:
    ops = [["reserve", 0, "R1", "T6", 20], ["walk_in", 5, "G", 7], ["board", 5]]
    assert run(ops)[1:] == [
        "seated T3+T4",
        {"tables": tables(T3="G", T4="G", T6="held:R1"), "waiting": []},
    ]


def test_freeing_either_table_of_a_combined_party_frees_both() -> None:
    for table in ("T5", "T6"):
        ops = [["walk_in", 0, "G", 7], ["free", 10, table], ["board", 10]]
        assert run(ops)[1:] == [[], {"tables": tables(), "waiting": []}]


def test_free_lists_a_combined_party_with_both_tables() -> None:
    ops = [
        ["walk_in", 0, "G", 7],   # T5+T6
        ["walk_in", 0, "H", 8],   # T3+T4
        ["walk_in", 1, "J", 7],   # T1+T3 is the only pair left: T3 is taken
        ["free", 10, "T6"],
    ]  # fmt: skip
    assert run(ops) == ["seated T5+T6", "seated T3+T4", "queued 1", ["J@T5+T6"]]


def test_the_other_table_of_a_combined_party_is_not_occupied_once_freed() -> None:
    ops = [["walk_in", 0, "G", 7], ["free", 10, "T5"], ["free", 10, "T6"]]
    assert run(ops)[-1] == "error: table not occupied"


# -- rule 3: choosing a pair ----------------------------------------------------------------


def test_pairs_with_equal_seats_go_to_the_one_listed_first() -> None:
    assert run([["walk_in", 0, "G", 8], ["walk_in", 0, "H", 8]]) == [
        "seated T5+T6",
        "seated T3+T4",
    ]


def test_a_party_of_nine_takes_the_only_pair_with_enough_seats() -> None:
    assert run([["walk_in", 0, "G", 9]]) == ["seated T1+T3"]


def test_the_roomy_pair_fixture_leaves_only_t1_and_t3_free() -> None:
    assert run([*ONLY_T1_T3_USABLE, ["board", 0]])[-1] == {
        "tables": tables(T2="X", T4="Y", T5="W"),
        "waiting": [],
    }


def test_three_spare_combined_seats_are_too_roomy_for_a_new_large_party() -> None:
    ops = [*ONLY_T1_T3_USABLE, ["walk_in", 0, "G", 7], ["board", 29]]
    results = run(ops)
    assert results[-2] == "queued 1"
    assert results[-1]["waiting"] == ["G"]


def test_two_spare_combined_seats_are_fine() -> None:
    assert run([*ONLY_T1_T3_USABLE, ["walk_in", 0, "G", 8]])[-1] == "seated T1+T3"


def test_a_large_party_that_waited_thirty_minutes_takes_a_roomy_pair() -> None:
    ops = [*ONLY_T1_T3_USABLE, ["walk_in", 0, "G", 7], ["board", 30]]
    assert run(ops)[-1] == {
        "tables": tables(T1="G", T2="X", T3="G", T4="Y", T5="W"),
        "waiting": [],
    }


# -- rule 4: claims -------------------------------------------------------------------------


def test_a_large_party_waiting_twenty_minutes_claims_its_pair_from_later_parties() -> None:
    # G (8) cannot be seated at 20 and claims T5+T6; I (3, waited 20) may not take T6
    ops = [*FULL_ROOM, ["walk_in", 0, "G", 8], ["walk_in", 0, "I", 3], ["free", 20, "T6"]]
    ops += [["board", 20]]
    assert run(ops)[-2:] == [[], {"tables": full(T6="free"), "waiting": ["G", "I"]}]


def test_a_large_party_waiting_nineteen_minutes_claims_nothing() -> None:
    ops = [*FULL_ROOM, ["walk_in", 0, "G", 8], ["walk_in", 0, "I", 3], ["free", 19, "T6"]]
    assert run(ops)[-1] == ["I@T6"]


def test_a_party_of_six_or_fewer_never_claims_however_long_it_waits() -> None:
    # P (6) can only use T3; I (3) behind it still takes the freed T6
    ops = [*FULL_ROOM, ["walk_in", 0, "P", 6], ["walk_in", 10, "I", 3], ["free", 25, "T6"]]
    assert run(ops)[-1] == ["I@T6"]


def test_a_claim_never_blocks_parties_ahead_of_the_claimer() -> None:
    ops = [*FULL_ROOM, ["walk_in", 0, "I", 3], ["walk_in", 0, "G", 8], ["free", 20, "T6"]]
    assert run(ops)[-1] == ["I@T6"]


def test_a_party_that_waited_thirty_minutes_ignores_a_claim() -> None:
    ops = [*FULL_ROOM, ["walk_in", 0, "G", 8], ["walk_in", 0, "I", 3], ["free", 30, "T6"]]
    assert run(ops)[-1] == ["I@T6"]


def test_a_party_that_waited_twenty_nine_minutes_is_still_held_back_by_a_claim() -> None:
    ops = [*FULL_ROOM, ["walk_in", 0, "G", 8], ["walk_in", 1, "I", 3], ["free", 30, "T6"]]
    assert run(ops)[-1] == []


def test_a_claim_leaves_other_tables_to_later_parties() -> None:
    ops = [*FULL_ROOM, ["walk_in", 0, "G", 8], ["walk_in", 0, "I", 3], ["free", 20, "T1"]]
    assert run(ops)[-1] == ["I@T1"]


def test_a_party_behind_a_claim_takes_its_best_unclaimed_table() -> None:
    """Reading of rule 4 ("may not use the two claimed tables", engine/seating.py): a
    claimed table is unusable as a held one is (Part 2 rule 1), so the best table is the
    best of the others. G (9) claims T1+T3 at 20; I (2, waited 19) is kept off T1 but
    takes T5, rather than waiting because T1 (floor order before T5) was its best."""
    ops = [*FULL_ROOM, ["walk_in", 0, "G", 9], ["walk_in", 1, "I", 2]]
    ops += [["free", 20, "T1"], ["free", 20, "T5"], ["board", 20]]
    assert run(ops)[-3:] == [[], ["I@T5"], {"tables": full(T1="free", T5="I"), "waiting": ["G"]}]


def test_a_claim_takes_its_pair_even_with_a_table_held_for_a_reservation() -> None:
    """Reading of rule 4 ("whether or not its tables are free right now", taken as written;
    engine/seating.py _claim_target): G (8) claims T5+T6 though R1 holds T5 from 20, so I
    (4, waited 19) is kept off the free T6; the claim does not move to T3+T4."""
    ops = [*FULL_ROOM, ["reserve", 0, "R1", "T5", 35], ["walk_in", 0, "G", 8]]
    ops += [["walk_in", 1, "I", 4], ["free", 20, "T5"], ["free", 20, "T6"], ["board", 20]]
    assert run(ops)[-3:] == [
        [],
        [],
        {"tables": full(T5="held:R1", T6="free"), "waiting": ["G", "I"]},
    ]


def test_a_large_party_that_is_seated_does_not_claim_and_the_next_one_may() -> None:
    ops = [
        *FULL_ROOM,
        ["walk_in", 0, "G1", 7], ["walk_in", 0, "G2", 9], ["walk_in", 1, "I", 4],
        ["free", 20, "T5"],  # G1 cannot sit yet and claims T5+T6: I (waited 19) may not take T5
        ["free", 20, "T6"],  # G1 sits at T5+T6; G2 now claims T1+T3
        ["free", 20, "T1"],  # so I may not take T1
        ["board", 20],
    ]  # fmt: skip
    assert run(ops)[-4:] == [
        [],
        ["G1@T5+T6"],
        [],
        {"tables": full(T1="free", T5="G1", T6="G1"), "waiting": ["G2", "I"]},
    ]


def test_at_most_one_claim_is_made_per_pass() -> None:
    # G1 claims T5+T6; G2 (9) would claim T1+T3 but may not, so I takes T1
    ops = [
        *FULL_ROOM,
        ["walk_in", 0, "G1", 7], ["walk_in", 0, "G2", 9], ["walk_in", 1, "I", 4],
        ["free", 20, "T1"],
    ]  # fmt: skip
    assert run(ops)[-1] == ["I@T1"]


def test_claims_are_not_remembered_between_passes() -> None:
    ops = [
        *FULL_ROOM,
        ["walk_in", 0, "G", 8], ["walk_in", 0, "I", 3],
        ["free", 20, "T6"],  # G claims T5+T6: I is kept off T6
        ["free", 21, "T3"],  # G still cannot sit; T3 is too roomy for I
        ["free", 22, "T4"],  # G sits at T3+T4, claims nothing, and I takes T6
    ]  # fmt: skip
    assert run(ops)[-3:] == [[], [], ["G@T3+T4", "I@T6"]]


def test_a_claimer_that_leaves_releases_its_claim_in_the_same_operation() -> None:
    ops = [*FULL_ROOM, ["walk_in", 0, "G", 8], ["walk_in", 0, "I", 3], ["free", 20, "T6"]]
    ops += [["leave", 20, "G"]]
    assert run(ops)[-2:] == [[], ["I@T6"]]


def test_the_claimed_pair_seats_the_claimer_once_both_tables_free() -> None:
    ops = [*FULL_ROOM, ["walk_in", 0, "G", 8], ["walk_in", 0, "I", 3], ["free", 20, "T6"]]
    ops += [["free", 21, "T5"]]
    assert run(ops)[-1] == ["G@T5+T6"]


def test_a_quote_sees_a_claim_as_the_pass_would() -> None:
    # at 19 the hypothetical party of 3 would sit at T6: 0; at 20 G's claim keeps it off
    # T6, and nobody of class 4 waits: ceil(70 * 1 / 3) = 24
    before = [*FULL_ROOM, ["walk_in", 0, "G", 8], ["free", 19, "T6"], ["quote", 19, 3]]
    after = [*FULL_ROOM, ["walk_in", 0, "G", 8], ["free", 20, "T6"], ["quote", 20, 3]]
    assert run(before)[-1] == 0
    assert run(after)[-1] == 24


# -- rule 5: quotes for large parties and around them ---------------------------------------


def test_a_large_quote_is_zero_when_a_pair_is_free() -> None:
    assert run([["quote", 0, 7], ["quote", 0, 10]]) == [0, 0]


def test_a_large_quote_with_no_large_party_waiting_is_one_hundred() -> None:
    assert run([*FULL_ROOM, ["quote", 1, 7]])[-1] == 100


def test_a_large_quote_is_capped_at_one_hundred_and_twenty() -> None:
    ops = [*FULL_ROOM, ["walk_in", 1, "G", 9], ["walk_in", 1, "P", 2], ["quote", 2, 8]]
    assert run(ops)[-1] == 120


def test_a_small_quote_counts_only_waiting_parties_of_six_or_fewer() -> None:
    # G (8) and H (7) are large; only P counts: ceil(45 * 2 / 2) = 45
    ops = [*FULL_ROOM, ["walk_in", 1, "G", 8], ["walk_in", 1, "H", 7], ["walk_in", 1, "P", 2]]
    assert run([*ops, ["quote", 2, 1]])[-1] == 45
