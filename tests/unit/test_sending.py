"""Partner sends: replaces spread over their window, and a session that reads the
environment once."""

from __future__ import annotations

import tomllib
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from engine.holds import Reservation
from feed.delivery import environ_proxies, lean_session
from feed.notify import AVAILABILITY, SPREAD, Notifier
from feed.restaurant import parse_restaurant
from feed.settings import Partner

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"
PARTNER = Partner(id="tablefinder", secret=None, merchants=None, notify_url="http://p.test/")


def test_a_replace_waits_its_window_and_a_fixed_share_of_the_spread() -> None:
    notifier = Notifier({PARTNER.id: PARTNER}, coalesce_seconds=10.0)
    keys = [f"m{i}/2026-12-{d:02d}" for i in range(20) for d in range(1, 29)]
    waits = [notifier.wait(PARTNER.id, key) for key in keys]
    assert all(10.0 <= w < 10.0 * (1 + SPREAD) for w in waits)
    assert waits == [notifier.wait(PARTNER.id, key) for key in keys]  # the same every time
    # Spread out, not bunched: every tenth of the spread holds some of the 560 keys.
    tenths = {int((w - 10.0) / (10.0 * SPREAD) * 10) for w in waits}
    assert tenths == set(range(10))


def test_the_outbox_message_is_due_after_the_keys_wait() -> None:
    config = tomllib.loads(SAMPLE.read_text(encoding="utf-8"))
    r = parse_restaurant(config, "test")
    notifier = Notifier({PARTNER.id: PARTNER}, coalesce_seconds=4.0)
    day = date(2026, 12, 4)
    opening = datetime(2026, 12, 4, 17, tzinfo=UTC)
    changed = [Reservation("r1", "T1", ("T1",), 120, 0)]
    [message] = notifier.messages(r, day, opening, changed, {}, [], now=1000.0)
    assert message.kind == AVAILABILITY
    assert message.not_before == 1000.0 + notifier.wait(PARTNER.id, message.key)
    assert 1004.0 <= message.not_before < 1004.0 + 4.0 * SPREAD


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
