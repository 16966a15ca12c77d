//! Quire's `search` and `list_files` on a large tree, against ripgrep, fd
//! and find on the same tree, in one run, as ratios.
//!
//! Builds (once; reused while [`TREE_VERSION`] is unchanged) a deterministic
//! synthetic tree of about 108,000 files that are not ignored: 120 packages of
//! nested Python, Rust or JavaScript sources of a few KB with functions and
//! classes, tests, Markdown docs, binary assets and a hidden file each, plus
//! what `.gitignore` leaves out (a top-level `build/`, `node_modules/`, logs),
//! which holds copies of the needles so a side that did not honour it would
//! show more hits. The tree has a `.git` folder so fd and rg honour its
//! `.gitignore` as Quire does (Quire honours it with or without one).
//!
//! Each operation goes through the tools' extension the way a session calls
//! it (`WorkspaceTools::execute`: argument parsing, the walk, the search,
//! formatting, caps). Commands get the flags of the same semantics:
//! `.gitignore` honoured, hidden files kept, `.git` skipped (rg: see
//! [`RG_BASE`]), files over 4 MB and binary files skipped. With warm caches,
//! each side is run once to check that both found the same thing, then
//! [`RUNS`] times interleaved (Quire, then each command), and the medians are
//! compared. A command's time includes starting its process (about 1 ms).
//!
//! Quire has no tree-wide symbol index (`read_file` `symbol` shows a
//! definition in a file already known), so the symbol lookup is what the
//! agent does: `search` for `def Name\b|class Name\b` as a regex, alone and
//! with `after` 40 (the definition and its body in one call). `list_files`
//! takes no glob; the glob row is `search` with `glob`, against `rg --glob`.
//!
//! Run: `cargo bench -p quire-tools --bench large_tree`.
//! `QUIRE_BENCH_TREE=<dir>` puts the tree elsewhere (default:
//! `target/bench-tree/v<TREE_VERSION>`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use quire_config::{AgentSource, Loader};
use quire_core::{Action, Ctx, Extension, NullSink, ToolOutput};
use quire_tools::WorkspaceTools;
use quire_types::ToolCall;
use quire_workspace::{Manifest, SessionCopy};
use serde_json::{Value, json};

/// Bump when the tree's layout or contents change, so old trees are rebuilt.
const TREE_VERSION: u32 = 2;
const PACKAGES: usize = 120;
const MODULES: [&str; 6] = ["core", "api", "storage", "billing", "reports", "util"];
const SUBS: usize = 5;
const FILES_PER_SUB: usize = 25;
const TESTS_PER_MODULE: usize = 20;
const DOCS: usize = 20;
const ASSETS: usize = 10;
/// Timed runs per side of each operation (after one checked warm-up run).
const RUNS: usize = 7;

/// The literal needle: in about ten files (source id % 9973 == 17).
const LITERAL: &str = "deprecated_flush_cache(";
/// The regex needle: in about ten other files (source id % 10007 == 503).
const REGEX: &str = r"retry_budget_[0-9]+\s*=";
/// The class defined once in the tree; `LedgerReconcilerFactory` (a near
/// miss) and calls of it are elsewhere.
const SYMBOL: &str = "LedgerReconciler";
/// A literal in about a third of the files (a comment in one function of
/// 25): many hits, cut at the cap.
const COMMON: &str = "TODO(perf)";

const VERBS: [&str; 16] = [
    "load",
    "save",
    "parse",
    "render",
    "merge",
    "split",
    "fetch",
    "build",
    "check",
    "apply",
    "resolve",
    "encode",
    "decode",
    "collect",
    "normalise",
    "schedule",
];
const NOUNS: [&str; 16] = [
    "invoice", "order", "cart", "user", "session", "config", "token", "ledger", "report", "cache",
    "payment", "account", "record", "batch", "window", "policy",
];
const WORDS: [&str; 24] = [
    "the",
    "value",
    "is",
    "kept",
    "when",
    "a",
    "request",
    "arrives",
    "and",
    "every",
    "field",
    "must",
    "be",
    "checked",
    "before",
    "it",
    "reaches",
    "storage",
    "so",
    "callers",
    "see",
    "one",
    "consistent",
    "view",
];

