"""GET /metrics: the server's counters in the Prometheus text format (prometheus_client).

Each app has its own CollectorRegistry, so several apps in one process (tests) never share
a count. Requests are counted by the observing middleware (feed.http.observe), bookings,
retries, deliveries and exports by feed.service.events; the outbox backlog is read from the
store at scrape time (one grouped query), so it is never stale.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from engine import FloorPlan
from feed.push.outbox import unserved_days
from feed.service.events import Listener
from feed.service.floors import floor_drifts
from store.log import LogStore, StoreError

CONTENT_TYPE = CONTENT_TYPE_LATEST
UNKNOWN = "unknown"  # a partner id we do not have: not a label value (a caller picks it)
# Seconds: a lookup is about a millisecond, a booking a few (an fsync), a slow one 100s.
REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
EXPORT_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)


class OutboxCollector(Collector):
    """Pending and dead messages and the oldest pending message's age, per partner, read
    from the store when scraped; every configured partner has a value, 0 when all is sent.
    Also, per restaurant no server served when its replaces fell due, the days partners
    have not been told of since (only such restaurants have a value)."""

    def __init__(self, store: LogStore, partners: Collection[str]) -> None:
        self.store = store
        self.partners = sorted(partners)

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("hoststand_store_up", "1 when the store answered this scrape")
        try:
            backlog = self.store.outbox_backlog()
            unserved = unserved_days(self.store)
        except StoreError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        now = time.time()
        pending = GaugeMetricFamily(
            "hoststand_outbox_pending", "Messages waiting for a partner", labels=["partner"]
        )
        dead = GaugeMetricFamily(
            "hoststand_outbox_dead",
            "Messages given up on (never to be sent): the partner refused them, or is not"
            " configured",
            labels=["partner"],
        )
        oldest = GaugeMetricFamily(
            "hoststand_outbox_oldest_pending_age_seconds",
            "How long the oldest pending message has waited (0: none pending)",
            labels=["partner"],
        )
        for partner in sorted({*self.partners, *backlog}):
            one = backlog.get(partner)
            created = one.oldest_pending_created_at if one is not None else None
            pending.add_metric([partner], one.pending if one is not None else 0)
            dead.add_metric([partner], one.dead if one is not None else 0)
            oldest.add_metric([partner], max(0.0, now - created) if created is not None else 0)
        yield pending
        yield dead
        yield oldest
        # A rolling restart shows here for as long as a restaurant's server is down; a
        # restaurant that stays here was removed from every server's configuration.
        days = GaugeMetricFamily(
            "hoststand_outbox_unserved_days",
            "Days of a restaurant no server on the store serves whose changes partners have"
            " not been told of (its servers restarting, or it was removed)",
            labels=["merchant"],
        )
        for merchant, n in sorted(unserved.items()):
            days.add_metric([merchant], n)
        yield days


class FloorCollector(Collector):
    """Per restaurant, 1 when its floor plan here is not the one in force on the store
    (`floors.floor_drift`: another server reloaded or started on a newer file), read from the
    store when scraped; `floors()` gives the floors this server runs now."""

    def __init__(self, store: LogStore, floors: Callable[[], Mapping[str, FloorPlan]]) -> None:
        self.store = store
        self.floors = floors

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "hoststand_floor_out_of_date",
            "1 when the restaurant's floor plan here is not the one in force on the store"
            " (reload this server)",
            labels=["merchant"],
        )
        for merchant_id, drift in sorted(floor_drifts(self.store, self.floors()).items()):
            family.add_metric([merchant_id], 0 if drift is None else 1)
        yield family


class Metrics(Listener):
    """The server's metrics in one registry; told of events by feed.service.events."""

    def __init__(self, store: LogStore, partners: Collection[str]) -> None:
        self.registry = CollectorRegistry()
        self.partners = frozenset(partners)
        r = self.registry
        self.requests = Counter(
            "hoststand_http_requests",
            "HTTP requests answered, by route template, method and status",
            ["route", "method", "status"],
            registry=r,
        )
        self.refused = Counter(
            "hoststand_http_connections_refused",
            "Connections answered 503 on arrival, past [http] max_connections open at once",
            registry=r,
        )
        self.latency = Histogram(
            "hoststand_http_request_duration_seconds",
            "Time from a request's arrival to its last byte, by route template and method",
            ["route", "method"],
            buckets=REQUEST_BUCKETS,
            registry=r,
        )
        self.bookings = Counter(
            "hoststand_bookings",
            "Bookings asked for, by path (webhook, v3, host, cli) and outcome (booked or the "
            "refusal's code)",
            ["path", "outcome"],
            registry=r,
        )
        self.changes = Counter(
            "hoststand_booking_changes",
            "Cancels and moves of bookings, by action, path and outcome",
            ["action", "path", "outcome"],
            registry=r,
        )
        self.conflicts = Counter(
            "hoststand_store_conflict_retries",
            "Appends retried because another writer appended to the day first",
            registry=r,
        )
        self.unavailable = Counter(
            "hoststand_store_unavailable",
            "Times the store stayed locked or unreachable, by where (request, outbox, export, "
            "sweep)",
            ["where"],
            registry=r,
        )
        self.signatures = Counter(
            "hoststand_webhook_signatures_refused",
            "Webhooks refused for their signature or an unknown partner",
            ["partner"],
            registry=r,
        )
        self.deliveries = Counter(
            "hoststand_outbox_delivery_failures",
            "Failed requests to partners, by outcome (retry later, or dead)",
            ["partner", "outcome"],
            registry=r,
        )
        self.moot = Counter(
            "hoststand_outbox_moot",
            "Availability replaces not sent as no server on the store served their restaurant"
            " (its servers restarting, or it was removed): the first server serving it again"
            " tells partners of their days; not failures, nothing was lost",
            ["partner"],
            registry=r,
        )
        self.exports = Counter(
            "hoststand_exports", "Scheduled feed exports, by outcome", ["outcome"], registry=r
        )
        self.export_seconds = Histogram(
            "hoststand_export_duration_seconds",
            "Time of a scheduled export, staging and delivery",
            buckets=EXPORT_BUCKETS,
            registry=r,
        )
        self.export_entries = Gauge(
            "hoststand_export_entries", "Availability entries of the last export", registry=r
        )
        self.export_time = Gauge(
            "hoststand_export_last_timestamp_seconds",
            "When the last export finished (Unix seconds)",
            registry=r,
        )
        self.retention = Counter(
            "hoststand_retention_removed",
            "Records removed by the retention once they could no longer matter, by kind"
            " (event, partnerres, v3create, v3wait, host: idempotency records; delivered:"
            " outbox messages; exports: export records)",
            ["kind"],
            registry=r,
        )
        r.register(OutboxCollector(store, self.partners))
        self._children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def watch_floors(self, store: LogStore, floors: Callable[[], Mapping[str, FloorPlan]]) -> None:
        """Scrapes say whether each restaurant's floor here is out of date (FloorCollector)."""
        self.registry.register(FloorCollector(store, floors))

    def watch_connections(self, open_: Collection[object]) -> None:
        """Scrapes say how many connections are open: `open_` is the server's own set of them
        (read when scraped, so a connection costs nothing here)."""
        gauge = Gauge(
            "hoststand_http_connections_open",
            "HTTP connections open now (event streams and those being refused included)",
            registry=self.registry,
        )
        gauge.set_function(lambda: len(open_))

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method, status)
        children = self._children.get(key)
        if children is None:  # labels() takes a lock and builds a key: once per kind
            children = (
                self.requests.labels(route, method, str(status)),
                self.latency.labels(route, method),
            )
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    # -- feed.service.events.Listener ----------------------------------------------------

    def booking(self, action: str, path: str, outcome: str) -> None:
        if action == "book":
            self.bookings.labels(path, outcome).inc()
        else:
            self.changes.labels(action, path, outcome).inc()

    def conflict(self) -> None:
        self.conflicts.inc()

    def store_unavailable(self, where: str) -> None:
        self.unavailable.labels(where).inc()

    def signature_refused(self, partner: str) -> None:
        self.signatures.labels(partner if partner in self.partners else UNKNOWN).inc()

    def delivery_failed(self, partner: str, dead: bool) -> None:
        self.deliveries.labels(partner, "dead" if dead else "retry").inc()

    def delivery_moot(self, partner: str, messages: int) -> None:
        self.moot.labels(partner).inc(messages)

    def exported(self, outcome: str, seconds: float, entries: int) -> None:
        self.exports.labels(outcome).inc()
        self.export_seconds.observe(seconds)
        if outcome == "delivered":
            self.export_entries.set(entries)
        self.export_time.set(time.time())

    def retained(self, removed: dict[str, int]) -> None:
        for kind, n in removed.items():
            self.retention.labels(kind).inc(n)
