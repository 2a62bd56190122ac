"""The host's tablet in a real browser (headless Chromium via Selenium) against a real
server with a pinned clock (Friday 2026-12-04 18:00 GMT, Marlowe's dinner is on).

Screenshots of the main states go to $HOSTSTAND_ARTEFACTS (or the test's tmp directory).
Without Chromium the tests skip, except on CI (CI=true), where they fail.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.integration.server_process import (
    CONFIGS,
    HOST_TOKENS,
    NOW,
    SAMPLES,
    SECRETS,
    SETTINGS,
    ServerProcess,
    booking_event,
    change_event,
    free_port,
    running_server,
    signed_post,
    start_server,
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
MARLOWES = "marlowes-kitchen"
TOKEN = HOST_TOKENS[MARLOWES]
HOST = f"/api/v1/restaurants/{MARLOWES}"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WAIT = 10.0  # seconds a page may take to show what the test waits for


def _need_chromium() -> None:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package")
    if missing:
        message = f"the tablet's browser tests need {', '.join(missing)}"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (on CI they must run: install chromium chromium-driver)")
        pytest.skip(message)


@pytest.fixture
def artefacts(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    root = os.environ.get("HOSTSTAND_ARTEFACTS")
    where = Path(root) / request.node.name if root else tmp_path / "artefacts"
    where.mkdir(parents=True, exist_ok=True)
    return where


Open = Callable[..., "Tablet"]


@pytest.fixture
def browser(tmp_path: Path, artefacts: Path) -> Iterator[Open]:
    """Opens tablets (one Chromium each); every one is closed at the end of the test."""
    _need_chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opened: list[Tablet] = []

    def open_tablet(
        base: str,
        width: int = 768,
        height: int = 1024,
        merchant: str = MARLOWES,
        token: str = TOKEN,
    ) -> Tablet:
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        profile = tmp_path / f"profile-{len(opened)}"
        for flag in (
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", f"--user-data-dir={profile}", f"--window-size={width},{height}",
        ):  # fmt: skip
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        tablet = Tablet(driver, base, artefacts)
        tablet.viewport(width, height)  # exact, whatever the smallest window Chromium allows
        opened.append(tablet)
        tablet.sign_in(merchant, token)
        return tablet

    try:
        yield open_tablet
    finally:
        for tablet in opened:
            tablet.driver.quit()
        shutil.rmtree(tmp_path / "profile-0", ignore_errors=True)


class Tablet:
    """One browser on the host page, with the few gestures the tests need."""

    def __init__(self, driver: Any, base: str, artefacts: Path) -> None:
        self.driver = driver
        self.base = base
        self.artefacts = artefacts

    def viewport(self, width: int, height: int) -> None:
        self.size = (width, height)
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def wait(self, what: Callable[[], Any], timeout: float = WAIT, message: str = "") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            try:
                found = what()
            except Exception:  # the page is redrawing: ask again
                found = None
            if found:
                return found
            if time.monotonic() > deadline:
                self.shot("timeout")
                raise AssertionError(f"timed out waiting for {message or what}")
            time.sleep(0.05)

    def press(self, find: Callable[[], Any]) -> None:
        """Click what `find` finds. The page redraws on every live update, so an element
        found a moment ago may be gone: find it again and retry until the click lands."""
        from selenium.common.exceptions import StaleElementReferenceException

        deadline = time.monotonic() + WAIT
        while True:
            try:
                find().click()
                return
            except StaleElementReferenceException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def pick_time(self, value: str) -> None:
        """Choose `value` in the booking form's Time. A live update redraws its options, so
        one found a moment ago may be gone: find the select again and retry until the time
        is chosen."""
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import Select

        deadline = time.monotonic() + WAIT
        while True:
            try:
                select = Select(self.el("#book-form").find_element("name", "start"))
                select.select_by_value(value)
                if self.chosen_time()[0] == value:
                    return
            except StaleElementReferenceException:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"could not choose {value} in the Time")
            time.sleep(0.05)

    def chosen_time(self) -> tuple[str, str]:
        """The booking form's chosen Time, value and label, read in one script: a live
        update redraws the options, so an option found by one call may be gone by the next
        (a stale element)."""
        found = self.js(
            "const o = document.querySelector('#book-form [name=start]').selectedOptions[0];"
            " return o ? [o.value, o.text] : null"
        )
        if found is None:
            raise LookupError("the booking form's Time has nothing chosen")
        return str(found[0]), str(found[1])

    def time_options(self) -> list[tuple[str, str]]:
        """The booking form's Time options, value and label, read in one script."""
        found = self.js(
            "return Array.from(document.querySelector('#book-form [name=start]').options,"
            " o => [o.value, o.text])"
        )
        return [(str(v), str(t)) for v, t in found]

    def el(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def sign_in(self, merchant: str = MARLOWES, token: str = TOKEN) -> None:
        self.driver.get(f"{self.base}/host/{merchant}")
        self.wait(lambda: self.el("#signin").is_displayed() or self.el("#stand").is_displayed())
        if self.el("#signin").is_displayed():
            self.el("#token").send_keys(token)
            self.el("#signin-form button[type=submit]").click()
        self.wait(lambda: self.el("#floor [data-table]"), message="the floor drawn")

    def clock(self) -> str:
        return str(self.el("#clock").text)

    def banner_after(self, act: Callable[[], None]) -> str:
        """Do `act` and return the banner it brings up."""
        self.js("document.getElementById('banner').hidden = true")
        act()
        self.wait(lambda: self.el("#banner").is_displayed(), message="the banner")
        return str(self.el("#banner-text").text)

    def walk_in(self, size: int, name: str, phone: str = "") -> str:
        form = self.el("#walkin-form")
        for field, value in (("size", str(size)), ("name", name), ("phone", phone)):
            box = form.find_element("name", field)
            box.clear()
            box.send_keys(value)
        return self.banner_after(lambda: form.find_element("css selector", "button").click())

    def choose(self, value: str) -> None:
        self.wait(lambda: self.el("#chooser").is_displayed(), message="the chooser")
        self.press(lambda: self.el(f'#chooser-options [data-unit="{value}"]'))

    def tap_table(self, unit: str, choice: str) -> str:
        return self.banner_after(
            lambda: (
                self.press(lambda: self.el(f'#floor [data-table="{unit}"]')),
                self.choose(choice),
            )
        )

    def row_button(self, row_css: str, label: str) -> Any:
        from selenium.webdriver.common.by import By

        row = self.el(row_css)
        return next(b for b in row.find_elements(By.TAG_NAME, "button") if b.text == label)

    def tap_row(self, row_css: str, label: str) -> None:
        self.press(lambda: self.row_button(row_css, label))

    def text(self, css: str, *, content: bool = False) -> str:
        """The text of what `css` finds (as shown, or with `content` its textContent), read
        in one script: the page redraws on every live update, so an element found by one
        call may be gone by the next (a stale element)."""
        found = self.js(
            "const e = document.querySelector(arguments[0]);"
            " return e ? [e.innerText, e.textContent] : null",
            css,
        )
        if found is None:
            raise LookupError(f"nothing on the page matches {css}")
        return str(found[1] if content else found[0])

    def table(self, unit: str) -> str:
        return self.text(f'#floor [data-table="{unit}"]', content=True)

    def board(self) -> dict[str, str]:
        """Table id -> the name drawn on it ("free" / "held" when nobody sits there)."""
        rows = self.js(
            """return [...document.querySelectorAll('#floor [data-table]')].map(b =>
                 [b.dataset.table, (b.querySelector('.who') || b.querySelector('.state'))
                   .textContent])"""
        )
        out: dict[str, str] = {}
        for unit, text in rows:
            for table in unit.split("+"):
                out[table] = text.split(",")[0]
        return out

    def shot(self, name: str) -> Path:
        """The whole page at the tablet's width."""
        path = self.artefacts / f"{name}.png"
        width, height = self.size
        full = int(self.js("return document.documentElement.scrollHeight"))
        self.viewport(width, min(max(full, height), 4000))
        self.driver.save_screenshot(str(path))
        self.viewport(width, height)
        return path

    def errors(self) -> list[str]:
        """Errors the page's console saw (a script error, a refused load, a CSP violation)."""
        return [
            e["message"]
            for e in self.driver.get_log("browser")
            if e["level"] == "SEVERE" and "Failed to load resource" not in e["message"]
        ]


def api(server: ServerProcess, method: str, path: str, body: Any = None) -> Any:
    reply = requests.request(
        method, f"{server.base}{HOST}{path}", json=body, headers=AUTH, timeout=10
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with running_server(tmp_path / "hoststand.db") as running:
        yield running


# -- the seed's worked example, tap by tap --------------------------------------------------

PART1 = [
    (0, "walk_in", 2, "P1", "Seat P1, party of 2 at T2"),
    (1, "walk_in", 2, "P2", "Seat P2, party of 2 at T4"),
    (2, "walk_in", 2, "P3", "Seat P3, party of 2 at T1"),
    (3, "walk_in", 6, "P4", "Seat P4, party of 6 at T3"),
    (4, "walk_in", 3, "P5", "Seat P5, party of 3 at T5"),
    (5, "walk_in", 4, "P6", "Seat P6, party of 4 at T6"),
    (6, "walk_in", 1, "P7", "P7, party of 1: waitlist, place 1"),
    (7, "walk_in", 2, "P8", "P8, party of 2: waitlist, place 2"),
    (20, "free", "T4", None, "Seat now: P7, party of 1 at T4"),
    (21, "free", "T5", None, "Seat now: P8, party of 2 at T5"),
    (22, "walk_in", 1, "P9", "P9, party of 1: waitlist, place 1"),
    (25, "free", "T3", None, "T3 is free. Nobody in line is due it yet."),
]
PART1_BOARD = {"T1": "P3", "T2": "P1", "T3": "P9", "T4": "P7", "T5": "P8", "T6": "P6"}


def _hhmm(minute: int) -> str:
    return (NOW + timedelta(minutes=minute)).strftime("%H:%M")


def test_the_seeds_worked_example_played_by_taps_ends_with_its_board_on_the_floor(
    tmp_path: Path, browser: Open
) -> None:
    """Part 1 of host-stand-rules.txt: walk-ins and frees at the example's minutes. The
    server's clock is pinned, so it is restarted at each minute (same file, same address);
    the page reconnects by itself. At minute 52 P9 has waited 30 minutes and is seated."""
    db, port = tmp_path / "hoststand.db", free_port()
    server = start_server(db, NOW, port=port)
    try:
        tablet = browser(server.base)
        minute = 0
        for at, op, arg, name, expected in PART1:
            if at != minute:
                server.stop()
                server = start_server(db, NOW + timedelta(minutes=at), port=port)
                minute, shown = at, _hhmm(at)
                tablet.wait(lambda shown=shown: tablet.clock() == shown, message=shown)
            if op == "walk_in":
                said = tablet.walk_in(int(arg), str(name))
                assert said.startswith(expected), said
            else:
                said = tablet.tap_table(str(arg), "free")
                assert said == expected
            if at == 20:
                tablet.shot("part1-seat-now-after-free")
        assert tablet.board() == {**PART1_BOARD, "T3": "Free"}
        tablet.shot("part1-minute-25")
        server.stop()
        server = start_server(db, NOW + timedelta(minutes=52), port=port)
        tablet.wait(lambda: tablet.clock() == _hhmm(52), message="clock 52")
        tablet.wait(lambda: tablet.board() == PART1_BOARD, message="the seed's board")
        assert tablet.js("return document.querySelectorAll('#queue li[data-party]').length") == 0
        tablet.shot("part1-final-board")
        assert tablet.errors() == []
    finally:
        server.stop()


def test_the_quote_a_waiting_party_was_given_stays_on_the_waitlist(
    server: ServerProcess, browser: Open
) -> None:
    tablet = browser(server.base)
    for name in ("A", "B", "C", "D"):  # the 2-tops and two 4-tops
        tablet.walk_in(2, name)
    for name in ("E", "F"):
        tablet.walk_in(4, name)
    said = tablet.walk_in(2, "Gil", "+44 7700 900123")
    assert said == "Gil, party of 2: waitlist, place 1 — quote 23 min"  # ceil(45 * 1 / 2)
    row = tablet.text("#queue li")
    assert "Gil" in row and "quoted 23 min" in row and "waited 0 min" in row


def test_a_party_waiting_past_its_quote_says_by_how_much(tmp_path: Path, browser: Open) -> None:
    """Kim's couple joined the waitlist at 17:30, every table taken, and was told 23
    minutes. At 17:55 the row said 'waited 25 min · quoted 23 min', the sum left to the
    host; now it also says '2 min over quote' (and nothing while within the quote)."""
    db = tmp_path / "quote.db"
    with running_server(db, NOW - timedelta(minutes=30)) as earlier:
        for i, size in enumerate((2, 2, 2, 6, 4, 4)):
            api(earlier, "POST", "/walk-ins", {"size": size, "name": f"N{i}", "party_id": f"n{i}"})
        api(earlier, "POST", "/walk-ins", {"size": 2, "name": "Kim", "party_id": "kim"})
        api(earlier, "POST", "/walk-ins", {"size": 6, "name": "Lou", "party_id": "lou"})
    with running_server(db, NOW - timedelta(minutes=5)) as server:
        tablet = browser(server.base)
        tablet.wait(lambda: tablet.el('#queue [data-party="kim"]'), message="Kim waiting")
        rows = tablet.js(
            "return Array.from(document.querySelectorAll('#queue li[data-party]'),"
            " li => [li.dataset.party, li.querySelector('.meta').textContent,"
            " (li.querySelector('.badge.late') || {}).textContent || null])"
        )
        tablet.shot("waiting-past-quote")
        assert rows == [
            ["kim", "party of 2 · waited 25 min · quoted 23 min", "2 min over quote"],
            ["lou", "party of 6 · waited 25 min · quoted 90 min", None],
        ], rows
        assert tablet.errors() == []


# -- reservations ---------------------------------------------------------------------------


def _book(server: ServerProcess, size: int, hhmm: str, name: str, phone: str = "") -> str:
    body = {"party_size": size, "start": f"2026-12-04T{hhmm}", "name": name, "phone": phone}
    return str(api(server, "POST", "/reservations", body)["reservation_id"])


def test_a_reservation_is_checked_in_and_one_whose_table_is_busy_is_seated_elsewhere(
    server: ServerProcess, browser: Open
) -> None:
    ann = _book(server, 4, "18:15", "Ann", "+44 20 1")  # T1
    bo = _book(server, 4, "18:15", "Bo", "+44 20 2")  # T5
    bo_unit = next(r["unit"] for r in api(server, "GET", "/reservations")["reservations"]
                   if r["reservation_id"] == bo)  # fmt: skip
    api(server, "POST", "/walk-ins", {"size": 2, "party_id": "W", "name": "Wu"})
    api(server, "POST", "/parties/W/move", {"unit": bo_unit})  # somebody sits at Bo's table
    tablet = browser(server.base)
    assert "Held" in tablet.table("T1") and "Ann, party of 4" in tablet.table("T1")
    tablet.shot("reservations-before")

    said = tablet.banner_after(lambda: tablet.tap_row(f'[data-reservation="{ann}"]', "Check in"))
    assert said == "Seat Ann, party of 4 at T1"
    tablet.wait(lambda: "Ann, party of 4" in tablet.table("T1") and "seated" in tablet.table("T1"))

    said = tablet.banner_after(lambda: tablet.tap_row(f'[data-reservation="{bo}"]', "Arrived"))
    assert said == "Bo, party of 4 marked arrived: their table stays held"
    tablet.wait(lambda: "arrived" in tablet.el(f'[data-reservation="{bo}"]').text)
    said = tablet.banner_after(
        lambda: (
            tablet.tap_row(f'[data-reservation="{bo}"]', "Seat…"),
            tablet.choose("T6"),
        )
    )
    assert said == "Bo, party of 4 seated at T6"
    tablet.wait(lambda: "Bo, party of 4" in tablet.table("T6"))
    tablet.wait(lambda: "seated at T6" in tablet.el(f'[data-reservation="{bo}"]').text)
    tablet.shot("reservations-after")
    assert tablet.errors() == []


def test_a_check_in_at_a_busy_table_says_so_and_offers_the_free_tables(
    server: ServerProcess, browser: Open
) -> None:
    cy = _book(server, 4, "18:15", "Cy")  # T1
    api(server, "POST", "/walk-ins", {"size": 2, "party_id": "W", "name": "Wu"})
    api(server, "POST", "/parties/W/move", {"unit": "T1"})
    tablet = browser(server.base)
    said = tablet.banner_after(lambda: tablet.tap_row(f'[data-reservation="{cy}"]', "Check in"))
    assert "T1 is still taken" in said and "T5" in said
    tablet.choose("T5")
    tablet.wait(lambda: "Cy, party of 4" in tablet.table("T5"))


def test_a_check_in_with_no_free_table_big_enough_says_so_in_its_menu(
    server: ServerProcess, browser: Open
) -> None:
    """Cy (4) is at the door, Wu sits at Cy's T1 and the only table free is Lou's 2-top:
    the menu says no free table seats Cy's party and what the host can do, not "green ones
    fit the party" above a list with no green table in it."""
    cy = _book(server, 4, "18:15", "Cy")  # T1
    _book(server, 2, "18:15", "Lou")  # T2
    for size, pid in ((2, "al"), (2, "bea"), (4, "cam"), (6, "dee")):  # T4, T5, T6, T3
        api(server, "POST", "/walk-ins", {"size": size, "party_id": pid, "name": pid.title()})
    api(server, "POST", "/walk-ins", {"size": 2, "party_id": "W", "name": "Wu"})
    api(server, "POST", "/parties/W/seat", {"unit": "T1"})
    tablet = browser(server.base)
    said = tablet.banner_after(lambda: tablet.tap_row(f'[data-reservation="{cy}"]', "Check in"))
    assert "T1 is still taken" in said, said
    tablet.wait(lambda: tablet.el("#chooser").is_displayed(), message="the menu")
    menu = _chooser(tablet)
    assert menu is not None and [label.split(" ")[0] for label, _ in menu[1]] == ["T2"], menu
    assert menu[0] == (
        "No free table seats a party of 4 now: choose a smaller one anyway,"
        " or Close and seat them when one frees."
    )
    tablet.shot("check-in-nothing-fits")
    assert tablet.errors() == []


def test_a_check_in_whose_only_fitting_tables_are_held_for_others_shows_none_green(
    server: ServerProcess, browser: Open
) -> None:
    """Friday 18:00: Ed's couple is at the door for 18:15, Wu still sits at Ed's T2, and the
    only tables nobody sits at are T3 and T4, held for Dee's six and Cy's couple. The menu
    drew both green under "green ones fit the party" (the host walks Ed to Cy's table); now
    neither is green and the note says they are held for other guests."""
    ed = _book(server, 2, "18:15", "Ed")  # T2
    _book(server, 2, "18:15", "Cy")  # T4
    _book(server, 6, "18:15", "Dee")  # T3
    for size, pid in ((4, "al"), (4, "bea"), (4, "cam")):  # T1, T5, T6
        api(server, "POST", "/walk-ins", {"size": size, "party_id": pid, "name": pid.title()})
    api(server, "POST", "/walk-ins", {"size": 2, "party_id": "W", "name": "Wu"})
    api(server, "POST", "/parties/W/seat", {"unit": "T2"})
    tablet = browser(server.base)
    said = tablet.banner_after(lambda: tablet.tap_row(f'[data-reservation="{ed}"]', "Check in"))
    assert "T2 is still taken" in said, said
    tablet.wait(lambda: tablet.el("#chooser").is_displayed(), message="the menu")
    menu = tablet.js(
        "return [document.getElementById('chooser-note').textContent,"
        " Array.from(document.querySelectorAll('#chooser-options button'),"
        " b => [b.dataset.unit, b.classList.contains('fits')])]"
    )
    tablet.shot("check-in-only-held-tables")
    assert menu == [
        "Every table that seats a party of 2 now is held for other guests: choose one anyway"
        " (you are asked first), or Close and seat them when one frees.",
        [["T3", False], ["T4", False], ["T3+T4", False]],
    ], menu
    assert tablet.errors() == []


def test_seat_offers_early_guests_their_own_free_table_first_and_no_other_bookings_in_green(
    server: ServerProcess, browser: Open
) -> None:
    """Friday 18:00: Pellegrini's couple, booked for 18:45 at a 2-top, come in early (too
    early to check in: their table is held from 18:30) and their table is free. Seat…
    left their own table out (the filter meant for the table a moved party sits at) and
    offered Tanaka's 2-top, due at 18:30, in green: the host sat Pellegrini there, and
    Tanaka found their table taken. Now their own table comes first, green, and Tanaka's
    says it is booked before they would finish."""
    pellegrini = _book(server, 2, "18:45", "Pellegrini")
    tanaka = _book(server, 2, "18:30", "Tanaka")
    rows = {
        r["reservation_id"]: r["unit"] for r in api(server, "GET", "/reservations")["reservations"]
    }
    theirs, tanakas = rows[pellegrini], rows[tanaka]
    tablet = browser(server.base)
    tablet.tap_row(f'[data-reservation="{pellegrini}"]', "Seat…")
    tablet.wait(lambda: tablet.el("#chooser").is_displayed(), message="the menu")
    menu = tablet.js(
        "return Array.from(document.querySelectorAll('#chooser-options button'),"
        " b => [b.dataset.unit, b.textContent, b.classList.contains('fits')])"
    )
    tablet.shot("seat-early-guests")
    assert menu[0] == [theirs, f"{theirs} · 2 seats · their table", True], menu
    assert [tanakas, f"{tanakas} · 2 seats · next: Tanaka (2) at 18:30, before they would finish",
            False] in menu, menu  # fmt: skip
    said = tablet.banner_after(lambda: tablet.choose(theirs))
    assert said == f"Pellegrini, party of 2 seated at {theirs}", said
    tablet.wait(lambda: "Pellegrini, party of 2" in tablet.table(theirs))
    assert tablet.errors() == []


def test_moving_a_party_onto_a_table_held_for_guests_asks_first(
    server: ServerProcess, browser: Open
) -> None:
    """Ann (18:15) is at the door, her table held: Move… onto it asks, as Seat… does; the
    host says no and Wu stays where Wu sits."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    ann = _book(server, 4, "18:15", "Ann")  # T1, held from 18:00
    api(server, "POST", f"/reservations/{ann}/arrive")
    api(server, "POST", "/walk-ins", {"size": 2, "party_id": "W", "name": "Wu"})
    wu = next(
        t for t, who in api(server, "GET", "/board")["result"]["tables"].items() if who == "W"
    )
    tablet = browser(server.base)
    tablet.wait(lambda: "Held" in tablet.table("T1"), message="T1 held")
    tablet.press(lambda: tablet.el(f'#floor [data-table="{wu}"]'))
    tablet.choose("move")
    tablet.choose("T1")
    alert = WebDriverWait(tablet.driver, WAIT).until(expected_conditions.alert_is_present())
    assert alert.text.startswith("T1 is held for Ann, party of 4"), alert.text
    assert alert.text.endswith("Move Wu there anyway?"), alert.text
    alert.dismiss()
    board = api(server, "GET", "/board")["result"]["tables"]
    assert board[wu] == "W" and board["T1"] != "W"
    assert tablet.errors() == []


def test_seating_a_booking_at_a_pair_asks_when_its_other_table_is_held_for_somebody_else(
    server: ServerProcess, browser: Open
) -> None:
    """Cy's own table T5 is one of the pair T5+T6; T6 is held for Dee, due at the same
    time. Seating Cy on the pair gives Dee's table away: the page asks, naming Dee."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    _book(server, 4, "18:15", "Ann")  # T1
    cy = _book(server, 4, "18:15", "Cy")  # T5
    _book(server, 4, "18:15", "Dee")  # T6
    units = {r["name"]: r["unit"] for r in api(server, "GET", "/reservations")["reservations"]}
    assert (units["Cy"], units["Dee"]) == ("T5", "T6")
    tablet = browser(server.base)
    tablet.wait(lambda: "Held" in tablet.table("T6"), message="T6 held")
    tablet.tap_row(f'[data-reservation="{cy}"]', "Seat…")
    tablet.choose("T5+T6")
    alert = WebDriverWait(tablet.driver, WAIT).until(expected_conditions.alert_is_present())
    assert alert.text.startswith("T5+T6 is held for Dee, party of 4"), alert.text
    alert.dismiss()
    board = api(server, "GET", "/board")["result"]["tables"]
    assert board["T6"].startswith("held:")  # nothing seated: the host said no
    assert tablet.errors() == []


def test_the_waitlist_never_sends_a_party_to_a_table_held_for_guests(
    server: ServerProcess, browser: Open
) -> None:
    """Ann (18:15, a party of 2) has her table held; the walk-ins fill the rest. The party
    first in line is not told "next up" at Ann's table."""
    ann = _book(server, 2, "18:15", "Ann")
    held = next(r["unit"] for r in api(server, "GET", "/reservations")["reservations"]
                if r["reservation_id"] == ann)  # fmt: skip
    for _ in range(6):
        if str(api(server, "POST", "/walk-ins", {"size": 2})["result"]).startswith("queued"):
            break
    tablet = browser(server.base)
    tablet.wait(lambda: tablet.el("#queue li[data-party]"), message="somebody waiting")
    assert "Held" in tablet.table(held)
    badges = tablet.js(
        "return [...document.querySelectorAll('#queue .badge.next')].map(b => b.textContent)"
    )
    assert all(held not in b.split(": ")[1].split("+") for b in badges), (held, badges)
    assert tablet.errors() == []


def test_the_waitlist_says_next_up_only_at_a_table_the_engine_would_give_the_party(
    server: ServerProcess, browser: Open
) -> None:
    """Hal's six are booked at 18:45 on T3, the only six-top, which is free at 18:00 and
    not yet held. Five couples take the other tables and Wyn's four wait: their meal (70
    minutes) would run past 18:45, so the engine keeps T3 from them (the floor protects
    reservations) and never seats them there. The waitlist said 'next up: T3', T3's menu
    marked Wyn as fitting it, and the host walked them to a table Hal's party needs."""
    _book(server, 6, "18:45", "Hal")
    for i in range(5):
        api(server, "POST", "/walk-ins", {"size": 2, "name": f"C{i}", "party_id": f"c{i}"})
    api(server, "POST", "/walk-ins", {"size": 4, "name": "Wyn", "party_id": "wyn"})
    tablet = browser(server.base)
    tablet.wait(lambda: tablet.el('#queue [data-party="wyn"]'), message="Wyn waiting")
    tablet.press(lambda: tablet.el('#floor [data-table="T3"]'))
    tablet.wait(lambda: _chooser(tablet) is not None, message="T3's menu")
    shown = tablet.js(
        "return [document.querySelector('#floor [data-table=T3]').textContent,"
        " document.querySelector('#queue [data-party=wyn]').textContent,"
        " Array.from(document.querySelectorAll('#chooser-options button.fits'),"
        " b => b.dataset.unit)]"
    )
    tablet.shot("waitlist-next-up-kept-table")
    card, row, fitting = shown
    assert "Free" in card and "next: Hal (6) at 18:45" in card, card
    assert "next up" not in row, row
    assert fitting == [], fitting
    assert tablet.errors() == []


def test_seat_offers_a_walk_in_a_table_booked_before_its_meal_would_end_not_green(
    server: ServerProcess, browser: Open
) -> None:
    """Wyn's four wait at 18:00 and only T3 is free, Hal's six due there at 18:45: their
    70-minute meal would run past it, so the engine keeps T3 from them. Seat… drew T3 green
    ('green ones fit the party'), its line saying only 'next: Hal (6) at 18:45'; now it is
    offered (the host's call) but not green, and says why."""
    _book(server, 6, "18:45", "Hal")
    for i in range(5):
        api(server, "POST", "/walk-ins", {"size": 2, "name": f"C{i}", "party_id": f"c{i}"})
    api(server, "POST", "/walk-ins", {"size": 4, "name": "Wyn", "party_id": "wyn"})
    tablet = browser(server.base)
    tablet.press(lambda: tablet.el('#queue [data-party="wyn"] button.primary'))
    tablet.wait(lambda: _chooser(tablet) is not None, message="Seat… for Wyn")
    menu = tablet.js(
        "return [document.getElementById('chooser-note').textContent,"
        " Array.from(document.querySelectorAll('#chooser-options button'),"
        " b => [b.textContent, b.classList.contains('fits')])]"
    )
    tablet.shot("seat-walk-in-table-booked-before-it-finishes")
    assert menu == [
        "Every table that seats a party of 4 now is held for other guests or booked before"
        " they would finish: choose one anyway, or Close and seat them when one frees.",
        [["T3 · 6 seats · next: Hal (6) at 18:45, before they would finish", False]],
    ], menu
    assert tablet.errors() == []


def test_move_offers_a_table_booked_before_the_party_would_finish_not_green(
    server: ServerProcess, browser: Open
) -> None:
    """The Rossis (4) sat at T5 at 18:00 and ask for another table: Move… drew T1 green,
    though Ben's four are due there at 18:30 and the Rossis have 70 minutes to go (and T3,
    Cat's at 19:00); moved there, Ben's party finds them at its table. Now only T6 is
    green, and T1 and T3 say why not."""
    _book(server, 4, "18:30", "Ben")  # T1
    _book(server, 6, "19:00", "Cat")  # T3
    api(server, "POST", "/walk-ins", {"size": 4, "name": "Rossi", "party_id": "rossi"})  # T5
    api(server, "POST", "/walk-ins", {"size": 2, "name": "Lee", "party_id": "lee"})  # T2
    tablet = browser(server.base)
    tablet.press(lambda: tablet.el('#floor [data-table="T5"]'))
    tablet.choose("move")
    tablet.wait(
        lambda: (
            tablet.js("return document.getElementById('chooser-h').textContent")
            == "Move Rossi, party of 4"
        ),
        message="Move… for the Rossis",
    )
    menu = tablet.js(
        "return Array.from(document.querySelectorAll('#chooser-options button'),"
        " b => [b.textContent, b.classList.contains('fits')])"
    )
    tablet.shot("move-menu-booked-tables")
    assert menu[:3] == [
        ["T1 · 4 seats · next: Ben (4) at 18:30, before they would finish", False],
        ["T3 · 6 seats · next: Cat (6) at 19:00, before they would finish", False],
        ["T6 · 4 seats", True],
    ], menu
    assert tablet.errors() == []


# -- large parties -------------------------------------------------------------------------


def test_a_walk_in_is_offered_only_units_that_seat_it_and_told_when_none_does(
    server: ServerProcess, browser: Open
) -> None:
    """Eight on T5+T6 and six on T3: Zoe's six can sit at no free table (T1 seats 4, T2
    and T4 2), so Seat… offers none and says so, rather than tables it cannot have."""
    api(server, "POST", "/walk-ins", {"size": 8, "name": "Big"})  # T5+T6
    api(server, "POST", "/walk-ins", {"size": 6, "name": "Six"})  # T3
    api(server, "POST", "/walk-ins", {"size": 6, "party_id": "Z", "name": "Zoe"})  # waits
    tablet = browser(server.base)
    tablet.wait(lambda: "Zoe" in tablet.text("#queue"), message="Zoe waiting")

    def offered() -> list[str]:
        return list(
            tablet.js(
                "return [...document.querySelectorAll('#chooser-options [data-unit]')]"
                ".map(b => b.dataset.unit)"
            )
        )

    tablet.tap_row('#queue [data-party="Z"]', "Seat…")
    tablet.wait(lambda: tablet.el("#chooser").is_displayed(), message="the chooser")
    assert offered() == []
    assert tablet.text("#chooser-note") == "No free table seats a party of 6 now."
    tablet.shot("walk-in-nothing-fits")
    assert tablet.errors() == []


def _chooser(tablet: Tablet) -> tuple[str, list[tuple[str, bool]]] | None:
    """The open menu's note and its options (label, tappable), read in one script; None
    when it is closed."""
    found = tablet.js(
        "const d = document.getElementById('chooser'); if (!d.open) return null;"
        " return [document.getElementById('chooser-note').textContent,"
        " Array.from(d.querySelectorAll('#chooser-options button'),"
        " b => [b.textContent, !b.disabled])]"
    )
    if found is None:
        return None
    return str(found[0]), [(str(label), bool(ok)) for label, ok in found[1]]


def test_a_menu_left_open_follows_what_another_tablet_does(
    server: ServerProcess, browser: Open
) -> None:
    """Saturday night, two tablets. Seat… is open here for Zed (waiting, T1 and T3 kept
    for bookings) when the other tablet seats Quinn at T3: T3 stays in its place, marked
    taken and not tappable. The other tablet seats Zed at T1: the menu says so and offers
    nothing. The menu of Wu's table is open when the other tablet frees it: it says so."""

    _book(server, 4, "18:30", "Ben")  # T1 kept
    _book(server, 6, "19:00", "Cat")  # T3 kept
    for size, pid in ((2, "wu"), (4, "xi"), (2, "yan"), (4, "vi"), (4, "zed"), (2, "quinn")):
        api(server, "POST", "/walk-ins", {"size": size, "name": pid.title(), "party_id": pid})
    board = api(server, "GET", "/board")["result"]["tables"]
    assert [t for t, who in board.items() if who in ("zed", "quinn")] == [], board
    wu = next(t for t, who in board.items() if who == "wu")
    tablet = browser(server.base)
    tablet.wait(lambda: tablet.el("#live").text == "live", message="the stream open")
    tablet.press(lambda: tablet.el('#queue [data-party="zed"] button.primary'))
    tablet.wait(lambda: _chooser(tablet) is not None, message="Seat… for Zed")
    offered = _chooser(tablet)
    cat = "T3 · 6 seats · next: Cat (6) at 19:00, before they would finish"
    assert offered is not None and (cat, True) in offered[1]
    api(server, "POST", "/parties/quinn/seat", {"unit": "T3"})  # the other tablet

    def t3() -> tuple[str, bool] | None:
        menu = _chooser(tablet)
        return next((o for o in menu[1] if o[0].startswith("T3 ")), None) if menu else None

    taken = (f"{cat} — taken now: Quinn", False)
    tablet.wait(lambda: t3() == taken, message="T3 taken")
    tablet.shot("menu-table-taken-meanwhile")
    api(server, "POST", "/parties/zed/seat", {"unit": "T1"})  # the other tablet
    gone = ("Zed, party of 4 was seated at T1 meanwhile.", [])
    tablet.wait(lambda: _chooser(tablet) == gone, message="Zed seated meanwhile")
    tablet.press(lambda: tablet.el("#chooser-cancel"))
    tablet.press(lambda: tablet.el(f'#floor [data-table="{wu}"]'))
    tablet.wait(lambda: _chooser(tablet) is not None, message=f"the menu of {wu}")
    api(server, "POST", f"/tables/{wu}/free")  # the other tablet
    freed = (f"{wu} was freed meanwhile: Wu, party of 2 left.", [])
    tablet.wait(lambda: _chooser(tablet) == freed, message=f"{wu} freed meanwhile")
    assert tablet.errors() == []


def test_the_tables_offered_to_seat_a_party_name_the_booking_due_next_there(
    server: ServerProcess, browser: Open
) -> None:
    """Zed (4) waits while T1 and T3 are kept for Ben at 18:30 and Cat at 19:00: Seat…
    offers them (the host's call), each with the booking due there next, as the floor's
    table shows it, so Zed is not sat at Ben's table unknowingly."""

    _book(server, 4, "18:30", "Ben")  # T1 kept
    cat = _book(server, 6, "19:00", "Cat")  # T3 kept
    api(server, "POST", f"/reservations/{cat}/arrive")  # early, at the bar
    for size, pid in ((2, "wu"), (4, "xi"), (2, "yan"), (4, "vi"), (4, "zed")):
        api(server, "POST", "/walk-ins", {"size": size, "name": pid.title(), "party_id": pid})
    tablet = browser(server.base)
    tablet.press(lambda: tablet.el('#queue [data-party="zed"] button.primary'))
    tablet.wait(lambda: _chooser(tablet) is not None, message="Seat… for Zed")
    menu = _chooser(tablet)
    assert menu is not None and [label for label, _ in menu[1]] == [
        "T1 · 4 seats · next: Ben (4) at 18:30, before they would finish",
        "T3 · 6 seats · next: Cat (6) at 19:00, here 0 min, waiting, before they would finish",
        "T1+T3 · 10 seats · next: Ben (4) at 18:30, before they would finish",
    ], menu
    tablet.shot("seat-menu-next-bookings")
    assert tablet.errors() == []


def test_a_held_tables_menu_offers_its_guests_first_and_close_stays_in_reach(
    server: ServerProcess, browser: Open
) -> None:
    """Friday 18:00 on a phone, a night of bookings: T1 is held for Flo's four at 18:15.
    Tapping T1 listed the waitlist, then every booking of the night by time, Flo among
    them like any other and Close below the twentieth: now Flo comes first, in green, and
    Close stays at the bottom of the menu, on screen."""
    flo = _book(server, 4, "18:15", "Flo")  # T1
    for hhmm in ("18:30", "18:45", "19:00", "19:30", "20:00", "20:30", "21:00", "21:30"):
        for size in (2, 4):
            body = {"party_size": size, "start": f"2026-12-04T{hhmm}", "name": f"G{hhmm}{size}"}
            requests.post(f"{server.base}{HOST}/reservations", json=body, headers=AUTH, timeout=10)
    tablet = browser(server.base, 390, 844)
    tablet.wait(lambda: "Held" in tablet.table("T1"), message="T1 held for Flo")
    tablet.press(lambda: tablet.el('#floor [data-table="T1"]'))
    tablet.wait(lambda: _chooser(tablet) is not None, message="T1's menu")
    menu = tablet.js(
        "const b = [...document.querySelectorAll('#chooser-options button')];"
        " const close = document.getElementById('chooser-cancel').getBoundingClientRect();"
        " return [b.length, b[0].dataset.unit, b[0].textContent, b[0].classList.contains('fits'),"
        " close.top >= 0 && close.bottom <= window.innerHeight]"
    )
    tablet.shot("held-table-menu")
    count, first, label, green, reachable = menu
    assert count >= 12, count
    assert (first, label, green) == (flo, "18:15 Flo, party of 4 (held here)", True), menu
    assert reachable, menu
    assert tablet.errors() == []


def test_the_forms_ask_the_next_partys_size_afresh(server: ServerProcess, browser: Open) -> None:
    """A walk-in of 6, a phone booking of 4 and a change to 3 each leave their form at its
    2: the next couple is not added as the last party's size (and seated at the six-top)."""

    def sizes() -> list[str]:
        found = tablet.js(
            "return [document.querySelector('#walkin-form [name=size]').value,"
            " document.querySelector('#book-form [name=size]').value]"
        )
        return [str(v) for v in found]

    bo = _book(server, 2, "19:00", "Bo")
    tablet = browser(server.base)
    said = tablet.walk_in(6, "Kit")
    assert said == "Seat Kit, party of 6 at T3", said
    assert sizes() == ["2", "2"]
    form = tablet.el("#book-form")
    size = form.find_element("name", "size")
    size.clear()
    size.send_keys("4")
    tablet.pick_time("2026-12-04T20:30")
    form.find_element("name", "name").send_keys("Lu")
    said = tablet.banner_after(
        lambda: tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))
    )
    assert said.startswith("Booked Lu, party of 4, at 20:30 ("), said
    assert sizes() == ["2", "2"]
    tablet.tap_row(f'#reservations [data-reservation="{bo}"]', "Change…")
    tablet.wait(lambda: tablet.text("#book-h") == "Change Bo, party of 2 at 19:00")
    size.clear()
    size.send_keys("3")
    said = tablet.banner_after(
        lambda: tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))
    )
    assert said.startswith("Bo is now booked at 19:00, party of 3 ("), said
    assert sizes() == ["2", "2"]
    assert tablet.errors() == []


