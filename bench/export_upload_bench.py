"""Export and upload benchmark: the scheduled export of feed_bench's restaurants, uploaded.

Setup (untimed): the database of bench/feed_bench.py (200 restaurants x 40 tables x 10
combos, 30 days, about a third of the slots booked), built with its own functions, and a
healthy upload stub in this process (ThreadingHTTPServer on 127.0.0.1: PUT/POST -> 200,
counting requests and body bytes).

Timed: `ExportScheduler(...).run_once()` with one http destination (the stub), `now` pinned
at feed_bench.NOW, once plain and once with gzip=True (each into its own staging directory).
The record gives started_at (before the export) and finished_at (after the last upload); the
last modification time of the staged files (the export's end) splits that into export and
upload (the stub's arrival time of the first upload is printed too).

Printed per run: export seconds, upload seconds, total seconds (the record's), run_once's
wall time, files, bytes of the feed (the record's) and bytes the stub received.

Run: `.venv/bin/python bench/export_upload_bench.py [--restaurants 200] [--days 30]`
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ is not a package
import feed_bench

from feed.files.scheduler import ExportScheduler
from feed.settings import Destination, ExportSettings
from store.sqlite import SQLiteStore


class UploadStub:
    """A healthy upload target: every PUT or POST answers 200; requests and bytes counted."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self.first_at: float | None = None  # time.time() when the first upload arrived
        self.last_at: float | None = None  # ... and when the last one was read in full
        self.paths: list[str] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the scheduler's Session expects
            disable_nagle_algorithm = True  # no delayed-ACK stalls between small writes

            def _answer(self) -> None:
                arrived = time.time()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with stub.lock:
                    stub.requests += 1
                    stub.bytes += len(body)
                    stub.paths.append(self.path)
                    if stub.first_at is None:
                        stub.first_at = arrived
                    stub.last_at = time.time()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_PUT = _answer
            do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/feeds"

    def reset(self) -> None:
        with self.lock:
            self.requests, self.bytes, self.first_at, self.last_at = 0, 0, None, None
            self.paths = []

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def run(
    restaurants: list[Any],
    store: SQLiteStore,
    stub: UploadStub,
    staging: Path,
    days: int,
    gzip: bool,
) -> None:
    stub.reset()
    settings = ExportSettings(
        days=days, gzip=gzip, destinations=(Destination("http", url=stub.url),)
    )
    scheduler = ExportScheduler(restaurants, store, settings, staging, clock=lambda: feed_bench.NOW)
    started = time.perf_counter()
    records = scheduler.run_once()
    wall = time.perf_counter() - started
    scheduler.session.close()
    label = "gzip" if gzip else "plain"
    for record in records:
        total = record["finished_at"] - record["started_at"]
        written = max((staging / name).stat().st_mtime for name in record["files"])
        export_s = written - record["started_at"]
        upload_s = record["finished_at"] - written
        first = stub.first_at if stub.first_at is not None else record["finished_at"]
        print(
            f"{label}: outcome {record['outcome']}, attempts {record['attempts']},"
            f" destination {record['destination']}"
        )
        print(
            f"  export {export_s:7.2f} s   upload {upload_s:7.2f} s   total {total:7.2f} s"
            f"   (run_once wall {wall:.2f} s; first PUT arrived"
            f" {first - record['started_at']:.2f} s after the start)"
        )
        print(
            f"  files {len(record['files'])} ({', '.join(record['files'])}),"
            f" {record['entries']} entries"
        )
        print(
            f"  bytes: feed {record['bytes']:,} ({record['bytes'] / 2**20:.1f} MiB),"
            f" stub received {stub.bytes:,} in {stub.requests} requests"
            + (f" = {stub.bytes / upload_s / 2**20:.0f} MiB/s" if upload_s > 0 else "")
        )
        if record["error"]:
            print(f"  error: {record['error']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restaurants", type=int, default=200)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="export-upload-bench-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        restaurants = feed_bench.make_restaurants(args.restaurants)
        store = SQLiteStore(work / "log.sqlite3")
        reservations = feed_bench.build_logs(restaurants, store, args.days, args.seed)
        print(
            f"setup: {len(restaurants)} restaurants, {args.days} days,"
            f" {reservations} reservations in {time.perf_counter() - started:.1f} s"
            f" (feed_bench's database; now pinned at {feed_bench.NOW.isoformat()})"
        )
        stub = UploadStub()
        print(f"upload stub: PUT {stub.url}/<name> -> 200")
        try:
            run(restaurants, store, stub, work / "staging-plain", args.days, gzip=False)
            run(restaurants, store, stub, work / "staging-gzip", args.days, gzip=True)
        finally:
            stub.close()
            store.close()


if __name__ == "__main__":
    main()
