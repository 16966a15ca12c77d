//! The improve loop with the real session and eval runners, the scripted
//! server playing both the agent model and the meta model: a helpful edit
//! is accepted on val, a harmful one rejected on the train minibatch, a
//! copying one refused; lineage, statuses, costs, diff, the test report and
//! promotion are checked.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quire_config::{AgentSource, Loader, Override};
use quire_core::Interrupt;
use quire_evals::Suite;
use quire_llm::{ClientSettings, ModelClient, Provider, build_client};
use quire_meta::generation::{Lineage, Status};
use quire_meta::history;
use quire_meta::improve::{
    ClientFactory, Evaluate, ImproveOptions, Improver, SuiteEvaluator, evaluate_on_test,
};
use quire_meta::model::{MetaModel, MetaPrompts};
use quire_session::DataHome;
use quire_testkit::ScriptedServer;

#[path = "../../../tests/fixtures/metasuite_script.rs"]
mod script;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helpful_edits_are_accepted_harmful_rejected_copies_refused() {
    let server = ScriptedServer::start(script::script()).await;
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
        Override::new("notes.enabled", "false", "test"),
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
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let said = lines.clone();
    let lineage = Lineage::new(&agent_dir);
    let improver = Improver {
        lineage: lineage.clone(),
        evaluator: evaluator.clone(),
        meta: MetaModel::new(
            client("meta-model", &base_url),
            MetaPrompts::load(Some(&agent_dir)).unwrap(),
        ),
        say: Arc::new(move |l: &str| said.lock().unwrap().push(l.to_string())),
    };
    let report = improver
        .run(&ImproveOptions {
            rounds: 3,
            ..ImproveOptions::default()
        })
        .await
        .unwrap();
    let log = lines.lock().unwrap().join("\n");
    let statuses: Vec<Status> = report.rounds.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        vec![Status::Accepted, Status::Rejected, Status::Refused],
        "{log}\n{report:#?}"
    );
    assert_eq!(report.front, vec![1]);

    let g: Vec<_> = lineage.all().unwrap();
    assert_eq!(g.len(), 4);
    // Lineage: g1 from g0; g2 and g3 from g1 (the front).
    assert_eq!(
        g.iter().map(|m| m.parent).collect::<Vec<_>>(),
        vec![None, Some(0), Some(1), Some(1)]
    );
    let (g0, g1, g2, g3) = (&g[0], &g[1], &g[2], &g[3]);
    assert_eq!(g1.part.as_deref(), Some("tool:edit_file:error:no_match"));
    assert_eq!(g1.latest("train").unwrap().resolved, 2);
    assert_eq!(g1.latest("val").unwrap().resolved, 2);
    assert_eq!(g0.latest("val").unwrap().resolved, 0);
    assert!(g1.rationale.contains("recover"), "{}", g1.rationale);
    assert!(
        g1.cost.meta_calls == 2 && g1.cost.meta_tokens() > 0,
        "{:?}",
        g1.cost
    );
    assert!(g1.cost.eval_tokens > 0 && g1.cost.eval_wall_ms > 0);
    assert_eq!(g2.part.as_deref(), Some("prompt:workflow"));
    assert!(g2.reason.contains("train minibatch"), "{}", g2.reason);
    assert_eq!(g2.latest("train").unwrap().resolved, 0);
    assert!(
        g2.latest("val").is_none(),
        "a rejected child never reaches val"
    );
    assert_eq!(g2.cost.meta_calls, 3, "reflect, propose, one repair");
    assert_eq!(g3.status, Status::Refused);
    assert!(g3.reason.contains("copies task text"), "{}", g3.reason);
    assert!(g3.runs.is_empty());
    // No generation touched the test split.
    assert!(g.iter().all(|m| m.latest("test").is_none()));

    // Every generation folder is a loadable agent.
    for m in &g {
        Loader::default()
            .load(&AgentSource::Dir(lineage.dir(m.n)))
            .unwrap();
    }
    let diff = history::diff(&lineage.dir(0), &lineage.dir(1), "g0", "g1").unwrap();
    assert!(diff.contains("== tool:edit_file:error:no_match"), "{diff}");
    assert!(
        diff.contains("+Retry with the closest line copied verbatim"),
        "{diff}"
    );
    assert_eq!(diff.matches("== ").count(), 1, "{diff}");

    // The report on test: g1 gains both tasks over g0.
    let say: quire_meta::improve::Say = Arc::new(|_| {});
    let runs = evaluate_on_test(&lineage, evaluator.as_ref(), &[0, 1], 1, false, &say)
        .await
        .unwrap();
    let store = evaluator.store().unwrap();
    let cmp = history::compare_runs(&store, &runs[0].1.run_id, &runs[1].1.run_id).unwrap();
    assert_eq!(cmp.gained.len(), 2, "{}", cmp.render_text());
    assert!(cmp.lost.is_empty());
    let rows = history::rows(&lineage).unwrap();
    let text = history::render_text(&rows);
    assert!(
        text.contains("rejected") && text.contains("refused"),
        "{text}"
    );

    // The reflection read digests of the failed trajectories.
    let reflect = server
        .requests()
        .into_iter()
        .map(|r| r.all_text())
        .find(|t| t.contains("The parts you may change"))
        .unwrap();
    for seen in [
        "### sum-total#1: model_error",
        "tool error from `edit_file`",
        "protocol repair",
        "hidden tests output",
        "- tool:edit_file:error:no_match: `old` does not occur",
    ] {
        assert!(reflect.contains(seen), "`{seen}` not in:\n{reflect}");
    }

    lineage.promote(1).unwrap();
    let active = std::fs::read_to_string(agent_dir.join("tools/edit_file.toml")).unwrap();
    assert!(active.contains(script::MARKER));
    assert!(
        lineage.promote(3).is_err(),
        "a refused generation cannot be promoted"
    );
    server.assert_clean();
}
