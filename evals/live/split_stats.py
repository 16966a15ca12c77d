"""relay.py stats, split: a learn run's spool holds the coding sessions' requests and the note-taker's.

  python3 split_stats.py SPOOL...

Per spool, over answered requests: how many, prompt and fresh tokens (chars/4 of the tools and messages; fresh =
what follows the longest common prefix with the previous request), for coding requests and for note-taker requests
(told apart by the note-taker's system prompt).
"""
import json, os, sys, glob
def text(m):
    c = m.get("content")
    if isinstance(c, list): c = "\n".join(p.get("text", "") for p in c)
    return c or ""
def size(req):
    return len(json.dumps(req.get("messages", []), ensure_ascii=False)) + len(json.dumps(req.get("tools", []), ensure_ascii=False))
for spool in sys.argv[1:]:
    reqs = sorted(glob.glob(os.path.join(spool, "req-*.json")), key=lambda p: int(p.rsplit("-",1)[1][:-5]))
    prev = ""
    out = {"code": [0,0,0], "taker": [0,0,0]}
    for p in reqs:
        n = int(p.rsplit("-",1)[1][:-5])
        if not os.path.exists(os.path.join(spool, f"resp-{n}.json")): continue
        r = json.load(open(p))
        s = json.dumps(r.get("tools", []), ensure_ascii=False) + json.dumps(r.get("messages", []), ensure_ascii=False)
        k = 0
        while k < min(len(s), len(prev)) and s[k] == prev[k]: k += 1
        prev = s
        kind = "taker" if "You keep the notebook" in text(r["messages"][0]) else "code"
        o = out[kind]; o[0] += 1; o[1] += len(s)//4; o[2] += (len(s)-k)//4
    print(spool.split('/')[-2], "code: %d req, prompt %d, fresh %d" % tuple(out["code"]), "| taker: %d req, prompt %d, fresh %d" % tuple(out["taker"]))
