//! Where a file's functions and classes begin and end, so `read_file` can
//! show one symbol whole (`symbol`) or a long file's layout (`outline`)
//! instead of the model reading a 450-line module in three ranges.
//!
//! Line-based and language-aware enough for the code agents edit: Python
//! blocks end where the indentation returns (decorators and multi-line
//! signatures included); brace languages (Rust, JavaScript/TypeScript, Go,
//! Java, C-like) end at the matching brace. No parser: a wrong span costs a
//! read, never an edit, and the lines shown are always the file's own.

use std::sync::OnceLock;

use regex::Regex;

/// How a file's blocks are delimited, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// Blocks end where the indentation returns (Python).
    Indent,
    /// Blocks end at the matching `}`.
    Braces,
}

impl Syntax {
    pub(crate) fn of(path: &str) -> Option<Syntax> {
        let ext = path.rsplit_once('.').map(|(_, e)| e)?;
        match ext {
            "py" | "pyi" => Some(Syntax::Indent),
            "rs" | "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "go" | "java" | "kt" | "c"
            | "h" | "cc" | "cpp" | "hpp" | "cs" | "swift" | "scala" | "php" => Some(Syntax::Braces),
            _ => None,
        }
    }
}

/// One definition: its name, the names of the blocks around it, and its
/// 1-based inclusive line span (decorators and attributes included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Definition {
    pub name: String,
    /// `Outer.inner` for a method or nested definition.
    pub qualified: String,
    pub kind: &'static str,
    pub start: usize,
    pub end: usize,
    /// The line of the `def`/`fn`/`class` keyword (after decorators).
    pub header: usize,
    /// Nesting depth: 0 for top-level definitions.
    pub depth: usize,
}

pub(crate) fn python_def() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(\s*)(async\s+def|def|class)\s+([A-Za-z_][A-Za-z0-9_]*)")
            .unwrap_or_else(|e| unreachable!("a fixed pattern compiles: {e}"))
    })
}

fn brace_def() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(\s*)(?:(?:pub(?:\([^)]*\))?|export|default|async|unsafe|const|static|public|private|protected|abstract|final|extern(?:\s+\S+)?)\s+)*(fn|struct|enum|trait|impl|mod|union|function|class|interface|type|func)\b\s*(?:<[^>]*>\s*)?(?:\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]*)",
        )
        .unwrap_or_else(|e| unreachable!("a fixed pattern compiles: {e}"))
    })
}

/// Every definition in `lines`, in file order.
pub(crate) fn definitions(lines: &[&str], syntax: Syntax) -> Vec<Definition> {
    match syntax {
        Syntax::Indent => python_definitions(lines),
        Syntax::Braces => brace_definitions(lines),
    }
}

pub(crate) fn indent_of(line: &str) -> usize {
    line.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 8 } else { 1 })
        .sum()
}

fn python_definitions(lines: &[&str]) -> Vec<Definition> {
    let mut found = Vec::new();
    // The open blocks: (indent, qualified name).
    let mut open: Vec<(usize, String)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(caps) = python_def().captures(line) else {
            continue;
        };
        let indent = indent_of(line);
        while open.last().is_some_and(|(d, _)| *d >= indent) {
            open.pop();
        }
        let name = caps[3].to_string();
        let kind = if &caps[2] == "class" { "class" } else { "def" };
        let qualified = match open.last() {
            Some((_, outer)) => format!("{outer}.{name}"),
            None => name.clone(),
        };
        let mut start = i;
        while start > 0 && lines[start - 1].trim_start().starts_with('@') {
            start -= 1;
        }
        let end = python_block_end(lines, i, indent);
        found.push(Definition {
            name,
            qualified: qualified.clone(),
            kind,
            start: start + 1,
            end: end + 1,
            header: i + 1,
            depth: open.len(),
        });
        open.push((indent, qualified));
    }
    found
}

