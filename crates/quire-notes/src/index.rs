//! The tantivy index over the note tree. It is derived data: when it is
//! missing, corrupt or of an older schema it is wiped and rebuilt from
//! the Markdown files.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use tantivy::collector::Count;
use tantivy::directory::error::LockError;
use tantivy::query::AllQuery;
use tantivy::schema::{
    Field, INDEXED, IndexRecordOption, NumericOptions, STORED, STRING, Schema, TextFieldIndexing,
    TextOptions, Value,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer,
};
use tantivy::{
    DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument,
    TantivyError, Term,
};

use crate::error::{Error, Result, read_err, write_err};
use crate::fsx::content_hash;
use crate::note::Note;
use crate::tree::{BrokenNote, NoteTree};

/// Name of the analyzer for text fields. The version suffix is part of the
/// schema, so changing the analysis means bumping it, which makes old
/// indexes fail the schema check and get rebuilt.
pub(crate) const TOKENIZER: &str = "quire_en_v1";

/// Writer retry budget when another process holds the index lock.
const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(10);
/// How stale a searcher may be with respect to other processes' commits.
const RELOAD_EVERY: Duration = Duration::from_secs(1);
/// Arena for small incremental writes (tantivy's minimum is 15 MB per thread).
const SMALL_WRITER_BYTES: usize = 20_000_000;
/// Arena per thread for whole rebuilds.
const BULK_WRITER_BYTES_PER_THREAD: usize = 128_000_000;

/// Field handles of the schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    pub id: Field,
    pub path: Field,
    pub title: Field,
    pub description: Field,
    pub keywords: Field,
    pub body: Field,
    pub error_signatures: Field,
    pub project: Field,
    pub scope: Field,
    pub kind: Field,
    pub status: Field,
    pub topic: Field,
    pub updated: Field,
    pub hash: Field,
}

pub(crate) fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text_with = |stored: bool, record: IndexRecordOption, fieldnorms: bool| {
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(record)
            .set_fieldnorms(fieldnorms);
        let opts = TextOptions::default().set_indexing_options(indexing);
        if stored { opts.set_stored() } else { opts }
    };
    let text = |stored: bool| text_with(stored, IndexRecordOption::WithFreqs, true);
    let fields = Fields {
        id: b.add_text_field("id", STRING | STORED),
        path: b.add_text_field("path", STRING | STORED),
        title: b.add_text_field("title", text(true)),
        description: b.add_text_field("description", text(true)),
        keywords: b.add_text_field("keywords", text(false)),
        // Stored for snippets.
        body: b.add_text_field("body", text(true)),
        // Stored so error search can measure how much of a signature matched.
        // No term frequencies and no length norms: a term match scores its
        // IDF alone, so a note listing one error shape twice, or listing
        // fewer errors, does not push the exact signature out of the
        // candidates of `search_errors`.
        error_signatures: b.add_text_field(
            "error_signatures",
            text_with(true, IndexRecordOption::Basic, false),
        ),
        project: b.add_text_field("project", STRING | STORED),
        scope: b.add_text_field("scope", STRING | STORED),
        kind: b.add_text_field("kind", STRING | STORED),
        status: b.add_text_field("status", STRING | STORED),
        topic: b.add_text_field("topic", STRING | STORED),
        updated: b.add_i64_field(
            "updated",
            NumericOptions::from(INDEXED).set_stored().set_fast(),
        ),
        hash: b.add_text_field("hash", STRING | STORED),
    };
    (b.build(), fields)
}

/// The analyzer of every text field and of query text: words, lowercased,
/// folded to ASCII, English stop words dropped, stemmed.
pub(crate) fn analyzer() -> TextAnalyzer {
    const STOP_WORDS: &[&str] = &[
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
        "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
        "these", "they", "this", "to", "was", "will", "with",
    ];
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(StopWordFilter::remove(
            STOP_WORDS.iter().map(|s| s.to_string()),
        ))
        .filter(Stemmer::new(Language::English))
        .build()
}

/// What a sync or rebuild changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    pub added: usize,
    pub updated: usize,
    pub removed: usize,
    /// Files left out because their frontmatter is broken.
    pub broken: Vec<BrokenNote>,
}

