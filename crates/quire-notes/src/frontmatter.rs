//! Reading and writing the YAML frontmatter of a note file.
//!
//! Writing is done by hand (no YAML serializer): every string is emitted
//! double-quoted with escapes, so titles with colons, quotes, `#`, leading
//! dashes or any unicode read back exactly. Reading goes through
//! gray_matter's YAML engine and then checks each field on its own, so a
//! bad field is reported with the line it is on.

use std::collections::HashMap;
use std::fmt::Write as _;

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use gray_matter::Pod;
use gray_matter::engine::{Engine, YAML};

use crate::note::{Frontmatter, Kind, Provenance, Scope, Status};

/// What a note's place in the tree says about it: the values a note written
/// by hand may leave out (only `title` is required of a person). Built by
/// the tree from the file's path and times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDefaults {
    /// The path without `.md`, e.g. `shared/python/decimal-floats`.
    pub id: String,
    /// From the first folder: `projects/<p>/…` is project `p`, else shared.
    pub scope: Scope,
    pub project: Option<String>,
    /// The folder below `shared/` or `projects/<p>/`, else `general`.
    pub topic: String,
    /// The file's birth time (else its modification time).
    pub created: DateTime<Utc>,
    /// The file's modification time.
    pub updated: DateTime<Utc>,
}

/// A frontmatter field that was absent and filled from [`FileDefaults`]
/// (or, for `kind`, the default kind); `notes stats` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FilledField {
    Id,
    Kind,
    Scope,
    Project,
    Topic,
    Created,
    Updated,
}

impl FilledField {
    /// The frontmatter key.
    pub fn as_str(self) -> &'static str {
        match self {
            FilledField::Id => "id",
            FilledField::Kind => "kind",
            FilledField::Scope => "scope",
            FilledField::Project => "project",
            FilledField::Topic => "topic",
            FilledField::Created => "created",
            FilledField::Updated => "updated",
        }
    }
}

/// The kind a hand-written note without one gets.
pub const DEFAULT_KIND: Kind = Kind::Insight;

/// A frontmatter problem at a 1-based line of the note file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct FrontmatterError {
    pub line: usize,
    pub message: String,
}

const DELIMITER: &str = "---";

/// Renders a full note file: `---`, the frontmatter, `---`, a blank line,
/// the body and a final newline.
pub fn render(meta: &Frontmatter, body: &str) -> String {
    let mut out = String::with_capacity(512 + body.len());
    out.push_str(DELIMITER);
    out.push('\n');
    scalar(&mut out, "id", &meta.id);
    scalar(&mut out, "title", &meta.title);
    scalar(&mut out, "description", &meta.description);
    list(&mut out, "", "keywords", &meta.keywords);
    bare(&mut out, "kind", meta.kind.as_str());
    bare(&mut out, "scope", meta.scope.as_str());
    if let Some(project) = &meta.project {
        scalar(&mut out, "project", project);
    }
    scalar(&mut out, "topic", &meta.topic);
    out.push_str("provenance:\n");
    list(&mut out, "  ", "sessions", &meta.provenance.sessions);
    if let Some(commit) = &meta.provenance.commit {
        let _ = writeln!(out, "  commit: {}", quote(commit));
    }
    list(&mut out, "  ", "files", &meta.provenance.files);
    list(&mut out, "  ", "symbols", &meta.provenance.symbols);
    list(&mut out, "", "error_signatures", &meta.error_signatures);
    scalar(&mut out, "created", &format_time(meta.created));
    scalar(&mut out, "updated", &format_time(meta.updated));
    bare(&mut out, "helpful", &meta.helpful.to_string());
    bare(&mut out, "harmful", &meta.harmful.to_string());
    bare(&mut out, "status", meta.status.as_str());
    if let Some(by) = &meta.superseded_by {
        scalar(&mut out, "superseded_by", by);
    }
    out.push_str(DELIMITER);
    out.push_str("\n\n");
    let body = normalize_body(body);
    if !body.is_empty() {
        out.push_str(&body);
        out.push('\n');
    }
    out
}

