"""The settings file as `serve` loads it: one line naming the file and what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from feed.settings import HttpSettings, SettingsError, load_settings

HOSTS_TWICE = """
[[hosts]]
merchant_id = "marlowes-kitchen"
token = "first-token-of-marlowes"

[[hosts]]
merchant_id = "marlowes-kitchen"
token = "second-token-of-marlowes"
"""


def test_a_restaurant_with_two_hosts_entries_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "server.toml"
    path.write_text(HOSTS_TWICE, encoding="utf-8")
    with pytest.raises(SettingsError) as refused:
        load_settings(path, environ={})
    assert str(refused.value) == f"{path}: hosts: marlowes-kitchen is listed twice"


def test_hosts_of_different_restaurants_load(tmp_path: Path) -> None:
    path = tmp_path / "server.toml"
    path.write_text(HOSTS_TWICE.replace('"marlowes-kitchen"', '"merch1"', 1), encoding="utf-8")
    settings = load_settings(path, environ={})
    assert dict(settings.host_tokens) == {
        "merch1": "first-token-of-marlowes",
        "marlowes-kitchen": "second-token-of-marlowes",
    }


def test_serve_names_a_misspelt_settings_key_and_the_one_it_meant(tmp_path: Path) -> None:
    path = tmp_path / "server.toml"
    path.write_text('[[partners]]\nid = "p"\nnotify_ulr = "https://p.example.com"\n')
    with pytest.raises(SettingsError) as refused:
        load_settings(path, environ={})
    assert str(refused.value) == (
        f"{path}: partners.0.notify_ulr: unknown key (did you mean 'notify_url'?)"
    )


def test_the_connections_deadlines_and_cap_default_when_left_out(tmp_path: Path) -> None:
    path = tmp_path / "server.toml"
    path.write_text("[http]\nhead_seconds = 20\n", encoding="utf-8")
    assert load_settings(path, environ={}).http == HttpSettings(head_seconds=20.0)
    assert load_settings(None, environ={}).http == HttpSettings()


@pytest.mark.parametrize(
    "line",
    ["head_seconds = 0", "body_seconds = -1", "keep_alive_seconds = 0", "max_connections = 1"],
)
def test_a_deadline_or_cap_that_would_stop_all_serving_is_refused_at_load(
    tmp_path: Path, line: str
) -> None:
    path = tmp_path / "server.toml"
    path.write_text(f"[http]\n{line}\n", encoding="utf-8")
    with pytest.raises(SettingsError) as refused:
        load_settings(path, environ={})
    assert f"http.{line.split()[0]}" in str(refused.value)


PARTNER = """
[[partners]]
id = "tablefinder"
secret = "sample-webhook-secret-tablefinder"
basic_user = "tablefinder"
basic_password = "sample-basic-password"
"""


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("HOSTSTAND_PARTNER_SECRET_TABLEFINDER", ""),
        ("HOSTSTAND_PARTNER_SECRET_TABLEFINDER", "short"),
        ("HOSTSTAND_PARTNER_PASSWORD_TABLEFINDER", ""),
    ],
)
def test_a_partner_secret_set_empty_or_short_in_the_environment_is_refused_and_not_said(
    tmp_path: Path, variable: str, value: str
) -> None:
    path = tmp_path / "server.toml"
    path.write_text(PARTNER, encoding="utf-8")
    with pytest.raises(SettingsError) as refused:
        load_settings(path, environ={variable: value})
    assert str(refused.value).startswith(f"{variable} is set but ")
    assert "sample-" not in str(refused.value)


def test_an_empty_basic_password_in_the_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "server.toml"
    path.write_text(PARTNER.replace('"sample-basic-password"', '""'), encoding="utf-8")
    with pytest.raises(SettingsError) as refused:
        load_settings(path, environ={})
    assert "basic_password" in str(refused.value)


def test_partner_secrets_from_the_environment_replace_the_files(tmp_path: Path) -> None:
    path = tmp_path / "server.toml"
    path.write_text(PARTNER, encoding="utf-8")
    environ = {
        "HOSTSTAND_PARTNER_SECRET_TABLEFINDER": "a-secret-from-the-environment",
        "HOSTSTAND_PARTNER_PASSWORD_TABLEFINDER": "pw",
    }
    partner = load_settings(path, environ=environ).partners["tablefinder"]
    assert (partner.secret, partner.basic_password) == ("a-secret-from-the-environment", "pw")


TOKENS = """
admin_token = "sample-admin-token-change-me"

[[hosts]]
merchant_id = "marlowes-kitchen"
token = "sample-host-token-marlowes"
"""


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("HOSTSTAND_ADMIN_TOKEN", "abc"),
        ("HOSTSTAND_ADMIN_TOKEN", "fifteen-chars15"),
        ("HOSTSTAND_ADMIN_TOKEN", ""),
        ("HOSTSTAND_HOST_TOKEN_MARLOWES_KITCHEN", "tiny"),
        ("HOSTSTAND_HOST_TOKEN_MARLOWES_KITCHEN", ""),
    ],
)
def test_a_host_or_admin_token_under_16_characters_in_the_environment_is_refused_and_not_said(
    tmp_path: Path, variable: str, value: str
) -> None:
    path = tmp_path / "server.toml"
    path.write_text(TOKENS, encoding="utf-8")
    with pytest.raises(SettingsError) as refused:
        load_settings(path, environ={variable: value})
    said = str(refused.value)
    assert said.startswith(f"{variable} is set but "), said
    assert "at least 16 character(s)" in said
    assert (value or "sample-") not in said


def test_host_and_admin_tokens_of_16_characters_from_the_environment_replace_the_files(
    tmp_path: Path,
) -> None:
    path = tmp_path / "server.toml"
    path.write_text(TOKENS, encoding="utf-8")
    environ = {
        "HOSTSTAND_ADMIN_TOKEN": "sixteen-chars-16",
        "HOSTSTAND_HOST_TOKEN_MARLOWES_KITCHEN": "a-host-token-16c",
    }
    settings = load_settings(path, environ=environ)
    assert settings.admin_token == "sixteen-chars-16"
    assert dict(settings.host_tokens) == {"marlowes-kitchen": "a-host-token-16c"}