/// xorshift64*: deterministic content without a dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Lang {
    Py,
    Rs,
    Js,
}

impl Lang {
    fn of_package(p: usize) -> Lang {
        [Lang::Py, Lang::Py, Lang::Rs, Lang::Js][p % 4]
    }
    fn ext(self) -> &'static str {
        match self {
            Lang::Py => "py",
            Lang::Rs => "rs",
            Lang::Js => "js",
        }
    }
}

/// What goes into one source file besides its ordinary code.
#[derive(Default, Clone, Copy)]
struct Needles {
    literal: bool,
    regex: bool,
    defines_symbol: bool,
    calls_symbol: bool,
}

impl Needles {
    fn for_id(id: usize) -> Needles {
        Needles {
            literal: id % 9973 == 17,
            regex: id % 10007 == 503,
            defines_symbol: false,
            calls_symbol: id % 20011 == 77,
        }
    }
}

fn sentence(rng: &mut Rng, words: usize) -> String {
    let mut s = String::new();
    for i in 0..words {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(rng.pick(&WORDS));
    }
    s
}

fn python(rng: &mut Rng, id: usize, module: &str, needles: Needles) -> String {
    let target = 1500 + rng.below(3500);
    let mut s = format!(
        "\"\"\"{module}: {}.\"\"\"

import json
import os
from typing import Any, Dict, List, Optional

from .{} import {}_{}

DEFAULT_LIMIT_{id} = {}

",
        sentence(rng, 8),
        rng.pick(&MODULES),
        rng.pick(&VERBS),
        rng.pick(&NOUNS),
        rng.below(1000)
    );
    if needles.defines_symbol {
        s.push_str(&format!(
            "
@dataclass
class {SYMBOL}:
    \"\"\"Matches ledger lines against the bank's.\"\"\"

    ledger: Dict[str, int]

    def reconcile(self, lines):
        missing = []
        for line in lines:
            if line not in self.ledger:
                missing.append(line)
        return missing


def make_{id}():
    return {SYMBOL}Factory().build()

"
        ));
    }
    let mut n = 0;
    while s.len() < target {
        let (verb, noun) = (rng.pick(&VERBS), rng.pick(&NOUNS));
        if rng.chance(25) {
            let class = format!("{}{}{id}x{n}", capital(noun), capital(verb));
            let _ = write!(
                s,
                "
class {class}:
    \"\"\"{}.\"\"\"

    def __init__(self, {noun}, limit=DEFAULT_LIMIT_{id}):
        self.{noun} = {noun}
        self.limit = limit

    def {verb}(self, items):
        total = 0
        for item in items[: self.limit]:
            total += item.amount * {}
        return total

",
                sentence(rng, 6),
                rng.below(10) + 1
            );
        } else {
            let _ = write!(
                s,
                "
def {verb}_{noun}_{id}_{n}(data: Dict[str, Any], *, strict: bool = False) -> List[Any]:
    \"\"\"{}.\"\"\"
    result = []
    for key, value in sorted(data.items()):
        if strict and value is None:
            raise ValueError(f\"missing {{key}}\")
        result.append((key, value))
",
                sentence(rng, 7)
            );
            if rng.chance(4) {
                s.push_str("    # TODO(perf): avoid the sort when data is already ordered\n");
            }
            s.push_str("    return result\n\n");
        }
        n += 1;
    }
    extras(&mut s, id, needles, "#", "    ");
    s
}

fn rust(rng: &mut Rng, id: usize, module: &str, needles: Needles) -> String {
    let target = 1500 + rng.below(3500);
    let mut s = format!(
        "//! {module}: {}.

use std::collections::HashMap;
use crate::{}::{};

pub const DEFAULT_LIMIT_{id}: usize = {};

",
        sentence(rng, 8),
        rng.pick(&MODULES),
        capital(rng.pick(&NOUNS)),
        rng.below(1000)
    );
    let mut n = 0;
    while s.len() < target {
        let (verb, noun) = (rng.pick(&VERBS), rng.pick(&NOUNS));
        if rng.chance(25) {
            let name = format!("{}{}{id}x{n}", capital(noun), capital(verb));
            let _ = write!(
                s,
                "/// {}.
#[derive(Debug, Clone, Default)]
pub struct {name} {{
    pub {noun}: HashMap<String, u64>,
    pub limit: usize,
}}

impl {name} {{
    pub fn {verb}(&self, items: &[u64]) -> u64 {{
        items.iter().take(self.limit).map(|i| i * {}).sum()
    }}
}}

",
                sentence(rng, 6),
                rng.below(10) + 1
            );
        } else {
            let _ = write!(
                s,
                "/// {}.
pub fn {verb}_{noun}_{id}_{n}(data: &HashMap<String, u64>, strict: bool) -> Result<Vec<(String, u64)>, String> {{
    let mut result = Vec::with_capacity(data.len());
    for (key, value) in data {{
        if strict && *value == 0 {{
            return Err(format!(\"missing {{key}}\"));
        }}
        result.push((key.clone(), *value));
    }}
",
                sentence(rng, 7)
            );
            if rng.chance(4) {
                s.push_str("    // TODO(perf): avoid the clone of every key\n");
            }
            s.push_str("    result.sort();\n    Ok(result)\n}\n\n");
        }
        n += 1;
    }
    extras(&mut s, id, needles, "//", "    let _ = ");
    s
}

fn javascript(rng: &mut Rng, id: usize, module: &str, needles: Needles) -> String {
    let target = 1500 + rng.below(3500);
    let mut s = format!(
        "// {module}: {}.
'use strict';

import {{ {}_{} }} from './{}.js';

export const DEFAULT_LIMIT_{id} = {};

",
        sentence(rng, 8),
        rng.pick(&VERBS),
        rng.pick(&NOUNS),
        rng.pick(&MODULES),
        rng.below(1000)
    );
    let mut n = 0;
    while s.len() < target {
        let (verb, noun) = (rng.pick(&VERBS), rng.pick(&NOUNS));
        if rng.chance(25) {
            let name = format!("{}{}{id}x{n}", capital(noun), capital(verb));
            let _ = write!(
                s,
                "/** {}. */
export class {name} {{
  constructor({noun}, limit = DEFAULT_LIMIT_{id}) {{
    this.{noun} = {noun};
    this.limit = limit;
  }}

  {verb}(items) {{
    return items.slice(0, this.limit).reduce((a, i) => a + i.amount * {}, 0);
  }}
}}

",
                sentence(rng, 6),
                rng.below(10) + 1
            );
        } else {
            let _ = write!(
                s,
                "/** {}. */
export function {verb}_{noun}_{id}_{n}(data, strict = false) {{
  const result = [];
  for (const [key, value] of Object.entries(data).sort()) {{
    if (strict && value == null) {{
      throw new Error(`missing ${{key}}`);
    }}
    result.push([key, value]);
  }}
",
                sentence(rng, 7)
            );
            if rng.chance(4) {
                s.push_str("  // TODO(perf): avoid sorting entries twice\n");
            }
            s.push_str("  return result;\n}\n\n");
        }
        n += 1;
    }
    extras(&mut s, id, needles, "//", "  const _ = ");
    s
}

/// The needle lines a file carries, at its end.
fn extras(s: &mut String, id: usize, needles: Needles, comment: &str, stmt: &str) {
    if needles.literal {
        let _ = writeln!(
            s,
            "{comment} kept for old callers\n{stmt}deprecated_flush_cache(handle_{id}, 30);"
        );
    }
    if needles.regex {
        let _ = writeln!(s, "{stmt}retry_budget_{id} = {};", id % 97);
    }
    if needles.calls_symbol {
        let _ = writeln!(
            s,
            "{stmt}LedgerReconciler(ledger_{id});\n{comment} see LedgerReconcilerFactory"
        );
    }
}

fn markdown(rng: &mut Rng, title: &str) -> String {
    let target = 800 + rng.below(3000);
    let mut s = format!("# {title}\n\n");
    while s.len() < target {
        let _ = write!(
            s,
            "## {} {}\n\n{}. {}.\n\n- `{}_{}()` {}\n\n",
            capital(rng.pick(&VERBS)),
            rng.pick(&NOUNS),
            capital(&sentence(rng, 14)),
            capital(&sentence(rng, 10)),
            rng.pick(&VERBS),
            rng.pick(&NOUNS),
            sentence(rng, 6)
        );
    }
    s
}

fn binary(rng: &mut Rng) -> Vec<u8> {
    let len = 1024 + rng.below(7 * 1024);
    let mut out = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0];
    while out.len() < len {
        let b = rng.next().to_le_bytes();
        out.extend_from_slice(&b);
    }
    // Text a search would match if it did not skip binary files.
    out.extend_from_slice(b"\0deprecated_flush_cache( TODO(perf)\n");
    out
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn put(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("bench tree: create folder");
    }
    std::fs::write(&path, bytes).expect("bench tree: write file");
}

/// A source file of package `p`'s language; `id` numbers the source files
/// of the whole tree, so needles land at fixed places.
fn source(lang: Lang, id: usize, module: &str, needles: Needles) -> String {
    let mut rng = Rng::new(id as u64 + 1);
    match lang {
        Lang::Py => python(&mut rng, id, module, needles),
        Lang::Rs => rust(&mut rng, id, module, needles),
        Lang::Js => javascript(&mut rng, id, module, needles),
    }
}

/// Package `p` (its visible files and its ignored ones).
fn write_package(root: &Path, p: usize) {
    let lang = Lang::of_package(p);
    let ext = lang.ext();
    let base = format!("packages/pkg_{p:03}");
    let per_package = MODULES.len() * (SUBS * FILES_PER_SUB + TESTS_PER_MODULE);
    let mut id = p * per_package;
    let mut rng = Rng::new(1_000_000 + p as u64);
    put(
        root,
        &format!("{base}/README.md"),
        markdown(&mut rng, &format!("Package {p}")).as_bytes(),
    );
    let hidden = match lang {
        Lang::Js => ".eslintrc.json",
        _ => ".editorconfig",
    };
    put(
        root,
        &format!("{base}/{hidden}"),
        b"root = true\n[*]\nindent_size = 4\n",
    );
    for module in MODULES {
        for sub in 0..SUBS {
            for f in 0..FILES_PER_SUB {
                let mut needles = Needles::for_id(id);
                // The one definition: package 41 is Python.
                needles.defines_symbol = p == 41 && module == "billing" && sub == 2 && f == 7;
                let name = if lang == Lang::Py && f == 0 {
                    "__init__".to_string()
                } else {
                    format!("{}_{f:02}", NOUNS[(f + sub) % NOUNS.len()])
                };
                let rel = format!("{base}/src/{module}/sub_{sub}/{name}.{ext}");
                put(root, &rel, source(lang, id, module, needles).as_bytes());
                id += 1;
            }
        }
        for t in 0..TESTS_PER_MODULE {
            let rel = format!("{base}/tests/{module}/test_{module}_{t:02}.{ext}");
            put(
                root,
                &rel,
                source(lang, id, module, Needles::for_id(id)).as_bytes(),
            );
            id += 1;
        }
    }
    for d in 0..DOCS {
        let rel = format!("{base}/docs/{}_{d:02}.md", NOUNS[d % NOUNS.len()]);
        put(
            root,
            &rel,
            markdown(&mut rng, &format!("Doc {d}")).as_bytes(),
        );
    }
    for a in 0..ASSETS {
        put(
            root,
            &format!("{base}/assets/icon_{a:02}.png"),
            &binary(&mut rng),
        );
    }
    // Ignored: a log, and for JavaScript packages node_modules with needles.
    put(
        root,
        &format!("{base}/debug.log"),
        b"deprecated_flush_cache( TODO(perf)\n",
    );
    if lang == Lang::Js {
        for dep in 0..5 {
            for f in 0..10 {
                let needles = Needles {
                    literal: true,
                    regex: true,
                    defines_symbol: false,
                    calls_symbol: true,
                };
                let rel = format!("{base}/node_modules/dep_{dep}/lib_{f}.js");
                put(
                    root,
                    &rel,
                    source(Lang::Js, 900_000 + dep * 10 + f, "dep", needles).as_bytes(),
                );
            }
        }
    }
}

/// The ignored top-level build folder: copies with every needle, and a
/// definition of the symbol.
fn write_build(root: &Path) {
    for d in 0..40 {
        for f in 0..100 {
            let id = 800_000 + d * 100 + f;
            let needles = Needles {
                literal: true,
                regex: true,
                defines_symbol: f == 0,
                calls_symbol: true,
            };
            let rel = format!("build/lib_{d:02}/gen_{f:03}.py");
            put(
                root,
                &rel,
                python(&mut Rng::new(id as u64), id, "build", needles).as_bytes(),
            );
        }
    }
}

fn build_tree(root: &Path) {
    let marker = root.join(".bench-complete");
    if marker.is_file() {
        return;
    }
    if root.exists() {
        std::fs::remove_dir_all(root).expect("bench tree: remove a partial tree");
    }
    println!("building the tree in {} (once) ...", root.display());
    let started = Instant::now();
    put(root, ".git/HEAD", b"ref: refs/heads/main\n");
    put(root, ".gitignore", b"build/\nnode_modules/\n*.log\n");
    put(
        root,
        "README.md",
        b"# Synthetic monorepo\n\nFor the large-tree benchmark.\n",
    );
    put(root, ".github/workflows/ci.yml", b"on: push\njobs: {}\n");
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                for p in (t..PACKAGES).step_by(threads) {
                    write_package(root, p);
                }
            });
        }
    });
    write_build(root);
    std::fs::write(&marker, b"").expect("bench tree: write the marker");
    println!("  built in {:.1} s", started.elapsed().as_secs_f64());
}

/// Where the tree lives: `QUIRE_BENCH_TREE`, else `target/bench-tree/v<N>`
/// (the bench binary runs from `target/<profile>/deps`).
fn tree_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("QUIRE_BENCH_TREE") {
        return PathBuf::from(dir).join(format!("v{TREE_VERSION}"));
    }
    let exe = std::env::current_exe().expect("bench: own path");
    let target = exe
        .ancestors()
        .nth(3)
        .map_or_else(std::env::temp_dir, Path::to_path_buf);
    target.join("bench-tree").join(format!("v{TREE_VERSION}"))
}

