"""A SIGHUP sent while `serve` starts (before it can reload) is held, not fatal, and its
reload is made once the server serves (feed.http.serving.HeldHangups)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from feed.http.serving import HeldHangups, build
from feed.settings import Settings
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore

MARLOWES = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"
NOW = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)


@pytest.fixture
def sighup_restored() -> Iterator[None]:
    before = signal.getsignal(signal.SIGHUP)
    yield
    signal.signal(signal.SIGHUP, before)


def start_and_stop(app: Any) -> list[str]:
    """The ASGI lifespan: start-up, then shutdown; the message types sent back."""
    sent: list[str] = []

    async def run() -> None:
        queue: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        await queue.put({"type": "lifespan.startup"})

        async def receive() -> dict[str, str]:
            return await queue.get()

        async def send(message: dict[str, Any]) -> None:
            sent.append(message["type"])
            if message["type"] == "lifespan.startup.complete":
                await queue.put({"type": "lifespan.shutdown"})

        await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)

    asyncio.run(run())
    return sent


def test_a_sighup_during_start_up_is_held_and_reloaded_for_once_serving(
    tmp_path: Path, sighup_restored: None, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "marlowes.toml"
    path.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    held = HeldHangups()
    held.hold()  # what serve does first
    store = SQLiteStore(tmp_path / "hoststand.db")
    try:
        app = build(
            [load_restaurant(path)],
            store,
            Settings(),
            lambda: NOW,
            tmp_path / "feeds",
            export=False,
            config_paths=[path],
            held=held,
        )
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace('name = "Marlowe\'s Kitchen"', 'name = "Marlowe\'s"'))
        os.kill(os.getpid(), signal.SIGHUP)  # the operator reloads before the server is up
        assert held.count == 1  # held, and the process (this one) is still here
        with caplog.at_level(logging.INFO, logger="hoststand"):
            sent = start_and_stop(app)
    finally:
        store.close()
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert held.count == 0  # taken: reloaded for once
    reloads = [r.getMessage() for r in caplog.records if r.name == "hoststand.reload"]
    assert [m for m in reloads if m.startswith("reloaded: ")] == [
        "reloaded: changed marlowes-kitchen, unchanged -, 0 replace(s) queued,"
        " 0 booking(s) need attention"
    ]
    assert signal.getsignal(signal.SIGHUP) == held._held  # held again while stopping
