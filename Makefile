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

test: lint
	$(BIN)/python -m pytest -q -rs

clean:
	rm -rf $(VENV) bench/.cache .pytest_cache

# Distributions. `make dist`: the wheel and sdist in dist/, checked with twine. `make mcpb`: the Claude
# Desktop bundle dist/memdex-$(VERSION).mcpb, validated and packed by the @anthropic-ai/mcpb CLI pinned in
# packaging/package-lock.json (npm ci installs exactly that version).
.PHONY: dist mcpb
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)

dist: $(VENV)/.installed-test  ## wheel and sdist into dist/, twine-checked
	rm -f dist/memdex-*.whl dist/memdex-*.tar.gz
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/memdex-$(VERSION)-py3-none-any.whl dist/memdex-$(VERSION).tar.gz

packaging/node_modules/.package-lock.json: packaging/package.json packaging/package-lock.json
	npm ci --prefix packaging --no-audit --no-fund

mcpb: packaging/node_modules/.package-lock.json  ## the .mcpb bundle for Claude Desktop into dist/
	packaging/node_modules/.bin/mcpb validate packaging/mcpb/manifest.json
	mkdir -p dist
	packaging/node_modules/.bin/mcpb pack packaging/mcpb dist/memdex-$(VERSION).mcpb
