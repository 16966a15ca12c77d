//! `quire meta improve`: the loop. Each round takes a parent from the
//! Pareto front (val resolve rate × tokens), evaluates it on a train
//! minibatch, lets the meta model reflect on the trajectories and propose
//! one edit to one part, refuses edits that copy task text or drop
//! placeholders, evaluates the child on the same minibatch, and only on a
//! strict improvement there on the whole val split; it is accepted when val
//! improves. Every child is recorded. The test split is never touched here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use quire_config::{AgentSource, Loader, render};
use quire_store::EvalResultRow;
use serde::Serialize;
use serde_json::Value;

use crate::copycheck::CopyGuard;
use crate::digest;
use crate::error::MetaError;
use crate::evaluate::notes_plan;
pub use crate::evaluate::{ClientFactory, Evaluate, Evaluation, SuiteEvaluator};
use crate::generation::{GenerationMeta, Lineage, RunRecord, Status, pareto_front};
use crate::model::{MetaModel, MetaUsage, string_field};
use crate::parts::{AgentFiles, Part, PartValue, placeholders};

/// How the loop runs.
#[derive(Debug, Clone)]
pub struct ImproveOptions {
    pub rounds: u32,
    /// Stop once the loop's own tokens (meta calls and evaluations) reach it.
    pub budget_tokens: Option<u64>,
    /// Train tasks per minibatch; default all of them.
    pub batch: Option<usize>,
    /// Stop after this many rounds in a row without an accepted child.
    pub patience: u32,
    /// Words in a run that counts as copying task text.
    pub copy_ngram: usize,
    /// Trajectory digests the reflection reads.
    pub max_digests: usize,
    /// Evaluate every generation with learn runs (`quire eval run --learn`):
    /// train starts with no notes, val with the notes the generation learnt
    /// on train; the note-taker's tokens count in every figure, and the
    /// notes parts (its prompt, its tools, `limit:notes.*`) may be edited.
    pub learn: bool,
}

impl Default for ImproveOptions {
    fn default() -> Self {
        ImproveOptions {
            rounds: 3,
            budget_tokens: None,
            batch: None,
            patience: 3,
            copy_ngram: crate::copycheck::DEFAULT_NGRAM,
            max_digests: 6,
            learn: false,
        }
    }
}

/// What one round did.
#[derive(Debug, Clone, Serialize)]
pub struct RoundOutcome {
    pub round: u32,
    pub parent: u32,
    pub child: u32,
    pub part: Option<String>,
    pub status: Status,
    pub reason: String,
    pub meta_tokens: u64,
    pub eval_tokens: u64,
}

/// What a call to [`Improver::run`] did.
#[derive(Debug, Clone, Serialize)]
pub struct ImproveReport {
    pub rounds: Vec<RoundOutcome>,
    /// Why it stopped.
    pub stopped: String,
    /// The front after the last round, best first.
    pub front: Vec<u32>,
    pub meta_tokens: u64,
    pub eval_tokens: u64,
}

/// Progress lines for the terminal.
pub type Say = Arc<dyn Fn(&str) + Send + Sync>;

/// The loop over one agent's lineage.
pub struct Improver {
    pub lineage: Lineage,
    pub evaluator: Arc<dyn Evaluate>,
    pub meta: MetaModel,
    pub say: Say,
}

/// A deterministic sample of `size` train tasks (all of them by default),
/// varying with `seed` (the round), kept in manifest order.
pub fn minibatch(train: &[String], size: Option<usize>, seed: u64) -> Vec<String> {
    let size = size.unwrap_or(train.len()).min(train.len());
    if size == 0 || size == train.len() {
        return train.to_vec();
    }
    // FNV-1a over seed and id: stable across runs and platforms.
    let key = |id: &str| {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in seed.to_le_bytes().iter().chain(id.as_bytes()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h
    };
    let mut keyed: Vec<(u64, &String)> = train.iter().map(|t| (key(t), t)).collect();
    keyed.sort();
    let chosen: Vec<&String> = keyed.into_iter().take(size).map(|(_, t)| t).collect();
    train
        .iter()
        .filter(|t| chosen.contains(t))
        .cloned()
        .collect()
}

fn kind_of(value: &PartValue) -> &'static str {
    match value {
        PartValue::Text(_) => "text",
        PartValue::Number(_) => "a number",
        PartValue::Order(_) => "the list of extensions, in order",
    }
}

