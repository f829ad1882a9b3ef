# Sluice: `make run` starts everything locally; `make test` runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Local runs generate their SECRET_KEY under .run/; production sets SECRET_KEY itself.
export SLUICE_DEV_SECRET := 1

.PHONY: setup run test lint bench screenshots clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(VENV)/.installed
	$(PY) manage.py migrate --noinput

run: setup
	$(PY) scripts/run_local.py

# Lint, format, the architecture's contracts (import-linter) and the engine's types (mypy).
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

test: setup lint
	$(PY) -m pytest

bench: setup
	$(PY) -m bench

# A PNG of every page, from the demo scenario, into screenshots/ (git-ignored).
screenshots: setup
	$(PY) scripts/screenshots.py

clean:
	rm -rf $(VENV) .run db.sqlite3
