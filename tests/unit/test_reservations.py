"""Seed Part 2: reservations hold tables, no-shows release them, and quoted waits."""

from engine import run

TABLES = ("T1", "T2", "T3", "T4", "T5", "T6")

# Every table but T4 taken at minute 0.
ALL_BUT_T4 = [
    ["walk_in", 0, "F1", 4], ["walk_in", 0, "F2", 2], ["walk_in", 0, "F3", 6],
    ["walk_in", 0, "F5", 4], ["walk_in", 0, "F6", 4],
]  # fmt: skip
FULL_ROOM = [*ALL_BUT_T4, ["walk_in", 0, "F4", 2]]


def tables(**occupied: str) -> dict[str, str]:
    return {t: occupied.get(t, "free") for t in TABLES}


def _full(**overrides: str) -> dict[str, str]:
    occupied = {t: f"F{t[1]}" for t in TABLES}
    occupied.update(overrides)
    return occupied


# -- rule 1: the hold window [at - 15, at + 15) ---------------------------------------------


def test_a_hold_begins_at_fifteen_minutes_before_the_booking() -> None:
    ops = [["reserve", 0, "R1", "T4", 60], ["board", 44], ["board", 45]]
    results = run(ops)
    assert results[1]["tables"]["T4"] == "free"
    assert results[2]["tables"]["T4"] == "held:R1"


def test_a_hold_lasts_until_fifteen_minutes_after_the_booking_exclusive() -> None:
    ops = [["reserve", 0, "R1", "T4", 60], ["board", 74], ["board", 75]]
    results = run(ops)
    assert results[1]["tables"]["T4"] == "held:R1"
    assert results[2]["tables"]["T4"] == "free"


def test_the_waitlist_may_use_a_table_just_before_its_hold_begins() -> None:
    ops = [["walk_in", 0, "X", 2], ["reserve", 0, "R1", "T4", 60], ["walk_in", 44, "P", 2]]
    assert run(ops)[-1] == "seated T4"


def test_the_waitlist_may_not_use_a_held_table() -> None:
    # with T4 held, the best table for P (2) is T1 (2 spare seats)
    ops = [["walk_in", 0, "X", 2], ["reserve", 0, "R1", "T4", 60], ["walk_in", 45, "P", 2]]
    assert run(ops)[-1] == "seated T1"


def test_a_held_table_is_never_given_to_the_waitlist_whatever_the_wait() -> None:
    ops = [
        *FULL_ROOM,
        ["walk_in", 0, "P", 2],
        ["reserve", 0, "R1", "T4", 45],  # holds T4 from 30 to 60
        ["free", 30, "T4"],               # P has waited 30 minutes: still not given T4
        ["board", 59],
        ["board", 60],                    # no-show: the hold ends, P sits
    ]  # fmt: skip
    results = run(ops)
    assert results[-3] == []
    assert results[-2] == {"tables": tables(**_full(T4="held:R1")), "waiting": ["P"]}
    assert results[-1] == {"tables": tables(**_full(T4="P")), "waiting": []}


def test_a_hold_never_evicts_a_party_already_sitting_at_the_table() -> None:
    ops = [["walk_in", 0, "X", 2], ["walk_in", 0, "Y", 2], ["reserve", 0, "R1", "T4", 20]]
    ops += [["board", 10]]
    assert run(ops)[-1] == {"tables": tables(T2="X", T4="Y"), "waiting": []}


def test_a_held_table_freed_by_its_party_stays_held() -> None:
    ops = [*FULL_ROOM, ["reserve", 0, "R1", "T4", 20], ["walk_in", 5, "P", 2]]
    ops += [["free", 10, "T4"], ["board", 10]]
    assert run(ops)[-2:] == [[], {"tables": tables(**_full(T4="held:R1")), "waiting": ["P"]}]


# -- rule 2: no-shows -----------------------------------------------------------------------


def test_a_no_show_releases_its_table_to_the_pass_of_the_same_operation() -> None:
    ops = [
        *ALL_BUT_T4,
        ["reserve", 0, "R1", "T4", 20],  # holds T4 from 5 to 35
        ["walk_in", 5, "P", 2],
        ["board", 34],
        ["free", 35, "T2"],               # R1 expires first, then the start pass seats P at T4
    ]  # fmt: skip
    results = run(ops)
    assert results[-3] == "queued 1"
    assert results[-2]["tables"]["T4"] == "held:R1"
    assert results[-1] == ["P@T4"]


