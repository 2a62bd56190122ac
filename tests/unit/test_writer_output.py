"""feed.files.writer._atomic_output: the bytes written, and nothing at all on any error.

Three ways to the disk: plain files through O_DIRECT (two aligned 4 MiB buffers, one filled
by the caller while the other is written, the last block padded then cut back), plain files
through the page cache when O_DIRECT cannot be opened, and gzip. All of them write on a
background thread ("feed-writer").
"""

from __future__ import annotations

import array
import errno
import fcntl
import gzip as gzip_module
import io
import os
import random
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from feed.files import writer

MiB = 1 << 20
BUFFER = writer._DirectWriter.BUFFER  # 4 MiB
BLOCK = writer._DirectWriter.BLOCK
MODES = ("direct", "fallback", "gzip")
HAS_O_DIRECT = bool(getattr(os, "O_DIRECT", 0))

# Chunk sizes cycled through: tiny, around a block, around the buffer and above it, empty.
IRREGULAR = (1, BLOCK - 1, 3, BLOCK + 1, 65_537, BUFFER + BLOCK + 3, 777_777, BLOCK, 0, MiB - 1)
SIZES = (0, 1, BLOCK - 1, BLOCK, BLOCK + 1, BUFFER, BUFFER + 1, 9 * MiB + 12_345)


def writer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "feed-writer" and t.is_alive()]


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()


@pytest.fixture(autouse=True)
def no_thread_or_descriptor_left() -> Iterator[None]:
    assert writer_threads() == []
    before = open_fds()
    yield
    assert writer_threads() == []  # joined before _atomic_output returns or raises
    assert open_fds() <= before


class Spy:
    """Records what writer._open_direct returned, and whether the fd really had O_DIRECT."""

    def __init__(self) -> None:
        self.returned: list[int | None] = []
        self.direct_flag: list[bool] = []

    def __call__(self, path: Path) -> int | None:
        fd = OPEN_DIRECT(path)
        self.returned.append(fd)
        if fd is not None:
            self.direct_flag.append(bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT))
        return fd


OPEN_DIRECT = writer._open_direct


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The way to the disk under test; "direct" checks it really went through O_DIRECT."""
    name: str = request.param
    if name == "direct":
        if not HAS_O_DIRECT:
            pytest.skip("no O_DIRECT on this system")
        spy = Spy()
        monkeypatch.setattr(writer, "_open_direct", spy)
        yield name
        assert spy.returned and all(isinstance(fd, int) for fd in spy.returned), spy.returned
        assert all(spy.direct_flag)
    else:
        if name == "fallback":
            monkeypatch.setattr(writer, "_open_direct", lambda path: None)
        yield name


def payload(size: int) -> bytes:
    return random.Random(size).randbytes(size)


def chunks_of(data: bytes) -> Iterator[bytes | memoryview]:
    """`data` in chunks of irregular sizes, bytes and memoryviews (at odd offsets) in turn,
    some larger than the direct writer's buffer; an empty write first."""
    yield b""
    view = memoryview(data)
    start = 0
    for i in range(len(data)):
        if start >= len(data):
            return
        part = view[start : start + IRREGULAR[i % len(IRREGULAR)]]
        yield part if i % 2 else bytes(part)
        start += len(part)


def output(path: Path, mode: str) -> AbstractContextManager[writer._ByteSink]:
    return writer._atomic_output(path, gzip=mode == "gzip")


def write(path: Path, mode: str, chunks: Iterator[bytes | memoryview]) -> None:
    with output(path, mode) as out:
        for chunk in chunks:
            assert out.write(chunk) == len(chunk)


def read(path: Path, mode: str) -> bytes:
    data = path.read_bytes()
    return gzip_module.decompress(data) if mode == "gzip" else data


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# -- (a) the bytes written, and only them ----------------------------------------------------


