"""Partner requests sent from a process of their own, off the server's GIL.

The outbox sender's threads share the interpreter lock with the requests being served. An
HTTP request through `requests` costs about a millisecond of Python, and every SQLite call
on the event loop lets a sender thread take the lock for up to the switch interval: in
receiver_bench the partner updates alone moved the booking p99 from about 42 ms (no
notify_url) to 55-60 ms. Here the requests are made by a child process, `workers` at a
time; the server only passes each request and its outcome through a socket pair.

The child is `python -m feed.push.sendproc`, not a multiprocessing process: no fork of a
threaded server, and unlike multiprocessing's spawn it never runs the server's own main
script again (a launcher without a `__main__` guard would start a second server).

A child that dies, or stops answering, is replaced at the next request; the requests it had
in hand come back as retryable failures, so the outbox sends them again (partners drop
duplicates by message id).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from multiprocessing.connection import Connection
from typing import Any

from feed.push.delivery import TIMEOUT, Outcome, lean_session, send

ANSWER_GRACE = 30.0  # seconds beyond the request's own timeout before giving up on the child
# What a request is given to the child as: (id, method, url, json_body, data, headers, proxies)
Job = tuple[int, str, str, Any, bytes | None, dict[str, str] | None, dict[str, str] | None]


def _child(conn: Connection, workers: int) -> None:
    """The child: requests from `conn`, each sent on one of `workers` threads, and its
    outcome written back with its id; until the pipe closes or None arrives."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle
    session = lean_session(workers)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="send")
    written = threading.Lock()

    def work(job: Job) -> None:
        job_id, method, url, json_body, data, headers, proxies = job
        try:
            outcome = send(
                session,
                method,
                url,
                json_body=json_body,
                data=data,
                headers=headers,
                proxies=proxies,
            )
        except Exception as exc:  # send never raises for the network; anything else: retry
            outcome = Outcome(ok=False, retry=True, error=f"sender process: {exc}"[:300])
        with written, contextlib.suppress(OSError):  # OSError: the server is gone
            conn.send((job_id, outcome))

    try:
        while True:
            try:
                job = conn.recv()
            except (EOFError, OSError):
                break
            if job is None:
                break
            pool.submit(work, job)
    finally:
        pool.shutdown(wait=True)
        session.close()
        conn.close()


class SendProcess:
    """`delivery.send` (without its session argument) done by a child process. Any number of
    threads may call `send` at once."""

    def __init__(self, workers: int, answer_timeout: float = TIMEOUT + ANSWER_GRACE) -> None:
        self.workers = workers
        self.answer_timeout = answer_timeout  # past it, the child is taken for wedged
        self._lock = threading.Lock()
        self._jobs: dict[int, tuple[Connection, Future[Outcome]]] = {}
        self._next = 0
        self._conn: Connection | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._closed = False

    def _start(self) -> Connection:
        """A new child and the thread reading its answers (under the lock)."""
        ours, theirs = socket.socketpair()
        try:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "feed.push.sendproc",
                    str(theirs.fileno()),
                    str(self.workers),
                ],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        conn = Connection(ours.detach())
        self._conn, self._process = conn, process
        threading.Thread(
            target=self._read, args=(conn, process), name="hoststand-sender-answers", daemon=True
        ).start()
        return conn

    def _read(self, conn: Connection, process: subprocess.Popen[bytes]) -> None:
        while True:
            try:
                job_id, outcome = conn.recv()
            except (EOFError, OSError):
                break
            with self._lock:
                found = self._jobs.pop(job_id, None)
            if found is not None:
                found[1].set_result(outcome)
        # The child has ended: what it had in hand is a failure worth retrying.
        with self._lock:
            if self._conn is conn:
                self._conn = None
            lost = [job for job, (owner, _) in self._jobs.items() if owner is conn]
            futures = [self._jobs.pop(job)[1] for job in lost]
        for future in futures:
            future.set_result(Outcome(ok=False, retry=True, error="the sender process ended"))
        conn.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)  # collected, not left a zombie

    def send(
        self,
        method: str,
        url: str,
        *,
        json_body: Any = None,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
        proxies: dict[str, str] | None = None,
    ) -> Outcome:
        """One attempt, made by the child; never raises for what the network, the partner
        or the child does."""
        future: Future[Outcome] = Future()
        with self._lock:
            if self._closed:
                return Outcome(ok=False, retry=True, error="the sender is closed")
            conn = self._conn
            if conn is None or self._process is None or self._process.poll() is not None:
                try:
                    conn = self._start()
                except OSError as exc:  # no process to be had now (limits, memory)
                    return Outcome(ok=False, retry=True, error=f"no sender process: {exc}"[:300])
            job_id = self._next
            self._next += 1
            self._jobs[job_id] = (conn, future)
            try:
                conn.send((job_id, method, url, json_body, data, headers, proxies))
            except (OSError, ValueError) as exc:  # the child died just now
                self._jobs.pop(job_id, None)
                return Outcome(ok=False, retry=True, error=f"the sender process: {exc}"[:300])
        try:
            return future.result(timeout=self.answer_timeout)
        except FutureTimeout:
            # Each request has its own timeout in the child: one this late means the child
            # is stuck. It is ended (what it has in hand comes back as retryable) and the
            # next request starts another.
            with self._lock:
                self._jobs.pop(job_id, None)
                stuck = self._process if self._conn is conn else None
            if stuck is not None:
                stuck.kill()
            return Outcome(ok=False, retry=True, error="no answer from the sender process")

    def close(self, timeout: float = 15.0) -> None:
        """Let the child finish what it has in hand, then end it."""
        with self._lock:
            self._closed = True
            conn, process = self._conn, self._process
        if conn is not None:
            with contextlib.suppress(OSError, ValueError):  # the child has ended already
                conn.send(None)
        if process is not None:
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def main() -> None:
    parser = argparse.ArgumentParser(
        description="The server's partner requests (started by the server: not for people)."
    )
    parser.add_argument("fd", type=int, help="the socket to the server")
    parser.add_argument("workers", type=int, help="requests made at once")
    args = parser.parse_args()
    _child(Connection(args.fd), args.workers)


if __name__ == "__main__":
    main()
