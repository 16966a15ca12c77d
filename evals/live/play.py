#!/usr/bin/env python3
"""Show a relay request to one model player, whole on first sight, then only what is new.

  play.py show --spool S --player P [--wait SECONDS]

A player plays exactly one session (one coding session or one note-taker job). The
session is keyed by its system prompt and first user message; a request of another
session is not shown (exit 3): the player must stop. Answer with relay.py answer.
"""
import argparse, glob, hashlib, json, os, sys, time

def pending(spool):
    reqs = sorted(glob.glob(os.path.join(spool, "req-*.json")), key=lambda p: int(p.rsplit("-", 1)[1][:-5]))
    for p in reqs:
        n = int(p.rsplit("-", 1)[1][:-5])
        if not os.path.exists(os.path.join(spool, f"resp-{n}.json")) and not os.path.exists(os.path.join(spool, f"gone-{n}")):
            return n
    return None

def text_of(c):
    if isinstance(c, list):
        return "\n".join(p.get("text", json.dumps(p)) for p in c)
    return c or ""

def key_of(req):
    msgs = req.get("messages", [])
    head = [(m.get("role"), text_of(m.get("content"))) for m in msgs[:2]]
    return hashlib.sha1(json.dumps(head).encode()).hexdigest()[:12]

def render_msg(m):
    role = m.get("role")
    c = text_of(m.get("content"))
    if role == "tool":
        return f"### tool result [{m.get('tool_call_id')}]\n{c}"
    out = [f"### {role}", c]
    for tc in m.get("tool_calls") or []:
        out.append(f"  -> {tc['function']['name']} {tc['function']['arguments']}")
    return "\n".join(x for x in out if x is not None)

def render_tools(tools):
    out = ["## TOOLS"]
    for t in tools:
        f = t.get("function", t)
        out.append(f"- {f.get('name')}: {f.get('description','').strip()}")
        out.append(f"  params: {json.dumps(f.get('parameters', {}), ensure_ascii=False)}")
    return "\n".join(out)

def main():
    ap = argparse.ArgumentParser()
    sp = ap.add_subparsers(dest="cmd", required=True)
    s = sp.add_parser("show")
    s.add_argument("--spool", required=True); s.add_argument("--player", required=True)
    s.add_argument("--wait", type=float, default=1200)
    a = ap.parse_args()
    state_path = os.path.join(a.spool, f"player-{a.player}.json")
    state = json.load(open(state_path)) if os.path.exists(state_path) else {}
    t0 = time.time()
    n = None
    ended = os.path.join(a.spool, "ENDED")
    while time.time() - t0 < a.wait:
        n = pending(a.spool)
        if n is not None and n != state.get("last_n"):
            break
        n = None
        if os.path.exists(ended):
            # stream.sh writes it when the run is over: no request will come.
            print("STOP: the run has ended; no more requests will come. "
                  "Your session is over: write your report and end.")
            return 3
        time.sleep(0.5)
    if n is None:
        print(f"no new request in {a.wait:.0f} s; run show again (the agent may be running tests)"); return 0
    time.sleep(0.1)
    req = json.load(open(os.path.join(a.spool, f"req-{n}.json")))
    key = key_of(req)
    msgs = req.get("messages", [])
    if state.get("key") and state["key"] != key:
        print(f"STOP: request {n} belongs to a NEW session (another task or the note-taker). "
              "Do not answer it. Your session is over: write your report and end.")
        return 3
    out = [f"# REQUEST {n}  (answer: python3 /work/shared/tools/relay.py answer --spool {a.spool} {n} ...)"]
    seen = state.get("seen", 0) if state.get("key") else 0
    if not state.get("key") or req.get("tools") != state.get("tools"):
        out.append(render_tools(req.get("tools") or []))
    def h(x): return hashlib.sha1(json.dumps(x, sort_keys=True).encode()).hexdigest()
    if seen and (seen > len(msgs) or h(msgs[:seen]) != state.get("prefix")):
        out.append("## (earlier messages changed (compaction): the whole conversation follows)")
        seen = 0
    if seen:
        out.append(f"## (messages 1-{seen} as before; new since your last answer:)")
    else:
        out.append("## FULL CONVERSATION")
    for m in msgs[seen:]:
        out.append(render_msg(m))
    print("\n".join(out))
    json.dump({"key": key, "seen": len(msgs), "last_n": n, "tools": req.get("tools"),
               "prefix": h(msgs)}, open(state_path, "w"))
    return 0

if __name__ == "__main__":
    sys.exit(main())
