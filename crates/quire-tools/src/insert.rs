//! `edit_file` with `insert_after`: add text after a named definition or
//! after a file's import lines, without an `old` to copy. Adding a test
//! method at the end of a test class, a function after its sibling, or an
//! import to a module seen only through search hits cost live sessions a
//! whole reply spent reading the lines to anchor `old` on.

use crate::edit::Edit;
use crate::symbols::{self, Definition, Syntax, definitions, indent_of};
use crate::util::split_lines;

/// Where `insert_after` puts the new text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Anchor {
    /// After the last top-level import statement.
    Imports,
    /// After the last line of the named definition.
    Definition(String),
}

impl Anchor {
    /// `imports` names the import lines; anything else a definition.
    pub(crate) fn parse(raw: &str) -> Anchor {
        let raw = raw.trim();
        if raw == "imports" {
            Anchor::Imports
        } else {
            Anchor::Definition(raw.to_string())
        }
    }
}

/// Why nothing was inserted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotInserted {
    /// The file's kind has no definitions Quire can find.
    Unsupported,
    /// No top-level import statement before the first definition.
    NoImports,
    /// Every line of `new` is already among the import lines.
    AlreadyImported,
    /// No definition of that name; the names close to it.
    NoSymbol { near: Vec<String> },
    /// Several definitions of that name, qualified.
    ManySymbols(Vec<String>),
}

/// What was found to insert after, for the success message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inserted {
    pub edit: Edit,
    /// The definition's qualified name when it was matched loosely.
    pub loose: Option<String>,
    /// A method given shallower than its class body was indented into it.
    pub indented: bool,
}

