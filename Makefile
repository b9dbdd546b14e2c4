# Agent Runtime: the two commands are `make dev` (run it) and `make test` (prove it).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-12)
RUNTIME := $(VENV)/.runtime-$(shell cat requirements.txt | sha256sum | cut -c1-12)
PORT ?= 8080
CHROMIUM := /usr/bin/chromium
BWRAP := /usr/bin/bwrap
MCP_NPM := tests/mcp_npm/node_modules/.installed
AGUI_NPM := tests/agui_npm/node_modules/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

TCK_VENV := var/tck-venv
TCK_STAMP := $(TCK_VENV)/.installed-$(shell cat tests/a2a/tck-requirements.txt | sha256sum | cut -c1-12)

.PHONY: dev demo host-demo test unit lint typecheck infra-test bench reliability load bundle clean conformance

# `make dev`, `make demo` and `make host-demo` need the runtime only (requirements.txt); the
# development tools (requirements-dev.txt: pytest, mypy, Playwright, schemathesis, the MCP test
# servers) come with the targets that use them (`make test`, lint, typecheck, bench).
$(RUNTIME): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	rm -f $(VENV)/.runtime-* && touch $(RUNTIME)

$(STAMP): $(RUNTIME) requirements-dev.txt
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	rm -f $(VENV)/.installed-* && touch $(STAMP)

# The browser tests (tests/console) drive Debian's Chromium through Playwright; Playwright never
# downloads a browser of its own.
$(CHROMIUM):
	$(SUDO) apt-get install -y chromium || { $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium; }
	test -x $(CHROMIUM)

# Workspaces (sandbox/): scripts run under bubblewrap, never as a plain subprocess.
$(BWRAP):
	$(SUDO) apt-get install -y bubblewrap || { $(SUDO) apt-get update && $(SUDO) apt-get install -y bubblewrap; }
	test -x $(BWRAP)

# The npm reference MCP server the tests start (@modelcontextprotocol/server-everything, pinned
# with its lock file): installed into tests/mcp_npm/node_modules from the npm registry.
$(MCP_NPM): tests/mcp_npm/package.json tests/mcp_npm/package-lock.json
	cd tests/mcp_npm && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The official AG-UI client (@ag-ui/client's HttpAgent, pinned with its lock file) the AG-UI tests
# drive under Node: installed into tests/agui_npm/node_modules from the npm registry.
$(AGUI_NPM): tests/agui_npm/package.json tests/agui_npm/package-lock.json
	cd tests/agui_npm && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The host agent's command (the project is not pip-installed: a small launcher runs this checkout).
$(VENV)/bin/host-agent: scripts/host-agent $(RUNTIME)
	install -m 755 scripts/host-agent $@

$(VENV)/bin/agent: scripts/agent $(RUNTIME)
	install -m 755 scripts/agent $@

# The official A2A TCK (../shared/a2a-tck, not on PyPI) runs in a venv of its own pinned dependencies.
$(TCK_STAMP): tests/a2a/tck-requirements.txt
	test -x $(TCK_VENV)/bin/python || $(PYTHON) -m venv $(TCK_VENV)
	$(TCK_VENV)/bin/pip install -q --disable-pip-version-check -r tests/a2a/tck-requirements.txt
	rm -f $(TCK_VENV)/.installed-* && touch $(TCK_STAMP)

venv: $(STAMP) $(CHROMIUM) $(BWRAP) $(MCP_NPM) $(AGUI_NPM) $(VENV)/bin/host-agent $(VENV)/bin/agent $(TCK_STAMP)

dev: $(RUNTIME) $(BWRAP) $(VENV)/bin/agent  ## serve every function and the dev console on one port (SQLite store, local auth)
	PORT=$(PORT) MCP_ALLOW_PRIVATE_URLS=$${MCP_ALLOW_PRIVATE_URLS:-true} $(PY) devserver.py

demo: $(RUNTIME)  ## guided tour through the HTTP API against a fresh local server
	$(PY) scripts/demo.py

# HOST=alt picks the alternative host, on the command line (`make host-demo HOST=alt`) or from the
# environment (`HOST=alt make host-demo`). From the environment only reference|alt count: some shells
# export HOST as the machine's name, which is not a host kind (then: the reference host).
DEMO_HOST = $(if $(filter command line,$(origin HOST)),$(HOST),$(if $(filter reference alt,$(HOST)),$(HOST),reference))
host-demo: $(RUNTIME) $(VENV)/bin/host-agent  ## the host agent books a movie on a host (offline; HOST=reference|alt)
	$(PY) -m hostagent.demo --host $(DEMO_HOST)

test: $(STAMP) $(CHROMIUM) $(BWRAP) $(MCP_NPM) $(AGUI_NPM) $(VENV)/bin/host-agent $(VENV)/bin/agent $(TCK_STAMP) lint typecheck  ## everything CI runs
	$(PY) -m pytest -q  # includes tests/infra, which runs the infra suite in infra/.venv

unit: $(STAMP) $(MCP_NPM)
	$(PY) -m pytest -q tests/agent tests/unit

conformance: $(STAMP) $(TCK_STAMP)  ## the official A2A TCK against make dev's /a2a (one process; two on Firestore); in make test too
	$(PY) -m pytest -q tests/a2a/test_tck.py

lint: $(STAMP)
	$(PY) -m ruff check .

typecheck: $(STAMP)
	$(PY) -m mypy

infra-test:
	$(MAKE) -C infra test

# `BENCH_PEERS=1 make bench` also measures the peer frameworks (bench/peers.py) in their own venv,
# pinned in bench/peers-requirements.txt, built here when missing (BENCH_PEERS_VENV elsewhere reuses
# one). make bench measures the previous commit beside this tree (bench/versus.py; BENCH_BASELINE_REF).
BENCH_PEERS_VENV ?= var/peers-venv
BENCH_BASELINE_REF ?= HEAD~1
PEERS_STAMP := $(BENCH_PEERS_VENV)/.installed-$(shell cat bench/peers-requirements.txt | sha256sum | cut -c1-12)
PEERS_DEPS := $(if $(filter 1 true yes,$(BENCH_PEERS)),$(PEERS_STAMP))

$(PEERS_STAMP): bench/peers-requirements.txt
	test -x $(BENCH_PEERS_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_PEERS_VENV)
	$(BENCH_PEERS_VENV)/bin/pip install -q --disable-pip-version-check -r bench/peers-requirements.txt
	rm -f $(BENCH_PEERS_VENV)/.installed-* && touch $(PEERS_STAMP)

bench: $(STAMP) $(BWRAP) $(PEERS_DEPS)  ## performance figures (JSON); BENCH_PEERS=1: with the peer frameworks
	@BENCH_PEERS_VENV=$(abspath $(BENCH_PEERS_VENV)) BENCH_BASELINE_REF=$(BENCH_BASELINE_REF) $(PY) -m bench.run

reliability: $(STAMP) $(BWRAP)  ## the approval/resume, plan-session, queue, script and money-budget reliability scenarios (JSON summaries)
	$(PY) -m bench.reliability
	$(PY) -m bench.plan_reliability --sessions 100
	$(PY) -m bench.queue_reliability --threads 20 --runs 5
	$(PY) -m bench.script_reliability --runs 40
	$(PY) -m bench.budget_reliability

load: $(STAMP)  ## 50 users stream runs with approvals for 60 s against make dev on the Firestore emulator (JSON)
	$(PY) -m bench.load $(LOAD_ARGS)

bundle:  ## deployable function source in dist/bundle
	bash scripts/bundle.sh

clean:
	rm -rf dist var .mypy_cache .ruff_cache
