"""The outbox sender: delivers booking notifications and availability replaces to partners.

Messages were written with the change they report, so nothing is lost to a crash; the
sender delivers them in order per key, retries with back-off and marks them delivered. An
availability replace is worked out when it is sent, so one send covers every change
merged into it; a restaurant's due days go out in one replace, a window each. Each request
carries its message ids (one per day of a replace), so a partner can drop a duplicate.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_all
from datetime import UTC, date, datetime, timedelta
from typing import Any, Protocol

import requests

from feed.push.delivery import Outcome, backoff, environ_proxies, lean_session, send
from feed.service.days import DayBook
from feed.service.events import Events
from feed.service.notify import (
    AVAILABILITY,
    BOOKING,
    UPDATE_MASK,
    rfc3339,
    scheduling_overrides,
)
from feed.settings import Partner
from feed.venue import calendar
from feed.venue.restaurant import Restaurant
from store.log import JSON, LogStore, OutboxItem, StoreError, StoreUnavailable

MESSAGE_ID_HEADER = "Hoststand-Message-Id"
SENDERS = 4  # requests in flight at once to one partner (to different keys)
PER_PARTNER = SENDERS
MAX_WINDOWS = 31  # service days in one availability replace
ROUND_SECONDS = 0.05  # a busy sender starts a round at most this often: see `loop`
_GIVE_UP = -1.0  # a retry time meaning: never
# Which restaurants each live sender on a store can build replaces of: a record per sender
# per interval (key "<interval>/<sender>", value the merchant ids), kept anew each interval.
# A replace of a restaurant no live sender announced in the last SERVES_KEPT intervals is
# moot: the restaurant was removed from every server's configuration (see `_served_here`).
SERVES_SCOPE = "outbox-serves"
SERVES_SECONDS = 30.0
SERVES_KEPT = 3  # intervals: a sender whose rounds stall this long (and SERVES_SKEW) is gone
# How far the servers' clocks on one store may differ (a webhook's signature allows as
# much): another sender's records are read, and kept, this much either side of our clock's
# intervals. Read by our clock alone, a sender 2 minutes ahead was never seen, and its own
# clock removed every other sender's records as past: each gave the others' replaces up.
SERVES_SKEW = int(300 // SERVES_SECONDS)  # intervals
# The days whose replace was made moot so (key "<day>/<merchant>", value the merchant): no
# server served the restaurant then, which is also so while its only servers restart (a
# rolling upgrade). A sender serving it tells partners of those days again, as they stand.
MOOT_SCOPE = "outbox-moot"
log = logging.getLogger("hoststand.outbox")


def unserved_days(store: LogStore) -> dict[str, int]:
    """Per restaurant no server on the store served when its replaces fell due, how many of
    its days partners have not been told of since (MOOT_SCOPE). A rolling restart's are
    told within a round of the restaurant's server starting again; days that stay name a
    restaurant removed from every server's configuration (until they are over)."""
    days: dict[str, int] = {}
    for _key, merchant in store.recall_prefix(MOOT_SCOPE, ""):
        days[str(merchant)] = days.get(str(merchant), 0) + 1
    return days


# The feed's entries are booked at once (CreateBooking answers CONFIRMED); a replace says the
# same, as the feed does (documents.availability_entry).
CONFIRMATION_MODE = "CONFIRMATION_MODE_SYNCHRONOUS"
# startTime, duration, partySize, open, total, (roomId, roomName) at a restaurant with
# seating areas (issue #14) else None, and the entry's schedulingRuleOverrides (camelCase;
# empty when the restaurant sets no booking or cancelling cut-off)
ReplaceRow = tuple[str, str, int, int, int, tuple[str, str] | None, dict[str, int]]
# The feed's scheduling_rule_overrides keys as a replace spells them.
_OVERRIDES = {
    "first_bookable_sec": "firstBookableSec",
    "last_bookable_sec": "lastBookableSec",
    "last_online_cancellable_sec": "lastOnlineCancellableSec",
}


def _overrides(r: Restaurant, start_sec: int) -> dict[str, int]:
    """The entry's cut-offs, as the feed publishes them: a replace is a complete replacement
    of its window, so one without them took the feed's away (the partner then offered a slot
    up to its start and let guests cancel up to it, which we refuse)."""
    return {_OVERRIDES[k]: v for k, v in scheduling_overrides(r, start_sec).items()}


