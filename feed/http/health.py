"""/healthz (is it working: the store answers, partners are not left waiting) and /readyz
(may the load balancer send it requests: serving, and the store answers).

/healthz is 503 when the store does not answer, when it cannot be written (a write probe
fails: its disk is full or failing), or when the oldest message still waiting for a partner
is older than [health] max_backlog_seconds; it also says how old the last export is, and is
degraded (still 200) when an export failed or a floor plan here is out of date. /readyz
reads only: a server that cannot write still answers lookups and the board. The store is
asked on a worker thread: a locked SQLite file waits out its busy timeout there, not on the
event loop that answers every other request.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from engine import FloorPlan
from feed.http.metrics import CONTENT_TYPE, Metrics
from feed.service.floors import floor_drifts
from feed.settings import Settings
from store.log import LogStore, StoreError, StoreUnavailable, StoreUnreachable, StoreUnwritable

PROBE_SCOPE = "health"  # a key nobody writes: recalling it is a cheap read of the store
WRITE_PROBE_KEY = "write-probe"  # the record the write probe overwrites with the time


class Outbox(BaseModel):
    pending: int
    dead: int
    oldest_pending_age_seconds: float | None = Field(
        description="How long the oldest message for a partner has waited; null: none waiting"
    )


class LastExport(BaseModel):
    age_seconds: float = Field(description="Seconds since the last export finished")
    outcome: str
    destination: str


class Health(BaseModel):
    status: str = Field(
        description="ok; degraded when the last export to a destination failed (still 200:"
        " bookings work, the partner's feed is stale) or a restaurant's floor plan here is not"
        " the one in force on the store (reload this server); or unhealthy (then the status"
        " code is 503)"
    )
    store: str = Field(description="ok, unavailable, or unwritable (a write probe failed)")
    outbox: Outbox | None
    last_export: LastExport | None
    max_backlog_seconds: float
    problems: list[str]


class Ready(BaseModel):
    status: str = Field(description="ready, starting, stopping or store unavailable")


def check(
    store: LogStore, settings: Settings, now: float, floors: Mapping[str, FloorPlan] | None = None
) -> tuple[int, Health]:
    """The status code and body of /healthz at Unix time `now`; `floors`: this server's
    floor plan per restaurant, each compared with the floor in force on the store."""
    bound = settings.health.max_backlog_seconds
    try:
        backlog = store.outbox_backlog()
        # A run records one export per destination, the last destination's last: enough
        # records for the newest of each (a failed staging is one record on its own).
        exports = store.exports(max(1, len(settings.export.destinations)))
    except StoreError as exc:
        problem = f"the store does not answer: {type(exc).__name__}"
        return 503, Health(
            status="unhealthy",
            store="unavailable",
            outbox=None,
            last_export=None,
            max_backlog_seconds=bound,
            problems=[problem],
        )
    stamps = [b.oldest_pending_created_at for b in backlog.values()]
    oldest = min((s for s in stamps if s is not None), default=None)
    age = max(0.0, now - oldest) if oldest is not None else None
    outbox = Outbox(
        pending=sum(b.pending for b in backlog.values()),
        dead=sum(b.dead for b in backlog.values()),
        oldest_pending_age_seconds=round(age, 3) if age is not None else None,
    )
    last = None
    if exports:
        record = exports[0]
        last = LastExport(
            age_seconds=round(max(0.0, now - float(record["finished_at"])), 3),
            outcome=str(record["outcome"]),
            destination=str(record["destination"]),
        )
    problems = []
    unwritable = write_trouble(store, now)
    if unwritable is not None:
        problems.append(unwritable)
    if age is not None and age > bound:
        problems.append(f"a message has waited {age:.0f} s for a partner (bound {bound:g} s)")
    # Degraded, not unhealthy: the server still books right (a booking its rules put on a
    # table the floor in force lacks is put on another), but its lookups and feeds may
    # count such a table until it is reloaded.
    outdated = floors_out_of_date(store, floors or {})
    failed_exports = export_failures(exports, now)
    status = "unhealthy" if problems else "degraded" if failed_exports or outdated else "ok"
    problems += failed_exports + outdated
    health = Health(
        status=status,
        store="ok" if unwritable is None else "unwritable",
        outbox=outbox,
        last_export=last,
        max_backlog_seconds=bound,
        problems=problems,
    )
    return (503 if status == "unhealthy" else 200), health


def floors_out_of_date(store: LogStore, floors: Mapping[str, FloorPlan]) -> list[str]:
    """A line for each restaurant whose floor plan here is not the one in force on the
    store (`floors.floor_drift`): another server reloaded or started on a newer file."""
    return [
        f"{merchant_id}: this server's floor plan is not the one in force on the store"
        f" (another server reloaded or started on a newer file): {drift}; reload this"
        " server (SIGHUP or POST /api/v1/admin/reload)"
        for merchant_id, drift in floor_drifts(store, floors).items()
        if drift is not None
    ]


def export_failures(records: list[Any], now: float) -> list[str]:
    """A line for each destination whose newest export in `records` (newest first) failed."""
    newest: dict[str, Any] = {}
    for record in records:
        newest.setdefault(str(record["destination"]), record)
    return [
        f"the last export to {where} failed"
        f" {max(0.0, now - float(record['finished_at'])):.0f} s ago: {record.get('error', '')}"
        for where, record in newest.items()
        if record["outcome"] != "delivered"
    ]


async def healthz(
    store: LogStore, settings: Settings, floors: Mapping[str, FloorPlan] | None = None
) -> JSONResponse:
    status, health = await run_in_threadpool(check, store, settings, time.time(), floors)
    return JSONResponse(health.model_dump(), status_code=status)


HEALTH_RESPONSES: dict[int | str, dict[str, Any]] = {503: {"model": Health}}


def store_trouble(store: LogStore) -> str | None:
    """Why the store does not answer a cheap read now, or None when it does."""
    try:
        store.recall(PROBE_SCOPE, "probe")
    except StoreUnreachable as exc:
        return f"the store is unreachable, retry: {exc}"
    except StoreError as exc:
        return f"the store does not answer, retry: {exc}"
    return None


def write_trouble(store: LogStore, now: float) -> str | None:
    """Why the store cannot be written now (a small durable write fails: disk full, I/O
    errors, a read-only file), or None when it can. A write that only waited out a lock
    is not trouble: the next one gets its turn."""
    try:
        store.append_all([], put=[(PROBE_SCOPE, WRITE_PROBE_KEY, now)])
    except StoreUnwritable as exc:
        return f"the store cannot be written, retry: {exc}"
    except StoreUnavailable:
        return None
    except StoreError as exc:
        return f"the store cannot be written, retry: {exc}"
    return None


def store_trouble_writing(store: LogStore, now: float) -> str | None:
    """Why the store cannot book now: it does not answer a read, or it cannot be written."""
    return store_trouble(store) or write_trouble(store, now)


def store_answers(store: LogStore) -> bool:
    return store_trouble(store) is None


class Readiness:
    """Where the serve process is in its life: starting, serving or stopping."""

    def __init__(self) -> None:
        self.state = "starting"

    def serving(self) -> None:
        self.state = "serving"

    def stopping(self) -> None:
        self.state = "stopping"


def readiness_router(store: LogStore, readiness: Readiness) -> APIRouter:
    """/readyz; `readiness` is moved along by the serve process (feed.http.serving)."""
    routes = APIRouter()

    @routes.get("/readyz", response_model=Ready, responses={503: {"model": Ready}}, tags=["health"])
    async def readyz() -> JSONResponse:
        """200 once serving and the store answers; 503 while starting or stopping, or when
        the store does not answer."""
        if readiness.state != "serving":
            return JSONResponse({"status": readiness.state}, status_code=503)
        if not await run_in_threadpool(store_answers, store):
            return JSONResponse({"status": "store unavailable"}, status_code=503)
        return JSONResponse({"status": "ready"})

    return routes


def metrics_router(metrics: Metrics) -> APIRouter:
    """/metrics, for the serve process's app (not in the OpenAPI document: not JSON)."""
    routes = APIRouter()

    @routes.get("/metrics", include_in_schema=False)
    async def metrics_text() -> Response:
        """The Prometheus text format (the outbox figures are read from the store now)."""
        body = await run_in_threadpool(metrics.render)
        return Response(body, media_type=CONTENT_TYPE)

    return routes
