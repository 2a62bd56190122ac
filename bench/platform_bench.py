"""Platform benchmark: receivers scaled out on one PostgreSQL, against one on SQLite; and the
feed export of many restaurants from each store.

Load (per configuration): 200 restaurants (samples/marlowes.toml, each its own merchant_id,
18 tables), `--clients` threads (32) sending signed `reservation.requested` webhooks for
random restaurants, days (tomorrow onwards), slots and party sizes, spread evenly over the
receivers (`hoststand serve --no-export`, real clock, no partner notify_url). Configurations:
PostgreSQL with 1, 2 and 4 receiver processes (a fresh schema each), and SQLite with one
process (a fresh file). Each runs `--warmup` seconds unmeasured, then `--seconds` measured.
Printed side by side: durable bookings/s (200s: committed before the reply), refusals/s
(409), p50/p99 latency of a durable booking, errors, and the scale-out ratio (bookings/s
over the 1-process PostgreSQL figure).

Export: `--export-restaurants` (1,000) restaurants x `--export-days` (30) days of
reservations (bench/feed_bench.py's restaurants and logs: a third of each day's slots
booked, the same seed for both stores), loaded into a PostgreSQL schema and an SQLite file;
then one `export_feeds` of all of them from each, in a fresh process: seconds and peak RSS.

The machine's cores are shared by the receivers, the clients and PostgreSQL: the scale-out
ratio says what more processes buy on this machine, not on a larger one.

Run: `.venv/bin/python bench/platform_bench.py --pg postgresql://.../bench_db`
(or $HOSTSTAND_BENCH_PG); every schema it makes is dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import requests
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts below

import feed_bench
import receiver_bench

from feed.files.export import export_feeds
from feed.service.days import DayBook
from feed.venue import calendar
from feed.venue.calendar import Slot
from feed.venue.restaurant import load_restaurant
from store import open_store
from store.log import LogAppend
from store.turns import Turns

PROCESS_COUNTS = (1, 2, 4)


# ---------------------------------------------------------------- databases


@contextmanager
def pg_schema(base_url: str, label: str) -> Iterator[str]:
    """A fresh schema of `base_url`'s database as a URL (search_path); dropped on exit."""
    name = f"bench_{label}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    separator = "&" if "?" in base_url else "?"
    try:
        yield f"{base_url}{separator}options={quote(f'-csearch_path={name}')}"
    finally:
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


# ---------------------------------------------------------------- receivers


def start_receivers(work: Path, configs: list[Path], db: str, count: int) -> list[Any]:
    """`count` serve processes on `db`, started one after the other (the first creates the
    tables); returns (process, base URL) pairs once each answers /healthz."""
    running = []
    for i in range(count):
        port = receiver_bench.free_port()
        args = [receiver_bench.hoststand(), "serve", "--no-export"]
        for c in configs:
            args += ["--config", str(c)]
        args += ["--db", db, "--settings", str(work / "server.toml")]
        args += ["--host", "127.0.0.1", "--port", str(port)]
        log = (work / f"server-{count}-{i}.log").open("wb")
        process = subprocess.Popen(args, cwd=work, stdout=log, stderr=subprocess.STDOUT)
        running.append((process, f"http://127.0.0.1:{port}"))
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                stop_receivers(running)
                sys.exit(
                    f"receiver did not start: {(work / f'server-{count}-{i}.log').read_text()}"
                )
            try:
                if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).ok:
                    break
            except requests.ConnectionError:
                pass
            time.sleep(0.05)
    return running


def stop_receivers(running: list[Any]) -> None:
    for process, _ in running:
        receiver_bench.stop_server(process)


def load_phase(
    bases: list[str], slots: dict[str, list[str]], clients: int, seconds: float
) -> tuple[receiver_bench.Recorder, float]:
    """`clients` booking threads, client i on receiver i mod N; (recorder, wall seconds)."""
    rec = receiver_bench.Recorder()
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(
            target=receiver_bench.booking_worker,
            args=(bases[i % len(bases)], slots, 10, 0, deadline, rec, random.randrange(1 << 30)),
        )
        for i in range(clients)
    ]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rec, time.monotonic() - started


