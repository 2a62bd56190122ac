"""`hoststand serve` as a real process on 127.0.0.1, for tests that speak HTTP to it.

Not a test module: it starts the server on a free port with the sample settings and both
sample restaurants, its clock pinned (--now) so signatures and slots are deterministic.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

from feed.service.signing import HEADER, sign

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
CONFIGS = (SAMPLES / "marlowes.toml", SAMPLES / "google-floorplan.toml")
SETTINGS = SAMPLES / "server.toml"
HOSTSTAND = Path(sys.executable).parent / "hoststand"

# Friday 4 December 2026, 18:00 in London (GMT): Marlowe's dinner service is running.
NOW = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)
NOW_T = int(NOW.timestamp())

# The sample secrets of samples/server.toml.
SECRETS = {
    "tablefinder": "sample-webhook-secret-tablefinder",
    "dinerly": "sample-webhook-secret-dinerly",
}
HOST_TOKENS = {
    "marlowes-kitchen": "sample-host-token-marlowes",
    "merch1": "sample-host-token-merch1",
}

TIMEOUT = 10  # seconds, on every request a test sends
STARTUP_SECONDS = 15
BIND_ATTEMPTS = 5


def free_port() -> int:
    """A port nobody listens on now (the OS picks it for a socket bound to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clean_env() -> dict[str, str]:
    # Secrets in the caller's environment would override the sample ones the tests sign with.
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTSTAND_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class ServerProcess:
    """One running `hoststand serve`; `stop()` ends it and returns its exit code."""

    process: subprocess.Popen[bytes]
    base: str
    db: Path | str  # what --db got: an SQLite file, or a PostgreSQL URL
    log: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self, kill: bool = False) -> int:
        """SIGTERM (a clean shutdown), or SIGKILL when `kill`; waits for the process."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            return self.process.wait(timeout=STARTUP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=STARTUP_SECONDS)
            raise


def start_server(
    db: Path | str,
    now: datetime = NOW,
    log: Path | None = None,
    workdir: Path | None = None,
    settings: Path = SETTINGS,
    extra: Sequence[str] = (),
    port: int | None = None,
    configs: Sequence[Path] = CONFIGS,
    hoststand: Path = HOSTSTAND,
) -> ServerProcess:
    """Start the server on `db` (an SQLite file or a PostgreSQL URL) and return once
    /healthz answers (or fail with its output). It runs in `workdir`, by default the SQLite
    file's directory; a URL needs one. `settings` defaults to the sample settings; `extra`:
    more `serve` options (--log-format json); `configs`: the restaurant files; `hoststand`: the
    command (another installation's)."""
    if workdir is None:
        if not isinstance(db, Path):
            raise ValueError("a server on a database URL needs a workdir")
        workdir = db.parent
    stem = db.stem if isinstance(db, Path) else "hoststand"
    # A port free_port() found may be taken by another test's server (another pytest-xdist
    # worker) before this one binds it: serve then exits saying so, and is started again on
    # another. A port the caller chose is its own to keep free.
    for _attempt in range(BIND_ATTEMPTS):
        chosen = port or free_port()  # an earlier server's port: a page open on it reconnects
        args = [str(hoststand), "--now", now.isoformat(), "serve"]
        for config in configs:
            args += ["--config", str(config)]
        args += ["--db", str(db), "--settings", str(settings), "--host", "127.0.0.1"]
        args += ["--port", str(chosen), *extra]
        out_path = log or workdir / f"{stem}-server-{chosen}.log"
        with open(out_path, "wb") as out:  # the child keeps its own copy of the descriptor
            process = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT, cwd=workdir, env=_clean_env()
            )
        server = ServerProcess(process, f"http://127.0.0.1:{chosen}", db, out_path)
        try:
            wait_healthy(server)
        except BaseException:
            server.stop(kill=True)
            if port is None and server.process.returncode == 3 and _port_taken(server):
                continue
            raise
        return server
    raise RuntimeError(f"hoststand serve found its port taken {BIND_ATTEMPTS} times")


def _port_taken(server: ServerProcess) -> bool:
    """Did serve exit because another process listens on its port?"""
    return "Address already in use" in server.output()


def wait_healthy(server: ServerProcess) -> None:
    """Wait for /healthz, or raise with the server's output if it exits or never answers."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"hoststand serve exited early:\n{server.output()}")
        try:
            with requests.get(f"{server.base}/healthz", timeout=2) as reply:
                if reply.status_code == 200:
                    return
        except (requests.ConnectionError, requests.Timeout):
            # serve binds its port before it opens the store and exports: until it serves,
            # a connection is accepted and waits, so a slow start reads as a timeout.
            pass
        time.sleep(0.05)
    raise RuntimeError(f"hoststand serve did not answer /healthz:\n{server.output()}")


@contextmanager
def running_server(
    db: Path | str, now: datetime = NOW, workdir: Path | None = None
) -> Iterator[ServerProcess]:
    server = start_server(db, now, workdir=workdir)
    try:
        yield server
    finally:
        server.stop()


def signed_post(
    base: str,
    partner: str,
    secret: str,
    event: dict[str, Any] | bytes,
    t: int = NOW_T,
    timeout: float = TIMEOUT,
) -> requests.Response:
    """POST a webhook event (a dict, or raw bytes sent as they are) signed at Unix time `t`."""
    body = event if isinstance(event, bytes) else json.dumps(event).encode()
    headers = {HEADER: sign(secret, t, body), "Content-Type": "application/json"}
    return requests.post(f"{base}/webhooks/{partner}", data=body, headers=headers, timeout=timeout)


def booking_event(
    event_id: str,
    party_size: int,
    start: str | int,
    merchant_id: str = "marlowes-kitchen",
    **data: Any,
) -> dict[str, Any]:
    """A reservation.requested event."""
    return {
        "id": event_id,
        "type": "reservation.requested",
        "merchant_id": merchant_id,
        "data": {"party_size": party_size, "start": start, "name": "Ada", **data},
    }


def change_event(
    event_id: str, kind: str, reservation_id: str, merchant_id: str = "marlowes-kitchen"
) -> dict[str, Any]:
    """A reservation.checked_in or reservation.cancelled event for one of our booking ids."""
    return {
        "id": event_id,
        "type": f"reservation.{kind}",
        "merchant_id": merchant_id,
        "data": {"reservation_id": reservation_id},
    }
