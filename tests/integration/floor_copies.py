"""Marlowe's file beside running servers, as the floor tests of a start, of a terminal
command (tests/e2e/test_start_floor, test_command_floor) and of a server on the old file
(test_reads_in_force) use it: the constants they share, a reload of a server on an edit of
its copy of the file, and a server on a copy reloaded so."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from tests.integration.server_process import (
    CONFIGS,
    NOW,
    TIMEOUT,
    ServerProcess,
    start_server,
)

MARLOWES = CONFIGS[0]
MID = "marlowes-kitchen"
FRIDAY = NOW.date()
T5 = '[[tables]]\nid = "T5"\nx = 1\ny = 1\nseats = 4\n\n'
T5_T6 = '[[combos]]\ntables = ["T5", "T6"]\n\n'
ADMIN = {"Authorization": "Bearer sample-admin-token-change-me"}  # samples/server.toml


def reload_on(server: ServerProcess, current: Path, text: str) -> None:
    """`current`, the server's copy of Marlowe's file, rewritten to `text` and the server
    reloaded on it (POST /api/v1/admin/reload): 200."""
    current.write_text(text, encoding="utf-8")
    reloaded = requests.post(f"{server.base}/api/v1/admin/reload", headers=ADMIN,
                             timeout=TIMEOUT)  # fmt: skip
    assert reloaded.status_code == 200, reloaded.text


@contextmanager
def serving_reloaded(
    db: str, workdir: Path, text: str, reloaded_text: str
) -> Iterator[tuple[ServerProcess, Path]]:
    """A server (no exports) on a copy of Marlowe's file in `workdir` holding `text`, and
    the sample's second restaurant; the copy is then rewritten to `reloaded_text` and the
    server reloaded on it (200). Yields the server and the copy; stops the server after."""
    current = workdir / "marlowes.toml"
    current.write_text(text, encoding="utf-8")
    server = start_server(db, configs=(current, CONFIGS[1]), extra=["--no-export"], workdir=workdir)
    try:
        reload_on(server, current, reloaded_text)
        yield server, current
    finally:
        server.stop()