/// The last line (0-based) of the block whose header is at `header`: past
/// the signature (brackets balanced), up to the last non-blank line before
/// one indented no deeper than the header.
fn python_block_end(lines: &[&str], header: usize, indent: usize) -> usize {
    let mut depth: i64 = 0;
    let mut body_from = header;
    for (j, line) in lines.iter().enumerate().skip(header) {
        for c in line.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                '#' => break,
                _ => {}
            }
        }
        body_from = j;
        if depth <= 0 {
            break;
        }
    }
    let mut end = body_from;
    let mut in_string: Option<&str> = None;
    for (j, line) in lines.iter().enumerate().skip(body_from + 1) {
        let trimmed = line.trim();
        // Lines inside a triple-quoted string never end the block.
        if let Some(quote) = in_string {
            if trimmed.contains(quote) {
                in_string = None;
            }
            end = j;
            continue;
        }
        // Blank lines and comments neither end a block nor extend it.
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if indent_of(line) <= indent {
            break;
        }
        for quote in ["\"\"\"", "'''"] {
            if trimmed.matches(quote).count() % 2 == 1 {
                in_string = Some(quote);
            }
        }
        end = j;
    }
    end
}

fn brace_definitions(lines: &[&str]) -> Vec<Definition> {
    let mut found: Vec<Definition> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") || trimmed.starts_with('*') || trimmed.starts_with("/*") {
            continue;
        }
        let Some(caps) = brace_def().captures(line) else {
            continue;
        };
        let Some(end) = brace_block_end(lines, i) else {
            continue;
        };
        let mut start = i;
        while start > 0 {
            let prev = lines[start - 1].trim_start();
            if prev.starts_with("#[") || prev.starts_with('@') || prev.starts_with("///") {
                start -= 1;
            } else {
                break;
            }
        }
        let name = caps[3].to_string();
        let outer: Vec<&Definition> = found
            .iter()
            .filter(|d| d.start <= i && d.end > i + 1)
            .collect();
        let qualified = match outer.last() {
            Some(o) => format!("{}.{name}", o.qualified),
            None => name.clone(),
        };
        let kind = match &caps[2] {
            "fn" | "function" | "func" => "fn",
            "struct" => "struct",
            "enum" => "enum",
            "trait" => "trait",
            "impl" => "impl",
            "mod" => "mod",
            "interface" => "interface",
            "type" => "type",
            "union" => "union",
            _ => "class",
        };
        found.push(Definition {
            name,
            qualified,
            kind,
            start: start + 1,
            end: end + 1,
            header: i + 1,
            depth: outer.len(),
        });
    }
    found
}

/// The line (0-based) of the `}` closing the first `{` at or after
/// `header`; `None` for a declaration without a body (`struct A;`).
fn brace_block_end(lines: &[&str], header: usize) -> Option<usize> {
    let mut depth: i64 = 0;
    let mut opened = false;
    for (j, line) in lines.iter().enumerate().skip(header) {
        let code = line.split("//").next().unwrap_or("");
        for c in code.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                ';' if !opened && depth == 0 => return None,
                _ => {}
            }
        }
        if opened && depth <= 0 {
            return Some(j);
        }
        if !opened && j > header + 8 {
            return None;
        }
    }
    opened.then(|| lines.len().saturating_sub(1))
}

/// The definitions `wanted` names: a qualified name (`Class.method`)
/// matches exactly; a bare name matches any definition of that name,
/// top-level ones first.
pub(crate) fn find<'a>(defs: &'a [Definition], wanted: &str) -> Vec<&'a Definition> {
    let wanted = wanted.trim().trim_end_matches("()");
    let mut hits: Vec<&Definition> = if wanted.contains('.') || wanted.contains("::") {
        let wanted = wanted.replace("::", ".");
        defs.iter()
            .filter(|d| d.qualified == wanted || d.qualified.ends_with(&format!(".{wanted}")))
            .collect()
    } else {
        defs.iter().filter(|d| d.name == wanted).collect()
    };
    hits.sort_by_key(|d| (d.depth, d.start));
    hits
}

/// The innermost definition whose body holds line `line` (1-based): the
/// scope a search hit names. A definition's own decorators and header
/// line belong to the scope around it.
pub(crate) fn enclosing(defs: &[Definition], line: usize) -> Option<&Definition> {
    defs.iter()
        .filter(|d| d.header < line && line <= d.end)
        .max_by_key(|d| (d.depth, d.start))
}

/// The one definition whose name is `wanted` up to case and a final `s`
/// (`SeekableTests` for `SeekableTest`), when exactly one is: a note or a
/// guess that got a test class's plural wrong then still reads it in the
/// same call instead of costing a round.
pub(crate) fn loose<'a>(defs: &'a [Definition], wanted: &str) -> Option<&'a Definition> {
    let wanted = wanted.trim().trim_end_matches("()");
    if wanted.contains('.') || wanted.contains("::") {
        return None;
    }
    let loosen = |name: &str| {
        let lower = name.to_lowercase();
        lower.strip_suffix('s').map(str::to_string).unwrap_or(lower)
    };
    let key = loosen(wanted);
    if key.len() < 4 {
        return None;
    }
    let mut matches = defs.iter().filter(|d| loosen(&d.name) == key);
    let first = matches.next()?;
    matches.next().is_none().then_some(first)
}

/// Names close to `wanted` (same name in another case, or containing it),
/// for a not-found message.
pub(crate) fn near<'a>(defs: &'a [Definition], wanted: &str, max: usize) -> Vec<&'a str> {
    let lower = wanted.to_lowercase();
    let tail = lower.rsplit('.').next().unwrap_or(&lower).to_string();
    let mut names: Vec<&str> = defs
        .iter()
        .filter(|d| {
            let n = d.name.to_lowercase();
            n.contains(&tail) || (tail.len() >= 4 && tail.contains(&n) && n.len() >= 4)
        })
        .map(|d| d.qualified.as_str())
        .collect();
    names.dedup();
    names.truncate(max);
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(src: &str, syntax: Syntax) -> Vec<Definition> {
        let lines: Vec<&str> = src.lines().collect();
        definitions(&lines, syntax)
    }

    #[test]
    fn python_blocks_end_where_the_indentation_returns() {
        let src = "import x\n\n@decorator\ndef first(a,\n          b):\n    \"\"\"Doc.\n\nstill doc\n\"\"\"\n    return a\n\n\nclass Box:\n    def get(self):\n        return 1\n\n    # a comment\n    def put(self):\n        pass\nVALUE = 1\n";
        let d = defs(src, Syntax::Indent);
        let spans: Vec<(&str, usize, usize, usize)> = d
            .iter()
            .map(|d| (d.qualified.as_str(), d.start, d.end, d.depth))
            .collect();
        assert_eq!(
            spans,
            vec![
                ("first", 3, 10, 0),
                ("Box", 13, 19, 0),
                ("Box.get", 14, 15, 1),
                ("Box.put", 18, 19, 1),
            ]
        );
        assert_eq!(find(&d, "put")[0].qualified, "Box.put");
        assert_eq!(find(&d, "Box.get")[0].start, 14);
        assert!(find(&d, "missing").is_empty());
        assert_eq!(near(&d, "Put", 3), vec!["Box.put"]);
        assert_eq!(loose(&d, "Boxes").map(|d| d.start), None, "only a final s");
        assert_eq!(loose(&d, "boxs").map(|d| d.start), None, "too short");
        assert_eq!(loose(&d, "FIRSTS").map(|d| d.start), Some(3));
        assert_eq!(loose(&d, "Box.gets"), None, "qualified names stay exact");
    }

    #[test]
    fn brace_blocks_end_at_the_matching_brace() {
        let src = "/// A thing.\n#[derive(Debug)]\npub struct Thing {\n    a: u8,\n}\n\nimpl Thing {\n    pub fn new() -> Thing {\n        Thing { a: 0 }\n    }\n}\npub struct Unit;\nfn free() {}\n";
        let d = defs(src, Syntax::Braces);
        let spans: Vec<(&str, usize, usize)> = d
            .iter()
            .map(|d| (d.qualified.as_str(), d.start, d.end))
            .collect();
        assert_eq!(
            spans,
            vec![
                ("Thing", 1, 5),
                ("Thing", 7, 11),
                ("Thing.new", 8, 10),
                ("free", 13, 13)
            ]
        );
        assert_eq!(Syntax::of("a/b.rs"), Some(Syntax::Braces));
        assert_eq!(Syntax::of("a/b.pyi"), Some(Syntax::Indent));
        assert_eq!(Syntax::of("README.md"), None);
    }
}
