"""A PostgreSQL database for the tests: `$HOSTSTAND_TEST_PG`, a URL they may wipe.

Each user gets a fresh schema (the URL's search_path), dropped afterwards. Without the URL
the PostgreSQL tests fail under CI (CI=true) and are skipped only on a developer's machine:
a CI run must never pass without them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql

ENV = "HOSTSTAND_TEST_PG"
BACKENDS = ("sqlite", "postgres")


def base_url() -> str:
    """The test database's URL, or fail (CI) / skip (a developer's machine) saying why."""
    url = os.environ.get(ENV, "")
    if url:
        return url
    message = (
        f"{ENV} is not set: the PostgreSQL tests need a database they may wipe"
        " (e.g. postgresql://user:password@127.0.0.1:5432/hoststand_test; .ci/run starts one)"
    )
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{message}. Under CI they must run, not be skipped.", pytrace=False)
    pytest.skip(message)


def with_schema(url: str, schema: str) -> str:
    """`url` with `schema` as its search_path (libpq's options, kept by every connection)."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={quote(f'-csearch_path={schema}')}"


@contextmanager
def fresh_schema(label: str = "t") -> Iterator[str]:
    """The URL of a new, empty schema of the test database; dropped on exit."""
    url = base_url()
    name = f"hs_{label}_{uuid.uuid4().hex[:12]}".lower()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    try:
        yield with_schema(url, name)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


@contextmanager
def database(backend: str, directory: Path, label: str = "t") -> Iterator[str]:
    """What `--db` takes for `backend`: an SQLite file in `directory`, or a fresh schema."""
    if backend == "sqlite":
        yield str(directory / "hoststand.db")
        return
    with fresh_schema(label) as url:
        yield url
