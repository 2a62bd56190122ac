"""Receiver benchmark: signed booking webhooks from concurrent partners against a real server.

Setup (untimed): N restaurants (samples/marlowes.toml with its own merchant_id and a larger
floor), a settings file with one partner secret and a host token per restaurant, and
`hoststand serve` (real clock) on a free port with a fresh SQLite file.

The partner also has v3 Basic credentials and a notify_url pointing at a healthy stub in
this process (ThreadingHTTPServer on 127.0.0.1: PATCH/POST/PUT -> 200, requests counted), so
every booking queues an availability replace and every host cancel of a partner booking a
booking notification (`--no-notify`: no notify_url, as before issue 6).

Phase 1 (`--seconds`): `--clients` threads, one requests.Session each, send signed
`reservation.requested` webhooks for random restaurants, days (tomorrow onwards), slots and
party sizes. A 200 is a durable booking (committed before the reply); a 409 a refusal.
Every `--cancel-every`th durable booking of a client is followed by a host API cancel
(POST /api/v1/restaurants/{m}/reservations/{id}/cancel, bearer token) of one of its own.
Phase 2 (`--lookup-seconds`): the threads call /v3/BatchAvailabilityLookup with 50 published
dinner slots each (future days, mixed party sizes, int64 fields sometimes as strings), from
200 requests per client built before the phase and sent in turn.
Phase 3 (`--create-seconds`): /v3/CreateBooking on published dinner slots, a unique
idempotency token and user id each; host cancels as in phase 1.
Phase 4 (`--host-seconds`): the same threads call the host API (board and quote).
Then (notify on) the outbox is left to drain (at most `--drain-seconds`) before SIGTERM.

Latency is from sending a request to its reply's last byte (the client parses the JSON
after). Printed: requests/s, durable bookings/s, and p50/p99 latency per kind (booking-200,
booking-409, cancel, lookup, create-ok, create-failure, board, quote). Targets: at least 300
durable bookings/s and booking p99 under 50 ms (partners allow 4 s); lookup p99 under 20 ms
(the partner allows 1.5 s); CreateBooking p99 under 50 ms. Then the outbox (read with
SQLiteStore): delivered/pending/dead, notification lag p50/p99 (delivered_at - created_at),
and the requests the stub received. The server is stopped with SIGTERM at the end.

Run: `.venv/bin/python bench/receiver_bench.py [--seconds 30] [--clients 16] [--restaurants 20]`
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import multiprocessing
import os
import random
import shutil
import signal
import socket
import sqlite3
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests

from feed.floor.availability import spots_total
from feed.service.signing import HEADER, sign
from feed.venue import calendar
from feed.venue.restaurant import Restaurant, load_restaurant
from store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "samples" / "marlowes.toml"
PARTNER, SECRET = "bench-partner", "bench-webhook-secret"
BASIC_USER, BASIC_PASSWORD = "bench-basic-user", "bench-basic-password"
TARGET_BOOKINGS_PER_S = 300
TARGET_P99_MS = 50.0
TARGET_LOOKUP_P99_MS = 20.0  # the partner allows 1.5 s
TARGET_CREATE_P99_MS = 50.0
LOOKUP_SLOTS = 50
LOOKUP_BODIES = 200  # distinct lookup requests per client, cycled
# Per request, not session.auth: that would replace the bearer token of the host cancels.
BASIC = (BASIC_USER, BASIC_PASSWORD)
BASIC_HEADER = "Basic " + base64.b64encode(f"{BASIC_USER}:{BASIC_PASSWORD}".encode()).decode()


class Client:
    """A keep-alive HTTP/1.1 client on http.client: the load generator shares the machine's
    two cores with the server, so it must cost as little as possible (requests costs several
    times more per call, and that time lands inside the measured latency)."""

    def __init__(self, base: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any, float]:
        """(status, parsed reply, seconds from sending the request to the reply's last
        byte): the client's own JSON parsing is not the server's latency."""
        headers = {"Content-Type": "application/json", **headers}
        try:
            started = time.perf_counter()
            self.conn.request("POST", path, body=body, headers=headers)
            response = self.conn.getresponse()
            data = response.read()
            elapsed = time.perf_counter() - started
        except (OSError, http.client.HTTPException):
            self.conn.close()  # reconnect on the next call
            raise
        return response.status, json.loads(data) if data else None, elapsed

    def close(self) -> None:
        self.conn.close()


EXTRA_SEATS = [2, 2, 4, 4, 4, 6, 2, 4, 8, 4, 2, 6]  # tables appended after Marlowe's T1..T6


def restaurant_toml(i: int, tables: int) -> str:
    text = SAMPLE.read_text(encoding="utf-8")
    text = text.replace('merchant_id = "marlowes-kitchen"', f'merchant_id = "bench-{i:03d}"')
    text = text.replace('name = "Marlowe\'s Kitchen"', f'name = "Bench {i:03d}"')
    # Marlowe's tables have floor positions (x, y): the extra ones go in rows below them.
    extra = [
        f'\n[[tables]]\nid = "X{n}"\nseats = {EXTRA_SEATS[n % len(EXTRA_SEATS)]}\n'
        f"x = {n % 6}\ny = {2 + n // 6}\n"
        for n in range(max(0, tables - 6))
    ]
    # A file giving turn times gives one for every table size: a size Marlowe's lacks turns
    # at the seed's nearest class (90 minutes for the 6-tops and up), as it did by default.
    sizes = {EXTRA_SEATS[n % len(EXTRA_SEATS)] for n in range(max(0, tables - 6))}
    more = "".join(f"{size} = 90\n" for size in sorted(sizes - {2, 4, 6}))
    text = text.replace("6 = 90\nlarge", f"6 = 90\n{more}large")
    return text + "".join(extra)


def settings_toml(merchants: list[str], notify_url: str | None = None) -> str:
    partner = f'[[partners]]\nid = "{PARTNER}"\nsecret = "{SECRET}"\n'
    partner += f'basic_user = "{BASIC_USER}"\nbasic_password = "{BASIC_PASSWORD}"\n'
    if notify_url is not None:
        partner += f'notify_url = "{notify_url}"\n'
    lines = [partner]
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
    args += os.environ.get("HOSTSTAND_BENCH_SERVE_ARGS", "").split()
    log = (work / "server.log").open("wb")
    server = subprocess.Popen(args, cwd=work, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"server exited: {(work / 'server.log').read_text(errors='replace')}")
        try:
            if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).ok:
                break
        # Not listening yet, or too busy starting to answer within the second (a loaded
        # machine): asked again until the deadline, not a traceback leaving it running.
        except (requests.ConnectionError, requests.Timeout):
            pass
        time.sleep(0.05)
    else:
        server.kill()
        sys.exit("server did not answer /healthz within 60 s")
    # Measure the steady state: the export that serve runs at start-up (then hourly) is
    # let finish first; in an hour of service it is one moment, in a 30 s run it is a tenth.
    store = SQLiteStore(work / "bench.db")
    try:
        while time.monotonic() < deadline and not store.exports(1):
            time.sleep(0.1)
    finally:
        store.close()
    return server


def stop_server(server: subprocess.Popen[bytes]) -> int:
    server.send_signal(signal.SIGTERM)
    try:
        return server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        return server.wait()


class PartnerStub:
    """The partner's notification endpoint, healthy: PATCH/POST/PUT -> 200 with `{}`.

    It runs in a process of its own: reading the replaces (tens of KB each) in this
    process would take the GIL from the client threads and show up as server latency.
    Counts requests by method and kind (availability replace, booking notification) and the
    distinct Hoststand-Message-Id headers, so a duplicate delivery shows."""

    def __init__(self) -> None:
        self.conn, child = multiprocessing.Pipe()
        self.process = multiprocessing.Process(target=_stub_main, args=(child,), daemon=True)
        self.process.start()
        self.port = int(self.conn.recv())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stats(self) -> tuple[dict[str, int], int, int]:
        """(requests by "METHOD kind", distinct message ids, requests without one)."""
        self.conn.send("stats")
        counts, distinct, without = self.conn.recv()
        return counts, distinct, without

    def total(self) -> int:
        return sum(self.stats()[0].values())

    def close(self) -> None:
        self.conn.send("stop")
        self.process.join(timeout=10)


def _stub_main(conn: Any) -> None:
    lock = threading.Lock()
    counts: dict[str, int] = defaultdict(int)
    message_ids: set[str] = set()
    without_id = 0

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the sender's Session reuses it
        # Headers and body go out as two small writes: with Nagle on, the second waits
        # for the client's delayed ACK (~40 ms a request), a stub artifact, not a lag.
        disable_nagle_algorithm = True

        def _answer(self) -> None:
            nonlocal without_id
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            path = self.path.split("?", 1)[0]
            kind = (
                "availability"
                if path.endswith("/availability:replace")
                else "booking"
                if "/bookings/" in path
                else "other"
            )
            message_id = self.headers.get("Hoststand-Message-Id")
            with lock:
                counts[f"{self.command} {kind}"] += 1
                if message_id is None:
                    without_id += 1
                else:  # a replace of several days carries each day's message id
                    message_ids.update(one.strip() for one in message_id.split(","))
            body = b"{}"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_PATCH = _answer
        do_POST = _answer
        do_PUT = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    conn.send(server.server_address[1])
    while (message := conn.recv()) != "stop":
        if message == "stats":
            with lock:
                conn.send((dict(counts), len(message_ids), without_id))
    server.shutdown()
    server.server_close()


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.other: dict[str, int] = defaultdict(int)
        self.tally: dict[str, int] = defaultdict(int)  # informational counts

    def add(self, kind: str, seconds: float) -> None:
        with self.lock:
            self.latencies[kind].append(seconds)

    def count(self, kind: str, n: int = 1) -> None:
        with self.lock:
            self.other[kind] += n

    def note(self, kind: str, n: int = 1) -> None:
        with self.lock:
            self.tally[kind] += n


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def host_cancel(
    client: Client,
    base: str,
    booked: list[tuple[str, str]],
    rng: random.Random,
    rec: Recorder,
) -> None:
    """Cancel one of this client's partner bookings through the host API (a host cancel of a
    partner booking: the partner gets a booking notification and an availability replace)."""
    merchant, booking_id = booked.pop(rng.randrange(len(booked)))
    path = f"/api/v1/restaurants/{merchant}/reservations/{booking_id}/cancel"
    headers = {"Authorization": f"Bearer bench-host-token-{merchant}"}
    status, _, elapsed = client.post(path, b"", headers)
    if status == 200:
        rec.add("cancel", elapsed)
    else:
        rec.count(f"cancel-{status}")


def booking_worker(
    base: str,
    slots: dict[str, list[str]],
    max_party: int,
    cancel_every: int,
    deadline: float,
    rec: Recorder,
    seed: int,
) -> None:
    rng = random.Random(seed)
    merchants = list(slots)
    booked: list[tuple[str, str]] = []
    durable = 0
    client = Client(base)
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
        headers = {HEADER: sign(SECRET, int(time.time()), body)}
        status, reply, elapsed = client.post(f"/webhooks/{PARTNER}", body, headers)
        if status in (200, 409):
            rec.add(f"booking-{status}", elapsed)
        else:
            rec.count(f"booking-{status}")
        if status == 200 and cancel_every > 0:
            booked.append((merchant, str(reply["reservation_id"])))
            durable += 1
            if durable % cancel_every == 0:
                host_cancel(client, base, booked, rng, rec)
    client.close()


def dinner_slots(r: Restaurant, days: list[date]) -> list[int]:
    """start_sec of every dinner slot (17:00 local or later) of `days`."""
    return [s.start_sec for day in days for s in calendar.slots(r, day) if s.local.hour >= 17]


def party_size(rng: random.Random, sizes: list[int]) -> int:
    """Mostly twos and fours, as in the webhook phase, now and then any published size."""
    common = [n for n in (2, 2, 2, 3, 4, 4, 5, 6) if n in sizes]
    return rng.choice(common) if common and rng.random() < 0.8 else rng.choice(sizes)


def int64(value: int, rng: random.Random) -> int | str:
    """The partner's JSON writes int64 fields as strings; half the time, do as it does."""
    return str(value) if rng.random() < 0.5 else value


