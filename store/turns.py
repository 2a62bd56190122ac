"""Once per interval across processes: of the receivers sharing a store, the first to record
an interval's turn does that interval's work and the others skip it.

Built on the idempotency records (remember keeps the first value), so every backend has it
without a schema change. A turn is never handed back: a process that dies mid-work loses
that interval's run, and the next interval's turn goes to whoever asks first.
"""

from __future__ import annotations

import uuid

from store.log import LogStore

SCOPE = "turn"


class Turns:
    def __init__(self, store: LogStore, name: str, seconds: float) -> None:
        if seconds <= 0:
            raise ValueError(f"an interval of {seconds} s")
        self.store = store
        self.name = name
        self.seconds = seconds
        self.holder = uuid.uuid4().hex  # this process (this scheduler) only

    def interval(self, now: float) -> int:
        """The interval `now` (Unix seconds) falls in: every process agrees on it."""
        return int(now // self.seconds)

    def mine(self, now: float) -> bool:
        """Take the turn of the interval of `now`: True if no process took it before."""
        key = f"{self.name}/{self.interval(now)}"
        return bool(self.store.remember(SCOPE, key, self.holder) == self.holder)

    def until_next(self, now: float) -> float:
        """Seconds from `now` to the start of the next interval (when turns are taken)."""
        return (self.interval(now) + 1) * self.seconds - now
