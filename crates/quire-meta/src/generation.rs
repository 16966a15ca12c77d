//! An agent's history lives beside it: `agents/<name>/generations/<n>/` is
//! a complete agent folder (loadable with `--agent`) plus `meta.toml`.
//!
//! Why files and not a table: a generation is a folder a person can read,
//! diff, commit and run as it is; its record belongs next to it, so copying
//! an agent copies its history. The eval runs themselves stay in the store
//! (`eval_runs`/`eval_results`), linked by id, and `meta.toml` keeps their
//! headline figures so `history` needs no database.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use quire_store::EvalResultRow;
use serde::{Deserialize, Serialize};

use crate::error::MetaError;
use crate::parts::write_atomic;

/// The folder of generations inside an agent folder.
pub const GENERATIONS: &str = "generations";
/// The record file inside a generation folder.
pub const META_FILE: &str = "meta.toml";

/// Where a generation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Being evaluated (or the loop died while it was).
    Candidate,
    /// Improved val over its parent (generation 0 is accepted by definition).
    Accepted,
    /// Evaluated and not better.
    Rejected,
    /// Not evaluated: the edit copied task text, dropped a placeholder, or
    /// changed nothing.
    Refused,
    /// The meta model gave no usable answer, or the edit did not load.
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Candidate => "candidate",
            Status::Accepted => "accepted",
            Status::Rejected => "rejected",
            Status::Refused => "refused",
            Status::Failed => "failed",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One eval run of a generation, with its headline figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub split: String,
    pub run_id: String,
    pub tasks: Vec<String>,
    pub repeat: u32,
    pub done: u32,
    pub resolved: u32,
    pub resolve_rate: f64,
    /// Mean prompt + completion tokens per attempt; a learn run's
    /// distillations included (learning is part of the cost).
    pub mean_tokens: f64,
    pub total_tokens: u64,
    pub wall_ms: u64,
    pub cost_usd: f64,
    /// A learn run: each session was distilled before the next task, and
    /// the figures above count the note-taker's tokens.
    #[serde(default)]
    pub learn: bool,
    /// The note-taker's prompt + completion tokens (in `total_tokens`).
    #[serde(default)]
    pub distill_tokens: u64,
}

impl RunRecord {
    pub fn from_results(
        split: &str,
        run_id: &str,
        tasks: &[String],
        repeat: u32,
        results: &[EvalResultRow],
    ) -> RunRecord {
        let totals = quire_evals::ReportTotals::from_results(results);
        RunRecord {
            split: split.to_string(),
            run_id: run_id.to_string(),
            tasks: tasks.to_vec(),
            repeat,
            done: totals.done,
            resolved: totals.resolved,
            resolve_rate: totals.resolve_rate,
            mean_tokens: totals.mean_tokens,
            total_tokens: totals.total_tokens,
            wall_ms: totals.total_wall_ms,
            cost_usd: totals.total_cost_usd,
            learn: false,
            distill_tokens: 0,
        }
    }

    /// The record of a learn run: `distill_tokens` (what its note-taker
    /// spent) added to the totals and to the mean per attempt.
    pub fn with_learning(mut self, distill_tokens: u64) -> RunRecord {
        self.learn = true;
        self.distill_tokens = distill_tokens;
        self.total_tokens += distill_tokens;
        if self.done > 0 {
            self.mean_tokens += distill_tokens as f64 / f64::from(self.done);
        }
        self
    }

    /// Better than `other`: a higher resolve rate, or the same rate with
    /// fewer tokens per attempt.
    pub fn beats(&self, other: &RunRecord) -> bool {
        const EPS: f64 = 1e-9;
        self.resolve_rate > other.resolve_rate + EPS
            || ((self.resolve_rate - other.resolve_rate).abs() <= EPS
                && self.mean_tokens < other.mean_tokens)
    }

