"""Receiver benchmark: signed booking webhooks from concurrent partners against a real server.

Setup (untimed): N restaurants (samples/marlowes.toml with its own merchant_id and a larger
floor), a settings file with one partner secret and a host token per restaurant, and
`hoststand serve` (real clock) on a free port with a fresh SQLite file.

Phase 1 (`--seconds`): `--clients` threads, one requests.Session each, send signed
`reservation.requested` webhooks for random restaurants, days (tomorrow onwards), slots and
party sizes. A 200 is a durable booking (committed before the reply); a 409 a refusal.
Phase 2 (`--host-seconds`): the same threads call the host API (board and quote).

Printed: requests/s, durable bookings/s, and p50/p99 latency per kind (booking-200,
booking-409, board, quote). Targets: at least 300 durable bookings/s and booking p99 under
50 ms (partners allow 4 s). The server is stopped with SIGTERM at the end.

Run: `.venv/bin/python bench/receiver_bench.py [--seconds 30] [--clients 16] [--restaurants 20]`
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import requests

from feed import calendar
from feed.restaurant import load_restaurant
from feed.signing import HEADER, sign

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "samples" / "marlowes.toml"
PARTNER, SECRET = "bench-partner", "bench-webhook-secret"
TARGET_BOOKINGS_PER_S = 300
TARGET_P99_MS = 50.0
EXTRA_SEATS = [2, 2, 4, 4, 4, 6, 2, 4, 8, 4, 2, 6]  # tables appended after Marlowe's T1..T6


def restaurant_toml(i: int, tables: int) -> str:
    text = SAMPLE.read_text(encoding="utf-8")
    text = text.replace('merchant_id = "marlowes-kitchen"', f'merchant_id = "bench-{i:03d}"')
    text = text.replace('name = "Marlowe\'s Kitchen"', f'name = "Bench {i:03d}"')
    extra = [
        f'\n[[tables]]\nid = "X{n}"\nseats = {EXTRA_SEATS[n % len(EXTRA_SEATS)]}\n'
        for n in range(max(0, tables - 6))
    ]
    return text + "".join(extra)


def settings_toml(merchants: list[str]) -> str:
    lines = [f'[[partners]]\nid = "{PARTNER}"\nsecret = "{SECRET}"\n']
    lines += [
        f'[[hosts]]\nmerchant_id = "{m}"\ntoken = "bench-host-token-{m}"\n' for m in merchants
    ]
    return "\n".join(lines)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def hoststand() -> str:
    beside = Path(sys.executable).parent / "hoststand"
    found = str(beside) if beside.exists() else shutil.which("hoststand")
    if found is None:
        sys.exit("the hoststand console script is not installed")
    return found


def start_server(work: Path, configs: list[Path], port: int) -> subprocess.Popen[bytes]:
    args = [hoststand(), "serve"]
    for c in configs:
        args += ["--config", str(c)]
    args += ["--db", str(work / "bench.db"), "--settings", str(work / "server.toml")]
    args += ["--host", "127.0.0.1", "--port", str(port)]
    log = (work / "server.log").open("wb")
    server = subprocess.Popen(args, cwd=work, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"server exited: {(work / 'server.log').read_text(errors='replace')}")
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).ok:
                return server
        except requests.ConnectionError:
            pass
        time.sleep(0.05)
    server.kill()
    sys.exit("server did not answer /healthz within 60 s")


def stop_server(server: subprocess.Popen[bytes]) -> int:
    server.send_signal(signal.SIGTERM)
    try:
        return server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        return server.wait()


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.other: dict[str, int] = defaultdict(int)

    def add(self, kind: str, seconds: float) -> None:
        with self.lock:
            self.latencies[kind].append(seconds)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def booking_worker(
    base: str,
    slots: dict[str, list[str]],
    max_party: int,
    deadline: float,
    rec: Recorder,
    seed: int,
) -> None:
    rng = random.Random(seed)
    merchants = list(slots)
    with requests.Session() as session:
        while time.monotonic() < deadline:
            merchant = rng.choice(merchants)
            event = {
                "id": uuid.uuid4().hex,
                "type": "reservation.requested",
                "merchant_id": merchant,
                "data": {
                    "party_size": rng.choice([2, 2, 2, 3, 4, 4, 5, 6, rng.randint(1, max_party)]),
                    "start": rng.choice(slots[merchant]),
                    "name": "Bench Guest",
                },
            }
            body = json.dumps(event).encode()
            headers = {
                "Content-Type": "application/json",
                HEADER: sign(SECRET, int(time.time()), body),
            }
            t0 = time.perf_counter()
            response = session.post(f"{base}/webhooks/{PARTNER}", data=body, headers=headers)
            elapsed = time.perf_counter() - t0
            if response.status_code in (200, 409):
                rec.add(f"booking-{response.status_code}", elapsed)
            else:
                with rec.lock:
                    rec.other[f"booking-{response.status_code}"] += 1


def host_worker(base: str, merchants: list[str], deadline: float, rec: Recorder, seed: int) -> None:
    rng = random.Random(seed)
    with requests.Session() as session:
        while time.monotonic() < deadline:
            merchant = rng.choice(merchants)
            headers = {"Authorization": f"Bearer bench-host-token-{merchant}"}
            kind = rng.choice(["board", "quote"])
            url = f"{base}/api/v1/restaurants/{merchant}/{kind}"
            params = {"size": rng.randint(1, 8)} if kind == "quote" else None
            t0 = time.perf_counter()
            response = session.get(url, headers=headers, params=params)
            elapsed = time.perf_counter() - t0
            if response.status_code == 200:
                rec.add(kind, elapsed)
            else:
                with rec.lock:
                    rec.other[f"{kind}-{response.status_code}"] += 1


def run_phase(
    clients: int, seconds: float, target: Callable[..., None], args: tuple[object, ...]
) -> tuple[float, float]:
    """`clients` threads run target(*args, deadline, RECORDER, seed); the phase's wall time."""
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(target=target, args=(*args, deadline, RECORDER, seed))
        for seed in range(clients)
    ]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return start, time.monotonic()


