"""The partners' requests made by a child process (feed.push.sendproc), against a partner on
127.0.0.1: the same outcomes as sending in-process, many at once, and a child that dies
costs a retry, not a message."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from feed.push.sendproc import SendProcess
from tests.integration.partner_stub import (
    BOOKING,
    FORBIDDEN,
    MESSAGE_ID_HEADER,
    TIMED_OUT,
    TOO_MANY,
    UNAVAILABLE,
    HangingPartner,
    PartnerStub,
)


@pytest.fixture
def partner() -> Iterator[PartnerStub]:
    with PartnerStub() as stub:
        yield stub


@pytest.fixture
def sender() -> Iterator[SendProcess]:
    sender = SendProcess(workers=4)
    yield sender
    sender.close()


def booking_url(partner: PartnerStub, booking_id: str) -> str:
    return f"{partner.base}/v1alpha/notification/partners/p1/bookings/{booking_id}"


def test_a_notification_arrives_as_sent_from_the_child(
    partner: PartnerStub, sender: SendProcess
) -> None:
    outcome = sender.send(
        "PATCH",
        booking_url(partner, "b1") + "?updateMask=status",
        json_body={"status": "CANCELED", "note": "café"},
        headers={MESSAGE_ID_HEADER: "7"},
    )
    assert outcome.ok and not outcome.retry
    (request,) = partner.acted(BOOKING)
    assert request.json() == {"status": "CANCELED", "note": "café"}
    assert request.message_ids == ("7",)
    assert request.query == {"updateMask": ["status"]}
    assert sender._process is not None and sender._process.pid != os.getpid()


def test_a_replace_body_is_sent_byte_for_byte(partner: PartnerStub, sender: SendProcess) -> None:
    body = b'{"extendedServiceAvailability":[]}'
    url = f"{partner.base}/v1alpha/inventory/partners/p1/availability:replace"
    headers = {MESSAGE_ID_HEADER: "8", "Content-Type": "application/json"}
    assert sender.send("POST", url, data=body, headers=headers).ok
    (request,) = partner.acted()
    assert request.body == body


@pytest.mark.parametrize(
    ("mode", "retry", "retry_after"),
    [
        (UNAVAILABLE, True, None),
        (TOO_MANY, True, 1.0),
        (TIMED_OUT, True, None),
        (FORBIDDEN, False, None),
    ],
)
def test_a_refusal_is_classified_as_in_process(
    partner: PartnerStub, sender: SendProcess, mode: str, retry: bool, retry_after: float | None
) -> None:
    partner.fail_next(1, mode)
    outcome = sender.send("PATCH", booking_url(partner, "b2"), json_body={"status": "CONFIRMED"})
    assert not outcome.ok
    assert outcome.retry is retry
    assert outcome.retry_after == retry_after
    assert outcome.error.startswith(f"HTTP {mode}")


def test_a_partner_that_is_down_is_a_failure_worth_retrying(
    partner: PartnerStub, sender: SendProcess
) -> None:
    partner.stop()
    outcome = sender.send("PATCH", booking_url(partner, "b3"), json_body={})
    assert not outcome.ok and outcome.retry
    assert "ConnectionError" in outcome.error


def test_many_threads_at_once_each_get_their_own_outcome(
    partner: PartnerStub, sender: SendProcess
) -> None:
    partner.fail_next(5, FORBIDDEN)

    def one(n: int) -> tuple[int, bool]:
        outcome = sender.send(
            "PATCH", booking_url(partner, f"m{n}"), json_body={"n": n}, headers={"X-N": str(n)}
        )
        return n, outcome.ok

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = dict(pool.map(one, range(40)))
    acted = {int(r.json()["n"]) for r in partner.acted(BOOKING)}
    assert acted == {n for n, ok in results.items() if ok}
    assert sum(1 for ok in results.values() if not ok) == 5
    assert all(r.headers["x-n"] == str(r.json()["n"]) for r in partner.acted(BOOKING))


def test_a_child_that_dies_is_replaced_at_the_next_request(
    partner: PartnerStub, sender: SendProcess
) -> None:
    assert sender.send("PATCH", booking_url(partner, "d1"), json_body={}).ok
    first = sender._process
    assert first is not None and first.pid is not None
    os.kill(first.pid, signal.SIGKILL)
    first.wait(10)
    outcome = sender.send("PATCH", booking_url(partner, "d2"), json_body={})
    assert outcome.ok  # a new child sent it
    assert sender._process is not first and sender._process is not None
    assert sender._process.poll() is None
    assert [r.target for r in partner.acted(BOOKING)] == ["d1", "d2"]


def test_a_closed_sender_sends_nothing_and_its_child_has_ended(
    partner: PartnerStub, sender: SendProcess
) -> None:
    assert sender.send("PATCH", booking_url(partner, "c1"), json_body={}).ok
    child = sender._process
    sender.close()
    assert child is not None and child.poll() is not None
    outcome = sender.send("PATCH", booking_url(partner, "c2"), json_body={})
    assert not outcome.ok and outcome.retry
    assert [r.target for r in partner.acted(BOOKING)] == ["c1"]


def test_a_child_that_stops_answering_is_ended_and_replaced(partner: PartnerStub) -> None:
    sender = SendProcess(workers=2, answer_timeout=1.0)
    try:
        assert sender.send("PATCH", booking_url(partner, "s1"), json_body={}).ok
        stuck = sender._process
        assert stuck is not None and stuck.pid is not None
        os.kill(stuck.pid, signal.SIGSTOP)  # alive, but answering nothing
        outcome = sender.send("PATCH", booking_url(partner, "s2"), json_body={})
        assert not outcome.ok and outcome.retry
        assert "no answer" in outcome.error
        stuck.wait(10)
        assert stuck.poll() is not None  # ended, not left behind
        assert sender.send("PATCH", booking_url(partner, "s3"), json_body={}).ok
        assert sender._process is not stuck
        assert [r.target for r in partner.acted(BOOKING)] == ["s1", "s3"]
    finally:
        sender.close()


def test_no_process_to_be_had_is_a_failure_worth_retrying(
    partner: PartnerStub, sender: SendProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse() -> None:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(sender, "_start", refuse)
    outcome = sender.send("PATCH", booking_url(partner, "n1"), json_body={})
    assert not outcome.ok and outcome.retry
    assert "no sender process" in outcome.error
    monkeypatch.undo()
    assert sender.send("PATCH", booking_url(partner, "n2"), json_body={}).ok
    assert [r.target for r in partner.acted(BOOKING)] == ["n2"]


# A status line, then a header, one byte a second: every read is answered within the read
# timeout, and the whole would take over ten minutes.
TRICKLED = b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 600 + b"\r\n\r\n"


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not {what} within {timeout} s"
        time.sleep(0.05)


def test_a_partner_trickling_its_status_line_is_cut_and_the_child_lives_on(
    partner: PartnerStub,
) -> None:
    """Each read of the status line and headers had its timeout, none the whole: a partner
    sending 'HTTP/1.1 200 OK' a byte a second held its request until the child was taken
    for stuck (40 s) and killed, with every other partner's requests in it. Now the request
    is cut at its deadline, a failure worth retrying, and the child goes on."""
    sender = SendProcess(workers=4)
    try:
        with HangingPartner(TRICKLED, every=1.0) as trickling, ThreadPoolExecutor(1) as pool:
            assert sender.send("PATCH", booking_url(partner, "t0"), json_body={}).ok
            child = sender._process
            url = f"{trickling.base}/v1alpha/notification/partners/p2/bookings/t1"
            trickled = pool.submit(sender.send, "PATCH", url, json_body={})
            wait_until(lambda: trickling.counts()[0] == 1, 10, "the trickle begun")
            assert sender.send("PATCH", booking_url(partner, "t2"), json_body={}).ok
            outcome = trickled.result()
            assert not outcome.ok and outcome.retry
            assert "no status line and headers within 10 s" in outcome.error, outcome.error
            wait_until(lambda: trickling.counts()[1] == 1, 10, "the trickle's connection closed")
        assert sender._process is child and child is not None and child.poll() is None
        assert sender.send("PATCH", booking_url(partner, "t3"), json_body={}).ok
        assert sender._process is child  # the same child, never taken for stuck
        assert [r.target for r in partner.acted(BOOKING)] == ["t0", "t2", "t3"]
    finally:
        sender.close()
