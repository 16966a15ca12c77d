#!/usr/bin/env bash
# mini.sh TASK_DIR SPOOL OUT_DIR [run.py options, e.g. --label dry-run]
# One mini-swe-agent attempt against a fresh relay on SPOOL, graded like `quire eval run`; writes OUT_DIR/result.json.
set -eu
exec python3 "$(dirname "$0")/run.py" "$@"