/// The body as stored: no leading blank lines, no trailing whitespace.
pub(crate) fn normalize_body(body: &str) -> String {
    body.trim_start_matches(['\n', '\r']).trim_end().to_string()
}

/// Times are written in RFC 3339 UTC with whole seconds, which is what
/// reads back exactly.
pub(crate) fn format_time(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn scalar(out: &mut String, key: &str, value: &str) {
    let _ = writeln!(out, "{key}: {}", quote(value));
}

fn bare(out: &mut String, key: &str, value: &str) {
    let _ = writeln!(out, "{key}: {value}");
}

fn list(out: &mut String, indent: &str, key: &str, items: &[String]) {
    if items.is_empty() {
        let _ = writeln!(out, "{indent}{key}: []");
        return;
    }
    let _ = writeln!(out, "{indent}{key}:");
    for item in items {
        let _ = writeln!(out, "{indent}  - {}", quote(item));
    }
}

/// A YAML double-quoted scalar. Escapes backslash, quote and every
/// character YAML would not keep literally inside double quotes.
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            '\u{feff}' => out.push_str("\\uFEFF"),
            c if (c as u32) < 0x20 || (0x7f..=0x9f).contains(&(c as u32)) => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Splits a note file into frontmatter and body and checks every field;
/// every field but the optional ones must be present.
pub fn parse(text: &str) -> Result<(Frontmatter, String), FrontmatterError> {
    parse_inner(text, None).map(|(meta, body, _)| (meta, body))
}

/// Like [`parse`], for a file in the tree: only `title` is required, the
/// absent fields are taken from `defaults` and listed in the result.
pub fn parse_with(
    text: &str,
    defaults: &FileDefaults,
) -> Result<(Frontmatter, String, Vec<FilledField>), FrontmatterError> {
    parse_inner(text, Some(defaults))
}

fn parse_inner(
    text: &str,
    defaults: Option<&FileDefaults>,
) -> Result<(Frontmatter, String, Vec<FilledField>), FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (matter, body) = split(text)?;
    let pod = YAML::parse(matter).map_err(|e| yaml_error(&e.to_string(), matter))?;
    let map = match pod {
        Pod::Hash(map) => map,
        Pod::Null => return Err(err(1, "frontmatter is empty")),
        _ => return Err(err(2, "frontmatter is not a mapping of `key: value` lines")),
    };
    let lines = Lines::new(matter);
    let mut filled = Vec::new();
    let meta = Fields {
        map: &map,
        lines: &lines,
        parent: None,
    }
    .frontmatter(defaults, &mut filled)?;
    Ok((meta, normalize_body(body), filled))
}

fn err(line: usize, message: impl Into<String>) -> FrontmatterError {
    FrontmatterError {
        line,
        message: message.into(),
    }
}