def test_a_party_of_eight_sits_on_t5_and_t6_drawn_joined_and_one_tap_frees_both(
    server: ServerProcess, browser: Open
) -> None:
    tablet = browser(server.base)
    assert tablet.walk_in(8, "Big") == "Seat Big, party of 8 at T5+T6"
    joined = tablet.wait(
        lambda: tablet.js(
            "const b = document.querySelector('#floor [data-table=\"T5+T6\"]');"
            " return b ? [b.className, b.innerText] : null"
        ),
        message="T5+T6",
    )
    assert "joined" in joined[0] and "Big, party of 8" in joined[1], joined
    assert tablet.js("return document.querySelectorAll('#floor [data-table]').length") == 5
    tablet.shot("party-of-eight-joined")
    said = tablet.tap_table("T5+T6", "free")
    assert said == "T5+T6 is free. Nobody in line is due it yet."
    tablet.wait(lambda: "Free" in tablet.table("T5") and "Free" in tablet.table("T6"))
    assert tablet.errors() == []


# -- live -----------------------------------------------------------------------------------


def test_a_change_on_one_tablet_appears_on_another_without_a_reload(
    server: ServerProcess, browser: Open
) -> None:
    """What one tablet (or any client) does appears on the other by the live stream, with no
    reload. How fast is measured by bench/tablet_bench.py, not asserted here: a test with a
    clock in it fails on a busy machine, not on a slow page."""
    one, two = browser(server.base), browser(server.base, 390, 844)
    two.wait(lambda: two.text("#live") == "live", message="the stream open")
    two.js("window.notReloaded = true")  # a reload would start a page without it
    for name in ("Ida", "Jo"):
        one.walk_in(2, name)
        two.wait(lambda name=name: name in two.text("#floor"), message=name)
    api(server, "POST", "/walk-ins", {"size": 6, "name": "Kit"})  # another tablet, any client
    two.wait(lambda: "Kit, party of 6" in two.text("#floor"), message="Kit")
    assert two.js("return window.notReloaded") is True
    two.shot("second-tablet-phone")


def test_parties_without_a_name_are_walk_ins_and_guests_never_made_up_ids(
    server: ServerProcess, browser: Open
) -> None:
    """A walk-in added in a hurry has no name: the host sees "Walk-in", not the id the
    server gave it; a booking without one is "Guest"; an id the host chose is kept."""
    seated = api(server, "POST", "/walk-ins", {"size": 2})["operation"][2]
    api(server, "POST", "/walk-ins", {"size": 6, "party_id": "A"})  # T3
    api(server, "POST", "/walk-ins", {"size": 10})  # T1+T3 only: waits
    _book(server, 4, "19:30", "", "")
    tablet = browser(server.base)
    tablet.wait(lambda: "Guest" in tablet.text("#reservations"), message="the booking")
    floor, queue = tablet.text("#floor"), tablet.text("#queue")
    assert "Walk-in, party of 2" in floor and seated not in floor
    assert "A, party of 6" in floor
    assert "Walk-in" in queue and "w-" not in queue
    assert "19:30 · Guest" in tablet.text("#reservations")
    assert tablet.errors() == []


def test_a_walk_in_added_here_without_a_name_is_a_walk_in_waiting_and_seated(
    server: ServerProcess, browser: Open
) -> None:
    """Friday 17:40, the door busy: the host adds a couple with no name from this tablet's
    form. The page makes up its id ('w-' and 10 hex digits, kept across retries), and the
    waitlist showed it ('1. w-addd5787b0'), then the table's card once they sat down."""
    for i, size in enumerate((2, 2, 2, 6, 4, 4)):  # every table taken
        api(server, "POST", "/walk-ins", {"size": size, "name": f"N{i}", "party_id": f"n{i}"})
    tablet = browser(server.base)
    said = tablet.walk_in(2, "")
    assert said.startswith("Walk-in, party of 2: waitlist, place 1"), said
    tablet.wait(lambda: tablet.el("#queue li[data-party]"), message="the walk-in waiting")
    queue = tablet.text("#queue")
    assert "1. Walk-in" in queue and "w-" not in queue, queue
    pid = tablet.js("return document.querySelector('#queue li[data-party]').dataset.party")
    seated = next(t for t, who in api(server, "GET", "/board")["result"]["tables"].items()
                  if who == "n0")  # fmt: skip
    tablet.tap_table(seated, "free")
    tablet.wait(lambda: pid in str(api(server, "GET", "/board")["result"]), message="seated")
    tablet.wait(lambda: "Walk-in, party of 2" in tablet.table(seated), message="on the card")
    assert "w-" not in tablet.text("#floor", content=True)
    assert tablet.errors() == []


