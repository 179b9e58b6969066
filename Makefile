# The two commands a newcomer needs: `make run` (the bundled example, no GitHub) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test bench golden clean container-test

$(STAMP): requirements.lock requirements-dev.lock pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "diagbot needs Python 3.11 or newer; $(PYTHON) is " + sys.version.split()[0] + ": run make with PYTHON=python3.11 (or newer)")'
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/diagbot run --baseline examples/baseline --out build/example --no-fail

test: $(STAMP)
	$(BIN)/ruff check diagbot tests bench scripts entrypoint.py
	$(BIN)/ruff format --check diagbot tests bench scripts entrypoint.py
	$(BIN)/mypy
	$(BIN)/coverage run -m pytest
	@echo "branch coverage of diagbot/ in process (subprocess tests are not counted):"
	@$(BIN)/coverage report

golden: $(STAMP)
	UPDATE_GOLDEN=1 $(BIN)/python -m pytest tests
	git diff --stat -- tests/golden

bench: $(STAMP)
	$(BIN)/python bench/bench_eval.py
	$(BIN)/python bench/bench_workspace.py
	$(BIN)/python bench/bench_agent.py
	$(BIN)/python bench/bench_agent_parts.py
	$(BIN)/python bench/bench_agent_otlp.py

# Builds the action's image with buildah (no Docker) and runs it against the loopback GitHub server. Needs root.
container-test: $(STAMP)
	PY=$(BIN)/python scripts/container-test.sh

clean:
	rm -rf $(VENV) build