/// Full-text index over a [`NoteTree`]. Searches never block; writes take
/// tantivy's writer lock for the duration of one operation only, so
/// several Quire processes can share one index.
pub struct NoteIndex {
    pub(crate) dir: PathBuf,
    pub(crate) index: Index,
    pub(crate) reader: IndexReader,
    pub(crate) fields: Fields,
    pub(crate) analyzer: TextAnalyzer,
    tree: NoteTree,
    lock_timeout: Duration,
    /// When the reader last looked for commits of other processes.
    last_reload: Mutex<Instant>,
}

impl std::fmt::Debug for NoteIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoteIndex")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl NoteIndex {
    /// Opens the index in `index_dir`, building it from `tree` when absent.
    /// A corrupt index or one of another schema is wiped and rebuilt, with
    /// a warning. Does not sync: call [`NoteIndex::sync`] to pick up hand edits.
    ///
    /// Several processes may open one index at once, also while it is
    /// missing or broken: a new index is built in a hidden sibling folder
    /// and renamed into place whole, so no process ever sees (and wipes) an
    /// index another one is still building; the first rename wins and the
    /// others open the winner's index.
    pub fn open(index_dir: impl AsRef<Path>, tree: &NoteTree) -> Result<NoteIndex> {
        let dir = index_dir.as_ref();
        check_dir(dir, tree.root())?;
        let dir = canonical_target(dir)?;
        clear_leftovers(&dir);
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Self::try_open_settled(&dir, tree) {
                Ok(Some(index)) => return Ok(index),
                Ok(None) => {}
                Err(reason) => {
                    tracing::warn!(
                        "note index at {} is unusable ({reason}); rebuilding it from {}",
                        dir.display(),
                        tree.root().display()
                    );
                    move_aside_and_remove(&dir)?;
                }
            }
            let built = Self::build_beside(&dir, tree)?;
            match fs::rename(&built, &dir) {
                Ok(()) => {
                    if let Some(parent) = dir.parent()
                        && let Ok(d) = fs::File::open(parent)
                    {
                        let _ = d.sync_all();
                    }
                }
                // Another process put its index in place first: use it.
                Err(e) if dir.exists() && attempt < 5 => {
                    tracing::debug!(%e, "another process built the note index first");
                    let _ = fs::remove_dir_all(&built);
                    continue;
                }
                Err(e) => {
                    let _ = fs::remove_dir_all(&built);
                    return Err(write_err(&dir)(e));
                }
            }
            match Self::try_open(&dir, tree) {
                Ok(Some(index)) => return Ok(index),
                Ok(None) | Err(_) if attempt < 5 => continue,
                Ok(None) => {
                    return Err(Error::Invalid(format!(
                        "the note index at {} vanished while it was opened",
                        dir.display()
                    )));
                }
                Err(reason) => {
                    return Err(Error::Invalid(format!(
                        "the note index just built at {} is unusable: {reason}",
                        dir.display()
                    )));
                }
            }
        }
    }

    /// [`NoteIndex::try_open`], asked again after a moment before an index
    /// is called broken: another process's commit or merge can be midway.
    fn try_open_settled(dir: &Path, tree: &NoteTree) -> Result<Option<NoteIndex>, String> {
        let mut last = String::new();
        for wait in [0, 50, 200] {
            std::thread::sleep(Duration::from_millis(wait));
            match Self::try_open(dir, tree) {
                Err(reason) => last = reason,
                done => return done,
            }
        }
        Err(last)
    }

    /// Builds a complete index of `tree` in a hidden folder next to `dir`
    /// and returns that folder.
    fn build_beside(dir: &Path, tree: &NoteTree) -> Result<PathBuf> {
        let building = sibling(dir, "build");
        fs::create_dir_all(&building).map_err(write_err(&building))?;
        let built = (|| {
            let (schema, _) = schema();
            let index =
                Index::create_in_dir(&building, schema).map_err(|e| index_err(&building, e))?;
            let index = Self::from_index(building.clone(), index, tree)?;
            let report = index.reindex()?;
            tracing::info!(
                notes = report.added,
                broken = report.broken.len(),
                "built note index"
            );
            Ok(())
        })();
        match built {
            Ok(()) => Ok(building),
            Err(err) => {
                let _ = fs::remove_dir_all(&building);
                Err(err)
            }
        }
    }

    /// Gives up waiting for another writer after `timeout` instead of 10 s.
    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    /// The (canonical) index folder, e.g. for logs and lock diagnostics.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Number of notes in the index as of the last reload.
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// True when no note is indexed (as of the last reload).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `Ok(None)`: no index here yet. `Err(reason)`: something is here but
    /// unusable.
    fn try_open(dir: &Path, tree: &NoteTree) -> Result<Option<NoteIndex>, String> {
        if !dir.join("meta.json").exists() {
            let mut entries = match fs::read_dir(dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e.to_string()),
            };
            let has_files = entries.next().is_some();
            return if has_files {
                Err("files but no meta.json".into())
            } else {
                Ok(None)
            };
        }
        let index = Index::open_in_dir(dir).map_err(|e| e.to_string())?;
        if index.schema() != schema().0 {
            return Err("its schema is from another version".into());
        }
        let opened = Self::from_index(dir.to_path_buf(), index, tree).map_err(|e| e.to_string())?;
        opened.check().map_err(|e| e.to_string())?;
        Ok(Some(opened))
    }

    fn from_index(dir: PathBuf, index: Index, tree: &NoteTree) -> Result<NoteIndex> {
        let analyzer = analyzer();
        index.tokenizers().register(TOKENIZER, analyzer.clone());
        // Manual reloads after our own commits make writes visible at once;
        // commits of other processes are picked up by `searcher()`, which
        // reloads when the last reload is older than RELOAD_EVERY.
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| index_err(&dir, e))?;
        Ok(NoteIndex {
            dir,
            index,
            reader,
            fields: schema().1,
            analyzer,
            tree: tree.clone(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            last_reload: Mutex::new(Instant::now()),
        })
    }

    /// Reads something from every segment so damaged files show at open.
    fn check(&self) -> tantivy::Result<()> {
        let searcher = self.reader.searcher();
        searcher.search(&AllQuery, &Count)?;
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            if let Some(doc) = segment.doc_ids_alive().next() {
                searcher.doc::<TantivyDocument>(DocAddress::new(ord as u32, doc))?;
            }
        }
        Ok(())
    }

    /// Rebuilds the index from the files.
    pub fn reindex(&self) -> Result<SyncReport> {
        let (scanned, broken) = self.tree.scan_files()?;
        let writer = self.bulk_writer()?;
        writer.delete_all_documents().map_err(|e| self.err(e))?;
        for s in &scanned {
            writer
                .add_document(self.document(&s.note, &s.hash))
                .map_err(|e| self.err(e))?;
        }
        self.finish(writer)?;
        Ok(SyncReport {
            added: scanned.len(),
            broken,
            ..SyncReport::default()
        })
    }

    /// Replaces the index content with exactly `notes` (not read from
    /// files): for importing and benchmarks. A later `sync` reconciles with
    /// the files again.
    pub fn rebuild_from(&self, notes: &[Note]) -> Result<()> {
        let writer = self.bulk_writer()?;
        writer.delete_all_documents().map_err(|e| self.err(e))?;
        for note in notes {
            let hash = content_hash(note.render().as_bytes());
            writer
                .add_document(self.document(note, &hash))
                .map_err(|e| self.err(e))?;
        }
        self.finish(writer)
    }

    /// Brings the index in line with the files: notes created, edited or
    /// deleted by hand since the last sync, compared by content hash per
    /// path. Only changed notes are rewritten; no change takes no lock.
    pub fn sync(&self) -> Result<SyncReport> {
        self.reader.reload().map_err(|e| self.err(e))?;
        let (scanned, broken) = self.tree.scan_files()?;
        let mut indexed = self.indexed_hashes()?;
        let mut report = SyncReport {
            broken,
            ..SyncReport::default()
        };
        let mut changed = Vec::new();
        for s in &scanned {
            match indexed.remove(&s.note.path_str()) {
                None => report.added += 1,
                Some(hash) if hash != s.hash => report.updated += 1,
                Some(_) => continue,
            }
            changed.push(s);
        }
        report.removed = indexed.len();
        if changed.is_empty() && indexed.is_empty() {
            return Ok(report);
        }
        let writer = self.small_writer()?;
        for path in indexed.keys() {
            writer.delete_term(Term::from_field_text(self.fields.path, path));
        }
        for s in changed {
            self.replace(&writer, &s.note, &s.hash)?;
        }
        self.finish(writer)?;
        tracing::debug!(?report, "synced note index");
        Ok(report)
    }

    /// Indexes one note right after it was written, replacing any older
    /// version (by id or path). Visible to searches when this returns.
    pub fn upsert(&self, note: &Note) -> Result<()> {
        self.upsert_many(std::slice::from_ref(note))
    }

    /// [`NoteIndex::upsert`] for several notes under one commit.
    pub fn upsert_many(&self, notes: &[Note]) -> Result<()> {
        let writer = self.small_writer()?;
        for note in notes {
            self.replace(&writer, note, &content_hash(note.render().as_bytes()))?;
        }
        self.finish(writer)
    }

    /// Drops a note from the index (after deleting its file).
    pub fn remove(&self, id: &str) -> Result<()> {
        let writer = self.small_writer()?;
        writer.delete_term(Term::from_field_text(self.fields.id, id));
        self.finish(writer)
    }

    fn replace(&self, writer: &IndexWriter, note: &Note, hash: &str) -> Result<()> {
        writer.delete_term(Term::from_field_text(self.fields.id, &note.meta.id));
        writer.delete_term(Term::from_field_text(self.fields.path, &note.path_str()));
        writer
            .add_document(self.document(note, hash))
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Commits, makes the commit visible to this reader, then lets
    /// background merges finish so segments do not pile up.
    fn finish(&self, mut writer: IndexWriter) -> Result<()> {
        writer.commit().map_err(|e| self.err(e))?;
        self.reader.reload().map_err(|e| self.err(e))?;
        writer.wait_merging_threads().map_err(|e| self.err(e))?;
        Ok(())
    }

    fn small_writer(&self) -> Result<IndexWriter> {
        self.writer(1, SMALL_WRITER_BYTES)
    }

    fn bulk_writer(&self) -> Result<IndexWriter> {
        let threads = thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 4);
        self.writer(threads, threads * BULK_WRITER_BYTES_PER_THREAD)
    }

    /// Takes tantivy's writer lock, retrying with backoff while another
    /// writer (usually another process) holds it. Holding it, removes the
    /// files a killed writer left that no commit uses: its uncommitted
    /// delete files are named by opstamp, and the next writer starts from
    /// the same opstamp, so it would fail on `<segment>.<opstamp>.del`
    /// already existing (a kill -9 harness found it).
    fn writer(&self, threads: usize, bytes: usize) -> Result<IndexWriter> {
        let start = Instant::now();
        let mut delay = Duration::from_millis(10);
        loop {
            match self.index.writer_with_num_threads(threads, bytes) {
                Ok(writer) => {
                    if let Err(e) = writer.garbage_collect_files().wait() {
                        tracing::warn!(error = %e, dir = %self.dir.display(), "could not remove unused note index files");
                    }
                    return Ok(writer);
                }
                Err(TantivyError::LockFailure(LockError::LockBusy, _)) => {
                    let waited = start.elapsed();
                    if waited >= self.lock_timeout {
                        return Err(Error::Locked {
                            dir: self.dir.clone(),
                            waited,
                        });
                    }
                    tracing::debug!(?waited, "note index writer busy; retrying");
                    thread::sleep(delay.min(self.lock_timeout - waited));
                    delay = (delay * 2).min(Duration::from_millis(500));
                }
                Err(e) => return Err(self.err(e)),
            }
        }
    }

    fn document(&self, note: &Note, hash: &str) -> TantivyDocument {
        let f = &self.fields;
        let m = &note.meta;
        let mut doc = TantivyDocument::default();
        doc.add_text(f.id, &m.id);
        doc.add_text(f.path, note.path_str());
        doc.add_text(f.title, &m.title);
        doc.add_text(f.description, &m.description);
        for k in &m.keywords {
            doc.add_text(f.keywords, k);
        }
        doc.add_text(f.body, &note.body);
        for s in &m.error_signatures {
            doc.add_text(f.error_signatures, s);
        }
        if let Some(p) = &m.project {
            doc.add_text(f.project, p);
        }
        doc.add_text(f.scope, m.scope.as_str());
        doc.add_text(f.kind, m.kind.as_str());
        doc.add_text(f.status, m.status.as_str());
        doc.add_text(f.topic, &m.topic);
        doc.add_i64(f.updated, m.updated.timestamp());
        doc.add_text(f.hash, hash);
        doc
    }

    /// path -> content hash of every indexed note.
    fn indexed_hashes(&self) -> Result<HashMap<String, String>> {
        let searcher = self.reader.searcher();
        let mut out = HashMap::with_capacity(searcher.num_docs() as usize);
        for segment in searcher.segment_readers() {
            let store = segment
                .get_store_reader(1)
                .map_err(|e| self.err(TantivyError::from(e)))?;
            for doc in store.iter::<TantivyDocument>(segment.alive_bitset()) {
                let doc = doc.map_err(|e| self.err(e))?;
                let text = |field| {
                    doc.get_first(field)
                        .and_then(|v| v.as_str())
                        .map(str::to_string)
                };
                if let (Some(path), Some(hash)) = (text(self.fields.path), text(self.fields.hash)) {
                    out.insert(path, hash);
                }
            }
        }
        Ok(out)
    }

    /// A searcher that sees other processes' commits within RELOAD_EVERY.
    pub(crate) fn searcher(&self) -> Searcher {
        let mut last = self.last_reload.lock().unwrap_or_else(|e| e.into_inner());
        if last.elapsed() >= RELOAD_EVERY {
            if let Err(e) = self.reader.reload() {
                tracing::warn!("cannot reload note index at {}: {e}", self.dir.display());
            }
            *last = Instant::now();
        }
        drop(last);
        self.reader.searcher()
    }

    pub(crate) fn err(&self, source: TantivyError) -> Error {
        index_err(&self.dir, source)
    }
}