def test_the_finder_keeps_the_bookings_that_match_a_name_or_a_phones_digits(
    server: ServerProcess, browser: Open
) -> None:
    for size, at, name, phone in (
        (2, "18:15", "Ann Lee", "+44 20 7946 0101"),
        (4, "18:30", "Bo Annand", "+44 20 7946 0202"),
        (2, "19:00", "Cy", "+44 20 7946 0303"),
    ):
        _book(server, size, at, name, phone)
    tablet = browser(server.base)
    tablet.wait(lambda: "Cy" in tablet.text("#reservations"), message="the bookings")

    def names() -> list[str]:
        return list(
            tablet.js(
                "return [...document.querySelectorAll('#reservations li .name')]"
                ".map(e => e.textContent)"
            )
        )

    def find(text: str) -> None:  # as typed: every key is an input event, as on a tablet
        from selenium.webdriver.common.keys import Keys

        box = tablet.el("#res-find")
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(Keys.BACKSPACE, text)

    find("ann")
    assert names() == ["18:15 · Ann Lee", "18:30 · Bo Annand"]
    tablet.shot("finder-ann")
    find("ann 18:30")  # every word
    assert names() == ["18:30 · Bo Annand"]
    find("0303")  # the phone's last digits
    assert names() == ["19:00 · Cy"]
    find("Zed")
    assert "No booking today matches “Zed”." in tablet.text("#reservations")
    find("Cy")
    _book(server, 2, "19:30", "Cyrus", "")  # a live update keeps what the host typed
    tablet.wait(lambda: len(names()) == 2, message="the new booking, filtered")
    assert names() == ["19:00 · Cy", "19:30 · Cyrus"]
    assert tablet.el("#res-find").get_attribute("value") == "Cy"
    find("")
    assert len(names()) == 4
    _book(server, 2, "20:00", "Jürgen Müller", "")
    _book(server, 2, "20:15", "Seán O'Brien", "")
    tablet.wait(lambda: len(names()) == 6, message="the guests with accents")
    find("Muller")  # as the guest says it, without accents or punctuation
    assert names() == ["20:00 · Jürgen Müller"]
    find("obrien")
    assert names() == ["20:15 · Seán O'Brien"]
    find("sean o'brien")
    assert names() == ["20:15 · Seán O'Brien"]
    assert tablet.errors() == []


def test_a_booking_past_its_time_and_not_yet_here_says_how_late_it_is(
    tmp_path: Path, browser: Open
) -> None:
    """Booked at 17:00 for 17:45 and 18:15; at 17:57 Lou (17:45) is 12 minutes late (held
    until 18:00, then a no-show): the host sees it on the row, in time to phone."""
    db = tmp_path / "late.db"
    with running_server(db, NOW - timedelta(hours=1)) as earlier:
        lou = _book(earlier, 2, "17:45", "Lou", "+44 20 7946 0404")
        _book(earlier, 2, "18:15", "May")
    with running_server(db, NOW - timedelta(minutes=3)) as server:
        tablet = browser(server.base)
        tablet.wait(lambda: "May" in tablet.text("#reservations"), message="the bookings")
        assert tablet.text(f'#reservations [data-reservation="{lou}"] .late') == "12 min late"
        assert tablet.js("return document.querySelectorAll('#reservations .late').length") == 1
        tablet.shot("late-booking")
        api(server, "POST", f"/reservations/{lou}/arrive", None)  # Lou is at the door
        tablet.wait(
            lambda: not tablet.js("return document.querySelectorAll('#reservations .late').length"),
            message="no longer late once arrived",
        )
        assert tablet.errors() == []


def test_a_booking_due_now_at_a_table_whose_party_overstays_is_amber(
    tmp_path: Path, browser: Open
) -> None:
    """Pat's couple sat at 17:30 (45 minutes) at T2, Flo's couple is booked there at 18:15.
    At 18:20 Pat is over by 5 minutes and Flo is due: T2's card said 'next: Flo (2) at
    18:15 · due now' in grey, as quiet as a booking hours away, while a table whose party
    still had minutes left before a booking due now was amber."""
    db = tmp_path / "overstay.db"
    with running_server(db, NOW - timedelta(minutes=30)) as earlier:
        api(earlier, "POST", "/walk-ins", {"size": 2, "name": "Pat", "party_id": "pat"})
        _book(earlier, 2, "18:15", "Flo")
        assert api(earlier, "GET", "/board")["result"]["tables"]["T2"] == "pat"
    with running_server(db, NOW + timedelta(minutes=20)) as server:
        tablet = browser(server.base)
        tablet.wait(lambda: "next: Flo" in tablet.table("T2"), message="Flo due at T2")
        card = tablet.js(
            "const n = document.querySelector('#floor [data-table=T2] .next');"
            " return [n.textContent, n.classList.contains('tight'),"
            " document.querySelector('#floor [data-table=T2]').classList.contains('over')]"
        )
        tablet.shot("due-now-overstay")
        # Past its time and not here: how late, as the row says ("due now" read as guests on
        # their way in).
        assert card == ["next: Flo (2) at 18:15 · 5 min late", True, True], card
        assert tablet.errors() == []


def test_todays_list_puts_the_bookings_still_to_come_before_those_done_with(
    tmp_path: Path, browser: Open
) -> None:
    """At 18:20 Ann (17:45) is seated and Dee (18:00) a no-show; Flo (18:30) is due. The
    list ran in time order, Flo below the parties done with (by 21:00 on a night of thirty
    bookings, below twenty rows); now Flo comes first, then a heading, then the rest."""
    db = tmp_path / "done.db"
    with running_server(db, NOW - timedelta(minutes=30)) as earlier:
        ann = _book(earlier, 2, "17:45", "Ann")
        _book(earlier, 4, "18:00", "Dee")
        _book(earlier, 4, "18:30", "Flo")
    with running_server(db, NOW - timedelta(minutes=14)) as doors:
        api(doors, "POST", f"/reservations/{ann}/check-in")
    with running_server(db, NOW + timedelta(minutes=20)) as server:
        tablet = browser(server.base)
        tablet.wait(lambda: "no-show" in tablet.text("#reservations"), message="Dee a no-show")
        rows = tablet.js(
            "return Array.from(document.querySelectorAll('#reservations li'),"
            " li => li.classList.contains('divider') ? li.textContent"
            " : li.querySelector('.name').textContent)"
        )
        tablet.shot("todays-list-done-last")
        assert rows == [
            "18:30 · Flo",
            "Seated, no-shows and cancelled",
            "17:45 · Ann",
            "18:00 · Dee",
        ], rows
        assert tablet.errors() == []


def test_guests_waiting_at_the_door_say_how_long_and_turn_amber_then_red(
    tmp_path: Path, browser: Open
) -> None:
    """Cy (18:00) came at 17:57 and was marked arrived, but Wu still sits at Cy's T1: the
    row and T1's card say how long Cy has been at the door, minute by minute, amber from
    10 minutes past Cy's time and red from 20 (the door promise: a party on time finds its
    table free)."""
    db, port = tmp_path / "hoststand.db", free_port()
    with running_server(db, NOW - timedelta(hours=1)) as earlier:
        cy = _book(earlier, 4, "18:00", "Cy")  # T1
    with running_server(db, NOW - timedelta(minutes=20)) as opened:
        api(opened, "POST", "/walk-ins", {"size": 2, "party_id": "W", "name": "Wu"})
        api(opened, "POST", "/parties/W/move", {"unit": "T1"})
    with running_server(db, NOW - timedelta(minutes=3)) as door:
        api(door, "POST", f"/reservations/{cy}/arrive", None)
    row = f'#reservations [data-reservation="{cy}"]'

    def shown() -> tuple[str, str, str]:
        found = tablet.js(
            "const b = document.querySelector(arguments[0] + ' .badge.here');"
            " const n = document.querySelector('#floor [data-table=\"T1\"] .next');"
            " return b && n ? [b.textContent, b.className, n.textContent] : null",
            row,
        )
        return (str(found[0]), str(found[1]), str(found[2])) if found else ("", "", "")

    server = start_server(db, NOW + timedelta(minutes=8), port=port)
    try:
        tablet = browser(server.base)
        for minutes, here, worry in (
            (8, "here 11 min", ""),  # 8 minutes past Cy's time
            (12, "here 15 min", " worry"),
            (25, "here 28 min", " worry long"),
        ):
            if minutes != 8:
                server.stop()
                server = start_server(db, NOW + timedelta(minutes=minutes), port=port)
            tablet.wait(lambda here=here: shown()[0] == here, message=here)
            assert shown() == (
                here,
                f"badge here{worry}",
                f"next: Cy (4) at 18:00 · {here}, waiting",
            )
            tablet.shot(f"at-the-door-{minutes}")
        assert tablet.errors() == []
    finally:
        server.stop()


def test_a_party_the_clock_seats_at_a_no_shows_table_is_announced(
    tmp_path: Path, browser: Open
) -> None:
    """Lou (18:15) never comes: at 18:30 her hold ends with nobody's tap, and the waitlist's
    pass gives her T2 to Gus, who is still at the bar. The host is told whom to fetch and
    why, as after a Free; the floor alone drew Gus seated without a word."""
    db, port = tmp_path / "hoststand.db", free_port()
    with running_server(db, NOW - timedelta(hours=1)) as earlier:
        lou = _book(earlier, 2, "18:15", "Lou")  # T2
    server = start_server(db, NOW, port=port)
    try:
        for size, pid in ((4, "al"), (2, "bea"), (4, "cam"), (6, "dee"), (4, "ed")):
            api(server, "POST", "/walk-ins", {"size": size, "party_id": pid, "name": pid.title()})
        api(server, "POST", "/walk-ins", {"size": 2, "party_id": "gus", "name": "Gus"})
        tablet = browser(server.base)
        tablet.wait(lambda: "Gus" in tablet.text("#queue"), message="Gus waiting")
        server.stop()
        server = start_server(db, NOW + timedelta(minutes=31), port=port)
        tablet.wait(lambda: "Gus, party of 2" in tablet.table("T2"), message="Gus at T2")
        said = tablet.wait(
            lambda: tablet.js(
                "const b = document.getElementById('banner');"
                " return b.hidden ? null : document.getElementById('banner-text').textContent"
            ),
            message="the banner",
        )
        assert said == "Seat now: Gus, party of 2 at T2 — Lou, party of 2 (18:15) did not come"
        assert _row(tablet, lou) == ("no-show", [])
        tablet.shot("seated-by-the-clock")
        assert tablet.errors() == []
    finally:
        server.stop()


def test_a_booking_that_becomes_a_no_show_is_said_once_with_the_table_it_no_longer_holds(
    tmp_path: Path, browser: Open
) -> None:
    """Lou's couple, booked for 18:15 at T2, never come: at 18:30 their hold runs out and,
    nobody waiting, T2 turned from held to free without a word; guests arriving 20 minutes
    late were found under 'no-shows' with nothing to tap. The tablet says it once (here
    as it learns of it coming back online), and not again at the next live update."""
    db, port = tmp_path / "hoststand.db", free_port()
    server = start_server(db, NOW, port=port)
    try:
        lou = _book(server, 2, "18:15", "Lou")  # T2
        tablet = browser(server.base)
        tablet.wait(lambda: "Lou" in tablet.table("T2"), message="T2 held for Lou")
        server.stop()
        server = start_server(db, NOW + timedelta(minutes=31), port=port)

        def banner() -> str | None:
            return tablet.js(  # type: ignore[no-any-return]
                "const b = document.getElementById('banner');"
                " return b.hidden ? null : document.getElementById('banner-text').textContent"
            )

        said = tablet.wait(banner, timeout=30, message="the banner")
        assert (
            said == "Lou, party of 2 (18:15) did not come: a no-show, T2 no longer held for them."
        )
        assert _row(tablet, lou) == ("no-show", [])
        tablet.shot("no-show-said")
        tablet.js("document.getElementById('banner-close').click()")
        api(server, "POST", "/walk-ins", {"size": 4, "party_id": "al", "name": "Al"})
        tablet.wait(lambda: "Al" in tablet.text("#floor"), message="Al seated")
        assert banner() is None  # said once
        assert tablet.errors() == []
    finally:
        server.stop()


def test_a_party_the_clock_seats_while_the_tablet_is_offline_is_announced_once_back(
    tmp_path: Path, browser: Open
) -> None:
    """The tablet is offline from 18:00 (its server down); meanwhile Gus walks in at another
    stand (18:10) and Lou (18:15) never comes, so at 18:30 the clock gives Lou's T2 to Gus.
    Back online at 18:31, the tablet says whom to fetch, though it never saw Gus wait and
    the log grew with other changes; said once: the next live update and the host's own
    tap do not say it again."""
    db, port = tmp_path / "hoststand.db", free_port()
    with running_server(db, NOW - timedelta(hours=1)) as earlier:
        lou = _book(earlier, 2, "18:15", "Lou")  # T2
    server = start_server(db, NOW, port=port)
    try:
        for size, pid in ((4, "al"), (2, "bea"), (4, "cam"), (6, "dee"), (4, "ed")):
            api(server, "POST", "/walk-ins", {"size": size, "party_id": pid, "name": pid.title()})
        tablet = browser(server.base)
        tablet.wait(lambda: "Ed" in tablet.text("#queue") or "Ed" in tablet.text("#floor"))
        server.stop()  # the tablet is offline from here
        with running_server(db, NOW + timedelta(minutes=10)) as elsewhere:
            api(elsewhere, "POST", "/walk-ins", {"size": 2, "party_id": "gus", "name": "Gus"})
            _book(elsewhere, 4, "21:00", "Max")  # and another change
        server = start_server(db, NOW + timedelta(minutes=31), port=port)

        def banner() -> str | None:
            return tablet.js(  # type: ignore[no-any-return]
                "const b = document.getElementById('banner');"
                " return b.hidden ? null : document.getElementById('banner-text').textContent"
            )

        said = tablet.wait(banner, message="the banner")
        assert said == "Seat now: Gus, party of 2 at T2 — Lou, party of 2 (18:15) did not come"
        assert _row(tablet, lou) == ("no-show", [])
        tablet.shot("seated-by-the-clock-while-offline")
        tablet.js("document.getElementById('banner-close').click()")
        api(server, "POST", "/walk-ins", {"size": 2, "party_id": "hal", "name": "Hal"})
        tablet.wait(lambda: "Hal" in tablet.text("#queue"), message="Hal waiting")
        assert banner() is None  # Gus is not said again
        said = tablet.tap_table("T4", "free")  # Bea leaves: Hal gets T4, this tap's own
        assert said == "Seat now: Hal, party of 2 at T4", said
        tablet.wait(lambda: "Hal, party of 2" in tablet.table("T4"), message="Hal at T4")
        assert banner() == said
        assert tablet.errors() == []
    finally:
        server.stop()


def test_a_booking_is_changed_from_its_row_under_the_same_id(
    server: ServerProcess, browser: Open
) -> None:
    """The guest phones: 'four of us, and 20:30?'. Change… fills the phone booking form
    with the booking; the host picks the size and time; the booking keeps its id, name
    and phone, and the list still has one row for it."""

    bo = _book(server, 2, "19:00", "Bo", "+44 20 7946 0505")
    tablet = browser(server.base)
    tablet.wait(lambda: "Bo" in tablet.text("#reservations"), message="the booking")
    tablet.tap_row(f'#reservations [data-reservation="{bo}"]', "Change…")
    form = tablet.el("#book-form")
    tablet.wait(lambda: tablet.text("#book-h") == "Change Bo, party of 2 at 19:00")
    assert form.find_element("name", "name").get_attribute("value") == "Bo"
    assert not form.find_element("name", "name").is_enabled()
    tablet.shot("change-form")
    assert tablet.chosen_time()[0] == "2026-12-04T19:00"  # the booking's own time
    size = form.find_element("name", "size")
    size.clear()
    size.send_keys("4")
    start = "2026-12-04T20:30"

    def offered() -> list[str]:
        return [value for value, _ in tablet.time_options()]

    tablet.wait(lambda: start in offered(), message="20:30 offered for 4")
    tablet.pick_time(start)
    said = tablet.banner_after(
        lambda: tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))
    )
    assert said.startswith("Bo is now booked at 20:30, party of 4 (")
    rows = api(server, "GET", "/reservations")["reservations"]
    fields = ("reservation_id", "party_size", "name", "phone", "status")
    assert [(r["start"][11:16], *(r[f] for f in fields)) for r in rows] == [
        ("20:30", bo, 4, "Bo", "+44 20 7946 0505", "booked")
    ]
    tablet.wait(lambda: "20:30 · Bo" in tablet.text("#reservations"), message="the new time")
    assert tablet.js("return document.querySelectorAll('#reservations li').length") == 1
    assert tablet.text("#book-h") == "Phone booking"  # the form is the phone booking's again
    assert form.find_element("name", "name").is_enabled()
    # "Keep as it was" leaves a change unmade.
    tablet.tap_row(f'#reservations [data-reservation="{bo}"]', "Change…")
    tablet.wait(lambda: tablet.text("#book-h").startswith("Change Bo"))
    tablet.press(lambda: tablet.el("#book-keep"))
    tablet.wait(lambda: tablet.text("#book-h") == "Phone booking")
    assert api(server, "GET", "/reservations")["reservations"][0]["start"][11:16] == "20:30"
    assert tablet.errors() == []


def test_a_change_of_a_booking_cancelled_meanwhile_says_so_and_keeps_the_guest_to_book_anew(
    server: ServerProcess, browser: Open
) -> None:
    """Bo phones to come at 20:00; while the host has Change… open, another tablet
    cancels Bo. The change is refused in the host's words (what happened, and that nothing
    was changed), the row shows Bo cancelled with nothing left to tap, and the form is a
    phone booking again with Bo's details and the time chosen: Book books Bo anew."""

    bo = _book(server, 2, "19:00", "Bo", "+44 20 7946 0505")
    tablet = browser(server.base)
    row = f'#reservations [data-reservation="{bo}"]'
    tablet.wait(lambda: "Bo" in tablet.text("#reservations"), message="Bo's booking")
    tablet.tap_row(row, "Change…")
    tablet.wait(lambda: tablet.text("#book-h") == "Change Bo, party of 2 at 19:00")
    api(server, "POST", f"/reservations/{bo}/cancel")  # on another tablet
    form = tablet.el("#book-form")
    tablet.pick_time("2026-12-04T20:00")

    def submit() -> None:
        tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))

    said = tablet.banner_after(submit)
    assert said == (
        "The booking of Bo, party of 2 was cancelled meanwhile (on another tablet or"
        " online): it was not changed. Book makes a new booking for Bo."
    ), said
    tablet.wait(lambda: tablet.text(f"{row} .badge") == "cancelled", message="Bo cancelled")
    assert tablet.js("return document.querySelectorAll(arguments[0] + ' button').length", row) == 0
    assert tablet.text("#book-h") == "Phone booking"
    assert form.find_element("name", "name").get_attribute("value") == "Bo"
    assert form.find_element("name", "name").is_enabled()
    assert tablet.chosen_time()[0] == "2026-12-04T20:00"
    tablet.shot("change-of-a-cancelled-booking")
    rows = api(server, "GET", "/reservations")["reservations"]
    assert [(r["reservation_id"], r["status"]) for r in rows] == [(bo, "cancelled")]
    said = tablet.banner_after(submit)
    assert said.startswith("Booked Bo, party of 2, at 20:00 ("), said
    rows = api(server, "GET", "/reservations")["reservations"]
    assert [(r["start"][11:16], r["name"], r["phone"], r["status"]) for r in rows] == [
        ("19:00", "Bo", "+44 20 7946 0505", "cancelled"),
        ("20:00", "Bo", "+44 20 7946 0505", "booked"),
    ]
    assert tablet.errors() == []


def test_a_change_sends_only_what_the_host_changed_and_keeps_a_change_made_meanwhile(
    server: ServerProcess, browser: Open
) -> None:
    """Cy's Change… is open at party of 2; another tablet makes Cy a party of 4. The host
    here moves Cy to 20:30 only: Cy is a party of 4 at 20:30, the other tablet's change
    stands (the form's untouched size is not sent back over it)."""

    cy = _book(server, 2, "19:30", "Cy")
    tablet = browser(server.base)
    row = f'#reservations [data-reservation="{cy}"]'
    tablet.wait(lambda: "Cy" in tablet.text("#reservations"), message="Cy's booking")
    tablet.tap_row(row, "Change…")
    tablet.wait(lambda: tablet.text("#book-h") == "Change Cy, party of 2 at 19:30")
    api(server, "POST", f"/reservations/{cy}/change", {"party_size": 4})  # another tablet
    form = tablet.el("#book-form")
    tablet.pick_time("2026-12-04T20:30")
    said = tablet.banner_after(
        lambda: tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))
    )
    assert said.startswith("Cy is now booked at 20:30, party of 4 ("), said
    rows = api(server, "GET", "/reservations")["reservations"]
    assert [(r["start"][11:16], r["party_size"], r["status"]) for r in rows] == [
        ("20:30", 4, "booked")
    ]
    assert tablet.errors() == []


