"""/healthz's answer (feed.http.health.check) over a real SQLite store's export records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from feed.http.health import check
from feed.settings import Destination, ExportSettings, Settings
from store.sqlite import SQLiteStore

NOW = 1_796_400_000.0  # 2026-12-04 18:40 UTC, fixed
TWO = Settings(
    export=ExportSettings(
        destinations=(
            Destination("http", url="https://partner.example/feeds"),
            Destination("directory", path="/srv/feeds"),
        )
    )
)


def export(destination: str, outcome: str, finished_at: float, error: str = "") -> Any:
    return {
        "started_at": finished_at - 1,
        "finished_at": finished_at,
        "destination": destination,
        "outcome": outcome,
        "attempts": 1,
        "error": error,
    }


def test_a_destination_whose_last_export_failed_makes_healthz_degraded_but_200(
    tmp_path: Path,
) -> None:
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        # one run: the upload failed, then the directory (the last record) took the files
        store.record_export(export("PUT https://partner.example/feeds", "failed", NOW - 60, "503"))
        store.record_export(export("/srv/feeds", "delivered", NOW - 60))
        status, health = check(store, TWO, NOW)
    assert status == 200
    assert health.status == "degraded"
    assert health.problems == [
        "the last export to PUT https://partner.example/feeds failed 60 s ago: 503"
    ]


def test_a_destination_that_took_the_next_export_is_healthy_again(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        store.record_export(export("PUT https://partner.example/feeds", "failed", NOW - 120, "503"))
        store.record_export(export("/srv/feeds", "delivered", NOW - 120))
        store.record_export(export("PUT https://partner.example/feeds", "delivered", NOW - 60))
        store.record_export(export("/srv/feeds", "delivered", NOW - 60))
        status, health = check(store, TWO, NOW)
    assert (status, health.status, health.problems) == (200, "ok", [])


def test_an_export_that_failed_before_any_destination_makes_healthz_degraded(
    tmp_path: Path,
) -> None:
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        store.record_export(export("staging", "failed", NOW - 5, "export: no space"))
        status, health = check(store, Settings(), NOW)
    assert (status, health.status) == (200, "degraded")
    assert health.problems == ["the last export to staging failed 5 s ago: export: no space"]
