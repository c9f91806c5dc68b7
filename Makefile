# embedadmin: `make run` serves the product on 127.0.0.1:4000; `make test` runs every test.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 4000
# The sample host app (demo/host_app.py) that embeds a dashboard: its own port, so the iframe is cross-origin.
HOST_APP_PORT ?= 4100
PYTEST_ARGS ?=
# Orders in the generated demo dataset (var/demo.duckdb); DEMO_ORDERS=10000000 for 10M (about a minute).
DEMO_ORDERS ?= 100000

# The embedded install keeps its generated secret key and SQLite files under var/.
RUNENV := SECRET_KEY_FILE=$(CURDIR)/var/secret_key EMBEDADMIN_VAR_DIR=$(CURDIR)/var

.PHONY: help venv run serve migrate demo demo-data test test-fast lint format bench drills clean vendor

help:
	@echo "make run    set up and serve on http://$(HOST):$(PORT) (SQLite + DuckDB, in-process worker)"
	@echo "make test   start PostgreSQL/Redis if needed, lint, check imports and types, check migrations, run every test"
	@echo "make bench  run the benchmarks under bench/ (see docs/benchmarks.md)"

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

# The warehouses' drivers (Trino, Snowflake, BigQuery, Databricks): optional for `make run`, installed for the tests of
# their data-source modules.
$(VENV)/.warehouses: requirements-warehouses.txt $(VENV)/.installed
	$(PY) -m pip install -q -r requirements-warehouses.txt
	touch $@

var/secret_key:
	mkdir -p var
	umask 077 && $(PY) -c "import secrets; print(secrets.token_urlsafe(48))" > $@

migrate: venv var/secret_key
	$(RUNENV) $(PY) manage.py migrate --noinput -v0
	$(RUNENV) $(PY) manage.py collectstatic --noinput -v0

# Generated once; again only when DEMO_ORDERS changes (var/demo.orders remembers the size).
demo-data: venv
	@mkdir -p var
	@if [ ! -f var/demo.duckdb ] || [ "$$(cat var/demo.orders 2>/dev/null)" != "$(DEMO_ORDERS)" ]; then \
		$(PY) demo/generate.py var/demo.duckdb --orders $(DEMO_ORDERS) && echo $(DEMO_ORDERS) > var/demo.orders; \
	fi

demo: migrate demo-data
	$(RUNENV) $(PY) manage.py bootstrap_demo --url http://$(HOST):$(PORT)
	$(RUNENV) $(PY) manage.py ensure_agent --account demo --site-url http://$(HOST):$(PORT)
	$(RUNENV) $(PY) manage.py demo_embedding --account demo --host-origin http://$(HOST):$(HOST_APP_PORT)
	$(RUNENV) $(PY) manage.py apply_dashboards

# The web server, plus a Celery worker with embedded beat on the SQLite broker (expiry of ephemeral
# chat users, user-count reconciliation); the worker stops with the server.
run: demo
	@$(RUNENV) $(VENV)/bin/celery -A embedadmin worker -B --pool=solo --loglevel=INFO > var/worker.log 2>&1 & \
	worker=$$!; \
	$(PY) demo/host_app.py --embed-url http://$(HOST):$(PORT) --host $(HOST) --port $(HOST_APP_PORT) & \
	hostapp=$$!; trap 'kill $$worker $$hostapp 2>/dev/null' EXIT INT TERM; \
	echo "  Worker:         Celery with embedded beat, pid $$worker, log var/worker.log"; \
	echo "  Embedded dashboard: open http://$(HOST):$(HOST_APP_PORT)/ (the sample host app, pid $$hostapp)"; \
	$(RUNENV) $(VENV)/bin/uvicorn embedadmin.asgi:application --host $(HOST) --port $(PORT) --no-access-log \
		--http embedadmin.core.http_server:HttpToolsProtocol

# The SQLite pass leaves out the analyst's question suites: what they judge is the analyst over its DuckDB and
# PostgreSQL data, which the application database does not change; they run in the PostgreSQL pass.
test: venv $(VENV)/.warehouses
	@eval "$$(bash scripts/test-services.sh)" && \
	$(VENV)/bin/ruff check . && \
	$(VENV)/bin/ruff format --check . && \
	$(VENV)/bin/lint-imports --no-logo && \
	EMBEDADMIN_ALLOW_DEV_SECRET=true $(VENV)/bin/mypy --no-incremental && \
	EMBEDADMIN_ALLOW_DEV_SECRET=true $(PY) manage.py makemigrations --check --dry-run && \
	{ test -d tests/js/node_modules/@cubejs-client/core || (cd tests/js && npm ci --no-audit --no-fund); } && \
	echo "== embedded default: SQLite (tests that need PostgreSQL run in the next pass)" && \
	TEST_DATABASE_URL=sqlite:///var/test-embedded.sqlite3 $(VENV)/bin/pytest -q -n 2 -m "not postgres" \
		tests/core tests/accounts tests/embedding tests/platform tests/chat tests/panel tests/test_health.py \
		--ignore=tests/chat/analyst && \
	echo "== every test on PostgreSQL" && \
	$(VENV)/bin/pytest -n 2 $(PYTEST_ARGS)

test-fast: venv
	@eval "$$(bash scripts/test-services.sh)" && $(VENV)/bin/pytest -x -q $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

format: venv
	$(VENV)/bin/ruff check --fix . && $(VENV)/bin/ruff format .

bench: venv
	@eval "$$(bash scripts/test-services.sh)" && bash scripts/bench-tools.sh && \
	$(PY) bench/generate_session.py && $(PY) bench/core_api.py && $(PY) bench/chat.py && $(PY) bench/analyst.py

# Fault drills against a real multi-process deployment of their own (PostgreSQL, Redis, gunicorn with 2 workers,
# Celery) on free ports: never the shared test services. DRILLS_ARGS="--only NAME"; see drills/README.md.
DRILLS_ARGS ?=
drills: venv
	$(PY) -m drills.run $(DRILLS_ARGS)

# The drills beside two CPU hogs (busy processes at normal priority), as on a CI machine shared with other work:
# they judge behaviour, not the machine's speed, so they pass here as they do alone. The hogs stop with the drills.
.PHONY: drills-stress
drills-stress: venv
	@python3 -c 'while True: pass' & hog1=$$!; python3 -c 'while True: pass' & hog2=$$!; \
	trap 'kill $$hog1 $$hog2 2>/dev/null' EXIT INT TERM; \
	echo "drills-stress: CPU hogs $$hog1 and $$hog2 running"; \
	$(PY) -m drills.run $(DRILLS_ARGS)

clean:
	rm -rf var .pytest_cache .ruff_cache .mypy_cache .import_linter_cache

# The embed pages' browser builds (static/vendor/, committed) from frontend/package-lock.json; node is
# needed only here, never by `make run`. After changing a pin in frontend/package.json: `cd frontend &&
# npm install --save-exact`, then `make vendor`.
vendor:
	cd frontend && npm ci --no-audit --no-fund
	node frontend/vendor.mjs
