"""The seed's three worked examples, verbatim, and the sample files that carry them."""

import json
from pathlib import Path

import pytest

from engine import run

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

PART1 = [
    ["walk_in", 0, "P1", 2], ["walk_in", 1, "P2", 2], ["walk_in", 2, "P3", 2],
    ["walk_in", 3, "P4", 6], ["walk_in", 4, "P5", 3], ["walk_in", 5, "P6", 4],
    ["walk_in", 6, "P7", 1], ["walk_in", 7, "P8", 2], ["free", 20, "T4"], ["free", 21, "T5"],
    ["walk_in", 22, "P9", 1], ["free", 25, "T3"], ["board", 52],
]  # fmt: skip
PART1_RESULTS = [
    "seated T2", "seated T4", "seated T1", "seated T3", "seated T5", "seated T6",
    "queued 1", "queued 2", ["P7@T4"], ["P8@T5"], "queued 1", [],
    {"tables": {"T1": "P3", "T2": "P1", "T3": "P9", "T4": "P7", "T5": "P8", "T6": "P6"},
     "waiting": []},
]  # fmt: skip

PART2 = [
    ["reserve", 0, "R1", "T3", 60], ["reserve", 1, "R2", "T3", 70],
    ["reserve", 2, "R3", "T3", 90], ["board", 44], ["board", 45], ["walk_in", 46, "P1", 5],
    ["check_in", 47, "R3"], ["board", 75], ["check_in", 76, "R1"], ["check_in", 80, "R3"],
    ["quote", 81, 5], ["quote", 81, 2], ["free", 110, "T3"],
]  # fmt: skip


def _board(t3: str, waiting: list[str]) -> dict[str, object]:
    tables = {"T1": "free", "T2": "free", "T3": t3, "T4": "free", "T5": "free", "T6": "free"}
    return {"tables": tables, "waiting": waiting}


PART2_RESULTS = [
    True, "error: table conflict", True, _board("free", []), _board("held:R1", []),
    "queued 1", "error: too early", _board("held:R3", ["P1"]),
    "error: reservation not active", "seated T3", 120, 0, ["P1@T3"],
]  # fmt: skip

PART3 = [
    ["walk_in", 0, "A", 6], ["walk_in", 1, "B", 4], ["walk_in", 2, "C", 4],
    ["walk_in", 3, "D", 4], ["walk_in", 4, "E", 2], ["walk_in", 5, "F", 2],
    ["walk_in", 6, "G", 8], ["walk_in", 7, "H", 2], ["free", 10, "T5"], ["walk_in", 12, "I", 3],
    ["free", 30, "T6"], ["free", 31, "T5"],
]  # fmt: skip
PART3_RESULTS = [
    "seated T3", "seated T1", "seated T5", "seated T6", "seated T2", "seated T4",
    "queued 1", "queued 2", ["H@T5"], "queued 2", [], ["G@T5+T6"],
]  # fmt: skip

EXAMPLES = {
    "part1": (PART1, PART1_RESULTS),
    "part2": (PART2, PART2_RESULTS),
    "part3": (PART3, PART3_RESULTS),
}


def test_part1_waitlist_example_seats_exactly_as_the_seed_says() -> None:
    assert run(PART1) == PART1_RESULTS


def test_part2_reservation_example_holds_expires_and_quotes_as_the_seed_says() -> None:
    assert run(PART2) == PART2_RESULTS


def test_part3_large_party_example_claims_and_combines_as_the_seed_says() -> None:
    assert run(PART3) == PART3_RESULTS


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_sample_files_hold_the_worked_examples_and_their_results(name: str) -> None:
    operations, results = EXAMPLES[name]
    assert json.loads((SAMPLES / f"marlowes-{name}.json").read_text()) == operations
    expected = json.loads((SAMPLES / f"marlowes-{name}.expected.json").read_text())
    assert expected == results
    assert run(operations) == expected
