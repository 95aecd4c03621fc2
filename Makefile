# autograd-lab: `make lab` opens the course, `make test` runs every test. Both install first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8888
PYTEST := $(BIN)/python -m pytest
NBVAL  := --nbval-current-env -n 2 --dist loadscope

.PHONY: install test-install system-deps hub-deps browser-deps hub lab test test-unit lint unit-tests nbval-solutions nbval-notebooks build check clean drift

# torch's CPU build, as CI gets it (PyPI's default Linux wheel is the multi-GB CUDA build). If that index
# does not answer within 5 s, pip's own index and settings decide; `make TORCH_INDEX=` skips it.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
ANSWERS := import os, sys, urllib.request as u, concurrent.futures as c; \
	f = c.ThreadPoolExecutor(1).submit(u.urlopen, u.Request(sys.argv[1], method="HEAD"), timeout=4); \
	c.wait([f], 5); os._exit(0 if f.done() and not f.exception() and f.result().status < 400 else 1)

# $(call pip_install,SPEC): pip install SPEC into the venv, torch from its CPU index where that answers
define pip_install
	@if [ -n "$(TORCH_INDEX)" ] && $(BIN)/python -c '$(ANSWERS)' "$(TORCH_INDEX)/torch/"; then \
		echo "installing $(1) (torch: the CPU build from $(TORCH_INDEX))"; \
		$(BIN)/python -m pip install --quiet --index-url "$(TORCH_INDEX)" \
			--extra-index-url https://pypi.org/simple $(1); \
	else \
		echo "installing $(1) (torch's CPU index not used: $(if $(TORCH_INDEX),$(TORCH_INDEX) did not answer within 5 s,TORCH_INDEX is empty); pip's own settings choose torch's build)"; \
		$(BIN)/python -m pip install --quiet $(1); \
	fi
endef

# The course alone, as a learner gets it (`make lab`); `make test` adds the test extra (pyproject.toml).
$(STAMP): pyproject.toml jupyter/overrides.json
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(call pip_install,-e .)
	@# JupyterLab saves widget state with the notebook, so a reopened notebook still shows its widgets
	mkdir -p $(VENV)/share/jupyter/lab/settings
	cp jupyter/overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	touch $(STAMP)

TEST_STAMP := $(VENV)/.installed-test
$(TEST_STAMP): $(STAMP)
	$(call pip_install,-e ".[test]")
	touch $(TEST_STAMP)

test-install: $(TEST_STAMP)

install: $(STAMP)

# Graphviz draws graphs and Chromium runs the browser test. Installed with apt when we are root
# and they are missing; otherwise drawings fall back to text and the browser test says why it skipped.
system-deps:
	@missing=""; command -v dot >/dev/null || missing="$$missing graphviz"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing$$missing with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	elif [ -n "$$missing" ]; then \
		echo "not installed:$$missing (needs root and apt-get); the tests that need them will say so"; \
	fi

# The learner works in a workspace of their own (my-work/, ignored by git; AUTOGRAD_LAB_WORKSPACE moves
# it), made from notebooks/ and updated without overwriting their files; JupyterLab opens there, and the same
# server serves Notebook 7 (its /tree/ URL). The server runs with the venv's bin first on PATH, so JupyterLab's
# terminal finds the course's python and its `grader` command (`grader status`). Its terminal is the shell a
# terminal gets when `make lab` runs in one ($$SHELL, not a login shell): started without a TTY (in the background,
# under nohup, by a spawner), jupyter_server_terminals would start a login shell, whose /etc/profile puts PATH back
# and loses the venv. The URL is printed again once the server answers, below its start-up log.
lab: install system-deps
	@dir=$$($(BIN)/python -m grader workspace --port $(PORT) --print-dir) || exit 1; \
	token=$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(24))'); \
	flags=""; [ "$$(id -u)" = 0 ] && flags="--allow-root"; \
	shell="$${SHELL:-}"; [ -x "$$shell" ] || shell=$$(command -v bash || command -v sh); \
	url="http://127.0.0.1:$(PORT)/lab/tree/00_start_here.ipynb?token=$$token"; \
	nb7="http://127.0.0.1:$(PORT)/tree/00_start_here.ipynb?token=$$token"; \
	echo "autograd-lab: $$url"; \
	PATH="$(abspath $(BIN)):$$PATH"; export PATH; \
	( for i in $$(seq 120); do sleep 1; \
		if $(BIN)/python -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' \
			$(PORT) 2>/dev/null; then sleep 2; \
			printf '\nautograd-lab is ready: %s\n(in Notebook 7: %s)\n\n' "$$url" "$$nb7"; break; fi; \
	done ) & \
	exec $(BIN)/jupyter lab $$flags --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) \
		--ServerApp.port_retries=0 --IdentityProvider.token="$$token" \
		--ServerApp.terminado_settings="{\"shell_command\": [\"$$shell\"]}" \
		--ServerApp.root_dir="$$dir" "$$dir/00_start_here.ipynb"

# JupyterHub's proxy, configurable-http-proxy, comes from npm into .hub/ (ignored by git). Without npm (or
# without the network) nothing fails: `make hub` and the hub test say what is missing.
CHP := .hub/node_modules/.bin/configurable-http-proxy
hub-deps:
	@if [ -x $(CHP) ] || command -v configurable-http-proxy >/dev/null; then :; \
	elif command -v npm >/dev/null; then \
		echo "installing configurable-http-proxy into .hub/ with npm"; \
		npm install --prefix .hub --no-audit --no-fund --silent --fetch-timeout=20000 --fetch-retries=1 \
			configurable-http-proxy@5 >/dev/null 2>&1 || echo "npm could not install configurable-http-proxy; the hub test will say so"; \
	else \
		echo "npm not found: configurable-http-proxy not installed (make hub and the hub test need it)"; \
	fi

