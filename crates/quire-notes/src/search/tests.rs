use super::*;

#[test]
fn normalisation_drops_what_varies() {
    let a = normalize_error(
        "  File \"/home/ann/shop/tests/test_cart.py\", line 14, in test_total\n\
             E   TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'\n\
             tests/test_cart.py:14: TypeError\n\
             <Cart object at 0x7f3a2b1c9d40>",
    );
    let b = normalize_error(
        "  File \"C:\\work\\shop\\tests\\test_orders.py\", line 88, in test_sum\n\
             E   TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'\n\
             tests/test_orders.py:88: TypeError\n\
             <Cart object at 0x55d0c0ffee00>",
    );
    assert!(
        a.contains("TypeError: unsupported operand type(s) for +: 'Decimal' and 'float'"),
        "{a}"
    );
    assert!(
        !a.contains("14") && !a.contains("0x7f") && !a.contains("/home"),
        "{a}"
    );
    assert_eq!(a, b);
    assert!(!a.contains("test_total"), "{a}");
    let pytest = normalize_error(
        "Traceback (most recent call last):\ntests/test_cart.py:3: in <module>\n    from src.cart import Cart\nE   ModuleNotFoundError: No module named 'src'",
    );
    assert_eq!(
        pytest,
        "from src.cart import Cart\nModuleNotFoundError: No module named 'src'"
    );
}

#[test]
fn error_sections_are_extracted() {
    let body = "## Error\n\n```\nKeyError: 'sku'\n```\n\n## Cause\n\nmissing";
    assert_eq!(
        error_section(body).as_deref().map(str::trim),
        Some("KeyError: 'sku'")
    );
    assert_eq!(error_section("## Cause\nx"), None);
}

#[test]
fn fallback_snippets_prefer_matching_lines() {
    let body = "## Fix\n\nfirst line\nthe decimal line\n";
    assert_eq!(fallback_snippet(body, "Decimal?"), "the decimal line");
    assert_eq!(fallback_snippet(body, "zzz"), "first line");
    assert_eq!(truncate_chars("ééé", 2), "éé…");
}

use crate::{NewNote, NoteIndex, NoteTree};

const PROJECT: &str = "more-itertools";
/// The default `notes.min_score`, the threshold under test.
fn default_min_score() -> f32 {
    quire_config::NotesConfig::default().min_score as f32
}

/// A tree with the given notes of the project, a few shared ones and
/// `others` notes of other projects (they change the IDF of every word,
/// as a data home with many projects does).
fn tree_with(notes: Vec<NewNote>, others: usize) -> (tempfile::TempDir, NoteIndex, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let tree = NoteTree::open(dir.path().join("notes")).unwrap();
    let ids = notes
        .into_iter()
        .map(|n| tree.create(n).unwrap().meta.id)
        .collect();
    tree.create(
        NewNote::shared(
            "python",
            Kind::Insight,
            "Never mix Decimal and float for money",
        )
        .description("Decimal arithmetic with floats raises TypeError; parse money from strings")
        .keywords(["decimal", "float", "money"]),
    )
    .unwrap();
    tree.create(
            NewNote::shared("python", Kind::Hindsight, "pytest cannot import the package under test")
                .description("ModuleNotFoundError when tests import src; set rootdir and pythonpath in pyproject.toml")
                .keywords(["pytest", "import", "rootdir"]),
        )
        .unwrap();
    for i in 0..others {
        tree.create(
            NewNote::project(
                format!("service-{}", i % 7),
                "client",
                Kind::Insight,
                format!("The HTTP client of service {i} retries idempotent requests"),
            )
            .description("retries with backoff; the tests mock the server in tests/test_client.py")
            .keywords(["http", "retry", "backoff"]),
        )
        .unwrap();
    }
    let index = NoteIndex::open(dir.path().join("index"), &tree).unwrap();
    (dir, index, ids)
}

/// Each note's relevance to the task (0 when it does not match).
fn relevance_of(index: &NoteIndex, task: &str, ids: &[String]) -> Vec<f32> {
    let mut q = SearchQuery::new(task);
    q.project = Some(PROJECT.into());
    q.limit = 100;
    let hits = index.search(&q).unwrap();
    ids.iter()
        .map(|id| {
            hits.iter()
                .find(|h| &h.id == id)
                .map_or(0.0, |h| index.relevance(h.score, task))
        })
        .collect()
}