def _replace_parts(book: DayBook, day: date, now: datetime) -> tuple[str, str, list[ReplaceRow]]:
    """The replace's time window (RFC 3339 start and end) and its future slots' rows: each
    area's in turn (in [areas] order) where the restaurant has areas, as the feed has them."""
    r = book.restaurant
    # The whole service day, not its hours alone: a partner drops what it had in the window,
    # so slots that hours changed since (or a day closed since) are taken back too, and a
    # service past midnight stays with its own day's window (its end is exclusive, and
    # holds a last seating at the close).
    first, last = calendar.day_span(r, day)
    start = max(first, now)
    end = max(last, start + timedelta(seconds=1))
    slots = calendar.slots(r, day)
    now_sec = int(now.timestamp())
    stamps: dict[int, str] = {}
    # The turn of a party follows the service its slot is in.
    by_start = {s.start_sec: s for s in slots} if r.varied_turns else {}
    durations = {n: f"{r.duration_minutes(n) * 60}s" for n in range(1, r.max_party_size + 1)}
    rows: list[ReplaceRow] = []
    areas: list[tuple[str | None, tuple[str, str] | None]] = [(None, None)]
    if r.rooms:
        areas = [(a.id, (a.id, a.name)) for a in r.rooms]
    for area, room in areas:
        for slot_sec, n, spots_open, total in book.rows(day, now, area=area):
            if slot_sec <= now_sec:
                continue
            stamp = stamps.get(slot_sec)
            if stamp is None:
                stamp = stamps[slot_sec] = rfc3339(datetime.fromtimestamp(slot_sec, UTC))
            slot = by_start.get(slot_sec)
            duration = (
                durations[n] if slot is None else f"{calendar.duration_sec(r, day, slot, n)}s"
            )
            rows.append((stamp, duration, n, spots_open, total, room, _overrides(r, slot_sec)))
    return rfc3339(start), rfc3339(end), rows


def _resources(n: int, room: tuple[str, str] | None) -> dict[str, Any]:
    if room is None:
        return {"partySize": n}
    return {"partySize": n, "roomId": room[0], "roomName": room[1]}


def replace_body(book: DayBook, days: Sequence[date], now: datetime) -> dict[str, Any]:
    """An availability replace of service days (their future slots), one window per day, in
    the partner's camelCase."""
    r = book.restaurant
    windows = []
    for day in days:
        start, end, rows = _replace_parts(book, day, now)
        availability = [
            {
                "startTime": stamp,
                "duration": duration,
                "spotsTotal": total,
                "spotsOpen": spots_open,
                "resources": _resources(n, room),
                "confirmationMode": CONFIRMATION_MODE,
                **({"schedulingRuleOverrides": cut_offs} if cut_offs else {}),
            }
            for stamp, duration, n, spots_open, total, room, cut_offs in rows
        ]
        windows.append(
            {
                "merchantId": r.merchant_id,
                "serviceId": r.service_id,
                "startTimeRestrict": start,
                "endTimeRestrict": end,
                "availability": availability,
            }
        )
    return {"extendedServiceAvailability": windows}


def replace_json(book: DayBook, days: Sequence[date], now: datetime) -> bytes:
    """`replace_body` as the JSON sent, written straight from the rows (a test holds the
    two to the same value). A replace is hundreds of entries; building them as dicts for
    json.dumps cost more than the rest of a send, and the senders share the GIL with the
    requests being served."""
    r = book.restaurant
    ids = f'"merchantId":{json.dumps(r.merchant_id)},"serviceId":{json.dumps(r.service_id)}'
    windows = []
    for day in days:
        start, end, rows = _replace_parts(book, day, now)
        rooms: dict[tuple[str, str] | None, str] = {
            room: f',"roomId":{json.dumps(room[0])},"roomName":{json.dumps(room[1])}'
            for room in {row[5] for row in rows}
            if room is not None
        }
        entries = ",".join(
            f'{{"startTime":"{stamp}","duration":"{duration}","spotsTotal":{total},'
            f'"spotsOpen":{spots_open},"resources":{{"partySize":{n}{rooms.get(room, "")}}},'
            f'"confirmationMode":"{CONFIRMATION_MODE}"{_cut_offs_json(cut_offs)}}}'
            for stamp, duration, n, spots_open, total, room, cut_offs in rows
        )
        windows.append(
            f'{{{ids},"startTimeRestrict":"{start}","endTimeRestrict":"{end}",'
            f'"availability":[{entries}]}}'
        )
    return f'{{"extendedServiceAvailability":[{",".join(windows)}]}}'.encode()


