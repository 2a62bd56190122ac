"""Feed export: the availability, merchant and service feeds for the next N days.

One export has one generation_timestamp and one nonce for all its shards, and never reuses
an earlier export's timestamp in the same directory. Entries stream restaurant by
restaurant, so memory does not grow with the number of restaurants. An export may also be
one part of a feed split across machines (`FeedPart`): each writes its own shard.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from engine.booked import BookedDay
from feed.files.directory import in_use
from feed.files.documents import availability_entry, merchant_record, service_record
from feed.files.writer import (
    FileStats,
    MerchantDays,
    Row,
    feed_filename,
    shard,
    write_availability_days,
    write_merchant_feed,
    write_service_feed,
)
from feed.floor.availability import Column, release, spots_total, worked_out
from feed.service.days import DayBook
from feed.service.notify import scheduling_overrides
from feed.venue import calendar
from feed.venue.restaurant import Area, Restaurant
from store.log import LogStore

LAST_GENERATION_FILE = ".last-generation"
SERVICE_NAME = "Table reservation"  # dining has one service per merchant


@dataclass(frozen=True)
class FeedPart:
    """Shard `number` of `total` of one feed written by several machines: they all pass the
    same nonce and generation_timestamp, and each exports the restaurants `shard_of` gives
    it (the same split on every machine, whatever order their restaurant files come in)."""

    number: int
    total: int
    nonce: str
    generation_timestamp: int


def shard_of(merchant_id: str, total_shards: int) -> int:
    """The shard a restaurant belongs to when a feed is split across machines: SHA-256 of its
    merchant id, mod the shard count. A hash, not a slice of the sorted list, so a machine
    needs no other machine's list: a restaurant added to one machine's files before the
    others' moves no other restaurant, and can only be missing or doubled itself."""
    digest = hashlib.sha256(merchant_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % total_shards


@dataclass
class ExportSummary:
    generation_timestamp: int
    restaurants: int = 0
    slots: int = 0
    entries: int = 0
    bytes: int = 0
    seconds: float = 0.0
    files: list[FileStats] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # where less was written than asked, why

    def line(self) -> str:
        return (
            f"exported {self.restaurants} restaurant(s), {self.slots} slots, "
            f"{self.entries} entries, {len(self.files)} files, {self.bytes} bytes "
            f"in {self.seconds:.2f} s (generation_timestamp {self.generation_timestamp})"
        )


def availability_rows(
    book: DayBook, now: datetime, days: int, counter: ExportSummary | None = None
) -> Iterator[tuple[Row, Area | None]]:
    """One restaurant's rows (start, duration, size, open, total) with their area (None:
    the whole floor, a restaurant without areas), future slots only, in start, area (file
    order) then party-size order: the export's order."""
    r = book.restaurant
    now_sec = int(now.timestamp())
    durations = {n: r.duration_minutes(n) * 60 for n in range(1, r.max_party_size + 1)}
    areas: tuple[Area | None, ...] = r.rooms or (None,)
    for day in calendar.days_ahead(r, now, min(days, r.horizon_days)):
        slot_of = {s.start_sec: s for s in calendar.slots(r, day)} if r.varied_turns else {}
        by_start: dict[int, list[tuple[Row, Area | None]]] = {}
        for area in areas:
            for start, n, spots_open, total in book.rows(
                day, now, area=None if area is None else area.id
            ):
                if start > now_sec:
                    slot = slot_of.get(start)
                    duration = (
                        durations[n] if slot is None else calendar.duration_sec(r, day, slot, n)
                    )
                    row = (start, duration, n, spots_open, total)
                    by_start.setdefault(start, []).append((row, area))
        for start in sorted(by_start):
            if counter is not None:
                counter.slots += 1
            yield from by_start[start]


def overrides(r: Restaurant, start_sec: int) -> dict[str, int]:
    """An entry's scheduling_rule_overrides (a replace carries the same)."""
    return scheduling_overrides(r, start_sec)


def _rich(r: Restaurant) -> bool:
    """Do this restaurant's entries differ by more than spots_open (the fast path's)?"""
    return bool(r.min_advance_minutes or r.cancel_cutoff_minutes or r.varied_turns)


def _rich_entries(
    book: DayBook,
    sizes: tuple[int, ...],
    totals: tuple[int, ...],
    rooms: tuple[tuple[str, str], ...],
    blocks: Iterator[tuple[date, list[int], list[list[int]]]],
) -> Iterator[dict[str, Any]]:
    """The entries of `merchant_days`' columns one by one, each with its own turn (the
    service its slot is in), its scheduling_rule_overrides and, with seating areas, its
    room (`rooms`: each column's room_id and room_name)."""
    r = book.restaurant
    keys: list[dict[str, str]] = [
        {"room_id": room_id, "room_name": room_name} for room_id, room_name in rooms
    ] or [{} for _ in sizes]
    for day, starts, opens in blocks:
        by_start = {s.start_sec: s for s in calendar.slots(r, day, keep=False)}
        for start, row in zip(starts, opens, strict=True):
            slot = by_start[start]
            extra = overrides(r, start)
            for n, total, room, spots_open in zip(sizes, totals, keys, row, strict=True):
                duration = calendar.duration_sec(r, day, slot, n)
                yield availability_entry(
                    r.merchant_id, r.service_id, start, duration, n, spots_open, total,
                    overrides=extra, **room,
                )  # fmt: skip


def merchant_days(
    book: DayBook, now: datetime, days: int, counter: ExportSummary | None = None
) -> MerchantDays:
    """One restaurant's future availability as day blocks, for the writer's fast path.
    With seating areas, a slot's entries are each area's (file order) sizes in turn."""
    r = book.restaurant
    floor = book.offered_floor()  # the online floor in force: no walk-in or removed table
    # In a server the floors are kept warm by the lookups: those stay as they are. A floor
    # this export works out itself is let go once the restaurant is done (memory must not
    # grow with the number of restaurants an export covers).
    cold = [f for f in (r.floor, floor) if not worked_out(f)]  # the same one twice: harmless
    every = range(1, r.online_limit + 1)
    # Each column's spots_total, worked out once: it picks the columns and is their total.
    if r.rooms:
        seated = [(n, a, spots_total(floor, n, a.units)) for a in r.rooms for n in every]
        seated = [(n, a, total) for n, a, total in seated if total]
        columns: list[int | Column] = [(n, a.units) for n, a, _ in seated]
        rooms: tuple[tuple[str, str], ...] = tuple((a.id, a.name) for _, a, _ in seated)
        totals = tuple(total for _, _, total in seated)
    else:
        whole = [(n, spots_total(floor, n)) for n in every]
        columns = [n for n, total in whole if total > 0]
        rooms = ()
        totals = tuple(total for _, total in whole if total > 0)
    sizes = tuple(c if isinstance(c, int) else c[0] for c in columns)

    def dated() -> Iterator[tuple[date, list[int], list[list[int]]]]:
        ahead = calendar.days_ahead(r, now, min(days, r.horizon_days))
        # One query folds every day's log (engine.booked): no replay, no query per day.
        booked = book.store.booked(r.merchant_id, ahead[0], ahead[-1]) if ahead else {}
        for day in ahead:
            # Taken out, not read: a day's fold is let go once its block is made, not kept
            # with the restaurant's other days (fewer objects for the collector to go over).
            day_booked = booked.pop(day, None) or BookedDay()
            starts, opens = book.day_block(day, now, columns, day_booked, floor)
            if counter is not None:
                counter.slots += len(starts)
            yield day, starts, opens
        for worked in cold:  # done with this restaurant: its matchings are not needed again
            release(worked)

    def blocks() -> Iterator[tuple[list[int], list[list[int]]]]:
        for _day, starts, opens in dated():
            yield starts, opens

    rich = _rich_entries(book, sizes, totals, rooms, dated()) if _rich(r) else None
    return MerchantDays(
        r.merchant_id,
        r.service_id,
        sizes,
        tuple(r.duration_minutes(n) * 60 for n in sizes),
        totals,
        blocks() if rich is None else iter(()),
        rooms,
        rich,
    )


def availability_entries(book: DayBook, now: datetime, days: int) -> Iterator[dict[str, Any]]:
    """The same as entries (dicts), for callers that want the partner's field names."""
    r = book.restaurant
    for (start, duration, n, spots_open, total), area in availability_rows(book, now, days):
        room = {"room_id": area.id, "room_name": area.name} if area is not None else {}
        yield availability_entry(
            r.merchant_id, r.service_id, start, duration, n, spots_open, total,
            overrides=overrides(r, start), **room,
        )  # fmt: skip


def last_generation_timestamp(out_dir: Path) -> int:
    """The generation_timestamp of the last export written to `out_dir` (0: none)."""
    try:
        return int((out_dir / LAST_GENERATION_FILE).read_text().strip())
    except (FileNotFoundError, ValueError):
        return 0


def next_generation_timestamp(out_dir: Path, now: datetime) -> int:
    """`now` in seconds, but always later than the last export written to `out_dir`."""
    return max(int(now.timestamp()), last_generation_timestamp(out_dir) + 1)


def feed_nonce(generation_timestamp: int, merchant_ids: Sequence[str]) -> str:
    """Deterministic uint64 for one export: the same in every shard, different per export."""
    digest = hashlib.sha256(f"{generation_timestamp}:{','.join(merchant_ids)}".encode())
    return str(int.from_bytes(digest.digest()[:8], "big"))


def export_feeds(
    restaurants: Sequence[Restaurant],
    store: LogStore,
    out_dir: Path,
    now: datetime,
    *,
    days: int = 30,
    shards: int = 1,
    gzip: bool = False,
    progress: Callable[[Restaurant], None] | None = None,
    part: FeedPart | None = None,
    take_generation: Callable[[int], int] | None = None,
) -> ExportSummary:
    """Write the three feeds for `restaurants` into `out_dir`; returns what was written.

    `take_generation` turns the directory's next generation_timestamp into the one used
    (store.generations.take: one that no other process sharing the store has used).

    With `part`, only shard part.number of part.total of each feed, with the part's nonce and
    generation_timestamp (`shards` is not used): the restaurants `shard_of` gives it, their
    availability, merchant and service records, each file named and labelled as that shard.
    """
    started = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    # Held while writing: an export starting meanwhile never takes our temporary files for
    # the leftovers of one that died (and removes those, when no one else holds it).
    with in_use(out_dir):
        return _export_feeds(
            restaurants, store, out_dir, now, days, shards, gzip, progress, part,
            take_generation, started,
        )  # fmt: skip


def _export_feeds(
    restaurants: Sequence[Restaurant],
    store: LogStore,
    out_dir: Path,
    now: datetime,
    days: int,
    shards: int,
    gzip: bool,
    progress: Callable[[Restaurant], None] | None,
    part: FeedPart | None,
    take_generation: Callable[[int], int] | None,
    started: float,
) -> ExportSummary:
    ordered = sorted(restaurants, key=lambda r: r.merchant_id)
    ids = [r.merchant_id for r in ordered]
    if len(set(ids)) != len(ids):
        raise ValueError("two restaurant files share a merchant_id")
    if shards < 1:
        raise ValueError("shards must be at least 1")
    asked_shards, shards = shards, min(shards, max(1, len(ordered)))
    if part is not None:
        return _export_part(ordered, store, out_dir, now, days, gzip, progress, part, started)
    generation = next_generation_timestamp(out_dir, now)
    if take_generation is not None:
        generation = take_generation(generation)
    nonce = feed_nonce(generation, ids)
    summary = ExportSummary(generation_timestamp=generation, restaurants=len(ordered))
    if shards < asked_shards:
        summary.notes.append(
            f"{shards} availability shard(s) written, not {asked_shards}: a shard holds whole"
            f" restaurants, and there are {len(ordered)}"
        )
    for r in ordered:
        if r.horizon_days < days:
            summary.notes.append(
                f"{r.merchant_id}: {r.horizon_days} days written, not {days}: its"
                f" horizon_days is {r.horizon_days}"
            )
    now_sec = int(now.timestamp())

    def by_merchant(group: list[Restaurant]) -> Iterator[MerchantDays]:
        for r in group:
            yield merchant_days(DayBook(store, r), now, days, summary)
            if progress is not None:
                progress(r)

    for number, group in enumerate(shard(ordered, shards)):
        name = feed_filename("availability", generation, number, shards, gzip=gzip)
        stats = write_availability_days(
            out_dir / name,
            by_merchant(group),
            shard_number=number,
            total_shards=shards,
            nonce=nonce,
            generation_timestamp=generation,
            now_sec=now_sec,
            gzip=gzip,
        )
        summary.files.append(stats)
        summary.entries += stats.entries
    _write_companions(summary, ordered, out_dir, 0, 1, nonce, gzip)
    (out_dir / LAST_GENERATION_FILE).write_text(f"{generation}\n")
    summary.bytes = sum(f.bytes for f in summary.files)
    summary.seconds = time.perf_counter() - started
    return summary


def _address(r: Restaurant) -> dict[str, str]:
    """The merchant feed's address: `region` is optional there, so a restaurant without one
    leaves it out (an empty string is a schema violation, and would fail the whole export)."""
    address = {
        "street_address": r.address.street_address,
        "locality": r.address.locality,
        "region": r.address.region,
        "country": r.address.country,
        "postal_code": r.address.postal_code,
    }
    return {k: v for k, v in address.items() if v is not None}


def _write_companions(
    summary: ExportSummary,
    ordered: Sequence[Restaurant],
    out_dir: Path,
    number: int,
    total: int,
    nonce: str,
    gzip: bool,
) -> None:
    """The merchant and service feeds of `ordered`, as shard `number` of `total`."""
    generation = summary.generation_timestamp
    merchants = [
        merchant_record(
            r.merchant_id,
            r.name,
            r.telephone,
            r.url,
            r.geo.latitude,
            r.geo.longitude,
            _address(r),
        )
        for r in ordered
    ]
    services = [
        service_record(
            r.merchant_id,
            r.service_id,
            SERVICE_NAME,
            min_advance_booking=r.min_advance_minutes * 60 or None,
            min_advance_online_canceling=r.cancel_cutoff_minutes * 60 or None,
        )
        for r in ordered
    ]
    for kind, write, records in (
        ("merchant", write_merchant_feed, merchants),
        ("service", write_service_feed, services),
    ):
        summary.files.append(
            write(
                out_dir / feed_filename(kind, generation, number, total, gzip=gzip),
                records,
                generation_timestamp=generation,
                shard_number=number,
                total_shards=total,
                nonce=nonce,
                gzip=gzip,
            )
        )


def _export_part(
    ordered: Sequence[Restaurant],
    store: LogStore,
    out_dir: Path,
    now: datetime,
    days: int,
    gzip: bool,
    progress: Callable[[Restaurant], None] | None,
    part: FeedPart,
    started: float,
) -> ExportSummary:
    """One machine's shard of a feed split across machines (see `export_feeds`)."""
    if not 0 <= part.number < part.total:
        raise ValueError(f"shard {part.number} of {part.total}: need 0 <= shard < total")
    generation = part.generation_timestamp
    last = last_generation_timestamp(out_dir)
    # Equal is another shard of the same feed in a shared directory; older is a reuse.
    if generation < last:
        raise ValueError(
            f"generation_timestamp {generation} is older than the last export in {out_dir}"
            f" ({last}): partners refuse a reused one"
        )
    mine = [r for r in ordered if shard_of(r.merchant_id, part.total) == part.number]
    summary = ExportSummary(generation_timestamp=generation, restaurants=len(mine))

    def by_merchant() -> Iterator[MerchantDays]:
        for r in mine:
            yield merchant_days(DayBook(store, r), now, days, summary)
            if progress is not None:
                progress(r)

    name = feed_filename("availability", generation, part.number, part.total, gzip=gzip)
    stats = write_availability_days(
        out_dir / name,
        by_merchant(),
        shard_number=part.number,
        total_shards=part.total,
        nonce=part.nonce,
        generation_timestamp=generation,
        now_sec=int(now.timestamp()),
        gzip=gzip,
    )
    summary.files.append(stats)
    summary.entries = stats.entries
    _write_companions(summary, mine, out_dir, part.number, part.total, part.nonce, gzip)
    (out_dir / LAST_GENERATION_FILE).write_text(f"{max(generation, last)}\n")
    summary.bytes = sum(f.bytes for f in summary.files)
    summary.seconds = time.perf_counter() - started
    return summary