/// Reads the proposer's `new` field as the same kind of value as `current`.
fn proposed_value(current: &PartValue, new: Option<&Value>) -> Result<PartValue, String> {
    let new = new.ok_or("the object has no `new` field")?;
    match current {
        PartValue::Text(_) => match new {
            Value::String(s) if !s.trim().is_empty() => Ok(PartValue::Text(s.clone())),
            _ => Err("`new` must be the new text, a non-empty string".into()),
        },
        PartValue::Number(old) => {
            let number = match new {
                Value::Number(n) => n.clone(),
                Value::String(s) => s
                    .trim()
                    .parse::<serde_json::Number>()
                    .map_err(|_| "`new` must be a number")?,
                _ => return Err("`new` must be a number".into()),
            };
            match (old, number.as_i64(), number.as_f64()) {
                (toml::Value::Integer(_), Some(i), _) => {
                    Ok(PartValue::Number(toml::Value::Integer(i)))
                }
                (_, _, Some(f)) => Ok(PartValue::Number(toml::Value::Float(f))),
                _ => Err("`new` must be a number".into()),
            }
        }
        PartValue::Order(_) => match new {
            Value::Array(items) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .map(PartValue::Order)
                .ok_or_else(|| "`new` must be a list of extension names".into()),
            _ => Err("`new` must be a list of extension names".into()),
        },
    }
}

