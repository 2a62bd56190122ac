# Two entry points on a fresh machine: `make run` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

SAMPLES := --config samples/marlowes.toml --config samples/google-floorplan.toml
# The store: an SQLite file, or a postgresql:// URL (make run DB=... or HOSTSTAND_DB=...).
DB := $(or $(HOSTSTAND_DB),hoststand.db)

# The main job on the embedded default: the receiver for the sample restaurants on hoststand.db.
run: $(STAMP)
	$(BIN)/hoststand serve $(SAMPLES) --settings samples/server.toml --db '$(DB)'

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# Two workers for the tests that may share the machine, then the few that end every session
# of the test database (marked alone) by themselves.
pytest: $(STAMP)
	$(BIN)/pytest -q -n 2 -m "not alone"
	$(BIN)/pytest -q -m alone

test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/python bench/engine_bench.py
	$(BIN)/python bench/availability_day.py
	$(BIN)/python bench/service_night.py
	$(BIN)/python bench/feed_bench.py
	$(BIN)/python bench/export_upload_bench.py
	$(BIN)/python bench/receiver_bench.py
	$(BIN)/python bench/waitlist_bench.py
	$(BIN)/python bench/retention_growth.py
	$(BIN)/python bench/tablet_bench.py  # headless /usr/bin/chromium, as the tablet's tests
	$(BIN)/python bench/platform_bench.py  # needs $$HOSTSTAND_BENCH_PG

clean:
	rm -rf $(VENV) out .mypy_cache .pytest_cache .ruff_cache
