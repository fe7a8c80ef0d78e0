# Everything runs from a virtual environment made here, installed against constraints.txt
# (pinned versions; torch==2.13.0, the CPU build on machines without CUDA).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test bench screenshots gpu-proof gpu-proof-rehearsal gpu-wheels python314 clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[torch,tensorflow,parquet,dev]"
	# Keras 2, for the tests of scripts that use it: its metadata requires the `tensorflow`
	# distribution, which would install the CUDA build over tensorflow-cpu's same module.
	$(BIN)/python -m pip install --quiet --no-deps tf_keras==2.21.0
	touch $(STAMP)

demo: setup
	$(BIN)/devicewatch demo

test: setup
	$(BIN)/ruff check devicewatch workloads
	$(BIN)/mypy
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

# The GPU proof (docs/gpu-proof.md): the four experiments recorded on an NVIDIA GPU, each
# checked on the spot, and their figures beside the sources' in recordings/gpu-proof/figures.md.
# On a GPU machine without a package registry, see docs/gpu-proof.md for the one-line command.
gpu-proof: setup
	$(BIN)/python -m bench.gpu_proof --out recordings/gpu-proof

# The same sequence on a machine without a GPU (cpu for cuda, tiny sizes): a few minutes.
gpu-proof-rehearsal: setup
	$(BIN)/python -m bench.gpu_proof --out bench/out/gpu-proof-rehearsal --rehearse

# Wheels for Python 3.12 x86-64 of what the GPU machine lacks (bench/gpu_wheels.txt), into .whl/.
gpu-wheels:
	$(PYTHON) -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
		--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
		--platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl -r bench/gpu_wheels.txt

# A Python 3.14 with PyTorch, from Debian's packages, for the attach tests that need
# sys.remote_exec (they are skipped without it): into .python314/, nothing installed.
python314:
	$(PYTHON) -m bench.python314 --into .python314

clean:
	rm -rf $(VENV) build *.egg-info