def _bos_change_open(server: ServerProcess, browser: Open) -> tuple[str, Tablet]:
    """Bo (2) booked at 19:00, and a tablet with its live stream open and Bo's Change…
    open: Bo's booking id, and the tablet."""
    bo = _book(server, 2, "19:00", "Bo")
    tablet = browser(server.base)
    tablet.wait(lambda: tablet.text("#live") == "live", message="the stream open")
    tablet.wait(lambda: "Bo" in tablet.text("#reservations"), message="Bo's booking")
    tablet.tap_row(f'#reservations [data-reservation="{bo}"]', "Change…")
    tablet.wait(lambda: _change_form(tablet)[0] == "Change Bo, party of 2 at 19:00")
    return bo, tablet


def _change_form(tablet: Tablet) -> tuple[str, str, str]:
    """The change form's heading, Size and chosen Time, read in one script."""
    found = tablet.js(
        "const f = document.getElementById('book-form');"
        " return [document.getElementById('book-h').textContent, f.size.value, f.start.value]"
    )
    return str(found[0]), str(found[1]), str(found[2])


def test_an_open_change_follows_a_change_made_elsewhere_and_keeps_what_the_host_edited(
    server: ServerProcess, browser: Open
) -> None:
    """Change… is open for Bo (2 at 19:00) while another tablet makes Bo a party of 4,
    then moves Bo to 20:00: the heading says what Bo's booking now is each time, and the
    fields the host has not touched follow it. The host then types 3 as the size; another
    tablet moves Bo to 20:30: the time follows, the 3 stays, and the change books Bo for 3
    at 20:30 (only the size sent, nothing undone)."""

    bo, tablet = _bos_change_open(server, browser)
    api(server, "POST", f"/reservations/{bo}/change", {"party_size": 4})  # another tablet
    now = ("Change Bo, party of 4 at 19:00", "4", "2026-12-04T19:00")
    tablet.wait(lambda: _change_form(tablet) == now, message=str(now))
    said = tablet.text("#banner-text")
    assert said == (
        "The booking of Bo was changed meanwhile (on another tablet or online):"
        " now party of 4 at 19:00."
    ), said
    api(server, "POST", f"/reservations/{bo}/change", {"start": "2026-12-04T20:00"})
    now = ("Change Bo, party of 4 at 20:00", "4", "2026-12-04T20:00")
    tablet.wait(lambda: _change_form(tablet) == now, message=str(now))
    tablet.shot("change-followed")
    form = tablet.el("#book-form")
    size = form.find_element("name", "size")
    size.clear()
    size.send_keys("3")
    api(server, "POST", f"/reservations/{bo}/change", {"start": "2026-12-04T20:30"})
    now = ("Change Bo, party of 4 at 20:30", "3", "2026-12-04T20:30")
    tablet.wait(lambda: _change_form(tablet) == now, message=str(now))
    said = tablet.banner_after(
        lambda: tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))
    )
    assert said.startswith("Bo is now booked at 20:30, party of 3 ("), said
    rows = api(server, "GET", "/reservations")["reservations"]
    assert [(r["start"][11:16], r["party_size"]) for r in rows] == [("20:30", 3)]
    assert tablet.errors() == []


def test_an_open_change_keeps_the_time_the_host_chose_when_the_size_changes_elsewhere(
    server: ServerProcess, browser: Open
) -> None:
    """The host has chosen 21:00 in Bo's open Change…; another tablet makes Bo a party
    of 4: the size follows, 21:00 stays chosen, and the change books 4 at 21:00."""

    bo, tablet = _bos_change_open(server, browser)
    tablet.pick_time("2026-12-04T21:00")
    api(server, "POST", f"/reservations/{bo}/change", {"party_size": 4})  # another tablet
    now = ("Change Bo, party of 4 at 19:00", "4", "2026-12-04T21:00")
    tablet.wait(lambda: _change_form(tablet) == now, message=str(now))
    form = tablet.el("#book-form")
    said = tablet.banner_after(
        lambda: tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))
    )
    assert said.startswith("Bo is now booked at 21:00, party of 4 ("), said
    assert tablet.errors() == []


def test_an_open_change_of_another_days_booking_follows_it(
    server: ServerProcess, browser: Open
) -> None:
    """Bo's booking on Tuesday, Change… opened from Tuesday's list: another tablet makes
    Bo a party of 3, and the heading and size follow, as for today's."""

    body = {"party_size": 2, "start": "2026-12-08T19:30", "name": "Bo"}
    bo = str(api(server, "POST", "/reservations", body)["reservation_id"])
    tablet = browser(server.base)
    tablet.wait(lambda: tablet.el("#live").text == "live", message="the stream open")
    _list_day(tablet, "2026-12-08")
    tablet.wait(lambda: _row(tablet, bo) is not None, message="Bo on Tuesday")
    tablet.tap_row(f'#reservations [data-reservation="{bo}"]', "Change…")
    heading = "Change Bo, party of 2 at 19:30 on Tue 8 Dec"
    tablet.wait(lambda: _change_form(tablet)[0] == heading)
    api(server, "POST", f"/reservations/{bo}/change", {"party_size": 3})  # another tablet
    now = ("Change Bo, party of 3 at 19:30 on Tue 8 Dec", "3", "2026-12-08T19:30")
    tablet.wait(lambda: _change_form(tablet) == now, message=str(now))
    assert tablet.errors() == []


def test_an_open_change_of_a_booking_cancelled_elsewhere_says_so_at_once(
    server: ServerProcess, browser: Open
) -> None:
    """Another tablet cancels Bo while Bo's Change… is open: the heading and a banner say
    so as soon as the page learns it, before the host taps anything."""

    bo, tablet = _bos_change_open(server, browser)
    tablet.js("document.getElementById('banner').hidden = true")
    api(server, "POST", f"/reservations/{bo}/cancel")  # another tablet
    heading = "Change Bo, party of 2 at 19:00 — cancelled meanwhile"
    tablet.wait(lambda: _change_form(tablet)[0] == heading, message="the heading")
    assert tablet.js("return !document.getElementById('banner').hidden")
    said = tablet.text("#banner-text")
    assert said == (
        "The booking of Bo, party of 2 was cancelled meanwhile (on another tablet or"
        " online): there is nothing left to change."
    ), said
    tablet.shot("change-cancelled-elsewhere")
    assert tablet.errors() == []


def test_an_open_change_of_a_booking_moved_to_another_day_elsewhere_says_where_it_went(
    server: ServerProcess, browser: Open
) -> None:
    """Another tablet moves Bo to tomorrow while Bo's Change… is open here: the heading
    and a banner say where Bo's booking went (still a booking, not 'nothing to change')."""

    bo, tablet = _bos_change_open(server, browser)
    api(server, "POST", f"/reservations/{bo}/change", {"start": "2026-12-05T20:00"})
    heading = "Change Bo, party of 2 at 19:00 — moved to Sat 5 Dec 20:00 meanwhile"
    tablet.wait(lambda: _change_form(tablet)[0] == heading, message="the heading")
    said = tablet.text("#banner-text")
    assert said == (
        "The booking of Bo, party of 2 was moved to Sat 5 Dec 20:00 meanwhile"
        " (on another tablet or online)."
    ), said
    assert tablet.errors() == []


def test_a_cancel_that_gives_the_table_to_the_waitlist_says_whom_to_seat(
    server: ServerProcess, browser: Open
) -> None:
    """Friday 18:00, every table taken but T1, held for Flo's four at 18:15; Wyn's four
    wait. Flo phones to cancel: the engine gives T1 to Wyn at once, and the tablet said
    only 'Flo, party of 4 at 18:15 cancelled': nobody fetched Wyn from the bar."""
    flo = _book(server, 4, "18:15", "Flo")  # T1
    for i, size in enumerate((2, 2, 6, 4, 4)):  # T2, T4, T3, T5, T6
        api(server, "POST", "/walk-ins", {"size": size, "name": f"N{i}", "party_id": f"n{i}"})
    api(server, "POST", "/walk-ins", {"size": 4, "name": "Wyn", "party_id": "wyn"})
    tablet = browser(server.base)
    tablet.js("window.confirm = () => true")  # the host says yes to 'Cancel the booking…?'
    said = tablet.banner_after(lambda: tablet.tap_row(f'[data-reservation="{flo}"]', "Cancel"))
    kind = tablet.js("return document.getElementById('banner').className")
    tablet.shot("cancel-seats-the-waitlist")
    assert said == "Flo, party of 4 at 18:15 cancelled. Seat now: Wyn, party of 4 at T1", said
    assert "seat" in kind.split(), kind
    assert tablet.errors() == []


def test_a_party_the_pass_seats_after_a_change_elsewhere_is_announced_on_every_tablet(
    server: ServerProcess, browser: Open
) -> None:
    """Two tablets, every table taken but T1, held for Ada's four at 18:15 (booked through
    Tablefinder); Wyn's four and Kim's couple wait. Ada cancels online: the engine gives T1
    to Wyn at once, and neither tablet said a word (the clock had not done it, and no tap
    here had). Then tablet B frees T2 and Kim sits there: B's answer says so, and tablet A,
    whose host stands at the door, was not told either. Now each tablet says each once."""
    booked = signed_post(
        server.base, "tablefinder", SECRETS["tablefinder"],
        booking_event("evt-ada", 4, "2026-12-04T18:15:00+00:00"),
    )  # fmt: skip
    assert booked.status_code == 200, booked.text
    ada = next(r["reservation_id"] for r in api(server, "GET", "/reservations")["reservations"]
               if r["name"] == "Ada")  # fmt: skip
    for i, size in enumerate((2, 2, 6, 4, 4)):  # T2, T4, T3, T5, T6
        api(server, "POST", "/walk-ins", {"size": size, "name": f"N{i}", "party_id": f"n{i}"})
    api(server, "POST", "/walk-ins", {"size": 4, "name": "Wyn", "party_id": "wyn"})
    api(server, "POST", "/walk-ins", {"size": 2, "name": "Kim", "party_id": "kim"})
    a = browser(server.base)
    b = browser(server.base, 390, 844)
    for tablet in (a, b):
        tablet.wait(lambda t=tablet: t.text("#live") == "live", message="live")
    cancelled = signed_post(
        server.base, "tablefinder", SECRETS["tablefinder"],
        change_event("evt-ada-off", "cancelled", ada),
    )  # fmt: skip
    assert cancelled.status_code == 200, cancelled.text
    banner = "return document.getElementById('banner').hidden ? null : document.getElementById('banner-text').textContent"  # noqa: E501
    wyn = "Seat now: Wyn, party of 4 at T1"
    for tablet in (a, b):
        tablet.wait(lambda t=tablet: t.js(banner) == wyn, message="Wyn announced")
    a.shot("pass-seated-after-a-partners-cancel")
    said = b.tap_table("T2", "free")
    assert said == "Seat now: Kim, party of 2 at T2", said
    both = f"{wyn} · Seat now: Kim, party of 2 at T2"  # Wyn's still on screen, not dismissed
    a.wait(lambda: a.js(banner) == both, message="Kim on A")
    b.js("document.getElementById('banner').hidden = true")
    api(server, "POST", "/walk-ins", {"size": 2, "name": "Lou"})  # the floor changes again
    a.wait(lambda: "Lou" in a.text("#queue"), message="Lou waiting on A")
    b.wait(lambda: "Lou" in b.text("#queue"), message="Lou waiting on B")
    assert b.js(banner) is None  # nothing said twice
    assert a.errors() == [] and b.errors() == []


def test_the_tablets_own_free_or_leave_keeps_a_seat_now_on_screen_until_ok(
    server: ServerProcess, browser: Open
) -> None:
    """Every table taken but T1, held for Ada's four at 18:15 (booked through Tablefinder);
    Wyn's four, Kim's and Lou's couples wait. Ada cancels online and the tablet says 'Seat
    now: Wyn, party of 4 at T1'. Before the host has fetched Wyn, a party leaves T2 and the
    host taps Free: its own answer ('Seat now: Kim...') replaced Wyn's, and so did Lou's
    Left, and nothing on the page said Wyn any more. Now every 'Seat now' stays until OK."""
    booked = signed_post(
        server.base, "tablefinder", SECRETS["tablefinder"],
        booking_event("evt-ada", 4, "2026-12-04T18:15:00+00:00"),
    )  # fmt: skip
    assert booked.status_code == 200, booked.text
    ada = next(r["reservation_id"] for r in api(server, "GET", "/reservations")["reservations"]
               if r["name"] == "Ada")  # fmt: skip
    for i, size in enumerate((2, 2, 6, 4, 4)):  # T2, T4, T3, T5, T6
        api(server, "POST", "/walk-ins", {"size": size, "name": f"N{i}", "party_id": f"n{i}"})
    for pid, size in (("wyn", 4), ("kim", 2), ("lou", 2)):
        api(server, "POST", "/walk-ins", {"size": size, "name": pid.title(), "party_id": pid})
    tablet = browser(server.base)
    tablet.wait(lambda: tablet.text("#live") == "live", message="live")
    tablet.js("window.confirm = () => true")  # the host says yes to 'Take Lou off…?'
    cancelled = signed_post(
        server.base, "tablefinder", SECRETS["tablefinder"],
        change_event("evt-ada-off", "cancelled", ada),
    )  # fmt: skip
    assert cancelled.status_code == 200, cancelled.text
    banner = (
        "const b = document.getElementById('banner');"
        " return b.hidden ? null"
        " : [document.getElementById('banner-text').textContent, b.className]"
    )
    wyn = "Seat now: Wyn, party of 4 at T1"
    tablet.wait(lambda: tablet.js(banner) == [wyn, "banner seat"], message="Wyn announced")
    tablet.press(lambda: tablet.el('#floor [data-table="T2"]'))  # N0 left: Free, no OK first
    tablet.choose("free")
    kim = f"{wyn} · Seat now: Kim, party of 2 at T2"
    tablet.wait(lambda: tablet.js(banner)[0] != wyn, message="Free's answer")
    assert tablet.js(banner) == [kim, "banner seat"], tablet.js(banner)
    tablet.tap_row('#queue [data-party="lou"]', "Left")
    tablet.wait(lambda: tablet.js(banner)[0] != kim, message="Left's answer")
    tablet.shot("own-free-and-leave-keep-seat-now")
    assert tablet.js(banner) == [f"{kim} · Lou, party of 2 left the waitlist", "banner seat"]
    tablet.el("#banner-close").click()  # OK: Wyn and Kim fetched
    said = tablet.tap_table("T4", "free")
    assert said == "T4 is free. Nobody in line is due it yet.", said
    assert tablet.errors() == []


def test_an_answer_left_on_screen_says_the_minute_it_was_said_once_the_clock_moves_on(
    tmp_path: Path, browser: Open
) -> None:
    """Ann's four checked in at 18:00: 'Seat Ann, party of 4 at T1', in green, stays until
    OK. Nobody tapped OK, and at 18:22 the banner still read, unchanged and green, as
    whom to seat now. Once the clock has moved on it says when it was said; what is said
    next reads as now."""
    db, port = tmp_path / "hoststand.db", free_port()
    server = start_server(db, NOW, port=port)
    try:
        ann = _book(server, 4, "18:15", "Ann")
        tablet = browser(server.base)
        said = tablet.banner_after(
            lambda: tablet.tap_row(f'[data-reservation="{ann}"]', "Check in")
        )
        assert said == "Seat Ann, party of 4 at T1", said
        server.stop()
        server = start_server(db, NOW + timedelta(minutes=22), port=port)
        tablet.wait(lambda: tablet.clock() == "18:22", timeout=30, message="18:22")
        tablet.wait(lambda: tablet.text("#banner-text").startswith("At "), message="the minute")
        shown = tablet.text("#banner-text")
        assert shown == "At 18:00: Seat Ann, party of 4 at T1", shown
        tablet.shot("answer-says-its-minute")
        said = tablet.walk_in(2, "Bo")
        assert said == "Seat Bo, party of 2 at T2", said
        assert tablet.errors() == []
    finally:
        server.stop()


def test_a_party_the_tablets_own_free_seats_is_said_once_when_the_floor_comes_first(
    server: ServerProcess, browser: Open
) -> None:
    """The floor the server sends as soon as a Free is done may reach the tablet before the
    Free's own answer: it lists Hal among the parties the pass seated, not yet known as
    this tap's, and says 'Seat now: Hal'; the answer then said it again ('Seat now: Hal,
    party of 2 at T4 · Seat now: Hal, party of 2 at T4'), two parties to fetch. The page
    here holds the Free's answer back until the floor has shown Hal seated."""
    for size, pid in (
        (4, "al"),
        (2, "bea"),
        (2, "cy"),
        (4, "cam"),
        (6, "dee"),
        (4, "ed"),
        (2, "hal"),
    ):
        api(server, "POST", "/walk-ins", {"size": size, "party_id": pid, "name": pid.title()})
    floor = api(server, "GET", "/floor")
    bea = next(t["id"] for t in floor["tables"] if (t["occupant"] or {}).get("party_id") == "bea")
    assert [p["party_id"] for p in floor["queue"]] == ["hal"]
    tablet = browser(server.base)
    tablet.js(
        "const real = window.fetch; const table = arguments[0];"
        "window.fetch = async (url, init) => {"
        "  const answer = await real(url, init);"
        "  if (init && init.method === 'POST' && String(url).endsWith('/free')) {"
        "    while (!document.querySelector(`#floor [data-table='${table}']`).textContent"
        "           .includes('Hal')) await new Promise((r) => setTimeout(r, 20));"
        "    window.freeAnswered = true;"
        "  }"
        "  return answer;"
        "};",
        bea,
    )
    tablet.tap_table(bea, "free")
    tablet.wait(lambda: "Hal, party of 2" in tablet.table(bea), message="Hal seated")
    # The Free's answer is said once its button (in the closed menu) takes taps again.
    tablet.wait(
        lambda: tablet.js(
            "const b = document.querySelector('#chooser-options [data-unit=free]');"
            " return window.freeAnswered && b && !b.disabled"
        ),
        message="the Free's answer said",
    )
    said = tablet.text("#banner-text")
    assert said == f"Seat now: Hal, party of 2 at {bea}", said
    assert tablet.errors() == []


def test_a_second_seat_now_keeps_the_first_on_screen_until_it_is_dismissed(
    server: ServerProcess, browser: Open
) -> None:
    """Every table taken but T1 and T5, held for Ada's and Bea's fours (booked through
    Tablefinder); Wyn's and Xi's fours wait. Ada cancels online (Wyn to T1), then Bea (Xi to
    T5): the second 'Seat now' replaced the first before the host had fetched Wyn, and
    nothing on the page said Wyn any more. Now both are said until OK."""
    ids = []
    for event_id, hhmm in (("evt-ada", "18:15"), ("evt-bea", "18:15")):
        event = booking_event(event_id, 4, f"2026-12-04T{hhmm}:00+00:00", name=event_id[4:].title())
        reply = signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event)
        assert reply.status_code == 200, reply.text
        ids.append(reply.json()["reservation_id"])
    units = {r["name"]: r["unit"] for r in api(server, "GET", "/reservations")["reservations"]}
    assert units == {"Ada": "T1", "Bea": "T5"}, units
    for i, size in enumerate((2, 2, 6, 4)):  # T2, T4, T3, T6
        api(server, "POST", "/walk-ins", {"size": size, "name": f"N{i}", "party_id": f"n{i}"})
    for pid in ("wyn", "xi"):
        api(server, "POST", "/walk-ins", {"size": 4, "name": pid.title(), "party_id": pid})
    tablet = browser(server.base)
    tablet.wait(lambda: tablet.text("#live") == "live", message="live")
    banner = "return document.getElementById('banner').hidden ? null : document.getElementById('banner-text').textContent"  # noqa: E501
    for n, rid in enumerate(ids):
        event = change_event(f"evt-off-{n}", "cancelled", rid)
        reply = signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event)
        assert reply.status_code == 200, reply.text
        tablet.wait(lambda n=n: str(tablet.js(banner)).count("Seat now") == n + 1, message=str(n))
    tablet.shot("two-seat-nows")
    assert tablet.js(banner) == ("Seat now: Wyn, party of 4 at T1 · Seat now: Xi, party of 4 at T5")
    assert tablet.errors() == []


def test_a_booking_checked_in_or_cancelled_here_while_its_change_is_open_ends_the_change(
    server: ServerProcess, browser: Open
) -> None:
    """Bo's Change… is open when Bo walks in: the host taps Check in on Bo's row. The
    banner says where to seat Bo (not that Bo was seated 'meanwhile'), and the form is the
    phone booking's again. The same with Cancel on Cy's row while Cy's Change… is open."""

    bo = _book(server, 2, "18:15", "Bo")  # held from 18:00: may check in
    cy = _book(server, 2, "19:30", "Cy")
    tablet = browser(server.base)
    tablet.wait(lambda: tablet.el("#live").text == "live", message="the stream open")
    for who, rid, tap, answer in (
        ("Bo", bo, "Check in", "Seat Bo, party of 2 at T2"),
        ("Cy", cy, "Cancel", "Cy, party of 2 at 19:30 cancelled"),
    ):
        row = f'#reservations [data-reservation="{rid}"]'
        tablet.tap_row(row, "Change…")
        tablet.wait(lambda who=who: _change_form(tablet)[0].startswith(f"Change {who}"))

        def act(row: str = row, tap: str = tap) -> None:
            tablet.tap_row(row, tap)
            if tap == "Cancel":
                _confirm(tablet, accept=True)

        said = tablet.banner_after(act)
        assert said == answer, said
        done = "seated" if tap == "Check in" else "cancelled"
        tablet.wait(
            lambda rid=rid, done=done: (_row(tablet, rid) or ("", []))[0].startswith(done),
            message=f"{who} {done} on the list",
        )
        assert _change_form(tablet)[0] == "Phone booking"
        assert tablet.text("#banner-text") == answer
    assert tablet.errors() == []


