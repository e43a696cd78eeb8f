# One virtual environment in .venv/, created from the project's own files.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# What grading needs (make setup, make demo), and what only make test needs besides (make test-setup)
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.test-installed
TORCH := torch==2.13.0
# PyPI's Linux torch is the CUDA build (several GB); this index has the CPU build, 2.13.0+cpu, which
# pip prefers to PyPI's 2.13.0 for the same pin. Used only when it answers within a few seconds, so a
# machine that reaches PyPI alone (a mirror, a CPU wheel of its own) installs as before, without
# waiting on retries.
TORCH_INDEX := https://download.pytorch.org/whl/cpu
# Docker's default seccomp profile (make test-setup puts it there; tests/docker_seccomp.py reads it)
DOCKER_SECCOMP := /usr/local/share/grader-tests/docker-default-seccomp.json

.PHONY: setup test-setup demo test test-shuffled bench bench-long bench-cluster clean python-version torch-index-args

setup: $(STAMP)
test-setup: $(TEST_STAMP)

# The first thing any target that installs does: a one-line message in a second, not a failed
# install after a minute.
python-version:
	@v=$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2], int(sys.version_info >= (3, 11)))' 2>/dev/null) \
	  || { echo "make: cannot run $(PYTHON); the grader needs Python 3.11 or newer (make PYTHON=python3.11 ...)." >&2; exit 1; }; \
	  [ "$${v#* }" = 1 ] || { echo "make: $(PYTHON) is Python $${v% *}; the grader needs Python 3.11 or newer (make PYTHON=python3.11 ...)." >&2; exit 1; }

# Prints pip's arguments for the CPU index when it answers within 5 seconds, nothing otherwise.
torch-index-args:
	@if $(PYTHON) -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=5)' \
	  '$(TORCH_INDEX)' >/dev/null 2>&1; then echo "--extra-index-url $(TORCH_INDEX)"; fi

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory python-version
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU build of torch first, from the CPU index when it can be reached.
	@args=$$($(MAKE) -s --no-print-directory torch-index-args PYTHON=$(BIN)/python); \
	  [ -n "$$args" ] || echo "# $(TORCH_INDEX) does not answer: torch from the configured index"; \
	  echo "$(BIN)/pip install --quiet $(TORCH) $$args"; \
	  $(BIN)/pip install --quiet $(TORCH) $$args
	$(BIN)/pip install --quiet -e '.[instructor]'
	# libseccomp2 is what the student process's seccomp filter loads when grading (Debian and Ubuntu
	# usually have it already). Installed where the build runs as root and it is missing.
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! ldconfig -p | grep -q libseccomp.so.2; then \
		{ timeout 120 apt-get update -qq && timeout 600 apt-get install -y -qq libseccomp2; } >/dev/null || true; fi
	touch $(STAMP)