/// The task of the more-itertools eval suite's `12-chunked-negative-n`.
const CHUNKED_NEGATIVE_N: &str = "chunked() with a negative n leaks islice's error message\n\n\
        With a negative chunk size, chunked() fails with an error message about\n\
        itertools.islice, which I never called:\n\n\
        >>> from more_itertools import chunked\n\
        >>> list(chunked([1, 2, 3], -1))\n\
        ValueError: Stop argument for islice() must be None or an integer: 0 <= x <= sys.maxsize.\n\n\
        Its siblings already give a clear message for the same mistake:\n\n\
        >>> from more_itertools import sliced, tail\n\
        >>> list(sliced([1, 2, 3], -1))\n\
        ValueError: n must be at least 0\n\
        >>> list(tail(-1, [1, 2, 3]))\n\
        ValueError: n must be at least 0\n\n\
        Expected: chunked() with a negative n raises ValueError(\"n must be at least 0\")\n\
        too. n=None (everything in one chunk) and n=0 must keep working as they do now,\n\
        with and without strict=True.";

const CHUNKED_EMPTY: &str = "chunked() with strict=True raises on an empty iterable\n\n\
        `list(chunked([], 3, strict=True))` raises `ValueError: iterator is not divisible by n.`\n\
        An empty iterable has no incomplete chunk, so it should return `[]` like\n\
        `chunked([], 3)` does. Fix `chunked` in `more_itertools/more.py` and add a\n\
        regression test.";

/// Notes as the note-taker writes them after earlier tasks; the first
/// of each scenario is related to its task, the others are not.
fn scenarios() -> Vec<(&'static str, Vec<NewNote>)> {
    let chunked = NewNote::project(PROJECT, "more", Kind::Insight, "chunked and ichunked build on take and islice")
            .description("chunked() yields lists of n items via iter(partial(take, n, iterator), []); strict=True checks the length of the last chunk")
            .keywords(["chunked", "ichunked", "strict", "take"])
            .body("## Insight\n\n`chunked` in more_itertools/more.py wraps `iter(partial(take, n, iter(iterable)), [])`, so an exhausted iterator ends the loop. With `strict=True` a generator checks each chunk and raises `ValueError` when one is shorter than n.\n\n## When it applies\n\nChanging chunked, ichunked or sliced.");
    let windowed_tests = NewNote::project(PROJECT, "testing", Kind::HowTo, "Where the windowed() tests live")
            .description("tests for windowed are in tests/test_more.py, class WindowedTests; run them alone with unittest")
            .keywords(["windowed", "tests", "unittest"])
            .body("## Goal\n\nRun only the windowed tests.\n\n## Steps\n\n1. The cases are in `tests/test_more.py`, class `WindowedTests`, one method per fill value and step.\n2. `python -m unittest tests.test_more.WindowedTests -v`.\n\n## Check\n\nThe summary says OK.");
    let sliced = NewNote::project(PROJECT, "more", Kind::Hindsight, "sliced() accepted a negative n")
            .description("sliced(seq, -1) returned a truncated slice; reject n < 0 with ValueError('n must be at least 0') like tail()")
            .keywords(["sliced", "negative n", "ValueError", "strict", "tail"])
            .body("## Error\n\n```\nAssertionError: ValueError not raised\n```\n\n## Cause\n\nsliced never checked n; with strict=True the message was 'seq is not divisible by n.'.\n\n## Fix\n\n`if n < 0: raise ValueError('n must be at least 0')` at the top of sliced; tests with and without strict in SlicedTests.");
    let range_tests = NewNote::project(PROJECT, "testing", Kind::HowTo, "Layout of the numeric_range tests")
            .description("NumericRangeTests in tests/test_more.py has one test method per operation (slicing, reversed, len, index, count)")
            .keywords(["NumericRangeTests", "tests", "test_more.py", "pytest"])
            .body("## Goal\n\nFind and run the numeric_range tests.\n\n## Steps\n\n1. They are in tests/test_more.py, class NumericRangeTests, one method per operation.\n2. Run them with `python -m pytest tests/test_more.py -k NumericRange -q`.");
    let subfactorial = NewNote::project(PROJECT, "more", Kind::Insight, "subfactorial() is computed with exact integer recurrence")
            .description("subfactorial(n) uses the recurrence !n = n * !(n-1) + (-1)**n on Python ints; reject non-int and negative n")
            .keywords(["subfactorial", "derangements", "integers", "TypeError"]);
    vec![
        (CHUNKED_EMPTY, vec![chunked, windowed_tests]),
        (CHUNKED_NEGATIVE_N, vec![sliced, range_tests, subfactorial]),
    ]
}

