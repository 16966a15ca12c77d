//! `meta improve --learn`: generations are scored by learn runs, the
//! note-taker's tokens included, and the notes parts are the meta model's
//! to edit. The scripted server plays the coding agent, the note-taker and
//! the meta model over `tests/fixtures/metasuite`:
//!
//! - the note-taker writes the project's map only when its prompt says
//!   [`MAP_ORDER`], else it writes nothing;
//! - the agent takes four calls (read, edit, test, finish), or one when a
//!   request carries the map note's text ([`MAP_BODY`]);
//! - the meta model adds [`MAP_ORDER`] to `prompt:note_taker`.
//!
//! So the edit pays only through learning: the child's later tasks see the
//! map, and its val run starts from what it learnt on train.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use quire_config::{AgentSource, Loader, Override};
use quire_core::Interrupt;
use quire_evals::{NotesPlan, NotesUse, Suite};
use quire_llm::{ClientSettings, ModelClient, Provider, build_client};
use quire_meta::generation::{Lineage, Status};
use quire_meta::improve::{ClientFactory, Evaluate, ImproveOptions, Improver, SuiteEvaluator};
use quire_meta::model::{MetaModel, MetaPrompts};
use quire_session::DataHome;
use quire_testkit::{RecordedRequest, Reply, Script, ScriptedServer, call};
use serde_json::{Value, json};

const NOTE_TAKER: &str = "You keep the notebook of a coding agent";
const MAP_ORDER: &str = "Always write the project's map note first.";
const MAP_BODY: &str = "MAP: every fix is one line of src/ops.py";

/// (words of the task's prompt, old, new), as in the metasuite script.
const TASKS: &[(&str, &str, &str)] = &[
    (
        "is off by one",
        "    return sum(xs) - 1",
        "    return sum(xs)",
    ),
    (
        "Scaling adds the factor",
        "    return x + k",
        "    return x * k",
    ),
    (
        "shift function subtracts",
        "    return x - 10",
        "    return x + 10",
    ),
    (
        "raises a to the power",
        "    return a ** b",
        "    return a * b",
    ),
];

fn client(model: &str, base_url: &str) -> Arc<dyn ModelClient> {
    let mut settings = ClientSettings::new(Provider::OpenAi, model, base_url);
    settings.retry_base_delay = Duration::from_millis(10);
    build_client(settings).unwrap()
}

fn write_agent(dir: &Path) {
    for (rel, text) in quire_config::builtin_agent_files() {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn assistant_turns(req: &RecordedRequest) -> usize {
    req.messages()
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .count()
}

fn first_user_text(req: &RecordedRequest) -> String {
    req.messages()
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content"))
        .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_string))
        .unwrap_or_default()
}

fn note_taker(req: &RecordedRequest) -> Reply {
    let text = req.all_text();
    let has_map = text.contains(MAP_BODY);
    match assistant_turns(req) {
        0 if text.contains(MAP_ORDER) && !has_map => Reply::ToolCalls(vec![call(
            "note_create",
            json!({
                "title": "Map of the ops project: one-line fixes in src/ops.py",
                "kind": "architecture",
                "scope": "project",
                "topic": "layout",
                "description": "where every fix of this project goes",
                "body": format!("{MAP_BODY}; read it, edit, run the tests and finish in one reply."),
                "keywords": ["ops", "total", "scaling", "shift", "power", "off", "factor", "function"],
                "files": [],
            }),
        )]),
        _ => Reply::ToolCalls(vec![call("note_done", json!({"summary": "nothing new"}))]),
    }
}

fn agent(req: &RecordedRequest) -> Reply {
    let text = req.all_text();
    let Some((_, old, new)) = TASKS.iter().find(|(words, _, _)| text.contains(words)) else {
        panic!("an agent request about no known task: {text}");
    };
    let path = "src/ops.py";
    let read = call("read_file", json!({"path": path}));
    let edit = call("edit_file", json!({"path": path, "old": old, "new": new}));
    let test = call("run_tests", json!({}));
    let finish = call("finish", json!({"summary": "fixed"}));
    if text.contains(MAP_BODY) {
        return Reply::ToolCalls(vec![read, edit, test, finish]);
    }
    Reply::ToolCalls(vec![match assistant_turns(req) {
        0 => read,
        1 => edit,
        2 => test,
        _ => finish,
    }])
}

fn meta(prompt: &str) -> Reply {
    let answer = if prompt.contains("The parts you may change") {
        assert!(
            prompt.contains("- prompt:note_taker:") && prompt.contains("- limit:notes.min_score:"),
            "a learn loop offers the notes parts: {prompt}"
        );
        json!({"part": "prompt:note_taker", "diagnosis": "The note-taker writes nothing, so later tasks explore again."})
    } else {
        let current = quire_config::builtin_agent_files()
            .iter()
            .find(|(rel, _)| rel.ends_with("note_taker.md"))
            .map(|(_, text)| text.to_string())
            .unwrap();
        json!({"new": format!("{current}\n{MAP_ORDER}\n"), "rationale": "A map saves the next tasks their reads."})
    };
    Reply::text(answer.to_string())
}