/// The tools as a session holds them, on the tree in place (no copy).
struct Quire {
    rt: tokio::runtime::Runtime,
    tools: WorkspaceTools,
    ctx: Ctx,
}

impl Quire {
    fn new(root: &Path) -> Quire {
        let manifest = Manifest {
            version: 1,
            original: root.to_path_buf(),
            files: BTreeMap::new(),
            skipped: Vec::new(),
        };
        let copy = SessionCopy::with_manifest(root, root, manifest).expect("bench: open the tree");
        let config = Loader::default()
            .load(&AgentSource::Builtin)
            .expect("bench: built-in config loads");
        Quire {
            rt: tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("bench: tokio runtime"),
            tools: WorkspaceTools::new(Arc::new(copy)),
            ctx: Ctx::new(Arc::new(config), Arc::new(NullSink)),
        }
    }

    fn call(&mut self, tool: &str, args: &Value) -> ToolOutput {
        let Value::Object(map) = args.clone() else {
            panic!("bench: args must be an object");
        };
        let action = Action {
            call: ToolCall::new("bench", tool, args.to_string()),
            args: map,
        };
        let out = self.rt.block_on(self.tools.execute(&mut self.ctx, &action));
        assert!(!out.is_error, "{tool} failed: {}", out.agent_view);
        out
    }
}

