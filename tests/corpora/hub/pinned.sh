#!/bin/sh
# Measure one commit of branch hub, read from git (not the work tree, which may be changing):
#   sh pinned.sh COMMIT [measure.py options]
# The commit's files go to a temp folder, found first on PYTHONPATH (the venv's editable install
# of /work/wt-hub comes after it); the folder is removed at the end.
set -eu
commit=$1; shift
repo=${BLIND_HUB_REPO:-/work/wt-hub}
py=${BLIND_HUB_PYTHON:-/work/wt-hub/.venv/bin/python}
src=$(mktemp -d /tmp/blind-hub-src-XXXXXX)
trap 'rm -rf "$src"' EXIT INT TERM
git -C "$repo" archive "$commit" | tar -x -C "$src"
here=$(cd "$(dirname "$0")" && pwd)
PYTHONPATH="$src" BLIND_HUB_GRADER="$py -m grader.cli" "$py" "$here/measure.py" "$@"