@pytest.mark.parametrize("size", SIZES, ids=[str(s) for s in SIZES])
def test_the_file_holds_exactly_the_bytes_written(tmp_path: Path, mode: str, size: int) -> None:
    path = tmp_path / "feed.json"
    data = payload(size)
    write(path, mode, chunks_of(data))
    got = read(path, mode)
    assert len(got) == size  # no padding left by the direct writer's last block
    assert got == data
    assert names(tmp_path) == ["feed.json"]  # no temporary file left behind


def test_one_write_larger_than_two_buffers_in_one_piece(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "feed.json"
    data = payload(2 * BUFFER + BLOCK + 5)
    write(path, mode, iter([memoryview(data)[5:], b"tail"]))
    assert read(path, mode) == data[5:] + b"tail"


def test_a_finished_file_replaces_the_one_at_the_path(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "feed.json"
    path.write_bytes(b"x" * (BUFFER + 7))  # longer than the new file: nothing of it may remain
    write(path, mode, iter([b"new"]))
    assert read(path, mode) == b"new"
    assert names(tmp_path) == ["feed.json"]


def test_a_memoryview_of_wider_items_is_written_as_its_bytes(tmp_path: Path, mode: str) -> None:
    data = array.array("I", range(100_000))  # 400 KB of 4-byte items
    path = tmp_path / "feed.json"
    write(path, mode, iter([memoryview(data), b"tail"]))
    assert read(path, mode) == data.tobytes() + b"tail"


@pytest.mark.skipif(not HAS_O_DIRECT, reason="no O_DIRECT on this system")
def test_a_file_system_refusing_direct_writes_gets_them_through_the_page_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some file systems open a file with O_DIRECT and then fail its writes with EINVAL."""
    real_write = os.write
    refused: list[int] = []

    def write_refusing_direct(fd: int, data: Any) -> int:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT:
            refused.append(fd)
            raise OSError(errno.EINVAL, "Invalid argument (test)")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write_refusing_direct)
    data = payload(BUFFER + BLOCK + 17)
    path = tmp_path / "feed.json"
    write(path, "direct", chunks_of(data))
    assert refused  # it did try O_DIRECT first
    assert path.read_bytes() == data
    assert names(tmp_path) == ["feed.json"]


def test_gzip_output_is_the_same_bytes_on_every_run(tmp_path: Path) -> None:
    data = payload(MiB + 3)
    write(tmp_path / "a.json.gz", "gzip", chunks_of(data))
    write(tmp_path / "b.json.gz", "gzip", chunks_of(data))
    written = (tmp_path / "a.json.gz").read_bytes()
    assert written == (tmp_path / "b.json.gz").read_bytes()
    # No clock and no name in the header: magic, deflate, no flags (so no FNAME), mtime 0.
    assert written[:8] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00"


# -- (b) the producer fails ----------------------------------------------------------------


class Interrupted(BaseException):
    """Not an Exception: like KeyboardInterrupt, it must clean up all the same."""


@pytest.mark.parametrize("error", [RuntimeError, Interrupted])
@pytest.mark.parametrize("written", [0, 10, 10 * MiB + 1])
def test_a_producer_error_leaves_no_file_and_no_thread(
    tmp_path: Path, mode: str, error: type[BaseException], written: int
) -> None:
    path = tmp_path / "feed.json"
    with pytest.raises(error, match="producer"), output(path, mode) as out:
        for chunk in chunks_of(payload(written)):
            out.write(chunk)
        raise error("producer failed")
    assert not path.exists()
    assert names(tmp_path) == []


def test_a_producer_error_keeps_the_old_file(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "feed.json"
    path.write_bytes(b"old feed")
    with pytest.raises(RuntimeError), output(path, mode) as out:
        out.write(payload(5 * MiB))
        raise RuntimeError("producer failed")
    assert path.read_bytes() == b"old feed"
    assert names(tmp_path) == ["feed.json"]


# -- (c) the writer thread fails -------------------------------------------------------------


class Failure:
    """Makes the writer's way to the disk raise one OSError, and tells when it has."""

    def __init__(self) -> None:
        self.error = OSError(errno.ENOSPC, "No space left on device (test)")
        self.raised = threading.Event()

    def fail(self, *args: Any) -> None:
        self.raised.set()
        raise self.error


@pytest.fixture
def failure(mode: str, monkeypatch: pytest.MonkeyPatch) -> Failure:
    """The first batch the writer thread hands to the disk fails, in each mode."""
    failure = Failure()
    if mode == "direct":
        monkeypatch.setattr(writer._DirectWriter, "write_out", failure.fail)
    elif mode == "fallback":

        class FailingFile(io.BufferedWriter):
            def writelines(self, lines: Any, /) -> None:
                failure.fail()

        def failing_open(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> FailingFile:
            return FailingFile(io.FileIO(fd, mode))

        monkeypatch.setattr(writer, "open", failing_open, raising=False)
    else:

        class FailingGzip(gzip_module.GzipFile):
            def write(self, data: Any) -> int:
                failure.fail()
                return 0

        monkeypatch.setattr(writer, "GzipFile", FailingGzip)
    return failure


def test_a_writer_error_comes_out_of_the_with_block_on_exit(
    tmp_path: Path, mode: str, failure: Failure
) -> None:
    path = tmp_path / "feed.json"
    with pytest.raises(OSError) as caught, output(path, mode) as out:
        out.write(b"less than one batch: handed over on exit")
    assert caught.value is failure.error
    assert failure.raised.is_set()
    assert not path.exists()
    assert names(tmp_path) == []


def test_a_writer_error_comes_out_of_a_later_write(
    tmp_path: Path, mode: str, failure: Failure
) -> None:
    path = tmp_path / "feed.json"
    from_a_write: list[OSError] = []
    with pytest.raises(OSError) as caught, output(path, mode) as out:
        out.write(payload(BUFFER))  # a full batch, and a full direct buffer
        assert failure.raised.wait(10)
        for _ in range(10_000):  # the thread records its error just after raising it
            try:
                out.write(b"x")
            except OSError as exc:
                from_a_write.append(exc)
                raise
            time.sleep(0.001)
    assert caught.value is failure.error
    assert from_a_write == [failure.error]
    assert not path.exists()
    assert names(tmp_path) == []


def test_a_writer_error_keeps_the_old_file(tmp_path: Path, mode: str, failure: Failure) -> None:
    path = tmp_path / "feed.json"
    path.write_bytes(b"old feed")
    with pytest.raises(OSError):
        write(path, mode, chunks_of(payload(3 * MiB)))
    assert path.read_bytes() == b"old feed"
    assert names(tmp_path) == ["feed.json"]


@pytest.mark.skipif(not HAS_O_DIRECT, reason="no O_DIRECT on this system")
def test_an_error_cutting_the_direct_file_to_length_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failure = Failure()
    monkeypatch.setattr(writer._DirectWriter, "finish", failure.fail)
    path = tmp_path / "feed.json"
    with pytest.raises(OSError) as caught:
        write(path, "direct", chunks_of(payload(BUFFER + 1)))
    assert caught.value is failure.error
    assert names(tmp_path) == []


# -- (d) the file's mode -------------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_the_file_is_readable_by_everyone_whatever_the_umask(
    tmp_path: Path, mode: str, umask: int
) -> None:
    path = tmp_path / "feed.json"
    old = os.umask(umask)
    try:
        write(path, mode, iter([payload(BLOCK + 1)]))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


# -- _open_direct ----------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_O_DIRECT, reason="no O_DIRECT on this system")
def test_open_direct_opens_a_file_on_this_machines_tmp_path(tmp_path: Path) -> None:
    path = tmp_path / "feed.json"
    path.touch()
    fd = writer._open_direct(path)
    assert isinstance(fd, int)
    try:
        assert fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT
    finally:
        os.close(fd)


def test_open_direct_gives_none_when_the_file_cannot_be_opened(tmp_path: Path) -> None:
    assert writer._open_direct(tmp_path / "missing" / "feed.json") is None


def test_open_direct_gives_none_without_o_direct(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "O_DIRECT", raising=False)
    path = tmp_path / "feed.json"
    path.touch()
    assert writer._open_direct(path) is None
