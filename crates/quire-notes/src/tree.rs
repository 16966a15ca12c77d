//! The note tree on disk: Markdown files are the source of truth.
//!
//! Layout: `projects/<project>/<topic>/<slug>.md` and
//! `shared/<topic>/<slug>.md`, with a generated `README.md` per folder.

use std::collections::HashMap;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, SubsecRound, Utc};
use quire_types::Redactor;

use crate::error::{Error, Result, read_err, write_err};
use crate::frontmatter::{self, FileDefaults, FilledField};
use crate::fsx::{content_hash, remove_stale_temp, write_atomic, write_new};
use crate::note::{
    Frontmatter, Kind, NewNote, Note, NoteFilter, Scope, Status, body_template, flatten_line,
    slugify,
};
use crate::readme;

/// The generated index file in every folder; never read as a note.
pub const README: &str = "README.md";

/// A note file whose frontmatter could not be read; left out of every
/// listing and of the index until fixed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenNote {
    /// Relative to the tree root.
    pub path: PathBuf,
    /// 1-based line of the problem in the file.
    pub line: usize,
    pub message: String,
}

/// A note written by hand whose absent fields were filled from its path
/// and file times (they are written into the file at its next change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilledNote {
    /// Relative to the tree root.
    pub path: PathBuf,
    pub id: String,
    pub fields: Vec<FilledField>,
}

/// Result of reading the whole tree: good notes plus broken files.
#[derive(Debug, Clone, Default)]
pub struct ScanReport {
    pub notes: Vec<Note>,
    pub broken: Vec<BrokenNote>,
    /// The good notes that had fields filled in.
    pub filled: Vec<FilledNote>,
}

/// A note with the hash of its file bytes, for index syncing.
pub(crate) struct ScannedNote {
    pub note: Note,
    pub hash: String,
    /// Fields absent from the file, filled from its place in the tree.
    pub filled: Vec<FilledField>,
}

/// Handle on a notes folder. Cheap to clone; clones share the id cache.
#[derive(Debug, Clone)]
pub struct NoteTree {
    root: PathBuf,
    redactor: Arc<Redactor>,
    /// id -> relative path. Only a hint: hand edits can make it stale, so
    /// every hit is checked against the file and a miss triggers a rescan.
    ids: Arc<Mutex<HashMap<String, PathBuf>>>,
    /// Serialises read-modify-write cycles within this process.
    write_lock: Arc<Mutex<()>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded data is a cache or a unit; a panic elsewhere cannot
    // leave it in a state worse than stale, so poisoning is ignored.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl NoteTree {
    /// Opens (creating if needed) the notes folder at `root`.
    pub fn open(root: impl AsRef<Path>) -> Result<NoteTree> {
        let root = root.as_ref();
        fs::create_dir_all(root).map_err(write_err(root))?;
        let root = root.canonicalize().map_err(read_err(root))?;
        Ok(NoteTree {
            root,
            redactor: Arc::new(Redactor::new()),
            ids: Arc::default(),
            write_lock: Arc::default(),
        })
    }

