use super::svg::*;
use super::*;
use crate::learning::{DistillState, NotesUse};
use crate::report::tests::run_row;
use quire_store::EvalOutcome;
use quire_store::EvalResultStatus;
use quire_types::{SessionId, Usage};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

/// One done attempt; its session is `<run>-<task>-<attempt>`.
struct Attempt {
    task: &'static str,
    attempt: u32,
    prompt: u64,
    cached: u64,
    turns: u32,
    resolved: bool,
    notes_tokens: Option<u64>,
}

fn attempt(task: &'static str, prompt: u64, turns: u32, resolved: bool) -> Attempt {
    Attempt {
        task,
        attempt: 1,
        prompt,
        cached: 0,
        turns,
        resolved,
        notes_tokens: None,
    }
}

fn session(run: &str, task: &str, attempt: u32) -> String {
    format!("{run}-{task}-{attempt}")
}

fn row(run: &str, a: &Attempt) -> EvalResultRow {
    let details = match a.notes_tokens {
        Some(t) => serde_json::json!({ "notes": NotesUse {
            shown: vec!["n1".into(), "n2".into()],
            inlined: vec![],
            read: vec!["n1".into()],
            prompt_tokens: t,
            ..NotesUse::default()
        }}),
        None => serde_json::json!({}),
    };
    EvalResultRow {
        run_id: run.into(),
        task_id: a.task.into(),
        attempt: a.attempt,
        status: EvalResultStatus::Done,
        started_at: None,
        ended_at: None,
        outcome: EvalOutcome {
            session_id: Some(SessionId(session(run, a.task, a.attempt))),
            resolved: a.resolved,
            category: if a.resolved {
                "resolved"
            } else {
                "hidden_failed"
            }
            .into(),
            usage: Usage {
                prompt_tokens: a.prompt,
                completion_tokens: 100,
                cached_tokens: a.cached,
            },
            turns: a.turns,
            wall_ms: 2000,
            details,
            ..EvalOutcome::default()
        },
    }
}

fn cost(state: DistillState, prompt: u64) -> DistillCost {
    DistillCost {
        state,
        prompt_tokens: prompt,
        completion_tokens: 20,
        cached_tokens: 0,
        calls: 2,
        notes_written: 1,
    }
}

/// A run of `attempts`; each session distilled for `distill` prompt
/// tokens (a learn run) or not at all (`None`, a baseline).
fn arm_run(id: &str, attempts: &[Attempt], distill: Option<u64>) -> ArmRun {
    let mut run = run_row();
    run.id = id.into();
    let distill = distill.map_or_else(HashMap::new, |prompt| {
        attempts
            .iter()
            .map(|a| {
                (
                    session(id, a.task, a.attempt),
                    cost(DistillState::Done, prompt),
                )
            })
            .collect()
    });
    ArmRun {
        run,
        results: attempts.iter().map(|a| row(id, a)).collect(),
        distill,
    }
}

fn notes(mut a: Attempt, tokens: u64) -> Attempt {
    a.notes_tokens = Some(tokens);
    a
}

/// Learn prompt tokens a 1100, b 800, c 700, d 500 (means of two runs);
/// baseline 1000, 1100, 1000, 1000. Distillation 100 (L1) and 200 (L2)
/// per session, but L2's distillation of `d` is pending.
fn arms() -> (Vec<ArmRun>, Vec<ArmRun>) {
    let mut a1 = attempt("a", 1000, 10, true);
    a1.cached = 400;
    let l1 = arm_run(
        "01L1",
        &[
            a1,
            notes(attempt("b", 900, 8, true), 60),
            notes(attempt("c", 600, 6, true), 40),
            notes(attempt("d", 500, 5, true), 30),
        ],
        Some(100),
    );
    let mut l2 = arm_run(
        "01L2",
        &[
            attempt("a", 1200, 10, true),
            notes(attempt("b", 700, 8, true), 20),
            notes(attempt("c", 800, 6, true), 40),
            notes(attempt("d", 500, 5, false), 50),
        ],
        Some(200),
    );
    l2.distill
        .insert(session("01L2", "d", 1), cost(DistillState::Pending, 999));
    let b1 = arm_run(
        "01B1",
        &[
            attempt("a", 1000, 10, true),
            attempt("b", 1000, 10, true),
            attempt("c", 1000, 10, false),
            attempt("d", 1100, 10, true),
        ],
        None,
    );
    let b2 = arm_run(
        "01B2",
        &[
            attempt("a", 1000, 10, true),
            attempt("b", 1200, 10, true),
            attempt("c", 1000, 10, false),
            attempt("d", 900, 10, true),
        ],
        None,
    );
    (vec![l1, l2], vec![b1, b2])
}

