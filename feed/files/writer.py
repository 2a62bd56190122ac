"""Writing feed files: streamed, checked on the way, atomic, deterministic bytes.

A file at its final path is always complete: it is written to a temporary file in the same
directory, synced, then renamed. Shards of one feed share the nonce and generation
timestamp; file names sort in shard order.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import operator
import os
import queue
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from gzip import GzipFile
from itertools import chain, islice
from pathlib import Path
from typing import Any, Protocol, TypedDict, TypeVar

from feed.files.documents import (
    AVAILABILITY,
    CONFIRMATION_MODE_SYNCHRONOUS,
    DUPLICATE_RECORD,
    MAX_DURATION_SEC,
    MAX_PARTY_SIZE,
    MAX_TIMESTAMP_SEC,
    MERCHANT,
    MERCHANT_ID_MISMATCH,
    MIN_TIMESTAMP_SEC,
    SCHEMA_VIOLATION,
    SERVICE,
    FeedChecker,
    FeedError,
    Record,
    availability_entry,
    encode_json,
    entry_in_order,
    feed_metadata,
    in_schema_order,
    load_schema,
    refuse,
    validate_document,
)

T = TypeVar("T")
BATCH_ENTRIES = 10_000  # entries per progress report (and per write on the entry paths)


@dataclass(frozen=True)
class FileStats:
    path: Path
    bytes: int
    entries: int


# --- sharding and names -------------------------------------------------------------------


def shard(items: Sequence[T], total_shards: int) -> list[list[T]]:
    """Contiguous slices whose sizes differ by at most one, the larger first.

    Every shard is non-empty when there are at least `total_shards` items.
    """
    if total_shards < 1:
        raise ValueError(f"total_shards must be >= 1, got {total_shards}")
    size, larger = divmod(len(items), total_shards)
    shards: list[list[T]] = []
    start = 0
    for number in range(total_shards):
        end = start + size + (1 if number < larger else 0)
        shards.append(list(items[start:end]))
        start = end
    return shards


def feed_filename(
    kind: str, generation_timestamp: int, shard_number: int, total_shards: int, *, gzip: bool
) -> str:
    """E.g. availability-1524606581-03-of-12.json.gz; shard numbers padded so names sort."""
    width = len(str(total_shards))
    suffix = ".json.gz" if gzip else ".json"
    return f"{kind}-{generation_timestamp}-{shard_number:0{width}d}-of-{total_shards}{suffix}"


# --- writing --------------------------------------------------------------------------------


class _ByteSink(Protocol):
    # What is written is queued and written later, on another thread: it must not change
    # afterwards (bytes, or a view of bytes).
    def write(self, data: bytes | memoryview, /) -> int: ...


_BatchWriter = Callable[[list[bytes | memoryview]], object]


class _BackgroundWriter:
    """Writes on a thread of its own, so the next day block is encoded while the kernel
    takes the last ones (and zlib compresses them): both let go of the GIL. Chunks are
    handed over about a MiB at a time, in one `writev` each, and at most a few MiB wait, so
    memory stays flat. The thread's error comes back on the next call."""

    BATCH_BYTES = 1 << 20
    QUEUED = 8  # batches

    def __init__(self, write_batch: _BatchWriter, done: _BatchWriter | None = None) -> None:
        self._write_batch = write_batch
        self._done = done  # called with every batch once the thread is through with it
        self._queue: queue.Queue[list[bytes | memoryview] | None] = queue.Queue(self.QUEUED)
        self._batch: list[bytes | memoryview] = []
        self._size = 0
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="feed-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (batch := self._queue.get()) is not None:
            if self._error is None:
                try:
                    self._write_batch(batch)
                except BaseException as exc:  # handed to the producer, not lost in a thread
                    self._error = exc
            if self._done is not None:
                self._done(batch)

    def check(self) -> None:
        """Raise the thread's error, if it had one."""
        if self._error is not None:
            raise self._error

    def write(self, data: bytes | memoryview, /) -> int:
        self.check()
        self._batch.append(data)
        self._size += len(data)
        if self._size >= self.BATCH_BYTES:
            self._queue.put(self._batch)
            self._batch, self._size = [], 0
        return len(data)

    def close(self, *, quiet: bool = False) -> None:
        """Write what is left and wait for the thread; raise what went wrong (unless `quiet`:
        the caller is already raising)."""
        if self._batch and self._error is None and not quiet:
            self._queue.put(self._batch)
        elif self._batch and self._done is not None:
            self._done(self._batch)  # not written, but through with all the same
        self._batch = []
        self._queue.put(None)
        self._thread.join()
        if self._error is not None and not quiet:
            raise self._error


