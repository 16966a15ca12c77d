#!/usr/bin/env python3
"""Table of mini-swe-agent attempts from their result.json files (written by run.py / mini.sh).

  aggregate.py PATH... [--include-dry-run] [--markdown]

PATH: a result.json, or a folder searched for */result.json (and result.json itself). Rows labelled dry-run are
listed but left out of the means unless --include-dry-run.
"""
import argparse, glob, json, os, statistics


def collect(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(set(glob.glob(os.path.join(p, "result.json")) + glob.glob(os.path.join(p, "**", "result.json"), recursive=True)))
        else:
            files.append(p)
    return [(f, json.load(open(f))) for f in dict.fromkeys(files)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--include-dry-run", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    rows = collect(a.paths)
    cols = ["task", "label", "config", "resolved", "calls", "prompt_tokens", "fresh_tokens", "completion_tokens", "exit", "wall_s"]
    table = []
    for f, r in rows:
        table.append({"task": r.get("task"), "label": r.get("label") or "",
                      "config": (r.get("config") or "mini.yaml").replace(".yaml", ""), "resolved": r.get("resolved"),
                      "calls": r.get("calls"), "prompt_tokens": r.get("prompt_tokens"), "fresh_tokens": r.get("fresh_tokens"),
                      "completion_tokens": r.get("completion_tokens"), "exit": r.get("mini_exit_status"),
                      "wall_s": r.get("wall_seconds")})
    counted = [t for t in table if a.include_dry_run or t["label"] != "dry-run"]
    def mean(k):
        v = [t[k] for t in counted if isinstance(t[k], (int, float))]
        return round(statistics.mean(v), 1) if v else ""
    foot = {"task": f"mean of {len(counted)}", "label": "", "config": "", "resolved":
            f"{sum(bool(t['resolved']) for t in counted)}/{len(counted)}" if counted else "",
            **{k: mean(k) for k in ("calls", "prompt_tokens", "fresh_tokens", "completion_tokens", "wall_s")}, "exit": ""}
    body = [[str(t[c]) for c in cols] for t in table] + [[str(foot[c]) for c in cols]]
    if a.markdown:
        print("| " + " | ".join(cols) + " |"); print("|" + " --- |" * len(cols))
        for line in body:
            print("| " + " | ".join(line) + " |")
        return
    w = [max(len(c), *(len(line[i]) for line in body)) for i, c in enumerate(cols)]
    fmt = lambda line: "  ".join(x.ljust(w[i]) if i < 4 or i == 8 else x.rjust(w[i]) for i, x in enumerate(line))
    print(fmt(cols)); print(fmt(["-" * x for x in w]))
    for line in body[:-1]:
        print(fmt(line))
    print(fmt(["-" * x for x in w])); print(fmt(body[-1]))
    if len(counted) < len(table):
        print(f"({len(table) - len(counted)} dry-run row(s) not in the means: --include-dry-run counts them)")


if __name__ == "__main__":
    main()