RECORDER = Recorder()


def report(kinds: list[str], wall: float, title: str) -> None:
    total = sum(len(RECORDER.latencies[k]) for k in kinds)
    print(f"{title}: {total} requests in {wall:.1f} s = {total / wall:.0f} requests/s")
    for kind in kinds:
        values = RECORDER.latencies[kind]
        if not values:
            print(f"  {kind:<12} none")
            continue
        print(
            f"  {kind:<12} {len(values):>7} ({len(values) / wall:>6.0f}/s)"
            f"  p50 {percentile(values, 0.50) * 1000:6.1f} ms"
            f"  p99 {percentile(values, 0.99) * 1000:6.1f} ms"
            f"  mean {statistics.fmean(values) * 1000:6.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="booking phase length")
    parser.add_argument("--host-seconds", type=float, default=5.0, help="board/quote phase")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--restaurants", type=int, default=20)
    parser.add_argument("--tables", type=int, default=18, help="tables per restaurant")
    parser.add_argument("--days", type=int, default=21, help="days ahead booked, from tomorrow")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (db, log)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="receiver-bench-"))
    merchants = [f"bench-{i:03d}" for i in range(args.restaurants)]
    configs = []
    for i in range(args.restaurants):
        path = work / f"bench-{i:03d}.toml"
        path.write_text(restaurant_toml(i, args.tables), encoding="utf-8")
        configs.append(path)
    (work / "server.toml").write_text(settings_toml(merchants), encoding="utf-8")

    # Every slot of every bookable day (tomorrow onwards), as an instant with its offset.
    r0 = load_restaurant(configs[0])  # all restaurants share hours and zone
    today = datetime.now(UTC).astimezone(r0.tz).date()
    days = [today + timedelta(days=d) for d in range(1, args.days + 1)]
    starts = [s.local.isoformat() for day in days for s in calendar.slots(r0, day)]
    slots = {m: starts for m in merchants}
    print(
        f"{args.restaurants} restaurants x {args.tables} tables, {len(days)} days"
        f" ({_span(days)}), {len(starts)} slots each; {args.clients} clients; work dir {work}"
    )

    port = free_port()
    server = start_server(work, configs, port)
    base = f"http://127.0.0.1:{port}"
    print(f"server pid {server.pid} on {base}")
    try:
        start, end = run_phase(
            args.clients, args.seconds, booking_worker, (base, slots, r0.max_party_size)
        )
        booking_wall = end - start
        start, end = run_phase(args.clients, args.host_seconds, host_worker, (base, merchants))
        host_wall = end - start
    finally:
        status = stop_server(server)

    print()
    report(["booking-200", "booking-409"], booking_wall, "bookings")
    report(["board", "quote"], host_wall, "host API")
    if RECORDER.other:
        print(f"  other statuses: {dict(RECORDER.other)}")
    durable = len(RECORDER.latencies["booking-200"]) / booking_wall
    booking_lat = RECORDER.latencies["booking-200"] + RECORDER.latencies["booking-409"]
    p99 = percentile(booking_lat, 0.99) * 1000 if booking_lat else float("nan")
    print()
    print(
        f"durable bookings/s {durable:.0f} (target >= {TARGET_BOOKINGS_PER_S}):"
        f" {'met' if durable >= TARGET_BOOKINGS_PER_S else 'NOT met'}"
    )
    print(
        f"booking p99 {p99:.1f} ms (target < {TARGET_P99_MS:.0f} ms):"
        f" {'met' if p99 < TARGET_P99_MS else 'NOT met'}"
    )
    print(f"server exit status after SIGTERM: {status}")
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


def _span(days: list[date]) -> str:
    return f"{days[0].isoformat()}..{days[-1].isoformat()}" if days else "none"


if __name__ == "__main__":
    main()
