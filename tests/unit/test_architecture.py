"""docs/ARCHITECTURE.md states what may import what; every module of ours keeps to it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
PACKAGES = ("engine", "store", "feed")
BASE = {"feed.clock", "feed.settings"}
PURE = ("engine", "feed.floor")
IO_LIBRARIES = {"sqlite3", "pydantic", "click", "fastapi", "starlette", "requests", "psycopg"}


def rules() -> dict[str, set[str]]:
    block = re.search(r"```imports\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block, "docs/ARCHITECTURE.md has no ```imports block"
    allowed: dict[str, set[str]] = {}
    for line in block.group(1).splitlines():
        part, _, rest = line.partition(":")
        names = set() if rest.strip().startswith("(") else set(rest.split())
        allowed[part.strip()] = names | {part.strip()}
    return allowed


def part_of(module: str) -> str:
    """The part a dotted module name belongs to, as the document names parts."""
    if module in BASE:
        return "feed.base"
    pieces = module.split(".")
    if pieces[0] != "feed":
        return pieces[0]
    if module == "feed.cli":
        return "feed.cli"
    return ".".join(pieces[:2]) if len(pieces) > 1 else "feed"


def modules() -> list[tuple[str, Path]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found.append((dotted.removesuffix(".__init__"), path))
    return found


def imports(path: Path, module: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:  # relative: resolve against the importing package
                names.add(".".join([*module.split(".")[: -node.level], node.module]))
                continue
            names.add(node.module)
            for alias in node.names:  # `from feed.service import days` imports a module
                names.add(f"{node.module}.{alias.name}")
    return names


def ours(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def test_every_part_of_the_tree_is_named_in_the_document() -> None:
    allowed = rules()
    parts = {part_of(m) for m, _ in modules()} - {"feed"}
    assert parts <= set(allowed), f"parts missing from docs/ARCHITECTURE.md: {parts - set(allowed)}"


# The parts whose row in the document's table names its files (the engine's names its rules).
LISTED = (
    "store",
    "feed/venue",
    "feed/floor",
    "feed/service",
    "feed/push",
    "feed/files",
    "feed/http",
)


@pytest.mark.parametrize("part", LISTED)
def test_every_module_of_a_part_is_named_in_its_row_of_the_document(part: str) -> None:
    row = next(
        (line for line in DOC.read_text(encoding="utf-8").splitlines()
         if line.startswith(f"| `{part}/`")),
        None,
    )  # fmt: skip
    assert row is not None, f"docs/ARCHITECTURE.md has no row for {part}/"
    files = sorted(p.name for p in (ROOT / part).glob("*.py") if p.name != "__init__.py")
    unnamed = [name for name in files if f"`{name}`" not in row]
    assert not unnamed, f"{part}/ has modules its row does not name: {unnamed}"


@pytest.mark.parametrize("module,path", modules(), ids=lambda v: str(v))
def test_a_module_imports_only_its_own_part_and_the_parts_below_it(module: str, path: Path) -> None:
    allowed = rules()
    mine = part_of(module)
    if mine == "feed":  # feed/__init__.py: the package marker imports nothing
        return
    every = {m for m, _ in modules()}
    crossing = sorted(
        f"{name} ({part_of(name)})"
        for name in imports(path, module)
        if ours(name) and name in every and part_of(name) not in allowed[mine]
    )
    assert not crossing, f"{module} ({mine}) imports across the rules: {crossing}"


@pytest.mark.parametrize("module,path", [(m, p) for m, p in modules() if m.startswith(PURE)])
def test_the_pure_parts_import_no_io_or_framework_library(module: str, path: Path) -> None:
    used = {name.split(".")[0] for name in imports(path, module)}
    assert not used & IO_LIBRARIES, f"{module} imports {sorted(used & IO_LIBRARIES)}"


def test_the_check_catches_an_upward_import(tmp_path: Path) -> None:
    bad = tmp_path / "days.py"
    bad.write_text("from feed.http.statuses import http_status\n", encoding="utf-8")
    names = imports(bad, "feed.service.days")
    assert "feed.http.statuses" in names
    assert part_of("feed.http.statuses") not in rules()["feed.service"]
