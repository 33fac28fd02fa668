# Quick start: `make run` serves the example workspace; `make test` runs the test suite.
# Each creates .venv on first use. `make test` also builds llama-cpp-python (the `local` extra) from
# source the first time: about 10 minutes on 2 cores; pip caches the wheel afterwards.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF

.PHONY: run stdio lint test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# The quick start searches by keyword, with no model to download, even once `make test` has installed
# llama-cpp-python into the same .venv. Choose a provider with `make run MEMDEX_EMBEDDING__PROVIDER=auto`
# (or local / openai, or that variable in the environment).
run stdio: export MEMDEX_EMBEDDING__PROVIDER ?= none

run: $(VENV)/.installed-run  ## Streamable HTTP on http://127.0.0.1:8765/mcp over examples/workspace
	$(BIN)/memdex serve --workspace examples/workspace --transport http

# stdout is the protocol: make's echo and the first run's install output go to stderr.
stdio:  ## the same over stdio, as MCP clients launch it
	@$(MAKE) --no-print-directory $(VENV)/.installed-run >&2
	@$(BIN)/memdex serve --workspace examples/workspace

lint: $(VENV)/.installed-test  ## ruff over the repository, mypy --strict over memory_core
	$(BIN)/ruff check .
	$(BIN)/mypy

# With Node.js and npm on PATH, `make test` installs (exactly as locked) the TypeScript SDK client that
# tests/test_ts_client.py runs and the mcpb CLI the bundle tests use, as .ci/run does; without them those
# tests are skipped, and the summary (-rfEs: failures, errors, skips) names them and why.
NPM := $(shell command -v npm 2>/dev/null)
NODE_TEST_DEPS := $(if $(NPM),tests/ts_client/node_modules/.package-lock.json packaging/node_modules/.package-lock.json)

tests/ts_client/node_modules/.package-lock.json: tests/ts_client/package.json tests/ts_client/package-lock.json
	npm ci --prefix tests/ts_client --no-audit --no-fund

test: lint $(NODE_TEST_DEPS)
	$(BIN)/python -m pytest -q -rfEs

clean:
	rm -rf $(VENV) bench/.cache .pytest_cache

# Distributions. `make dist`: the wheel and sdist in dist/, checked with twine. `make mcpb`: the Claude
# Desktop bundle dist/memdex-$(VERSION).mcpb, the wheel inside, validated and packed by the @anthropic-ai/mcpb
# CLI pinned in packaging/package-lock.json (npm ci installs exactly that version).
.PHONY: dist mcpb
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
# The distribution is memdex-mcp (file names: memdex_mcp). The bundle carries the wheel at server/$(WHEEL), the
# path manifest.json's uvx command names, so it installs without memdex being on PyPI; uv brings the dependencies.
WHEEL := memdex_mcp-$(VERSION)-py3-none-any.whl

dist: $(VENV)/.installed-test  ## wheel and sdist into dist/, twine-checked
	rm -f dist/memdex_mcp-*.whl dist/memdex_mcp-*.tar.gz
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/$(WHEEL) dist/memdex_mcp-$(VERSION).tar.gz

packaging/node_modules/.package-lock.json: packaging/package.json packaging/package-lock.json
	npm ci --prefix packaging --no-audit --no-fund

mcpb: dist packaging/node_modules/.package-lock.json  ## the .mcpb bundle for Claude Desktop into dist/
	packaging/node_modules/.bin/mcpb validate packaging/mcpb/manifest.json
	rm -rf build/mcpb && mkdir -p build && cp -R packaging/mcpb build/mcpb
	cp dist/$(WHEEL) build/mcpb/server/$(WHEEL)
	packaging/node_modules/.bin/mcpb pack build/mcpb dist/memdex-$(VERSION).mcpb
