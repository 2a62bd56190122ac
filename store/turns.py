"""Once per interval across processes: of the receivers sharing a store, the first to record
an interval's turn does that interval's work and the others skip it.

Built on the idempotency records (remember keeps the first value), so every backend has it
without a schema change. A turn is never handed back: a process that dies mid-work loses
that interval's run, and the next interval's turn goes to whoever asks first.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable

from store.log import LogStore

SCOPE = "turn"
KEEP = 100  # intervals of turns kept: every KEEP intervals the older ones are forgotten


def served_by(job: str, merchant_ids: Iterable[str]) -> str:
    """The name of `job`'s turns among the processes serving exactly these restaurants.

    Receivers on one store may run different restaurant files: a turn shared by all of them
    went to whichever asked first, and a restaurant only the others served missed that
    interval's work (its export, its sweep). Receivers of the same restaurants still share
    one turn."""
    ids = "\n".join(sorted(set(merchant_ids)))
    return f"{job}:{hashlib.sha256(ids.encode()).hexdigest()[:16]}"


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
        """Take the turn of the interval of `now`: True if no process took it before. The
        taker forgets the turns of long past intervals, so the records do not pile up
        (a 10 s sweep would leave 8,640 a day)."""
        interval = self.interval(now)
        taken = bool(self.store.remember(SCOPE, self.key(interval), self.holder) == self.holder)
        if taken and interval % KEEP == 0:
            self.store.forget_range(SCOPE, f"{self.name}/", self.key(interval - KEEP))
        return taken

    def key(self, interval: int) -> str:
        # Zero-padded, so that key order is interval order (forget_range is a key range).
        return f"{self.name}/{interval:012d}"

    def until_next(self, now: float) -> float:
        """Seconds from `now` to the start of the next interval (when turns are taken)."""
        return (self.interval(now) + 1) * self.seconds - now