def _fill(server: ServerProcess, size: int, hhmm: str) -> None:
    """Books parties of `size` at `hhmm` until the server refuses one: the slot is full."""
    body = {"party_size": size, "start": f"2026-12-04T{hhmm}", "name": "Filler"}
    for _ in range(20):
        reply = requests.post(
            f"{server.base}{HOST}/reservations", json=body, headers=AUTH, timeout=10
        )
        if reply.status_code == 409:
            return
        assert reply.status_code == 200, reply.text
    raise AssertionError(f"{hhmm} never filled up for {size}")


def test_a_size_only_change_keeps_the_bookings_own_time_even_in_a_full_slot(
    server: ServerProcess, browser: Open
) -> None:
    """Bo's table is Bo's: a slot that shows no spot open for others still offers Bo its
    own time in Change…, selected, so making the party smaller keeps the time."""

    bo = _book(server, 4, "19:00", "Bo", "+44 20 7946 0505")
    _fill(server, 4, "19:00")
    tablet = browser(server.base)
    tablet.wait(lambda: "Bo" in tablet.text("#reservations"), message="the booking")
    tablet.tap_row(f'#reservations [data-reservation="{bo}"]', "Change…")
    tablet.wait(lambda: tablet.text("#book-h") == "Change Bo, party of 4 at 19:00")
    form = tablet.el("#book-form")

    def chosen() -> str:
        return tablet.chosen_time()[0]

    assert chosen() == "2026-12-04T19:00"
    size = form.find_element("name", "size")
    size.clear()
    size.send_keys("3")
    assert chosen() == "2026-12-04T19:00"
    tablet.shot("change-in-a-full-slot")
    said = tablet.banner_after(
        lambda: tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))
    )
    assert said.startswith("Bo is now booked at 19:00, party of 3 ("), said
    mine = [
        r for r in api(server, "GET", "/reservations")["reservations"] if r["reservation_id"] == bo
    ]
    assert [(r["start"][11:16], r["party_size"]) for r in mine] == [("19:00", 3)]
    assert tablet.errors() == []


def test_a_change_that_looks_at_another_day_and_comes_back_keeps_the_bookings_time(
    server: ServerProcess, browser: Open
) -> None:
    """The host opens Change… for Bo (21:00), looks at Tuesday, comes back to today: Bo's
    21:00 is chosen again, not the first open time of the day."""

    bo = _book(server, 2, "21:00", "Bo")
    tablet = browser(server.base)
    tablet.wait(lambda: "Bo" in tablet.text("#reservations"), message="the booking")
    tablet.tap_row(f'#reservations [data-reservation="{bo}"]', "Change…")

    def chosen() -> str:
        return tablet.chosen_time()[0]

    assert chosen() == "2026-12-04T21:00"
    for day in ("2026-12-08", "2026-12-04"):  # another day, and back
        tablet.js(
            "const d = document.querySelector('#book-form [name=day]');"
            f" d.value = '{day}'; d.dispatchEvent(new Event('change'));"
        )
        tablet.wait(lambda day=day: chosen().startswith(day), message=f"{day}'s times")
    assert chosen() == "2026-12-04T21:00"
    assert tablet.errors() == []


def test_a_live_update_never_changes_the_time_the_host_chose_for_a_phone_booking(
    server: ServerProcess, browser: Open
) -> None:
    """The host picks 19:00 for a party of 6; another tablet books T3, the only table for
    6, at 19:00. The live update refills the list: 19:00 stays chosen, marked full, and
    Book sends 19:00, whose refusal (with the nearest open times) the host reads."""

    tablet = browser(server.base)
    tablet.wait(lambda: tablet.el("#live").text == "live", message="the stream open")
    form = tablet.el("#book-form")
    size = form.find_element("name", "size")
    size.clear()
    size.send_keys("6")
    nineteen = "2026-12-04T19:00"
    tablet.pick_time(nineteen)
    form.find_element("name", "name").send_keys("Six")
    _book(server, 6, "19:00", "Other tablet")

    def selected() -> tuple[str, str]:
        return tablet.chosen_time()

    tablet.wait(lambda: selected()[0] != nineteen or "full" in selected()[1], message="the refill")
    assert selected() == (nineteen, "19:00 — full now")
    tablet.shot("chosen-time-full-now")
    said = tablet.banner_after(
        lambda: tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))
    )
    assert said.startswith("no table for 6 at Fri 4 Dec 19:00; open for 6 that day: 20:30"), said
    names = [r["name"] for r in api(server, "GET", "/reservations")["reservations"]]
    assert names == ["Other tablet"]
    assert tablet.errors() == []


def test_a_change_to_another_day_leaves_that_days_times_as_they_now_are(
    server: ServerProcess, browser: Open
) -> None:
    """Bo moves from tonight to Tuesday 19:30 with Change…: the form, the phone booking's
    again and still on Tuesday, reads Tuesday's times anew (as after a phone booking for
    another day), so 19:30 no longer offers the spot Bo has just taken."""

    bo = _book(server, 2, "19:00", "Bo")
    tablet = browser(server.base)
    tablet.wait(lambda: "Bo" in tablet.text("#reservations"), message="Bo's booking")
    tablet.tap_row(f'#reservations [data-reservation="{bo}"]', "Change…")
    tablet.wait(lambda: tablet.text("#book-h") == "Change Bo, party of 2 at 19:00")
    form = tablet.el("#book-form")
    tablet.js(
        "const d = document.querySelector('#book-form [name=day]');"
        " d.value = '2026-12-08'; d.dispatchEvent(new Event('change'));"
    )

    def label(value: str) -> str:
        return next((text for v, text in tablet.time_options() if v == value), "")

    tuesday = "2026-12-08T19:30"
    tablet.wait(lambda: label(tuesday) == "19:30 (5 open)", message="Tuesday's 19:30")
    tablet.pick_time(tuesday)
    said = tablet.banner_after(
        lambda: tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))
    )
    assert said.startswith("Bo is now booked at 19:30 on Tue 8 Dec, party of 2 ("), said
    assert tablet.text("#book-h") == "Phone booking on Tue 8 Dec"  # still on Tuesday
    assert form.find_element("name", "day").get_attribute("value") == "2026-12-08"
    spots = [
        s for s in api(server, "GET", "/slots?date=2026-12-08")["slots"] if s["start"] == tuesday
    ]
    assert spots[0]["open"]["2"] == 4
    tablet.wait(lambda: label(tuesday) == "19:30 (4 open)", message="Tuesday's 19:30 read again")
    assert tablet.errors() == []


def test_a_booking_of_another_day_is_listed_changed_and_cancelled_from_that_days_list(
    server: ServerProcess, browser: Open
) -> None:
    """The guest phones about Tuesday, as `host reservations --date` and the API's list of
    a day serve the host: the host picks Tuesday above the reservations, changes Bo's time
    (Bo's own 19:30 is chosen first) and cancels Cy's booking; today's list comes back with
    today. A day not being served offers no check-in, arrival or seating."""

    def tuesday(hhmm: str, name: str) -> str:
        body = {"party_size": 2, "start": f"2026-12-08T{hhmm}", "name": name}
        return str(api(server, "POST", "/reservations", body)["reservation_id"])

    bo, cy = tuesday("19:30", "Bo"), tuesday("20:00", "Cy")
    _book(server, 2, "19:00", "Di")
    tablet = browser(server.base)
    tablet.wait(lambda: "Di" in tablet.text("#reservations"), message="today's list")

    def list_day(day: str) -> None:
        tablet.js(
            "const d = document.getElementById('res-day');"
            " d.value = arguments[0]; d.dispatchEvent(new Event('change'));",
            day,
        )

    list_day("2026-12-08")
    tablet.wait(lambda: "Bo" in tablet.text("#reservations"), message="Tuesday's list")
    assert "Di" not in tablet.text("#reservations")
    assert tablet.text("#res-h") == "Reservations on Tue 8 Dec"
    buttons = tablet.js(
        "return [...document.querySelectorAll(arguments[0] + ' button')].map(b => b.innerText)",
        f'[data-reservation="{bo}"]',
    )
    assert buttons == ["Change…", "Cancel"]
    tablet.shot("another-days-list")

    tablet.tap_row(f'#reservations [data-reservation="{bo}"]', "Change…")
    tablet.wait(lambda: tablet.text("#book-h") == "Change Bo, party of 2 at 19:30 on Tue 8 Dec")
    form = tablet.el("#book-form")
    assert form.find_element("name", "day").get_attribute("value") == "2026-12-08"

    def chosen() -> str:
        return tablet.chosen_time()[0]

    tablet.wait(lambda: chosen() == "2026-12-08T19:30", message="Bo's own time chosen")
    tablet.pick_time("2026-12-08T21:00")
    said = tablet.banner_after(
        lambda: tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))
    )
    assert said.startswith("Bo is now booked at 21:00 on Tue 8 Dec, party of 2 ("), said
    tablet.wait(lambda: "21:00 · Bo" in tablet.text("#reservations"), message="Bo at 21:00")

    said = tablet.banner_after(
        lambda: (
            tablet.tap_row(f'#reservations [data-reservation="{cy}"]', "Cancel"),
            _confirm(tablet, accept=True),
        )
    )
    assert said == "Cy, party of 2 at 20:00 on Tue 8 Dec cancelled", said
    rows = api(server, "GET", "/reservations?date=2026-12-08")["reservations"]
    assert sorted((r["name"], r["start"][11:16], r["status"]) for r in rows) == [
        ("Bo", "21:00", "booked"),
        ("Cy", "20:00", "cancelled"),
    ]
    tablet.wait(
        lambda: tablet.text(f'#reservations [data-reservation="{cy}"] .badge') == "cancelled",
        message="Cy cancelled on the list",
    )
    list_day("2026-12-04")
    tablet.wait(lambda: "Di" in tablet.text("#reservations"), message="today's list again")
    assert tablet.text("#res-h") == "Reservations today"
    assert tablet.errors() == []


def test_every_date_on_the_page_reads_as_its_day_whatever_the_browsers_locale(
    server: ServerProcess, browser: Open
) -> None:
    """Headless Chromium's locale orders a date picker's day the US way: 12/08/2026, which a
    London host reads as the 12th of August. Beside each Day picker its day reads in words
    ("Tue 8 Dec", its year when not this service's), and so does every date the page
    shows: headings, rows, banners (the server's ISO dates too). No date on the page is in
    digits, in any order."""
    body = {"party_size": 2, "start": "2026-12-08T19:30", "name": "Bo"}
    bo = str(api(server, "POST", "/reservations", body)["reservation_id"])
    tablet = browser(server.base)
    tablet.wait(lambda: tablet.text("#res-day-words") == "Fri 4 Dec (today)", message="today")
    _list_day(tablet, "2026-12-08")
    tablet.wait(lambda: tablet.text("#res-h") == "Reservations on Tue 8 Dec", message="Tuesday")
    tablet.js(
        "const d = document.querySelector('#book-form [name=day]');"
        " d.value = '2027-01-02'; d.dispatchEvent(new Event('change'));"
    )
    tablet.wait(lambda: tablet.text("#book-h") == "Phone booking on Sat 2 Jan 2027")
    tablet.el("#res-day").find_element("xpath", "..").screenshot(
        str(tablet.artefacts / "day-picker.png")
    )
    words, other, shown = tablet.js(
        "return [document.getElementById('res-day-words').textContent,"
        " document.getElementById('book-day-words').textContent, document.body.innerText]"
    )
    assert (words, other) == ("Tue 8 Dec", "Sat 2 Jan 2027")
    said = tablet.banner_after(
        lambda: (
            tablet.tap_row(f'#reservations [data-reservation="{bo}"]', "Cancel"),
            _confirm(tablet, accept=True),
        )
    )
    assert said == "Bo, party of 2 at 19:30 on Tue 8 Dec cancelled", said
    shown = tablet.text("body")
    assert not re.search(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{2,4}", shown), shown
    tablet.shot("dates-in-words")
    assert tablet.errors() == []


def _list_day(tablet: Tablet, day: str) -> None:
    """The host picks `day` in the Day field above the reservations."""
    tablet.js(
        "const d = document.getElementById('res-day');"
        " d.value = arguments[0]; d.dispatchEvent(new Event('change'));",
        day,
    )


def _row(tablet: Tablet, reservation_id: str) -> tuple[str, list[str]] | None:
    """A row of the reservations listed, its badge and its buttons, read in one script
    (the page redraws on every live update): None when it is not listed."""
    found = tablet.js(
        "const li = document.querySelector(`#reservations [data-reservation='${arguments[0]}']`);"
        " return li ? [li.querySelector('.badge').textContent,"
        " Array.from(li.querySelectorAll('button'), b => b.textContent)] : null",
        reservation_id,
    )
    return None if found is None else (str(found[0]), [str(b) for b in found[1]])


def test_another_days_list_follows_bookings_and_cancellations_made_elsewhere(
    server: ServerProcess, browser: Open
) -> None:
    """The host has Tuesday listed (a guest is on the phone about it). A partner books Ada
    for Tuesday, another tablet books Cy and cancels Bo: the list follows each, as today's
    does, and Bo's row no longer offers Change… or Cancel. Back on today, today's list is
    live as ever."""

    def tuesday(hhmm: str, name: str) -> str:
        body = {"party_size": 2, "start": f"2026-12-08T{hhmm}", "name": name}
        return str(api(server, "POST", "/reservations", body)["reservation_id"])

    bo = tuesday("19:30", "Bo")
    tablet = browser(server.base)
    tablet.wait(lambda: tablet.el("#live").text == "live", message="the stream open")
    _list_day(tablet, "2026-12-08")
    tablet.wait(lambda: _row(tablet, bo) == ("booked", ["Change…", "Cancel"]), message="Bo")
    event = booking_event("evt-tuesday-ada", 2, "2026-12-08T20:00:00+00:00")
    reply = signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event)
    assert reply.status_code == 200, reply.text
    tablet.wait(lambda: "20:00 · Ada" in tablet.text("#reservations"), message="the partner's Ada")
    cy = tuesday("21:00", "Cy")  # another tablet
    tablet.wait(lambda: _row(tablet, cy) is not None, message="Cy booked elsewhere")
    api(server, "POST", f"/reservations/{bo}/cancel")  # another tablet
    tablet.wait(lambda: _row(tablet, bo) == ("cancelled", []), message="Bo cancelled elsewhere")
    assert tablet.text("#res-h") == "Reservations on Tue 8 Dec"
    tablet.shot("another-days-list-live")
    _list_day(tablet, "2026-12-04")
    tablet.wait(lambda: tablet.text("#res-h") == "Reservations today", message="today's list")
    di = _book(server, 2, "19:00", "Di")
    tablet.wait(lambda: _row(tablet, di) is not None, message="today's Di")
    assert tablet.errors() == []


def test_another_days_list_follows_changes_made_elsewhere_while_the_stream_is_down(
    server: ServerProcess, browser: Open
) -> None:
    """The event stream is cut (a proxy on the restaurant's network drops it): the page
    polls the floor, and Tuesday's list, picked for a guest on the phone, follows a booking
    and a cancellation made on another tablet all the same. Cheaply: the floor polled says
    where Tuesday's bookings stand, and the list is read again only when they changed,
    not at every poll."""

    def tuesday(hhmm: str, name: str) -> str:
        body = {"party_size": 2, "start": f"2026-12-08T{hhmm}", "name": name}
        return str(api(server, "POST", "/reservations", body)["reservation_id"])

    bo = tuesday("19:30", "Bo")
    tablet = browser(server.base)
    tablet.driver.execute_cdp_cmd("Network.enable", {})
    tablet.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/events*"]})
    tablet.driver.refresh()
    tablet.wait(lambda: tablet.el("#floor [data-table]"), message="the floor drawn")
    _list_day(tablet, "2026-12-08")
    tablet.wait(lambda: _row(tablet, bo) == ("booked", ["Change…", "Cancel"]), message="Bo")
    cy = tuesday("21:00", "Cy")  # another tablet
    tablet.wait(lambda: _row(tablet, cy) is not None, message="Cy booked elsewhere")
    api(server, "POST", f"/reservations/{bo}/cancel")
    tablet.wait(lambda: _row(tablet, bo) == ("cancelled", []), message="Bo cancelled elsewhere")
    tablet.js(
        """window.reads = {floor: 0, list: 0};
           const send = window.fetch;
           window.fetch = (url, init) => {
             if (/[/]floor/.test(url)) window.reads.floor++;
             if (/[/]reservations[?]date=/.test(url)) window.reads.list++;
             return send(url, init);
           };"""
    )
    tablet.wait(lambda: tablet.js("return window.reads.floor") >= 4, message="four polls")
    assert tablet.js("return window.reads.list") == 0  # nothing changed on Tuesday meanwhile
    di = _book(server, 2, "19:00", "Di")  # today's list, polled as ever
    _list_day(tablet, "2026-12-04")
    tablet.wait(lambda: _row(tablet, di) is not None, message="today's Di")
    assert tablet.errors() == []


def test_a_page_kept_current_by_polling_says_live_and_offline_when_the_server_is_down(
    tmp_path: Path, browser: Open
) -> None:
    """The restaurant's network lets no event stream through: the page polls, is current
    (a walk-in added elsewhere appears) and says live, not "reconnecting" all evening;
    with the server down it says offline, and live again once it is back."""
    db, port = tmp_path / "hoststand.db", free_port()
    server = start_server(db, NOW, port=port)
    try:
        tablet = browser(server.base)
        tablet.driver.execute_cdp_cmd("Network.enable", {})
        tablet.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/events*"]})
        tablet.driver.refresh()
        tablet.wait(lambda: tablet.el("#floor [data-table]"), message="the floor drawn")
        api(server, "POST", "/walk-ins", {"size": 2, "name": "Ida"})  # another tablet
        tablet.wait(lambda: "Ida" in tablet.text("#floor"), message="Ida, by polling")
        tablet.wait(lambda: tablet.text("#live") == "live", message="live, by polling")
        server.stop()
        tablet.wait(lambda: tablet.text("#live") == "offline", message="offline")
        server = start_server(db, NOW + timedelta(minutes=1), port=port)
        tablet.wait(lambda: tablet.clock() == "18:01", message="the floor read again")
        tablet.wait(lambda: tablet.text("#live") == "live", message="live again")
        assert [e for e in tablet.errors() if "ERR_BLOCKED" not in e] == []
    finally:
        server.stop()


def test_a_page_offline_greys_its_clock_and_floor_until_it_is_current_again(
    tmp_path: Path, browser: Open
) -> None:
    """The connection drops at 18:00 and the server comes back at 18:07: meanwhile the page
    showed 18:00 in black and the floor as it was, only the small sign saying offline, and
    a host glancing at it read them as now. Offline, the clock is struck through and
    greyed and the floor and lists are greyed; live again, both are as before."""
    db, port = tmp_path / "hoststand.db", free_port()
    server = start_server(db, NOW, port=port)
    look = (
        "return [document.getElementById('live').textContent,"
        " getComputedStyle(document.getElementById('clock')).textDecorationLine,"
        " getComputedStyle(document.getElementById('floor')).opacity,"
        " getComputedStyle(document.getElementById('reservations')).opacity]"
    )
    try:
        tablet = browser(server.base)
        tablet.wait(lambda: tablet.text("#live") == "live", message="live")
        assert tablet.js(look) == ["live", "none", "1", "1"]
        server.stop()
        tablet.wait(lambda: tablet.js(look)[0] == "offline", message="offline")
        tablet.shot("offline")
        assert tablet.js(look) == ["offline", "line-through", "0.5", "0.5"]
        server = start_server(db, NOW + timedelta(minutes=7), port=port)
        tablet.wait(lambda: tablet.clock() == "18:07", message="the floor read again")
        tablet.wait(lambda: tablet.js(look) == ["live", "none", "1", "1"], message="live again")
        assert tablet.errors() == []
    finally:
        server.stop()


def test_the_phone_booking_says_the_day_it_books_on_when_not_today(
    server: ServerProcess, browser: Open
) -> None:
    """The form stays on the day picked for the last caller; its heading says that day,
    as the Time's options do not, so tonight's next caller is not booked for Tuesday."""

    tablet = browser(server.base)

    def pick(day: str) -> None:
        tablet.js(
            "const d = document.querySelector('#book-form [name=day]');"
            " d.value = arguments[0]; d.dispatchEvent(new Event('change'));",
            day,
        )

    assert tablet.text("#book-h") == "Phone booking"
    pick("2026-12-08")
    tablet.wait(lambda: tablet.text("#book-h") == "Phone booking on Tue 8 Dec")
    tablet.wait(lambda: tablet.chosen_time()[0].startswith("2026-12-08"), message="Tuesday")
    form = tablet.el("#book-form")
    form.find_element("name", "name").send_keys("Tu")
    said = tablet.banner_after(
        lambda: tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))
    )
    assert said.startswith("Booked Tu, party of 2, at ") and " on Tue 8 Dec (" in said, said
    assert tablet.text("#book-h") == "Phone booking on Tue 8 Dec"
    # The open spots beside the form are tonight's, whatever day the form is on.
    assert tablet.text("#spots-h") == "Open spots today, next slots"
    pick("2026-12-04")
    tablet.wait(lambda: tablet.text("#book-h") == "Phone booking", message="today again")
    assert tablet.errors() == []


def test_a_day_whose_times_cannot_be_read_leaves_the_phone_booking_on_its_day(
    server: ServerProcess, browser: Open
) -> None:
    """The host picks Tuesday while the server cannot be reached: the Day goes back to
    today, whose times the form still offers, and the banner says to pick it again. The
    Day stayed on Tuesday above tonight's times, and Book then booked tonight."""
    tablet = browser(server.base)
    tablet.driver.execute_cdp_cmd("Network.enable", {})
    tablet.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/slots*"]})
    said = tablet.banner_after(
        lambda: tablet.js(
            "const d = document.querySelector('#book-form [name=day]');"
            " d.value = '2026-12-08'; d.dispatchEvent(new Event('change'));"
        )
    )
    assert said == (
        "The tablet cannot reach the server: the times of Tue 8 Dec were not read."
        " Pick the day again."
    )
    form = tablet.js(
        "const f = document.getElementById('book-form');"
        " return [f.day.value, f.start.value, document.getElementById('book-h').textContent]"
    )
    assert form[0] == "2026-12-04" and form[1].startswith("2026-12-04T"), form
    assert form[2] == "Phone booking"
    tablet.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    tablet.js(
        "const d = document.querySelector('#book-form [name=day]');"
        " d.value = '2026-12-08'; d.dispatchEvent(new Event('change'));"
    )
    tablet.wait(lambda: tablet.chosen_time()[0].startswith("2026-12-08"), message="Tuesday")