fn have(bin: &str) -> Option<String> {
    let out = Command::new(bin).arg("--version").output().ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or(bin)
            .to_string()
    })
}

fn run(root: &Path, bin: &str, args: &[&str]) -> String {
    let out = Command::new(bin)
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .expect("bench: run a comparator");
    // rg exits 1 when nothing matched; anything else is a failure.
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{bin} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// rg with Quire's semantics: `.gitignore` (and `.ignore`) honoured, no
/// ignore files above the tree or global excludes, hidden files kept, files
/// over 4 MB skipped (binary files are skipped by default in both). Quire
/// skips `.git`; rg is not given `--glob '!.git'` for it, which costs rg
/// about 5% here, since the tree's `.git` is one file that matches nothing.
const RG_BASE: &[&str] = &[
    "--no-config",
    "--hidden",
    "--no-ignore-parent",
    "--no-ignore-global",
    "--max-filesize",
    "4M",
    "--color",
    "never",
];

fn rg_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = RG_BASE.to_vec();
    v.extend_from_slice(extra);
    v
}

/// `path:line` of each hit line in Quire's and rg's output.
/// `path:line` of each hit line, Quire's (`path:12 (in Scope):text`) and
/// rg's (`path:12:text`) alike; window headers and numbered lines are not
/// hits.
fn hit_keys(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !is_window_header(l))
        .filter_map(|l| {
            let l = l.strip_prefix("./").unwrap_or(l);
            let (path, line) = quire_tools::search_hit_location(l)?;
            Some(format!("{path}:{line}"))
        })
        .collect()
}

