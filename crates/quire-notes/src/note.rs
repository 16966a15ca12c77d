//! The note model: frontmatter fields, kinds, scopes and body templates.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What sort of knowledge a note holds; decides its body template and
/// whether error retrieval considers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Something learned that holds in general ("the API paginates at 100").
    Insight,
    /// A failure looked at afterwards: the error, its cause, the fix.
    Hindsight,
    /// Steps that achieve a goal.
    HowTo,
    /// How a codebase is put together.
    Architecture,
}

impl Kind {
    /// Every kind, for menus and exhaustive tests.
    pub const ALL: [Kind; 4] = [
        Kind::Insight,
        Kind::Hindsight,
        Kind::HowTo,
        Kind::Architecture,
    ];

    /// The spelling used in frontmatter and in the index.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Insight => "insight",
            Kind::Hindsight => "hindsight",
            Kind::HowTo => "how-to",
            Kind::Architecture => "architecture",
        }
    }
}

/// Whether a note belongs to one codebase or to all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Knowledge about one project; lives under `projects/<project>/`.
    Project,
    /// Cross-project knowledge; lives under `shared/`.
    Shared,
}

impl Scope {
    /// The spelling used in frontmatter and in the index.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::Shared => "shared",
        }
    }
}

/// Whether a note is still current; superseded notes stay on disk for
/// history but drop out of active retrieval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    #[default]
    Active,
    Superseded,
}

impl Status {
    /// The spelling used in frontmatter and in the index.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Superseded => "superseded",
        }
    }
}

/// Error of parsing an enum spelling; lists what would have been accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {value:?}, expected one of: {expected}")]
pub struct UnknownVariant {
    pub what: &'static str,
    pub value: String,
    pub expected: &'static str,
}

macro_rules! str_enum {
    ($ty:ty, $what:literal, $expected:literal, [$($variant:expr),+]) => {
        impl FromStr for $ty {
            type Err = UnknownVariant;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let s = s.trim();
                $(if s.eq_ignore_ascii_case($variant.as_str()) { return Ok($variant); })+
                Err(UnknownVariant { what: $what, value: s.to_string(), expected: $expected })
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

str_enum!(
    Kind,
    "kind",
    "insight, hindsight, how-to, architecture",
    [
        Kind::Insight,
        Kind::Hindsight,
        Kind::HowTo,
        Kind::Architecture
    ]
);
str_enum!(
    Scope,
    "scope",
    "project, shared",
    [Scope::Project, Scope::Shared]
);
str_enum!(
    Status,
    "status",
    "active, superseded",
    [Status::Active, Status::Superseded]
);

/// Where a note's knowledge came from, so a reader can check it is still true.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Provenance {
    /// Sessions that produced or confirmed the note.
    pub sessions: Vec<String>,
    /// Commit the note was true at, if known.
    pub commit: Option<String>,
    /// Files the note is about (repository-relative).
    pub files: Vec<String>,
    /// Symbols (functions, types) the note is about.
    pub symbols: Vec<String>,
}

/// The YAML frontmatter of a note: everything but the body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frontmatter {
    /// Sortable unique id (a ULID); stable across renames and moves.
    pub id: String,
    pub title: String,
    /// One line saying when the note is useful; shown in READMEs and hits.
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub keywords: Vec<String>,
    pub kind: Kind,
    pub scope: Scope,
    /// The project folder name; set exactly when `scope` is `project`.
    #[serde(default)]
    pub project: Option<String>,
    pub topic: String,
    #[serde(default)]
    pub provenance: Provenance,
    /// Error texts this note is about; what `search_errors` matches.
    #[serde(default)]
    pub error_signatures: Vec<String>,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
    /// How often the note was credited as helpful or harmful by sessions.
    #[serde(default)]
    pub helpful: u32,
    #[serde(default)]
    pub harmful: u32,
    #[serde(default)]
    pub status: Status,
    #[serde(default)]
    pub superseded_by: Option<String>,
}

/// One note as stored in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub meta: Frontmatter,
    /// Markdown body, without surrounding blank lines.
    pub body: String,
    /// Location relative to the tree root, e.g. `shared/python/decimal-floats.md`.
    pub path: PathBuf,
}

impl Note {
    /// The note's stable id.
    pub fn id(&self) -> &str {
        &self.meta.id
    }

    /// The whole file text: frontmatter plus body, as the tree writes it.
    pub fn render(&self) -> String {
        crate::frontmatter::render(&self.meta, &self.body)
    }

    /// The path with `/` separators on every platform; the form the index stores.
    pub fn path_str(&self) -> String {
        path_to_slash(&self.path)
    }
}

/// What the caller supplies to create a note; the tree fills in id, times,
/// counters and the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNote {
    pub title: String,
    pub description: String,
    pub kind: Kind,
    pub scope: Scope,
    pub project: Option<String>,
    pub topic: String,
    pub keywords: Vec<String>,
    pub provenance: Provenance,
    pub error_signatures: Vec<String>,
    /// Markdown body; `None` uses [`body_template`] for the kind.
    pub body: Option<String>,
}