def v3_call(
    client: Client, name: str, body: bytes, rec: Recorder, kind: str
) -> tuple[Any, float] | None:
    """POST /v3/{name} with the partner's Basic credentials: (reply, seconds) on a 200;
    otherwise None, with the network error or the status counted under `kind`."""
    try:
        status, reply, elapsed = client.post(f"/v3/{name}", body, {"Authorization": BASIC_HEADER})
    except (OSError, http.client.HTTPException) as exc:
        rec.count(f"{kind}-{type(exc).__name__}")
        return None
    if status != 200:
        rec.count(f"{kind}-{status}")
        return None
    return reply, elapsed


def lookup_bodies(
    merchants: list[str],
    starts: list[int],
    sizes: list[int],
    durations: dict[int, int],
    seed: int,
    count: int = LOOKUP_BODIES,
) -> list[tuple[int, bytes]]:
    """`count` lookup requests of LOOKUP_SLOTS random published slots: (slots, body). Built
    before the phase, so the load generator's CPU (it shares the two cores with the server)
    goes to sending requests, not to building them."""
    rng = random.Random(1000 + seed)
    bodies = []
    for _ in range(count):
        merchant = rng.choice(merchants)
        slot_time = []
        for start in rng.sample(starts, min(LOOKUP_SLOTS, len(starts))):
            n = party_size(rng, sizes)
            one: dict[str, Any] = {"service_id": "1000", "start_sec": int64(start, rng)}
            if rng.random() < 0.9:  # the duration is optional; usually sent
                one["duration_sec"] = int64(durations[n], rng)
            one["resource_ids"] = {"party_size": n}
            slot_time.append(one)
        body = json.dumps({"merchant_id": merchant, "slot_time": slot_time}).encode()
        bodies.append((len(slot_time), body))
    return bodies


