"""The serve process's log: one line per record, as text for a terminal or as JSON lines.

A record's fields (`extra={"fields": {...}}`, see feed.service.events.emit) become
`key=value` pairs or JSON keys; what goes into them is ids, codes and counts, never a secret
or a guest's contact details. Our loggers ("hoststand.*") log at the level asked for;
everything else (uvicorn, the database drivers) at WARNING and above only.
"""

from __future__ import annotations

import atexit
import json
import logging
import logging.handlers
import queue
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any, TextIO

FORMATS = ("text", "json")
LEVELS = ("debug", "info", "warning", "error")
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/{}+@,")


def _stamp(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = getattr(record, "fields", None)
    return fields if isinstance(fields, dict) else {}


def _text_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    # Quoted unless plainly one token: a value with a space or a newline cannot fake a field.
    return text if text and set(text) <= _PLAIN else json.dumps(text, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """`2026-12-04T18:00:00.123+00:00 INFO hoststand.request request method=POST ...`"""

    def format(self, record: logging.LogRecord) -> str:
        parts = [_stamp(record), record.levelname, record.name, record.getMessage()]
        parts += [f"{k}={_text_value(v)}" for k, v in _fields(record).items() if v is not None]
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        elif record.exc_text:  # formatted before it was handed to the writer thread
            line += "\n" + record.exc_text
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, event, then the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _stamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        for key, value in _fields(record).items():
            if value is not None and key not in line:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


class _Deferred(logging.handlers.QueueHandler):
    """Hands records to the writer thread as they are: formatting and the write happen
    there, not on the event loop (a line per request, formatted and written in the request,
    halved the bookings a server answered per second)."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        if record.exc_info:  # a traceback is formatted here, while it is at hand
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        return record


LINGER_SECONDS = 0.05  # how long a line may wait to be written with the others


class _Writer:
    """The log's writer thread: it takes what is queued in one go, formats it and writes it
    with one write and one flush (a write and a flush per line cost the event loop, which
    shares the GIL, a system call each)."""

    def __init__(self, records: queue.SimpleQueue[Any], stream: TextIO, fmt: logging.Formatter):
        self.records = records
        self.stream = stream
        self.fmt = fmt
        self.thread = threading.Thread(target=self.run, name="hoststand-log", daemon=True)
        self.thread.start()

    def run(self) -> None:
        while True:
            batch = [self.records.get()]
            # Then a pause before taking the rest: records queued meanwhile wake nobody. A
            # put that wakes a waiting thread hands it the GIL soon after, and a busy server
            # would hand it over once per request, queueing the event loop behind it.
            time.sleep(LINGER_SECONDS)
            while len(batch) < 2000:
                try:
                    batch.append(self.records.get_nowait())
                except queue.Empty:
                    break
            lines = [self.fmt.format(r) for r in batch if isinstance(r, logging.LogRecord)]
            if lines:
                try:
                    self.stream.write("\n".join(lines) + "\n")
                    self.stream.flush()
                except (OSError, ValueError):  # a closed or broken stream: the lines are lost
                    pass
            for mark in batch:
                if isinstance(mark, threading.Event):  # flush(): all before it is written
                    mark.set()
            if None in batch:
                return

    def flush(self, stop: bool = False) -> None:
        written = threading.Event()
        self.records.put(written)
        if stop:
            self.records.put(None)
        written.wait(timeout=10)


_writer: _Writer | None = None


def configure(fmt: str = "text", level: str = "info", stream: TextIO | None = None) -> None:
    """Send every log record to `stream` (stderr) in `fmt`, written by a thread of its own;
    ours from `level` up. What is queued is written at exit."""
    global _writer
    if _writer is not None:
        _writer.flush(stop=True)
    records: queue.SimpleQueue[Any] = queue.SimpleQueue()
    formatter = JsonFormatter() if fmt == "json" else TextFormatter()
    _writer = _Writer(records, stream or sys.stderr, formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(_Deferred(records))
    root.setLevel(logging.WARNING)
    logging.getLogger("hoststand").setLevel(level.upper())


def flush() -> None:
    """Wait until every record logged so far is written (a test reading the log, an exit)."""
    if _writer is not None:
        _writer.flush()


@atexit.register
def _drain() -> None:
    if _writer is not None:
        _writer.flush(stop=True)