fn script() -> Script {
    Script::from_fn(|req, _| {
        let first = first_user_text(req);
        if first.contains("You improve a coding agent") {
            meta(&first)
        } else if req.all_text().contains(NOTE_TAKER) {
            note_taker(req)
        } else {
            agent(req)
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learn_loop_accepts_a_note_taker_edit_that_pays_net_of_its_cost() {
    let server = ScriptedServer::start(script()).await;
    let base_url = server.openai_base_url();
    let root = tempfile::tempdir().unwrap();
    let agent_dir = root.path().join("agents/mini");
    write_agent(&agent_dir);
    let home = DataHome::at(root.path().join("home")).unwrap();
    let suite =
        Suite::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/metasuite"))
            .unwrap();
    let quoted = format!("\"{base_url}\"");
    let overrides = vec![
        Override::new("model.base_url", &quoted, "test"),
        Override::new("model.api_key_env", "\"\"", "test"),
        // Every task is a tiny copy: let the map be listed whatever it scores.
        Override::new("notes.min_score", "0.0", "test"),
    ];
    let url = base_url.clone();
    let clients: ClientFactory = Arc::new(move |config| Ok(client(&config.model.model, &url)));
    let evaluator = Arc::new(SuiteEvaluator {
        suite,
        home: home.clone(),
        overrides,
        clients,
        jobs: 2,
        timeout: Duration::from_secs(60),
        stop: Interrupt::new(),
    });
    let lineage = Lineage::new(&agent_dir);
    let improver = Improver {
        lineage: lineage.clone(),
        evaluator: evaluator.clone(),
        meta: MetaModel::new(
            client("meta-model", &base_url),
            MetaPrompts::load(Some(&agent_dir)).unwrap(),
        ),
        say: Arc::new(|_: &str| {}),
    };
    let report = improver
        .run(&ImproveOptions {
            rounds: 1,
            learn: true,
            ..ImproveOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(report.rounds.len(), 1, "{report:#?}");
    let round = &report.rounds[0];
    assert_eq!(round.part.as_deref(), Some("prompt:note_taker"));
    assert_eq!(round.status, Status::Accepted, "{report:#?}");

    let store = evaluator.store().unwrap();
    let g0 = lineage.load(0).unwrap();
    let g1 = lineage.load(1).unwrap();
    for g in [&g0, &g1] {
        assert!(!g.runs.is_empty());
        for run in &g.runs {
            assert!(run.learn, "every evaluation is a learn run: {run:?}");
            // The record counts the sessions and the note-taker.
            let sessions: u64 = store
                .eval_results(&run.run_id)
                .unwrap()
                .iter()
                .map(|r| r.outcome.usage.prompt_tokens + r.outcome.usage.completion_tokens)
                .sum();
            assert_eq!(run.total_tokens, sessions + run.distill_tokens, "{run:?}");
        }
        let train = g.latest_learn_run("train").unwrap();
        assert!(
            train.distill_tokens > 0,
            "the first session is distilled: {train:?}"
        );
    }
    // The parent's val sessions taught something each time (no notes yet);
    // the child's were covered by its map and triaged without a call.
    assert!(g0.latest_learn_run("val").unwrap().distill_tokens > 0);
    assert_eq!(g1.latest_learn_run("val").unwrap().distill_tokens, 0);

    // The child's val run started from the notes it learnt on train, and
    // its val sessions saw the map from their first request.
    let train = g1.latest_learn_run("train").unwrap();
    let val = g1.latest_learn_run("val").unwrap();
    let val_row = store.find_eval_run(&val.run_id).unwrap().unwrap();
    let expected = evaluator.run_notes(&train.run_id).display().to_string();
    assert_eq!(
        NotesPlan::of_run(&val_row.args),
        NotesPlan::Learn {
            from: Some(expected)
        }
    );
    let results = store.eval_results(&val.run_id).unwrap();
    assert_eq!(results.len(), 2);
    for r in &results {
        let notes = NotesUse::from_details(&r.outcome.details).unwrap();
        assert_eq!(notes.inlined.len(), 1, "{notes:?}");
        assert_eq!(r.outcome.turns, 1, "the map saved the reads: {r:?}");
    }
    // The parent learnt nothing: its val sessions explored.
    let parent_val = g0.latest_learn_run("val").unwrap();
    for r in store.eval_results(&parent_val.run_id).unwrap() {
        assert_eq!(r.outcome.turns, 4, "{r:?}");
    }
    assert!(val.mean_tokens < parent_val.mean_tokens);

    // The accepted generation is an agent whose note-taker has the order.
    let config = Loader::default()
        .load(&AgentSource::Dir(lineage.dir(1)))
        .unwrap();
    let prompt = std::fs::read_to_string(lineage.dir(1).join("prompts/note_taker.md")).unwrap();
    assert!(prompt.contains(MAP_ORDER), "{prompt}");
    assert!(!config.hash.is_empty());
    server.assert_clean();
}
