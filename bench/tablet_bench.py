"""The host's tablet, measured: first load (time and bytes) and how long an action on one
tablet takes to appear on another, in headless Chromium against a real server on 127.0.0.1.

    .venv/bin/python bench/tablet_bench.py [--actions 20]

Needs /usr/bin/chromium and /usr/bin/chromedriver (Debian: apt-get install chromium
chromium-driver) and selenium. Prints its figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.server_process import HOST_TOKENS, running_server

MERCHANT = "marlowes-kitchen"


def chromium(profile: str, width: int, height: int):  # type: ignore[no-untyped-def]
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", f"--user-data-dir={profile}", f"--window-size={width},{height}",
    ):  # fmt: skip
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def wait(driver, script: str, timeout: float = 10.0) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    while not driver.execute_script(script):
        if time.perf_counter() - start > timeout:
            raise TimeoutError(script)
        time.sleep(0.005)
    return time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actions", type=int, default=20)
    args = parser.parse_args()
    token = HOST_TOKENS[MERCHANT]
    with tempfile.TemporaryDirectory() as tmp, running_server(Path(tmp) / "bench.db") as server:
        page = f"{server.base}/host/{MERCHANT}"
        one = chromium(f"{tmp}/one", 768, 1024)
        two = chromium(f"{tmp}/two", 390, 844)
        try:
            # Sign in once on each (the token is remembered), then time a cold load.
            for d in (one, two):
                d.get(page)
                wait(d, "return !!document.getElementById('token')")
                d.execute_script(
                    "localStorage.setItem('hoststand.tablet', JSON.stringify("
                    f"{{merchant: '{MERCHANT}', tokens: {{'{MERCHANT}': '{token}'}}}}))"
                )
            loads, sizes = [], []
            for _ in range(5):
                one.execute_cdp_cmd("Network.enable", {})
                one.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
                start = time.perf_counter()
                one.get(page)
                drawn = wait(one, "return !!document.querySelector('#floor [data-table]')")
                loads.append((drawn - start) * 1000)
                sizes.append(
                    one.execute_script(
                        "return performance.getEntries().reduce((n, e) =>"
                        " n + (e.transferSize || 0), 0)"
                    )
                )
            two.get(page)
            wait(two, "return document.getElementById('live').textContent === 'live'")
            delays = []
            for i in range(args.actions):
                name = f"Bench{i}"
                time.sleep(random.uniform(0, 0.5))  # not in step with the stream's checks
                one.execute_script(
                    "const f = document.getElementById('walkin-form');"
                    "f.size.value = '2'; f.name.value = arguments[0];"
                    "f.querySelector('button').click();",
                    name,
                )
                start = time.perf_counter()
                seen = wait(two, f"return document.body.textContent.includes('{name},')")
                delays.append((seen - start) * 1000)
                if i % 4 == 3:  # keep the floor from filling up: free every table
                    for t in ("T1", "T2", "T3", "T4", "T5", "T6"):
                        one.execute_script(
                            "return fetch(arguments[0], {method: 'POST', headers:"
                            " {Authorization: 'Bearer ' + arguments[1]}})",
                            f"{server.base}/api/v1/restaurants/{MERCHANT}/tables/{t}/free",
                            token,
                        )
        finally:
            one.quit()
            two.quit()
    delays.sort()
    print(
        f"first load, cache off, to the floor drawn: median {statistics.median(loads):.0f} ms"
        f" (min {min(loads):.0f}, max {max(loads):.0f}) over {len(loads)} loads"
    )
    print(f"first load bytes transferred (page, script, style, floor document): {sizes[-1]}")
    print(
        f"action on one tablet to seen on the other: median {statistics.median(delays):.0f} ms,"
        f" p90 {delays[int(len(delays) * 0.9) - 1]:.0f} ms, max {delays[-1]:.0f} ms"
        f" over {len(delays)} walk-ins"
    )


if __name__ == "__main__":
    main()
