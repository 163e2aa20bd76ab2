# The two commands: `make demo` and `make test`. Each creates .venv when missing and installs
# the project with the pinned constraints (constraints.txt, compiled by uv from pyproject.toml).
# Bytecode is compiled at install: where PYTHONDONTWRITEBYTECODE is set (as on our CI machines)
# Python otherwise recompiles every imported module on every start, which made `classwatch
# evaluate` of 1,000 rows take 6.5 s instead of 2.3 s, and every CLI test seconds longer.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
UV_VERSION := 0.13.9

.PHONY: demo ui test test-fast bench bench-large lock clean e2e-deps

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "uv==$(UV_VERSION)"
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c constraints.txt -e ".[test,bench]"
	$(BIN)/python -m compileall -q classwatch metrics_core tasks flows deployments
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/classwatch demo

# The MLflow UI on the store `make demo` wrote here (mlflow.db); PORT=5001 make ui when 5000 is taken.
ui: $(STAMP)
	$(BIN)/classwatch ui --port $(or $(PORT),5000)

# TEST_WORKERS pytest-xdist processes (2: the cores of our machines); pyproject.toml's `--dist loadgroup`
# keeps the e2e tests together on one of them (tests/conftest.py). TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2

test: $(STAMP) e2e-deps
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not e2e and not slow"

# Java 17 or newer for the Spark tests (pyspark starts a JVM): `java -version` must say so, else Debian's
# openjdk-17-jre-headless is installed; pyspark finds it as this check does: $JAVA_HOME/bin/java, else java on PATH.
e2e-deps:
	@command -v chromium >/dev/null 2>&1 || { echo "Installing Debian's chromium for the UI test"; \
	  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium could not be installed: the UI test will be skipped"; }
	@"$${JAVA_HOME:+$$JAVA_HOME/bin/}java" -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])' || { echo "Installing Debian's openjdk-17-jre-headless for the Spark tests"; \
	  (apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null) || echo "Java 17 could not be installed: the Spark tests will be skipped"; }

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_metrics.py
	$(BIN)/python benchmarks/bench_drift.py
	$(BIN)/python benchmarks/bench_cli.py
	$(BIN)/python benchmarks/bench_monitor.py

bench-large: $(STAMP)
	$(BIN)/python benchmarks/bench_large.py

lock: $(STAMP)
	$(BIN)/uv pip compile pyproject.toml --all-extras --python-version 3.11 -o constraints.txt --no-header

clean:
	rm -rf $(VENV) demo-output mlflow.db mlruns .pytest_cache
