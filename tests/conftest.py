"""Fixtures shared by the tests: a database on every backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.postgres import BACKENDS, database


@pytest.fixture(params=BACKENDS)
def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """`--db` of an empty database, once per backend (SQLite file, PostgreSQL schema)."""
    with database(request.param, tmp_path) as db:
        yield db
