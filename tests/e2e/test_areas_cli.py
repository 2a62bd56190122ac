"""`hoststand slots` at a restaurant with seating areas (issue #14): a grid per area, or
the one area --area names."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from feed.cli import main

TERRACE = str(Path(__file__).resolve().parents[2] / "samples" / "terrace.toml")
BEFORE = "2026-12-01T09:00:00Z"
FRIDAY = "2026-12-04"


def slots(tmp_path: Path, *options: str) -> Result:
    db = str(tmp_path / "hoststand.db")
    args = ["--now", BEFORE, "slots", "--config", TERRACE, "--db", db, "--date", FRIDAY]
    return CliRunner().invoke(main, [*args, *options], env={"HOSTSTAND_DB": None})


def test_slots_shows_a_grid_per_area(tmp_path: Path) -> None:
    result = slots(tmp_path)
    assert result.exit_code == 0, result.output
    titles = [line for line in result.output.splitlines() if "open/total" in line]
    assert [t.split(",")[0] for t in titles] == [
        "The Terrace in Dining room",
        "The Terrace in Patio",
    ]


def test_slots_area_shows_that_area_only(tmp_path: Path) -> None:
    result = slots(tmp_path, "--area", "patio", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert rows and {row["area"] for row in rows} == {"patio"}
    # The patio seats no party of 5 or 6 (its largest table is 4; combos take 7 and 8).
    assert {row["party_size"] for row in rows} == {1, 2, 3, 4, 7, 8}


def test_slots_refuses_an_area_the_restaurant_does_not_have(tmp_path: Path) -> None:
    result = slots(tmp_path, "--area", "roof")
    assert result.exit_code != 0
    assert "no area 'roof' (areas: main, patio)" in result.output