# axe-core, the accessibility checker tests/test_browser_a11y.py runs on the course's widgets, comes from npm into
# .axe/ (ignored by git), as the hub's proxy does. Without npm (or the network) nothing fails: that test says why it
# skips.
AXE := .axe/node_modules/axe-core/axe.min.js
browser-deps:
	@if [ -f $(AXE) ]; then :; \
	elif command -v npm >/dev/null; then \
		echo "installing axe-core into .axe/ with npm"; \
		npm install --prefix .axe --no-audit --no-fund --silent --fetch-timeout=20000 --fetch-retries=1 \
			axe-core@4 >/dev/null 2>&1 || echo "npm could not install axe-core; the browser's accessibility test will say so"; \
	else \
		echo "npm not found: axe-core not installed (the browser's accessibility test needs it)"; \
	fi

# A local JupyterHub on 127.0.0.1:$(HUB_PORT) with $(HUB_USERS) demo users (as root: real Unix users,
# agl-demo-N, each server running as its user); Ctrl-C stops it and every user's server.
HUB_PORT  ?= 8000
HUB_USERS ?= 3
hub: test-install hub-deps
	$(BIN)/python -m grader.instructor.hub start --users $(HUB_USERS) --port $(HUB_PORT)

# `make test`: the installs, then lint in the background while one pytest run takes the unit
# tests, every solution (strict nbval) and every learner notebook (run untouched) on TEST_JOBS workers:
# most tests wait on kernels, servers and browsers, so three workers keep two cores busy. The long
# modules are handed out first (conftest.py's LONGEST_FIRST). Lint's output follows the tests'. The course's
# modules are byte-compiled first: with PYTHONDONTWRITEBYTECODE set (as on some CI machines) every kernel and
# grading process would compile them from source again, about 0.1 s of CPU each.
TEST_JOBS ?= 3
SUITE := tests solutions notebooks --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
	-n $(TEST_JOBS) --dist loadscope --no-loadscope-reorder
test: test-install system-deps hub-deps browser-deps
	@mkdir -p test-artifacts; \
	$(MAKE) --no-print-directory lint > test-artifacts/lint.log 2>&1 & lint=$$!; \
	$(BIN)/python -m compileall -q grader tests conftest.py > /dev/null; \
	$(PYTEST) $(SUITE); tests=$$?; \
	wait $$lint; linted=$$?; \
	echo "--- make lint"; cat test-artifacts/lint.log; \
	[ $$linted = 0 ] || echo "make lint failed (exit $$linted)"; \
	[ $$tests = 0 ] && [ $$linted = 0 ]

# The code's own checks (configured in pyproject.toml): ruff's lint and format, mypy on the engine
# and the probes, and the import layers (instructor > learner > units > probes > engine).
lint: test-install
	$(BIN)/ruff check --quiet .
	$(BIN)/ruff format --check --quiet .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# --dist loadscope: a module's tests stay in one worker, so a module-scoped fixture (a graded class) is built
# once, not once in each worker as --dist load would.
unit-tests: test-install
	$(PYTEST) tests -n $(TEST_JOBS) --dist loadscope --no-loadscope-reorder

# `make test-unit U=03`: every test of one unit and the cross-unit checks a content change needs: its own tests,
# its questions, generators, claims, exercises and shortcuts (the parametrised modules, filtered to the unit), the
# course's registry and versions (test_questions, test_grade_truth: a new question needs release-version), the
# spoiler and layout checks, build --check, and its two notebooks under nbval.
UNIT_MODULES := tests/test_variants.py tests/test_claims.py tests/test_cases.py tests/test_shortcuts.py \
	tests/test_exercise_roundtrip.py tests/test_error_answers.py
COURSE_MODULES := tests/test_questions.py tests/test_grade_truth.py tests/test_notebook_content.py tests/test_layout.py
test-unit: test-install
	@test -n "$(U)" || { echo "usage: make test-unit U=03"; exit 2; }
	$(BIN)/python -m grader build --check
	$(PYTEST) $(wildcard tests/test_unit$(U).py) $(COURSE_MODULES) -n $(TEST_JOBS) --dist loadscope
	$(PYTEST) $(UNIT_MODULES) -k "$(U)." -n $(TEST_JOBS) --dist loadscope
	$(PYTEST) --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg $(NBVAL) $(wildcard solutions/$(U)_*.ipynb)
	$(PYTEST) --nbval-lax $(NBVAL) $(wildcard notebooks/$(U)_*.ipynb)

nbval-solutions: test-install
	$(PYTEST) --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg $(NBVAL) solutions

nbval-notebooks: test-install
	$(PYTEST) --nbval-lax $(NBVAL) notebooks

build: install
	$(BIN)/python -m grader build

check: install
	$(BIN)/python -m grader build --check

# The course on another torch: `make drift TORCH=2.15.0` builds .venv-torch-2.15.0 beside .venv
# (reused next time), runs `grader verify` and strict nbval over solutions/ there, and writes
# docs/drift/2.15.0.md. LIFT_CAP=1 lifts a torch cap in pip's configuration for that environment
# only; JOBS=2 runs nbval on two workers.
drift:
	@test -n "$(TORCH)" || { echo "usage: make drift TORCH=2.15.0 [LIFT_CAP=1] [JOBS=2]"; exit 2; }
	$(PYTHON) tools/drift.py $(TORCH) --python $(PYTHON) --jobs $(or $(JOBS),1) $(if $(filter 1 yes true,$(LIFT_CAP)),--lift-cap)

clean:
	rm -rf $(VENV) .venv-torch-* .pytest_cache .hub
