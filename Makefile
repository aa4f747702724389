# The two commands: `make run` (the whole service in the foreground) and `make test`.
# Everything else here supports those two. Needs only python3 (>= 3.11) and make.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
export PORT

.DEFAULT_GOAL := help
.PHONY: help run test test-suite test-fast lint typecheck fmt check deploy-check lock clean schema fuzz bench bench-scale bench-test zapier-deps screenshots

ZAPIER_DIR := integrations/zapier

help:
	@echo "make run    - install, migrate and run web + worker + beat on http://127.0.0.1:$(PORT)/"
	@echo "make test   - install test tools; lint, type-check, check migrations and deploy settings, and run pytest, side by side"
	@echo "make test-fast - the tests that start no process (all but tests/e2e/), nothing else"
	@echo "make bench  - measure the write path and the dispatcher (PostgreSQL + Redis, wrk);"
	@echo "              BENCH_ARGS=\"--quick\" for a smoke run, \"--against main\" to compare with a ref"
	@echo "make bench-scale - every portal and admin page at 10k and 1M requests (PostgreSQL);"
	@echo "              BENCH_ARGS=\"--quick\" for 2k and 50k in a few minutes"
	@echo "make bench-test - the bench harness's own tests (not part of make test)"
	@echo "make lock   - re-pin requirements/*.txt from pyproject.toml"
	@echo "make schema - regenerate docs/openapi.yaml from the code (a test compares them)"
	@echo "make fuzz   - fuzz the live API (gunicorn) against its OpenAPI schema with schemathesis"
	@echo "make clean  - remove .venv and var/ (local database, broker, outbox)"

$(BIN)/python:
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python >= 3.11 is required"; exit 1; }
	$(PYTHON) -m venv $(VENV)

# Stamp files: reinstall only when the pinned list changes.
$(VENV)/.installed-base: requirements/base.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements/base.txt
	@touch $@

$(VENV)/.installed-dev: requirements/dev.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements/dev.txt
	@touch $@ $(VENV)/.installed-base

run: $(VENV)/.installed-base
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	@echo ""
	@echo "  Review-request service"
	@echo "  Service:  http://127.0.0.1:$(PORT)/        (health: /healthz, readiness: /readyz)"
	@echo "  Admin:    http://127.0.0.1:$(PORT)/admin/"
	@echo "  Owners:   http://127.0.0.1:$(PORT)/  (log in with the business's e-mail)"
	@echo "  Staff user:  $(BIN)/python manage.py createsuperuser"
	@echo "  A business:  $(BIN)/python manage.py create_business --email owner@example.com \\"
	@echo "                 --password 'a long passphrase' --business-name 'Acme Plumbing' \\"
	@echo "                 --review-url https://g.page/r/acme/review"
	@echo "  Outgoing e-mail/SMS without provider credentials: files in $${OUTBOX_DIR:-var/outbox}"
	@echo "  Ctrl-C stops web, worker and beat."
	@echo ""
	@# honcho gives each process type its own PORT (worker: PORT+100), so links that the worker
	@# writes into messages would point at the wrong port unless SITE_URL is fixed here.
	SITE_URL="$${SITE_URL:-http://127.0.0.1:$(PORT)}" PATH="$(CURDIR)/$(BIN):$$PATH" \
		exec $(BIN)/honcho --no-prefix -f Procfile start web worker beat

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy with django-stubs: the default level everywhere, strict on core, contact input, services,
# reporting and the APIs (pyproject.toml). Needs no database: the Django plugin only imports the settings.
typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy .

fmt: $(VENV)/.installed-dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

check: $(VENV)/.installed-dev
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(MAKE) --no-print-directory deploy-check

# `check --deploy` under production-like settings: HTTPS site, DEBUG off, a real secret.
deploy-check: $(VENV)/.installed-dev
	DEBUG=False SITE_URL=https://reviews.example.com ALLOWED_HOSTS=reviews.example.com \
	SECRET_KEY="$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
	$(BIN)/python manage.py check --deploy --fail-level WARNING