def _cut_offs_json(cut_offs: dict[str, int]) -> str:
    if not cut_offs:
        return ""
    return (
        ',"schedulingRuleOverrides":{' + ",".join(f'"{k}":{v}' for k, v in cut_offs.items()) + "}"
    )


def batches(items: Sequence[OutboxItem]) -> list[list[OutboxItem]]:
    """The requests that send `items`: a booking notification alone; availability replaces
    of one partner and restaurant together (at most MAX_WINDOWS days), one window each.

    After a busy moment every changed day of a restaurant falls due at once; one request
    per restaurant instead of one per day costs both sides a fraction of the work."""
    out: list[list[OutboxItem]] = []
    open_batches: dict[tuple[str, str], list[OutboxItem]] = {}
    for item in items:
        merchant = item.payload.get("merchant_id") if isinstance(item.payload, dict) else None
        if item.kind != AVAILABILITY or merchant is None:
            out.append([item])
            continue
        key = (item.partner, str(merchant))
        batch = open_batches.get(key)
        if batch is None or len(batch) >= MAX_WINDOWS:
            batch = open_batches[key] = []
            out.append(batch)
        batch.append(item)
    return out


def workers(partners: Mapping[str, Partner]) -> int:
    """Threads to send with (and the sending child's): PER_PARTNER for each partner with a
    notify URL, so a partner whose requests hang (each until its timeout) holds its own
    threads only, never another partner's."""
    return PER_PARTNER * max(1, sum(1 for p in partners.values() if p.notify_url))


# A request's outcome: (delivered at, None, "") or (0, retry at or _GIVE_UP, error)
Attempt = tuple[float, float | None, str]


class Transport(Protocol):
    """`delivery.send` without its session: one attempt, never raising."""

    def __call__(
        self,
        method: str,
        url: str,
        *,
        json_body: Any = None,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
        proxies: dict[str, str] | None = None,
    ) -> Outcome: ...