impl NewNote {
    /// A note about one project, filed under `projects/<project>/<topic>/`.
    pub fn project(
        project: impl Into<String>,
        topic: impl Into<String>,
        kind: Kind,
        title: impl Into<String>,
    ) -> NewNote {
        NewNote {
            title: title.into(),
            description: String::new(),
            kind,
            scope: Scope::Project,
            project: Some(project.into()),
            topic: topic.into(),
            keywords: Vec::new(),
            provenance: Provenance::default(),
            error_signatures: Vec::new(),
            body: None,
        }
    }

    /// A cross-project note, filed under `shared/<topic>/`.
    pub fn shared(topic: impl Into<String>, kind: Kind, title: impl Into<String>) -> NewNote {
        NewNote {
            scope: Scope::Shared,
            project: None,
            ..NewNote::project("", topic, kind, title)
        }
    }

    /// Sets the one-line description (newlines are flattened on write).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the search keywords.
    pub fn keywords<S: Into<String>>(mut self, keywords: impl IntoIterator<Item = S>) -> Self {
        self.keywords = keywords.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the error texts `search_errors` should match this note on.
    pub fn error_signatures<S: Into<String>>(
        mut self,
        signatures: impl IntoIterator<Item = S>,
    ) -> Self {
        self.error_signatures = signatures.into_iter().map(Into::into).collect();
        self
    }

    /// Sets where the knowledge came from.
    pub fn provenance(mut self, provenance: Provenance) -> Self {
        self.provenance = provenance;
        self
    }

    /// Sets the Markdown body instead of the kind's template.
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = Some(body.into());
        self
    }
}

/// Filter for [`crate::NoteTree::list`]; `None` fields match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoteFilter {
    pub project: Option<String>,
    pub kind: Option<Kind>,
    pub scope: Option<Scope>,
    pub status: Option<Status>,
}

impl NoteFilter {
    /// True when the note passes every set criterion.
    pub fn matches(&self, note: &Note) -> bool {
        let m = &note.meta;
        self.project
            .as_deref()
            .is_none_or(|p| m.project.as_deref() == Some(slugify(p).as_str()))
            && self.kind.is_none_or(|k| m.kind == k)
            && self.scope.is_none_or(|s| m.scope == s)
            && self.status.is_none_or(|s| m.status == s)
    }
}

/// The body a new note of this kind starts from, so notes of one kind read alike.
pub fn body_template(kind: Kind) -> &'static str {
    match kind {
        Kind::Insight => "## Insight\n\n\n\n## Evidence\n\n\n\n## When it applies\n",
        Kind::Hindsight => "## Error\n\n```\n\n```\n\n## Cause\n\n\n\n## Fix\n",
        Kind::HowTo => "## Goal\n\n\n\n## Steps\n\n1. \n\n## Check\n",
        Kind::Architecture => {
            "## Overview\n\n\n\n## Parts\n\n\n\n## Invariants\n\n\n\n## Gotchas\n"
        }
    }
}

/// The hindsight body for an approach that was given up rather than fixed.
pub fn abandoned_hindsight_template() -> &'static str {
    "## Error\n\n```\n\n```\n\n## Cause\n\n\n\n## Why abandoned\n"
}

/// Collapses all whitespace (newlines included) to single spaces, for
/// fields that must stay on one line.
pub fn flatten_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A file or folder name for `text`: lowercase ASCII letters, digits and
/// dashes, at most 60 bytes, cut at a dash when possible. Empty when
/// `text` has no ASCII letter or digit.
pub fn slugify(text: &str) -> String {
    const MAX: usize = 60;
    let mut slug = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    while slug.ends_with('-') {
        slug.pop();
    }
    if slug.len() > MAX {
        // Only ASCII was pushed, so every byte index is a char boundary.
        let cut = slug[..MAX]
            .rfind('-')
            .filter(|&i| i >= MAX / 2)
            .unwrap_or(MAX);
        slug.truncate(cut);
        while slug.ends_with('-') {
            slug.pop();
        }
    }
    slug
}

pub(crate) fn path_to_slash(path: &std::path::Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// `text` trimmed, cut after the last whole line within `budget`
/// characters, and whether it was cut. `None` when nothing is left.
pub fn cut_at_line(text: &str, budget: usize) -> Option<(String, bool)> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if text.chars().count() <= budget {
        return Some((text.to_string(), false));
    }
    let mut kept = String::new();
    for line in text.lines() {
        if kept.chars().count() + line.chars().count() + 1 > budget {
            break;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    let kept = kept.trim_end().to_string();
    (!kept.is_empty()).then_some((kept, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_ascii_and_bounded() {
        assert_eq!(
            slugify("Tests fail: No module named 'src'!"),
            "tests-fail-no-module-named-src"
        );
        assert_eq!(slugify("Ünïcödé ☃"), "n-c-d");
        assert_eq!(slugify("☃☃"), "");
        let long = slugify(&"word ".repeat(40));
        assert!(long.len() <= 60 && !long.ends_with('-'), "{long}");
    }

    #[test]
    fn enums_parse_their_spelling() {
        for k in Kind::ALL {
            assert_eq!(k.as_str().parse::<Kind>(), Ok(k));
        }
        assert!("howto".parse::<Kind>().is_err());
        assert_eq!("Shared".parse::<Scope>(), Ok(Scope::Shared));
    }

    #[test]
    fn flatten_joins_lines() {
        assert_eq!(flatten_line("  a\nb\t\tc \r\n"), "a b c");
    }
}
