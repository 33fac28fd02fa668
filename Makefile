# Quick start: `make run` serves the example workspace; `make test` runs the test suite.
# Each creates .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run stdio test index clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

run: $(BIN)/.installed  ## Streamable HTTP on http://127.0.0.1:8765/mcp over examples/workspace
	$(BIN)/memdex serve --workspace examples/workspace --transport http

stdio: $(BIN)/.installed  ## the same over stdio, as MCP clients launch it
	$(BIN)/memdex serve --workspace examples/workspace

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) bench/.cache .pytest_cache