class OutboxSender:
    def __init__(
        self,
        store: LogStore,
        books: Mapping[str, DayBook],
        partners: Mapping[str, Partner],
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        base_delay: float = 1.0,
        rng: random.Random | None = None,
        events: Events | None = None,
        transport: Transport | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """`transport` makes the requests (a `sendproc.SendProcess` in the server); by
        default this process does, on a session of its own. `wall`: this machine's clock
        (Unix seconds), which may differ from the other servers' by a few minutes; what is
        due is read by it, so claims, retries and deliveries are stamped by it too (a
        retry stamped by another clock was never due, or due at once)."""
        self.store = store
        self.events = events or Events()
        self.books = books
        self.partners = partners
        self.clock = clock
        self.wall = wall
        self.base_delay = base_delay
        self.rng = rng or random.Random()
        # A session of this process's own only when it makes the requests itself.
        self.session: requests.Session | None = None
        if transport is None:
            self.session = lean_session(workers(partners))
            transport = functools.partial(send, self.session)
        self.transport: Transport = transport
        self.proxies = {
            p.id: environ_proxies(p.notify_url) for p in partners.values() if p.notify_url
        }
        self._pool = ThreadPoolExecutor(max_workers=workers(partners), thread_name_prefix="outbox")
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}  # partner -> requests being made
        self._ended: list[tuple[list[OutboxItem], Attempt]] = []  # not recorded yet
        # Replaces made moot (`_served_here`), with their restaurant and why: not recorded yet
        self._moot: list[tuple[list[OutboxItem], str, str, float]] = []
        self._wake = threading.Event()  # set as a request ends
        self._sender_id = uuid.uuid4().hex
        # This sender's SERVES_SCOPE records still kept: (key, what it wrote), as the store's
        # `forget` removes a record only while it holds what was read (or written) there.
        self._announced: list[tuple[str, JSON]] = []
        self._left_to_others = 0  # due replaces of restaurants another sender serves
        self._retold: int | None = None  # the SERVES_SECONDS interval MOOT_SCOPE was read
        # Said before anything is written: a server starting writes its restaurants'
        # replaces at once, and another server's sender must know they are not moot.
        with contextlib.suppress(StoreError):
            self._announce(self.wall())

    def run_once(self) -> int:
        """Send every message that is due, several at once, and wait for them; the number
        delivered (with any sent before and not yet recorded)."""
        wait_for_all(self.start())
        return self.record()

    def step(self) -> int:
        """One round of `loop`: record the requests that have ended, start those now due;
        how many of each. Never waits for a request: a partner whose endpoint hangs holds
        its own PER_PARTNER requests, while every other partner's go out as they fall due.
        (A round used to wait for all its requests: each hanging one held every partner's
        next message until its timeout, 4 at a time.)"""
        return self.record() + len(self.start())

    def start(self) -> list[Future[None]]:
        """Claim what is due and start sending it: pending() gives at most one message per
        key and none of a key being sent (claimed), so the order per booking and per window
        is kept; at most PER_PARTNER requests per partner are in flight."""
        with self._lock:
            full = [p for p, n in self._in_flight.items() if n >= PER_PARTNER]
        now = self.wall()
        self._announce(now)
        self._retell(now)
        # The replaces another process sends take room in pending(): its limit is widened
        # by as many, so they never keep this process's own messages out.
        items = self.store.pending(now, limit=100 + self._left_to_others, skip=full)
        items = self._served_here(items, now)
        if not items:
            return []
        room: dict[str, int] = {}
        chosen: list[list[OutboxItem]] = []
        with self._lock:
            for group in batches(items):
                partner = group[0].partner
                left = room.get(partner, PER_PARTNER - self._in_flight.get(partner, 0))
                if left > 0:
                    chosen.append(group)
                room[partner] = left - 1
        # Another process's sender may have claimed some since pending(): those are its own.
        claimed = set(self.store.claim([i.id for g in chosen for i in g], now))
        groups = [g for group in chosen if (g := [i for i in group if i.id in claimed])]
        futures = []
        for group in groups:
            with self._lock:
                partner = group[0].partner
                self._in_flight[partner] = self._in_flight.get(partner, 0) + 1
            futures.append(self._pool.submit(self._send, group))
        return futures

    def _announce(self, now: float) -> None:
        """Say which restaurants this sender serves (one write per SERVES_SECONDS)."""
        key = f"{int(now // SERVES_SECONDS):012d}/{self._sender_id}"
        if self._announced and self._announced[-1][0] == key:
            return
        served: JSON = sorted(self.books)
        self.store.remember(SERVES_SCOPE, key, served)
        self._announced = [*self._announced[-SERVES_KEPT:], (key, served)]
        before = int(now // SERVES_SECONDS) - SERVES_KEPT - SERVES_SKEW
        self.store.forget_range(SERVES_SCOPE, "", f"{before:012d}")

    def _retell(self, now: float) -> None:
        """Tell partners again of each day of this sender's restaurants whose replace was
        made moot while no server served them (once per SERVES_SECONDS: a replace made moot
        just after a read here is told at the next)."""
        interval = int(now // SERVES_SECONDS)
        if self._retold == interval:
            return
        # Records of days over in every time zone matter no more (a restaurant removed for good).
        # Over by the clock the days are told by, not the machine's (`now`): a server run
        # at another time (`--now`) kept none of its notes.
        over = (self.clock().astimezone(UTC).date() - timedelta(days=1)).isoformat()
        self.store.forget_range(MOOT_SCOPE, "", over)
        done: list[tuple[str, JSON]] = []
        told: dict[str, list[str]] = {}
        for key, merchant in self.store.recall_prefix(MOOT_SCOPE, ""):
            book = self.books.get(str(merchant))
            if book is None:
                continue  # still nobody's here
            with contextlib.suppress(ValueError):  # not a day: nothing to tell
                day = date.fromisoformat(key.split("/", 1)[0])
                if day >= self.clock().astimezone(book.restaurant.tz).date():
                    book.tell_partners(day)
                    told.setdefault(str(merchant), []).append(day.isoformat())
            done.append((key, merchant))
        if done:
            self.store.forget(MOOT_SCOPE, done)
        for merchant, days in told.items():
            self.events.moot_retold(merchant, days)
        self._retold = interval

    def _served_elsewhere(self, now: float) -> set[str]:
        """The restaurants another live sender on this store has said it serves lately."""
        interval = int(now // SERVES_SECONDS)
        first, last = interval - SERVES_KEPT - SERVES_SKEW, interval + SERVES_SKEW
        served: set[str] = set()
        for key, value in self.store.recall_prefix(SERVES_SCOPE, ""):
            written, _, sender = key.partition("/")
            if (
                written.isdigit()
                and first < int(written) <= last
                and sender != self._sender_id
                and isinstance(value, list)
            ):
                served.update(str(m) for m in value)
        return served

    def _served_here(self, items: list[OutboxItem], now: float) -> list[OutboxItem]:
        """`items` less the replaces of restaurants this process does not serve (it cannot
        build them: its configuration lacks them). A restaurant another live sender on the
        store serves is left to that one, unclaimed; one no sender serves was removed from
        every server's configuration (on purpose, by its operator), or its only servers are
        restarting: its replaces are moot (no partner should be told of a restaurant no
        server books for), never retried for ever (they were, and /healthz turned unhealthy
        after max_backlog). Its days are noted (MOOT_SCOPE) and the first server back tells
        partners of them (`_retell`): nothing is lost, so they are recorded moot, with a
        'delivery_moot' warning and hoststand_outbox_moot_total, never as dead deliveries
        (every rolling restart raised the operator's dead-deliveries alert). A restaurant
        removed for good shows as its days noted (`unserved_days`).
        A booking notification is built from its message alone: it is still sent."""
        foreign = {
            item.id: str(item.payload.get("merchant_id"))
            for item in items
            if item.kind == AVAILABILITY
            and isinstance(item.payload, dict)
            and str(item.payload.get("merchant_id")) not in self.books
        }
        if not foreign:
            self._left_to_others = 0
            return items
        elsewhere = self._served_elsewhere(now)
        moot = [item for item in items if foreign.get(item.id, "") not in ("", *elsewhere)]
        self._left_to_others = sum(1 for m in foreign.values() if m in elsewhere)
        claimed = set(self.store.claim([item.id for item in moot], now)) if moot else set()
        dropped: dict[tuple[str, str], list[OutboxItem]] = {}
        for item in moot:
            if item.id in claimed:
                dropped.setdefault((item.partner, foreign[item.id]), []).append(item)
        days = {
            (str(item.payload.get("day")), foreign[item.id])
            for group in dropped.values()
            for item in group
            if isinstance(item.payload, dict) and isinstance(item.payload.get("day"), str)
        }
        # Noted before they are recorded moot: a crash between leaves them claimed by a
        # dead sender, released and judged again, never made moot unnoted.
        for day, merchant in sorted(days):
            self.store.remember(MOOT_SCOPE, f"{day}/{merchant}", merchant)
        with self._lock:
            for (_partner, merchant), group in dropped.items():
                reason = (
                    f"restaurant {merchant} is served by no server on this store (its servers"
                    " restarting, or it was removed from every server's configuration): its"
                    " availability replace is not sent now; the first server serving it"
                    " again tells partners of the day as it then stands"
                )
                self._moot.append((group, merchant, reason, now))
        if dropped:
            self._wake.set()  # recorded at the next round, at once
        return [item for item in items if item.id not in foreign]

    def _send(self, group: list[OutboxItem]) -> None:
        try:
            outcome = self._attempt(group)
        except Exception as exc:  # a bug: the messages are tried again, never lost
            retry = self.wall() + backoff(group[0].attempts, self.rng, self.base_delay)
            outcome = (0.0, retry, f"{type(exc).__name__}: {exc}")
        with self._lock:
            self._in_flight[group[0].partner] -= 1
            self._ended.append((group, outcome))
        self._wake.set()

    def record(self) -> int:
        """Record the outcomes of the requests that have ended, and the replaces made moot,
        in one transaction; the number of messages delivered. A store that refuses keeps
        them for the next call."""
        with self._lock:
            ended, self._ended = self._ended, []
            moot, self._moot = self._moot, []
        if not ended and not moot:
            return 0
        results = [(item, outcome) for group, outcome in ended for item in group]
        delivered = [(item.id, at) for item, (at, retry, _) in results if retry is None]
        failed = [
            (item.id, retry if retry != _GIVE_UP else None, error)
            for item, (_, retry, error) in results
            if retry is not None
        ]
        try:
            self.store.settle(
                delivered,
                failed,
                [(item.id, at, why) for group, _, why, at in moot for item in group],
            )
        except BaseException:
            with self._lock:
                self._ended[:0] = ended
                self._moot[:0] = moot
            raise
        for group, merchant, why, _at in moot:
            days = sorted({str(item.payload.get("day")) for item in group})
            ids = [item.id for item in group]
            self.events.delivery_moot(group[0].partner, merchant, days, ids, why)
        for group, (_, retry, error) in ended:
            if retry is not None:
                first = group[0]
                self.events.delivery_failed(
                    first.partner,
                    first.kind,
                    first.key if len(group) == 1 else str(first.payload.get("merchant_id")),
                    [item.id for item in group],
                    max(item.attempts for item in group) + 1,
                    error,
                    retry if retry != _GIVE_UP else None,
                )
        return len(delivered)

    def _request(self, group: list[OutboxItem], partner: Partner) -> tuple[str, str, Any]:
        base = (partner.notify_url or "").rstrip("/")
        item = group[0]
        if item.kind == BOOKING:
            booking_id = item.key
            url = f"{base}/v1alpha/notification/partners/{partner.id}/bookings/{booking_id}"
            booking = dict(item.payload)
            mask = str(booking.pop(UPDATE_MASK, "") or "status")  # older messages: status
            return "PATCH", f"{url}?updateMask={mask}", booking
        merchant_id = str(item.payload["merchant_id"])
        days = sorted(date.fromisoformat(str(one.payload["day"])) for one in group)
        body = replace_json(self.books[merchant_id], days, self.clock())
        url = f"{base}/v1alpha/inventory/partners/{partner.id}/availability:replace"
        return "POST", url, body

    def _attempt(self, group: list[OutboxItem]) -> Attempt:
        """One request for a batch of messages: (delivered at, None, "") or
        (0, retry at or _GIVE_UP, error), the same for each message of the batch."""
        item = max(group, key=lambda one: one.attempts)  # the back-off of the most tried
        partner = self.partners.get(item.partner)
        if partner is None or not partner.notify_url or item.kind not in (BOOKING, AVAILABILITY):
            return 0.0, _GIVE_UP, f"no partner {item.partner} to send {item.kind} to"
        try:
            method, url, body = self._request(group, partner)
        except Exception as exc:  # a message that cannot be built now: retry later
            return 0.0, self.wall() + backoff(item.attempts, self.rng, self.base_delay), str(exc)
        headers = {MESSAGE_ID_HEADER: ", ".join(str(one.id) for one in group)}
        if partner.notify_token:
            headers["Authorization"] = f"Bearer {partner.notify_token}"
        proxies = self.proxies.get(partner.id)
        if isinstance(body, bytes):  # already JSON (availability replaces)
            headers["Content-Type"] = "application/json"
            outcome = self.transport(method, url, data=body, headers=headers, proxies=proxies)
        else:
            outcome = self.transport(method, url, json_body=body, headers=headers, proxies=proxies)
        now = self.wall()
        if outcome.ok:
            return now, None, ""
        if not outcome.retry:
            return 0.0, _GIVE_UP, outcome.error  # the partner refused it: report, do not retry
        # Retry-After is the least wait, never less than our own back-off: "0" (for ever)
        # had the message sent again every round, 20 times a second.
        delay = backoff(item.attempts, self.rng, self.base_delay)
        if outcome.retry_after is not None:
            delay = max(delay, outcome.retry_after)
        return 0.0, now + delay, outcome.error

    def loop(
        self, stop: threading.Event, interval: float = 0.2, pace: float = ROUND_SECONDS
    ) -> None:
        """Rounds until `stop`: a busy sender starts one at most every `pace` seconds, an
        idle one every `interval`, or as soon as a request ends (its key's next message may
        be due)."""
        self.store.release_claims()  # claims of a sender that died with the last process
        while not stop.is_set():
            started = time.monotonic()
            self._wake.clear()
            try:
                busy = self.step()
            except StoreUnavailable as exc:
                self.events.store_unavailable("outbox", str(exc))
                busy = 0
            except Exception:  # a bad message or a locked store must not stop the sender
                log.exception("outbox: delivery round failed; retrying")
                busy = 0
            if busy:
                stop.wait(max(0.0, started + pace - time.monotonic()))
            else:
                self._wake.wait(interval)  # a request ending wakes it; `stop` is seen next
        self._pool.shutdown(wait=True)
        with contextlib.suppress(Exception):  # what ended meanwhile; else sent again
            self.record()
        # Its restaurants are no longer served here: a server on the store without them
        # may give their replaces up now, not SERVES_KEPT intervals on.
        with contextlib.suppress(Exception):
            self.store.forget(SERVES_SCOPE, self._announced)
        if self.session is not None:
            self.session.close()