def test_guests_too_early_to_check_in_are_told_when_and_what_the_host_can_do(
    server: ServerProcess, browser: Open
) -> None:
    """Ben (18:30) is at the door at 18:00: Check in is refused, saying when his table is
    held from and what the host can do now; Arrived notes him as here, and says his table
    is held for him from 18:15 (not 'stays held': nothing holds it yet)."""

    ben = _book(server, 4, "18:30", "Ben")
    tablet = browser(server.base)
    row = f'#reservations [data-reservation="{ben}"]'
    said = tablet.banner_after(lambda: tablet.tap_row(row, "Check in"))
    assert said == (
        "Too early to check in Ben, party of 4 (due 18:30): their table is held from 18:15."
        " Tap Arrived to note they are here, or Seat… them at a free table now."
    ), said
    said = tablet.banner_after(lambda: tablet.tap_row(row, "Arrived"))
    assert said == "Ben, party of 4 marked arrived: their table is held for them from 18:15"
    assert tablet.errors() == []


def test_a_booking_moved_to_another_day_shows_where_it_went(
    server: ServerProcess, browser: Open
) -> None:
    bo = _book(server, 2, "19:00", "Bo")
    api(server, "POST", f"/reservations/{bo}/change", {"start": "2026-12-05T20:00"})
    tablet = browser(server.base)
    row = f'#reservations [data-reservation="{bo}"]'
    tablet.wait(lambda: "Bo" in tablet.text("#reservations"), message="Bo's row")
    assert tablet.text(f"{row} .badge") == "moved to Sat 5 Dec 20:00"
    assert tablet.errors() == []


def test_a_booking_a_reload_left_outside_the_rules_says_so_on_its_row(
    tmp_path: Path, browser: Open
) -> None:
    """Friday's dinner now takes its last seating at 20:30 (the file, reloaded): Bo's
    21:00 booking is kept for the host to sort out, and the tablet's row says why, as the
    host API's list of the day does, until Bo is moved within the hours."""
    restaurant = tmp_path / "marlowes.toml"
    restaurant.write_text(CONFIGS[0].read_text(encoding="utf-8"), encoding="utf-8")
    server = start_server(tmp_path / "reload.db", NOW, configs=(restaurant, *CONFIGS[1:]))
    try:
        bo = _book(server, 4, "21:00", "Bo")
        text = restaurant.read_text(encoding="utf-8")
        friday = 'friday = [\n  { open = "12:00", close = "15:00", last_seating = "14:00" },\n'
        dinner = '  { open = "17:30", close = "23:00", last_seating = "21:30" },'
        assert friday + dinner in text
        restaurant.write_text(
            text.replace(friday + dinner, friday + dinner.replace("21:30", "20:30")),
            encoding="utf-8",
        )
        reload = requests.post(
            f"{server.base}/api/v1/admin/reload",
            headers={"Authorization": "Bearer sample-admin-token-change-me"},
            timeout=10,
        )
        assert reload.status_code == 200, reload.text
        why = "no longer fits: 21:00 is now outside the hours"
        listed = api(server, "GET", "/reservations")["reservations"]
        assert [(r["reservation_id"], r["attention"]) for r in listed] == [(bo, why)]
        floor = api(server, "GET", "/floor")["reservations"]
        assert [(r["reservation_id"], r["attention"]) for r in floor] == [(bo, why)]
        tablet = browser(server.base)
        row = f'#reservations [data-reservation="{bo}"]'
        tablet.wait(lambda: "Bo" in tablet.text("#reservations"), message="Bo's booking")
        assert tablet.text(f"{row} .badge.attention") == why
        tablet.shot("booking-needing-attention")
        api(server, "POST", f"/reservations/{bo}/change", {"start": "2026-12-04T20:30"})
        tablet.wait(lambda: "20:30 · Bo" in tablet.text(row), message="Bo moved")
        assert not tablet.js("return document.querySelector(arguments[0])", f"{row} .attention")
        assert api(server, "GET", "/floor")["reservations"][0]["attention"] is None
        assert tablet.errors() == []
    finally:
        server.stop()


# -- over pacing (the Harbour Room paces its slots: 4 bookings, 16 guests at dinner) --------

HARBOUR = "harbour-room"
HARBOUR_TOKEN = "sample-host-token-harbour"
HARBOUR_AUTH = {"Authorization": f"Bearer {HARBOUR_TOKEN}"}


@pytest.fixture
def harbour(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server for the Harbour Room alone (Friday 18:00 in Dublin: dinner is on, and its
    slots from 20:00 on are bookable), with a host token for it."""
    settings = tmp_path / "server.toml"
    settings.write_text(
        SETTINGS.read_text(encoding="utf-8")
        + f'\n[[hosts]]\nmerchant_id = "{HARBOUR}"\ntoken = "{HARBOUR_TOKEN}"\n',
        encoding="utf-8",
    )
    server = start_server(
        tmp_path / "harbour.db", NOW, settings=settings, configs=(SAMPLES / "harbour.toml",)
    )
    try:
        yield server
    finally:
        server.stop()


def harbour_api(server: ServerProcess, method: str, path: str, body: Any = None) -> Any:
    reply = requests.request(
        method,
        f"{server.base}/api/v1/restaurants/{HARBOUR}{path}",
        json=body,
        headers=HARBOUR_AUTH,
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def _pace_full(server: ServerProcess, hhmm: str) -> None:
    """Four parties of 2 at `hhmm`: its slot is at its pacing cap of 4 bookings, though
    tables stay free for the host to go beyond it."""
    for i in range(4):
        body = {"party_size": 2, "start": f"2026-12-04T{hhmm}", "name": f"Early {i}"}
        harbour_api(server, "POST", "/reservations", body)
    refused = requests.post(
        f"{server.base}/api/v1/restaurants/{HARBOUR}/reservations",
        json={"party_size": 2, "start": f"2026-12-04T{hhmm}", "name": "One more"},
        headers=HARBOUR_AUTH,
        timeout=10,
    )
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "over pacing"


def _confirm(tablet: Tablet, accept: bool) -> str:
    """Answer the page's confirm() and return its question."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    alert = WebDriverWait(tablet.driver, WAIT).until(expected_conditions.alert_is_present())
    question = str(alert.text)
    if accept:
        alert.accept()
    else:
        alert.dismiss()
    return question


def test_a_change_into_a_slot_at_its_pacing_cap_asks_and_goes_over_pacing_once_accepted(
    harbour: ServerProcess, browser: Open
) -> None:
    """Bo phones to come at 20:00, which pacing has full though tables are free: as for a
    new phone booking, the tablet asks the host with the refusal's words. Declined, nothing
    changes and the form still holds Bo's change; accepted, Bo is booked at 20:00, marked
    over pacing on the row, and the slot grid still says 20:00 is over pacing."""

    _pace_full(harbour, "20:00")
    bo = harbour_api(
        harbour,
        "POST",
        "/reservations",
        {"party_size": 2, "start": "2026-12-04T21:30", "name": "Bo", "phone": "+353 1 555 0199"},
    )["reservation_id"]
    tablet = browser(harbour.base, merchant=HARBOUR, token=HARBOUR_TOKEN)
    row = f'#reservations [data-reservation="{bo}"]'
    tablet.wait(lambda: "Bo" in tablet.text("#reservations"), message="Bo's booking")
    tablet.tap_row(row, "Change…")
    tablet.wait(lambda: tablet.text("#book-h") == "Change Bo, party of 2 at 21:30")
    assert tablet.js("return document.activeElement.name") == "start"  # the time, to pick
    form = tablet.el("#book-form")
    tablet.pick_time("2026-12-04T20:00")
    label = tablet.chosen_time()[1]
    assert label == "20:00 (2 open, over pacing)", label
    tablet.shot("change-form-over-pacing")

    def submit() -> None:
        tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))

    def mine() -> tuple[str, str, bool]:
        rows = harbour_api(harbour, "GET", "/reservations")["reservations"]
        (r,) = [r for r in rows if r["reservation_id"] == bo and r["status"] == "booked"]
        return r["start"][11:16], r["unit"], r["over_pacing"]

    # Declined: the refusal is shown, nothing is changed, the change is still in hand.
    tablet.js("document.getElementById('banner').hidden = true")
    submit()
    question = _confirm(tablet, accept=False)
    assert question.startswith("over pacing: Fri 4 Dec 20:00 already has 4 bookings"), question
    assert question.endswith(". Change Bo to 20:00, party of 2, over pacing anyway?"), question
    tablet.wait(lambda: tablet.el("#banner").is_displayed(), message="the refusal")
    assert tablet.text("#banner-text").startswith("over pacing: Fri 4 Dec 20:00 already has")
    assert mine() == ("21:30", "H1", False)
    assert tablet.text("#book-h") == "Change Bo, party of 2 at 21:30"
    assert tablet.chosen_time()[0] == "2026-12-04T20:00"
    assert not tablet.js("return document.querySelector(arguments[0] + ' .badge.over')", row)

    # Accepted: Bo moves to 20:00 over pacing, and the tablet shows it.
    said = tablet.banner_after(lambda: (submit(), _confirm(tablet, accept=True)))
    assert said == "Bo is now booked at 20:00, party of 2 (H4), over pacing", said
    assert mine() == ("20:00", "H4", True)
    tablet.wait(lambda: "20:00 · Bo" in tablet.text(row), message="Bo at 20:00")
    tablet.wait(lambda: tablet.text(f"{row} .badge.over") == "over pacing", message="the mark")
    assert tablet.text("#book-h") == "Phone booking"
    twenty = tablet.js(
        """const t = document.getElementById('spots');
           const col = [...t.rows[0].cells].findIndex(c => c.textContent === '20:00');
           const r = [...t.rows].find(r => r.cells[0].textContent === '2');
           return r.cells[col].textContent"""
    )
    assert twenty == "1*", twenty  # one table left at 20:00 for 2, beyond pacing
    tablet.shot("change-over-pacing-done")
    assert tablet.errors() == []


def test_a_phone_booking_beyond_pacing_is_made_only_when_the_host_says_so(
    harbour: ServerProcess, browser: Open
) -> None:
    """The new booking's path, asked the same way as a change's: declined, no booking;
    accepted, booked and marked over pacing."""

    _pace_full(harbour, "20:00")
    tablet = browser(harbour.base, merchant=HARBOUR, token=HARBOUR_TOKEN)
    form = tablet.el("#book-form")
    tablet.pick_time("2026-12-04T20:00")
    form.find_element("name", "name").send_keys("Cy")

    def submit() -> None:
        tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))

    def cys() -> list[tuple[str, bool]]:
        rows = harbour_api(harbour, "GET", "/reservations")["reservations"]
        return [(r["start"][11:16], r["over_pacing"]) for r in rows if r["name"] == "Cy"]

    said = tablet.banner_after(lambda: (submit(), _confirm(tablet, accept=False)))
    assert said.startswith("over pacing: Fri 4 Dec 20:00 already has 4 bookings"), said
    assert cys() == []
    said = tablet.banner_after(lambda: (submit(), _confirm(tablet, accept=True)))
    assert said == "Booked Cy, party of 2, at 20:00 (H4), over pacing", said
    assert cys() == [("20:00", True)]
    assert tablet.errors() == []


@pytest.fixture
def late(tmp_path: Path) -> Iterator[ServerProcess]:
    """The Harbour Room with Friday's dinner running to 02:00 (last seating 01:00): its
    00:30 starts on Saturday's date but is Friday's, listed under Friday."""
    restaurant = tmp_path / "harbour.toml"
    text = (SAMPLES / "harbour.toml").read_text(encoding="utf-8")
    dinner = '{ open = "17:00", close = "23:30", last_seating = "22:00", max_covers_per_slot = 16 }'
    friday = 'friday = [\n  { open = "12:00"'
    assert text.count(dinner) == 2 and friday in text  # Friday's and Saturday's
    late = dinner.replace('"23:30"', '"02:00"').replace('"22:00"', '"01:00"')
    at = text.index(friday)
    text = text[:at] + text[at:].replace(dinner, late, 1)
    restaurant.write_text(text, encoding="utf-8")
    settings = tmp_path / "server.toml"
    settings.write_text(
        SETTINGS.read_text(encoding="utf-8")
        + f'\n[[hosts]]\nmerchant_id = "{HARBOUR}"\ntoken = "{HARBOUR_TOKEN}"\n',
        encoding="utf-8",
    )
    server = start_server(tmp_path / "late.db", NOW, settings=settings, configs=(restaurant,))
    try:
        yield server
    finally:
        server.stop()


def test_over_pacing_after_midnight_is_read_back_from_the_service_days_list(
    late: ServerProcess, browser: Open
) -> None:
    """Changed, or booked, at Friday's 00:30 over pacing, the tablet's answer says ', over
    pacing' as the booking stands marked so on Friday's list (the service day's, not the
    list of the start's calendar date, Saturday)."""
    _tonight_full_past_midnight(late, browser)


def test_a_time_after_midnight_the_host_chose_stays_chosen_when_it_fills_up(
    late: ServerProcess, browser: Open
) -> None:
    """The host picks Friday's 00:30 for a phone booking; another tablet takes its last
    table for 2: the Time still holds 00:30, marked full now (Book sends it and the refusal
    is shown), never another time the host did not choose."""

    tablet = browser(late.base, merchant=HARBOUR, token=HARBOUR_TOKEN)
    tablet.el("#book-form")  # the form is drawn
    tablet.pick_time("2026-12-05T00:30")
    body = {"party_size": 2, "start": "2026-12-05T00:30", "name": "Other", "over_pacing": True}
    for _ in range(20):  # another tablet takes every table for 2 at 00:30
        reply = requests.post(
            f"{late.base}/api/v1/restaurants/{HARBOUR}/reservations",
            json=body,
            headers=HARBOUR_AUTH,
            timeout=10,
        )
        if reply.status_code == 409:
            break
        assert reply.status_code == 200, reply.text

    def open_at_half_past() -> bool:  # as the form lists 00:30 while spots are open there
        return any(label.startswith("00:30 (") for _, label in tablet.time_options())

    tablet.wait(lambda: not open_at_half_past(), message="00:30 no longer open on the page")
    assert tablet.chosen_time() == ("2026-12-05T00:30", "00:30 — full now")
    assert tablet.errors() == []


def _tonight_full_past_midnight(server: ServerProcess, browser: Open) -> None:

    for i in range(4):  # 00:30 at its pacing cap of 4 bookings, tables still free
        body = {"party_size": 2, "start": "2026-12-05T00:30", "name": f"Late {i}"}
        harbour_api(server, "POST", "/reservations", body)
    body = {"party_size": 2, "start": "2026-12-04T21:30", "name": "Bo"}
    bo = harbour_api(server, "POST", "/reservations", body)["reservation_id"]
    tablet = browser(server.base, merchant=HARBOUR, token=HARBOUR_TOKEN)
    row = f'#reservations [data-reservation="{bo}"]'
    tablet.wait(lambda: "Bo" in tablet.text("#reservations"), message="Bo's booking")
    form = tablet.el("#book-form")

    def submit() -> None:
        tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))

    tablet.tap_row(row, "Change…")
    tablet.wait(lambda: tablet.text("#book-h") == "Change Bo, party of 2 at 21:30")
    tablet.pick_time("2026-12-05T00:30")
    said = tablet.banner_after(lambda: (submit(), _confirm(tablet, accept=True)))
    friday = harbour_api(server, "GET", "/reservations?date=2026-12-04")["reservations"]
    (mine,) = [r for r in friday if r["reservation_id"] == bo]
    assert (mine["start"][:16], mine["over_pacing"]) == ("2026-12-05T00:30", True)
    assert said.startswith("Bo is now booked at 00:30, party of 2 ("), said
    assert said.endswith("), over pacing"), said
    tablet.wait(lambda: tablet.text(f"{row} .badge.over") == "over pacing", message="the mark")

    tablet.wait(lambda: tablet.text("#book-h") == "Phone booking")
    tablet.pick_time("2026-12-05T00:30")
    form.find_element("name", "name").send_keys("Cy")
    said = tablet.banner_after(lambda: (submit(), _confirm(tablet, accept=True)))
    assert said.startswith("Booked Cy, party of 2, at 00:30 ("), said
    assert said.endswith("), over pacing"), said
    assert tablet.errors() == []


@pytest.mark.parametrize("width,height", [(768, 1024), (390, 844)], ids=["tablet", "phone"])
def test_the_time_chosen_reads_whole_in_the_closed_select(
    harbour: ServerProcess, browser: Open, width: int, height: int
) -> None:
    """The Time field, closed, shows the option chosen whole ("20:00 (2 open, over
    pacing)"), in the phone booking and in Change…, on a tablet and on a phone: the host
    reads what is about to be booked without opening the list again."""

    _pace_full(harbour, "20:00")
    body = {"party_size": 2, "start": "2026-12-04T21:30", "name": "Bo"}
    bo = harbour_api(harbour, "POST", "/reservations", body)["reservation_id"]
    tablet = browser(harbour.base, width, height, merchant=HARBOUR, token=HARBOUR_TOKEN)
    form = tablet.el("#book-form")

    def chosen_reads_whole() -> tuple[str, int, int]:
        """The option chosen, the width the select needs to show it (the browser's own
        measure: a copy holding that option alone, at its natural width) and its width."""
        found = tablet.js(
            """const s = document.querySelector('#book-form select[name=start]');
               const copy = s.cloneNode(false);
               const o = s.options[s.selectedIndex];
               copy.append(new Option(o.text, o.value));
               Object.assign(copy.style, {width: 'auto', position: 'absolute',
                                          visibility: 'hidden', left: '0', top: '0'});
               s.parentNode.append(copy);
               const need = copy.getBoundingClientRect().width;
               copy.remove();
               return [o.text, need, s.getBoundingClientRect().width]"""
        )
        return str(found[0]), int(found[1]), int(found[2])

    for heading, shot in (("Phone booking", "book"), ("Change Bo, party of 2 at 21:30", "change")):
        if shot == "change":
            row = f'#reservations [data-reservation="{bo}"]'
            tablet.js("document.querySelector(arguments[0]).scrollIntoView({block: 'center'})", row)
            tablet.tap_row(row, "Change…")
        tablet.wait(lambda heading=heading: tablet.text("#book-h") == heading, message=heading)
        tablet.pick_time("2026-12-04T20:00")
        text, need, has = chosen_reads_whole()
        assert text == "20:00 (2 open, over pacing)", text
        tablet.js("arguments[0].scrollIntoView({block: 'center'})", form)
        tablet.el("#book-form").screenshot(str(tablet.artefacts / f"time-{shot}-{width}.png"))
        assert need <= has, (shot, need, has)
    assert tablet.errors() == []


@pytest.mark.parametrize("width", [390, 360, 320], ids=["phone", "narrow-phone", "narrowest-phone"])
def test_the_phone_booking_reads_whole_on_a_phone(
    tmp_path: Path, browser: Open, width: int
) -> None:
    """On a phone 390 or 360 px wide, with a long restaurant name: the bar's name, clock,
    live sign and Sign out stay on screen side by side; the Time, closed, reads the longest
    option the form makes whole ("00:30 (12 open, over pacing)": a closed select cannot
    wrap); the heading's day ("Phone booking on Tue 8 Dec") is never split across two
    lines; the sticky bar stays one line (the name cut, whole in its tooltip); and each
    table's seats read on one line."""
    config = tmp_path / "harbour.toml"
    config.write_text(
        (SAMPLES / "harbour.toml")
        .read_text(encoding="utf-8")
        .replace('name = "The Harbour Room"', 'name = "The Harbour Room & Oyster Bar, Dublin"'),
        encoding="utf-8",
    )
    settings = tmp_path / "server.toml"
    settings.write_text(
        SETTINGS.read_text(encoding="utf-8")
        + f'\n[[hosts]]\nmerchant_id = "{HARBOUR}"\ntoken = "{HARBOUR_TOKEN}"\n',
        encoding="utf-8",
    )
    server = start_server(tmp_path / "harbour.db", NOW, settings=settings, configs=(config,))
    try:
        tablet = browser(server.base, width, 780, merchant=HARBOUR, token=HARBOUR_TOKEN)
        assert tablet.text("#title") == "The Harbour Room & Oyster Bar, Dublin"
        tablet.js(
            "const d = document.querySelector('#book-form [name=day]');"
            " d.value = '2026-12-08'; d.dispatchEvent(new Event('change'));"
        )
        tablet.wait(lambda: tablet.text("#book-h") == "Phone booking on Tue 8 Dec")
        tablet.js("document.getElementById('book-h').scrollIntoView({block: 'start'})")
        found = tablet.js(
            """const vw = document.documentElement.clientWidth;
               const bar = ['title', 'clock', 'live', 'signout'].map(id =>
                 document.getElementById(id).getBoundingClientRect());
               const apart = bar.every((a, i) => bar.every((b, j) => i === j ||
                 a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top));
               const s = document.querySelector('#book-form select[name=start]');
               const copy = s.cloneNode(false);
               copy.append(new Option('00:30 (12 open, over pacing)', 'x'));
               Object.assign(copy.style, {width: 'auto', position: 'absolute',
                                          visibility: 'hidden', left: '0', top: '0'});
               s.parentNode.append(copy);
               const need = copy.getBoundingClientRect().width;
               copy.remove();
               const walk = document.createTreeWalker(document.getElementById('book-h'),
                                                      NodeFilter.SHOW_TEXT);
               let lines = 0;
               while (walk.nextNode()) {
                 const at = walk.currentNode.data.indexOf('Tue 8 Dec');
                 if (at < 0) continue;
                 const range = document.createRange();
                 range.setStart(walk.currentNode, at);
                 range.setEnd(walk.currentNode, at + 9);
                 lines = new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
               }
               return [document.documentElement.scrollWidth <= vw,
                       bar.every(r => r.left >= 0 && r.right <= vw), apart,
                       need, s.getBoundingClientRect().width, lines,
                       document.querySelector('header.bar').getBoundingClientRect().height,
                       new Set(bar.slice(1).map(r => Math.round(r.top + r.height / 2))).size,
                       document.getElementById('title').title]"""
        )
        # Each table's seats read on one line, its number first ("6 ●●●●●●"): a narrow card
        # wrapped the dots of a 6-top into a row of 4 and a row of 2.
        seats = tablet.js(
            """return [...document.querySelectorAll('#floor .seats')].map(e => {
                 const range = document.createRange();
                 range.selectNodeContents(e);
                 const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
                 return [e.textContent, tops.size];
               })"""
        )
        assert all(n == 1 and text.split(" ")[0].isdigit() for text, n in seats), seats
        fits, on_screen, apart, need, has, lines, bar_height, rows, whole = found
        tablet.el("#book-form").screenshot(str(tablet.artefacts / f"book-form-{width}.png"))
        tablet.shot(f"long-name-{width}")
        assert fits and on_screen and apart, found
        assert need <= has, (need, has)
        assert lines == 1, "the day is split across lines"
        # The sticky bar is one line (two covered 109 px of the screen for good), the name
        # cut if need be and whole in its tooltip.
        assert bar_height <= 64 and rows == 1, (bar_height, rows)
        assert whole == "The Harbour Room & Oyster Bar, Dublin"
        assert tablet.errors() == []
    finally:
        server.stop()


