"""Partner sends: a session that reads the environment once."""

from __future__ import annotations

import pytest

from feed.delivery import environ_proxies, lean_session


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