/// `path:12-20` or `path:12-20 (in Scope)`: the head of an `after` window.
fn is_window_header(line: &str) -> bool {
    line.split_once(':').is_some_and(|(_, rest)| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with('-')
    })
}

fn ms(f: &mut dyn FnMut()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// CPU time (user + system, in clock ticks) of this process's threads and
/// of its waited-for children, from `/proc/self/stat`: whether a side is
/// faster by doing less work or by using more cores.
fn cpu_ticks() -> (u64, u64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0, 0);
    };
    // Fields after the command name: state is the 3rd field, utime the 14th.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<u64> = after
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|x| x.parse().ok())
        .collect();
    match f.as_slice() {
        [utime, stime, cutime, cstime] => (utime + stime, cutime + cstime),
        _ => (0, 0),
    }
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux).
fn ticks_per_sec() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// One timed side of an operation.
struct Side<'a> {
    name: String,
    f: Box<dyn FnMut() + 'a>,
}

/// Median wall time and mean CPU time of one side, in ms.
#[derive(Clone, Copy)]
struct Times {
    wall: f64,
    cpu: f64,
}

struct Row {
    op: String,
    quire: Times,
    /// The command and its times; `None` when its binary is missing.
    other: Option<(String, Times)>,
}

/// Times Quire's side and each command, interleaved, median of [`RUNS`].
fn measure(rows: &mut Vec<Row>, op: &str, mut quire: Box<dyn FnMut() + '_>, mut others: Vec<Side>) {
    let tick_ms = 1000.0 / ticks_per_sec();
    let mut q = Vec::new();
    let mut q_ticks = 0;
    let mut o: Vec<(Vec<f64>, u64)> = others.iter().map(|_| (Vec::new(), 0)).collect();
    for _ in 0..RUNS {
        let before = cpu_ticks().0;
        q.push(ms(&mut quire));
        q_ticks += cpu_ticks().0 - before;
        for (i, side) in others.iter_mut().enumerate() {
            let before = cpu_ticks().1;
            o[i].0.push(ms(&mut side.f));
            o[i].1 += cpu_ticks().1 - before;
        }
    }
    let times = |wall: Vec<f64>, ticks: u64| Times {
        wall: median(wall),
        cpu: ticks as f64 * tick_ms / RUNS as f64,
    };
    let quire = times(q, q_ticks);
    if others.is_empty() {
        rows.push(Row {
            op: op.to_string(),
            quire,
            other: None,
        });
    }
    for (side, (wall, ticks)) in others.into_iter().zip(o) {
        rows.push(Row {
            op: op.to_string(),
            quire,
            other: Some((side.name, times(wall, ticks))),
        });
    }
}

