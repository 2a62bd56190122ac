"""Waitlist benchmark: what a long walk-in waitlist costs, on the engine alone and through a
real server.

The floor: Marlowe's Kitchen full but for T3 (a 6-top), with parties of 2 waiting that T3
is too roomy for (they have waited under 30 minutes): every seating pass walks the whole
queue and seats nobody, the most it can cost. At 10, 100, 1,000 and 5,000 parties waiting:

1. the engine (`HostStand.apply`): a join (walk_in), a quote, the board, the host's seat of
   the last party at T3 and the free of T3 after it; a copy of the stand (what every read
   on the server starts from) and a `leave` per party behind the head then a quote (what
   GetWaitlistEntry did for the oldest entry before it was fixed); and the replay the
   tablet's first floor after a start or reload does, with each walk-in's quote given;
2. `hoststand serve` on a fresh SQLite file at a pinned clock (Friday 18:00 London: the
   dinner service), each figure the median of a few requests: the host's walk-in, a
   partner's CreateWaitlistEntry, the host's quote and board, the tablet's floor (after a
   change: worked out afresh), GetWaitlistEntry of the oldest entry (every party behind it)
   and of the newest, BatchGetWaitEstimates, and a seat then free; then, the list filled to
   its limit, a host walk-in and a partner's entry turned away (what a flood costs then).

The restaurant file the server runs has `max_waitlist = 1000` (the most a file may set; the
default is 4 per table, 24 at Marlowe's): through the server, 1,000 is measured at 950 (room
for the parties the measurements add), and larger sizes on the engine only, what the limit
keeps a server from.

Run: `.venv/bin/python bench/waitlist_bench.py [--sizes 10,100,1000,5000] [--engine-only]`
"""

from __future__ import annotations

import argparse
import base64
import copy
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine import MARLOWES, HostStand
from feed.service.floorview import _QuotesGiven
from feed.venue.restaurant import MAX_WAITLIST_LIMIT
from store.log import LogEntry

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "samples" / "marlowes.toml"
SETTINGS = REPO / "samples" / "server.toml"
HOSTSTAND = Path(sys.executable).parent / "hoststand"
NOW = "2026-12-04T18:00:00+00:00"  # a Friday: Marlowe's dinner service since 17:30
MERCHANT = "marlowes-kitchen"
HOST_TOKEN = "sample-host-token-marlowes"
BASIC = "Basic " + base64.b64encode(b"tablefinder:sample-basic-password").decode()
REPEATS = 5


def full_but_t3(ts: int = 0) -> list[list[Any]]:
    """Operations that seat a party at every table and free T3 again."""
    seated = [("A", 4), ("B", 2), ("C", 6), ("D", 2), ("E", 4), ("F", 4)]
    return [*(["walk_in", ts, p, n] for p, n in seated), ["free", ts, "T3"]]