    /// `2/3 (66.7%) · 1.2k tok`.
    pub fn figures(&self) -> String {
        format!(
            "{}/{} ({}) · {} tok",
            self.resolved,
            self.done,
            quire_evals::pct(self.resolve_rate),
            quire_evals::tokens_text(self.mean_tokens.round() as u64)
        )
    }
}

/// What a generation cost to make and to measure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Meta model calls for reflecting and proposing (repairs included).
    pub meta_calls: u32,
    pub meta_prompt_tokens: u64,
    pub meta_completion_tokens: u64,
    /// Agent tokens over every eval run of this generation.
    pub eval_tokens: u64,
    pub eval_wall_ms: u64,
    pub eval_cost_usd: f64,
}

impl Cost {
    pub fn meta_tokens(&self) -> u64 {
        self.meta_prompt_tokens + self.meta_completion_tokens
    }

    pub fn total_tokens(&self) -> u64 {
        self.meta_tokens() + self.eval_tokens
    }
}

/// `meta.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationMeta {
    pub n: u32,
    #[serde(default)]
    pub parent: Option<u32>,
    pub status: Status,
    /// The part changed (`None` for generation 0 and failed rounds).
    #[serde(default)]
    pub part: Option<String>,
    /// What the reflection found in the trajectories.
    #[serde(default)]
    pub diagnosis: String,
    /// The proposer's reason for the edit.
    #[serde(default)]
    pub rationale: String,
    /// Why it got its status.
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub round: Option<u32>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub config_hash: String,
    #[serde(default)]
    pub cost: Cost,
    #[serde(default)]
    pub runs: Vec<RunRecord>,
}

impl GenerationMeta {
    pub fn new(n: u32, parent: Option<u32>) -> GenerationMeta {
        GenerationMeta {
            n,
            parent,
            status: Status::Candidate,
            part: None,
            diagnosis: String::new(),
            rationale: String::new(),
            reason: String::new(),
            round: None,
            created_at: Utc::now(),
            config_hash: String::new(),
            cost: Cost::default(),
            runs: Vec::new(),
        }
    }

    /// The latest run on `split`.
    pub fn latest(&self, split: &str) -> Option<&RunRecord> {
        self.runs.iter().rev().find(|r| r.split == split)
    }

    /// The latest run on `split` over exactly `tasks` (reused instead of
    /// evaluating the same thing twice).
    pub fn run_over(&self, split: &str, tasks: &[String], learn: bool) -> Option<&RunRecord> {
        self.runs
            .iter()
            .rev()
            .find(|r| r.split == split && r.tasks == tasks && r.repeat == 1 && r.learn == learn)
    }

    /// The latest learn run on `split`: where a learn evaluation of the
    /// next split starts its notes from.
    pub fn latest_learn_run(&self, split: &str) -> Option<&RunRecord> {
        self.runs.iter().rev().find(|r| r.split == split && r.learn)
    }

    /// Adds a run and its cost.
    pub fn record_run(&mut self, run: RunRecord) {
        self.cost.eval_tokens += run.total_tokens;
        self.cost.eval_wall_ms += run.wall_ms;
        self.cost.eval_cost_usd += run.cost_usd;
        self.runs.push(run);
    }
}

/// An agent folder and its generations.
#[derive(Debug, Clone)]
pub struct Lineage {
    /// The agent folder (its active files).
    pub agent_dir: PathBuf,
    pub name: String,
}

