"""Feed export benchmark: the availability feed of 200 restaurants for 30 days.

Each restaurant: 40 tables (2, 4, 6 and 8 seats) and 10 overlapping combos, open every day
for a 6-hour dinner (17:00-23:00, last seating 22:45: 24 slots of 15 minutes), party sizes
1 to 10, and about a third of the slots booked (1-3 parties each) through `choose_unit`,
one SQLite append per restaurant-day. `now` is pinned at noon UTC before the first dinner.

Printed: the timed `export_feeds` (best of 3, as the floor is; seconds, entries/s, bytes),
with cold floors (each export works every floor out itself, as a one-shot `hoststand export`
does and as the issue's baseline was measured: the target's figure) and with warm ones (worked
out before, as a server's lookups keep them: its scheduled exports build on each other);
the peak memory (peak RSS of one export of 50, 100 and N restaurants, each in a fresh
process, and tracemalloc's peak for 5, 10 and 20 in this process, as tracemalloc slows the
export ~6x); the floor
(orjson alone serialising the same entries as one document); and the cost of one
restaurant-day (`DayBook.cells`, and `day_grid` alone). Targets: export within 2.5x
the floor (issue #11; 2x before it); peak under 300 MB and flat in the number of
restaurants; a restaurant-day < 5 ms.

Run: `.venv/bin/python bench/feed_bench.py [--restaurants 200] [--days 30] [--seed 1]`;
`--rules` turns pacing on for every restaurant (issue #14: 60 covers and 12 parties per slot,
so spots are capped from the stored bookings on every slot; target within 3x the floor).
(`--profile` adds a cProfile of the export).
`--areas 2` splits each restaurant's tables into two seating areas (issue #14; table Tn in
area n mod 2, a combo across them `cross_area`): the feed then has an entry per slot,
party size and area, and the export is held to TARGET_AREAS_FLOOR_RATIO of its floor.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import orjson

from engine import HostStand
from feed.files.documents import feed_metadata
from feed.files.export import ExportSummary, availability_entries, export_feeds
from feed.floor.availability import Booking, choose_unit, day_grid, release, spots_total
from feed.service.days import DayBook, still_booked
from feed.venue import calendar
from feed.venue.restaurant import Restaurant, parse_restaurant
from store.log import NewEntry
from store.sqlite import SQLiteStore

TARGET_FLOOR_RATIO = 2.5  # issue #11 (turn times and the live floor): was 2x before it
TARGET_AREAS_FLOOR_RATIO = 3.0  # with --areas 2 or more
TARGET_RULES_RATIO = 3.0  # with --rules (pacing capped on every slot)
TARGET_PEAK_MB = 300
TARGET_DAY_US = 5000
EXPORT_RUNS = 3  # timed exports; the best is compared with the floor's best
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)  # a Monday; dinner opens 16:00 UTC (BST)
SIZES = range(1, 11)
BOOKED_TS = -600  # every reservation is made ten hours before its day's opening
MEMORY_COUNTS = (50, 100)  # besides --restaurants, one process each
TRACED_COUNTS = (5, 10, 20)  # tracemalloc slows the export ~6x: a few restaurants suffice

SEATS = [2] * 12 + [4] * 16 + [6] * 8 + [8] * 4  # T1..T40
COMBOS = [
    ("T25", "T29"),  # 4 + 6: 10 seats, parties of 8-10
    ("T26", "T29"),  # shares T29 with the one above: the matching has work to do
    ("T26", "T30"),
    ("T27", "T31"),
    ("T28", "T31"),
    ("T29", "T30"),  # 6 + 6: 12 seats, parties of 10-12
    ("T33", "T34"),
    ("T34", "T35"),
    ("T37", "T1"),  # 8 + 2
    ("T38", "T2"),
]
DINNER = {"open": "17:00", "close": "23:00", "last_seating": "22:45"}
PACING = {"max_covers_per_slot": 60, "max_parties_per_slot": 12}  # with --rules
RULES = {"on": False}  # set by --rules (children are told with the same flag)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


# ---------------------------------------------------------------- setup (untimed)


def restaurant_config(i: int, areas: int = 1) -> dict[str, Any]:
    """The parsed-TOML shape of samples/marlowes.toml, for bench restaurant number i; with
    `areas` > 1, table Tn stands in area n mod areas."""
    config = _restaurant_config(i)
    if areas > 1:
        config["areas"] = {f"a{k}": f"Area {k}" for k in range(areas)}
        for n, table in enumerate(config["tables"], start=1):
            table["area"] = f"a{n % areas}"
        for combo in config["combos"]:
            a, b = (int(t[1:]) % areas for t in combo["tables"])
            if a != b:
                combo["cross_area"] = True
    return config


def _restaurant_config(i: int) -> dict[str, Any]:
    return {
        "merchant_id": f"bench-{i:05d}",
        "name": f"Bench Bistro {i}",
        "service_id": "1000",
        "timezone": "Europe/London",
        "telephone": "+44 20 7946 0321",
        "url": f"https://bench-{i}.example.co.uk/",
        "slot_minutes": 15,
        "horizon_days": 30,
        "max_party_size": 10,
        "address": {
            "street_address": f"{i} Lamb's Conduit Street",
            "locality": "London",
            "region": "Greater London",
            "country": "GB",
            "postal_code": "WC1N 3LE",
        },
        "geo": {"latitude": 51.5215, "longitude": -0.1185},
        "turn_minutes": {"2": 45, "4": 70, "6": 90, "8": 100, "large": 120},
        "hours": {day: [dict(DINNER)] for day in WEEKDAYS},
        "tables": [{"id": f"T{n}", "seats": s} for n, s in enumerate(SEATS, start=1)],
        "combos": [{"tables": list(pair)} for pair in COMBOS],
    }


def make_restaurants(count: int, areas: int = 1) -> list[Restaurant]:
    extra = {"pacing": dict(PACING)} if RULES["on"] else {}
    return [
        parse_restaurant({**restaurant_config(i, areas), **extra}, f"bench-{i}")
        for i in range(count)
    ]


def service_days(r: Restaurant, days: int) -> list[date]:
    return calendar.days_ahead(r, NOW, min(days, r.horizon_days))


def book_day(r: Restaurant, day: date, rng: random.Random) -> list[NewEntry]:
    """Reserve operations on a third of the day's slots, each checked by the engine."""
    slots = calendar.slots(r, day)
    stand = HostStand(r.floor)
    booked: list[Booking] = []
    entries: list[NewEntry] = []
    received = NOW.timestamp() - 3600
    for slot in sorted(rng.sample(slots, len(slots) // 3), key=lambda s: s.minute):
        for _ in range(rng.randint(1, 3)):
            n = rng.choice(SIZES)
            unit = choose_unit(r.floor, booked, slot.minute, n)
            if unit is None:
                continue
            rid = f"bk-{r.merchant_id}-{day.isoformat()}-{len(entries)}"
            operation = ["reserve", BOOKED_TS, rid, unit, slot.minute]
            result = stand.apply(operation)
            if result is not True:
                raise AssertionError(f"{operation} -> {result}")
            booked.append((tuple(unit.split("+")), slot.minute))
            entries.append(NewEntry(operation, True, received, {"party_size": n}))
    return entries


def build_logs(restaurants: list[Restaurant], store: SQLiteStore, days: int, seed: int) -> int:
    """Append every restaurant-day's reservations (one append each); returns how many."""
    rng = random.Random(seed)
    total = 0
    for r in restaurants:
        for day in service_days(r, days):
            entries = book_day(r, day, rng)
            if entries:
                store.append(r.merchant_id, day, 0, entries)
                total += len(entries)
    return total


def maxrss_mb() -> float:
    """getrusage's maxrss (KiB on Linux). In a child it starts at the parent's size at fork:
    Linux carries the peak across fork and exec, so `peak_rss_mb` is the honest one there."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_rss_mb() -> float:
    """VmHWM: this process's own peak resident set (reset by exec), else maxrss."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return maxrss_mb()


# ---------------------------------------------------------------- measurements


def memory_child(db: Path, out_dir: Path, count: int, days: int, areas: int) -> None:
    """In a fresh process: one export of `count` restaurants, then its peak memory as JSON."""
    restaurants = make_restaurants(count, areas)
    store = SQLiteStore(db)
    before = peak_rss_mb()
    summary = export_feeds(restaurants, store, out_dir, NOW, days=days)
    store.close()
    figures = {
        "restaurants": count,
        "entries": summary.entries,
        "seconds": summary.seconds,
        "before_mb": before,
        "peak_rss_mb": peak_rss_mb(),
        "maxrss_mb": maxrss_mb(),
    }
    print(json.dumps(figures))


def memory_runs(
    db: Path, work: Path, counts: list[int], days: int, areas: int
) -> list[dict[str, Any]]:
    """One export per fresh process, two processes at a time (largest first)."""
    results: dict[int, dict[str, Any]] = {}
    pending = sorted(counts, reverse=True)
    running: list[tuple[int, subprocess.Popen[str]]] = []
    while pending or running:
        while pending and len(running) < 2:
            count = pending.pop(0)
            command = [sys.executable, __file__, "--child-memory", str(count), "--db", str(db)]
            command += ["--out", str(work / f"mem-{count}"), "--days", str(days)]
            command += ["--areas", str(areas)]
            command += ["--rules"] if RULES["on"] else []
            running.append((count, subprocess.Popen(command, stdout=subprocess.PIPE, text=True)))
        count, child = running.pop(0)
        out, _ = child.communicate()
        if child.returncode != 0:
            raise RuntimeError(f"memory run for {count} restaurants failed")
        results[count] = json.loads(out.strip().splitlines()[-1])
    return [results[c] for c in counts]


def traced_peak_mb(
    restaurants: list[Restaurant], store: SQLiteStore, out_dir: Path, days: int
) -> float:
    """tracemalloc's peak over one export (in this process; it slows Python ~6x)."""
    tracemalloc.start()
    export_feeds(restaurants, store, out_dir, NOW, days=days)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def timed_exports(
    restaurants: list[Restaurant], store: SQLiteStore, work: Path, days: int, *, warm: bool
) -> tuple[list[float], ExportSummary]:
    """EXPORT_RUNS timed exports (seconds each) and the last one's summary. Cold: every
    floor let go before each export. Warm: every floor worked out before the first (an
    export keeps what it works out on a floor that was)."""
    runs: list[float] = []
    summary = None
    for run in range(EXPORT_RUNS):
        if run == 0 or not warm:  # warm: the runs build on each other after the first
            for r in restaurants:
                release(r.floor)
                release(r.online_floor)
                if warm:
                    spots_total(r.online_floor, 1)
        summary = export_feeds(restaurants, store, work / f"feed-{run}", NOW, days=days)
        runs.append(summary.seconds)
        shutil.rmtree(work / f"feed-{run}")
    assert summary is not None
    return runs, summary


def floor_seconds(
    restaurants: list[Restaurant], store: SQLiteStore, days: int, repeat: int = 3
) -> dict[str, Any]:
    """orjson alone on the same entries as one document (best of `repeat`), and the stdlib
    encoder the writer uses (one pass, for reference). The entries are collected untimed."""
    entries: list[dict[str, Any]] = []
    for r in restaurants:
        entries.extend(availability_entries(DayBook(store, r), NOW, days))
    metadata = feed_metadata(
        shard_number=0, total_shards=1, nonce="1", generation_timestamp=int(NOW.timestamp())
    )
    document = {"metadata": metadata, "service_availability": [{"availability": entries}]}
    best = float("inf")
    size = 0
    for _ in range(repeat):
        started = time.perf_counter()
        size = len(orjson.dumps(document))
        best = min(best, time.perf_counter() - started)
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    started = time.perf_counter()
    encoder.encode(document)
    stdlib = time.perf_counter() - started
    return {"seconds": best, "entries": len(entries), "bytes": size, "stdlib_seconds": stdlib}


def restaurant_days(
    restaurants: list[Restaurant], days: int, sample: int, rng: random.Random
) -> list[tuple[Restaurant, date]]:
    every = [(r, day) for r in restaurants for day in service_days(r, days)]
    return rng.sample(every, min(sample, len(every)))


def per_day(store: SQLiteStore, picked: list[tuple[Restaurant, date]]) -> dict[str, list[float]]:
    """µs per restaurant-day: `DayBook(store, r).cells` (log read and replay included), and
    `day_grid` alone on the same day's bookings."""
    cells_us: list[float] = []
    grid_us: list[float] = []
    grid_inputs: list[tuple[Restaurant, list[Booking], list[int]]] = []
    for r, day in picked:
        started = time.perf_counter()
        book = DayBook(store, r)
        book.cells(day, NOW)
        cells_us.append((time.perf_counter() - started) * 1e6)
        minutes = [s.minute for s in calendar.slots(r, day)]
        booked = still_booked(book.stand(day), book.minute(day, NOW))
        grid_inputs.append((r, booked, minutes))
    for r, booked, minutes in grid_inputs:
        started = time.perf_counter()
        day_grid(r.floor, booked, minutes, SIZES)
        grid_us.append((time.perf_counter() - started) * 1e6)
    return {"DayBook.cells": cells_us, "day_grid alone": grid_us}


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) > 1 else values[0]


def profile_export(
    restaurants: list[Restaurant], store: SQLiteStore, out_dir: Path, days: int
) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    export_feeds(restaurants, store, out_dir, NOW, days=days)
    profiler.disable()
    for order in ("cumulative", "tottime"):
        print(f"\n--- cProfile of export_feeds, {len(restaurants)} restaurants, by {order} ---")
        pstats.Stats(profiler).sort_stats(order).print_stats(25)


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restaurants", type=int, default=200)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sample", type=int, default=1000, help="restaurant-days to time")
    parser.add_argument("--profile", action="store_true", help="cProfile the export too")
    parser.add_argument(
        "--rules", action="store_true", help="pacing on for every restaurant (issue #14)"
    )
    parser.add_argument("--profile-restaurants", type=int, default=50)
    parser.add_argument("--areas", type=int, default=1, help="seating areas per restaurant")
    parser.add_argument("--child-memory", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    RULES["on"] = args.rules
    if args.child_memory is not None:
        memory_child(args.db, args.out, args.child_memory, args.days, args.areas)
        return

    with tempfile.TemporaryDirectory(prefix="feed-bench-") as tmp:
        work = Path(tmp)
        db = work / "log.sqlite3"
        started = time.perf_counter()
        restaurants = make_restaurants(args.restaurants, args.areas)
        store = SQLiteStore(db)
        reservations = build_logs(restaurants, store, args.days, args.seed)
        day_count = sum(len(service_days(r, args.days)) for r in restaurants)
        setup = time.perf_counter() - started
        print(
            f"setup: {len(restaurants)} restaurants x {day_count // len(restaurants)} days, "
            f"40 tables in {args.areas} area(s), 10 combos, 24 slots x sizes 1-10, "
            f"{reservations} reservations, "
            f"pacing {'on ' + str(PACING) if RULES['on'] else 'off'} "
            f"({reservations / day_count:.1f} per restaurant-day) in {setup:.1f} s"
        )

        # The timed export, in this process (no tracemalloc: it would slow the run). The
        # memory runs come next, while this process is still small (a child's getrusage
        # maxrss starts at the parent's size at fork); the floor's 1.4 million dicts last.
        # Best of EXPORT_RUNS, as the floor is best of its runs (each export its own dir).
        # Cold (the target's measure, as the baseline was taken): each export works
        # out every floor itself, as a one-shot `hoststand export` does. Warm: the floors
        # were worked out before (a server's lookups keep them), so the exports keep what
        # they work out and build on each other, as a server's scheduled exports do.
        def timing(runs: list[float], floors: str) -> str:
            best = min(runs)
            return (
                f"{best:.2f} s, {best / day_count * 1e6:,.0f} µs per restaurant-day with "
                f"{floors} (best of {EXPORT_RUNS}: {', '.join(f'{r:.2f}' for r in runs)} s)"
            )

        runs, summary = timed_exports(restaurants, store, work, args.days, warm=False)
        seconds = min(runs)
        print(
            f"export: {summary.entries} entries, {summary.bytes / 2**20:.1f} MiB = "
            f"{summary.entries / seconds:,.0f} entries/s in {timing(runs, 'cold floors')}"
        )
        warm_runs, _ = timed_exports(restaurants, store, work, args.days, warm=True)
        warm_seconds = min(warm_runs)
        warm = timing(warm_runs, "warm floors, as a server's scheduled export")
        print(f"        {warm}")

        print("memory, one export per fresh process (peak RSS = VmHWM of that process):")
        counts = sorted({*(c for c in MEMORY_COUNTS if c < args.restaurants), args.restaurants})
        peaks = []
        for m in memory_runs(db, work, counts, args.days, args.areas):
            peaks.append(m["peak_rss_mb"])
            print(
                f"  {m['restaurants']:5d} restaurants, {m['entries']:8d} entries: peak RSS "
                f"{m['peak_rss_mb']:6.1f} MiB ({m['before_mb']:.1f} MiB before the export; "
                f"getrusage maxrss {m['maxrss_mb']:.1f} MiB, counts the parent at fork)"
            )
        print("memory, tracemalloc peak of one export in this process (Python allocations):")
        for count in TRACED_COUNTS:
            if count <= args.restaurants:
                peak = traced_peak_mb(
                    restaurants[:count], store, work / f"traced-{count}", args.days
                )
                peaks.append(peak)
                print(f"  {count:5d} restaurants: traced peak {peak:6.1f} MiB")
        flat = peaks[len(counts) - 1] <= peaks[0] * 1.2 + 5
        verdict = "ok" if max(peaks) < TARGET_PEAK_MB and flat else "MISSED"
        print(f"  target: < {TARGET_PEAK_MB} MB and flat in restaurants: {verdict}")

        measured = floor_seconds(restaurants, store, args.days)
        floor, floor_entries, floor_bytes = (measured[k] for k in ("seconds", "entries", "bytes"))
        if floor_entries != summary.entries:
            raise AssertionError(f"floor has {floor_entries} entries, export {summary.entries}")
        ratio = seconds / floor
        stdlib = measured["stdlib_seconds"]
        print(
            f"floor:  orjson.dumps of the same {floor_entries} entries as one document, "
            f"{floor_bytes / 2**20:.1f} MiB in {floor:.3f} s "
            f"= {floor_entries / floor:,.0f} entries/s"
        )
        print(f"        (the stdlib json encoder, same document: {stdlib:.2f} s)")
        target = TARGET_FLOOR_RATIO if args.areas < 2 else TARGET_AREAS_FLOOR_RATIO
        if RULES["on"]:
            target = max(target, TARGET_RULES_RATIO)
        verdict = "ok" if ratio <= target else "MISSED"
        print(
            f"ratio:  export / floor = {ratio:.1f}x, cold floors (target <= {target}x): {verdict}"
        )
        worst_ratio = max(runs) / floor
        print(
            f"        (the slowest of the {EXPORT_RUNS} exports: {worst_ratio:.1f}x; with warm"
            f" floors {warm_seconds / floor:.1f}x, the slowest {max(warm_runs) / floor:.1f}x)"
        )

        picked = restaurant_days(restaurants, args.days, args.sample, random.Random(args.seed))
        print(f"one restaurant-day (all 24 slots x sizes 1-10), {len(picked)} sampled:")
        worst = 0.0
        for name, values in per_day(store, picked).items():
            worst = max(worst, p99(values))
            print(
                f"  {name:15s} mean {statistics.fmean(values):8.1f} µs, "
                f"p99 {p99(values):8.1f} µs, max {max(values):8.1f} µs"
            )
        verdict = "ok" if worst < TARGET_DAY_US else "MISSED"
        print(f"  target: < {TARGET_DAY_US} µs: {verdict}")

        if args.profile:
            profile_export(
                restaurants[: args.profile_restaurants], store, work / "profile", args.days
            )
        store.close()


if __name__ == "__main__":
    main()