def timed(run: Callable[[], object], repeats: int = REPEATS) -> float:
    """The median of `repeats` runs, in milliseconds."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def engine_figures(n: int) -> dict[str, float]:
    stand = HostStand(MARLOWES)
    log = [LogEntry(seq, op, stand.apply(op), 0.0) for seq, op in enumerate(full_but_t3())]
    started = time.perf_counter()
    for i in range(n):
        op: list[Any] = ["walk_in", 1, f"w{i}", 2]
        log.append(LogEntry(len(log), op, stand.apply(op), 0.0))
    fill = time.perf_counter() - started
    # The tablet's first floor after a start or reload: the day replayed with each walk-in's
    # quote worked out (the seconds the replay alone takes are `fill`'s).
    started = time.perf_counter()
    _QuotesGiven(HostStand(MARLOWES)).take(log)
    floor_quotes = time.perf_counter() - started

    def on_copy(*ops: list[Any]) -> Callable[[], object]:
        copies = [copy.deepcopy(stand) for _ in range(REPEATS)]

        def run() -> object:
            c = copies.pop()
            return [c.apply(op) for op in ops]

        return run

    behind = [["leave", 2, f"w{i}"] for i in range(n)]
    figures = {
        "replay (fill) s": fill,
        "floor quotes (first view) s": floor_quotes,
        "join": timed(on_copy(["walk_in", 2, "new", 2])),
        "quote": timed(on_copy(["quote", 2, 2])),
        "board": timed(on_copy(["board", 2])),
        "seat": timed(on_copy(["seat", 2, f"w{n - 1}", "T3"])),
        "seat+free": timed(on_copy(["seat", 2, f"w{n - 1}", "T3"], ["free", 2, "T3"])),
        "copy": timed(lambda: copy.deepcopy(stand)),
    }
    if n <= 1000:  # quadratic: 5,000 leaves of a 5,000 queue take minutes
        figures["leaves+quote"] = timed(on_copy(*behind, ["quote", 2, 2]), repeats=1)
    return figures


class Client:
    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def call(self, method: str, path: str, body: Any = None, auth: str = "") -> tuple[int, Any]:
        headers = {"Authorization": auth or f"Bearer {HOST_TOKEN}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        reply = self.conn.getresponse()
        raw = reply.read()
        return reply.status, json.loads(raw) if raw else None

    def host(self, method: str, tail: str, body: Any = None) -> Any:
        status, answer = self.call(method, f"/api/v1/restaurants/{MERCHANT}/{tail}", body)
        if status != 200:
            raise RuntimeError(f"{method} {tail}: {status} {answer}")
        return answer

    def v3(self, name: str, body: Any) -> Any:
        status, answer = self.call("POST", f"/v3/{name}", body, auth=BASIC)
        if status != 200:
            raise RuntimeError(f"{name}: {status} {answer}")
        return answer


def entry(client: Client, user: str) -> str:
    answer = client.v3(
        "CreateWaitlistEntry",
        {
            "merchant_id": MERCHANT,
            "service_id": "1000",
            "party_size": 2,
            "user_information": {"user_id": user, "given_name": "Bench"},
            "idempotency_token": user,
        },
    )
    if "waitlist_entry_id" not in answer:
        raise RuntimeError(f"CreateWaitlistEntry: {answer}")
    return str(answer["waitlist_entry_id"])


class Line:
    """The server's waitlist as the bench filled it: the host's parties it may seat, and
    a counter for new ids."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.host_ids: list[str] = []
        self.count = 0

    def walk_in(self, prefix: str = "w") -> None:
        self.count += 1
        pid = f"{prefix}{self.count}"
        self.client.host("POST", "walk-ins", {"size": 2, "party_id": pid})
        self.host_ids.append(pid)

    def partner_join(self) -> str:
        self.count += 1
        return entry(self.client, f"u-{self.count}")

    def floor_fresh(self) -> None:
        self.walk_in("x")  # a change: the floor document is worked out afresh
        self.client.host("GET", "floor")

    def seat_free(self) -> None:
        self.client.host("POST", f"parties/{self.host_ids.pop()}/seat", {"unit": "T3"})
        self.client.host("POST", "tables/T3/free")


def measure(line: Line, n: int, oldest: str, newest: str) -> dict[str, float]:
    client = line.client
    estimates = {"merchant_id": MERCHANT, "service_id": "1000", "party_size": [2, 4]}
    return {
        "host join": timed(lambda: line.walk_in("x")),
        "partner join": timed(line.partner_join),
        "quote": timed(lambda: client.host("GET", "quote?size=2")),
        "board": timed(lambda: client.host("GET", "board")),
        "floor (fresh)": timed(line.floor_fresh, repeats=3),
        "GetWaitlistEntry oldest": timed(
            lambda: client.v3("GetWaitlistEntry", {"waitlist_entry_id": oldest}),
            repeats=1 if n > 1000 else 3,
        ),
        "GetWaitlistEntry newest": timed(
            lambda: client.v3("GetWaitlistEntry", {"waitlist_entry_id": newest})
        ),
        "BatchGetWaitEstimates": timed(lambda: client.v3("BatchGetWaitEstimates", estimates)),
        "seat+free": timed(line.seat_free, repeats=3),
    }