/// The edit that puts `new` after `anchor` in `content`.
pub(crate) fn insertion(
    path: &str,
    content: &str,
    anchor: &Anchor,
    new: &str,
) -> Result<Inserted, NotInserted> {
    let syntax = Syntax::of(path).ok_or(NotInserted::Unsupported)?;
    let lines = split_lines(content);
    let defs = definitions(&lines, syntax);
    let mut body = trim_blank_lines(new);
    let mut indented = false;
    let (after_line, loose, blank) = match anchor {
        Anchor::Imports => {
            let last = last_import_line(&lines, &defs, syntax).ok_or(NotInserted::NoImports)?;
            if already_imported(&lines[..last], &body) {
                return Err(NotInserted::AlreadyImported);
            }
            (last, None, 0)
        }
        Anchor::Definition(name) => {
            let (def, loose) = definition(&defs, name)?;
            // Where a method written at column 0 belongs: inside the class
            // named, or beside the method named.
            let method_indent = if def.kind == "class" {
                class_body_indent(&lines, def)
            } else if def.depth > 0 {
                lines.get(def.header - 1).map(|l| indent_of(l))
            } else {
                None
            };
            if let Some(target) = method_indent
                && let Some(shift) = method_shift(target, &body)
            {
                body = body
                    .lines()
                    .map(|l| {
                        if l.trim().is_empty() {
                            String::new()
                        } else {
                            format!("{}{l}", " ".repeat(shift))
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                indented = true;
            }
            let first_indent = body
                .lines()
                .find(|l| !l.trim().is_empty())
                .map_or(0, indent_of);
            let into_class = first_indent > indent_of(lines[def.header - 1]);
            let blank = spacing(&lines, &defs, def, into_class).unwrap_or(
                // PEP 8 keeps two blank lines between top-level definitions.
                if syntax == Syntax::Indent && !into_class && def.depth == 0 {
                    2
                } else {
                    1
                },
            );
            (def.end, loose, blank)
        }
    };
    let start = offset_after_line(content, after_line);
    let mut replacement = String::new();
    if start == content.len() && !content.is_empty() && !content.ends_with('\n') {
        replacement.push('\n');
    }
    for _ in 0..blank {
        replacement.push('\n');
    }
    replacement.push_str(&body);
    replacement.push('\n');
    if content.contains("\r\n") {
        replacement = replacement.replace('\n', "\r\n");
    }
    Ok(Inserted {
        edit: Edit {
            start,
            end: start,
            replacement,
            notes: Vec::new(),
        },
        loose,
        indented,
    })
}

/// Blank lines to put before the insertion, as the file spaces the same
/// kind of definitions: between a class's last two members for a member
/// added to it, else after (or, at the end of the file, before) the
/// anchor. A stub file's one-line stubs have none; a player's stub came
/// out padded with blank lines it then had to remove.
fn spacing(
    lines: &[&str],
    defs: &[Definition],
    def: &Definition,
    into_class: bool,
) -> Option<usize> {
    let blank_above = |line: usize| {
        (0..line.saturating_sub(1))
            .rev()
            .take_while(|&i| lines[i].trim().is_empty())
            .count()
    };
    let gap = if into_class {
        let last_member = defs
            .iter()
            .filter(|d| d.depth == def.depth + 1 && d.start > def.header && d.end <= def.end)
            .max_by_key(|d| d.start)?;
        // The first member sits right under the header: no gap to copy.
        (last_member.start > def.header + 1).then(|| blank_above(last_member.start))?
    } else {
        let after = (def.end..lines.len())
            .take_while(|&i| lines[i].trim().is_empty())
            .count();
        if def.end + after < lines.len() {
            after
        } else if def.start > 1 {
            blank_above(def.start)
        } else {
            return None;
        }
    };
    Some(gap.min(2))
}

/// The indentation of a class's body (its first non-blank line after the
/// header).
fn class_body_indent(lines: &[&str], class: &Definition) -> Option<usize> {
    lines
        .get(class.header..class.end)?
        .iter()
        .find(|l| !l.trim().is_empty())
        .map(|l| indent_of(l))
}

/// How far to indent `body` so a method written at column 0 lands at
/// `body_indent` (a class's body, or beside a method): its first `def`
/// takes `self` or `cls` (or is a static or class method) and stands
/// shallower. A player wrote a test method unindented, and it became a
/// module function `pytest` could not call; another was refused after
/// `Class.method` for the same reason.
fn method_shift(body_indent: usize, body: &str) -> Option<usize> {
    let mut decorated_as_method = false;
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        let trimmed = line.trim_start();
        if trimmed.starts_with('@') {
            decorated_as_method |=
                trimmed.starts_with("@staticmethod") || trimmed.starts_with("@classmethod");
            continue;
        }
        let indent = indent_of(line);
        let signature = trimmed
            .strip_prefix("async ")
            .unwrap_or(trimmed)
            .strip_prefix("def ")?;
        let params = signature.split_once('(')?.1.trim_start();
        let takes_self = ["self", "cls"].iter().any(|p| {
            params
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with([',', ')', ':', ' ']))
        });
        return ((takes_self || decorated_as_method) && indent < body_indent)
            .then(|| body_indent - indent);
    }
    None
}

fn definition<'a>(
    defs: &'a [Definition],
    name: &str,
) -> Result<(&'a Definition, Option<String>), NotInserted> {
    let hits = symbols::find(defs, name);
    match hits.as_slice() {
        [one] => Ok((one, None)),
        [] => match symbols::loose(defs, name) {
            Some(only) => Ok((only, Some(only.qualified.clone()))),
            None => Err(NotInserted::NoSymbol {
                near: symbols::near(defs, name, 8)
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
            }),
        },
        many => Err(NotInserted::ManySymbols(
            many.iter().map(|d| d.qualified.clone()).collect(),
        )),
    }
}