def test_a_no_show_cannot_check_in() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["check_in", 75, "R1"]]
    assert run(ops)[-1] == "error: reservation not active"


def test_a_reservation_can_check_in_at_the_last_minute_of_its_hold() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["check_in", 74, "R1"]]
    assert run(ops)[-1] == "seated T3"


# -- rule 3: reserve ------------------------------------------------------------------------


def test_reserve_returns_true() -> None:
    assert run([["reserve", 0, "R1", "T1", 60]]) == [True]


def test_reservations_on_one_table_less_than_thirty_minutes_apart_conflict() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["reserve", 0, "R2", "T3", 89]]
    ops += [["reserve", 0, "R3", "T3", 31]]
    assert run(ops) == [True, "error: table conflict", "error: table conflict"]


def test_reservations_on_one_table_exactly_thirty_minutes_apart_are_fine() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["reserve", 0, "R2", "T3", 90]]
    ops += [["reserve", 0, "R3", "T3", 30]]
    assert run(ops) == [True, True, True]


def test_reservations_on_different_tables_never_conflict() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["reserve", 0, "R2", "T1", 60]]
    assert run(ops) == [True, True]


def test_a_checked_in_reservation_no_longer_conflicts() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["check_in", 50, "R1"], ["reserve", 51, "R2", "T3", 70]]
    assert run(ops) == [True, "seated T3", True]


def test_a_no_show_no_longer_conflicts() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["reserve", 75, "R2", "T3", 80]]
    assert run(ops) == [True, True]


def test_a_refused_reservation_does_not_hold_its_table() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["reserve", 0, "R2", "T3", 80], ["board", 94]]
    assert run(ops)[-1]["tables"]["T3"] == "free"


# -- rule 4: check_in -----------------------------------------------------------------------


def test_check_in_seats_the_reservation_at_its_table() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["check_in", 45, "R1"], ["board", 45]]
    assert run(ops)[1:] == ["seated T3", {"tables": tables(T3="R1"), "waiting": []}]


def test_check_in_before_the_hold_begins_is_too_early() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["check_in", 44, "R1"]]
    assert run(ops)[-1] == "error: too early"


def test_check_in_twice_is_reservation_not_active() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["check_in", 50, "R1"], ["check_in", 51, "R1"]]
    assert run(ops)[-1] == "error: reservation not active"


def test_check_in_while_someone_sits_at_the_table_is_table_busy() -> None:
    ops = [["walk_in", 0, "G", 6], ["reserve", 0, "R1", "T3", 60], ["check_in", 50, "R1"]]
    assert run(ops)[-1] == "error: table busy"


def test_a_reservation_refused_as_table_busy_stays_booked_and_can_try_again() -> None:
    ops = [
        ["walk_in", 0, "G", 6],
        ["reserve", 0, "R1", "T3", 60],
        ["check_in", 50, "R1"],
        ["reserve", 50, "R2", "T3", 80],  # R1 still booked: conflicts
        ["free", 55, "T3"],
        ["board", 55],                    # R1's hold is back on the free table
        ["check_in", 56, "R1"],
    ]  # fmt: skip
    assert run(ops)[2:] == [
        "error: table busy",
        "error: table conflict",
        [],
        {"tables": tables(T3="held:R1"), "waiting": []},
        "seated T3",
    ]


def test_a_checked_in_party_is_freed_like_any_party() -> None:
    ops = [
        ["reserve", 0, "R1", "T3", 60],
        ["check_in", 50, "R1"],
        ["walk_in", 51, "P", 5],  # only T3 fits a party of 5
        ["board", 52],
        ["free", 80, "T3"],
        ["board", 80],
    ]  # fmt: skip
    assert run(ops)[1:] == [
        "seated T3",
        "queued 1",
        {"tables": tables(T3="R1"), "waiting": ["P"]},
        ["P@T3"],
        {"tables": tables(T3="P"), "waiting": []},
    ]


def test_a_checked_in_reservation_id_is_never_reused() -> None:
    ops = [["reserve", 0, "R1", "T3", 60], ["check_in", 50, "R1"], ["free", 60, "T3"]]
    ops += [["walk_in", 61, "R1", 2]]
    assert run(ops)[-1] == "error: party exists"


