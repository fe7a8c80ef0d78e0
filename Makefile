# Everything runs from a virtual environment made here, installed against constraints.txt
# (pinned versions; torch==2.13.0, the CPU build on machines without CUDA).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test bench screenshots clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[torch,tensorflow,parquet,dev]"
	touch $(STAMP)

demo: setup
	$(BIN)/devicewatch demo

test: setup
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q -p no:cacheprovider

# The budgets of docs/benchmarks.md; each workload has its own bench too (bench/bench_*.py).
bench: setup
	$(BIN)/python -m bench.bench_recorder
	$(BIN)/python -m bench.bench_gpu_sampling
	$(BIN)/python -m bench.bench_analysis
	$(BIN)/python -m bench.bench_dashboard

screenshots: setup
	$(BIN)/python -m bench.screenshots

clean:
	rm -rf $(VENV) build *.egg-info
