# Evalutron: `make demo` to try it, `make test` to check it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: demo run test test-fast lint bench bench-services worker beat clean fuzz

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

# A local .env that the settings read, so that `.venv/bin/python manage.py ...` works from a plain
# shell after `make demo`. Never committed (.gitignore); edit it to change the local settings.
.env:
	@printf '# Local settings for this checkout, read by evalutron/settings.py (written by make demo).\nDEBUG=true\n' > .env
	@echo "wrote .env (DEBUG=true)"

# Embedded setup: SQLite under var/, Celery tasks run in-process. Re-running keeps the data.
demo: export DEBUG ?= true
demo: $(STAMP) .env
	$(BIN)/python manage.py migrate --no-input
	$(BIN)/python manage.py seed_demo
	@echo ""
	@echo "  Evalutron is running at http://$(HOST):$(PORT)/"
	@$(BIN)/python manage.py seed_demo --print-logins
	@echo ""
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

run: export DEBUG ?= true
run: $(STAMP)
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

worker: $(STAMP)
	$(BIN)/celery -A evalutron worker --loglevel=info

beat: $(STAMP)
	$(BIN)/celery -A evalutron beat --loglevel=info

# The whole suite. With DATABASE_URL set to PostgreSQL the suite runs there, and the tests marked
# both_backends run a second time on the embedded SQLite database. The 15 slowest tests are listed.
# The tests are spread over TEST_WORKERS processes (pytest-xdist; one per core by default), a test
# file's tests in one process; each process has its own test database and each worker test its own
# Celery queue. TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= auto
XDIST = -n $(TEST_WORKERS) --dist loadfile
test: $(STAMP)
	$(BIN)/python -m pytest $(XDIST) --durations=15 $(PYTEST_ARGS)
	@if [ -n "$$DATABASE_URL" ]; then \
		echo "--- again on the embedded SQLite database: tests marked both_backends"; \
		env -u DATABASE_URL $(BIN)/python -m pytest $(XDIST) -m "both_backends and not postgres" $(PYTEST_ARGS); \
	fi

test-fast: $(STAMP)
	$(BIN)/python -m pytest -x -q -m "not browser and not redis" $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Library benchmarks run anywhere; the ingest and analysis benchmarks need PostgreSQL (DATABASE_URL
# or their --database-url) and are run with `make bench-services`.
bench: $(STAMP)
	$(BIN)/python bench/metrics.py
	$(BIN)/python bench/orderings.py

bench-services: $(STAMP)
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/analysis.py

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache

# Schema fuzzing (schemathesis, as a grader and as an organizer; needs DATABASE_URL=postgres://...)
# and the property-based tests, with many more examples than CI runs. Tally: test-artifacts/.
fuzz: $(STAMP)
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-300} $(BIN)/python -m pytest -q -p no:cacheprovider tests/fuzz tests/hardening/test_properties.py $(PYTEST_ARGS)
	@cat test-artifacts/schemathesis-tally.json