def run_load(
    label: str, work: Path, configs: list[Path], db: str, processes: int, args: Any, slots: Any
) -> dict[str, Any]:
    running = start_receivers(work, configs, db, processes)
    bases = [base for _, base in running]
    try:
        load_phase(bases, slots, args.clients, args.warmup)
        rec, wall = load_phase(bases, slots, args.clients, args.seconds)
    finally:
        stop_receivers(running)
    ok = rec.latencies["booking-200"]
    refused = rec.latencies["booking-409"]
    figures = {
        "label": label,
        "processes": processes,
        "bookings_per_s": len(ok) / wall,
        "refusals_per_s": len(refused) / wall,
        "p50_ms": receiver_bench.percentile(ok, 0.50) * 1000 if ok else float("nan"),
        "p99_ms": receiver_bench.percentile(ok, 0.99) * 1000 if ok else float("nan"),
        "errors": sum(rec.other.values()),
    }
    print(
        f"  {label:<16} {processes} proc  {figures['bookings_per_s']:7.0f} bookings/s"
        f"  {figures['refusals_per_s']:6.0f} refusals/s  p50 {figures['p50_ms']:6.1f} ms"
        f"  p99 {figures['p99_ms']:6.1f} ms  errors {figures['errors']}",
        flush=True,
    )
    return figures


# ---------------------------------------------------------------- export


def load_logs(dbs: list[str], count: int, days: int, seed: int) -> int:
    """feed_bench's reservations for `count` restaurants x `days` days into every store of
    `dbs` (the same logs in each), one transaction per restaurant (all its days)."""
    rng = random.Random(seed)
    stores = [open_store(db) for db in dbs]
    total = 0
    try:
        for r in feed_bench.make_restaurants(count):
            appends = []
            for day in feed_bench.service_days(r, days):
                entries = feed_bench.book_day(r, day, rng)
                if entries:
                    appends.append(LogAppend(r.merchant_id, day, 0, entries))
                    total += len(entries)
            for store in stores:
                if appends:
                    store.append_all(appends)
    finally:
        for store in stores:
            store.close()
    return total


def export_child(db: str, out: Path, count: int, days: int) -> None:
    """In a fresh process: one export of every restaurant; seconds and peak RSS as JSON."""
    restaurants = feed_bench.make_restaurants(count)
    store = open_store(db)
    before = feed_bench.peak_rss_mb()
    started = time.perf_counter()
    summary = export_feeds(restaurants, store, out, feed_bench.NOW, days=days)
    seconds = time.perf_counter() - started
    store.close()
    print(
        json.dumps(
            {
                "seconds": seconds,
                "entries": summary.entries,
                "bytes": summary.bytes,
                "before_mb": before,
                "peak_rss_mb": feed_bench.peak_rss_mb(),
            }
        )
    )


