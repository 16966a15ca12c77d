//! `quire notes`: browse the notes tree, search it, edit and remove notes,
//! rebuild the index, and run the note-taker on finished sessions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use quire_config::AgentConfig;
use quire_distill::{Distiller, JobOutcome, JobReport};
use quire_notes::{
    BrokenNote, Kind, Note, NoteFilter, Notes, NotesPaths, Scope, SearchQuery, Status, SyncReport,
};
use quire_session::DataHome;
use quire_store::{DistillStatus, Store};
use serde_json::json;

use crate::cli::{GlobalArgs, NotesArgs, NotesCommand};
use crate::client::{home, live_client, load_agent, redactor};
use crate::markdown::render_markdown;
use crate::render::Style;

pub async fn notes(global: &GlobalArgs, args: NotesArgs) -> Result<ExitCode> {
    let cmd = args.command;
    if args.run.is_some()
        && matches!(
            cmd,
            NotesCommand::Distill { .. } | NotesCommand::Watch { .. }
        )
    {
        // A run distills its own sessions (`eval run --learn`, `eval resume`).
        bail!("--run is for browsing a run's notes; its sessions are distilled by the run itself");
    }
    let opened = Opened::new(global, args.run.as_deref())?;
    match cmd {
        NotesCommand::Tree => tree(global, &opened),
        NotesCommand::List {
            project,
            kind,
            scope,
            all,
        } => list(global, &opened, project, kind, scope, all),
        NotesCommand::Show { note, raw } => show(global, &opened, &note, raw),
        NotesCommand::Search {
            query,
            project,
            kind,
            all,
            limit,
        } => search(global, &opened, &query, project, kind, all, limit),
        NotesCommand::New {
            path,
            title,
            kind,
            no_edit,
        } => new_note(global, &opened, &path, &title, &kind, no_edit),
        NotesCommand::Edit { note } => edit(global, &opened, &note),
        NotesCommand::Rm { note } => rm(global, &opened, &note),
        NotesCommand::Preview {
            workspace,
            task,
            project,
        } => preview(global, &opened, &workspace, task, project).await,
        NotesCommand::Stats => stats(global, &opened),
        NotesCommand::Reindex => reindex(global, &opened),
        NotesCommand::Distill { session, pending } => {
            distill(global, opened, session.as_deref(), pending).await
        }
        NotesCommand::Watch { poll } => watch(global, opened, poll).await,
    }
}

/// The config, data home and open notes every subcommand starts from.
struct Opened {
    config: AgentConfig,
    home: DataHome,
    paths: NotesPaths,
    notes: Notes,
    sync: SyncReport,
    style: Style,
}

impl Opened {
    fn new(global: &GlobalArgs, run: Option<&str>) -> Result<Opened> {
        let config = load_agent(global, None)?;
        let home = home(global)?;
        let paths = match run {
            None => home.notes_paths(&config),
            Some(spec) => {
                let run = super::eval_notes::find_run(&Store::open(&home.db_path())?, spec)?;
                super::eval_notes::run_notes(&home, &run)?
            }
        };
        let (notes, sync) = Notes::open(&paths, redactor(&config)).with_context(|| {
            format!(
                "cannot open the notes at {} (index {})",
                paths.root.display(),
                paths.index_dir.display()
            )
        })?;
        Ok(Opened {
            config,
            home,
            paths,
            notes,
            sync,
            style: Style::detect(),
        })
    }

    /// Broken notes, on stderr, so data on stdout stays clean.
    fn warn_broken(&self, broken: &[BrokenNote]) {
        for b in broken {
            eprintln!(
                "{}",
                self.style.yellow(&format!(
                    "broken note left out: {}:{}: {}",
                    self.notes.root().join(&b.path).display(),
                    b.line,
                    b.message
                ))
            );
        }
    }

    /// Every readable note (broken ones reported on stderr).
    fn scan(&self) -> Result<Vec<Note>> {
        let report = self.notes.tree.scan()?;
        self.warn_broken(&report.broken);
        Ok(report.notes)
    }