impl Lineage {
    pub fn new(agent_dir: &Path) -> Lineage {
        let name = agent_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "agent".into());
        Lineage {
            agent_dir: agent_dir.to_path_buf(),
            name,
        }
    }

    pub fn generations_dir(&self) -> PathBuf {
        self.agent_dir.join(GENERATIONS)
    }

    pub fn dir(&self, n: u32) -> PathBuf {
        self.generations_dir().join(n.to_string())
    }

    /// Generation numbers present, ascending.
    pub fn numbers(&self) -> Result<Vec<u32>, MetaError> {
        let dir = self.generations_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(MetaError::io(&dir, e)),
        };
        let mut ns: Vec<u32> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join(META_FILE).is_file())
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        ns.sort_unstable();
        Ok(ns)
    }

    pub fn load(&self, n: u32) -> Result<GenerationMeta, MetaError> {
        let path = self.dir(n).join(META_FILE);
        if !path.is_file() {
            return Err(MetaError::NoGeneration {
                agent: self.name.clone(),
                n,
            });
        }
        let text = std::fs::read_to_string(&path).map_err(|e| MetaError::io(&path, e))?;
        toml::from_str(&text).map_err(|e| MetaError::File {
            path,
            message: e.message().trim().to_string(),
        })
    }

    pub fn all(&self) -> Result<Vec<GenerationMeta>, MetaError> {
        self.numbers()?.into_iter().map(|n| self.load(n)).collect()
    }

    pub fn save(&self, meta: &GenerationMeta) -> Result<(), MetaError> {
        let path = self.dir(meta.n).join(META_FILE);
        let text = toml::to_string_pretty(meta)
            .map_err(|e| MetaError::Invalid(format!("cannot write {}: {e}", path.display())))?;
        write_atomic(&path, text.as_bytes())
    }

    /// Claims the generations for one improve loop: two at once would
    /// number their children alike and overwrite each other's folders.
    pub fn lock(&self) -> Result<quire_workspace::PidLock, MetaError> {
        let dir = self.generations_dir();
        std::fs::create_dir_all(&dir).map_err(|e| MetaError::io(&dir, e))?;
        quire_workspace::PidLock::acquire(&dir).map_err(|err| match err {
            quire_workspace::LockError::Held { pid, .. } => MetaError::Invalid(format!(
                "another `quire meta improve` (process {pid}) is working on {}; wait for it or stop it",
                dir.display()
            )),
            quire_workspace::LockError::Io { path, source } => MetaError::io(path, source),
        })
    }

    /// Marks candidates left by a loop that died mid-evaluation as failed,
    /// so the front and the history never count a half-measured child.
    /// Call with [`Lineage::lock`] held. Returns the generations closed.
    pub fn close_interrupted(&self) -> Result<Vec<u32>, MetaError> {
        let mut closed = Vec::new();
        for mut meta in self.all()? {
            if meta.status == Status::Candidate {
                meta.status = Status::Failed;
                meta.reason =
                    "interrupted: the improve loop stopped while this generation was evaluated"
                        .into();
                self.save(&meta)?;
                closed.push(meta.n);
            }
        }
        Ok(closed)
    }

    /// Generation 0 from the active files, unless it exists already.
    pub fn ensure_root(&self, config_hash: &str) -> Result<GenerationMeta, MetaError> {
        if let Ok(meta) = self.load(0) {
            return Ok(meta);
        }
        let dir = self.dir(0);
        copy_agent_files(&self.agent_dir, &dir)?;
        let mut meta = GenerationMeta::new(0, None);
        meta.status = Status::Accepted;
        meta.reason = "the starting configuration".into();
        meta.config_hash = config_hash.to_string();
        self.save(&meta)?;
        Ok(meta)
    }

    /// A new generation folder: a copy of `parent`'s files, status candidate.
    pub fn create_child(&self, parent: u32) -> Result<GenerationMeta, MetaError> {
        let n = self.numbers()?.last().map_or(0, |last| last + 1);
        copy_agent_files(&self.dir(parent), &self.dir(n))?;
        let meta = GenerationMeta::new(n, Some(parent));
        self.save(&meta)?;
        Ok(meta)
    }

    /// Makes generation `n` the active config: each of its files is written
    /// over the agent's (temporary file and rename, file by file);
    /// `generations/` is not touched. Returns the files written.
    pub fn promote(&self, n: u32) -> Result<Vec<String>, MetaError> {
        let meta = self.load(n)?;
        if matches!(meta.status, Status::Refused | Status::Failed) {
            return Err(MetaError::Invalid(format!(
                "generation {n} is {}: it was never evaluated",
                meta.status
            )));
        }
        let mut files = Vec::new();
        list_files(&self.dir(n), Path::new(""), &mut files)?;
        files.retain(|rel| rel != Path::new(META_FILE));
        let mut written = Vec::new();
        for rel in files {
            let bytes = std::fs::read(self.dir(n).join(&rel))
                .map_err(|e| MetaError::io(self.dir(n).join(&rel), e))?;
            write_atomic(&self.agent_dir.join(&rel), &bytes)?;
            written.push(rel.display().to_string());
        }
        Ok(written)
    }
}

