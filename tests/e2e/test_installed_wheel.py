"""hoststand installed from its wheel, run outside any checkout: what the code reads at run
time beside itself (the feed schemas, the tablet's page) must travel in the wheel.

The wheel is built offline by the backend already in this venv (--no-build-isolation), from
a copy of the sources so the build leaves nothing in the checkout, and installed into a new
venv that borrows this one's dependencies through a .pth line (a plain directory on
sys.path: this venv's own .pth files, the editable install's among them, are not run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
import venv
from pathlib import Path

import pytest
import requests

from tests.integration.server_process import ServerProcess, start_server

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
# What `pip wheel` reads: the project file, the readme it names, and the packages (the
# top-level schemas/ too, as the repository has it).
SOURCES = ("pyproject.toml", "README.md", "engine", "store", "feed", "schemas")
NOW = "2026-12-04T12:00:00Z"
TIMEOUT = 10
STEP_SECONDS = 120  # a build or an install that takes longer has hung


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # Nothing from the caller may point the new install back at the checkout or a database.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOSTSTAND_", "PYTHON"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=STEP_SECONDS
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args} exited {done.returncode}:\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ directory of a new venv holding hoststand from a freshly built wheel."""
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir() and not (REPO / name).is_symlink():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
            shutil.copytree(REPO / name, source / name, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(REPO / name, source / name, follow_symlinks=False)
    wheels = root / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps"]
    ok(run([*build, "--no-build-isolation", "--no-index", "-w", str(wheels)], root))
    (wheel,) = wheels.glob("hoststand-*.whl")

    env_dir = root / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    purelib = ok(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], root)
    )
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (Path(purelib.strip()) / "borrowed.pth").write_text("\n".join(sorted(ours)) + "\n")
    ok(run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], root))

    where = ok(run([str(python), "-c", "import feed; print(feed.__file__)"], root)).strip()
    assert Path(where).is_relative_to(env_dir), f"feed imported from {where}, not the wheel"
    return env_dir / "bin"


def staged_or_failed(out: Path, server: ServerProcess) -> str:
    """Wait for the start-up export's availability file, or its failure in the log."""
    deadline = time.monotonic() + STEP_SECONDS
    while time.monotonic() < deadline:
        if any(p.name.startswith("availability") for p in out.rglob("*") if p.is_file()):
            return "staged"
        if "export failed" in server.output() or server.process.poll() is not None:
            return "failed"
        time.sleep(0.05)
    return "neither"


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A directory that is not the checkout, with the sample files copied in."""
    for name in ("marlowes.toml", "google-floorplan.toml", "server.toml"):
        shutil.copy2(SAMPLES / name, tmp_path / name)
    return tmp_path


@pytest.mark.slow
def test_an_installed_hoststand_exports_feeds_validated_against_the_schemas_it_ships(
    installed: Path, elsewhere: Path
) -> None:
    hoststand = str(installed / "hoststand")
    args = [hoststand, "--now", NOW, "feed", "export", "--config", "marlowes.toml"]
    ok(run([*args, "--out", "out", "--days", "2"], elsewhere))
    written = {p.name for p in (elsewhere / "out").rglob("*") if p.is_file()}
    assert any(name.startswith("availability") for name in written), written
    assert any(name.startswith("merchant") for name in written), written


@pytest.mark.slow
def test_an_installed_hoststand_serves_the_tablet_page_and_its_files_from_the_wheel(
    installed: Path, elsewhere: Path
) -> None:
    configs = (elsewhere / "marlowes.toml", elsewhere / "google-floorplan.toml")
    server = start_server(
        elsewhere / "hoststand.db",
        settings=elsewhere / "server.toml",
        configs=configs,
        hoststand=installed / "hoststand",
    )
    try:
        page = requests.get(f"{server.base}/", timeout=TIMEOUT)
        assert page.status_code == 200, page.text
        for name in ("tablet.js", "tablet.css"):
            assert f"/tablet/{name}?v=" in page.text
            served = requests.get(f"{server.base}/tablet/{name}", timeout=TIMEOUT)
            assert served.status_code == 200, served.text
            assert served.content == (REPO / "feed" / "http" / "static" / name).read_bytes()
        # The export at start-up (a thread of its own) validates against the schemas too.
        assert staged_or_failed(elsewhere / "out", server) == "staged", server.output()
    finally:
        assert server.stop() == 0, server.output()