    /// Sets the redactor every written text goes through.
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = Arc::new(redactor);
        self
    }

    /// The canonical notes folder; note paths are relative to it.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The redactor applied to everything this tree writes.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Absolute location of a note's file.
    pub fn abs_path(&self, note: &Note) -> PathBuf {
        self.root.join(&note.path)
    }

    /// Writes a new note under a slug of its title that is unique in its
    /// folder, then refreshes the folder READMEs.
    pub fn create(&self, new: NewNote) -> Result<Note> {
        let _guard = lock(&self.write_lock);
        let now = now();
        let body = new
            .body
            .unwrap_or_else(|| body_template(new.kind).to_string());
        let mut note = Note {
            meta: Frontmatter {
                id: ulid::Ulid::new().to_string(),
                title: new.title,
                description: new.description,
                keywords: new.keywords,
                kind: new.kind,
                scope: new.scope,
                project: new.project,
                topic: new.topic,
                provenance: new.provenance,
                error_signatures: new.error_signatures,
                created: now,
                updated: now,
                helpful: 0,
                harmful: 0,
                status: Status::Active,
                superseded_by: None,
            },
            body,
            path: PathBuf::new(),
        };
        self.clean(&mut note)?;
        self.place_new(&mut note)?;
        self.refresh_readmes(note.path.parent());
        Ok(note)
    }

    /// Changes a note in place through `change` and bumps `updated`. The
    /// id and creation time cannot change; a changed scope, project or
    /// topic moves the file to its new folder.
    pub fn update(&self, id: &str, change: impl FnOnce(&mut Note)) -> Result<Note> {
        let _guard = lock(&self.write_lock);
        let old = self.require(id)?;
        let mut note = old.clone();
        change(&mut note);
        note.meta.id = old.meta.id.clone();
        note.meta.created = old.meta.created;
        note.meta.updated = now().max(old.meta.updated);
        note.path = old.path.clone();
        self.clean(&mut note)?;
        self.store_changed(&old, &mut note)?;
        Ok(note)
    }

    /// Marks `old_id` superseded by `new_id` (which must exist).
    pub fn supersede(&self, old_id: &str, new_id: &str) -> Result<Note> {
        if old_id == new_id {
            return Err(Error::Invalid(format!(
                "note {old_id} cannot supersede itself"
            )));
        }
        self.require(new_id)?;
        self.update(old_id, |n| {
            n.meta.status = Status::Superseded;
            n.meta.superseded_by = Some(new_id.to_string());
        })
    }

    /// Removes a note's file; returns the note as it was.
    pub fn delete(&self, id: &str) -> Result<Note> {
        let _guard = lock(&self.write_lock);
        let note = self.require(id)?;
        let abs = self.abs_path(&note);
        fs::remove_file(&abs).map_err(write_err(&abs))?;
        lock(&self.ids).remove(id);
        self.refresh_readmes(note.path.parent());
        Ok(note)
    }

    /// Counts one more helpful or harmful use. Does not bump `updated`,
    /// which tracks changes of content.
    pub fn credit(&self, id: &str, helpful: bool) -> Result<Note> {
        let _guard = lock(&self.write_lock);
        let mut note = self.require(id)?;
        if helpful {
            note.meta.helpful = note.meta.helpful.saturating_add(1);
        } else {
            note.meta.harmful = note.meta.harmful.saturating_add(1);
        }
        let abs = self.abs_path(&note);
        write_atomic(&abs, note.render().as_bytes())?;
        Ok(note)
    }

    /// The note with this id, if any (and readable).
    pub fn get(&self, id: &str) -> Result<Option<Note>> {
        let cached = lock(&self.ids).get(id).cloned();
        if let Some(rel) = cached
            && let Ok(Some(note)) = self.read_rel(&rel)
            && note.meta.id == id
        {
            return Ok(Some(note));
        }
        let report = self.scan()?;
        Ok(report.notes.into_iter().find(|n| n.meta.id == id))
    }

    /// The note stored at `path` (absolute, or relative to the root).
    /// `Ok(None)` when there is no such file; a parse error when it is broken.
    pub fn find_by_path(&self, path: impl AsRef<Path>) -> Result<Option<Note>> {
        let rel = self.relative(path.as_ref())?;
        self.read_rel(&rel)
    }

    /// Writes a new hand-written note at `path` (relative to the root, or
    /// absolute inside it; `.md` is added when missing): a complete
    /// frontmatter with `title`, a fresh id, scope, project and topic from
    /// the folders, and the body template of `kind`. Never overwrites.
    pub fn write_skeleton(&self, path: &Path, title: &str, kind: Kind) -> Result<Note> {
        let _guard = lock(&self.write_lock);
        let mut rel = self.relative(path)?;
        if rel.extension().is_none_or(|e| e != "md") {
            rel.as_mut_os_string().push(".md");
        }
        // Hidden folders are never scanned: a note there would be lost.
        let hidden = rel
            .components()
            .any(|c| c.as_os_str().to_string_lossy().starts_with('.'));
        if !is_note_file(&rel) || hidden {
            return Err(Error::Invalid(format!(
                "{}: a note is a `.md` file other than {README}, in no hidden folder",
                rel.display()
            )));
        }
        let (scope, project, topic) = place_of(&rel);
        let now = now();
        let mut note = Note {
            meta: Frontmatter {
                id: ulid::Ulid::new().to_string(),
                title: title.to_string(),
                description: String::new(),
                keywords: Vec::new(),
                kind,
                scope,
                project,
                topic,
                provenance: Default::default(),
                error_signatures: Vec::new(),
                created: now,
                updated: now,
                helpful: 0,
                harmful: 0,
                status: Status::Active,
                superseded_by: None,
            },
            body: body_template(kind).to_string(),
            path: rel.clone(),
        };
        self.clean(&mut note)?;
        let abs = self.root.join(&rel);
        if let Some(parent) = abs.parent() {
            fs::create_dir_all(parent).map_err(write_err(parent))?;
        }
        if !write_new(&abs, note.render().as_bytes())? {
            return Err(Error::Invalid(format!(
                "{} already exists; edit it with `quire notes edit`",
                abs.display()
            )));
        }
        lock(&self.ids).insert(note.meta.id.clone(), rel);
        self.refresh_readmes(note.path.parent());
        Ok(note)
    }

    /// All readable notes matching `filter`, sorted by path. Broken files
    /// are skipped (see [`NoteTree::scan`] to list them).
    pub fn list(&self, filter: &NoteFilter) -> Result<Vec<Note>> {
        let report = self.scan()?;
        for b in &report.broken {
            tracing::warn!(path = %b.path.display(), line = b.line, "skipping broken note: {}", b.message);
        }
        Ok(report
            .notes
            .into_iter()
            .filter(|n| filter.matches(n))
            .collect())
    }

    /// Reads every note; broken ones are reported with path and line and
    /// left out so the rest keep working.
    pub fn scan(&self) -> Result<ScanReport> {
        let (scanned, broken) = self.scan_files()?;
        let filled = scanned
            .iter()
            .filter(|s| !s.filled.is_empty())
            .map(|s| FilledNote {
                path: s.note.path.clone(),
                id: s.note.meta.id.clone(),
                fields: s.filled.clone(),
            })
            .collect();
        Ok(ScanReport {
            notes: scanned.into_iter().map(|s| s.note).collect(),
            broken,
            filled,
        })
    }

    /// Rewrites every folder README from the notes on disk (after hand edits).
    pub fn regenerate_readmes(&self) -> Result<()> {
        let mut dirs = Vec::new();
        collect_dirs(&self.root, &mut dirs)?;
        // Deepest first, so emptied folders are pruned before their parents.
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for dir in dirs {
            readme::regenerate(self, &dir)?;
        }
        Ok(())
    }

    pub(crate) fn scan_files(&self) -> Result<(Vec<ScannedNote>, Vec<BrokenNote>)> {
        let mut files = Vec::new();
        collect_note_files(&self.root, &mut files)?;
        files.sort();
        let mut notes: Vec<ScannedNote> = Vec::with_capacity(files.len());
        let mut broken = Vec::new();
        let mut seen: HashMap<String, PathBuf> = HashMap::new();
        for abs in files {
            let rel = abs.strip_prefix(&self.root).unwrap_or(&abs).to_path_buf();
            let bytes = match fs::read(&abs) {
                Ok(b) => b,
                Err(e) => {
                    broken.push(BrokenNote {
                        path: rel,
                        line: 1,
                        message: format!("cannot read: {e}"),
                    });
                    continue;
                }
            };
            let Ok(text) = std::str::from_utf8(&bytes) else {
                broken.push(BrokenNote {
                    path: rel,
                    line: 1,
                    message: "not UTF-8 text".into(),
                });
                continue;
            };
            match frontmatter::parse_with(text, &file_defaults(&rel, &abs)) {
                Ok((meta, body, filled)) => {
                    if let Some(first) = seen.get(&meta.id) {
                        let line = text
                            .lines()
                            .position(|l| l.starts_with("id:"))
                            .map_or(1, |i| i + 1);
                        broken.push(BrokenNote {
                            path: rel,
                            line,
                            message: format!(
                                "duplicate id {} (also in {})",
                                meta.id,
                                first.display()
                            ),
                        });
                        continue;
                    }
                    seen.insert(meta.id.clone(), rel.clone());
                    let hash = content_hash(&bytes);
                    notes.push(ScannedNote {
                        note: Note {
                            meta,
                            body,
                            path: rel,
                        },
                        hash,
                        filled,
                    });
                }
                Err(e) => broken.push(BrokenNote {
                    path: rel,
                    line: e.line,
                    message: e.message,
                }),
            }
        }
        let mut ids = lock(&self.ids);
        ids.clear();
        ids.extend(
            notes
                .iter()
                .map(|s| (s.note.meta.id.clone(), s.note.path.clone())),
        );
        Ok((notes, broken))
    }

    /// Reads one note by relative path; `Ok(None)` if the file is absent.
    pub(crate) fn read_rel(&self, rel: &Path) -> Result<Option<Note>> {
        let abs = self.root.join(rel);
        let text = match fs::read_to_string(&abs) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(read_err(&abs)(e)),
        };
        let (meta, body, _) =
            frontmatter::parse_with(&text, &file_defaults(rel, &abs)).map_err(|e| {
                Error::Parse {
                    path: abs.clone(),
                    line: e.line,
                    message: e.message,
                }
            })?;
        Ok(Some(Note {
            meta,
            body,
            path: rel.to_path_buf(),
        }))
    }

    fn require(&self, id: &str) -> Result<Note> {
        self.get(id)?.ok_or_else(|| Error::NotFound(id.to_string()))
    }

    fn relative(&self, path: &Path) -> Result<PathBuf> {
        let outside = || Error::OutsideTree {
            path: path.to_path_buf(),
            root: self.root.clone(),
        };
        let rel = if path.is_absolute() {
            let abs = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
            abs.strip_prefix(&self.root)
                .map_err(|_| outside())?
                .to_path_buf()
        } else {
            path.to_path_buf()
        };
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(outside());
        }
        Ok(rel)
    }

    /// Redacts, flattens and checks every field; computes the folder.
    fn clean(&self, note: &mut Note) -> Result<()> {
        let r = &*self.redactor;
        let line = |s: &str| flatten_line(&r.redact(s));
        let lines = |v: &mut Vec<String>| {
            let mut out: Vec<String> = Vec::with_capacity(v.len());
            for item in v.iter().map(|s| line(s)).filter(|s| !s.is_empty()) {
                if !out.contains(&item) {
                    out.push(item);
                }
            }
            *v = out;
        };
        let m = &mut note.meta;
        m.title = line(&m.title);
        if m.title.is_empty() {
            return Err(Error::Invalid("the title is empty".into()));
        }
        m.description = line(&m.description);
        lines(&mut m.keywords);
        lines(&mut m.error_signatures);
        lines(&mut m.provenance.sessions);
        lines(&mut m.provenance.files);
        lines(&mut m.provenance.symbols);
        m.provenance.commit = m
            .provenance
            .commit
            .as_deref()
            .map(line)
            .filter(|c| !c.is_empty());
        m.superseded_by = m
            .superseded_by
            .as_deref()
            .map(line)
            .filter(|c| !c.is_empty());
        m.topic = slugify(&m.topic);
        if m.topic.is_empty() {
            return Err(Error::Invalid(format!(
                "note {:?} has no usable topic",
                m.title
            )));
        }
        m.project = match m.scope {
            Scope::Shared => None,
            Scope::Project => {
                let p = m.project.as_deref().map(slugify).unwrap_or_default();
                if p.is_empty() {
                    return Err(Error::Invalid(format!(
                        "project note {:?} needs a project name with a letter or digit",
                        m.title
                    )));
                }
                Some(p)
            }
        };
        note.body = frontmatter::normalize_body(&r.redact(&note.body));
        Ok(())
    }

    /// Writes `note` under a fresh unique slug in its folder; sets its path.
    fn place_new(&self, note: &mut Note) -> Result<()> {
        let folder = folder_of(&note.meta);
        let base = match slugify(&note.meta.title) {
            s if s.is_empty() => "note".to_string(),
            s => s,
        };
        let text = note.render();
        let mut n: u64 = 1;
        loop {
            let name = if n == 1 {
                format!("{base}.md")
            } else {
                format!("{base}-{n}.md")
            };
            n += 1;
            // README.md is reserved for the generated index.
            if name.eq_ignore_ascii_case(README) {
                continue;
            }
            let rel = folder.join(&name);
            if write_new(&self.root.join(&rel), text.as_bytes())? {
                note.path = rel;
                lock(&self.ids).insert(note.meta.id.clone(), note.path.clone());
                return Ok(());
            }
        }
    }

    /// Stores an updated note: in place when its folder is unchanged,
    /// otherwise under a new slug in the new folder.
    fn store_changed(&self, old: &Note, note: &mut Note) -> Result<()> {
        let old_folder = old.path.parent().map(Path::to_path_buf).unwrap_or_default();
        if folder_of(&note.meta) == old_folder {
            write_atomic(&self.abs_path(note), note.render().as_bytes())?;
            self.refresh_readmes(Some(&old_folder));
            return Ok(());
        }
        self.place_new(note)?;
        let old_abs = self.abs_path(old);
        fs::remove_file(&old_abs).map_err(write_err(&old_abs))?;
        self.refresh_readmes(Some(&old_folder));
        self.refresh_readmes(note.path.parent());
        Ok(())
    }

    /// Regenerates the READMEs of `folder` and its ancestors. A README
    /// failure does not undo the note write, so it is only logged.
    fn refresh_readmes(&self, folder: Option<&Path>) {
        let mut dir = self.root.join(folder.unwrap_or(Path::new("")));
        loop {
            if let Err(e) = readme::regenerate(self, &dir) {
                tracing::warn!("cannot refresh README: {e}");
            }
            if dir == self.root || !dir.starts_with(&self.root) {
                break;
            }
            match dir.parent() {
                Some(p) => dir = p.to_path_buf(),
                None => break,
            }
        }
    }
}