/// Returns (frontmatter text, body text). The frontmatter text starts on
/// file line 2.
fn split(text: &str) -> Result<(&str, &str), FrontmatterError> {
    let mut lines = text.split_inclusive('\n');
    match lines.next() {
        Some(first) if first.trim_end() == DELIMITER => {}
        _ => {
            return Err(err(
                1,
                "no frontmatter: the file must start with a `---` line",
            ));
        }
    }
    let start = text.split_inclusive('\n').next().map_or(0, str::len);
    let mut offset = start;
    let mut count = 1;
    for line in lines {
        count += 1;
        if line.trim_end() == DELIMITER {
            return Ok((&text[start..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err(err(
        count,
        "frontmatter is not closed: no `---` line after it",
    ))
}

/// Maps a YAML scan error ("... at byte B line L column C") to a file line.
fn yaml_error(message: &str, matter: &str) -> FrontmatterError {
    let yaml_line = message
        .rfind(" line ")
        .and_then(|i| {
            let digits: String = message[i + 6..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse::<usize>().ok()
        })
        .unwrap_or(1);
    let line = yaml_line.clamp(1, matter.lines().count().max(1)) + 1;
    let info = message.split(" at byte ").next().unwrap_or(message);
    let info = info.strip_prefix("Deserialize error: ").unwrap_or(info);
    err(line, format!("invalid YAML: {info}"))
}

/// Finds the file line of a key so field errors can point at it.
struct Lines<'a> {
    lines: Vec<&'a str>,
}

impl<'a> Lines<'a> {
    fn new(matter: &'a str) -> Self {
        Lines {
            lines: matter.lines().collect(),
        }
    }

    /// File line of `key:` at the top level, or nested under `parent:`.
    fn of(&self, key: &str, parent: Option<&str>) -> usize {
        let is_key = |line: &str, key: &str| {
            line.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        };
        let top = |line: &&str| !line.starts_with([' ', '\t']);
        let found = match parent {
            None => self.lines.iter().position(|l| top(l) && is_key(l, key)),
            Some(parent) => self
                .lines
                .iter()
                .position(|l| top(l) && is_key(l, parent))
                .and_then(|p| {
                    let after = &self.lines[p + 1..];
                    let end = after.iter().position(top).unwrap_or(after.len());
                    after[..end]
                        .iter()
                        .position(|l| is_key(l.trim_start(), key))
                        .map(|i| p + 1 + i)
                        .or(Some(p))
                }),
        };
        // Frontmatter line 0 is file line 2; a missing key points at the
        // opening delimiter.
        found.map_or(1, |i| i + 2)
    }
}

struct Fields<'a> {
    map: &'a HashMap<String, Pod>,
    lines: &'a Lines<'a>,
    parent: Option<&'a str>,
}

impl Fields<'_> {
    fn frontmatter(
        &self,
        defaults: Option<&FileDefaults>,
        filled: &mut Vec<FilledField>,
    ) -> Result<Frontmatter, FrontmatterError> {
        // A field a person left out takes its default, when there is one.
        let mut fill = |field: FilledField| filled.push(field);
        let absent = |key: &str| match self.map.get(key) {
            None | Some(Pod::Null) => true,
            Some(pod) => scalar_text(pod).is_some_and(|s| s.trim().is_empty()),
        };
        let scope: Scope = match defaults {
            Some(d) if absent("scope") => {
                fill(FilledField::Scope);
                d.scope
            }
            _ => self.parsed("scope")?,
        };
        let mut project = self.opt_text("project")?;
        if scope == Scope::Project && project.is_none() {
            match defaults.and_then(|d| d.project.clone()) {
                Some(from_path) => {
                    fill(FilledField::Project);
                    project = Some(from_path);
                }
                None => {
                    return Err(err(
                        self.line("scope"),
                        "scope is `project` but `project` is not set",
                    ));
                }
            }
        }
        if scope == Scope::Shared {
            project = None;
        }
        let created = match defaults {
            Some(d) if absent("created") => {
                fill(FilledField::Created);
                d.created
            }
            _ => self.time("created")?,
        };
        let updated = match self.map.get("updated") {
            // Without either time, the file's; with only `created`, that.
            None | Some(Pod::Null) => match defaults {
                Some(d) if filled.contains(&FilledField::Created) => {
                    filled.push(FilledField::Updated);
                    d.updated.max(created)
                }
                _ => created,
            },
            Some(_) => self.time("updated")?,
        };
        let mut fill = |field: FilledField| filled.push(field);
        let provenance = match self.map.get("provenance") {
            None | Some(Pod::Null) => Provenance::default(),
            Some(Pod::Hash(inner)) => {
                let f = Fields {
                    map: inner,
                    lines: self.lines,
                    parent: Some("provenance"),
                };
                Provenance {
                    sessions: f.list("sessions")?,
                    commit: f.opt_text("commit")?,
                    files: f.list("files")?,
                    symbols: f.list("symbols")?,
                }
            }
            Some(_) => {
                return Err(err(
                    self.line("provenance"),
                    "`provenance` must be a mapping",
                ));
            }
        };
        let status = match self.map.get("status") {
            None | Some(Pod::Null) => Status::Active,
            Some(_) => self.parsed("status")?,
        };
        let id = match defaults {
            Some(d) if absent("id") => {
                fill(FilledField::Id);
                d.id.clone()
            }
            _ => self.required_text("id")?,
        };
        let title = self.required_text("title")?;
        let kind = match defaults {
            Some(_) if absent("kind") => {
                fill(FilledField::Kind);
                DEFAULT_KIND
            }
            _ => self.parsed::<Kind>("kind")?,
        };
        let topic = match defaults {
            Some(d) if absent("topic") => {
                fill(FilledField::Topic);
                d.topic.clone()
            }
            _ => self.required_text("topic")?,
        };
        filled.sort();
        Ok(Frontmatter {
            id,
            title,
            description: self.opt_text("description")?.unwrap_or_default(),
            keywords: self.list("keywords")?,
            kind,
            scope,
            project,
            topic,
            provenance,
            error_signatures: self.list("error_signatures")?,
            created,
            updated,
            helpful: self.count("helpful")?,
            harmful: self.count("harmful")?,
            status,
            superseded_by: self.opt_text("superseded_by")?,
        })
    }

    fn line(&self, key: &str) -> usize {
        self.lines.of(key, self.parent)
    }

    fn field_err(&self, key: &str, message: impl std::fmt::Display) -> FrontmatterError {
        let name = match self.parent {
            Some(p) => format!("{p}.{key}"),
            None => key.to_string(),
        };
        err(self.line(key), format!("`{name}`: {message}"))
    }

    fn opt_text(&self, key: &str) -> Result<Option<String>, FrontmatterError> {
        match self.map.get(key) {
            None | Some(Pod::Null) => Ok(None),
            Some(pod) => match scalar_text(pod) {
                Some(s) if s.trim().is_empty() => Ok(None),
                Some(s) => Ok(Some(s)),
                None => Err(self.field_err(key, "expected text")),
            },
        }
    }

    fn required_text(&self, key: &str) -> Result<String, FrontmatterError> {
        match self.opt_text(key)? {
            Some(s) => Ok(s),
            None => Err(self.field_err(key, "missing or empty")),
        }
    }

    fn parsed<T>(&self, key: &str) -> Result<T, FrontmatterError>
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
    {
        let text = self.required_text(key)?;
        text.parse::<T>().map_err(|e| self.field_err(key, e))
    }

    fn list(&self, key: &str) -> Result<Vec<String>, FrontmatterError> {
        match self.map.get(key) {
            None | Some(Pod::Null) => Ok(Vec::new()),
            Some(Pod::Array(items)) => items
                .iter()
                .filter(|p| !matches!(p, Pod::Null))
                .map(|p| {
                    scalar_text(p).ok_or_else(|| self.field_err(key, "list items must be text"))
                })
                .collect(),
            Some(pod) => match scalar_text(pod) {
                Some(s) => Ok(vec![s]),
                None => Err(self.field_err(key, "expected a list of text")),
            },
        }
    }

    fn count(&self, key: &str) -> Result<u32, FrontmatterError> {
        match self.map.get(key) {
            None | Some(Pod::Null) => Ok(0),
            Some(Pod::Integer(n)) => {
                u32::try_from(*n).map_err(|_| self.field_err(key, "expected a count of 0 or more"))
            }
            Some(Pod::String(s)) => s
                .trim()
                .parse::<u32>()
                .map_err(|_| self.field_err(key, "expected a count of 0 or more")),
            Some(_) => Err(self.field_err(key, "expected a count of 0 or more")),
        }
    }

    fn time(&self, key: &str) -> Result<DateTime<Utc>, FrontmatterError> {
        let text = self.required_text(key)?;
        parse_time(&text).ok_or_else(|| {
            self.field_err(
                key,
                format!("{text:?} is not an RFC 3339 time like 2025-01-31T12:00:00Z"),
            )
        })
    }
}

fn scalar_text(pod: &Pod) -> Option<String> {
    match pod {
        Pod::String(s) => Some(s.clone()),
        Pod::Integer(n) => Some(n.to_string()),
        Pod::Float(f) => Some(f.to_string()),
        Pod::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// RFC 3339, or a bare date (midnight UTC) as people write by hand.
fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use gray_matter::{Matter, ParsedEntity};

    fn sample() -> Frontmatter {
        let t = Utc
            .with_ymd_and_hms(2025, 1, 31, 12, 0, 0)
            .single()
            .unwrap();
        Frontmatter {
            id: "01JABCDEF0123456789ABCDEFG".into(),
            title: "Title".into(),
            description: "One line".into(),
            keywords: vec!["pytest".into(), "imports".into()],
            kind: Kind::Hindsight,
            scope: Scope::Project,
            project: Some("shop".into()),
            topic: "testing".into(),
            provenance: Provenance {
                sessions: vec!["01JSESSION".into()],
                commit: Some("abc123".into()),
                files: vec!["tests/conftest.py".into()],
                symbols: vec![],
            },
            error_signatures: vec!["ModuleNotFoundError: No module named 'src'".into()],
            created: t,
            updated: t,
            helpful: 3,
            harmful: 1,
            status: Status::Superseded,
            superseded_by: Some("01JNEXT".into()),
        }
    }

    #[test]
    fn nasty_strings_round_trip_through_our_parser_and_gray_matter() {
        let nasty = [
            "key: value # not a comment",
            "\"quoted\" and 'single'",
            "- leading dash",
            "#hash first",
            "ünïcödé → 日本語 🚀",
            "back\\slash \\n literal",
            "tab\there",
            "ctrl \u{1} \u{7f} \u{85} \u{2028} \u{feff}",
            "---",
            "null",
            "true",
            "123",
            "@at `tick` *star &amp !bang %pct |pipe >gt {brace} [bracket]",
            "",
            "  padded  ",
        ];
        for s in nasty {
            let mut meta = sample();
            meta.title = format!("T {s}");
            meta.description = s.to_string();
            meta.keywords = vec![s.to_string()];
            meta.error_signatures = vec![s.to_string(), "x".into()];
            meta.provenance.files = vec![s.to_string()];
            let text = render(&meta, "Body line\n");
            let (back, body) = parse(&text).unwrap_or_else(|e| panic!("{s:?}: {e}\n{text}"));
            let mut expected = meta.clone();
            if s.trim().is_empty() {
                expected.description = String::new();
            }
            assert_eq!(back, expected, "{s:?}\n{text}");
            assert_eq!(body, "Body line");

            let parsed: ParsedEntity<Frontmatter> = Matter::<YAML>::new()
                .parse(&text)
                .unwrap_or_else(|e| panic!("{s:?}: {e}"));
            let data = parsed.data.unwrap_or_else(|| panic!("no data for {s:?}"));
            assert_eq!(data.title, meta.title);
            assert_eq!(data.description, meta.description);
            assert_eq!(data.keywords, meta.keywords);
            assert_eq!(data.provenance, meta.provenance);
            assert_eq!(data.created, meta.created);
            assert_eq!(data.kind, meta.kind);
            assert_eq!(parsed.content.trim(), "Body line");
        }
    }

    #[test]
    fn body_with_delimiter_lines_survives() {
        let body = "intro\n---\nmore\n\n---\n";
        let (_, back) = parse(&render(&sample(), body)).unwrap();
        assert_eq!(back, "intro\n---\nmore\n\n---");
    }

    #[test]
    fn errors_point_at_lines() {
        let good = render(&sample(), "body");
        let bad_kind = good.replace("kind: hindsight", "kind: rumour");
        let e = parse(&bad_kind).unwrap_err();
        let kind_line = good.lines().position(|l| l.starts_with("kind:")).unwrap() + 1;
        assert_eq!(e.line, kind_line, "{e}");
        assert!(e.message.contains("rumour"), "{e}");

        let bad_yaml = good.replace("topic: \"testing\"", "topic: \"unterminated");
        let e = parse(&bad_yaml).unwrap_err();
        assert!(e.message.contains("invalid YAML"), "{e}");
        assert!(e.line > 1, "{e}");

        let bad_count = good.replace("helpful: 3", "helpful: -2");
        let e = parse(&bad_count).unwrap_err();
        let line = good
            .lines()
            .position(|l| l.starts_with("helpful:"))
            .unwrap()
            + 1;
        assert_eq!(e.line, line, "{e}");

        let bad_commit = good.replace("  commit: \"abc123\"", "  commit: [1, 2]");
        let e = parse(&bad_commit).unwrap_err();
        let line = good
            .lines()
            .position(|l| l.starts_with("  commit:"))
            .unwrap()
            + 1;
        assert_eq!(e.line, line, "{e}");

        let missing = good.replace("title: \"Title\"\n", "");
        let e = parse(&missing).unwrap_err();
        assert_eq!(e.line, 1, "{e}");
        assert!(e.message.contains("title"), "{e}");

        assert_eq!(parse("no frontmatter").unwrap_err().line, 1);
        assert_eq!(parse("---\nid: x\n").unwrap_err().line, 2);
    }

    #[test]
    fn yaml_syntax_error_line_is_exact() {
        let text = "---\nid: \"a\"\ntitle: \"b\"\nkind: [unclosed\nscope: shared\n---\n";
        let e = parse(text).unwrap_err();
        assert!((4..=5).contains(&e.line), "{e}");
    }

    fn defaults() -> FileDefaults {
        let t = |d| Utc.with_ymd_and_hms(2025, 3, d, 9, 0, 0).single().unwrap();
        FileDefaults {
            id: "projects/shop/testing/fixtures".into(),
            scope: Scope::Project,
            project: Some("shop".into()),
            topic: "testing".into(),
            created: t(1),
            updated: t(2),
        }
    }

    #[test]
    fn a_note_with_only_a_title_is_filled_from_its_place_and_says_what_was_filled() {
        let text = "---\ntitle: Fixtures live in conftest\n---\nThe shared fixtures are in tests/conftest.py.\n";
        // Without its place in the tree, the old rule holds.
        assert!(
            parse(text)
                .unwrap_err()
                .message
                .contains("missing or empty")
        );
        let (m, body, filled) = parse_with(text, &defaults()).unwrap();
        assert_eq!(m.title, "Fixtures live in conftest");
        assert_eq!(m.id, "projects/shop/testing/fixtures");
        assert_eq!((m.kind, m.scope), (Kind::Insight, Scope::Project));
        assert_eq!(
            (m.project.as_deref(), m.topic.as_str()),
            (Some("shop"), "testing")
        );
        assert_eq!(
            (m.created, m.updated),
            (defaults().created, defaults().updated)
        );
        assert_eq!(body, "The shared fixtures are in tests/conftest.py.");
        use FilledField as F;
        assert_eq!(
            filled,
            vec![
                F::Id,
                F::Kind,
                F::Scope,
                F::Project,
                F::Topic,
                F::Created,
                F::Updated
            ]
        );

        // What is written wins; only the rest is filled.
        let text =
            "---\nid: mine\ntitle: T\nkind: how-to\nscope: shared\ncreated: 2024-01-01\n---\n";
        let (m, _, filled) = parse_with(text, &defaults()).unwrap();
        assert_eq!(
            (m.id.as_str(), m.kind, m.scope, m.project),
            ("mine", Kind::HowTo, Scope::Shared, None)
        );
        assert_eq!(
            m.updated, m.created,
            "a written `created` stands for `updated` too"
        );
        assert_eq!(filled, vec![F::Topic]);

        // The title cannot be filled, and bad values are still errors.
        let e = parse_with("---\nkind: insight\n---\n", &defaults()).unwrap_err();
        assert!(e.message.contains("`title`: missing or empty"), "{e}");
        let e = parse_with("---\ntitle: T\nkind: rumour\n---\n", &defaults()).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let mut shared = defaults();
        shared.project = None;
        let e = parse_with("---\ntitle: T\nscope: project\n---\n", &shared).unwrap_err();
        assert!(e.message.contains("`project` is not set"), "{e}");
    }

    #[test]
    fn hand_written_frontmatter_is_accepted_leniently() {
        let text = "---\nid: 01J\ntitle: Hand written: yes\ndescription: d\nkeywords: single\nkind: how-to\nscope: shared\nproject: ignored\ntopic: python\ncreated: 2025-02-01\n---\nbody\n";
        let text = text.replace("Hand written: yes", "\"Hand written: yes\"");
        let (m, body) = parse(&text).unwrap();
        assert_eq!(m.keywords, vec!["single"]);
        assert_eq!(m.project, None);
        assert_eq!(m.updated, m.created);
        assert_eq!(m.status, Status::Active);
        assert_eq!(body, "body");
    }
}