# -- rule 5: board --------------------------------------------------------------------------


def test_board_shows_a_sitting_party_rather_than_the_hold() -> None:
    ops = [["walk_in", 0, "G", 6], ["reserve", 0, "R1", "T3", 30], ["board", 20]]
    assert run(ops)[-1]["tables"]["T3"] == "G"


# -- rule 6: quotes -------------------------------------------------------------------------


def test_the_seeds_quote_example_is_ceil_of_dwell_times_place_over_tables() -> None:
    # two class-2 parties waiting, a new party of 2: ceil(45 * 3 / 2) = 68
    ops = [*FULL_ROOM, ["walk_in", 1, "P", 2], ["walk_in", 1, "Q", 1], ["quote", 2, 2]]
    assert run(ops)[-1] == 68


def test_a_quote_for_class_four_divides_by_the_three_four_tops() -> None:
    # one class-4 party waiting: ceil(70 * 2 / 3) = 47
    ops = [*FULL_ROOM, ["walk_in", 1, "P", 3], ["quote", 2, 4]]
    assert run(ops)[-1] == 47


def test_a_quote_for_class_six_with_nobody_waiting_is_one_dwell() -> None:
    assert run([*FULL_ROOM, ["quote", 1, 5]])[-1] == 90


def test_a_quote_is_never_more_than_the_cap() -> None:
    # one class-6 party waiting: ceil(90 * 2 / 1) = 180, capped at 120
    ops = [*FULL_ROOM, ["walk_in", 1, "P", 6], ["quote", 2, 5]]
    assert run(ops)[-1] == 120


def test_a_quote_counts_only_waiting_parties_of_the_same_class() -> None:
    # P (3) and G (5) are in other classes: ceil(45 * 1 / 2) = 23
    ops = [*FULL_ROOM, ["walk_in", 1, "P", 3], ["walk_in", 1, "G", 5], ["quote", 2, 1]]
    assert run(ops)[-1] == 23


def test_a_quote_is_zero_when_a_walk_in_would_be_seated_now() -> None:
    assert run([["quote", 0, 2]]) == [0]
    assert run([*ALL_BUT_T4, ["quote", 0, 1]])[-1] == 0


def test_a_quote_is_not_zero_when_the_only_free_table_is_held() -> None:
    # T4 held; nobody waits: ceil(45 * 1 / 2) = 23
    ops = [*ALL_BUT_T4, ["reserve", 0, "R1", "T4", 60], ["quote", 50, 2]]
    assert run(ops)[-1] == 23


def test_a_quote_is_not_zero_when_the_best_table_is_too_roomy() -> None:
    ops = [["walk_in", 0, "A", 2], ["walk_in", 0, "B", 2], ["quote", 1, 1]]
    assert run(ops)[-1] == 23


def test_a_quote_changes_nothing() -> None:
    ops = [*ALL_BUT_T4, ["walk_in", 1, "P", 5], ["walk_in", 1, "Q", 3]]
    tail = [["walk_in", 2, "S", 2], ["board", 2]]
    with_quotes = [*ops, ["quote", 2, 2], ["quote", 2, 1], ["quote", 2, 9], *tail]
    assert run(with_quotes)[-2:] == run([*ops, *tail])[-2:]
    assert run([*ops, *tail])[-2] == "seated T4"


# -- memory: a replayed day goes when it is let go --------------------------------------------


def test_a_host_stand_let_go_is_freed_at_once_not_left_for_the_garbage_collector() -> None:
    """An export replays a day of every restaurant and lets each go: a stand must then be
    freed by reference counting. Its own bound methods, kept in a dictionary on it, were a
    reference cycle that left every stand (its reservations, parties, floor state) to the
    cyclic collector."""
    import gc

    from engine import HostStand

    def stands() -> int:
        return sum(isinstance(o, HostStand) for o in gc.get_objects())

    was = gc.isenabled()
    gc.disable()
    try:
        before = stands()
        stand = HostStand()
        for op in [["reserve", 0, "R1", "T4", 60], ["walk_in", 5, "W1", 2], ["check_in", 50, "R1"]]:
            stand.apply(op)
        assert stands() == before + 1
        del stand
        assert stands() == before
    finally:
        if was:
            gc.enable()
