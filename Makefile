# Sluice: `make run` starts everything locally; `make test` runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
.PHONY: setup run run-fresh test lint bench screenshots clean simtest

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(VENV)/.installed
	$(PY) manage.py migrate --noinput

# Every process under supervisord, restarted when it dies; the simulated cluster is kept in
# .run/simcluster-state.json across restarts. run-fresh starts a new simulated cluster.
run: setup
	$(PY) scripts/run_local.py

run-fresh: setup
	$(PY) scripts/run_local.py --fresh

# Lint, format, the architecture's contracts (import-linter) and the engine's types (mypy).
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

test: setup lint
	$(PY) -m pytest

# Deterministic simulation test (tests/simtest): SEEDS=N seeds (default 20), or SEED=n to replay
# one; FAULTS=all (default), none, or kinds (conflict=0.05,watchGone=0.5,...).
simtest: $(VENV)/.installed
	$(PY) -m tests.simtest $(if $(SEED),--seed $(SEED),--seeds $(or $(SEEDS),20)) $(if $(FAULTS),--faults $(FAULTS),)

# make bench runs every benchmark; make bench e2e (or BENCH=e2e) runs the named ones only.
BENCH_GOALS := $(filter-out bench,$(MAKECMDGOALS))
bench: setup
	$(PY) -m bench $(BENCH) $(if $(filter bench,$(firstword $(MAKECMDGOALS))),$(BENCH_GOALS),)
ifeq (bench,$(firstword $(MAKECMDGOALS)))
$(BENCH_GOALS):
	@:
endif

# A PNG of every page, from the demo scenario, into screenshots/ (git-ignored).
screenshots: setup
	$(PY) scripts/screenshots.py

clean:
	rm -rf $(VENV) .run db.sqlite3