/// The 1-based line where the last top-level import statement ends, among
/// the lines before the first top-level definition.
fn last_import_line(lines: &[&str], defs: &[Definition], syntax: Syntax) -> Option<usize> {
    let header_end = defs
        .iter()
        .filter(|d| d.depth == 0)
        .map(|d| d.start - 1)
        .min()
        .unwrap_or(lines.len());
    let starts_import = |line: &str| match syntax {
        Syntax::Indent => line.starts_with("import ") || line.starts_with("from "),
        Syntax::Braces => {
            line.starts_with("use ")
                || line.starts_with("pub use ")
                || line.starts_with("import ")
                || line.starts_with("#include")
        }
    };
    let mut last = None;
    let mut i = 0;
    while i < header_end {
        if !starts_import(lines[i]) {
            i += 1;
            continue;
        }
        // A statement goes on while its brackets are open.
        let mut depth: i64 = 0;
        let mut j = i;
        loop {
            for c in lines[j].chars() {
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth -= 1,
                    _ => {}
                }
            }
            if depth <= 0 || j + 1 >= lines.len() {
                break;
            }
            j += 1;
        }
        last = Some(j + 1);
        i = j + 1;
    }
    last
}

fn already_imported(header: &[&str], body: &str) -> bool {
    let mut wanted = body.lines().map(str::trim).filter(|l| !l.is_empty());
    let have: Vec<&str> = header.iter().map(|l| l.trim()).collect();
    wanted.all(|l| have.contains(&l))
}

/// Byte offset of the start of line `line + 1` (1-based `line`), or the end.
fn offset_after_line(content: &str, line: usize) -> usize {
    let mut seen = 0;
    for (at, c) in content.char_indices() {
        if c == '\n' {
            seen += 1;
            if seen == line {
                return at + 1;
            }
        }
    }
    content.len()
}