#[test]
fn per_position_means_and_cumulative_savings() {
    let (learn, baseline) = arms();
    let curve = LearningCurve::new(learn, baseline).unwrap();
    let tasks: Vec<&str> = curve.points.iter().map(|p| p.task_id.as_str()).collect();
    assert_eq!(tasks, ["a", "b", "c", "d"]);
    let positions: Vec<u32> = curve.points.iter().map(|p| p.position).collect();
    assert_eq!(positions, [1, 2, 3, 4]);
    let learn: Vec<f64> = curve.points.iter().map(|p| p.learn.prompt_tokens).collect();
    assert_eq!(learn, [1100.0, 800.0, 700.0, 500.0]);
    let base: Vec<f64> = curve
        .points
        .iter()
        .map(|p| p.baseline.prompt_tokens)
        .collect();
    assert_eq!(base, [1000.0, 1100.0, 1000.0, 1000.0]);
    let a = &curve.points[0];
    assert!(close(a.learn.uncached_prompt_tokens, 900.0), "{a:?}");
    assert!(close(a.learn.calls, 10.0) && close(a.learn.wall_secs, 2.0));
    assert_eq!((a.learn.runs, a.baseline.runs), (2, 2));
    let d = &curve.points[3];
    assert!(close(d.learn.resolved, 0.5), "{d:?}");
    assert!(close(curve.points[2].baseline.resolved, 0.0));
    // Notes: b had 60 and 20 tokens, two shown and one read each time.
    let b = &curve.points[1];
    assert!(close(b.notes.prompt_tokens, 40.0), "{b:?}");
    assert!(close(b.notes.shown, 2.0) && close(b.notes.read, 1.0));
    assert_eq!(a.notes.missing, 2);
    // Distillation: (100 + 200) / 2, except d where the pending one is 0.
    assert!(close(a.distill.prompt_tokens, 150.0) && close(a.distill.calls, 2.0));
    assert!(close(d.distill.prompt_tokens, 50.0), "{d:?}");
    assert_eq!((a.distill.not_done, d.distill.not_done), (0, 1));
    let cumulative: Vec<f64> = curve.points.iter().map(|p| p.cumulative_saving).collect();
    assert_eq!(cumulative, [-100.0, 200.0, 500.0, 1000.0]);
    let net: Vec<f64> = curve
        .points
        .iter()
        .map(|p| p.cumulative_net_saving)
        .collect();
    assert_eq!(net, [-250.0, -100.0, 50.0, 500.0]);
    assert!(
        curve
            .warnings
            .iter()
            .any(|w| w.contains("counted as 0 tokens: 1")),
        "{:?}",
        curve.warnings
    );
}