class _DirectWriter:
    """Writes through O_DIRECT: from aligned buffers straight to the disk.

    A feed is hundreds of MB written once and read at most once (by the uploader): through
    the page cache every MB is fresh memory to fault in, and the cache loses what the server
    reads all day (the database). Direct I/O needs aligned buffers, offsets and lengths, so
    the last block is padded and the file cut back to its true length.

    The producer copies what it writes into one of two buffers; a full one goes to the
    background writer's thread while the producer fills the other. The thread only calls
    `os.write`, which lets go of the GIL: were it to copy too, it would hold the GIL for a
    buffer's worth of copies each time the producer let go of it (an SQLite read does, for
    every row), and the producer would wait for it."""

    BLOCK = 4096
    BUFFER = 4 << 20

    def __init__(self, fd: int) -> None:
        self.fd = fd
        # anonymous maps are page aligned; one is filled while the other is written
        self._free: queue.Queue[mmap.mmap] = queue.Queue()
        self._maps = [mmap.mmap(-1, self.BUFFER) for _ in range(2)]
        for buffer in self._maps[1:]:
            self._free.put(buffer)
        self.buffer = self._maps[0]
        self.used = 0
        self.length = 0
        self._writer = _BackgroundWriter(self._write_views, done=self._give_back)

    def write(self, data: bytes | memoryview, /) -> int:
        self._writer.check()  # the thread's error comes back on the next call
        used, size = self.used, len(data)
        if type(data) is bytes and used + size < self.BUFFER:  # most writes: one copy
            self.buffer[used : used + size] = data
            self.used = used + size
            return size
        view = memoryview(data).cast("B")  # bytes, whatever the items of a view
        used, buffer = self.used, self.buffer
        while view:
            take = min(len(view), self.BUFFER - used)
            buffer[used : used + take] = view[:take]
            used += take
            view = view[take:]
            if used == self.BUFFER:
                self.used = used
                self._hand_over(self.BUFFER)
                used, buffer = 0, self.buffer
        self.used = used
        return len(data)

    def _hand_over(self, size: int) -> None:
        """The buffer's first `size` bytes to the thread (its error, if it had one, comes
        out here); then the other buffer, once the thread is through with it."""
        view = memoryview(self.buffer)[:size]
        try:
            self._writer.write(view)
        except BaseException:
            view.release()  # the buffer must close with no view on it
            raise
        self.length += self.used
        self.used = 0
        self.buffer = self._free.get()

    def _write_views(self, views: list[bytes | memoryview]) -> None:
        for view in views:
            # Released even when the write fails: the error's traceback keeps its frames, and
            # a buffer with a view on it cannot be closed.
            with memoryview(view) as whole:
                self.write_out(whole)

    def _give_back(self, views: list[bytes | memoryview]) -> None:
        for view in views:
            if isinstance(view, memoryview):
                buffer = view.obj
                view.release()
                self._free.put(buffer)  # type: ignore[arg-type]

    def write_out(self, view: memoryview) -> None:
        """A filled buffer to the file (on the writer thread)."""
        view = view[:]  # a view of our own, released however this ends
        try:
            while view:
                try:
                    view = view[os.write(self.fd, view) :]
                except OSError as exc:
                    # Some file systems open with O_DIRECT and then refuse the writes: go on
                    # through the page cache (the padded end is cut off all the same).
                    if exc.errno != errno.EINVAL or not self._drop_direct():
                        raise
        finally:
            view.release()

    def _drop_direct(self) -> bool:
        """Clear O_DIRECT on the descriptor; False if it was not set (a real EINVAL)."""
        flags = fcntl.fcntl(self.fd, fcntl.F_GETFL)
        if not flags & os.O_DIRECT:
            return False
        fcntl.fcntl(self.fd, fcntl.F_SETFL, flags & ~os.O_DIRECT)
        return True

    def close(self, *, quiet: bool = False) -> None:
        """Wait for the thread and free the buffers (once); raise what went wrong (unless
        `quiet`: the caller is already raising)."""
        try:
            self._writer.close(quiet=quiet)
        finally:
            for buffer in self._maps:
                buffer.close()  # closing twice does nothing

    def drain(self) -> None:
        """Write the last block, padded, and wait for the thread (then `finish`)."""
        try:
            if self.used:
                padded = -(-self.used // self.BLOCK) * self.BLOCK
                self.buffer[self.used : padded] = bytes(padded - self.used)
                self._hand_over(padded)
        finally:
            self.close()

    def finish(self) -> None:
        """Cut the file to its length (the padding off)."""
        os.ftruncate(self.fd, self.length)


def _open_direct(path: Path) -> int | None:
    """`path` opened again for direct I/O, or None where the system or file system has none
    (tmpfs, macOS): the caller then writes through the page cache."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return None
    try:
        return os.open(path, os.O_WRONLY | flag)
    except OSError:
        return None


@contextmanager
def _atomic_output(path: Path, *, gzip: bool) -> Iterator[_ByteSink]:
    """A stream whose bytes appear at `path` all at once on success, and nowhere on error."""
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    temp = Path(temp_name)
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide the feed from the uploader's account
        with open(fd, "wb") as raw:
            if gzip:
                # mtime=0 and an empty filename keep the gzip header the same on every run.
                with GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
                    yield from _in_background(lambda batch: gz.write(b"".join(batch)))
            elif (direct_fd := _open_direct(temp)) is not None:
                try:
                    direct = _DirectWriter(direct_fd)
                    try:
                        yield direct
                        direct.drain()
                    except BaseException:
                        direct.close(quiet=True)  # the thread must be gone before the close
                        raise
                    direct.finish()
                    os.fsync(direct_fd)
                finally:
                    os.close(direct_fd)
            else:
                yield from _in_background(raw.writelines)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    # The rename is durable only once the directory entry is on disk.
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _in_background(write_batch: _BatchWriter) -> Iterator[_ByteSink]:
    writer = _BackgroundWriter(write_batch)
    try:
        yield writer
    except BaseException:
        writer.close(quiet=True)  # the thread must be gone before the file closes
        raise
    writer.close()


def write_availability_feed(
    path: Path,
    entries_by_merchant: Iterable[tuple[str, Iterable[Mapping[str, Any]]]],
    *,
    shard_number: int,
    total_shards: int,
    nonce: int | str | None,
    generation_timestamp: int,
    now_sec: int,
    gzip: bool = False,
    progress: Callable[[int], None] | None = None,
) -> FileStats:
    """Stream one availability shard to `path`, checking every entry on the way.

    Entries are written in the order given, one merchant's entries together. `progress`
    is called with the number of entries written so far, lastly with the total.
    """
    metadata = _metadata(shard_number, total_shards, nonce, generation_timestamp)
    checker = FeedChecker(now_sec=now_sec)

    def encoded() -> Iterator[str]:
        for merchant_id, entries in entries_by_merchant:
            first_of_merchant = True
            for entry in entries:
                checker.check(entry)
                if entry["merchant_id"] != merchant_id:
                    raise refuse(
                        MERCHANT_ID_MISMATCH, f"{entry['merchant_id']!r} in {merchant_id!r}"
                    )
                ordered = entry_in_order(entry)
                if first_of_merchant:
                    _validate_sample(metadata, ordered)
                    first_of_merchant = False
                yield encode_json(ordered)

    return _write_entries(path, metadata, encoded(), gzip, progress)


Row = tuple[int, int, int, int, int]  # start_sec, duration_sec, party_size, open, total


def write_availability_rows(
    path: Path,
    rows_by_merchant: Iterable[tuple[str, str, Iterable[Row]]],
    *,
    shard_number: int,
    total_shards: int,
    nonce: int | str | None,
    generation_timestamp: int,
    now_sec: int,
    gzip: bool = False,
    progress: Callable[[int], None] | None = None,
) -> FileStats:
    """The same bytes as write_availability_feed for plain dining entries, from rows.

    The export's hot path: a row that passes the inline checks is written with a template;
    any other row is turned into its entry and checked in full, so it fails with the same
    error code. The first entry of each merchant is still validated with jsonschema.
    """
    metadata = _metadata(shard_number, total_shards, nonce, generation_timestamp)
    checker = FeedChecker(now_sec=now_sec)
    low = max(now_sec, MIN_TIMESTAMP_SEC)
    mode = CONFIRMATION_MODE_SYNCHRONOUS

    def encoded() -> Iterator[str]:
        for merchant_id, service_id, rows in rows_by_merchant:
            prefix = (
                f'{{"merchant_id":{encode_json(merchant_id)},"service_id":{encode_json(service_id)},'
                '"start_sec":'
            )
            first = True
            seen: set[tuple[int, int, int]] = set()
            for start, duration, size, spots_open, spots_total in rows:
                key = (start, duration, size)
                if (
                    first
                    or type(start) is not int
                    or type(duration) is not int
                    or type(size) is not int
                    or type(spots_open) is not int
                    or type(spots_total) is not int
                    or not low <= start <= MAX_TIMESTAMP_SEC
                    or not 0 < duration < MAX_DURATION_SEC
                    or not 1 <= size <= MAX_PARTY_SIZE
                    or not 0 <= spots_open <= spots_total
                    or key in seen
                ):
                    entry = availability_entry(
                        merchant_id, service_id, start, duration, size, spots_open, spots_total
                    )
                    checker.check(entry)  # raises with the partner's code, or it is fine
                    if first:
                        _validate_sample(metadata, entry_in_order(entry))
                        first = False
                seen.add(key)
                yield (
                    f'{prefix}{start},"duration_sec":{duration},"spots_total":{spots_total},'
                    f'"spots_open":{spots_open},"resources":{{"party_size":{size}}},'
                    f'"confirmation_mode":"{mode}"}}'
                )

    return _write_entries(path, metadata, encoded(), gzip, progress)


@dataclass(frozen=True)
class MerchantDays:
    """One merchant's availability as day blocks: the export's fastest path.

    `sizes` are the party sizes with spots_total > 0, with their turn times and totals; each
    day is (slot starts, spots_open per slot and size in `sizes` order). With seating areas
    (issue #14), `rooms` gives each column's (room_id, room_name): a size then appears once
    per area that seats it, and its entries carry the room.
    """

    merchant_id: str
    service_id: str
    sizes: tuple[int, ...]
    durations: tuple[int, ...]
    totals: tuple[int, ...]
    days: Iterable[tuple[Sequence[int], Sequence[Sequence[int]]]]
    rooms: tuple[tuple[str, str], ...] = ()  # per column; empty: no rooms
    # Entries that differ by more than spots_open (booking windows, per-service turns):
    # written one by one, each checked in full, instead of `days`.
    entries: Iterable[Mapping[str, Any]] | None = None

    def room(self, column: int) -> RoomKeys:
        """The availability_entry keywords of a column's room (none without rooms)."""
        if not self.rooms:
            return {}
        room_id, room_name = self.rooms[column]
        return {"room_id": room_id, "room_name": room_name}


class RoomKeys(TypedDict, total=False):
    """A column's room as availability_entry keywords (empty: no rooms)."""

    room_id: str
    room_name: str


def write_availability_days(
    path: Path,
    merchants: Iterable[MerchantDays],
    *,
    shard_number: int,
    total_shards: int,
    nonce: int | str | None,
    generation_timestamp: int,
    now_sec: int,
    gzip: bool = False,
    progress: Callable[[int], None] | None = None,
) -> FileStats:
    """The same bytes as write_availability_rows, a day at a time.

    What is the same for every entry of a merchant (ids, sizes, turn times, totals) is
    checked once, in full; each day's starts and spots are checked in bulk and written
    around the slot's start. A day failing the bulk checks goes through the row path, so it
    fails with the partner's error code. jsonschema itself checks one entry per file: the
    entries differ only in values, which the full check covers (a test holds it to
    jsonschema's verdict), so a drift between the two shows on any one entry.
    """
    metadata = _metadata(shard_number, total_shards, nonce, generation_timestamp)
    low = max(now_sec, MIN_TIMESTAMP_SEC)
    sampled = [False]  # one jsonschema sample per file

    def encoded() -> Iterator[tuple[bytes, int]]:
        for m in merchants:
            if m.entries is not None:
                yield from _entry_chunks(m.entries, metadata, now_sec)
                continue
            if not m.sizes:
                continue
            width = len(m.sizes)
            if not len(m.durations) == len(m.totals) == width or len(m.rooms) not in (0, width):
                raise refuse(SCHEMA_VIOLATION, f"{m.merchant_id}: sizes, turns, totals differ")
            slot_parts = _SlotParts(m)
            known = slot_parts.parts.get
            last_start = -1
            checked = False
            for starts, opens in m.days:
                count = len(starts)
                if not count:
                    continue
                if not checked:
                    _check_constants(m, starts[0], now_sec, None if sampled[0] else metadata)
                    checked = sampled[0] = True
                keys = list(map(tuple, opens))
                # Each slot's parts, if its row was seen before (None if not). By type first:
                # 1.0 and True would find the row of 1 in the cache of rows.
                found: list[tuple[bytes, ...] | None] | None = None
                if len(keys) == count and set(map(type, chain.from_iterable(keys))) <= {int}:
                    found = list(map(known, keys))
                if not (
                    found is not None
                    and (None not in found or slot_parts.take(keys, found))
                    and set(map(type, starts)) <= {int}
                    and starts[0] > last_start
                    and low <= starts[0]
                    and starts[-1] <= MAX_TIMESTAMP_SEC
                    and all(map(operator.lt, starts, islice(starts, 1, None)))
                ):
                    rows = [
                        (start, d, n, o, t)
                        for start, row in zip(starts, opens, strict=False)
                        for n, d, t, o in zip(m.sizes, m.durations, m.totals, row, strict=False)
                    ]
                    _row_check(m, rows, now_sec, width)
                    raise refuse(SCHEMA_VIOLATION, f"{m.merchant_id}: a malformed day block")
                last_start = starts[-1]
                # Each slot is its parts joined by its start: no Python loop per slot.
                day = map(bytes.join, map(b"%d".__mod__, starts), found)  # type: ignore[arg-type]
                yield b"".join(day), count * width

    return _write_chunks(path, metadata, encoded(), gzip, progress)


def _room_keys(m: MerchantDays, column: int) -> str:
    """`,"room_id":...,"room_name":...` of a column's room ("" without rooms)."""
    if not m.rooms:
        return ""
    room_id, room_name = m.rooms[column]
    return f',"room_id":{encode_json(room_id)},"room_name":{encode_json(room_name)}'


def _entry_chunks(
    entries: Iterable[Mapping[str, Any]], metadata: Record, now_sec: int
) -> Iterator[tuple[bytes, int]]:
    """A merchant's entries one by one: each checked in full, the first with jsonschema."""
    checker = FeedChecker(now_sec=now_sec)
    batch: list[str] = []
    first = True
    for entry in entries:
        checker.check(entry)
        ordered = entry_in_order(entry)
        if first:
            _validate_sample(metadata, ordered)
            first = False
        batch.append(encode_json(ordered))
        if len(batch) >= BATCH_ENTRIES:
            yield ("," + ",".join(batch)).encode("utf-8"), len(batch)
            batch = []
    if batch:
        yield ("," + ",".join(batch)).encode("utf-8"), len(batch)


class _SlotParts:
    """One merchant's slot encoded around its start: a slot's entries (each preceded by a
    comma) are `str(start).join(parts)`, and the parts depend only on the slot's spots_open
    per size. Slots share rows (an empty floor, a quiet hour), so each row is checked and
    encoded once per merchant."""

    def __init__(self, m: MerchantDays) -> None:
        mode = CONFIRMATION_MODE_SYNCHRONOUS
        self.totals = m.totals
        self.head = (
            f',{{"merchant_id":{encode_json(m.merchant_id)},'
            f'"service_id":{encode_json(m.service_id)},"start_sec":'
        ).encode()
        # Entry i around its spots_open: before[i] %d after[i], then the next entry's head.
        width = len(m.sizes)
        self.before: list[bytes] = []
        self.after: list[bytes] = []
        for i, (n, d, t) in enumerate(zip(m.sizes, m.durations, m.totals, strict=True)):
            self.before.append(f',"duration_sec":{d},"spots_total":{t},"spots_open":'.encode())
            resources = f'{{"party_size":{n}{_room_keys(m, i)}}}'
            tail = f',"resources":{resources},"confirmation_mode":"{mode}"}}'.encode()
            self.after.append(tail + (self.head if i < width - 1 else b""))
        # Per column: spots_open -> its piece (before, the number, after); a row's parts are
        # its pieces, so a row not seen before costs a look-up per column.
        self.pieces: list[dict[int, bytes]] = [{} for _ in range(width)]
        # A row's parts are a tuple: bytes only, so the cyclic collector stops tracking it at
        # its first pass (a list would be walked again and again while the merchant lasts).
        self.parts: dict[tuple[int, ...], tuple[bytes, ...]] = {}

    def take(self, keys: list[tuple[int, ...]], found: list[tuple[bytes, ...] | None]) -> bool:
        """Fill in `found` (each key's parts, None where its row was not seen before),
        encoding the rows not seen before; False if one is not a valid row of spots_open.
        The caller has checked that every value is an int. A column's pieces are only ever
        made for a valid value (0 <= spots_open <= its total), so a row of the right length
        whose values all have their piece already is valid."""
        totals = self.totals
        width = len(totals)
        pieces, before, after = self.pieces, self.before, self.after
        known = self.parts
        for k, key in enumerate(keys):
            if found[k] is not None:
                continue
            parts = known.get(key)  # the same row earlier in the day may have filled it
            if parts is None:
                if len(key) != width:
                    return False
                made = [self.head, *map(dict.get, pieces, key)]
                if None in made:
                    for i, v in enumerate(key):
                        if made[i + 1] is None:
                            if not 0 <= v <= totals[i]:
                                return False
                            made[i + 1] = pieces[i][v] = b"%s%d%s" % (before[i], v, after[i])
                parts = known[key] = tuple(made)  # type: ignore[arg-type]
            found[k] = parts
        return True


def _check_constants(m: MerchantDays, start: int, now_sec: int, metadata: Record | None) -> None:
    """Every (size, turn, total) of the merchant, as a full entry at its first start; and
    with jsonschema, one entry in a document with `metadata` (unless None)."""
    checker = FeedChecker(now_sec=now_sec)
    for i, (n, duration, total) in enumerate(zip(m.sizes, m.durations, m.totals, strict=True)):
        entry = availability_entry(
            m.merchant_id, m.service_id, start, duration, n, 0, total, **m.room(i)
        )
        checker.check(entry)
    if metadata is not None:
        first = availability_entry(
            m.merchant_id,
            m.service_id,
            start,
            m.durations[0],
            m.sizes[0],
            0,
            m.totals[0],
            **m.room(0),
        )
        _validate_sample(metadata, entry_in_order(first))


def _row_check(m: MerchantDays, rows: list[Row], now_sec: int, width: int) -> None:
    checker = FeedChecker(now_sec=now_sec)
    for i, (start, duration, n, spots_open, spots_total) in enumerate(rows):
        checker.check(
            availability_entry(
                m.merchant_id,
                m.service_id,
                start,
                duration,
                n,
                spots_open,
                spots_total,
                **m.room(i % width),
            )
        )


def _metadata(
    shard_number: int, total_shards: int, nonce: int | str | None, generation_timestamp: int
) -> Record:
    metadata = feed_metadata(
        shard_number=shard_number,
        total_shards=total_shards,
        nonce=nonce,
        generation_timestamp=generation_timestamp,
    )
    validate_document(AVAILABILITY, {"metadata": metadata, "service_availability": []})
    return metadata


def _validate_sample(metadata: Record, ordered: Record) -> None:
    # jsonschema itself on one entry per merchant: a drift between the fast checks and the
    # schema file shows here, not at the partner.
    sample = {"metadata": metadata, "service_availability": [{"availability": [ordered]}]}
    validate_document(AVAILABILITY, sample)


def _write_entries(
    path: Path,
    metadata: Record,
    encoded: Iterator[str],
    gzip: bool,
    progress: Callable[[int], None] | None,
) -> FileStats:
    def batches() -> Iterator[tuple[bytes, int]]:
        while batch := list(islice(encoded, BATCH_ENTRIES)):
            yield ("," + ",".join(batch)).encode("utf-8"), len(batch)

    return _write_chunks(path, metadata, batches(), gzip, progress)


def _write_chunks(
    path: Path,
    metadata: Record,
    chunks: Iterator[tuple[bytes, int]],
    gzip: bool,
    progress: Callable[[int], None] | None,
) -> FileStats:
    """Write the document around `chunks` of (entries each preceded by a comma, how many).

    Chunks are written as they come (a day of one restaurant, a batch of entries): small
    buffers are reused while they are hot, where one large string per write would be fresh
    memory every time."""
    written = 0
    reported = 0
    head = '{"metadata":' + encode_json(metadata) + ',"service_availability":[{"availability":['
    with _atomic_output(path, gzip=gzip) as out:
        out.write(head.encode("utf-8"))
        for data, count in chunks:
            if not count:
                continue
            # Only the very first entry has no comma before it.
            out.write(data if written else memoryview(data)[1:])
            written += count
            if progress is not None and written - reported >= BATCH_ENTRIES:
                progress(written)
                reported = written
        if progress is not None:
            progress(written)  # the last call reports the total, also for an empty feed
        out.write(b"]}]}\n")
    return FileStats(path=path, bytes=path.stat().st_size, entries=written)


def _write_small_feed(
    name: str,
    list_key: str,
    records: list[Mapping[str, Any]],
    path: Path,
    *,
    shard_number: int,
    total_shards: int,
    nonce: int | str | None,
    generation_timestamp: int,
    gzip: bool,
) -> FileStats:
    metadata = feed_metadata(
        shard_number=shard_number,
        total_shards=total_shards,
        nonce=nonce,
        generation_timestamp=generation_timestamp,
    )
    schema = load_schema(name)
    document = in_schema_order({"metadata": metadata, list_key: records}, schema, schema)
    validate_document(name, document)
    with _atomic_output(path, gzip=gzip) as out:
        out.write((encode_json(document) + "\n").encode("utf-8"))
    return FileStats(path=path, bytes=path.stat().st_size, entries=len(records))


def write_merchant_feed(
    path: Path,
    merchants: Iterable[Mapping[str, Any]],
    *,
    generation_timestamp: int,
    shard_number: int = 0,
    total_shards: int = 1,
    nonce: int | str | None = None,
    gzip: bool = False,
) -> FileStats:
    """Write the merchant feed (records from merchant_record), sorted by merchant_id."""
    records = sorted(merchants, key=lambda m: str(m.get("merchant_id")))
    _refuse_duplicates(records, "merchant_id")
    return _write_small_feed(
        MERCHANT,
        "merchant",
        records,
        path,
        shard_number=shard_number,
        total_shards=total_shards,
        nonce=nonce,
        generation_timestamp=generation_timestamp,
        gzip=gzip,
    )


def write_service_feed(
    path: Path,
    services: Iterable[Mapping[str, Any]],
    *,
    generation_timestamp: int,
    shard_number: int = 0,
    total_shards: int = 1,
    nonce: int | str | None = None,
    gzip: bool = False,
) -> FileStats:
    """Write the service feed (records from service_record), sorted by merchant_id.

    Dining has exactly one service per merchant, so a second one for a merchant is refused.
    """
    records = sorted(services, key=lambda s: str(s.get("merchant_id")))
    _refuse_duplicates(records, "merchant_id")
    return _write_small_feed(
        SERVICE,
        "service",
        records,
        path,
        shard_number=shard_number,
        total_shards=total_shards,
        nonce=nonce,
        generation_timestamp=generation_timestamp,
        gzip=gzip,
    )


def _refuse_duplicates(records: Sequence[Mapping[str, Any]], key: str) -> None:
    seen: set[object] = set()
    for record in records:
        value = record.get(key)
        if value in seen:
            raise FeedError(DUPLICATE_RECORD, f"two records with {key} {value!r}")
        seen.add(value)