fn main() {
    let root = tree_root();
    build_tree(&root);
    let root = root.as_path();
    let rg = have("rg");
    let fd = have("fdfind")
        .map(|v| ("fdfind", v))
        .or_else(|| have("fd").map(|v| ("fd", v)));
    let find = have("find");
    let mut quire = Quire::new(root);
    let mut rows = Vec::new();
    let mut skipped = Vec::new();

    println!(
        "machine: {} cores, load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    for (name, v) in [
        ("rg", &rg),
        ("fd", &fd.as_ref().map(|f| f.1.clone())),
        ("find", &find),
    ] {
        match v {
            Some(v) => println!("{name}: {v}"),
            None => {
                println!("{name}: not found; its rows are skipped");
                skipped.push(name);
            }
        }
    }

    // ---- list_files: the whole tree (depth 12 is the tool's deepest), and
    // the default depth 3 from the root (what a session starts with).
    let files = walk_count(root);
    for depth in [12usize, 3] {
        let list_args = json!({"depth": depth});
        let listing = quire.call("list_files", &list_args).agent_view;
        let shown = listing.lines().filter(|l| !l.starts_with('(')).count();
        let cut: usize = listing
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix('(')?.split(' ').next()?.parse().ok())
            .unwrap_or(0);
        let entries = shown + cut;
        if depth == 12 {
            println!(
                "tree: {} ({entries} entries not ignored, {files} of them files)",
                root.display()
            );
            println!();
        }
        let depth_arg = depth.to_string();
        let fd_list: Vec<String> = [
            "--hidden",
            "--exclude",
            ".git",
            "--no-ignore-parent",
            "--color",
            "never",
            "--max-depth",
            &depth_arg,
        ]
        .map(String::from)
        .to_vec();
        // find reads no ignore files: the tree's .gitignore spelt as prunes.
        let find_list: Vec<String> = [
            ".",
            "-maxdepth",
            &depth_arg,
            "(",
            "-name",
            ".git",
            "-o",
            "-name",
            "build",
            "-o",
            "-name",
            "node_modules",
            ")",
            "-prune",
            "-o",
            "-name",
            "*.log",
            "-o",
            "-print",
        ]
        .map(String::from)
        .to_vec();
        let mut others: Vec<Side> = Vec::new();
        if let Some((bin, _)) = fd {
            let args: Vec<&str> = fd_list.iter().map(String::as_str).collect();
            let n = run(root, bin, &args).lines().count();
            assert_eq!(
                n, entries,
                "fd and list_files (depth {depth}) saw different trees"
            );
            let fd_list = fd_list.clone();
            others.push(Side {
                name: "fd".into(),
                f: Box::new(move || {
                    let args: Vec<&str> = fd_list.iter().map(String::as_str).collect();
                    run(root, bin, &args);
                }),
            });
        }
        if find.is_some() {
            let args: Vec<&str> = find_list.iter().map(String::as_str).collect();
            // find prints the root itself as `.`.
            let n = run(root, "find", &args).lines().count() - 1;
            assert_eq!(
                n, entries,
                "find and list_files (depth {depth}) saw different trees"
            );
            let find_list = find_list.clone();
            others.push(Side {
                name: "find".into(),
                f: Box::new(move || {
                    let args: Vec<&str> = find_list.iter().map(String::as_str).collect();
                    run(root, "find", &args);
                }),
            });
        }
        let label = if depth == 12 {
            format!("list_files whole tree ({entries} entries)")
        } else {
            format!("list_files depth {depth} from the root ({entries} entries)")
        };
        let q = &mut quire;
        measure(
            &mut rows,
            &label,
            Box::new(move || {
                q.call("list_files", &list_args);
            }),
            others,
        );
    }

    // ---- search: literal, regex, glob, symbol, many hits.
    let symbol_re = format!(r"def {SYMBOL}\b|class {SYMBOL}\b");
    let searches: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "search literal",
            json!({"pattern": LITERAL}),
            vec!["-n", "--no-heading", "-F", LITERAL],
        ),
        (
            "search regex",
            json!({"pattern": REGEX, "regex": true}),
            vec!["-n", "--no-heading", REGEX],
        ),
        (
            "search literal, glob **/*.py",
            json!({"pattern": LITERAL, "glob": "**/*.py"}),
            vec!["-n", "--no-heading", "-F", "--glob", "**/*.py", LITERAL],
        ),
        (
            "symbol lookup (search def|class regex)",
            json!({"pattern": symbol_re, "regex": true}),
            vec!["-n", "--no-heading", &symbol_re],
        ),
    ];
    for (op, args, rg_extra) in &searches {
        let out = quire.call("search", args).agent_view;
        let keys = hit_keys(&out);
        let file_count = keys
            .iter()
            .filter_map(|k| k.rsplit_once(':').map(|(p, _)| p.to_string()))
            .collect::<BTreeSet<_>>()
            .len();
        let label = format!("{op} ({} hits, {file_count} files)", keys.len());
        let mut others = Vec::new();
        if rg.is_some() {
            let rg_full = rg_args(rg_extra);
            let theirs = hit_keys(&run(root, "rg", &rg_full));
            assert_eq!(keys, theirs, "{op}: Quire and rg found different hits");
            others.push(Side {
                name: "rg".into(),
                f: Box::new(move || {
                    run(root, "rg", &rg_full);
                }),
            });
        }
        let q = &mut quire;
        measure(
            &mut rows,
            &label,
            Box::new(move || {
                q.call("search", args);
            }),
            others,
        );
    }

    // The definition with its body in one call (what the tool description
    // offers): `after` 40, against rg -A 40.
    {
        let args = json!({"pattern": symbol_re, "regex": true, "after": 40});
        let out = quire.call("search", &args).agent_view;
        assert!(out.contains(&format!("class {SYMBOL}:")), "{out}");
        let mut others = Vec::new();
        if rg.is_some() {
            let rg_full = rg_args(&["-n", "--no-heading", "-A", "40", &symbol_re]);
            let theirs = run(root, "rg", &rg_full);
            assert!(theirs.contains(&format!("class {SYMBOL}:")), "{theirs}");
            others.push(Side {
                name: "rg -A 40".into(),
                f: Box::new(move || {
                    run(root, "rg", &rg_full);
                }),
            });
        }
        let q = &mut quire;
        measure(
            &mut rows,
            "symbol lookup with body (after 40)",
            Box::new(move || {
                q.call("search", &args);
            }),
            others,
        );
    }

    // Many hits: Quire shows 40 (the cap) but counts every hit in every
    // file, as `rg --count` does.
    {
        let args = json!({"pattern": COMMON});
        let out = quire.call("search", &args).agent_view;
        let summary = out.lines().last().unwrap_or("");
        let numbers: Vec<usize> = summary
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .collect();
        let (total, files) = match summary.find(" matches in ") {
            Some(_) => (numbers[1], numbers[2]),
            None => panic!("many-hits search not cut: {summary}"),
        };
        let mut others = Vec::new();
        if rg.is_some() {
            let rg_full = rg_args(&["--count", "-F", COMMON]);
            let theirs = run(root, "rg", &rg_full);
            let rg_total: usize = theirs
                .lines()
                .filter_map(|l| l.rsplit_once(':')?.1.parse::<usize>().ok())
                .sum();
            assert_eq!(
                (total, files),
                (rg_total, theirs.lines().count()),
                "many hits: counts differ"
            );
            others.push(Side {
                name: "rg --count".into(),
                f: Box::new(move || {
                    run(root, "rg", &rg_full);
                }),
            });
        }
        let q = &mut quire;
        measure(
            &mut rows,
            &format!("search literal, many hits ({total} in {files} files, 40 shown)"),
            Box::new(move || {
                q.call("search", &args);
            }),
            others,
        );
    }

    println!(
        "median wall time of {RUNS} warm runs each, interleaved (cpu: mean user + system time per run); ratio = Quire / command wall time"
    );
    println!(
        "{:<58} {:>8} {:>7}  {:<11} {:>8} {:>7} {:>7}",
        "operation", "Quire ms", "cpu", "command", "ms", "cpu", "ratio"
    );
    let mut worst: f64 = 0.0;
    for r in &rows {
        match &r.other {
            Some((name, other)) => {
                let ratio = r.quire.wall / other.wall;
                worst = worst.max(ratio);
                println!(
                    "{:<58} {:>8.1} {:>7.0}  {:<11} {:>8.1} {:>7.0} {:>6.2}x",
                    r.op, r.quire.wall, r.quire.cpu, name, other.wall, other.cpu, ratio
                );
            }
            None => println!(
                "{:<58} {:>8.1} {:>7.0}  {:<11} {:>8} {:>7} {:>7}",
                r.op, r.quire.wall, r.quire.cpu, "(missing)", "-", "-", "-"
            ),
        }
    }
    for name in skipped {
        println!("({name} missing: its comparisons were skipped)");
    }
    println!("worst ratio: {worst:.2}x (target: at most 1.5x)");
    println!("load average after: {}", load_average());
}

/// The 1, 5 and 15 minute load averages: the machine may be shared, and a
/// busy one slows the side with more threads more.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "unknown".to_string(),
        |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

/// Files not ignored, counted with the same rules as Quire (for the header).
fn walk_count(root: &Path) -> usize {
    let mut b = ignore::WalkBuilder::new(root);
    b.hidden(false)
        .require_git(false)
        .parents(false)
        .git_global(false);
    b.filter_entry(|e| e.file_name() != ".git");
    b.build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .count()
}
