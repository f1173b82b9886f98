# fairsim: every entry point. `make run` and `make test` set up .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LOCK := requirements.lock
UV_VERSION := 0.13.9
ARGS ?=
SCALE ?= small
RESULTS ?= results

.PHONY: setup lock run test test-fast format docs docs-serve smoke reproduce reproduce-load reproduce-choices reproduce-field reproduce-capacity reproduce-all verify manifest bench ui ui-stop clean

# pip and setuptools from the lock first, so that the lock's one source distribution
# (antlr4-python3-runtime) and fairsim itself are built with the locked setuptools, not a newest one.
$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	awk '/^[^ #]/ { take = /^(pip|setuptools)==/ } take' $(LOCK) > $(VENV)/install-tools.lock
	$(PY) -m pip install --quiet --require-hashes --no-deps -r $(VENV)/install-tools.lock
	$(PY) -m pip install --quiet --require-hashes --no-deps --no-build-isolation -r $(LOCK)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	$(PY) -c "import pathlib, sysconfig; pathlib.Path(sysconfig.get_path('purelib'), 'fairsim-repository.pth').write_text(str(pathlib.Path.cwd()) + '\n')"  # the repository as a path entry: from the folder holding the clone, import fairsim finds this package before Python settles for the clone's folder as an empty namespace package (setuptools' editable finder is asked only after that)
	$(PY) -m compileall -q fairsim hydra_plugins  # bytecode at setup: under PYTHONDONTWRITEBYTECODE=1 no run writes it, so each would compile fairsim from source
	touch $(STAMP)

setup: $(STAMP)  ## create .venv with the exact versions of requirements.lock (hashes checked), then fairsim itself, editable

# uv (UV_VERSION, pip-installed into .venv) resolves for Python 3.11 on Linux x86-64 and writes every
# file's sha256. Versions already in the lock are kept while pyproject.toml allows them, so a refresh
# with nothing changed rewrites the same file; ARGS="--upgrade-package numpy" moves one, ARGS="--upgrade" all.
lock:  ## refresh requirements.lock from pyproject.toml: uv pip compile pyproject.toml - --extra dev --extra docs --extra dask --extra slurm --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28, stdin: the build-system requires (setuptools>=77) and pip
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet uv==$(UV_VERSION)
	{ $(PY) -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['build-system']['requires'], sep='\n')"; echo pip; } | \
	$(VENV)/bin/uv pip compile --quiet pyproject.toml - --extra dev --extra docs --extra dask --extra slurm --generate-hashes \
	    --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
	    --custom-compile-command 'make lock' --output-file $(LOCK) $(ARGS)

run: $(STAMP)  ## one simulation on the defaults (conf/config.yaml); extra overrides: make run ARGS="policy=fifo load=0.5"
	$(PY) run.py $(ARGS)

# pytest-xdist: one worker per core, each test file on one worker (a file's module-scoped fixtures,
# such as test_bad_input's batch of command lines, then run once)
test: $(STAMP)  ## the test suite (what CI runs), on every core: about 15 min on 2 cores, with the local-Slurm test where Slurm is installed
	$(PY) -m pytest -n auto --dist loadfile

test-fast: $(STAMP)  ## the suite without the tests marked slow (sweeps, reproduce, fault injection in subprocesses): about 3 min on 2 cores
	$(PY) -m pytest -n auto --dist loadfile -m "not slow"

format: $(STAMP)  ## ruff: format the tree and fix the lint findings it can ([tool.ruff] in pyproject.toml; tests/test_style.py checks both)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

docs: $(STAMP)  ## the documentation site (MkDocs + Material, mkdocs.yml) into site/, strict: a broken link or a page outside the nav fails; open site/index.html in a browser (file://: every page and link; search needs make docs-serve)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: $(STAMP)  ## the documentation site with search, on http://127.0.0.1:8000 (localhost only; rebuilt as docs/ changes); Ctrl-C ends it
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --strict --dev-addr 127.0.0.1:8000

smoke: $(STAMP)  ## CI smoke sweep: 3 policies x 2 loads, Hydra -> joblib -> results.parquet + MLflow -> a figure
	$(PY) run.py -m +experiment=smoke
	$(PY) -m fairsim.figures.sweep_summary results/sweeps/smoke

reproduce: $(STAMP)  ## every paper figure + paper_figs/REPORT.md (SCALE=full for the paper's sizes)
	$(PY) -m fairsim.paper.reproduce --scale $(SCALE) $(ARGS)

reproduce-load: $(STAMP)  ## which claims hold where: the paper_load sweep (504 cells, about 20 min on 2 cores) + fig_load, then REPORT.md
	$(PY) -m fairsim.paper.reproduce --scale $(SCALE) --only fig_load $(ARGS)
	$(PY) -m fairsim.paper.reproduce --scale $(SCALE) --draw-only

reproduce-choices: $(STAMP)  ## which verdicts depend on FFT's open choices: the paper_open_choices and paper_shortest_job sweeps + their REPORT.md section
	$(PY) -m fairsim.paper.reproduce --scale $(SCALE) --only open_choices $(ARGS)
	$(PY) -m fairsim.paper.reproduce --scale $(SCALE) --draw-only

reproduce-field: $(STAMP)  ## FFT against Sia and Pollux: the paper_field sweep (rigid and elastic jobs, traces 1-2) + its figure and REPORT.md section
	$(PY) -m fairsim.paper.reproduce --scale $(SCALE) --only field $(ARGS)
	$(PY) -m fairsim.paper.reproduce --scale $(SCALE) --draw-only

reproduce-capacity: $(STAMP)  ## which claims survive outages: the paper_capacity sweep (240 cells, about 7 min: testbed policies under failures, 10x failures and a spot pool) + its figure and REPORT.md section
	$(PY) -m fairsim.paper.reproduce --scale $(SCALE) --only capacity $(ARGS)
	$(PY) -m fairsim.paper.reproduce --scale $(SCALE) --draw-only

reproduce-all: $(STAMP)  ## reproduce, then reproduce-load, reproduce-choices, reproduce-field and reproduce-capacity: every section of REPORT.md (about 80 min on 2 cores from empty results)
	$(MAKE) reproduce
	$(MAKE) reproduce-load
	$(MAKE) reproduce-choices
	$(MAKE) reproduce-field
	$(MAKE) reproduce-capacity

verify: $(STAMP)  ## recompute a fixed sample of the committed figures' cells (every testbed cell of seed 0, one full-scale FFT cell) and compare each per-job table with paper_figs/MANIFEST.json; about 1 min on 2 cores
	$(PY) -m fairsim.paper.verify $(ARGS)

manifest: $(STAMP)  ## rewrite paper_figs/MANIFEST.json from the sample's (fresh) cells in results/, after make reproduce and make reproduce SCALE=full
	$(PY) -m fairsim.paper.verify --write $(ARGS)

ui: $(STAMP)  ## MLflow UI on http://127.0.0.1:5000 over $(RESULTS)/mlflow.db (RESULTS=<folder> for a run's own results_dir; from any folder: python -m fairsim.experiment.ui <folder>); prints each experiment's runs table address first; Ctrl-C (or make ui-stop) ends all of its processes
	$(PY) -m fairsim.experiment.ui $(RESULTS) --port 5000

ui-stop: $(STAMP)  ## stop the MLflow UI that make ui started over $(RESULTS), every process of it
	$(PY) -m fairsim.experiment.ui $(RESULTS) --stop

bench: $(STAMP)  ## engine benchmark (python -m fairsim.bench engine)
	$(PY) -m fairsim.bench engine $(ARGS)

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
