"""Partner sends: a session that reads the environment once; a sender that paces its rounds."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import requests

from feed.push.delivery import MAX_DELAY, classify, environ_proxies, lean_session
from feed.push.outbox import OutboxSender
from store.sqlite import SQLiteStore


def test_the_lean_session_takes_the_ca_bundle_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/ssl/partner-ca.pem")
    session = lean_session(4)
    assert session.trust_env is False  # no per-request look-ups
    assert session.verify == "/etc/ssl/partner-ca.pem"
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    assert lean_session(4).verify is True


def test_proxies_come_from_the_environment_once_per_partner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    assert environ_proxies("https://partner.example/v1") == {}
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert environ_proxies("https://partner.example/v1")["https"] == "http://proxy.internal:3128"
    assert environ_proxies("http://127.0.0.1:9000/v1") == {}  # NO_PROXY holds


class _Rounds(threading.Event):
    """A stop event that records each wait (into `waits`, shared with the sender's wake
    event) and stops the loop after the scripted rounds."""

    def __init__(self, rounds: int, waits: list[tuple[str, float]], name: str) -> None:
        super().__init__()
        self.rounds = rounds
        self.waits = waits
        self.name = name
        self.stop: threading.Event = self

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append((self.name, float(timeout or 0.0)))
        if len(self.waits) >= self.rounds:
            self.stop.set()
        return self.is_set()


def test_a_busy_sender_paces_its_rounds_and_an_idle_one_waits_for_a_request_to_end(
    tmp_path: Path,
) -> None:
    """Back-to-back rounds cost the bookings' commits a write lock twice per round (claim and
    settle): a busy sender starts a round at most every ROUND_SECONDS; an idle one waits
    until a request ends (its key's next message may be due), or polls at the interval."""
    store = SQLiteStore(tmp_path / "outbox.db")
    sender = OutboxSender(store, {}, {})
    busy_rounds = iter([3, 1, 0, 2])
    sender.step = lambda: next(busy_rounds)  # type: ignore[method-assign]
    waits: list[tuple[str, float]] = []
    stop = _Rounds(4, waits, "stop")
    wake = _Rounds(4, waits, "wake")
    wake.stop = stop
    sender._wake = wake
    try:
        sender.loop(stop, interval=0.2, pace=0.05)
    finally:
        store.close()
    (busy, a), (busy_again, b), (idle, c), (last, d) = waits
    assert (busy, busy_again, idle, last) == ("stop", "stop", "wake", "stop")
    assert 0.0 < a <= 0.05 and 0.0 < b <= 0.05 and 0.0 < d <= 0.05
    assert c == 0.2


@pytest.mark.parametrize(
    ("header", "wait"),
    [("1", 1.0), ("86400", MAX_DELAY), ("inf", MAX_DELAY), ("1e400", MAX_DELAY), ("nan", None)],
)
def test_a_partners_retry_after_is_honoured_up_to_the_longest_back_off(
    header: str, wait: float | None
) -> None:
    response = requests.Response()
    response.status_code = 503
    response.headers["Retry-After"] = header
    response._content = b"busy"
    outcome = classify(response)
    assert (outcome.ok, outcome.retry, outcome.retry_after) == (False, True, wait)
