# fairsim: every entry point. `make run` and `make test` set up .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
ARGS ?=

.PHONY: setup run test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)  ## create .venv and install fairsim with its test tools

run: $(STAMP)  ## one simulation on the defaults (conf/config.yaml); extra overrides: make run ARGS="policy=fifo load=0.5"
	$(PY) run.py $(ARGS)

test: $(STAMP)  ## the test suite (what CI runs)
	$(PY) -m pytest

bench: $(STAMP)  ## engine benchmark (python -m fairsim.bench engine)
	$(PY) -m fairsim.bench engine $(ARGS)

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
