#!/usr/bin/env python3
"""One mini-swe-agent attempt at one eval task, against a relay, graded like `quire eval run`.

  run.py TASK_DIR SPOOL OUT_DIR [--step-limit 40] [--relay PATH] [--label dry-run]

1. Copies the task folder to OUT_DIR/tree as Quire's agent view does (everything but .git, a top-level evaluation/,
   solution.patch and Python caches).
2. Starts `relay.py serve` on SPOOL (fresh: SPOOL must not hold requests yet) and runs the `mini` CLI non-interactively
   (-y --exit-immediately, stdin /dev/null) with its default config (mini.yaml) in the tree, the task text =
   prompt.txt, model openai/relay at the relay, cost tracking errors ignored, no retries (a retried request would be
   answered twice), step limit 40.
3. Grades as quire-evals/src/runner.rs does: the task's test_command (visible tests), then evaluation/ copied into
   tree/evaluation and `python3 -m pytest -q -p no:cacheprovider evaluation`; resolved = both exit 0.
4. Writes OUT_DIR/result.json (calls, prompt and fresh tokens over answered requests from `relay.py stats`, wall time,
   mini's exit status and the usage litellm reported) and stops the relay.
"""
import argparse, glob, json, os, shutil, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_RELAY = os.environ.get("RELAY", "/work/shared/tools/relay.py")
EVALUATION_COMMAND = "python3 -m pytest -q -p no:cacheprovider evaluation"


def agent_view(task_dir, dest):
    def ignore(d, names):
        top = os.path.abspath(d) == os.path.abspath(task_dir)
        return [n for n in names if n in (".git", "__pycache__", ".pytest_cache")
                or (top and n in ("evaluation", "solution.patch"))]
    shutil.copytree(task_dir, dest, ignore=ignore, symlinks=True)


def run_tests(cmd, cwd, timeout):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    t0 = time.time()
    try:
        p = subprocess.run(cmd, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        out, code, to = p.stdout + p.stderr, p.returncode, False
    except subprocess.TimeoutExpired as e:
        out, code, to = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), None, True
    tail = [l for l in out.strip().splitlines() if l.strip()]
    return {"command": cmd, "exit_code": code, "timed_out": to, "passed": code == 0 and not to,
            "summary": tail[-1] if tail else "", "seconds": round(time.time() - t0, 1)}, out


