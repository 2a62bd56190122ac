"""What the store keeps per restaurant and day of service, and what the retention removes.

Plays DAYS service days at Marlowe's Kitchen through a real `hoststand serve` on a fresh
SQLite file (its clock pinned at each day's 12:00): each day partners book by webhook (with
their own reservation ids) and by v3 CreateBooking (with tokens), cancel some, and the host
takes walk-ins with Idempotency-Keys; a partner stub takes our notifications and replaces.
Then prints, per kind of record, rows and bytes per restaurant-day, before and after a
server started keep_days + DAYS later has run its retention pass.

    .venv/bin/python bench/retention_growth.py [DAYS]
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
import time
import uuid
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from store import open_store
from tests.integration.partner_stub import PartnerStub
from tests.integration.server_process import (
    HOST_TOKENS,
    SECRETS,
    booking_event,
    change_event,
    signed_post,
    start_server,
)
from tests.integration.test_partner_updates import NOTIFY_TOKEN, V3_PASSWORD, write_settings

MARLOWES = "marlowes-kitchen"
FIRST = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)  # a Monday; no closed day in the run
HOST = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
BASIC = ("tablefinder", "sample-basic-password")
DINNER = ("18:00", "18:30", "19:00", "19:30", "20:00", "20:30", "21:00")


def play(base: str, day: datetime) -> None:
    t = int(day.timestamp())
    booked = []
    for i, hhmm in enumerate(DINNER * 2):
        hour, minute = (int(p) for p in hhmm.split(":"))
        start = day.replace(hour=hour, minute=minute)
        event = booking_event(
            f"evt-{uuid.uuid4().hex}", 2 + i % 3, start.isoformat(), reservation_id=f"r-{t}-{i}"
        )
        reply = signed_post(base, "tablefinder", SECRETS["tablefinder"], event, t)
        if reply.status_code == 200:
            booked.append(reply.json()["reservation_id"])
        body = {
            "slot": {
                "merchant_id": MARLOWES,
                "service_id": "1000",
                "start_sec": str(int(start.timestamp()) + 900),
                "duration_sec": "2700",
                "resources": {"party_size": 2},
            },
            "user_information": {"user_id": f"u-{t}-{i}", "given_name": "Ada"},
            "idempotency_token": str(uuid.uuid4().int % 10**19),
        }
        requests.post(f"{base}/v3/CreateBooking", json=body, auth=BASIC, timeout=10)
    for booking in booked[::4]:
        event = change_event(f"evt-{uuid.uuid4().hex}", "cancelled", booking)
        signed_post(base, "tablefinder", SECRETS["tablefinder"], event, t)
    for i in range(8):
        headers = {**HOST, "Idempotency-Key": uuid.uuid4().hex}
        requests.post(
            f"{base}/api/v1/restaurants/{MARLOWES}/walk-ins",
            json={"size": 2, "party_id": f"w-{t}-{i}"},
            headers=headers,
            timeout=10,
        )


def pending(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(
            conn.execute("SELECT count(*) FROM outbox WHERE state = 'pending'").fetchone()[0]
        )
    finally:
        conn.close()


def measure(db: Path) -> dict[str, tuple[int, int]]:
    """Rows and bytes per table, idempotency records per scope kind."""
    conn = sqlite3.connect(db)
    out: dict[str, tuple[int, int]] = {}
    rows = conn.execute(
        "SELECT count(*), coalesce(sum(length(operation) + length(result) + length(meta)"
        " + 60), 0) FROM log_entries"
    ).fetchone()
    out["log_entries"] = (rows[0], rows[1])
    for scope, n, size in conn.execute(
        "SELECT scope, count(*), sum(length(key) + length(value)) FROM idempotency GROUP BY scope"
    ):
        kind = f"idempotency {scope.split(':')[0]}"
        was = out.get(kind, (0, 0))
        out[kind] = (was[0] + n, was[1] + size)
    for table, column in (("outbox", "payload"), ("exports", "record")):
        n, size = conn.execute(
            f"SELECT count(*), coalesce(sum(length({column})), 0) FROM {table}"
        ).fetchone()
        out[table] = (n, size)
    conn.close()
    return out


def main() -> None:
    days = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory() as tmp, PartnerStub(token=NOTIFY_TOKEN) as stub:
        db = Path(tmp) / "growth.db"
        # The partner takes our notifications and replaces (delivered outbox messages).
        settings = write_settings(Path(tmp), stub)
        settings.write_text(
            settings.read_text().replace(V3_PASSWORD, BASIC[1]) + "\n[retention]\nkeep_days = 30\n"
        )
        for d in range(days):
            day = FIRST + timedelta(days=d)
            server = start_server(
                db, day, workdir=Path(tmp), settings=settings, extra=["--no-export"]
            )
            try:
                play(server.base, day)
                deadline = time.monotonic() + 30
                while pending(db) and time.monotonic() < deadline:
                    time.sleep(0.2)  # every message delivered before the next day
            finally:
                server.stop()
        before = measure(db)
        with closing(open_store(db)) as store:  # this hour's turn went to an earlier server
            store.forget_range("turn", "retention/", "retention0")
        later = FIRST + timedelta(days=days + 31)
        server = start_server(
            db, later, workdir=Path(tmp), settings=settings, extra=["--no-export"]
        )
        time.sleep(3)  # the pass runs at start-up
        server.stop()
        after = measure(db)
    print(f"{days} service days at Marlowe's Kitchen; per restaurant-day (rows, bytes):")
    print(f"{'':28}{'kept before':>22}{'after retention':>22}")
    for kind in sorted(set(before) | set(after)):
        b, a = before.get(kind, (0, 0)), after.get(kind, (0, 0))
        print(
            f"{kind:28}{b[0] / days:>10.1f} {b[1] / days:>10.0f}"
            f"{a[0] / days:>11.1f} {a[1] / days:>10.0f}"
        )


if __name__ == "__main__":
    main()