def lookup_worker(
    base: str,
    pools: list[list[tuple[int, bytes]]],
    deadline: float,
    rec: Recorder,
    seed: int,
) -> None:
    client = Client(base)
    pool = pools[seed % len(pools)]
    sent = 0
    while time.monotonic() < deadline:
        slots, body = pool[sent % len(pool)]
        sent += 1
        answered = v3_call(client, "BatchAvailabilityLookup", body, rec, "lookup")
        if answered is None:
            continue
        reply, elapsed = answered
        answers = reply.get("slot_time_availability", [])
        if len(answers) != slots:
            rec.count("lookup-wrong-length")
            continue
        rec.add("lookup", elapsed)
        rec.note("lookup-slots", len(answers))
        rec.note("lookup-available", sum(1 for a in answers if a.get("available") is True))
    client.close()


def create_worker(
    base: str,
    merchants: list[str],
    starts: list[int],
    sizes: list[int],
    durations: dict[int, int],
    cancel_every: int,
    deadline: float,
    rec: Recorder,
    seed: int,
) -> None:
    rng = random.Random(2000 + seed)
    booked: list[tuple[str, str]] = []
    confirmed = 0
    client = Client(base)
    while time.monotonic() < deadline:
        merchant = rng.choice(merchants)
        n = party_size(rng, sizes)
        token = uuid.uuid4().hex
        body = {
            "slot": {
                "merchant_id": merchant,
                "service_id": "1000",
                "start_sec": int64(rng.choice(starts), rng),
                "duration_sec": int64(durations[n], rng),
                "resources": {"party_size": n},
            },
            "user_information": {
                "user_id": f"bench-user-{seed}-{token[:16]}",
                "given_name": "Bench",
                "family_name": f"Guest {seed}",
                "telephone": "+44 20 7946 0000",
                "email": "bench@example.com",
            },
            "idempotency_token": token,
        }
        data = json.dumps(body).encode()
        answered = v3_call(client, "CreateBooking", data, rec, "create")
        if answered is None:
            continue
        reply, elapsed = answered
        if "booking" in reply and reply["booking"].get("status") == "CONFIRMED":
            rec.add("create-ok", elapsed)
            if cancel_every > 0:
                booked.append((merchant, str(reply["booking"]["booking_id"])))
                confirmed += 1
                if confirmed % cancel_every == 0:
                    host_cancel(client, base, booked, rng, rec)
        elif "booking_failure" in reply:
            rec.add("create-failure", elapsed)
            rec.note(f"create-failure {reply['booking_failure'].get('cause')}")
        else:
            rec.count("create-unexpected-200")
    client.close()


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
                rec.count(f"{kind}-{response.status_code}")


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


