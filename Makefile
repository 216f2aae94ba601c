# Sparkscope developer tasks. `make run` and `make check` are the README's two set-up commands.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PGDIR ?= /tmp/sparkscope-pg
PGPORT ?= 54329
HOST ?= 127.0.0.1
PORT ?= 8080
export SPARKSCOPE_DATA_DIR ?= $(CURDIR)/data

.PHONY: setup setup-test db run demo-data fetch test lint fmt docs check bench clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

setup: $(PY)  ## install Sparkscope (editable) into .venv
	$(PY) -m pip install --quiet -e .

setup-test: $(PY)  ## install Sparkscope with test and dev tools, Chromium, and check Java
	$(PY) -m pip install --quiet -e '.[dev]'
	scripts/install-system-deps.sh

db:  ## start a local PostgreSQL (as an unprivileged user) and migrate it
	@url=$$(scripts/pg-start.sh $(PGDIR) $(PGPORT)); echo "$$url"; \
	SPARKSCOPE_DATABASE_URL=$$url $(PY) -m sparkscope db upgrade

demo-data: setup  ## load the recorded real applications into the embedded SQLite database
	$(PY) -m sparkscope db upgrade
	$(PY) -m sparkscope fetch --url demo/spark-events
	$(PY) -m sparkscope fetch --url demo/recurring-events
	$(PY) -m sparkscope fetch --url demo/scaling-events
	$(PY) -m sparkscope fetch --url demo/iterative-events
	$(PY) -m sparkscope fetch --url demo/sql-events

run: demo-data  ## install, load the demo data and serve on http://$(HOST):$(PORT)
	$(PY) -m sparkscope serve --host $(HOST) --port $(PORT)

fetch:  ## fetch from the configured servers
	$(PY) -m sparkscope fetch

lint:  ## ruff check + format check, mypy, and the layer contract (pyproject [tool.importlinter])
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy heuristics fetcher sparkscope
	$(VENV)/bin/lint-imports

fmt:
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

docs:  ## regenerate the settings table of docs/configuration.md from sparkscope/config/settings.py
	$(PY) -m sparkscope.config.reference docs/configuration.md

# Without TEST_DATABASE_URL, `test` starts a throwaway PostgreSQL in $(PGDIR) and stops it again when
# the run ends (passed, failed or interrupted); a server already running there is left running.
test:  ## run the whole suite on a throwaway PostgreSQL (and SQLite)
	@if [ -n "$${TEST_DATABASE_URL:-}" ]; then url=$$TEST_DATABASE_URL; \
	else \
	  if [ ! -f "$(PGDIR)/postmaster.pid" ]; then trap 'scripts/pg-stop.sh "$(PGDIR)"' EXIT; fi; \
	  url=$$(scripts/pg-start.sh $(PGDIR) $(PGPORT)) || exit 1; \
	fi; \
	TEST_DATABASE_URL=$$url $(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests" >&2; fi; exit $$rc

check: setup-test lint test  ## the README's test command: install everything, lint, test

bench: setup-test  ## run every benchmark and print its figures
	$(PY) -m benchmarks

clean:
	scripts/pg-stop.sh $(PGDIR)
	rm -rf $(VENV) data .pytest_cache .ruff_cache .mypy_cache
