"""The serve process's log formats: a record's fields as key=value text or as JSON keys."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from feed.http import logs
from feed.service.events import Events, RequestContext, begin, end


def written(stream: io.StringIO) -> str:
    """What the log's writer thread has written once it has caught up."""
    logs.flush()
    return stream.getvalue()


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, logging.getLogger("hoststand").level)
    stream = io.StringIO()
    try:
        yield stream
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        logging.getLogger("hoststand").setLevel(saved[2])


def test_a_json_line_has_the_event_and_its_fields_and_the_request_id(
    captured: io.StringIO,
) -> None:
    logs.configure("json", "info", captured)
    token = begin(RequestContext("v3", "req-1"))
    try:
        Events().booking("book", "marlowes-kitchen", "bk-1", "booked")
    finally:
        end(token)
    line = json.loads(written(captured))
    assert line["event"] == "book" and line["level"] == "info"
    assert line["logger"] == "hoststand.events"
    assert (line["merchant"], line["booking_id"], line["path"]) == (
        "marlowes-kitchen",
        "bk-1",
        "v3",
    )
    assert (line["outcome"], line["request_id"]) == ("booked", "req-1")


def test_a_text_value_with_a_space_or_newline_is_quoted_so_it_cannot_fake_a_field(
    captured: io.StringIO,
) -> None:
    logs.configure("text", "info", captured)
    Events().signature_refused("p\nstatus=200", "signature does not match")
    text = written(captured)
    assert text.count("\n") == 1  # one line
    assert 'partner="p\\nstatus=200"' in text
    assert 'reason="signature does not match"' in text


def test_outside_a_request_a_booking_is_the_command_lines(captured: io.StringIO) -> None:
    logs.configure("json", "info", captured)
    Events().booking("cancel", "m", "bk-2", "cancelled")
    assert json.loads(written(captured))["path"] == "cli"


def test_below_the_level_nothing_is_written(captured: io.StringIO) -> None:
    logs.configure("json", "warning", captured)
    Events().booking("book", "m", "bk-3", "booked")  # info
    assert written(captured) == ""
    Events().booking("book", "m", "bk-4", "slot unavailable")  # a refusal: warning
    assert json.loads(written(captured))["outcome"] == "slot unavailable"