/// Part ids with the start of their current value, one per line.
fn parts_listing(files: &AgentFiles, parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| {
            let value = files.get(p).map(|v| v.display()).unwrap_or_default();
            let first: String = value
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(100)
                .collect();
            format!("- {p}: {first}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Improver {
    fn label(&self, n: u32) -> String {
        format!("{}@g{n}", self.lineage.name)
    }

    fn say(&self, line: &str) {
        tracing::info!("{line}");
        (self.say)(line);
    }

    /// Evaluates generation `meta` on `tasks` of `split` unless a run over
    /// exactly those tasks (learning or not, as asked) is recorded; returns
    /// the record and its results.
    async fn measure(
        &self,
        meta: &mut GenerationMeta,
        split: &str,
        tasks: &[String],
        learn: bool,
        spent: &mut u64,
    ) -> Result<(RunRecord, Vec<EvalResultRow>), MetaError> {
        if let Some(run) = meta.run_over(split, tasks, learn) {
            let results = self.evaluator.store()?.eval_results(&run.run_id)?;
            if !results.is_empty() {
                return Ok((run.clone(), results));
            }
        }
        let evaluation = self
            .evaluator
            .evaluate(
                &self.lineage.dir(meta.n),
                &self.label(meta.n),
                split,
                tasks,
                1,
                &notes_plan(self.evaluator.as_ref(), meta, split, learn),
            )
            .await?;
        *spent += evaluation.run.total_tokens;
        self.say(&format!(
            "  g{} on {split} ({} tasks): {} · run {}",
            meta.n,
            tasks.len(),
            evaluation.run.figures(),
            evaluation.run.run_id
        ));
        meta.record_run(evaluation.run.clone());
        self.lineage.save(meta)?;
        Ok((evaluation.run, evaluation.results))
    }

    /// Runs up to `options.rounds` rounds.
    pub async fn run(&self, options: &ImproveOptions) -> Result<ImproveReport, MetaError> {
        let suite = self.evaluator.suite();
        let train = suite.splits.get("train").cloned().unwrap_or_default();
        let val = suite.splits.get("val").cloned().unwrap_or_default();
        if train.is_empty() || val.is_empty() {
            return Err(MetaError::Invalid(format!(
                "suite {} needs tasks in both `train` and `val` (it has {} and {})",
                suite.name,
                train.len(),
                val.len()
            )));
        }
        let _lock = self.lineage.lock()?;
        for n in self.lineage.close_interrupted()? {
            (self.say)(&format!(
                "g{n} was left mid-evaluation by a loop that stopped; marked failed"
            ));
        }
        let guard = CopyGuard::from_suite(suite, options.copy_ngram);
        let hash = Loader::default()
            .load(&AgentSource::Dir(self.lineage.agent_dir.clone()))
            .map(|c| c.hash)
            .unwrap_or_default();
        self.lineage.ensure_root(&hash)?;
        let first_round = self
            .lineage
            .all()?
            .iter()
            .filter_map(|g| g.round)
            .max()
            .unwrap_or(0)
            + 1;
        let mut outcomes = Vec::new();
        let mut spent_total: u64 = 0;
        let mut meta_total: u64 = 0;
        let mut eval_total: u64 = 0;
        let mut stale = 0;
        let mut stopped = format!("{} rounds done", options.rounds);
        for round in first_round..first_round + options.rounds {
            if let Some(budget) = options.budget_tokens
                && spent_total >= budget
            {
                stopped = format!("token budget reached ({spent_total} of {budget})");
                break;
            }
            let front = pareto_front(&self.lineage.all()?);
            let Some(&parent_n) = front.get(((round - first_round) as usize) % front.len().max(1))
            else {
                return Err(MetaError::Invalid(
                    "no accepted generation to start from".into(),
                ));
            };
            self.say(&format!(
                "round {round}: parent g{parent_n} (front {front:?})"
            ));
            let mut eval_spent = 0;
            let outcome = self
                .round(
                    round,
                    parent_n,
                    &train,
                    &val,
                    &guard,
                    options,
                    &mut eval_spent,
                )
                .await?;
            self.say(&format!(
                "round {round}: g{} {} — {}{}",
                outcome.child,
                outcome.status,
                outcome
                    .part
                    .as_deref()
                    .map(|p| format!("{p}: "))
                    .unwrap_or_default(),
                outcome.reason
            ));
            meta_total += outcome.meta_tokens;
            eval_total += eval_spent;
            spent_total += outcome.meta_tokens + eval_spent;
            let accepted = outcome.status == Status::Accepted;
            outcomes.push(outcome);
            if accepted {
                stale = 0;
            } else {
                stale += 1;
                if stale >= options.patience.max(1) {
                    stopped = format!("{stale} rounds in a row without an accepted child");
                    break;
                }
            }
        }
        Ok(ImproveReport {
            rounds: outcomes,
            stopped,
            front: pareto_front(&self.lineage.all()?),
            meta_tokens: meta_total,
            eval_tokens: eval_total,
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn round(
        &self,
        round: u32,
        parent_n: u32,
        train: &[String],
        val: &[String],
        guard: &CopyGuard,
        options: &ImproveOptions,
        spent: &mut u64,
    ) -> Result<RoundOutcome, MetaError> {
        let batch = minibatch(train, options.batch, u64::from(round));
        let mut parent = self.lineage.load(parent_n)?;
        let (parent_train, parent_results) = self
            .measure(&mut parent, "train", &batch, options.learn, spent)
            .await?;
        let digests = {
            let store = self.evaluator.store()?;
            digest::digests(&store, &parent_results, options.max_digests)
        };

        let mut child = self.lineage.create_child(parent_n)?;
        child.round = Some(round);
        self.lineage.save(&child)?;
        let dir = self.lineage.dir(child.n);
        let files = AgentFiles::open(&dir)?;
        let parts: Vec<Part> = files
            .parts()?
            .into_iter()
            .filter(|p| options.learn || !p.is_notes())
            .collect();
        let mut usage = MetaUsage::default();

        let result = self
            .reflect_and_propose(
                round,
                &parent,
                &parent_train,
                &files,
                &parts,
                &digests,
                &mut usage,
            )
            .await;
        child.cost.meta_calls = usage.calls;
        child.cost.meta_prompt_tokens = usage.usage.prompt_tokens;
        child.cost.meta_completion_tokens = usage.usage.completion_tokens;
        let meta_tokens = child.cost.meta_tokens();
        let finish = |child: &mut GenerationMeta, status: Status, reason: String| {
            child.status = status;
            child.reason = reason;
        };
        let (part, current, value) = match result {
            Ok(Proposal {
                part,
                diagnosis,
                current,
                value,
                rationale,
            }) => {
                child.part = Some(part.to_string());
                child.diagnosis = diagnosis;
                child.rationale = rationale;
                (part, current, value)
            }
            Err(err) => {
                finish(&mut child, Status::Failed, err.to_string());
                return self.close(round, parent_n, child, meta_tokens);
            }
        };
        if let Some(problem) = refusal(&current, &value, guard) {
            finish(&mut child, Status::Refused, problem);
            return self.close(round, parent_n, child, meta_tokens);
        }
        if let Err(err) = files.set(&part, &value) {
            finish(&mut child, Status::Failed, err.to_string());
            return self.close(round, parent_n, child, meta_tokens);
        }
        match Loader::default().load(&AgentSource::Dir(dir.clone())) {
            Ok(config) => child.config_hash = config.hash,
            Err(err) => {
                finish(
                    &mut child,
                    Status::Failed,
                    format!("the edited agent does not load: {err}"),
                );
                return self.close(round, parent_n, child, meta_tokens);
            }
        }
        self.lineage.save(&child)?;

        let (child_train, _) = self
            .measure(&mut child, "train", &batch, options.learn, spent)
            .await?;
        if !child_train.beats(&parent_train) {
            let reason = format!(
                "train minibatch {} → {}: not a strict improvement",
                parent_train.figures(),
                child_train.figures()
            );
            finish(&mut child, Status::Rejected, reason);
            return self.close(round, parent_n, child, meta_tokens);
        }
        let mut parent = self.lineage.load(parent_n)?;
        let (parent_val, _) = self
            .measure(&mut parent, "val", val, options.learn, spent)
            .await?;
        let (child_val, _) = self
            .measure(&mut child, "val", val, options.learn, spent)
            .await?;
        let verdict = format!(
            "train {} → {}; val {} → {}",
            parent_train.figures(),
            child_train.figures(),
            parent_val.figures(),
            child_val.figures()
        );
        if child_val.beats(&parent_val) {
            finish(&mut child, Status::Accepted, verdict);
        } else {
            finish(
                &mut child,
                Status::Rejected,
                format!("{verdict}: val did not improve"),
            );
        }
        self.close(round, parent_n, child, meta_tokens)
    }

    fn close(
        &self,
        round: u32,
        parent: u32,
        child: GenerationMeta,
        meta_tokens: u64,
    ) -> Result<RoundOutcome, MetaError> {
        self.lineage.save(&child)?;
        Ok(RoundOutcome {
            round,
            parent,
            child: child.n,
            part: child.part.clone(),
            status: child.status,
            reason: child.reason.clone(),
            meta_tokens,
            eval_tokens: child.cost.eval_tokens,
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn reflect_and_propose(
        &self,
        round: u32,
        parent: &GenerationMeta,
        parent_train: &RunRecord,
        files: &AgentFiles,
        parts: &[Part],
        digests: &str,
        usage: &mut MetaUsage,
    ) -> Result<Proposal, MetaError> {
        let round_text = round.to_string();
        let parent_text = parent.n.to_string();
        let prompt = render(
            &self.meta.prompts.reflect,
            &[
                ("round", round_text.as_str()),
                ("parent", parent_text.as_str()),
                ("figures", parent_train.figures().as_str()),
                ("parts", parts_listing(files, parts).as_str()),
                ("digests", digests),
            ],
        );
        let (part, diagnosis) = self
            .meta
            .ask(prompt, usage, |o| {
                let id = string_field(o, "part")?;
                let part: Part = id.parse().map_err(|e: MetaError| e.to_string())?;
                if !parts.contains(&part) {
                    return Err(format!("`{id}` is not one of the listed part ids"));
                }
                let diagnosis = string_field(o, "diagnosis").unwrap_or_default();
                Ok((part, diagnosis))
            })
            .await?;
        let current = files.get(&part)?;
        let prompt = render(
            &self.meta.prompts.propose,
            &[
                ("round", round_text.as_str()),
                ("part", part.to_string().as_str()),
                ("kind", kind_of(&current)),
                ("current", current.display().as_str()),
                ("diagnosis", diagnosis.as_str()),
                ("digests", digests),
            ],
        );
        let (value, rationale) = self
            .meta
            .ask(prompt, usage, |o| {
                let value = proposed_value(&current, o.get("new"))?;
                let rationale = string_field(o, "rationale")?;
                Ok((value, rationale))
            })
            .await?;
        Ok(Proposal {
            part,
            diagnosis,
            current,
            value,
            rationale,
        })
    }
}

struct Proposal {
    part: Part,
    diagnosis: String,
    current: PartValue,
    value: PartValue,
    rationale: String,
}

/// Why an edit is refused before it is evaluated, if it is.
pub fn refusal(current: &PartValue, new: &PartValue, guard: &CopyGuard) -> Option<String> {
    if current == new {
        return Some("the proposed value is the current one".into());
    }
    let (PartValue::Text(old), PartValue::Text(text)) = (current, new) else {
        return None;
    };
    let kept = placeholders(text);
    if let Some(dropped) = placeholders(old).into_iter().find(|p| !kept.contains(p)) {
        return Some(format!("the edit drops the placeholder {{{dropped}}}"));
    }
    guard.copied(text).map(|run| {
        format!(
            "the edit copies task text ({} words in a row: \"{run}\")",
            guard.ngram()
        )
    })
}

/// Evaluates chosen generations on the test split (`repeat` attempts per
/// task) and records the runs: what `quire meta report` shows.
pub async fn evaluate_on_test(
    lineage: &Lineage,
    evaluator: &dyn Evaluate,
    generations: &[u32],
    repeat: u32,
    learn: bool,
    say: &Say,
) -> Result<Vec<(u32, RunRecord)>, MetaError> {
    let tasks = evaluator
        .suite()
        .splits
        .get("test")
        .cloned()
        .unwrap_or_default();
    if tasks.is_empty() {
        return Err(MetaError::Invalid(format!(
            "suite {} has no test split",
            evaluator.suite().name
        )));
    }
    let mut out = Vec::new();
    for &n in generations {
        let mut meta = lineage.load(n)?;
        let evaluation = evaluator
            .evaluate(
                &lineage.dir(n),
                &format!("{}@g{n}", lineage.name),
                "test",
                &tasks,
                repeat,
                &notes_plan(evaluator, &meta, "test", learn),
            )
            .await?;
        say(&format!(
            "g{n} on test ×{repeat}: {} · run {}",
            evaluation.run.figures(),
            evaluation.run.run_id
        ));
        meta.record_run(evaluation.run.clone());
        lineage.save(&meta)?;
        out.push((n, evaluation.run));
    }
    Ok(out)
}

/// The folder of a generation, for `--agent`.
pub fn generation_dir(agent_dir: &Path, n: u32) -> PathBuf {
    Lineage::new(agent_dir).dir(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minibatches_are_deterministic_samples_in_order() {
        let train: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
        let a = minibatch(&train, Some(4), 1);
        assert_eq!(a.len(), 4);
        assert_eq!(a, minibatch(&train, Some(4), 1));
        let mut sorted = a.clone();
        sorted.sort_by_key(|t| train.iter().position(|x| x == t));
        assert_eq!(a, sorted);
        assert_eq!(minibatch(&train, None, 1), train);
        assert_eq!(minibatch(&train, Some(99), 1), train);
    }

    #[test]
    fn refusals() {
        let mut guard = CopyGuard::new(4);
        guard.add("the greeting is too curt for our users");
        let old = PartValue::Text("No match in {path}: {nearest}".into());
        let same = refusal(&old, &old.clone(), &guard).unwrap();
        assert!(same.contains("current one"));
        let dropped = refusal(&old, &PartValue::Text("No match in {path}.".into()), &guard);
        assert!(dropped.unwrap().contains("{nearest}"));
        let copied = refusal(
            &old,
            &PartValue::Text("{path} {nearest}: The greeting is TOO curt, for".into()),
            &guard,
        );
        assert!(copied.unwrap().contains("\"the greeting is too\""));
        assert!(
            refusal(
                &old,
                &PartValue::Text("Copy `old` exactly. {path} {nearest}".into()),
                &guard
            )
            .is_none()
        );
        let n = proposed_value(
            &PartValue::Number(toml::Value::Integer(3)),
            Some(&serde_json::json!(5)),
        )
        .unwrap();
        assert_eq!(n, PartValue::Number(toml::Value::Integer(5)));
        assert!(proposed_value(&old, Some(&serde_json::json!(5))).is_err());
    }
}
