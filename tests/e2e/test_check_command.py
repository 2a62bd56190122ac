"""`hoststand check`: every problem of restaurant and settings files, one line each."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from feed.cli import EXIT_BAD_INPUT, main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
MARLOWES = SAMPLES / "marlowes.toml"
GOOGLE = SAMPLES / "google-floorplan.toml"
SETTINGS = SAMPLES / "server.toml"


def check(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["check", *map(str, args)])


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_good_restaurant_and_settings_files_are_each_ok_on_one_line() -> None:
    result = check(MARLOWES, GOOGLE, SETTINGS)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines == [
        f"{MARLOWES}: ok (restaurant marlowes-kitchen, 6 tables)",
        f"{GOOGLE}: ok (restaurant merch1, 4 tables)",
        f"{SETTINGS}: ok (settings)",
    ]
    assert result.stderr == ""


def test_every_problem_of_a_restaurant_file_is_printed_with_file_and_field(
    tmp_path: Path,
) -> None:
    text = MARLOWES.read_text(encoding="utf-8")
    text = text.replace('name = "', "name = 7 #", 1)
    text = text.replace("slot_minutes = 15", "slot_minutes = 3")
    bad = write(tmp_path, "bad.toml", 'colour = "red"\n' + text)
    result = check(bad)
    assert result.exit_code == EXIT_BAD_INPUT
    errors = result.stderr.splitlines()
    assert f"{bad}: colour: unknown key" in errors
    assert any(line.startswith(f"{bad}: name: ") for line in errors)
    assert any(line.startswith(f"{bad}: slot_minutes: ") for line in errors)
    assert errors[-1] == "hoststand: 3 problem(s) in 1 file(s)"
    assert result.stdout == ""


def test_every_problem_of_a_settings_file_is_printed(tmp_path: Path) -> None:
    bad = write(
        tmp_path,
        "server.toml",
        '[[partners]]\nid = "a b"\nsecret = "short"\n[export]\ninterval_minutes = 0\n',
    )
    result = check(bad)
    assert result.exit_code == EXIT_BAD_INPUT
    errors = result.stderr.splitlines()[:-1]
    assert [line.split(": ")[1] for line in errors] == [
        "partners.0.id",
        "partners.0.secret",
        "export.interval_minutes",
    ]
    assert all(line.startswith(f"{bad}: ") for line in errors)


def test_a_partner_listed_twice_is_a_settings_problem(tmp_path: Path) -> None:
    bad = write(tmp_path, "s.toml", '[[partners]]\nid = "p"\n[[partners]]\nid = "p"\n')
    result = check(bad)
    assert result.exit_code == EXIT_BAD_INPUT
    assert f"{bad}: partners: p is listed twice" in result.stderr.splitlines()


def test_two_restaurant_files_with_one_merchant_id_are_refused(tmp_path: Path) -> None:
    copy = write(tmp_path, "copy.toml", MARLOWES.read_text(encoding="utf-8"))
    result = check(MARLOWES, copy)
    assert result.exit_code == EXIT_BAD_INPUT
    assert (
        f"{copy}: merchant_id: 'marlowes-kitchen' is also the merchant_id of {MARLOWES}"
        " (each restaurant needs its own)"
    ) in result.stderr.splitlines()
    assert result.stdout.splitlines() == [f"{MARLOWES}: ok (restaurant marlowes-kitchen, 6 tables)"]


def test_good_files_are_still_reported_ok_beside_a_bad_one(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.toml"
    result = check(missing, GOOGLE)
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stdout.splitlines() == [f"{GOOGLE}: ok (restaurant merch1, 4 tables)"]
    assert f"{missing}: no such file" in result.stderr.splitlines()


def test_an_empty_file_is_checked_as_a_restaurant(tmp_path: Path) -> None:
    bad = write(tmp_path, "r.toml", "")
    result = check(bad)
    assert result.exit_code == EXIT_BAD_INPUT
    assert f"{bad}: merchant_id: required but missing" in result.stderr.splitlines()


def test_a_file_with_restaurant_keys_beside_settings_keys_is_checked_as_a_restaurant(
    tmp_path: Path,
) -> None:
    bad = write(tmp_path, "r.toml", "merchant_id = 'x'\n[[partners]]\nid = 'p'\n")
    result = check(bad)
    assert result.exit_code == EXIT_BAD_INPUT
    assert f"{bad}: partners: unknown key" in result.stderr.splitlines()


def test_settings_option_checks_a_file_as_settings_whatever_its_keys(tmp_path: Path) -> None:
    empty = write(tmp_path, "empty.toml", "")
    result = check("--settings", empty)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"{empty}: ok (settings)"]


def test_check_without_files_is_bad_input() -> None:
    result = check()
    assert result.exit_code == EXIT_BAD_INPUT
    assert "name the files to check" in result.stderr


def test_a_restaurant_with_two_hosts_entries_is_a_settings_problem(tmp_path: Path) -> None:
    entry = '[[hosts]]\nmerchant_id = "m"\ntoken = "a-token-of-16-chars"\n'
    bad = write(tmp_path, "s.toml", entry + entry)
    result = check(bad)
    assert result.exit_code == EXIT_BAD_INPUT
    assert f"{bad}: hosts: m is listed twice" in result.stderr.splitlines()


def test_a_settings_file_checked_with_restaurants_notes_one_it_leaves_without_a_host_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOSTSTAND_HOST_TOKEN_MERCH1", raising=False)
    # The new restaurant's [[hosts]] entry misspelt: its tablet could not sign in.
    text = SETTINGS.read_text(encoding="utf-8").replace('"merch1"', '"merch-1"')
    settings = write(tmp_path, "server.toml", text)
    result = check(MARLOWES, GOOGLE, settings)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[2:] == [
        f"{settings}: ok (settings)",
        '  note: no host token for merch1 (a [[hosts]] entry, merchant_id = "merch1", its'
        " token there or in HOSTSTAND_HOST_TOKEN_MERCH1): its tablet cannot sign in",
        "  note: [[hosts]] names merch-1, none of the restaurants here",
    ]
    # Its entry put right with the token left to the environment, as in production.
    text = SETTINGS.read_text(encoding="utf-8").replace('token = "sample-host-token-merch1"', "")
    settings.write_text(text, encoding="utf-8")
    assert "no host token for merch1" in check(MARLOWES, GOOGLE, settings).stdout
    monkeypatch.setenv("HOSTSTAND_HOST_TOKEN_MERCH1", "a-host-token-from-the-environment")
    assert "note:" not in check(MARLOWES, GOOGLE, settings).stdout


def test_a_token_too_short_in_the_environment_is_a_problem_of_the_settings_checked_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # serve refuses it; check, reading the same environment, ended in a traceback.
    monkeypatch.setenv("HOSTSTAND_ADMIN_TOKEN", "tiny-tok")
    for args in [(SETTINGS,), (MARLOWES, GOOGLE, SETTINGS)]:
        result = check(*args)
        assert result.exit_code == EXIT_BAD_INPUT, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert result.stderr.splitlines() == [
            f"{SETTINGS}: HOSTSTAND_ADMIN_TOKEN is set but too short: it needs at least 16"
            " character(s) (unset it to use the settings file's)",
            "hoststand: 1 problem(s) in 1 file(s)",
        ]
        assert f"{SETTINGS}: ok" not in result.stdout


def test_a_settings_file_with_a_misspelt_section_is_told_that_key_not_checked_as_a_restaurant(
    tmp_path: Path,
) -> None:
    # [[host]] for [[hosts]]: read as a restaurant, it was told partners and export were
    # unknown keys, and nothing of the typo.
    text = SETTINGS.read_text(encoding="utf-8").replace("[[hosts]]", "[[host]]")
    bad = write(tmp_path, "server.toml", text)
    result = check(bad)
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr.splitlines() == [
        f"{bad}: host: unknown key (did you mean 'hosts'?)",
        "hoststand: 1 problem(s) in 1 file(s)",
    ]


def test_a_misspelt_key_in_a_settings_file_is_an_unknown_key_with_the_one_it_meant(
    tmp_path: Path,
) -> None:
    text = SETTINGS.read_text(encoding="utf-8").replace("basic_user", "basic_usr")
    bad = write(tmp_path, "server.toml", text)
    assert f"{bad}: partners.0.basic_usr: unknown key (did you mean 'basic_user'?)" in (
        check(bad).stderr.splitlines()
    )


def test_each_sample_restaurant_says_to_check_it_with_the_readmes_check_command() -> None:
    # The README's command (exit 2 on a problem), not the module's own check, so a reader
    # who copies the sample's line gets what serve and the docs mean by "checked".
    said = {}
    for path in sorted(SAMPLES.glob("*.toml")):
        comments = " ".join(
            line.lstrip("# ") for line in path.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")
        )  # fmt: skip
        found = re.search(r"[Cc]heck it with `([^`]*)`", comments)
        if found:
            said[path.name] = found.group(1)
    assert {"marlowes.toml", "harbour.toml", "terrace.toml"} <= set(said), said
    for name, command in said.items():
        assert command == f"hoststand check samples/{name}", (name, command)
        result = check(SAMPLES / name)
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith(f"{SAMPLES / name}: ok (restaurant "), result.stdout


def test_a_partner_or_host_variable_naming_no_entry_of_the_settings_is_noted_as_not_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An operator moving the secrets to the environment misspelt one
    (HOSTSTAND_PARTNER_SECRET_TABLEFINDR): nothing read it, the partner kept the file's
    secret or none, its webhooks refused "unknown partner or bad signature", and neither
    check nor serve said a word. Each such variable is now noted by name, never its value;
    one naming an entry is read and not noted."""
    monkeypatch.setenv("HOSTSTAND_PARTNER_SECRET_TABLEFINDR", "a-secret-nobody-reads-123")
    monkeypatch.setenv("HOSTSTAND_HOST_TOKEN_MARLOWES", "a-token-nobody-reads-1234")
    monkeypatch.setenv("HOSTSTAND_PARTNER_SECRET_TABLEFINDER", "the-secret-it-reads-12345")
    result = check(MARLOWES, GOOGLE, SETTINGS)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[2:] == [
        f"{SETTINGS}: ok (settings)",
        "  note: HOSTSTAND_HOST_TOKEN_MARLOWES is set but names no [[hosts]] entry of the"
        " settings: it is not read (a [[hosts]] entry with that restaurant's merchant_id"
        " takes its token from it)",
        "  note: HOSTSTAND_PARTNER_SECRET_TABLEFINDR is set but names no partner of the"
        " settings ([[partners]] ids: dinerly, tablefinder): it is not read",
    ]
    assert "nobody-reads" not in result.output