/// What a file's place in the tree says about the note in it (see
/// [`FileDefaults`]): `projects/<p>/<topic>/…` or `shared/<topic>/…`; a
/// note elsewhere is shared, its topic its folder's name or `general`.
pub(crate) fn file_defaults(rel: &Path, abs: &Path) -> FileDefaults {
    let (scope, project, topic) = place_of(rel);
    let meta = fs::metadata(abs).ok();
    let time = |t: Option<std::time::SystemTime>| {
        t.map_or_else(now, |t| DateTime::<Utc>::from(t).trunc_subsecs(0))
    };
    let updated = time(meta.as_ref().and_then(|m| m.modified().ok()));
    let created = meta
        .as_ref()
        .and_then(|m| m.created().ok())
        .map_or(updated, |t| time(Some(t)).min(updated));
    FileDefaults {
        id: rel.with_extension("").to_string_lossy().replace('\\', "/"),
        scope,
        project,
        topic,
        created,
        updated,
    }
}

/// Scope, project and topic of a note file from its folders (see
/// [`file_defaults`]).
fn place_of(rel: &Path) -> (Scope, Option<String>, String) {
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let folders = &parts[..parts.len().saturating_sub(1)];
    let (scope, project, topic) = match folders {
        [first, project, topic, ..] if first == "projects" => {
            (Scope::Project, Some(project.clone()), Some(topic.clone()))
        }
        [first, project] if first == "projects" => (Scope::Project, Some(project.clone()), None),
        [first, topic, ..] if first == "shared" => (Scope::Shared, None, Some(topic.clone())),
        [first] if first == "shared" => (Scope::Shared, None, None),
        [.., folder] => (Scope::Shared, None, Some(folder.clone())),
        [] => (Scope::Shared, None, None),
    };
    (
        scope,
        project,
        topic.unwrap_or_else(|| GENERAL_TOPIC.to_string()),
    )
}