/// Measured relevance (default threshold 18), with 0 / 100 notes of
/// other projects: the empty-iterable task scores the chunked note
/// 33 / 26 and the windowed test layout 15 / 10; the eval task scores
/// the sliced note 44 / 38, the numeric_range test layout 10 / 8 and
/// the subfactorial note 11 / 12.
#[test]
fn the_default_min_score_lists_related_notes_and_not_unrelated_ones() {
    let min = default_min_score();
    for others in [0, 100] {
        for (task, notes) in scenarios() {
            let (_dir, index, ids) = tree_with(notes, others);
            let scores = relevance_of(&index, task, &ids);
            assert!(scores[0] >= min, "related {scores:?} ({others} others)");
            assert!(
                scores[1..].iter().all(|s| *s > 0.0 && *s < min),
                "unrelated ones match a little, under {min}: {scores:?} ({others} others)"
            );
            let listed: Vec<String> = index
                .search_for_start(task, Some(PROJECT), 5, min)
                .unwrap()
                .into_iter()
                .map(|h| h.id)
                .collect();
            assert_eq!(listed, vec![ids[0].clone()], "{scores:?}");
            // Without the related note, nothing is listed.
            let (_dir, index, ids) = tree_with(scenarios_without_first(task), others);
            let scores = relevance_of(&index, task, &ids);
            assert!(
                index
                    .search_for_start(task, Some(PROJECT), 5, min)
                    .unwrap()
                    .is_empty(),
                "{scores:?} ({others} others)"
            );
        }
    }
}

fn scenarios_without_first(task: &str) -> Vec<NewNote> {
    scenarios()
        .into_iter()
        .find(|(t, _)| *t == task)
        .map(|(_, notes)| notes.into_iter().skip(1).collect())
        .unwrap()
}

#[test]
fn architecture_notes_are_always_listed_first_for_their_project() {
    let map = NewNote::project(PROJECT, "layout", Kind::Architecture, "How the more-itertools code base is laid out")
            .description("functions in more_itertools/more.py, stubs in more.pyi, docs in docs/api.rst, one test class per function in tests/");
    let other_map = NewNote::project(
        "shop",
        "layout",
        Kind::Architecture,
        "How the shop code base is laid out",
    )
    .description("src/cart.py, src/checkout.py; tests in tests/");
    let mut notes = vec![map, other_map];
    notes.extend(scenarios().swap_remove(0).1);
    let (_dir, index, ids) = tree_with(notes, 0);
    let (map, other_map, chunked) = (&ids[0], &ids[1], &ids[2]);
    let min = default_min_score();
    let listed = |task: &str, project: Option<&str>| -> Vec<String> {
        index
            .search_for_start(task, project, 5, min)
            .unwrap()
            .into_iter()
            .map(|h| h.id)
            .collect()
    };
    // A task nothing is about: only the project's map.
    let unrelated = "Add a --json flag to the report command";
    assert_eq!(relevance_of(&index, unrelated, &ids[..1]), vec![0.0]);
    assert_eq!(listed(unrelated, Some(PROJECT)), vec![map.clone()]);
    assert_eq!(listed(unrelated, Some("shop")), vec![other_map.clone()]);
    assert!(listed(unrelated, Some("nothing-here")).is_empty());
    assert!(listed(unrelated, None).is_empty());
    // A related task: the map first, then the matching notes.
    assert_eq!(
        listed(CHUNKED_EMPTY, Some(PROJECT)),
        vec![map.clone(), chunked.clone()]
    );
    // Within the limit, the map still comes first.
    assert_eq!(listed(CHUNKED_EMPTY, Some(PROJECT)).len(), 2);
    assert_eq!(
        index
            .search_for_start(CHUNKED_EMPTY, Some(PROJECT), 1, min)
            .unwrap()[0]
            .id,
        *map
    );
}