# -- acting once ----------------------------------------------------------------------------


def test_a_party_is_taken_off_the_waitlist_only_once_the_host_says_so(
    server: ServerProcess, browser: Open
) -> None:
    """Left sits beside Seat… and cannot be undone: asked first; no keeps Zed waiting."""

    for size, pid in ((2, "wu"), (4, "xi"), (2, "yan"), (4, "vi"), (6, "kit"), (4, "lu")):
        api(server, "POST", "/walk-ins", {"size": size, "name": pid.title(), "party_id": pid})
    api(server, "POST", "/walk-ins", {"size": 4, "name": "Zed", "party_id": "zed"})
    tablet = browser(server.base)
    row = '#queue [data-party="zed"]'
    tablet.wait(lambda: "Zed" in tablet.text("#queue"), message="Zed waiting")
    tablet.tap_row(row, "Left")
    assert _confirm(tablet, accept=False) == "Take Zed, party of 4 off the waitlist (they left)?"
    assert [p["party_id"] for p in api(server, "GET", "/floor")["queue"]][-1] == "zed"
    said = tablet.banner_after(lambda: (tablet.tap_row(row, "Left"), _confirm(tablet, True)))
    assert said == "Zed, party of 4 left the waitlist", said
    assert "zed" not in [p["party_id"] for p in api(server, "GET", "/floor")["queue"]]
    assert tablet.errors() == []


def test_a_walk_in_added_as_the_connection_drops_is_said_once_added(
    server: ServerProcess, browser: Open
) -> None:
    """The walk-in is added, and the floor read for its quote does not come back (the
    connection drops): its place is said all the same, so the host does not add the party
    again after a tap that said nothing."""
    for size, pid in ((4, "al"), (2, "bea"), (6, "cam"), (2, "dee"), (4, "ed"), (4, "flo")):
        api(server, "POST", "/walk-ins", {"size": size, "party_id": pid, "name": pid.title()})
    tablet = browser(server.base)
    tablet.driver.execute_cdp_cmd("Network.enable", {})
    tablet.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/floor*"]})
    assert tablet.walk_in(2, "Gil") == "Gil, party of 2: waitlist, place 1"
    assert [p["name"] for p in api(server, "GET", "/floor")["queue"]] == ["Gil"]


def test_a_walk_in_whose_answer_was_lost_is_added_once_when_tapped_again(
    server: ServerProcess, browser: Open
) -> None:
    """The Wi-Fi drops as the host adds Gil's couple: the request reaches the server and
    the answers are lost (every retry too), and the page says it cannot reach the server.
    Back online, the host taps Add walk-in again: Gil was put on the waitlist twice (a new
    id and key); now the same request is sent again and the server answers it once."""
    for size, pid in ((4, "al"), (2, "bea"), (6, "cam"), (2, "dee"), (4, "ed"), (4, "flo")):
        api(server, "POST", "/walk-ins", {"size": size, "party_id": pid, "name": pid.title()})
    tablet = browser(server.base)
    tablet.js(
        """const real = window.fetch;
           window.fetch = async (url, init) => {
             const answer = await real(url, init);
             if (String(url).endsWith('/walk-ins')) throw new TypeError('Failed to fetch');
             return answer;
           };
           window.restoreFetch = () => { window.fetch = real; };"""
    )
    said = tablet.walk_in(2, "Gil")
    assert said == "The tablet cannot reach the server. Try again.", said
    tablet.js("window.restoreFetch()")
    form = tablet.el("#walkin-form")
    again = tablet.banner_after(lambda: form.find_element("css selector", "button").click())
    assert again == "Gil, party of 2: waitlist, place 1 — quote 23 min", again
    assert [p["name"] for p in api(server, "GET", "/floor")["queue"]] == ["Gil"]
    assert tablet.errors() == []


def test_a_phone_booking_whose_answer_was_lost_is_made_once_when_booked_again(
    server: ServerProcess, browser: Open
) -> None:
    """Ann phones for 20:00; the host taps Book as the Wi-Fi drops: the booking is made and
    every answer lost, the page says it cannot reach the server. Back online, Book again
    (the form as it was) booked Ann twice; now it is the same request, answered once."""
    tablet = browser(server.base)
    form = tablet.el("#book-form")
    for field, value in (("name", "Ann"), ("phone", "+44 20 7946 0011")):
        form.find_element("name", field).send_keys(value)
    tablet.pick_time("2026-12-04T20:00")
    tablet.js(
        """const real = window.fetch;
           window.fetch = async (url, init) => {
             const answer = await real(url, init);
             if (String(url).endsWith('/reservations') && init && init.method === 'POST')
               throw new TypeError('Failed to fetch');
             return answer;
           };
           window.restoreFetch = () => { window.fetch = real; };"""
    )
    submit = "#book-form button[type=submit]"
    said = tablet.banner_after(lambda: tablet.el(submit).click())
    assert said == "The tablet cannot reach the server. Try again.", said
    tablet.js("window.restoreFetch()")
    again = tablet.banner_after(lambda: tablet.el(submit).click())
    assert again.startswith("Booked Ann, party of 2, at 20:00"), again
    rows = api(server, "GET", "/reservations")["reservations"]
    assert [r["name"] for r in rows if r["status"] == "booked"] == ["Ann"], rows
    assert tablet.errors() == []


@pytest.mark.parametrize("label", ["Check in", "Cancel"])
def test_a_check_in_or_cancel_whose_answer_was_lost_says_what_it_did_when_tapped_again(
    server: ServerProcess, browser: Open, label: str
) -> None:
    """The Wi-Fi drops as the host taps Check in (or Cancel) on Flo's row: the request
    reaches the server, which does it, and the answers are lost (every retry too). The host
    taps the row's button again, as drawn when the page was last current: it went under a
    new key and said 'The booking of Flo, party of 2 is already seated' ('was cancelled
    meanwhile (on another tablet or online)'), untrue of this tablet's own tap. Now it goes
    again under the same key and says what the first tap did."""
    flo = _book(server, 2, "18:15", "Flo")  # held from 18:00: checked in now
    unit = next(r["unit"] for r in api(server, "GET", "/reservations")["reservations"])
    tablet = browser(server.base)
    tablet.js("window.confirm = () => true")  # the host says yes to 'Cancel the booking…?'
    path = "/check-in" if label == "Check in" else "/cancel"
    tablet.js(
        """const [path, id, label] = arguments;
           const real = window.fetch;
           window.fetch = async (url, init) => {
             const answer = await real(url, init);
             if (String(url).endsWith(path)) throw new TypeError('Failed to fetch');
             return answer;
           };
           window.restoreFetch = () => { window.fetch = real; };
           window.held = [...document.querySelectorAll(`[data-reservation="${id}"] button`)]
             .find((b) => b.textContent === label);""",
        path, flo, label,
    )  # fmt: skip
    said = tablet.banner_after(lambda: tablet.js("window.held.click()"))
    assert said == "The tablet cannot reach the server. Try again.", said
    status = "seated" if label == "Check in" else "cancelled"
    assert [r["status"] for r in api(server, "GET", "/reservations")["reservations"]] == [status]
    tablet.js("window.restoreFetch()")
    again = tablet.banner_after(lambda: tablet.js("window.held.click()"))  # the row as drawn
    done = f"Seat Flo, party of 2 at {unit}" if label == "Check in" else (
        "Flo, party of 2 at 18:15 cancelled"
    )  # fmt: skip
    assert again == done, again
    assert tablet.errors() == []


def test_the_walk_in_size_goes_up_to_the_restaurants_largest_party(
    server: ServerProcess, browser: Open
) -> None:
    """Marlowe's seats parties of at most 10 (max_party_size). The walk-in Size allowed up
    to 20: the host typed 12 and tapped Add walk-in. Now the field's max is the restaurant's
    and its message says so; 12 is not sent, 10 is (at T1+T3 joined)."""
    tablet = browser(server.base)
    form = tablet.el("#walkin-form")
    box = form.find_element("name", "size")
    box.clear()
    box.send_keys("12")
    form.find_element("css selector", "button").click()
    read = (
        "const f = document.getElementById(arguments[0]);"
        " return [f.size.max, f.size.validationMessage, f.checkValidity(),"
        " document.getElementById('banner').hidden]"
    )
    assert tablet.js(read, "walkin-form") == [
        "10", "Marlowe's Kitchen seats parties of at most 10.", False, True,
    ], tablet.js(read, "walkin-form")  # fmt: skip
    assert api(server, "GET", "/floor")["queue"] == []
    said = tablet.walk_in(10, "Tess")
    assert said == "Seat Tess, party of 10 at T1+T3", said  # the combined tables
    book = tablet.js(read, "book-form")
    assert book[:3] == ["10", "", True], book  # the phone booking's Size: the same limit
    assert tablet.errors() == []


def test_a_double_tap_acts_once(server: ServerProcess, browser: Open) -> None:
    tablet = browser(server.base)
    form = tablet.el("#walkin-form")
    form.find_element("name", "size").clear()
    form.find_element("name", "size").send_keys("2")
    form.find_element("name", "name").send_keys("Twice")
    tablet.js("const b = document.querySelector('#walkin-form button'); b.click(); b.click();")
    tablet.wait(lambda: tablet.el("#banner").is_displayed())
    time.sleep(0.5)
    names = [t for t in api(server, "GET", "/board")["result"]["tables"].values() if t != "free"]
    assert len(names) == 1


def test_a_tap_whose_request_is_repeated_with_its_key_acts_once(
    server: ServerProcess, browser: Open
) -> None:
    """The same tap delivered twice (a retry after a lost answer) carries the same
    Idempotency-Key; the server acts once. Needs the server's Idempotency-Key support on
    the host write routes (a separate change): until then the booking is made twice."""
    tablet = browser(server.base)
    tablet.js(
        """const send = window.fetch;
           window.fetch = async (url, init) => {
             if (init && init.method === 'POST') { await send(url, init); }
             return send(url, init);
           };"""
    )
    form = tablet.el("#book-form")
    form.find_element("name", "name").send_keys("Once")
    said = tablet.banner_after(lambda: form.find_element("css selector", "button").click())
    assert said.startswith("Booked Once, party of 2"), said
    booked = [r for r in api(server, "GET", "/reservations")["reservations"] if r["name"] == "Once"]
    assert len(booked) == 1, f"the repeated request booked {len(booked)} times"


def test_a_phone_booking_for_another_day_offers_that_days_open_slots(
    server: ServerProcess, browser: Open
) -> None:
    """The guest phones for next Tuesday: the host picks the day, the form offers that
    day's open times for the size, and the booking lands on that day with its notes."""

    tablet = browser(server.base)
    form = tablet.el("#book-form")
    tablet.js(
        "const d = document.querySelector('#book-form [name=day]');"
        " d.value = '2026-12-08'; d.dispatchEvent(new Event('change'));"
    )
    tablet.wait(
        lambda: "12:00" in tablet.time_options()[0][1],
        message="Tuesday's slots (lunch from 12:00)",
    )
    tablet.pick_time("2026-12-08T19:30")
    form.find_element("name", "name").send_keys("Tue")
    form.find_element("name", "notes").send_keys("window table")
    said = tablet.banner_after(lambda: form.find_element("css selector", "button").click())
    assert said.startswith("Booked Tue, party of 2, at 19:30 on Tue 8 Dec"), said
    rows = api(server, "GET", "/reservations?date=2026-12-08")["reservations"]
    assert [(r["name"], r["notes"], r["start"][11:16]) for r in rows] == [
        ("Tue", "window table", "19:30")
    ]


# -- the screen -----------------------------------------------------------------------------