def refusals(line: Line) -> dict[str, float]:
    """Fill the waitlist to the limit, then time a host walk-in and a partner's entry that
    are turned away (409, WAITLIST_FULL): what a flood costs once the list is full."""
    client = line.client
    path = f"/api/v1/restaurants/{MERCHANT}/walk-ins"
    while True:
        status, _ = client.call("POST", path, {"size": 2, "party_id": f"f{line.count}"})
        line.count += 1
        if status == 409:
            break
    entry_body = {
        "merchant_id": MERCHANT,
        "service_id": "1000",
        "party_size": 2,
        "user_information": {"user_id": "u-flood"},
    }

    def host_refused() -> None:
        status, _ = client.call("POST", path, {"size": 2, "party_id": "refused"})
        assert status == 409, status

    def partner_refused() -> None:
        _, answer = client.call("POST", "/v3/CreateWaitlistEntry", entry_body, auth=BASIC)
        assert answer["waitlist_business_logic_failure"]["cause"] == "WAITLIST_FULL", answer

    return {"host join": timed(host_refused), "partner join": timed(partner_refused)}


def server_figures(sizes: list[int], workdir: Path) -> dict[int, dict[str, float]]:
    config = workdir / "marlowes.toml"
    text = SAMPLE.read_text(encoding="utf-8")
    limited = text.replace(
        "max_party_size = 10\n", f"max_party_size = 10\nmax_waitlist = {MAX_WAITLIST_LIMIT}\n"
    )
    config.write_text(limited, encoding="utf-8")
    port = _free_port()
    log = open(workdir / "server.log", "wb")  # noqa: SIM115 (closed after the server stops)
    args = [str(HOSTSTAND), "--now", NOW, "serve", "--config", str(config)]
    args += ["--db", str(workdir / "bench.db"), "--settings", str(SETTINGS)]
    args += ["--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(args, cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    out: dict[int, dict[str, float]] = {}
    try:
        client = _wait_ready(port, server)
        for pid, n in [("A", 4), ("B", 2), ("C", 6), ("D", 2), ("E", 4), ("F", 4)]:
            client.host("POST", "walk-ins", {"size": n, "party_id": pid})
        client.host("POST", "tables/T3/free")
        line = Line(client)
        oldest = line.partner_join()
        for n in sizes:
            started, before = time.perf_counter(), len(line.host_ids)
            while len(line.host_ids) < n:
                line.walk_in()
            fill = (time.perf_counter() - started) * 1000 / max(1, len(line.host_ids) - before)
            figures = {"fill per walk-in": fill, **measure(line, n, oldest, line.partner_join())}
            out[n] = figures
            _print(f"server, {n} waiting", figures)
        out[MAX_WAITLIST_LIMIT] = refusals(line)
        _print(f"server, full ({MAX_WAITLIST_LIMIT} waiting), refused", out[MAX_WAITLIST_LIMIT])
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
    return out


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(port: int, server: subprocess.Popen[bytes]) -> Client:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("hoststand serve exited early")
        try:
            client = Client(port)
            status, _ = client.call("GET", "/healthz")
            if status == 200:
                return client
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("hoststand serve did not answer /healthz")


def _print(title: str, figures: dict[str, float]) -> None:
    cells = ", ".join(f"{k} {v:.2f}" for k, v in figures.items())
    print(f"{title}: {cells}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000,5000")
    parser.add_argument("--engine-only", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("milliseconds (median), unless said otherwise")
    for n in sizes:
        _print(f"engine, {n} waiting", engine_figures(n))
    if not args.engine_only:
        with tempfile.TemporaryDirectory() as tmp:
            # Room under the limit for the parties the measurements add.
            near = [min(n, MAX_WAITLIST_LIMIT - 50) for n in sizes if n <= MAX_WAITLIST_LIMIT]
            server_figures(near, Path(tmp))


if __name__ == "__main__":
    main()