fn index_err(dir: &Path, source: TantivyError) -> Error {
    Error::Index {
        dir: dir.to_path_buf(),
        source,
    }
}

/// `dir` made absolute through its (created) parent; `dir` itself may not
/// exist yet.
fn canonical_target(dir: &Path) -> Result<PathBuf> {
    let name = dir.file_name().ok_or_else(|| Error::BadIndexDir {
        dir: dir.to_path_buf(),
        reason: "it has no folder name".into(),
    })?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(write_err(&parent))?;
    let parent = parent.canonicalize().map_err(read_err(&parent))?;
    Ok(parent.join(name))
}

/// A hidden, unique folder next to `dir`: `.<name>.<what>-<ulid>`.
fn sibling(dir: &Path, what: &str) -> PathBuf {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.with_file_name(format!(".{name}.{what}-{}", ulid::Ulid::new()))
}

/// Renames a broken index out of the way (so a concurrent opener never
/// sees it half deleted), then deletes it.
fn move_aside_and_remove(dir: &Path) -> Result<()> {
    let aside = sibling(dir, "broken");
    match fs::rename(dir, &aside) {
        Ok(()) => {
            let _ = fs::remove_dir_all(&aside);
            Ok(())
        }
        // Someone else moved it first.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(write_err(dir)(e)),
    }
}

/// Removes what killed processes left next to the index: broken indexes
/// moved aside, and builds older than an hour (younger ones may be another
/// process's build in progress).
fn clear_leftovers(dir: &Path) {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return;
    };
    let name = name.to_string_lossy();
    let (broken, build) = (format!(".{name}.broken-"), format!(".{name}.build-"));
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let stale = file.starts_with(&broken)
            || (file.starts_with(&build)
                && entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > Duration::from_secs(3600)));
        if stale {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The index folder is wiped on corruption, so it must not hold notes.
fn check_dir(dir: &Path, notes_root: &Path) -> Result<()> {
    let bad = |reason: &str| Error::BadIndexDir {
        dir: dir.to_path_buf(),
        reason: reason.into(),
    };
    let abs = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if notes_root.starts_with(&abs) {
        return Err(bad(
            "it contains the notes folder, and a broken index folder is wiped",
        ));
    }
    if let Ok(entries) = fs::read_dir(dir) {
        let has_notes = entries
            .filter_map(|e| e.ok())
            .any(|e| e.path().extension().is_some_and(|x| x == "md"));
        if has_notes {
            return Err(bad(
                "it holds Markdown files, and a broken index folder is wiped",
            ));
        }
    }
    Ok(())
}