def lags_by_kind(db: Path) -> dict[str, list[float]]:
    """delivered_at - created_at of every delivered message, by kind (read-only)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT kind, delivered_at - created_at FROM outbox WHERE state = 'delivered'"
        ).fetchall()
    finally:
        conn.close()
    out: dict[str, list[float]] = defaultdict(list)
    for kind, lag in rows:
        out[str(kind)].append(float(lag))
    return out


def lag_line(lags: list[float]) -> str:
    if not lags:
        return "none"
    return (
        f"p50 {percentile(lags, 0.50) * 1000:8.1f} ms  p99 {percentile(lags, 0.99) * 1000:8.1f} ms"
        f"  max {max(lags) * 1000:8.1f} ms"
    )


def wait_for_drain(store: SQLiteStore, seconds: float) -> tuple[float, int]:
    """Poll until nothing is pending or `seconds` pass; (seconds waited, still pending)."""
    start = time.monotonic()
    pending = int(store.outbox_stats(recent=0)["pending"])
    while pending and time.monotonic() - start < seconds:
        time.sleep(0.2)
        pending = int(store.outbox_stats(recent=0)["pending"])
    return time.monotonic() - start, pending


def verdict(value: float, target: float) -> str:
    return "met" if value < target else "NOT met"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="webhook booking phase")
    parser.add_argument("--lookup-seconds", type=float, default=15.0, help="v3 lookup phase")
    parser.add_argument("--create-seconds", type=float, default=15.0, help="v3 create phase")
    parser.add_argument("--host-seconds", type=float, default=5.0, help="board/quote phase")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--restaurants", type=int, default=20)
    parser.add_argument("--tables", type=int, default=18, help="tables per restaurant")
    parser.add_argument("--days", type=int, default=21, help="days ahead booked, from tomorrow")
    parser.add_argument(
        "--cancel-every", type=int, default=10, help="host cancel after every Nth booking (0: off)"
    )
    parser.add_argument("--no-notify", action="store_true", help="no partner notify_url/stub")
    parser.add_argument("--drain-seconds", type=float, default=120.0, help="outbox drain bound")
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
    stub = None if args.no_notify else PartnerStub()
    notify_url = stub.url if stub is not None else None
    (work / "server.toml").write_text(settings_toml(merchants, notify_url), encoding="utf-8")

    # Every slot of every bookable day (tomorrow onwards), as an instant with its offset.
    r0 = load_restaurant(configs[0])  # all restaurants share hours and zone
    today = datetime.now(UTC).astimezone(r0.tz).date()
    days = [today + timedelta(days=d) for d in range(1, args.days + 1)]
    starts = [s.local.isoformat() for day in days for s in calendar.slots(r0, day)]
    slots = {m: starts for m in merchants}
    # v3: the published dinner slots of the same days, and the party sizes the floor seats.
    dinner = dinner_slots(r0, days)
    sizes = [n for n in range(1, r0.max_party_size + 1) if spots_total(r0.floor, n) > 0]
    durations = {n: r0.duration_minutes(n) * 60 for n in sizes}
    print(
        f"{args.restaurants} restaurants x {args.tables} tables, {len(days)} days"
        f" ({_span(days)}), {len(starts)} slots each ({len(dinner)} dinner);"
        f" party sizes {sizes[0]}-{sizes[-1]}; {args.clients} clients; work dir {work}"
    )
    if stub is not None:
        print(f"partner notify_url: healthy stub at {stub.url}")
    else:
        print("partner notify_url: none (--no-notify)")

    port = free_port()
    server = start_server(work, configs, port)
    base = f"http://127.0.0.1:{port}"
    print(f"server pid {server.pid} on {base}")
    store = SQLiteStore(work / "bench.db")  # the server's file, read beside it (WAL)
    walls: dict[str, float] = {}
    backlog: list[str] = []  # outbox pending at the end of each phase

    def phase(name: str, seconds: float, target: Callable[..., None], a: tuple[Any, ...]) -> None:
        if seconds <= 0:
            return
        start, end = run_phase(args.clients, seconds, target, a)
        walls[name] = end - start
        if stub is not None:
            stats = store.outbox_stats(recent=0)
            backlog.append(f"{name} {stats['pending']}")

    drained, left = 0.0, 0
    try:
        phase(
            "webhooks",
            args.seconds,
            booking_worker,
            (base, slots, r0.max_party_size, args.cancel_every),
        )
        pools = [
            lookup_bodies(merchants, dinner, sizes, durations, seed) for seed in range(args.clients)
        ]
        phase(
            "lookup",
            args.lookup_seconds,
            lookup_worker,
            (base, pools),
        )
        phase(
            "create",
            args.create_seconds,
            create_worker,
            (base, merchants, dinner, sizes, durations, args.cancel_every),
        )
        phase("host", args.host_seconds, host_worker, (base, merchants))
        if stub is not None:
            drained, left = wait_for_drain(store, args.drain_seconds)
    finally:
        status = stop_server(server)
    outbox = store.outbox_stats(recent=100_000)
    store.close()
    by_kind = lags_by_kind(work / "bench.db")

    print()
    lat = RECORDER.latencies
    if "webhooks" in walls:
        report(["booking-200", "booking-409"], walls["webhooks"], "bookings")
    if "lookup" in walls:
        report(["lookup"], walls["lookup"], f"BatchAvailabilityLookup ({LOOKUP_SLOTS} slots)")
        asked, available = RECORDER.tally["lookup-slots"], RECORDER.tally["lookup-available"]
        share = available / asked if asked else 0.0
        print(f"  slots answered available: {available} of {asked} ({share:.0%})")
    if "create" in walls:
        report(["create-ok", "create-failure"], walls["create"], "CreateBooking")
        causes = {k: v for k, v in RECORDER.tally.items() if k.startswith("create-failure ")}
        if causes:
            print(f"  failure causes: {causes}")
    cancel_wall = walls.get("webhooks", 0.0) + walls.get("create", 0.0)
    if lat["cancel"] and cancel_wall > 0:
        report(["cancel"], cancel_wall, "host cancels of partner bookings (webhook+create phases)")
    if "host" in walls:
        report(["board", "quote"], walls["host"], "host API")
    if RECORDER.other:
        print(f"  other statuses: {dict(RECORDER.other)}")

    print()
    if "webhooks" in walls:
        durable = len(lat["booking-200"]) / walls["webhooks"]
        booking_lat = lat["booking-200"] + lat["booking-409"]
        p99 = percentile(booking_lat, 0.99) * 1000 if booking_lat else float("nan")
        print(
            f"durable bookings/s {durable:.0f} (target >= {TARGET_BOOKINGS_PER_S}):"
            f" {'met' if durable >= TARGET_BOOKINGS_PER_S else 'NOT met'}"
        )
        print(
            f"booking p99 {p99:.1f} ms (target < {TARGET_P99_MS:.0f} ms):"
            f" {verdict(p99, TARGET_P99_MS)}"
        )
    if lat["lookup"]:
        p99 = percentile(lat["lookup"], 0.99) * 1000
        print(
            f"lookup p99 {p99:.1f} ms (target < {TARGET_LOOKUP_P99_MS:.0f} ms;"
            f" the partner allows 1.5 s): {verdict(p99, TARGET_LOOKUP_P99_MS)}"
        )
    create_lat = lat["create-ok"] + lat["create-failure"]
    if create_lat:
        p99 = percentile(create_lat, 0.99) * 1000
        print(
            f"CreateBooking p99 {p99:.1f} ms (target < {TARGET_CREATE_P99_MS:.0f} ms):"
            f" {verdict(p99, TARGET_CREATE_P99_MS)}"
        )

    if stub is not None:
        print()
        lags = [float(x) for x in outbox["recent_lags"]]
        print(
            f"outbox: delivered {outbox['delivered']}, pending {outbox['pending']},"
            f" dead {outbox['dead']}; drain after the load {drained:.1f} s"
            f" (bound {args.drain_seconds:.0f} s, {left} still pending)"
        )
        print(f"  pending at the end of each phase: {', '.join(backlog)}")
        print(f"  notification lag (delivered_at - created_at), {len(lags)}: {lag_line(lags)}")
        for kind in sorted(by_kind):
            print(f"    {kind:<13} {len(by_kind[kind]):>6}: {lag_line(by_kind[kind])}")
        counts, distinct, without = stub.stats()
        print(
            f"  stub received {sum(counts.values())} requests {counts};"
            f" {distinct} distinct Hoststand-Message-Id, {without} without one"
        )
        stub.close()
    print(f"server exit status after SIGTERM: {status}")
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


def _span(days: list[date]) -> str:
    return f"{days[0].isoformat()}..{days[-1].isoformat()}" if days else "none"


if __name__ == "__main__":
    main()