@pytest.mark.parametrize("width,height", [(768, 1024), (390, 844)], ids=["tablet", "phone"])
def test_the_page_never_scrolls_sideways_and_its_targets_are_large(
    server: ServerProcess, browser: Open, width: int, height: int
) -> None:
    _book(server, 6, "19:30", "Ann-Sophie Featherstonehaugh", "+44 20 7946 0000")
    _book(server, 2, "18:15", "Bo")
    for size, name in ((2, "Al"), (2, "Bea"), (4, "Cam"), (8, "Dee Large Party"), (2, "Ed")):
        api(server, "POST", "/walk-ins", {"size": size, "name": name})
    tablet = browser(server.base, width, height)
    tablet.wait(lambda: "Dee Large Party" in tablet.el("#queue").text)
    tablet.walk_in(2, "Gus")  # the page with a message up
    widths = tablet.js(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert widths[0] <= widths[1], widths
    small = tablet.js(
        """return [...document.querySelectorAll('button, input, select')]
             .filter(e => e.offsetParent !== null)
             .map(e => [e.textContent || e.name, e.getBoundingClientRect().height,
                        e.getBoundingClientRect().width])
             .filter(([, h, w]) => h < 44 || w < 44)"""
    )
    assert small == []
    unlabelled = tablet.js(
        """return [...document.querySelectorAll('input, select')]
             .filter(e => !e.labels || e.labels.length === 0).map(e => e.name)"""
    )
    assert unlabelled == []
    tablet.shot(f"busy-floor-{width}x{height}")
    tablet.js("document.getElementById('banner').hidden = true")
    tablet.press(lambda: tablet.el('#floor [data-table="T1"]'))
    tablet.wait(lambda: tablet.el("#chooser").is_displayed())
    tablet.shot(f"table-menu-{width}x{height}")
    assert tablet.errors() == []


@pytest.mark.parametrize("size", [(1024, 768), (1366, 1024)], ids=["1024", "1366"])
def test_on_a_landscape_tablet_the_phone_booking_is_under_the_floor_not_after_the_bookings(
    server: ServerProcess, browser: Open, size: tuple[int, int]
) -> None:
    """Side by side, the floor's column was empty below the tables and the phone booking
    came after the day's reservations: with twenty bookings it began some 4,000 px down,
    and a caller waited while the host scrolled past them to the form. It now sits under
    the floor, on the first screen, and the reservations run down the other column."""
    made = 0
    for hhmm in ("18:30", "18:45", "19:00", "19:15", "19:30", "19:45", "20:00", "20:15",
                 "20:30", "20:45", "21:00", "21:15", "21:30"):  # fmt: skip
        for party in (2, 4, 2, 6):
            body = {"party_size": party, "start": f"2026-12-04T{hhmm}", "name": GUESTS[made]}
            reply = requests.post(f"{server.base}{HOST}/reservations", json=body, headers=AUTH,
                                  timeout=10)  # fmt: skip
            made += reply.status_code == 200
            if made == 20:
                break
        if made == 20:
            break
    assert made == 20
    tablet = browser(server.base, *size)
    tablet.wait(
        lambda: len(tablet.js("return document.querySelectorAll('#reservations li')")) >= 20
    )
    box = tablet.js(
        "const r = (id) => document.getElementById(id).closest('section').getBoundingClientRect();"
        " return {floor: r('floor').bottom, floorLeft: r('floor').left, book: r('book-h').top,"
        " bookLeft: r('book-h').left, res: r('res-h').left}"
    )
    tablet.shot("landscape-phone-booking")
    assert box["floor"] < box["book"] < size[1] - 100, box  # its heading and first fields
    assert box["bookLeft"] == box["floorLeft"] < box["res"], box
    assert tablet.js("return document.documentElement.scrollWidth") <= size[0]
    assert tablet.errors() == []


@pytest.mark.parametrize("width,height", [(390, 844), (320, 640)], ids=["phone", "narrowest-phone"])
def test_a_long_name_due_next_at_a_table_never_makes_its_row_of_cards_taller(
    server: ServerProcess, browser: Open, width: int, height: int
) -> None:
    """On a phone a table's card is a third of the screen wide. Two rows alike: a couple at
    T1 with Maximilian-Alexander Featherstonehaugh-Worthington's four due next there, a
    couple at T2 with Bartholomew Christopherson's two. The longer name wrapped over six
    lines and the first row of cards stood 36 px taller than the second (367 px against 331
    at 390 wide): now a name is cut with '…' on one line, whole in the line's tooltip and
    on the booking's row."""
    long = "Maximilian-Alexander Featherstonehaugh-Worthington"
    _book(server, 4, "19:00", long)  # T1
    _book(server, 2, "19:15", "Bartholomew Christopherson")  # T2
    for i in range(4):  # T2, T4, T1, T5
        api(server, "POST", "/walk-ins", {"size": 2, "name": f"W{i}", "party_id": f"w{i}"})
    tablet = browser(server.base, width, height)
    tablet.wait(lambda: "next: Bartholomew" in tablet.table("T2"), message="Bartholomew at T2")
    shown = tablet.js(
        """const card = (id) => document.querySelector(`#floor [data-table="${id}"]`);
           const cut = card('T1').querySelector('.next .cut');
           return [card('T1').offsetHeight, card('T2').offsetHeight,
                   card('T1').querySelector('.next').title,
                   Boolean(cut && cut.scrollWidth > cut.clientWidth),
                   card('T1').querySelector('.next').textContent,
                   document.querySelector('#reservations').innerText]"""
    )
    tablet.shot(f"long-name-next-{width}")
    first_row, second_row, tooltip, cut, line, rows = shown
    assert first_row == second_row, (first_row, second_row)
    assert cut and tooltip == f"next: {long} (4) at 19:00", tooltip
    assert line == f"next: {long} (4) at 19:00", line  # the words are all there, read aloud
    assert long in rows
    assert tablet.errors() == []


def test_a_field_brought_into_view_on_a_phone_is_never_under_the_sticky_bar(
    server: ServerProcess, browser: Open
) -> None:
    """On a phone (390x844) the bar at the top stays on screen: a field the browser brings
    into view (focused, as Tab or Shift+Tab does, or the first one a submit finds empty)
    shows whole below it, not under it; nor under the message at the bottom."""
    tablet = browser(server.base, 390, 844)
    tablet.walk_in(2, "Al")  # a message up at the bottom

    def clear_of_the_bars(field: str, above: bool) -> list[float]:
        """Scroll so the field sits under the bar (or partly under the message), focus it: where it
        shows, and where the bar ends and the message starts, read in one script."""
        return [
            float(v)
            for v in tablet.js(
                """const f = document.querySelector(arguments[0]);
                   document.activeElement.blur();  // focus() on a focused field does nothing
                   const y = f.getBoundingClientRect().top + window.scrollY;
                   window.scrollTo(0, arguments[1] ? y - 40 : y - window.innerHeight + 30);
                   f.focus();
                   const r = f.getBoundingClientRect();
                   return [r.top, r.bottom,
                           document.querySelector('header.bar').getBoundingClientRect().bottom,
                           document.getElementById('banner').getBoundingClientRect().top]""",
                field,
                above,
            )
        ]

    for field in ("#book-form [name=notes]", "#book-form [name=size]", "#walkin-form [name=phone]"):
        for above in (True, False):
            top, bottom, bar, banner = clear_of_the_bars(field, above)
            assert top >= bar and bottom <= banner, (field, above, top, bottom, bar, banner)
    tablet.shot("focused-below-the-bar")
    assert tablet.errors() == []


@pytest.mark.parametrize("width,height", [(1024, 768), (390, 844)], ids=["tablet", "phone"])
def test_the_answer_to_a_tap_shows_where_the_host_is(
    server: ServerProcess, browser: Open, width: int, height: int
) -> None:
    """The phone booking form is far down the page: its answer shows on screen, and once
    the page is scrolled to its end the message covers none of it."""
    for size, name in ((2, "Al"), (2, "Bea"), (4, "Cam"), (6, "Dee"), (2, "Ed"), (2, "Flo")):
        api(server, "POST", "/walk-ins", {"size": size, "name": name})
    tablet = browser(server.base, width, height)
    form = tablet.el("#book-form")
    tablet.js("arguments[0].scrollIntoView({block: 'center'})", form)
    form.find_element("name", "name").send_keys("Low")
    said = tablet.banner_after(
        lambda: tablet.press(lambda: form.find_element("css selector", "button[type=submit]"))
    )
    assert said.startswith("Booked Low, party of 2"), said
    box = tablet.js(
        "const r = document.getElementById('banner').getBoundingClientRect();"
        " return [r.top, r.bottom, window.innerHeight]"
    )
    assert box[0] >= 0 and box[1] <= box[2], box
    tablet.shot(f"answer-on-screen-{width}x{height}")
    tablet.js("window.scrollTo(0, document.documentElement.scrollHeight)")
    last, top = tablet.js(
        "const ps = document.querySelectorAll('#stand .panel');"
        " return [ps[ps.length - 1].getBoundingClientRect().bottom,"
        "         document.getElementById('banner').getBoundingClientRect().top]"
    )
    assert last <= top, (last, top)
    assert tablet.errors() == []


def test_signing_out_forgets_the_token(server: ServerProcess, browser: Open) -> None:
    tablet = browser(server.base)
    tablet.driver.refresh()  # remembered: straight to the floor
    tablet.wait(lambda: tablet.el("#floor [data-table]"))
    tablet.el("#signout").click()  # a tap that missed the bar: kept signed in
    question = _confirm(tablet, accept=False)
    assert question == "Sign out of the host stand? The host token is needed to sign in again."
    assert tablet.el("#stand").is_displayed()
    tablet.el("#signout").click()
    _confirm(tablet, accept=True)
    tablet.wait(lambda: tablet.el("#signin").is_displayed())
    tablet.driver.refresh()
    tablet.wait(lambda: tablet.el("#signin").is_displayed())
    tablet.el("#token").send_keys("wrong")
    tablet.el("#signin-form button[type=submit]").click()
    tablet.wait(lambda: "not right" in tablet.el("#signin-error").text)
    tablet.shot("sign-in-refused")


UNREACHABLE = "The tablet cannot reach the server: check its Wi-Fi, then tap Sign in again."


def test_signing_in_while_the_server_cannot_be_reached_says_so_and_works_once_it_can(
    tmp_path: Path, browser: Open
) -> None:
    """Sign in tapped while the server restarts says the tablet cannot reach it (the tap
    said nothing at all); tapped again once it is back, the floor is there. A tablet
    reloaded while the server does not answer shows the sign-in saying so, its saved token
    ready for one tap (it stayed a blank page)."""
    db, port = tmp_path / "hoststand.db", free_port()
    server = start_server(db, NOW, port=port)
    try:
        tablet = browser(server.base, 390, 844)
        tablet.el("#signout").click()
        _confirm(tablet, accept=True)
        tablet.wait(lambda: tablet.el("#signin").is_displayed(), message="signed out")
        server.stop()
        tablet.el("#token").send_keys(TOKEN)
        tablet.el("#signin-form button[type=submit]").click()
        tablet.wait(lambda: tablet.text("#signin-error") == UNREACHABLE, message="unreachable")
        tablet.shot("sign-in-unreachable")
        server = start_server(db, NOW, port=port)
        tablet.el("#signin-form button[type=submit]").click()
        tablet.wait(lambda: tablet.el("#floor [data-table]"), message="the floor drawn")

        # Reloaded, the page comes but the floor does not (the server stops meanwhile).
        tablet.driver.execute_cdp_cmd("Network.enable", {})
        tablet.driver.execute_cdp_cmd(
            "Network.setBlockedURLs", {"urls": ["*/floor*", "*/tablet/restaurants*"]}
        )
        tablet.driver.refresh()
        tablet.wait(lambda: tablet.text("#signin-error") == UNREACHABLE, message="said on load")
        assert tablet.text("#live") == "offline"
        tablet.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        tablet.el("#signin-form button[type=submit]").click()  # the saved token, one tap
        tablet.wait(lambda: tablet.el("#floor [data-table]"), message="the floor drawn again")
        assert [e for e in tablet.errors() if "ERR_BLOCKED" not in e] == []
    finally:
        server.stop()


def test_a_host_token_revoked_during_service_signs_the_tablet_out_saying_what_to_do(
    tmp_path: Path, browser: Open
) -> None:
    """The manager changes the host token and restarts the server: the tablet signs out
    saying the token was refused and that the current one is needed, and its clock no
    longer shows a time that has stopped."""
    db, port = tmp_path / "hoststand.db", free_port()
    server = start_server(db, NOW, port=port)
    try:
        tablet = browser(server.base, 390, 844)
        assert tablet.clock() == "18:00"
        server.stop()
        settings = tmp_path / "server.toml"
        settings.write_text(
            SETTINGS.read_text(encoding="utf-8").replace(TOKEN, "a-new-host-token-for-marlowes"),
            encoding="utf-8",
        )
        server = start_server(db, NOW + timedelta(minutes=5), port=port, settings=settings)
        tablet.wait(lambda: tablet.el("#signin").is_displayed(), message="signed out")
        assert tablet.text("#signin-error") == (
            "The host token was refused (changed or revoked): sign in with the current host token."
        )
        assert tablet.clock() == ""
        assert tablet.text("#live") == "signed out"
        tablet.shot("token-revoked")
    finally:
        server.stop()


# -- the busiest moment of an evening, as a host sees it ------------------------------------

GUESTS = [
    "Okafor", "Lindqvist", "Ní Bhriain", "Featherstonehaugh-Worthington", "Hale", "Moreau",
    "Pellegrini", "Tanaka", "Abernathy", "Szymańska", "Quinn", "Van der Berg", "Yusuf",
    "Castellanos", "Duchamp", "Iversen", "Kowalczyk", "Rahman", "Ellingsen", "Marchetti",
    "Oyelaran", "Bertrand", "Nakamura", "Fitzgerald", "Haddad", "Sørensen",
]  # fmt: skip


def _busy_evening(tmp_path: Path) -> tuple[Path, list[str]]:
    """Friday: at 17:30 a party of 9 sits at T1+T3 and four walk-ins take the rest (the
    two couples' 45 minutes run out at 18:15), then 20 bookings are made for the evening;
    at 18:05 six parties join the waitlist. Returns the database and the bookings' ids."""
    db = tmp_path / "busy.db"
    ids: list[str] = []
    with running_server(db, NOW - timedelta(minutes=30)) as early:
        for pid, size in (("big", 9), ("c1", 2), ("c2", 2), ("f1", 4), ("f2", 4)):
            name = {"big": "Whitcombe-Harrington", "c1": "Adeyemi", "c2": "Brennan"}.get(pid)
            api(
                early,
                "POST",
                "/walk-ins",
                {"size": size, "name": name or pid.upper(), "party_id": pid},
            )
        for hhmm in ("18:30", "18:45", "19:00", "19:15", "19:30", "19:45", "20:00", "20:15",
                     "20:30", "20:45", "21:00", "21:15", "21:30"):  # fmt: skip
            for size in (2, 4, 2, 6):
                if len(ids) == 20:
                    break
                body = {"party_size": size, "start": f"2026-12-04T{hhmm}", "name": GUESTS[len(ids)],
                        "phone": "+44 7700 900" + str(100 + len(ids))}  # fmt: skip
                reply = requests.post(f"{early.base}{HOST}/reservations", json=body,
                                      headers=AUTH, timeout=10)  # fmt: skip
                if reply.status_code == 200:
                    ids.append(reply.json()["reservation_id"])
    assert len(ids) == 20, ids
    with running_server(db, NOW + timedelta(minutes=5)) as later:
        for i, size in enumerate((2, 4, 2, 6, 3, 2)):
            api(
                later,
                "POST",
                "/walk-ins",
                {"size": size, "name": f"{GUESTS[20 + i]}", "party_id": f"q{i}"},
            )
    return db, ids


@pytest.mark.parametrize("size", [(768, 1024), (390, 844)], ids=["tablet", "phone"])
def test_the_busiest_moment_of_an_evening_reads_right(
    tmp_path: Path, browser: Open, size: tuple[int, int]
) -> None:
    """18:20 on a Friday: 20 bookings, 6 parties waiting, 2 couples over their turn, a party
    of 9 at T1+T3. Screenshots for a look, and what a host reads first checked."""
    db, ids = _busy_evening(tmp_path)
    with running_server(db, NOW + timedelta(minutes=20)) as server:
        api(server, "POST", f"/reservations/{ids[0]}/arrive")  # the 18:30 couple is here
        tablet = browser(server.base, *size)
        tablet.wait(lambda: tablet.clock() == "18:20", message="18:20")
        tablet.shot("busiest-moment")
        cards = tablet.js(
            "return Array.from(document.querySelectorAll('#floor [data-table]'), b =>"
            " [b.dataset.table, b.className, (b.querySelector('.next') || {}).className || null,"
            " (b.querySelector('.next') || {}).textContent || null])"
        )
        # Both couples over their turn, their tables' next guests held for from 18:15: amber,
        # whether at the door already (Okafor) or not yet (Lindqvist, who may come in now).
        assert cards == [
            ["T1+T3", "table seated joined", "next", "next: Tanaka (4) at 19:30"],
            ["T2", "table seated over", "next tight",
             "next: Okafor (2) at 18:30 · here 0 min, waiting"],
            ["T4", "table seated over", "next tight",
             "next: Lindqvist (2) at 18:30 · held from 18:15"],
            ["T5", "table seated", "next", "next: Ní Bhriain (2) at 18:45"],
            ["T6", "table seated", "next", "next: Featherstonehaugh-Worthington (4) at 18:45"],
        ], cards  # fmt: skip
        tablet.press(lambda: tablet.row_button('#queue [data-party="q0"]', "Seat…"))
        tablet.wait(lambda: tablet.el("#chooser").is_displayed(), message="the chooser")
        tablet.shot("busiest-seat-menu")
        tablet.el("#chooser-cancel").click()
        tablet.js("window.confirm = () => true; window.scrollTo(0, 0)")
        # Brennan's and then Adeyemi's couples leave: neither table goes to the waitlist, each
        # is held for its booking, and Okafor's couple stands at the door for T2. It said
        # "T2 is free. Nobody in line is due it yet.", read as a table for anybody.
        said = tablet.tap_table("T4", "free")
        assert said == "T4 is free, held for Lindqvist, party of 2 at 18:30.", said
        said = tablet.tap_table("T2", "free")
        assert (
            said == "T2 is free, held for Okafor, party of 2 (18:30), who are here: check them in."
        )
        tablet.js("window.scrollTo(0, 0)")
        tablet.driver.save_screenshot(str(tablet.artefacts / "busiest-after-two-frees.png"))
        tablet.el("#banner-close").click()  # OK
        tablet.tap_row(f'[data-reservation="{ids[0]}"]', "Check in")
        tablet.wait(lambda: "Okafor" in tablet.table("T2") and "Held" not in tablet.table("T2"))
        tablet.js("window.scrollTo(0, 0)")
        said = tablet.tap_table("T5", "free")
        # Ní Bhriain's 18:45 is not held yet, and the waitlist's meals would run past it.
        assert said == "T5 is free. Nobody in line is due it yet.", said
        tablet.js("window.scrollTo(0, 0)")
        tablet.driver.save_screenshot(str(tablet.artefacts / "busiest-after-check-in.png"))
        full = int(tablet.js("return document.documentElement.scrollHeight"))
        for i, y in enumerate(range(0, full, size[1] - 100)):  # screen by screen, as seen
            tablet.js("window.scrollTo(0, arguments[0])", y)
            tablet.driver.save_screenshot(str(tablet.artefacts / f"busiest-moment-screen-{i}.png"))
        assert tablet.errors() == []


def test_a_walk_in_to_a_full_waitlist_is_told_it_is_full_and_how_many_wait(
    tmp_path: Path, browser: Open
) -> None:
    """Marlowe's with `max_waitlist = 1`, every table taken and one party waiting: the host
    adds another from the form. It is refused, the banner saying so in the server's words
    (how many wait, the limit), and the waitlist is as it was."""
    config = tmp_path / "marlowes.toml"
    text = (SAMPLES / "marlowes.toml").read_text(encoding="utf-8")
    config.write_text(
        text.replace("max_party_size = 10\n", "max_party_size = 10\nmax_waitlist = 1\n"),
        encoding="utf-8",
    )
    server = start_server(tmp_path / "hoststand.db", configs=[config])
    try:
        for i, size in enumerate((2, 2, 2, 6, 4, 4, 4)):  # every table taken, then one waits
            api(server, "POST", "/walk-ins", {"size": size, "name": f"N{i}", "party_id": f"n{i}"})
        tablet = browser(server.base)
        said = tablet.walk_in(4, "Late")
        assert said.startswith("Late, party of 4 cannot join: the waitlist is full: 1 party"), said
        assert "1 at most" in said, said
        assert [p["party_id"] for p in api(server, "GET", "/floor")["queue"]] == ["n6"]
        assert tablet.errors() == []
    finally:
        server.stop()


# -- the host's tablet on a busy Saturday: the last loose ends ------------------------------


def test_a_busy_check_in_says_which_free_tables_are_booked_before_the_guests_would_finish(
    server: ServerProcess, browser: Open
) -> None:
    """18:00: Ann's four are at the door for 18:15 and Wu still sits at Ann's T1. T5 is free
    but Cy's four are due there at 18:45, before Ann's party would be done: the message said
    "free now for them: T5, T6, T3" while Seat… below drew T5 as booked before they would
    finish. The message names T5 apart, with Cy's time."""
    ann = _book(server, 4, "18:15", "Ann")  # T1
    _book(server, 4, "18:45", "Cy")  # T5
    api(server, "POST", "/walk-ins", {"size": 2, "party_id": "W", "name": "Wu"})
    api(server, "POST", "/parties/W/move", {"unit": "T1"})
    tablet = browser(server.base)
    said = tablet.banner_after(lambda: tablet.tap_row(f'[data-reservation="{ann}"]', "Check in"))
    tablet.shot("busy-check-in-booked-tables")
    assert "free now for them: T6, T3" in said, said  # T2 and T4 are 2-tops
    assert "free but booked before they would finish: T5 at 18:45" in said, said
    tablet.wait(lambda: tablet.el("#chooser").is_displayed(), message="the menu")
    menu = tablet.js(
        "return Array.from(document.querySelectorAll('#chooser-options button'),"
        " b => [b.dataset.unit, b.classList.contains('fits')])"
    )
    assert ["T5", False] in menu and ["T6", True] in menu, menu  # the menu agrees
    assert tablet.errors() == []


def test_a_held_table_whose_guests_are_late_says_how_late_on_its_card(
    tmp_path: Path, browser: Open
) -> None:
    """18:26: Tanaka's couple, booked at 18:15, are not here; their table is held until
    18:30. The card read "18:15 · until 18:30" while the row said "11 min late": the card
    says it too."""
    db = tmp_path / "late.db"
    with running_server(db, NOW - timedelta(hours=1)) as earlier:
        tanaka = _book(earlier, 2, "18:15", "Tanaka")
    with running_server(db, NOW + timedelta(minutes=26)) as server:
        unit = next(r["unit"] for r in api(server, "GET", "/reservations")["reservations"]
                    if r["reservation_id"] == tanaka)  # fmt: skip
        tablet = browser(server.base)
        tablet.wait(lambda: "Tanaka" in tablet.table(unit), message="Tanaka's card")
        card = tablet.text(f'#floor [data-table="{unit}"] .when')
        tablet.shot("held-late")
        assert card == "18:15 · 11 min late · until 18:30", card
        assert tablet.text(f'#reservations [data-reservation="{tanaka}"] .late') == "11 min late"
        assert tablet.errors() == []


def test_on_a_phone_the_phone_booking_is_one_tap_from_the_top(
    server: ServerProcess, browser: Open
) -> None:
    """390x844 with the evening's bookings (every one the tables take, 24): the phone
    booking comes after them all, some 5,000 px down (6,000 with thirty), and a caller
    waited while the host scrolled. "Phone booking" at the top of the
    page takes the host to the form, its Size ready to type in; the panels keep their
    order."""
    made = 0
    for hhmm in ("18:30", "18:45", "19:00", "19:15", "19:30", "19:45", "20:00", "20:15",
                 "20:30", "20:45", "21:00", "21:15", "21:30"):  # fmt: skip
        for size in (2, 4, 2, 6, 2):
            if made < 30:  # as many as the evening's tables take
                body = {"party_size": size, "start": f"2026-12-04T{hhmm}", "name": f"G{made}",
                        "over_pacing": True}  # fmt: skip
                reply = requests.post(f"{server.base}{HOST}/reservations", json=body,
                                      headers=AUTH, timeout=10)  # fmt: skip
                made += reply.status_code == 200
    assert made >= 24
    tablet = browser(server.base, 390, 844)
    tablet.wait(
        lambda: len(tablet.js("return document.querySelectorAll('#reservations li')")) >= made
    )
    order = tablet.js("return Array.from(document.querySelectorAll('#stand .panel h2'), h => h.id)")
    assert order == ["floor-h", "walkin-h", "queue-h", "res-h", "book-h"], order
    start = tablet.js(
        "return [document.getElementById('book-h').getBoundingClientRect().top,"
        " document.getElementById('to-book').getBoundingClientRect().bottom]"
    )
    assert start[0] > 3500 and start[1] < 300, start  # far down; the way there on the first screen
    tablet.press(lambda: tablet.el("#to-book"))
    tablet.wait(
        lambda: tablet.js(
            "const h = document.getElementById('book-h').getBoundingClientRect();"
            " const bar = document.querySelector('header.bar').getBoundingClientRect().bottom;"
            " return document.activeElement === document.querySelector('#book-form [name=size]')"
            "   && h.top >= bar && h.bottom < window.innerHeight / 2"
        ),
        message="the phone booking on screen, its Size focused",
    )
    tablet.shot("phone-booking-at-once")
    assert tablet.errors() == []


@pytest.mark.parametrize("width,height", [(1024, 768), (390, 844)], ids=["tablet", "phone"])
def test_the_answer_to_a_tap_never_covers_the_row_it_tells_the_host_to_use(
    server: ServerProcess, browser: Open, width: int, height: int
) -> None:
    """Ben (18:30) is at the door at 18:00, his row at the bottom of the screen: Check in
    says it is too early and to tap Arrived or Seat… on that row, and the message came up
    over the row's Arrived and Seat…. The row now shows above the message."""
    for i, hhmm in enumerate(("18:15", "18:15", "18:45", "19:00", "19:15", "19:30")):
        _book(server, 2, hhmm, f"G{i}")
    ben = _book(server, 4, "18:30", "Ben")
    tablet = browser(server.base, width, height)
    row = f'#reservations [data-reservation="{ben}"]'
    tablet.wait(lambda: tablet.el(row), message="Ben's row")
    tablet.js(  # the row's top 90 px above the bottom of the screen
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        " window.scrollBy(0, r.top - (window.innerHeight - 90))",
        row,
    )
    said = tablet.banner_after(lambda: tablet.tap_row(row, "Check in"))
    assert "Tap Arrived to note they are here, or Seat…" in said, said

    def clear() -> bool:
        top, bottom, bar, message = tablet.js(
            "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
            " return [r.top, r.bottom,"
            " document.querySelector('header.bar').getBoundingClientRect().bottom,"
            " document.getElementById('banner').getBoundingClientRect().top]",
            row,
        )
        return bool(top >= bar and bottom <= message)

    tablet.wait(clear, message="Ben's row above the message")
    tablet.shot(f"answer-clear-of-its-row-{width}x{height}")
    said = tablet.banner_after(lambda: tablet.tap_row(row, "Arrived"))  # reachable: tapped
    assert said == "Ben, party of 4 marked arrived: their table is held for them from 18:15"
    assert tablet.errors() == []


# -- what a partner or a guest may name a booking -------------------------------------------

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def _partner_booking(server: ServerProcess, event_id: str, hhmm: str, **data: Any) -> str:
    start = f"2026-12-04T{hhmm}:00+00:00"
    event = booking_event(event_id, 2, start, **data)
    reply = signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event)
    assert reply.status_code == 200, reply.text
    return str(reply.json()["reservation_id"])


def _shown_everywhere(tablet: Tablet) -> str:
    """All the page shows: its text, and the titles and labels read out or shown on hover."""
    return str(
        tablet.js(
            "return [document.body.textContent, ...[...document.querySelectorAll("
            "'[title],[aria-label]')].flatMap(e => [e.title, e.getAttribute('aria-label')])]"
            ".join('\\n')"
        )
    )


def test_markup_in_a_partners_booking_or_a_walk_ins_name_is_shown_as_text_and_never_run(
    server: ServerProcess, browser: Open
) -> None:
    img = "<img src=x onerror=document.title='pwned'>"
    svg = "\"><svg onload=document.title='pwned'>"
    bk = _partner_booking(
        server, "ev-markup", "18:30", name=img, phone="+44 20 7946 0001", notes=svg
    )
    api(server, "POST", "/walk-ins", {"size": 2, "name": "javascript:alert(1)"})
    tablet = browser(server.base)
    row = f'#reservations [data-reservation="{bk}"]'
    tablet.wait(lambda: img in tablet.text(row, content=True), message="the booking's row")
    assert svg in tablet.text(row, content=True)
    assert "javascript:alert(1), party of 2" in _shown_everywhere(tablet)
    assert tablet.js(
        "return [document.title, document.querySelectorAll('img, svg, a, [onerror], [onload]')"
        ".length]"
    ) == ["Host stand", 0]
    assert tablet.errors() == []  # a handler the CSP refused would be logged here


def test_a_guests_name_cannot_turn_what_the_tablet_shows_back_to_front(
    server: ServerProcess, browser: Open
) -> None:
    # Drawn right to left, this name made the row read "nnA, party of 10" for a party of
    # 2, and the phone number after it "2000 6497 02 44+".
    bk = _partner_booking(
        server,
        "ev-bidi",
        "18:15",
        name="\u202e01 fo ytrap ,Ann",
        phone="+44 20 7946 0002",
        notes="\u2067\u202enut on",
    )
    tablet = browser(server.base)
    row = f'#reservations [data-reservation="{bk}"]'
    tablet.wait(lambda: "Ann" in tablet.text(row, content=True), message="the booking's row")
    # Held for its guests from 18:00: the table says who, and how many.
    tablet.wait(lambda: "Ann" in tablet.text("#floor", content=True), message="its table")
    shown = _shown_everywhere(tablet)
    assert "01 fo ytrap ,Ann, party of 2" in shown
    assert [c for c in shown if c in BIDI_CONTROLS] == []
    assert tablet.errors() == []
