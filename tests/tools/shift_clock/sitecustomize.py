"""Shift this machine's wall clock by SHIFT_CLOCK_DAYS days for every Python process started
with this directory first on PYTHONPATH: time.time, time.time_ns, datetime.now, utcnow and
today, date.today. time.monotonic and perf_counter are left alone (timeouts and waits keep
working). A tool to find time bombs, code or tests that mix the machine's clock with the
server's pinned one (--now), never on a default path:

    SHIFT_CLOCK_DAYS=46 PYTHONPATH=tests/tools/shift_clock .venv/bin/pytest -q ...

The variable's name has no HOSTSTAND_ prefix: the tests' servers are started without those.
The C types are patched in their own dicts, so class identity, isinstance and pickling are
untouched (libfaketime breaks Python's sockets and threads; replacing datetime.datetime by a
subclass breaks isinstance checks and the pickling of datetimes).
"""

from __future__ import annotations

import ctypes
import datetime as _dt
import gc
import os
import time as _time
from typing import Any

_days = float(os.environ.get("SHIFT_CLOCK_DAYS") or 0)

if _days:
    _offset = _days * 86400.0
    _offset_ns = int(_offset * 1_000_000_000)
    _real_time = _time.time
    _real_time_ns = _time.time_ns

    def _shifted_time() -> float:
        return _real_time() + _offset

    def _shifted_time_ns() -> int:
        return _real_time_ns() + _offset_ns

    def _patch(cls: type, name: str, value: Any) -> None:
        gc.get_referents(cls.__dict__)[0][name] = value
        ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))

    def _now(cls: Any, tz: _dt.tzinfo | None = None) -> Any:
        return cls.fromtimestamp(_shifted_time(), tz)

    def _utcnow(cls: Any) -> Any:
        return cls.utcfromtimestamp(_shifted_time())

    def _today(cls: Any) -> Any:
        return cls.fromtimestamp(_shifted_time())

    _time.time = _shifted_time
    _time.time_ns = _shifted_time_ns
    _patch(_dt.datetime, "now", classmethod(_now))
    _patch(_dt.datetime, "utcnow", classmethod(_utcnow))
    _patch(_dt.datetime, "today", classmethod(_today))
    _patch(_dt.date, "today", classmethod(_today))