# In parallel (pytest-xdist): the suite mostly waits on processes, browsers and sockets, so 4
# workers on 2 cores. Each worker has its own test database (test_<name>_gwN, a copy of one
# migrated template), Redis database (REDIS_URL's + N: tests/support/worker_redis.py), VAR_DIR
# and ports. A test module is one unit of work, the long ones first (tests/support/scheduling.py).
# Serially: make test PYTEST_ARGS="-n 0" (or PYTEST_XDIST=).
PYTEST_XDIST ?= -n 4 --dist loadfile --no-loadscope-reorder
# The suite starts some sixty Python processes (the workers, the service's processes, fresh
# interpreters probing the settings, pytest runs of its own): they share one cache of compiled
# modules and of pytest's rewritten test modules, under the virtualenv, instead of each
# compiling every module again where the shell sets PYTHONDONTWRITEBYTECODE (~7 s of CPU a
# worker at collection alone).
PYTEST := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache $(BIN)/python -m pytest

# The lint, the type-check and the checks run beside the tests (make -j), their seconds overlapping
# the tests' start instead of coming before it; make test fails if any of them fails.
test: zapier-deps
	$(MAKE) --no-print-directory -j 4 lint typecheck check test-suite

test-suite: $(VENV)/.installed-dev
	$(PYTEST) $(PYTEST_XDIST) $(PYTEST_ARGS)

# The tests alone, without tests/e2e/ (the service's processes, Chromium, a live server, a pytest
# of its own, the fuzzer): no lint, type-check or checks. In parallel as make test; on the
# embedded default (no DATABASE_URL or REDIS_URL) 1.5 to 1.7 minutes on 2 cores.
test-fast: $(VENV)/.installed-dev
	$(PYTEST) $(PYTEST_XDIST) --ignore=tests/e2e $(PYTEST_ARGS)

# The Zapier app's packages, when Node.js is installed (its tests are skipped otherwise).
zapier-deps:
	@if command -v npm >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory $(ZAPIER_DIR)/node_modules/.package-lock.json; \
	else echo "npm not found: the Zapier app tests will be skipped"; fi

$(ZAPIER_DIR)/node_modules/.package-lock.json: $(ZAPIER_DIR)/package-lock.json
	cd $(ZAPIER_DIR) && npm ci --no-audit --no-fund --loglevel=error

# Loopback benchmarks against the local PostgreSQL and Redis (a fresh database, dropped after).
bench: $(VENV)/.installed-dev
	@command -v wrk >/dev/null 2>&1 || { echo "bench needs wrk: apt-get install -y wrk"; exit 1; }
	$(BIN)/python -m bench.run $(BENCH_ARGS)

# The pages at two data sizes, each in a fresh database it loads and drops (bench/scale/).
bench-scale: $(VENV)/.installed-dev
	$(BIN)/python -m bench.scale $(BENCH_ARGS)

# The harness's own tests (rounds, pacing, reports, comparison, the wrk script); `make test`
# collects tests/ only (pyproject's testpaths), so these run here.
bench-test: $(VENV)/.installed-dev
	$(PYTEST) bench/tests $(PYTEST_ARGS)

# The committed OpenAPI schema, generated with the default limits and platform slug.
schema: $(VENV)/.installed-dev
	RATE_LIMIT_PER_HOUR=5000 CONNECTOR_PLATFORMS=zapier \
	$(BIN)/python manage.py spectacular --validate --fail-on-warn --file docs/openapi.yaml

# schemathesis against a real gunicorn on the test database, with a real token (bounded in time).
fuzz: $(VENV)/.installed-dev
	$(PYTEST) tests/e2e/fuzz -m fuzz $(PYTEST_ARGS)

# Page screenshots (consent page, owner dashboard, admin dashboard) into docs/screenshots/.
screenshots: $(VENV)/.installed-dev
	SCREENSHOTS=1 $(PYTEST) tests/e2e/browser -m browser -q $(PYTEST_ARGS)

lock:
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/uv pip compile pyproject.toml --python-version 3.11 -o requirements/base.txt
	$(BIN)/uv pip compile pyproject.toml --python-version 3.11 --extra test -o requirements/dev.txt

clean:
	rm -rf $(VENV) var