#[test]
fn totals_changes_interval_and_slopes() {
    let (learn, baseline) = arms();
    let curve = LearningCurve::new(learn, baseline).unwrap();
    let t = &curve.totals;
    assert_eq!(t.tasks, 4);
    assert!(close(t.learn.prompt_tokens, 775.0) && close(t.baseline.prompt_tokens, 1025.0));
    assert!(
        close(t.prompt_change.unwrap(), 775.0 / 1025.0 - 1.0),
        "{t:?}"
    );
    assert!(close(t.distill_prompt_tokens, 125.0));
    assert!(close(t.net_prompt_change.unwrap(), 900.0 / 1025.0 - 1.0));
    assert!(close(t.calls_change.unwrap(), -0.275));
    assert!(close(t.learn.resolved, 3.5) && close(t.baseline.resolved, 3.0));
    assert!(close(t.prompt_diff, -250.0) && close(t.net_prompt_diff, -125.0));
    let (lo, hi) = t.prompt_diff_ci95.unwrap();
    assert!(
        lo <= -250.0 && -250.0 <= hi && lo >= -500.0 && hi <= 100.0,
        "{lo} {hi}"
    );
    assert!(hi > lo, "tasks differ, so the interval has width");
    let (clo, chi) = t.calls_diff_ci95.unwrap();
    assert!(clo <= -2.75 && -2.75 <= chi, "{clo} {chi}");
    // (1, 1100) (2, 800) (3, 700) (4, 500): slope -190.
    assert!(close(t.learn_slope.unwrap(), -190.0), "{t:?}");
    assert!(t.ratio_slope.unwrap() < 0.0);
    let text = curve.render_text();
    assert!(
        text.contains(
            "learn vs baseline: prompt tokens -24.4% (95% CI of the per-task difference ["
        ) && text.contains("calls -27.5%, net of distillation -12.2%, resolved 3.5/4 vs 3/4"),
        "{text}"
    );
    assert!(text.contains("  4  d"), "{text}");
    assert!(text.contains("· 4 tasks in both arms"), "{text}");
    assert!(text.contains("50*"), "pending distillation marked: {text}");
    let md = curve.render_markdown();
    assert!(
        md.contains("| 2 | `b` | 800 | 1.1k | 8.0/10.0 | 1/1 | 40 | 150 | +200 | -100 |"),
        "{md}"
    );
    let json = serde_json::to_value(&curve).unwrap();
    assert_eq!(json["points"].as_array().map(Vec::len), Some(4));
    assert_eq!(json["totals"]["tasks"], 4);
    assert_eq!(json["points"][3]["cumulative_saving"], 1000.0);
}

#[test]
fn a_rising_curve_has_a_positive_slope() {
    let learn = vec![arm_run(
        "01L",
        &[
            attempt("a", 100, 1, true),
            attempt("b", 200, 1, true),
            attempt("c", 400, 1, true),
        ],
        Some(0),
    )];
    let baseline = vec![arm_run(
        "01B",
        &[
            attempt("c", 300, 1, true),
            attempt("b", 300, 1, true),
            attempt("a", 300, 1, true),
        ],
        None,
    )];
    let curve = LearningCurve::new(learn, baseline).unwrap();
    // Positions follow the learn run, not the baseline's order.
    assert_eq!(curve.points[0].task_id, "a");
    assert!(close(curve.totals.learn_slope.unwrap(), 150.0));
    assert!(curve.totals.ratio_slope.unwrap() > 0.0);
    assert!(close(
        curve.totals.prompt_change.unwrap(),
        700.0 / 900.0 - 1.0
    ));
}

#[test]
fn repeats_average_attempts_and_unshared_or_unfinished_are_left_out() {
    let mut learn = arm_run(
        "01L",
        &[
            attempt("a", 100, 1, true),
            Attempt {
                attempt: 2,
                ..attempt("a", 300, 3, false)
            },
            attempt("only-learn", 100, 1, true),
            attempt("b", 500, 1, true),
        ],
        Some(10),
    );
    learn.run.repeat = 2;
    learn.results[3].status = EvalResultStatus::Pending;
    let mut base = arm_run(
        "01B",
        &[
            attempt("a", 400, 4, true),
            Attempt {
                attempt: 2,
                ..attempt("a", 999, 9, true)
            },
            attempt("b", 400, 4, true),
            attempt("only-base", 400, 4, true),
        ],
        None,
    );
    // Repeat 1: a second attempt does not count.
    base.run.repeat = 1;
    let curve = LearningCurve::new(vec![learn], vec![base]).unwrap();
    assert_eq!(curve.points.len(), 1, "{:?}", curve.points);
    let a = &curve.points[0];
    assert!(close(a.learn.prompt_tokens, 200.0) && close(a.learn.calls, 2.0));
    assert!(close(a.learn.resolved, 0.5));
    assert!(close(a.baseline.prompt_tokens, 400.0), "{a:?}");
    let w = curve.warnings.join("\n");
    assert!(
        w.contains("not done in the baseline (left out): only-learn"),
        "{w}"
    );
    assert!(
        w.contains("not done in the learn arm (left out): b, only-base"),
        "{w}"
    );
}