def relay_stats(relay, spool):
    out = subprocess.run([sys.executable, relay, "stats", "--spool", spool], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and all(p.isdigit() for p in parts):
            n, pt, fr, ct = map(int, parts)
            rows.append({"n": n, "prompt": pt, "fresh": fr, "completion": ct,
                         "answered": os.path.exists(os.path.join(spool, f"resp-{n}.json"))})
    return rows, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("task_dir"); ap.add_argument("spool"); ap.add_argument("out_dir")
    ap.add_argument("--step-limit", type=int, default=40)
    ap.add_argument("--relay", default=DEFAULT_RELAY)
    ap.add_argument("--label", default="", help="e.g. dry-run: recorded in result.json")
    ap.add_argument("--test-timeout", type=float, default=600)
    ap.add_argument("--config", default="mini.yaml",
                    help="mini's config: mini.yaml (default of the `mini` CLI: one `bash` tool, native tool calls) or "
                         "mini_textbased.yaml (replies carry one ```mswea_bash_command block, no tools)")
    a = ap.parse_args()
    task_dir, spool, out = (os.path.abspath(p) for p in (a.task_dir, a.spool, a.out_dir))
    meta = json.load(open(os.path.join(task_dir, "metadata.json")))
    task_text = open(os.path.join(task_dir, "prompt.txt")).read()
    for dep in meta.get("dependencies") or []:
        if subprocess.run([sys.executable, "-c", f"import {dep.replace('-', '_')}"], capture_output=True).returncode:
            sys.exit(f"the task needs {dep!r} and {sys.executable} cannot import it: pip install {dep} first "
                     "(else the agent's test runs and the grading fail for want of it)")
    if glob.glob(os.path.join(spool, "req-*.json")):
        sys.exit(f"{spool} already holds requests: use a fresh spool per attempt")
    if os.path.exists(os.path.join(out, "result.json")):
        sys.exit(f"{out}/result.json exists: use a fresh OUT_DIR")
    os.makedirs(spool, exist_ok=True); os.makedirs(out, exist_ok=True)
    tree = os.path.join(out, "tree")
    if os.path.exists(tree):
        shutil.rmtree(tree)
    agent_view(task_dir, tree)

    portfile = spool.rstrip("/") + ".port"
    if os.path.exists(portfile):
        os.remove(portfile)
    relay_log = open(os.path.join(out, "relay.log"), "w")
    relay = subprocess.Popen([sys.executable, a.relay, "serve", "--spool", spool, "--portfile", portfile,
                              "--timeout", "3600"], stdout=relay_log, stderr=subprocess.STDOUT)
    for _ in range(100):
        if os.path.exists(portfile) and open(portfile).read().strip():
            break
        time.sleep(0.1)
    port = open(portfile).read().strip()
    base = f"http://127.0.0.1:{port}/v1"
    print(f"relay on {base}, spool {spool}; players: see {HERE}/player.md", flush=True)

    traj = os.path.join(out, "traj.json")
    cmd = ["mini", "-c", a.config,
           "-c", f"agent.step_limit={a.step_limit}",
           "-c", "agent.cost_limit=0",
           "-c", "model.cost_tracking=ignore_errors",
           "-c", f"model.model_kwargs.api_base={base}",
           "-c", "model.model_kwargs.api_key=relay-not-a-key",
           "-c", "model.model_kwargs.timeout=1800",
           "-c", "model.model_kwargs.num_retries=0",
           "-c", "model.model_kwargs.max_retries=0",
           "-c", f"environment.cwd={tree}",
           "-m", "openai/relay", "-y", "--exit-immediately", "-t", task_text, "-o", traj]
    if "textbased" in a.config:
        cmd += ["--model-class", "litellm_textbased"]
    env = dict(os.environ, MSWEA_CONFIGURED="true", MSWEA_COST_TRACKING="ignore_errors",
               MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT="1", MSWEA_GLOBAL_CONFIG_DIR=os.path.join(out, "mswea-config"),
               LITELLM_LOCAL_MODEL_COST_MAP="True", OPENAI_API_KEY="relay-not-a-key", NO_COLOR="1")
    t0 = time.time()
    with open(os.path.join(out, "mini.log"), "w") as log:
        rc = subprocess.run(cmd, cwd=tree, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT).returncode
    agent_seconds = time.time() - t0

    visible, vout = run_tests(meta["test_command"], tree, a.test_timeout)
    ev = os.path.join(tree, "evaluation")
    if os.path.exists(ev):
        shutil.rmtree(ev)
    shutil.copytree(os.path.join(task_dir, "evaluation"), ev,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    hidden, hout = run_tests(EVALUATION_COMMAND, tree, a.test_timeout)
    open(os.path.join(out, "visible.log"), "w").write(vout)
    open(os.path.join(out, "hidden.log"), "w").write(hout)

    relay.terminate()
    # A player waiting for a next request stops at once (play.py show).
    open(os.path.join(spool, "ENDED"), "w").close()
    try:
        relay.wait(10)
    except subprocess.TimeoutExpired:
        relay.kill()
    rows, stats_text = relay_stats(a.relay, spool)
    open(os.path.join(out, "relay-stats.txt"), "w").write(stats_text)
    answered = [r for r in rows if r["answered"]]

    info, mini_usage = {}, {"prompt_tokens": 0, "completion_tokens": 0, "responses": 0}
    if os.path.exists(traj):
        t = json.load(open(traj))
        info = t.get("info", {})
        for m in t.get("messages", []):
            u = ((m.get("extra") or {}).get("response") or {}).get("usage") if isinstance((m.get("extra") or {}).get("response"), dict) else None
            if u:
                mini_usage["prompt_tokens"] += u.get("prompt_tokens") or 0
                mini_usage["completion_tokens"] += u.get("completion_tokens") or 0
                mini_usage["responses"] += 1

    result = {
        "task": meta.get("id", os.path.basename(task_dir)), "task_dir": task_dir, "agent": "mini-swe-agent",
        "mini_version": info.get("mini_version"), "label": a.label,
        "resolved": visible["passed"] and hidden["passed"],
        "calls": len(answered), "requests": len(rows),
        "prompt_tokens": sum(r["prompt"] for r in answered),
        "fresh_tokens": sum(r["fresh"] for r in answered),
        "completion_tokens": sum(r["completion"] for r in answered),
        "token_measure": "relay.py stats (chars/4), answered requests only",
        "mini_reported_usage": mini_usage,
        "mini_exit_status": info.get("exit_status"), "mini_api_calls": (info.get("model_stats") or {}).get("api_calls"),
        "mini_returncode": rc,
        "visible": visible, "hidden": hidden,
        "agent_seconds": round(agent_seconds, 1), "wall_seconds": round(time.time() - t0, 1),
        "step_limit": a.step_limit, "config": a.config, "spool": spool, "tree": tree,
        "per_request": rows,
    }
    json.dump(result, open(os.path.join(out, "result.json"), "w"), indent=2)
    print(json.dumps({k: result[k] for k in ("task", "label", "resolved", "calls", "prompt_tokens", "fresh_tokens",
                                             "mini_exit_status", "wall_seconds")}))


if __name__ == "__main__":
    main()
