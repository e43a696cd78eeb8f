# One virtual environment in .venv/, created from the project's own files.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test bench bench-long clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	# capsh runs the hostile suite with Docker's default capabilities (tests/test_settings.py);
	# libseccomp2 is what the seccomp filter loads. Installed where the build runs as root.
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! { command -v capsh && ldconfig -p | grep -q libseccomp.so.2; } >/dev/null; then \
		{ apt-get update -qq && apt-get install -y -qq libcap2-bin libseccomp2; } >/dev/null || true; fi
	touch $(STAMP)

demo: setup
	$(BIN)/grader grade examples/attention_numpy --assignment attention_numpy --out demo-out

test: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

# 200 submissions through both executors, the issue-14 targets, `grader grade one.ipynb` and `grader check`
bench: setup
	$(BIN)/python benchmarks/bench_grading.py -n 200 --jobs 2

# 10,000 submissions in one batch: memory and descriptors sampled every tenth
bench-long: setup
	$(BIN)/python benchmarks/bench_grading.py --long 10000 --jobs 2

clean:
	rm -rf $(VENV) .grader-cache demo-out
