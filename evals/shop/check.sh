#!/usr/bin/env bash
# Validate every task of the "shop" eval suite.
#
# For each task, in a temporary copy of what the agent would see (the task
# folder without evaluation/ and solution.patch):
#   1. the visible tests run: exit 1 for bug fixes (the bug is reproduced by a
#      failing test), exit 0 for features and refactors; never a collection error;
#   2. the hidden evaluation FAILS (exit 1) on the untouched project;
#   3. solution.patch applies (git apply, falling back to patch -p1) and touches
#      2 to 4 files, then BOTH the visible tests and the hidden evaluation pass.
# It also checks the task layout, metadata and suite.toml splits, and that no
# caches are left in the suite tree.
#
# Usage: bash evals/shop/check.sh [task-id ...]     (Python 3.11 + pytest needed)
set -u

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PYTHONDONTWRITEBYTECODE=1
PYTEST=(python3 -m pytest -q -p no:cacheprovider)
TMP_ROOT="$(mktemp -d "${TMPDIR:-/tmp}/shop-check.XXXXXX")"
trap 'rm -rf "$TMP_ROOT"' EXIT

if [ "$#" -gt 0 ]; then
  TASKS=("$@")
else
  TASKS=()
  for dir in "$HERE"/*/; do
    [ -f "$dir/metadata.json" ] && TASKS+=("$(basename "$dir")")
  done
fi

passed=0
failed=0
failed_ids=()

pytest_rc() { # dir target logfile -> prints exit code
  (cd "$1" && "${PYTEST[@]}" "$2" >"$3" 2>&1)
  echo $?
}

summary_line() { # logfile -> last pytest summary line
  grep -E "(passed|failed|error|no tests ran)" "$1" | tail -n 1
}

for id in "${TASKS[@]}"; do
  task="$HERE/$id"
  problems=()
  notes=()

  # --- layout and metadata ---------------------------------------------------
  for f in prompt.txt metadata.json solution.patch; do
    [ -f "$task/$f" ] || problems+=("missing $f")
  done
  for d in src tests evaluation; do
    [ -d "$task/$d" ] || problems+=("missing $d/")
  done
  meta_err="$(python3 - "$task" "$id" <<'PY'
import json, sys
task, tid = sys.argv[1], sys.argv[2]
m = json.load(open(f"{task}/metadata.json"))
errors = []
want = {"id", "title", "category", "difficulty", "language", "test_command", "dependencies"}
if set(m) != want:
    errors.append(f"metadata keys {sorted(m)}")
if m.get("id") != tid:
    errors.append("metadata id != folder name")
if m.get("category") not in ("bugfix", "feature", "refactor"):
    errors.append("bad category")
if m.get("difficulty") not in ("easy", "medium", "hard"):
    errors.append("bad difficulty")
if m.get("language") != "python" or m.get("dependencies") != ["pytest"]:
    errors.append("bad language/dependencies")
if m.get("test_command") != "python3 -m pytest -q -p no:cacheprovider tests":
    errors.append("unexpected test_command")
print("; ".join(errors))
PY
)"
  [ -n "$meta_err" ] && problems+=("$meta_err")
  category="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("category",""))' "$task/metadata.json" 2>/dev/null)"

  if [ "${#problems[@]}" -eq 0 ]; then
    work="$TMP_ROOT/$id/tree"
    logs="$TMP_ROOT/$id"
    mkdir -p "$work"
    cp -R "$task"/. "$work"/
    rm -rf "$work/evaluation" "$work/solution.patch"

    # --- 1. visible tests on the starting state --------------------------------
    rc="$(pytest_rc "$work" tests "$logs/visible-before.log")"
    if [ "$category" = "bugfix" ]; then
      [ "$rc" = "1" ] || problems+=("visible tests before fix: exit $rc, want 1 (failing test)")
    else
      [ "$rc" = "0" ] || problems+=("visible tests before change: exit $rc, want 0")
    fi
    notes+=("visible before: $(summary_line "$logs/visible-before.log")")

    # --- 2. hidden evaluation must fail on the untouched project ---------------
    cp -R "$task/evaluation" "$work/evaluation"
    rc="$(pytest_rc "$work" evaluation "$logs/hidden-before.log")"
    [ "$rc" = "1" ] || problems+=("hidden evaluation on untouched project: exit $rc, want 1")
    notes+=("hidden before: $(summary_line "$logs/hidden-before.log")")
    rm -rf "$work/evaluation"
    find "$work" -name __pycache__ -type d -prune -exec rm -rf {} +

    # --- 3. reference solution -------------------------------------------------
    nfiles="$(grep -c '^diff --git ' "$task/solution.patch")"
    if [ "$nfiles" -lt 2 ] || [ "$nfiles" -gt 4 ]; then
      problems+=("solution.patch touches $nfiles files, want 2-4")
    fi
    if (cd "$work" && git apply --check "$task/solution.patch" >/dev/null 2>&1); then
      (cd "$work" && git apply "$task/solution.patch")
    elif (cd "$work" && patch -p1 --dry-run -s <"$task/solution.patch" >/dev/null 2>&1); then
      (cd "$work" && patch -p1 -s <"$task/solution.patch")
    else
      problems+=("solution.patch does not apply")
    fi
    rc="$(pytest_rc "$work" tests "$logs/visible-after.log")"
    [ "$rc" = "0" ] || problems+=("visible tests after solution: exit $rc, want 0")
    cp -R "$task/evaluation" "$work/evaluation"
    rc="$(pytest_rc "$work" evaluation "$logs/hidden-after.log")"
    [ "$rc" = "0" ] || problems+=("hidden evaluation after solution: exit $rc, want 0")
    notes+=("after: visible $(summary_line "$logs/visible-after.log"), hidden $(summary_line "$logs/hidden-after.log")")
  fi

  if [ "${#problems[@]}" -eq 0 ]; then
    passed=$((passed + 1))
    printf 'PASS  %-36s %-8s %s files | %s\n' "$id" "$category" "$nfiles" "$(IFS='|'; echo "${notes[*]}")"
  else
    failed=$((failed + 1))
    failed_ids+=("$id")
    printf 'FAIL  %-36s %-8s\n' "$id" "$category"
    for p in "${problems[@]}"; do printf '        - %s\n' "$p"; done
    for log in "$TMP_ROOT/$id"/*.log; do
      [ -f "$log" ] || continue
      printf '        --- %s (tail)\n' "$(basename "$log")"
      tail -n 6 "$log" | sed 's/^/        | /'
    done
  fi
done

# --- suite-level checks --------------------------------------------------------
suite_err="$(python3 - "$HERE" <<'PY'
import sys, tomllib
from pathlib import Path
here = Path(sys.argv[1])
errors = []
try:
    suite = tomllib.loads((here / "suite.toml").read_text())
except (OSError, tomllib.TOMLDecodeError) as exc:
    print(f"suite.toml: {exc}")
    sys.exit()
tasks = {p.parent.name for p in here.glob("*/metadata.json")}
listed = [t for split in ("train", "val", "test") for t in suite.get("splits", {}).get(split, [])]
if sorted(listed) != sorted(tasks):
    errors.append(f"splits {sorted(listed)} != tasks {sorted(tasks)}")
caches = [str(p.relative_to(here)) for p in here.rglob("*")
          if p.name in ("__pycache__", ".pytest_cache") or p.suffix == ".pyc"]
if caches:
    errors.append(f"caches left in tree: {caches[:5]}")
print("; ".join(errors))
PY
)"
if [ -n "$suite_err" ]; then
  echo "SUITE FAIL: $suite_err"
  failed=$((failed + 1))
fi

echo "----"
echo "$passed passed, $failed failed (of ${#TASKS[@]} tasks)"
[ "$failed" -eq 0 ] || { echo "failed: ${failed_ids[*]:-suite}"; exit 1; }