/// The topic of a note whose folders do not name one.
const GENERAL_TOPIC: &str = "general";

/// Current time at whole seconds, which is what frontmatter keeps.
fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(0)
}

/// The folder (relative to the root) a note belongs in.
pub(crate) fn folder_of(meta: &Frontmatter) -> PathBuf {
    match (meta.scope, &meta.project) {
        (Scope::Project, Some(p)) => Path::new("projects").join(p).join(&meta.topic),
        _ => Path::new("shared").join(&meta.topic),
    }
}

pub(crate) fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

/// Note files: `*.md` except READMEs, skipping hidden entries and symlinked folders.
fn collect_note_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir).map_err(read_err(dir))? {
        let entry = entry.map_err(read_err(dir))?;
        let path = entry.path();
        if is_hidden(&path) {
            // Not a note; but a temp file a killed write left goes.
            remove_stale_temp(&path);
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            collect_note_files(&path, out)?;
        } else if is_note_file(&path) {
            out.push(path);
        }
    }
    Ok(())
}

pub(crate) fn is_note_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "md")
        && path.file_name().is_some_and(|n| n != README)
        && !is_hidden(path)
}

fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    out.push(dir.to_path_buf());
    for entry in fs::read_dir(dir).map_err(read_err(dir))? {
        let entry = entry.map_err(read_err(dir))?;
        let path = entry.path();
        if !is_hidden(&path) && entry.file_type().is_ok_and(|t| t.is_dir()) {
            collect_dirs(&path, out)?;
        }
    }
    Ok(())
}