def run_export(label: str, db: str, out: Path, args: Any) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child-export", "--db", db, "--out", str(out)]
    command += ["--export-restaurants", str(args.export_restaurants)]
    command += ["--export-days", str(args.export_days)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        sys.exit(f"{label} export failed:\n{done.stderr}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"  {label:<10} {figures['seconds']:6.1f} s  {figures['entries']:>10,} entries"
        f"  {figures['bytes'] / 1e6:7.1f} MB  peak RSS {figures['peak_rss_mb']:6.0f} MB"
        f" (at start {figures['before_mb']:.0f} MB)",
        flush=True,
    )
    return figures


# ---------------------------------------------------------------- the sweep's turn


def turn_cost(url: str, rounds: int = 100) -> None:
    """What a sweep turn (one write per interval, store.turns) costs a receiver: a lookup
    over 30 days as the store stands, and the same right after a turn moved the version
    (each cached day then reads its log's empty tail; the day grids stay cached)."""
    r = load_restaurant(receiver_bench.SAMPLE)
    store = open_store(url)
    try:
        book = DayBook(store, r)
        now = datetime.now(UTC)
        days = calendar.days_ahead(r, now, 30)
        wanted: dict[date, Sequence[tuple[Slot, int]]] = {
            day: [(s, 2) for s in calendar.slots(r, day)[-1:]] for day in days
        }
        book.spots_days(wanted, now)  # every day loaded and its grid cached
        turns = Turns(store, "bench-sweep", 10.0)
        steady, after, writes = [], [], []
        for i in range(rounds):
            started = time.perf_counter()
            book.spots_days(wanted, now)
            steady.append(time.perf_counter() - started)
            started = time.perf_counter()
            turns.mine(1_800_000_000.0 + 10 * i)
            writes.append(time.perf_counter() - started)
            started = time.perf_counter()
            book.spots_days(wanted, now)
            after.append(time.perf_counter() - started)
    finally:
        store.close()

    def ms(values: list[float]) -> str:
        p50 = receiver_bench.percentile(values, 0.5) * 1000
        return f"p50 {p50:5.2f} ms, p99 {receiver_bench.percentile(values, 0.99) * 1000:5.2f} ms"

    print(f"  a turn (one write): {ms(writes)}")
    print(f"  a 30-day lookup, version unchanged: {ms(steady)}")
    print(f"  the same right after a turn:       {ms(after)}  (once per interval per process)")


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg", default=os.environ.get("HOSTSTAND_BENCH_PG", ""))
    parser.add_argument("--seconds", type=float, default=12.0, help="measured load per config")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured load per config")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--restaurants", type=int, default=200)
    parser.add_argument("--tables", type=int, default=18)
    parser.add_argument("--days", type=int, default=21, help="days booked, from tomorrow")
    parser.add_argument("--export-restaurants", type=int, default=1000)
    parser.add_argument("--export-days", type=int, default=30)
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--skip-export", action="store_true")
    parser.add_argument("--skip-turn", action="store_true")
    parser.add_argument("--child-export", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_export:
        export_child(args.db, Path(args.out), args.export_restaurants, args.export_days)
        return
    if not args.pg:
        sys.exit("give --pg URL (or $HOSTSTAND_BENCH_PG): a database the bench may add schemas to")

    work = Path(tempfile.mkdtemp(prefix="platform-bench-"))
    print(f"cpus {os.cpu_count()}; work dir {work}", flush=True)
    if not args.skip_load:
        merchants = [f"bench-{i:03d}" for i in range(args.restaurants)]
        configs = []
        for i in range(args.restaurants):
            path = work / f"bench-{i:03d}.toml"
            path.write_text(receiver_bench.restaurant_toml(i, args.tables), encoding="utf-8")
            configs.append(path)
        (work / "server.toml").write_text(receiver_bench.settings_toml(merchants), "utf-8")
        r0 = load_restaurant(configs[0])
        today = datetime.now(UTC).astimezone(r0.tz).date()
        days = [today + timedelta(days=d) for d in range(1, args.days + 1)]
        starts = [s.local.isoformat() for day in days for s in calendar.slots(r0, day)]
        slots = {m: starts for m in merchants}
        print(
            f"load: {args.restaurants} restaurants x {args.tables} tables, {len(days)} days,"
            f" {args.clients} clients, {args.warmup:.0f} s warm-up + {args.seconds:.0f} s each",
            flush=True,
        )
        results = []
        for processes in PROCESS_COUNTS:
            with pg_schema(args.pg, f"load{processes}") as url:
                results.append(run_load("postgresql", work, configs, url, processes, args, slots))
        sqlite_db = str(work / "load.db")
        results.append(run_load("sqlite", work, configs, sqlite_db, 1, args, slots))
        base = results[0]["bookings_per_s"]
        print("\nscale-out on PostgreSQL (bookings/s over 1 process):")
        for one in results:
            print(
                f"  {one['label']:<10} x{one['processes']}: {one['bookings_per_s']:7.0f}/s"
                f"  ratio {one['bookings_per_s'] / base:4.2f}  p99 {one['p99_ms']:6.1f} ms"
            )
    if not args.skip_turn:
        print("\nthe sweep's turn on PostgreSQL (a write each interval; it moves the version):")
        with pg_schema(args.pg, "turn") as url:
            turn_cost(url)
    if not args.skip_export:
        count, ndays = args.export_restaurants, args.export_days
        print(f"\nexport: {count} restaurants x {ndays} days (feed_bench's floors)", flush=True)
        with pg_schema(args.pg, "export") as url:
            sqlite_db = str(work / "export.db")
            started = time.perf_counter()
            rows = load_logs([url, sqlite_db], count, ndays, seed=1)
            took = time.perf_counter() - started
            print(f"  loaded {rows:,} reservations into each store in {took:.0f} s", flush=True)
            pg = run_export("postgresql", url, work / "out-pg", args)
        lite = run_export("sqlite", sqlite_db, work / "out-sqlite", args)
        print(
            f"  postgresql / sqlite: time x{pg['seconds'] / lite['seconds']:.2f},"
            f" peak RSS x{pg['peak_rss_mb'] / lite['peak_rss_mb']:.2f}"
        )


if __name__ == "__main__":
    main()