    /// A note by id, unique id prefix or path.
    fn resolve(&self, arg: &str) -> Result<Note> {
        let arg = arg.trim();
        if let Some(note) = self.notes.tree.get(arg)? {
            return Ok(note);
        }
        if arg.ends_with(".md") || arg.contains('/') {
            let path = Path::new(arg);
            let candidates: Vec<PathBuf> = if path.is_absolute() {
                vec![path.to_path_buf()]
            } else {
                let mut c = vec![path.to_path_buf()];
                if let Ok(abs) = std::env::current_dir().map(|d| d.join(path))
                    && abs.exists()
                {
                    c.insert(0, abs);
                }
                c
            };
            for candidate in candidates {
                if let Ok(Some(note)) = self.notes.tree.find_by_path(&candidate) {
                    return Ok(note);
                }
            }
        }
        let upper = arg.to_ascii_uppercase();
        let mut matches: Vec<Note> = self
            .notes
            .tree
            .scan()?
            .notes
            .into_iter()
            .filter(|n| !upper.is_empty() && n.meta.id.to_ascii_uppercase().starts_with(&upper))
            .collect();
        match matches.len() {
            0 => bail!("no note `{arg}` (give an id, a unique id prefix or a path)"),
            1 => Ok(matches.remove(0)),
            n => bail!(
                "`{arg}` matches {n} notes: {}",
                matches
                    .iter()
                    .map(|m| m.meta.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

fn place(note: &Note) -> String {
    match &note.meta.project {
        Some(p) => format!("{p}/{}", note.meta.topic),
        None => format!("shared/{}", note.meta.topic),
    }
}

fn note_json(note: &Note) -> serde_json::Value {
    json!({
        "path": note.path_str(),
        "meta": note.meta,
        "body": note.body,
    })
}

fn print_json(value: &serde_json::Value) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn tree(global: &GlobalArgs, o: &Opened) -> Result<ExitCode> {
    let notes = o.scan()?;
    if global.json {
        let items: Vec<_> = notes
            .iter()
            .map(|n| {
                json!({"path": n.path_str(), "id": n.meta.id, "title": n.meta.title,
                       "kind": n.meta.kind, "status": n.meta.status})
            })
            .collect();
        print_json(&json!({ "root": o.notes.root(), "notes": items }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let s = o.style;
    println!(
        "{} {}",
        s.bold(&o.notes.root().display().to_string()),
        s.dim(&format!("({} notes)", notes.len()))
    );
    let mut previous: Vec<String> = Vec::new();
    for note in &notes {
        let dirs: Vec<String> = note
            .path
            .parent()
            .map(|p| {
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let common = dirs
            .iter()
            .zip(&previous)
            .take_while(|(a, b)| a == b)
            .count();
        for (depth, dir) in dirs.iter().enumerate().skip(common) {
            println!("{}{}", "  ".repeat(depth + 1), s.bold(&format!("{dir}/")));
        }
        let superseded = if note.meta.status == Status::Superseded {
            s.dim(" (superseded)")
        } else {
            String::new()
        };
        println!(
            "{}{} {:<12} {}{superseded}",
            "  ".repeat(dirs.len() + 1),
            s.dim(&note.meta.id),
            note.meta.kind.as_str(),
            note.meta.title
        );
        previous = dirs;
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_kind(kind: Option<String>) -> Result<Option<Kind>> {
    kind.map(|k| k.parse::<Kind>())
        .transpose()
        .map_err(anyhow::Error::from)
}

fn list(
    global: &GlobalArgs,
    o: &Opened,
    project: Option<String>,
    kind: Option<String>,
    scope: Option<String>,
    all: bool,
) -> Result<ExitCode> {
    let filter = NoteFilter {
        project,
        kind: parse_kind(kind)?,
        scope: scope.map(|s| s.parse::<Scope>()).transpose()?,
        status: (!all).then_some(Status::Active),
    };
    let notes: Vec<Note> = o
        .scan()?
        .into_iter()
        .filter(|n| filter.matches(n))
        .collect();
    if global.json {
        print_json(&json!(notes.iter().map(note_json).collect::<Vec<_>>()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let s = o.style;
    if notes.is_empty() {
        println!("{}", s.dim("no notes"));
    }
    for n in &notes {
        let status = if n.meta.status == Status::Superseded {
            " superseded"
        } else {
            ""
        };
        println!(
            "{} {:<12} {:<24} {} {}{}",
            s.dim(&n.meta.id),
            n.meta.kind.as_str(),
            place(n),
            s.dim(&format!("+{}/-{}", n.meta.helpful, n.meta.harmful)),
            n.meta.title,
            s.dim(status)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn show(global: &GlobalArgs, o: &Opened, arg: &str, raw: bool) -> Result<ExitCode> {
    let note = o.resolve(arg)?;
    if global.json {
        print_json(&note_json(&note))?;
        return Ok(ExitCode::SUCCESS);
    }
    if raw {
        print!("{}", note.render());
        return Ok(ExitCode::SUCCESS);
    }
    let s = o.style;
    let m = &note.meta;
    println!("{}", s.bold(&m.title));
    let mut meta = vec![
        format!("{} · {} · {}", m.id, m.kind, place(&note)),
        format!(
            "{} · helpful {} · harmful {} · updated {}",
            m.status,
            m.helpful,
            m.harmful,
            m.updated.format("%Y-%m-%d")
        ),
        o.notes.tree.abs_path(&note).display().to_string(),
    ];
    if let Some(by) = &m.superseded_by {
        meta.push(format!("superseded by {by}"));
    }
    if !m.keywords.is_empty() {
        meta.push(format!("keywords: {}", m.keywords.join(", ")));
    }
    for sig in &m.error_signatures {
        meta.push(format!("error: {sig}"));
    }
    let prov = &m.provenance;
    if !prov.files.is_empty() || !prov.symbols.is_empty() {
        meta.push(format!(
            "about: {}",
            prov.files
                .iter()
                .chain(&prov.symbols)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !prov.sessions.is_empty() {
        meta.push(format!("sessions: {}", prov.sessions.join(", ")));
    }
    for line in meta {
        println!("{}", s.dim(&line));
    }
    if !m.description.is_empty() {
        println!("\n{}", m.description);
    }
    println!("\n{}", render_markdown(&note.body, s).trim_end());
    Ok(ExitCode::SUCCESS)
}

fn search(
    global: &GlobalArgs,
    o: &Opened,
    query: &str,
    project: Option<String>,
    kind: Option<String>,
    all: bool,
    limit: usize,
) -> Result<ExitCode> {
    o.warn_broken(&o.sync.broken);
    let q = SearchQuery {
        text: query.to_string(),
        project,
        scope: None,
        kind: parse_kind(kind)?,
        status_active_only: !all,
        limit,
    };
    let hits = o.notes.index.search(&q)?;
    if global.json {
        let items: Vec<_> = hits
            .iter()
            .map(|h| {
                json!({"id": h.id, "title": h.title, "description": h.description, "path": h.path,
                       "score": h.score, "snippet": h.snippet, "kind": h.kind, "scope": h.scope,
                       "project": h.project})
            })
            .collect();
        print_json(&json!(items))?;
        return Ok(ExitCode::SUCCESS);
    }
    let s = o.style;
    if hits.is_empty() {
        println!("{}", s.dim(&format!("no note matches `{query}`")));
    }
    for (i, h) in hits.iter().enumerate() {
        println!(
            "{}. {} {} {}",
            i + 1,
            s.bold(&h.title),
            s.dim(&format!("[{}] {}", h.kind, h.id)),
            s.dim(&format!("{:.2}", h.score))
        );
        if !h.description.is_empty() {
            println!("   {}", h.description);
        }
        if !h.snippet.is_empty() {
            println!("   {}", s.dim(&format!("…{}…", h.snippet)));
        }
        println!("   {}", s.dim(&h.path));
    }
    Ok(ExitCode::SUCCESS)
}

fn new_note(
    global: &GlobalArgs,
    o: &Opened,
    path: &Path,
    title: &str,
    kind: &str,
    no_edit: bool,
) -> Result<ExitCode> {
    let kind: Kind = kind.parse().map_err(|e| anyhow::anyhow!("--kind: {e}"))?;
    let note = o.notes.tree.write_skeleton(path, title, kind)?;
    let abs = o.notes.tree.abs_path(&note);
    if no_edit {
        o.notes.index.upsert(&note)?;
        if global.json {
            print_json(&note_json(&note))?;
        } else if !global.quiet {
            println!("wrote {}", abs.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let hint = format!("quire notes edit {}", note.path_str());
    open_in_editor(&abs).with_context(|| format!("the skeleton is kept at {}", abs.display()))?;
    check_and_index(global, o, &abs, note.id(), &hint)
}

fn edit(global: &GlobalArgs, o: &Opened, arg: &str) -> Result<ExitCode> {
    let note = o.resolve(arg)?;
    let path = o.notes.tree.abs_path(&note);
    open_in_editor(&path).context("the note was not re-indexed")?;
    check_and_index(
        global,
        o,
        &path,
        note.id(),
        &format!("quire notes edit {arg}"),
    )
}

/// Opens `path` in $VISUAL, else $EDITOR, else vi, and waits for it.
fn open_in_editor(path: &Path) -> Result<()> {
    let editor = std::env::var("VISUAL")
        .ok()
        .or_else(|| std::env::var("EDITOR").ok())
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".to_string());
    // Through the shell, so an editor setting with arguments (`code -w`) works.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(path)
        .status()
        .with_context(|| format!("cannot start the editor `{editor}`"))?;
    if !status.success() {
        bail!("the editor `{editor}` exited with {status}");
    }
    Ok(())
}

/// After an editor: the note at `path` is checked and (re-)indexed, or
/// dropped from the index when it was removed; a broken one is reported
/// with `hint` and left on disk as it is.
fn check_and_index(
    global: &GlobalArgs,
    o: &Opened,
    path: &Path,
    id: &str,
    hint: &str,
) -> Result<ExitCode> {
    match o.notes.tree.find_by_path(path) {
        Ok(Some(edited)) => {
            if edited.id() != id {
                o.notes.index.remove(id)?;
            }
            o.notes.index.upsert(&edited)?;
            if let Err(err) = o.notes.tree.regenerate_readmes() {
                tracing::warn!(%err, "cannot refresh the READMEs");
            }
            if global.json {
                print_json(&note_json(&edited))?;
            } else if !global.quiet {
                println!("saved and indexed {}", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Ok(None) => {
            o.notes.index.remove(id)?;
            println!("{} was removed; dropped it from the index", path.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            eprintln!("{err}");
            eprintln!("the note is left out until its frontmatter is fixed ({hint})");
            Ok(ExitCode::from(1))
        }
    }
}

fn rm(global: &GlobalArgs, o: &Opened, arg: &str) -> Result<ExitCode> {
    let note = o.resolve(arg)?;
    let removed = o.notes.tree.delete(note.id())?;
    o.notes.index.remove(removed.id())?;
    if global.json {
        print_json(&json!({ "removed": removed.id(), "path": removed.path_str() }))?;
    } else if !global.quiet {
        println!("removed {} ({})", removed.meta.title, removed.path_str());
    }
    Ok(ExitCode::SUCCESS)
}

/// The notes message a session on `workspace` would get, built by the
/// `notes` extension itself on a conversation holding only the task.
async fn preview(
    global: &GlobalArgs,
    o: &Opened,
    workspace: &Path,
    task: Option<String>,
    project: Option<String>,
) -> Result<ExitCode> {
    let choices = quire_session::WorkspaceChoices {
        task,
        test_command: None,
        project,
    };
    let info = quire_session::WorkspaceInfo::discover(workspace, &choices, "")?;
    let extension = quire_recall::NotesExtension::new(
        o.paths.clone(),
        redactor(&o.config),
        &info.project,
        info.task.clone(),
        info.root.clone(),
        quire_session::retrieval_settings(&o.config),
    );
    let sink = Arc::new(quire_core::MemorySink::default());
    let mut ctx = quire_core::Ctx::new(Arc::new(o.config.clone()), sink.clone());
    ctx.messages
        .push(quire_types::Message::user(info.task.clone()));
    quire_core::Extension::on_start(&extension, &mut ctx).await?;
    let message = ctx.messages.get(1).map(|m| m.text().to_string());
    let code: Vec<quire_recall::Excerpt> = sink
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            quire_types::EventKind::Extension(p) => {
                p.decode::<quire_recall::CodeShown>().and_then(Result::ok)
            }
            _ => None,
        })
        .flat_map(|shown| shown.excerpts)
        .collect();
    if global.json {
        return print_json(&json!({
            "project": info.project,
            "message": message,
            "chars": message.as_ref().map_or(0, |m| m.chars().count()),
            "code": code,
        }))
        .map(|()| ExitCode::SUCCESS);
    }
    match message {
        None => println!(
            "{}",
            o.style.dim(&format!(
                "No note of project `{}` (or shared) is relevant to this task: the session gets no notes and no notes tools.",
                info.project
            ))
        ),
        Some(text) => {
            println!("{text}");
            let chars = text.chars().count();
            let code_chars: usize = code.iter().map(|e| e.chars).sum();
            println!(
                "\n{}",
                o.style.dim(&format!(
                    "{chars} characters (about {} tokens) on every request; {} code excerpts, {code_chars} characters",
                    chars.div_ceil(4),
                    code.len()
                ))
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn stats(global: &GlobalArgs, o: &Opened) -> Result<ExitCode> {
    let report = o.notes.tree.scan()?;
    let notes = &report.notes;
    let count = |f: &dyn Fn(&Note) -> String| {
        let mut map: BTreeMap<String, usize> = BTreeMap::new();
        for n in notes {
            *map.entry(f(n)).or_default() += 1;
        }
        map
    };
    let by_kind = count(&|n| n.meta.kind.to_string());
    let by_status = count(&|n| n.meta.status.to_string());
    let by_place = count(&|n| {
        n.meta
            .project
            .clone()
            .map_or_else(|| "shared".to_string(), |p| format!("project {p}"))
    });
    let mut helpful: Vec<&Note> = notes
        .iter()
        .filter(|n| n.meta.helpful + n.meta.harmful > 0)
        .collect();
    helpful
        .sort_by_key(|n| std::cmp::Reverse(i64::from(n.meta.helpful) - i64::from(n.meta.harmful)));
    helpful.truncate(5);
    let index_bytes = dir_size(o.notes.index.dir());
    let jobs = Store::open(&o.home.db_path())?.distill_job_counts()?;
    if global.json {
        print_json(&json!({
            "root": o.notes.root(),
            "notes": notes.len(),
            "by_kind": by_kind,
            "by_status": by_status,
            "by_place": by_place,
            "credited": helpful.iter().map(|n| json!({"id": n.meta.id, "title": n.meta.title,
                "helpful": n.meta.helpful, "harmful": n.meta.harmful})).collect::<Vec<_>>(),
            "broken": report.broken.iter().map(|b| json!({"path": b.path, "line": b.line,
                "message": b.message})).collect::<Vec<_>>(),
            "filled": report.filled.iter().map(|f| json!({"path": f.path, "id": f.id,
                "fields": f.fields})).collect::<Vec<_>>(),
            "index": {"dir": o.notes.index.dir(), "documents": o.notes.index.len(), "bytes": index_bytes},
            "jobs": jobs.iter().map(|(s, n)| (s.to_string(), *n)).collect::<BTreeMap<_, _>>(),
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let s = o.style;
    let join = |m: &BTreeMap<String, usize>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "{} {} at {}",
        s.bold("notes"),
        notes.len(),
        o.notes.root().display()
    );
    println!("  by kind:   {}", join(&by_kind));
    println!("  by status: {}", join(&by_status));
    println!("  by place:  {}", join(&by_place));
    if !report.filled.is_empty() {
        println!(
            "{} {} hand-written notes had fields filled from their path and file times",
            s.bold("filled"),
            report.filled.len()
        );
        for f in &report.filled {
            let fields: Vec<&str> = f.fields.iter().map(|f| f.as_str()).collect();
            println!("  {} ({})", f.path.display(), fields.join(", "));
        }
    }
    if !helpful.is_empty() {
        println!("{}", s.bold("credited by sessions"));
        for n in helpful {
            println!(
                "  +{}/-{} {} {}",
                n.meta.helpful,
                n.meta.harmful,
                s.dim(&n.meta.id),
                n.meta.title
            );
        }
    }
    println!(
        "{} {} documents, {:.1} KB at {}",
        s.bold("index"),
        o.notes.index.len(),
        index_bytes as f64 / 1024.0,
        o.notes.index.dir().display()
    );
    let jobs_text = if jobs.is_empty() {
        "none".to_string()
    } else {
        jobs.iter()
            .map(|(st, n)| format!("{st} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("{} {jobs_text}", s.bold("distill jobs"));
    if !report.broken.is_empty() {
        println!("{} {}", s.bold("broken"), report.broken.len());
        o.warn_broken(&report.broken);
    }
    Ok(ExitCode::SUCCESS)
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_size(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

fn reindex(global: &GlobalArgs, o: &Opened) -> Result<ExitCode> {
    let report = o.notes.index.reindex()?;
    if let Err(err) = o.notes.tree.regenerate_readmes() {
        tracing::warn!(%err, "cannot refresh the READMEs");
    }
    if global.json {
        print_json(&json!({
            "indexed": report.added,
            "broken": report.broken.iter().map(|b| json!({"path": b.path, "line": b.line,
                "message": b.message})).collect::<Vec<_>>(),
        }))?;
    } else {
        println!(
            "indexed {} notes from {} into {}",
            report.added,
            o.notes.root().display(),
            o.notes.index.dir().display()
        );
        o.warn_broken(&report.broken);
    }
    Ok(ExitCode::SUCCESS)
}

/// The note-taker's model: `notes.model`, else the session's.
fn distiller(o: Opened) -> Result<Distiller> {
    let mut config = o.config;
    if !config.notes.model.trim().is_empty() {
        config.model.model = config.notes.model.trim().to_string();
    }
    let client = live_client(&config)?;
    let redactor = redactor(&config);
    Ok(Distiller::new(
        o.home.db_path(),
        o.notes,
        Arc::new(config),
        client,
        redactor,
    )?)
}

fn print_report(global: &GlobalArgs, style: Style, report: &JobReport) {
    if global.json {
        println!("{}", serde_json::to_string(report).unwrap_or_default());
        return;
    }
    let what = match &report.outcome {
        JobOutcome::Done { summary } => style.green(&format!("done: {summary}")),
        JobOutcome::Skipped { reason } => style.dim(&format!("skipped: {reason}")),
        JobOutcome::Failed { error } => style.red(&format!("failed: {error}")),
        JobOutcome::Released => style.yellow("interrupted; back in the queue"),
        JobOutcome::LostLease => style.yellow("taken over by another worker"),
    };
    println!("session {} {what}", report.session_id);
    for w in &report.written {
        println!("  {:?} {} {}", w.action, style.dim(&w.id), w.title);
    }
    for (id, verdict) in &report.credited {
        println!("  credited {} as {verdict}", style.dim(id));
    }
}

async fn distill(
    global: &GlobalArgs,
    o: Opened,
    session: Option<&str>,
    _pending: bool,
) -> Result<ExitCode> {
    let style = o.style;
    let db = o.home.db_path();
    // Nothing to do needs no model (nor its key).
    let open_jobs = Store::open(&db)?
        .distill_jobs(None, usize::MAX)?
        .into_iter()
        .any(|j| matches!(j.status, DistillStatus::Pending | DistillStatus::Running));
    if !open_jobs && session.is_none() {
        if !global.quiet && !global.json {
            println!("no pending distillation jobs");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let distiller = distiller(o)?;
    let interrupt = super::ctrl_c_interrupt("stopping: the current job goes back to the queue");
    let mut failed = false;
    match session {
        Some(prefix) => {
            let row = Store::open(&db)?
                .find_session(prefix)?
                .with_context(|| format!("no session matches `{prefix}`"))?;
            match distiller.run_session(&row.id, &interrupt).await? {
                Some(report) => {
                    failed = matches!(report.outcome, JobOutcome::Failed { .. });
                    print_report(global, style, &report);
                }
                None => {
                    let job = Store::open(&db)?.distill_job(&row.id)?;
                    let why = match job {
                        None => "it has no distillation job (still running, or notes were off)"
                            .to_string(),
                        Some(job) => format!("its job is {}", job.status),
                    };
                    if !global.quiet {
                        eprintln!("nothing to do for session {}: {why}", row.id);
                    }
                }
            }
        }
        None => {
            let reports = distiller
                .run_pending(&interrupt, |r| print_report(global, style, r))
                .await?;
            failed = reports
                .iter()
                .any(|r| matches!(r.outcome, JobOutcome::Failed { .. }));
            if reports.is_empty() && !global.quiet && !global.json {
                println!("no pending distillation jobs");
            }
        }
    }
    Ok(if interrupt.is_triggered() {
        ExitCode::from(130)
    } else if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

async fn watch(global: &GlobalArgs, o: Opened, poll: u64) -> Result<ExitCode> {
    let style = o.style;
    let distiller = distiller(o)?;
    let interrupt = super::ctrl_c_interrupt("stopping: the current job goes back to the queue");
    if !global.quiet && !global.json {
        println!(
            "watching for sessions to distill every {poll}s (worker {}); Ctrl-C stops",
            distiller.worker()
        );
    }
    distiller
        .watch(Duration::from_secs(poll.max(1)), &interrupt, |r| {
            print_report(global, style, r)
        })
        .await?;
    Ok(ExitCode::SUCCESS)
}