# What only the test suite needs, on top of grading's: the dev extra (ruff, mypy, the consumers'
# validators, selenium, ...) and, where the build runs as root, the system's parts of the settings
# the tests grade in. capsh runs the hostile suite with Docker's default capabilities
# (tests/test_settings.py); Debian's python3.11 (with venv) is a Python an ordinary user can run, for
# the settings that grade as one; Chromium and chromedriver drive the review page
# (tests/test_review.py). Each test that needs one of them is skipped, with the reason, where it is
# missing. Node and npm bring configurable-http-proxy, the proxy of the JupyterHub that
# tests/test_review_hub.py starts: installed from npm into .venv/node (never globally); where it
# cannot be, that test fails and says so. One `apt-get update` for all of them.
#
# The package itself is installed already ($(STAMP), editable): only the dev extra's requirements are
# installed here, read from pyproject.toml, so the project is not built a second time (an isolated
# build environment and an editable wheel: 5 s of a quiet machine, 20 s of a loaded one). The proxy's
# npm install, which mostly waits on the network, runs meanwhile.
CHP := $(VENV)/node/node_modules/.bin/configurable-http-proxy
DEV_REQUIREMENTS := $(VENV)/dev-requirements.txt
$(TEST_STAMP): $(STAMP) pyproject.toml
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! { command -v capsh \
	    && /usr/bin/python3.11 -c 'import ensurepip, venv' && command -v chromedriver && command -v npm; } >/dev/null 2>&1; then \
		{ timeout 120 apt-get update -qq && timeout 600 apt-get install -y -qq libcap2-bin python3.11 python3.11-venv \
		    chromium chromium-driver nodejs npm; } >/dev/null || true; fi
	$(BIN)/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["dev"]))' \
	  > $(DEV_REQUIREMENTS)
	@if [ ! -x $(CHP) ]; then \
	  echo "timeout 300 npm install --silent --no-audit --no-fund --prefix $(VENV)/node configurable-http-proxy@5 (alongside pip)"; \
	  { timeout 300 npm install --silent --no-audit --no-fund --prefix $(VENV)/node configurable-http-proxy@5 \
	    || echo "make: configurable-http-proxy was not installed (npm missing or failing): tests/test_review_hub.py fails saying so" >&2; } & \
	fi; \
	echo "$(BIN)/pip install --quiet -r $(DEV_REQUIREMENTS)"; $(BIN)/pip install --quiet -r $(DEV_REQUIREMENTS); installed=$$?; \
	wait; exit $$installed
	# Docker's default seccomp profile, for the setting of tests/test_settings.py that grades under it:
	# the one JSON file of Debian's package of Docker's sources, taken without installing the package.
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ ! -s $(DOCKER_SECCOMP) ]; then \
		d=$$(mktemp -d) && mkdir -p $$(dirname $(DOCKER_SECCOMP)) && (cd $$d && timeout 120 apt-get download -qq golang-github-docker-docker-dev) >/dev/null 2>&1 \
		&& dpkg-deb --fsys-tarfile $$d/*.deb | tar -xO --wildcards '*/docker/docker/profiles/seccomp/default.json' > $$d/p.json \
		&& mv $$d/p.json $(DOCKER_SECCOMP); rm -rf $$d; fi
	touch $(TEST_STAMP)

demo: setup
	$(BIN)/grader grade examples/attention_numpy --assignment attention_numpy --out demo-out

test: test-setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	# Two workers: the suite waits on sandboxes, kernels and sleeps as much as it computes. mypy
	# (half a minute of one core without its cache, as on a fresh clone) runs meanwhile; its report
	# follows pytest's, and the target fails when either does.
	@log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	  echo "$(BIN)/mypy (alongside pytest)"; $(BIN)/mypy > "$$log" 2>&1 & types=$$!; \
	  echo "$(BIN)/python -m pytest -n 2"; $(BIN)/python -m pytest -n 2; tests=$$?; \
	  wait $$types; typed=$$?; \
	  echo "$(BIN)/mypy:"; cat "$$log"; \
	  [ $$typed -eq 0 ] || echo "make test: mypy found errors (above)" >&2; \
	  [ $$tests -eq 0 ] || echo "make test: pytest failed (exit status $$tests)" >&2; \
	  [ $$typed -eq 0 ] && [ $$tests -eq 0 ]

# The suite in an order shuffled by SEED (modules, and the tests within each, across both workers):
# it must pass in any order (issue 47). Without SEED, pytest-random-order draws one and prints it.
test-shuffled: test-setup
	$(BIN)/python -m pytest -n 2 --random-order --random-order-bucket=global $(if $(SEED),--random-order-seed=$(SEED))

# 200 submissions through both executors, the issue-14 targets, `grader grade one.ipynb` and `grader check`
bench: setup
	$(BIN)/python benchmarks/bench_grading.py -n 200 --jobs 2

bench-cluster: setup
	$(BIN)/pip install --quiet -e '.[instructor,cluster]'
	$(BIN)/python benchmarks/bench_cluster.py -n 80 --workers 1,2,4

# 10,000 submissions in one batch: memory and descriptors sampled every tenth
bench-long: setup
	$(BIN)/python benchmarks/bench_grading.py --long 10000 --jobs 2

clean:
	rm -rf $(VENV) .grader-cache demo-out scorecards