/// Relative paths of the files under `root/rel`, `generations/` excluded.
fn list_files(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<(), MetaError> {
    let dir = root.join(rel);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .map_err(|e| MetaError::io(&dir, e))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        if rel.as_os_str().is_empty() && name == GENERATIONS {
            continue;
        }
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let child = rel.join(&name);
        if entry.path().is_dir() {
            list_files(root, &child, out)?;
        } else {
            out.push(child);
        }
    }
    Ok(())
}

/// Copies an agent folder's files (not its generations, not `meta.toml`).
pub fn copy_agent_files(from: &Path, to: &Path) -> Result<(), MetaError> {
    let mut files = Vec::new();
    list_files(from, Path::new(""), &mut files)?;
    for rel in files {
        if rel == Path::new(META_FILE) {
            continue;
        }
        let dest = to.join(&rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| MetaError::io(parent, e))?;
        }
        std::fs::copy(from.join(&rel), &dest).map_err(|e| MetaError::io(&dest, e))?;
    }
    Ok(())
}

/// Accepted generations with a val run that no other accepted one beats on
/// both resolve rate (higher or equal) and tokens (lower or equal); ordered
/// best first (rate, then tokens). Accepted generations not yet measured on
/// val are kept (they cannot be ruled out).
pub fn pareto_front(generations: &[GenerationMeta]) -> Vec<u32> {
    let accepted: Vec<&GenerationMeta> = generations
        .iter()
        .filter(|g| g.status == Status::Accepted)
        .collect();
    let figures = |g: &GenerationMeta| g.latest("val").map(|r| (r.resolve_rate, r.mean_tokens));
    let mut front: Vec<(u32, Option<(f64, f64)>)> = accepted
        .iter()
        .filter(|g| {
            let Some((rate, tokens)) = figures(g) else {
                return true;
            };
            !accepted.iter().any(|o| {
                o.n != g.n
                    && figures(o)
                        .is_some_and(|(r, t)| r >= rate && t <= tokens && (r > rate || t < tokens))
            })
        })
        .map(|g| (g.n, figures(g)))
        .collect();
    front.sort_by(|a, b| match (a.1, b.1) {
        (Some((ra, ta)), Some((rb, tb))) => rb
            .total_cmp(&ra)
            .then(ta.total_cmp(&tb))
            .then(a.0.cmp(&b.0)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.0.cmp(&b.0),
    });
    front.into_iter().map(|(n, _)| n).collect()
}

/// Splits figures by split name for display.
pub fn latest_by_split(meta: &GenerationMeta) -> BTreeMap<String, RunRecord> {
    let mut out = BTreeMap::new();
    for run in &meta.runs {
        out.insert(run.split.clone(), run.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(split: &str, rate: f64, tokens: f64) -> RunRecord {
        RunRecord {
            split: split.into(),
            run_id: "r".into(),
            tasks: vec![],
            repeat: 1,
            done: 2,
            resolved: (rate * 2.0) as u32,
            resolve_rate: rate,
            mean_tokens: tokens,
            total_tokens: 0,
            wall_ms: 0,
            cost_usd: 0.0,
            learn: false,
            distill_tokens: 0,
        }
    }

    fn generation(n: u32, status: Status, val: Option<(f64, f64)>) -> GenerationMeta {
        let mut g = GenerationMeta::new(n, None);
        g.status = status;
        if let Some((r, t)) = val {
            g.runs.push(run("val", r, t));
        }
        g
    }

    #[test]
    fn the_front_keeps_undominated_accepted_generations() {
        let gens = vec![
            generation(0, Status::Accepted, Some((0.5, 100.0))),
            generation(1, Status::Accepted, Some((1.0, 300.0))),
            generation(2, Status::Accepted, Some((0.5, 80.0))),
            generation(3, Status::Rejected, Some((1.0, 10.0))),
            generation(4, Status::Accepted, Some((0.5, 200.0))),
        ];
        assert_eq!(pareto_front(&gens), vec![1, 2]);
        assert!(run("val", 0.5, 10.0).beats(&run("val", 0.5, 20.0)));
        assert!(!run("val", 0.5, 20.0).beats(&run("val", 0.5, 20.0)));
        assert!(run("val", 1.0, 90.0).beats(&run("val", 0.5, 20.0)));
    }

    #[test]
    fn one_improve_loop_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let lineage = Lineage::new(&dir.path().join("mine"));
        let held = lineage.lock().unwrap();
        // Another live process holding the lock (ours is taken over).
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        drop(held);
        std::fs::write(
            lineage.generations_dir().join("lock"),
            other.id().to_string(),
        )
        .unwrap();
        let err = lineage.lock().unwrap_err().to_string();
        assert!(err.contains(&format!("process {}", other.id())), "{err}");
        other.kill().unwrap();
        other.wait().unwrap();
        // Its holder is dead: the lock is taken over, and `lock` is no generation.
        let _lock = lineage.lock().unwrap();
        assert_eq!(lineage.numbers().unwrap(), Vec::<u32>::new());

        // A child the dead loop was still evaluating is closed as failed.
        std::fs::create_dir_all(lineage.agent_dir.join("prompts")).unwrap();
        std::fs::write(lineage.agent_dir.join("agent.toml"), "x = 1\n").unwrap();
        lineage.ensure_root("h0").unwrap();
        let child = lineage.create_child(0).unwrap();
        assert_eq!(child.status, Status::Candidate);
        assert_eq!(lineage.close_interrupted().unwrap(), vec![1]);
        let child = lineage.load(1).unwrap();
        assert_eq!(child.status, Status::Failed);
        assert!(child.reason.contains("interrupted"), "{}", child.reason);
        assert_eq!(lineage.close_interrupted().unwrap(), Vec::<u32>::new());
    }

    #[test]
    fn generations_copy_record_and_promote() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("mine");
        std::fs::create_dir_all(agent.join("prompts")).unwrap();
        std::fs::write(agent.join("agent.toml"), "x = 1\n").unwrap();
        std::fs::write(agent.join("prompts/a.md"), "old\n").unwrap();
        let lineage = Lineage::new(&agent);
        let root = lineage.ensure_root("h0").unwrap();
        assert_eq!(root.status, Status::Accepted);
        let mut child = lineage.create_child(0).unwrap();
        assert_eq!((child.n, child.parent), (1, Some(0)));
        assert!(!lineage.dir(1).join(GENERATIONS).exists());
        std::fs::write(lineage.dir(1).join("prompts/a.md"), "new\n").unwrap();
        child.status = Status::Accepted;
        child.record_run(run("val", 1.0, 5.0));
        lineage.save(&child).unwrap();
        assert_eq!(lineage.load(1).unwrap(), child);
        let written = lineage.promote(1).unwrap();
        assert_eq!(written, vec!["agent.toml", "prompts/a.md"]);
        assert_eq!(
            std::fs::read_to_string(agent.join("prompts/a.md")).unwrap(),
            "new\n"
        );
        assert!(!agent.join(META_FILE).exists());
        assert_eq!(lineage.numbers().unwrap(), vec![0, 1]);
    }
}
