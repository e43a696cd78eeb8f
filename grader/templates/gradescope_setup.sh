#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image (written by `grader gradescope-zip`).
# It installs Python >= 3.11, a virtual environment with the CPU build of torch and the grader,
# then proves the assignment's loop closes (the solution scores full marks, the skeleton zero).
set -euo pipefail
SOURCE=/autograder/source
VENV=/autograder/venv

PY=""
for candidate in python3.13 python3.12 python3.11; do
  if command -v "$candidate" >/dev/null 2>&1; then PY="$candidate"; break; fi
done
if [ -z "$PY" ]; then
  apt-get update
  apt-get install -y software-properties-common
  add-apt-repository -y ppa:deadsnakes/ppa
  apt-get update
  apt-get install -y python3.11 python3.11-venv
  PY=python3.11
fi
"$PY" -m venv "$VENV" || { apt-get update && apt-get install -y "$PY-venv" && "$PY" -m venv "$VENV"; }

"$VENV/bin/pip" install --quiet --upgrade pip
# The CPU build first: an unpinned torch would pull a multi-GB CUDA build.
"$VENV/bin/pip" install --quiet torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
# The grader with its instructor extra, at the library versions the reference values were computed with.
"$VENV/bin/pip" install --quiet -c "$SOURCE/constraints.txt" "$SOURCE/grader-src[instructor]"

# The course (config, skeleton, data, reference bundle) is the grader's alone: student code runs
# as another uid, and also under Landlock where the kernel has it.
chmod -R go-rwx "$SOURCE/course"

"$VENV/bin/grader" validate @ASSIGNMENT@ --config "$SOURCE/course/config.yaml"
