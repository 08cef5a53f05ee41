# Every target creates or reuses .venv itself; nothing needs to be installed by hand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo demo-ci test test-unit test-tmpdir lint format docs bench golden screenshot clean

# uv installs the hundred-odd packages in a few seconds where pip takes most of a minute (the
# start of every `make test` on a clean clone): from its own cache alone first (about 1 s; asking
# the index again about every package took 6 s more), from the index when the cache lacks
# something, and pip does it when uv cannot (no index it reaches).
UV_VERSION := 0.13.9
UV_INSTALL = $(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[test]' --upgrade-package pip pip
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(UV_INSTALL) --offline 2>/dev/null || $(UV_INSTALL) \
	  || $(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

# The example's generated workflows on a real Actions runner (act), as a hosted ubuntu-24.04
# runner would run them: a pull request, then the RC tag (docs/guide/generated-ci.md).
demo-ci: $(STAMP)
	RELFORGE_ACT_TRANSCRIPT=1 $(BIN)/python -m pytest -s -q -p no:cacheprovider \
	  tests/integration/test_generated_ci.py -k "pull_request or rc_tag"

# Every test, on 4 workers: each test file stays on one worker (its module-scoped fixtures run
# once) and the Docker tests take turns (tests/integration/dockerd.py).  Many tests wait on
# servers and subprocesses, so 4 workers beat one per core even on 2 cores (DEVELOPERS.md).
# Files are handed out longest first (tests/conftest.py: LONGEST_FIRST), not xdist's order.
# Temporary files (tmp_path, the test Docker engine's data) go to memory when /dev/shm has
# 8 GiB free: on this machine's virtual disk they cost a third more system CPU, and the Docker
# tests take half again as long.  TEST_TMPDIR=DIR picks the place; TEST_TMPDIR= keeps $$TMPDIR.
# The suite keeps the byte code it compiles (of .venv's packages, src/, tests/ and pytest's
# rewritten test modules) whatever PYTHONDONTWRITEBYTECODE says (this machine's environment sets
# it): the tests start Python thousands of times, and each would compile boto3, pip, rich and
# relforge from source again.
TEST_WORKERS ?= 4
TEST_TMPDIR ?= $(shell [ "$$(df -k --output=avail /dev/shm 2>/dev/null | tail -n 1)" -ge 8388608 ] \
	2>/dev/null && echo /dev/shm/relforge-tests)
# While lint runs on one core, one collection on the other compiles what every worker imports
# (pytest's rewritten test modules most of all): four workers starting cold compiled it 4 times.
test: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest --collect-only -q -p no:cacheprovider \
	  >/dev/null 2>&1 & $(MAKE) --no-print-directory lint; lint=$$?; wait; exit $$lint
	$(if $(TEST_TMPDIR),mkdir -p $(TEST_TMPDIR) && TMPDIR=$(TEST_TMPDIR)) PYTHONDONTWRITEBYTECODE= \
	  $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The unit tests alone (no servers, no Docker, no act): the quick loop while changing code.
test-unit: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q tests/unit

# Where `make test` puts temporary files (empty: $$TMPDIR); benchmarks/bench_test_suite.py asks.
test-tmpdir:
	@echo $(TEST_TMPDIR)

# mypy keeps its cache in the user's cache folder, not in the checkout: a clean clone then checks
# in under a second what took 11 s cold (mypy re-reads a file whose path or mtime changed and
# trusts its cache only when the content hash agrees).  MYPY_CACHE_DIR=… picks another place.
MYPY_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/relforge/mypy
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	MYPY_CACHE_DIR=$(MYPY_CACHE_DIR) $(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix src tests benchmarks scripts
	$(BIN)/ruff format src tests benchmarks scripts

# The docs site: docs/reference/ regenerated from the code (matrix keys and JSON Schema, checks,
# lint rules, every --help, exit codes), then `mkdocs build --strict` into .relforge/site-docs/.
docs: $(STAMP)
	$(BIN)/python scripts/docs_reference.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict  # not --quiet: it hides the warnings --strict counts
	@echo "site: .relforge/site-docs/index.html"

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,bench]'
	$(BIN)/python benchmarks/bench_matrix_expand.py
	$(BIN)/python benchmarks/bench_workflows_render.py
	$(BIN)/python benchmarks/bench_strip_local.py
	$(BIN)/python benchmarks/bench_promote.py
	$(BIN)/python benchmarks/bench_verify.py
	$(BIN)/python benchmarks/bench_build.py
	$(BIN)/python benchmarks/bench_build_docker.py
	$(BIN)/python benchmarks/bench_wheel_inspect.py
	$(BIN)/python benchmarks/bench_fake_github.py
	$(BIN)/python benchmarks/bench_index.py

# Regenerate the golden expansions (and the example project's committed workflows) after an
# intended matrix or template change; review the diff.
# The golden files hold the cells (Cell.to_json()) of `matrix list --format json`'s document.
CELLS_OF = $(BIN)/python -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["cells"], indent=2))'
golden: $(STAMP)
	for r in 2.6 2.7 2.8 2.9; do \
	  $(BIN)/relforge matrix list matrix/pytorch.yaml --release $$r --format json > .golden.tmp \
	    && $(CELLS_OF) < .golden.tmp > tests/golden/pytorch-$$r.json || exit 1; done
	$(BIN)/relforge matrix list matrix/example.yaml --release 1.0 --format json > .golden.tmp
	$(CELLS_OF) < .golden.tmp > tests/golden/example-1.0.json && rm .golden.tmp
	$(BIN)/relforge workflows generate matrix/example.yaml --release 1.0 --out .github/workflows --no-upload

# Refresh the docs' picture of the install selector (docs/site-selector.png) from the browser test.
screenshot: $(STAMP)
	RELFORGE_UPDATE_DOCS=1 $(BIN)/python -m pytest -q tests/integration/test_site_browser.py

clean:
	rm -rf $(VENV) .relforge .pytest_cache .mypy_cache .ruff_cache