fn trim_blank_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    match (first, last) {
        (Some(first), Some(last)) => lines[first..=last]
            .iter()
            .map(|l| l.trim_end())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(path: &str, content: &str, anchor: &str, new: &str) -> String {
        let done = insertion(path, content, &Anchor::parse(anchor), new).unwrap_or_else(|e| {
            panic!("{e:?}");
        });
        let e = done.edit;
        format!(
            "{}{}{}",
            &content[..e.start],
            e.replacement,
            &content[e.end..]
        )
    }

    const MODULE: &str = "\"\"\"Reports.\"\"\"\nfrom decimal import Decimal\nfrom src.money import (\n    ZERO,\n    total,\n)\n\nLIMIT = 3\n\n\ndef sales(orders):\n    return [o for o in orders if o.status == \"paid\"]\n\n\nclass SalesTests:\n    def test_one(self):\n        assert sales([]) == []\n\n    def test_two(self):\n        assert True\n\n\ndef last():\n    pass\n";

    #[test]
    fn an_import_goes_after_the_last_import_statement_even_a_multi_line_one() {
        let out = apply(
            "src/reports.py",
            MODULE,
            "imports",
            "from src.orders import OrderStatus\n",
        );
        assert!(
            out.contains("    total,\n)\nfrom src.orders import OrderStatus\n\nLIMIT = 3"),
            "{out}"
        );
    }

    #[test]
    fn an_import_already_there_is_refused() {
        let got = insertion(
            "src/reports.py",
            MODULE,
            &Anchor::Imports,
            "from decimal import Decimal",
        );
        assert_eq!(got.err(), Some(NotInserted::AlreadyImported));
    }

    #[test]
    fn a_method_goes_at_the_end_of_its_class_with_one_blank_line() {
        let out = apply(
            "tests/test_reports.py",
            MODULE,
            "SalesTests",
            "    def test_three(self):\n        assert False\n",
        );
        assert!(
            out.contains("        assert True\n\n    def test_three(self):\n        assert False\n\n\ndef last():"),
            "{out}"
        );
    }

    #[test]
    fn a_method_given_at_column_zero_is_indented_into_the_class() {
        let out = apply(
            "tests/test_reports.py",
            MODULE,
            "SalesTests",
            "def test_three(self):\n    s = 1\n\n    assert s\n",
        );
        assert!(
            out.contains("        assert True\n\n    def test_three(self):\n        s = 1\n\n        assert s\n\n\ndef last():"),
            "{out}"
        );
        // After a method named `Class.method`, beside it.
        let out = apply(
            "tests/test_reports.py",
            MODULE,
            "SalesTests.test_one",
            "def test_between(self):\n    assert 1\n",
        );
        assert!(
            out.contains("        assert sales([]) == []\n\n    def test_between(self):\n        assert 1\n\n    def test_two(self):"),
            "{out}"
        );
        // A function that takes no self stays a module function after the class.
        let out = apply(
            "tests/test_reports.py",
            MODULE,
            "SalesTests",
            "def test_free():\n    pass\n",
        );
        assert!(
            out.contains("        assert True\n\n\ndef test_free():\n    pass\n"),
            "{out}"
        );
    }

    #[test]
    fn a_top_level_function_goes_after_its_sibling_with_two_blank_lines() {
        let out = apply(
            "src/reports.py",
            MODULE,
            "sales",
            "def refunds(orders):\n    return []",
        );
        assert!(
            out.contains(
                "== \"paid\"]\n\n\ndef refunds(orders):\n    return []\n\n\nclass SalesTests"
            ),
            "{out}"
        );
    }

    #[test]
    fn the_last_definition_of_a_file_without_a_final_break_still_ends_its_line() {
        let content = "def a():\n    return 1";
        let out = apply("m.py", content, "a", "def b():\n    return 2\n");
        assert_eq!(out, "def a():\n    return 1\n\n\ndef b():\n    return 2\n");
    }

    #[test]
    fn a_name_up_to_case_and_a_final_s_is_matched_loosely_and_said() {
        let got = insertion(
            "t.py",
            MODULE,
            &Anchor::parse("SalesTest"),
            "    def x(self): pass",
        );
        assert_eq!(got.map(|i| i.loose), Ok(Some("SalesTests".to_string())));
    }

    #[test]
    fn unknown_ambiguous_and_unsupported_anchors_are_refused() {
        assert!(matches!(
            insertion("m.py", MODULE, &Anchor::parse("nothing_here"), "x = 1"),
            Err(NotInserted::NoSymbol { .. })
        ));
        let two = "class A:\n    def run(self):\n        pass\n\n\nclass B:\n    def run(self):\n        pass\n";
        assert_eq!(
            insertion("m.py", two, &Anchor::parse("run"), "x = 1").err(),
            Some(NotInserted::ManySymbols(vec![
                "A.run".into(),
                "B.run".into()
            ]))
        );
        assert_eq!(
            insertion("README.rst", "text\n", &Anchor::Imports, "x").err(),
            Some(NotInserted::Unsupported)
        );
        assert_eq!(
            insertion(
                "m.py",
                "def f():\n    import os\n",
                &Anchor::Imports,
                "import sys"
            )
            .err(),
            Some(NotInserted::NoImports)
        );
    }

    #[test]
    fn stubs_without_blank_lines_between_them_get_none() {
        let stubs = "def a() -> int: ...\ndef b() -> int: ...\ndef c() -> int: ...\n";
        let out = apply("m.pyi", stubs, "a", "def ab() -> int: ...");
        assert_eq!(
            out,
            "def a() -> int: ...\ndef ab() -> int: ...\ndef b() -> int: ...\ndef c() -> int: ...\n"
        );
        let out = apply("m.pyi", stubs, "c", "def d() -> int: ...");
        assert!(
            out.ends_with("def c() -> int: ...\ndef d() -> int: ...\n"),
            "{out}"
        );
    }

    #[test]
    fn a_class_at_column_zero_goes_after_the_class_it_names() {
        let out = apply(
            "tests/test_reports.py",
            MODULE,
            "SalesTests",
            "class RefundTests:\n    def test_a(self):\n        pass\n",
        );
        assert!(
            out.contains("        assert True\n\n\nclass RefundTests:\n    def test_a(self):\n        pass\n\n\ndef last():"),
            "{out}"
        );
    }

    #[test]
    fn rust_use_lines_take_an_import() {
        let src = "use std::fmt;\nuse std::io::{\n    Read,\n    Write,\n};\n\nfn main() {}\n";
        let out = apply("src/main.rs", src, "imports", "use std::path::Path;");
        assert!(
            out.contains("    Write,\n};\nuse std::path::Path;\n\nfn main"),
            "{out}"
        );
    }
}