#[test]
fn an_empty_arm_or_disjoint_tasks_are_errors() {
    let (learn, baseline) = arms();
    assert_eq!(
        LearningCurve::new(vec![], baseline.clone()).unwrap_err(),
        CurveError::EmptyArm { arm: "learn" }
    );
    assert_eq!(
        LearningCurve::new(learn.clone(), vec![]).unwrap_err(),
        CurveError::EmptyArm { arm: "baseline" }
    );
    let mut unfinished = baseline.clone();
    for run in &mut unfinished {
        for r in &mut run.results {
            r.status = EvalResultStatus::Pending;
        }
    }
    assert_eq!(
        LearningCurve::new(learn.clone(), unfinished).unwrap_err(),
        CurveError::EmptyArm { arm: "baseline" }
    );
    let other = vec![arm_run("01X", &[attempt("zzz", 1, 1, true)], None)];
    assert_eq!(
        LearningCurve::new(learn, other).unwrap_err(),
        CurveError::NoSharedTask
    );
}

#[test]
fn tick_labels_are_exact_and_steps_nice() {
    assert_eq!(tick_text(1250.0), "1.25k");
    assert_eq!(tick_text(1000.0), "1k");
    assert_eq!(tick_text(750.0), "750");
    assert_eq!(tick_text(2_500_000.0), "2.5M");
    assert_eq!(nice_step(1250.0, 5.0), 250.0);
    assert_eq!(nice_step(9000.0, 5.0), 2000.0);
    assert_eq!(nice_step(3.0, 5.0), 1.0);
    let run = |id: &str| EvalRunRow {
        id: id.into(),
        ..run_row()
    };
    assert_eq!(ids_short(&[run("01A"), run("01B")]), "01A, 01B");
    let long = [run(&"X".repeat(26)), run("01B"), run("01C")];
    assert_eq!(ids_short(&long), format!("{} +2 more", "X".repeat(26)));
}

#[test]
fn svg_has_three_lines_and_escapes_data() {
    let learn = arm_run(
        "01L<&>",
        &[
            attempt("a<b&c", 1000, 5, true),
            attempt("d\"e'", 500, 3, true),
        ],
        Some(100),
    );
    let base = arm_run(
        "01B",
        &[
            attempt("a<b&c", 1200, 6, true),
            attempt("d\"e'", 1200, 6, true),
        ],
        None,
    );
    let curve = LearningCurve::new(vec![learn], vec![base]).unwrap();
    let svg = curve.render_svg();
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<polyline").count(), 3, "{svg}");
    assert_eq!(svg.matches("stroke-dasharray").count(), 2, "line + legend");
    assert!(svg.contains("a&lt;b&amp;c") && svg.contains("d&quot;e&apos;"));
    assert!(!svg.contains("a<b") && !svg.contains("d\"e"), "{svg}");
    assert!(
        svg.contains("learn 01L&lt;&amp;&gt; vs baseline 01B"),
        "{svg}"
    );
    for forbidden in ["<script", "href", "@import", "url("] {
        assert!(!svg.contains(forbidden), "{forbidden}");
    }
    // Outside attribute values and escapes, `&` and `<` only open tags
    // and entities: every `&` starts one of the five escapes.
    for (i, _) in svg.match_indices('&') {
        let rest = &svg[i..];
        assert!(
            ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                .iter()
                .any(|e| rest.starts_with(e)),
            "{}",
            &rest[..rest.len().min(12)]
        );
    }
    // The highest point (1200) is inside the plot, the lowest below it.
    let ys: Vec<f64> = svg
        .match_indices("cy=\"")
        .filter_map(|(i, m)| {
            let rest = &svg[i + m.len()..];
            rest.split('"').next()?.parse().ok()
        })
        .collect();
    assert_eq!(ys.len(), 4);
    assert!(
        ys.iter().all(|y| (PLOT_TOP..=PLOT_BOTTOM).contains(y)),
        "{ys:?}"
    );
}
