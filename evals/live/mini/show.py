#!/usr/bin/env python3
"""play.py show for mini-swe-agent: the same session keying, state and STOP rule (it runs ../play.py), with one
difference in presentation only: mini sends each command's result as a JSON object ({"returncode": .., "output": ..}
with newlines escaped as \\n); here that object is shown decoded, the output verbatim. The request itself is unchanged.

  show.py show --spool S --player P [--wait SECONDS] [--raw]     (--raw: play.py's rendering, JSON as sent)
"""
import importlib.util, json, os, sys

sys.dont_write_bytecode = True  # leave no __pycache__ beside play.py

spec = importlib.util.spec_from_file_location("play", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "play.py"))
play = importlib.util.module_from_spec(spec); spec.loader.exec_module(play)
_render = play.render_msg


def decode(text):
    try:
        o = json.loads(text)
    except (ValueError, TypeError):
        return None
    if not isinstance(o, dict) or "returncode" not in o:
        return None
    out = [f"returncode: {o['returncode']}"]
    if o.get("exception_info"):
        out.append(f"exception_info: {o['exception_info']}")
    if "output" in o:
        out.append("output:\n" + o["output"])
    else:
        out.append("output_head:\n" + o.get("output_head", ""))
        out.append(f"[... {o.get('elided_chars', '?')} characters elided by the agent; warning: {o.get('warning', '')}]")
        out.append("output_tail:\n" + o.get("output_tail", ""))
    return "\n".join(out)


def render_msg(m):
    if m.get("role") == "tool":
        d = decode(play.text_of(m.get("content")))
        if d is not None:
            return f"### tool result [{m.get('tool_call_id')}] (the agent's JSON observation, shown decoded)\n{d}"
    if m.get("role") == "user":
        d = decode(play.text_of(m.get("content")))
        if d is not None:
            return f"### user (the agent's JSON observation, shown decoded)\n{d}"
    if m.get("role") == "assistant" and m.get("tool_calls"):
        out = [f"### assistant", play.text_of(m.get("content"))]
        for tc in m["tool_calls"]:
            f = tc.get("function", {})
            try:
                cmd = json.loads(f.get("arguments") or "")["command"]
                out.append(f"  -> {f.get('name')} command:\n{cmd}")
            except (ValueError, KeyError, TypeError):
                out.append(f"  -> {f.get('name')} {f.get('arguments')}")
        return "\n".join(out)
    return _render(m)


if __name__ == "__main__":
    if "--raw" in sys.argv:
        sys.argv.remove("--raw")
    else:
        play.render_msg = render_msg
    sys.exit(play.main())
