#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image (written by `grader gradescope-zip`).
# It finds or installs Python >= 3.11 and makes a virtual environment holding the grader's light
# dependencies and what grading @ASSIGNMENT@ needs (requirements.txt: the libraries its notebooks
# import, at the versions its reference values were computed with; torch's CPU build when they
# import torch). Then it grades the skeleton from the reference bundle, which must score zero with
# every question unanswered: a check that the install grades. The zip holds no solution.
#
# GRADER_SETUP_DRY_RUN=1 prints the install commands instead of running them.
set -euo pipefail
@ROOT_LINE@
SOURCE="$ROOT/source"
VENV="$ROOT/venv"
# PyPI's Linux torch is the CUDA build (several GB); this index has the CPU build. Used only when it
# answers within a few seconds; otherwise torch comes from the index pip is configured with.
TORCH_INDEX="${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
DRY="${GRADER_SETUP_DRY_RUN:-}"

run() {
  if [ -n "$DRY" ]; then echo "$*"; else "$@"; fi
}

# A Python that runs (a version manager's shim may exist without one behind it), 3.11 first: the
# version the course is most likely built with.
PY="${GRADER_SETUP_PYTHON:-}"
for candidate in python3.11 python3.12 python3.13 python3; do
  if [ -z "$PY" ] && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; then
    PY="$candidate"
  fi
done
if [ -z "$PY" ]; then
  run apt-get update
  run apt-get install -y software-properties-common
  run add-apt-repository -y ppa:deadsnakes/ppa
  run apt-get update
  run apt-get install -y python3.11 python3.11-venv
  PY=python3.11
fi
if [ -z "$DRY" ]; then
  "$PY" -m venv "$VENV" || { apt-get update && apt-get install -y "$PY-venv" && "$PY" -m venv "$VENV"; }
fi

extra=()
if grep -q '^torch==' "$SOURCE/requirements.txt"; then
  if "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=5)' \
      "$TORCH_INDEX" >/dev/null 2>&1; then
    extra=(--extra-index-url "$TORCH_INDEX")
  else
    echo "setup.sh: $TORCH_INDEX does not answer: torch comes from the configured index"
  fi
fi
run "$VENV/bin/pip" install --quiet -c "$SOURCE/constraints.txt" -r "$SOURCE/requirements.txt" ${extra[@]+"${extra[@]}"} \
  "$SOURCE/grader-src"

# The course (config, skeleton, data, reference bundle) is the grader's alone: student code runs
# as another uid, and also under Landlock where the kernel has it.
run chmod -R go-rwx "$SOURCE/course"

run "$VENV/bin/grader" validate @ASSIGNMENT@ --config "$SOURCE/course/config.yaml"
