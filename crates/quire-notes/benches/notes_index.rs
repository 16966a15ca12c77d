//! Note index at scale: 100,000 synthetic notes.
//!
//! What it measures: the notes are generated in memory (not written as
//! files, which would mostly time the file system) and indexed with
//! `NoteIndex::rebuild_from` into an on-disk index. Then: index size,
//! `search` latency over 1,000 varied queries (some filtered),
//! `search_for_session` and `search_errors` latency, and how long a single
//! `upsert` takes until a search finds the change.
//!
//! Run: `cargo bench -p quire-notes` (set QUIRE_BENCH_NOTES to change the
//! count, QUIRE_BENCH_DEBUG=1 to print error searches whose top hit differs).

use std::path::Path;
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use quire_notes::{
    Frontmatter, Kind, Note, NoteIndex, NoteTree, Provenance, Scope, SearchQuery, Status,
};

const WORDS: &str = "\
account action adapter address agent alert alias allocate analyzer api append archive argument \
array assert async attribute audit backend backoff batch benchmark binary bind bitmap block \
boolean branch broker buffer bug build bundle byte cache callback cancel capacity cart cell \
certificate channel charset checkout checksum child chunk class cleanup client clock clone \
cluster codec column command commit compile compress config connection constraint consumer \
container context cookie copy coverage cpu crash credential cron cursor customer daemon dashboard \
database datetime deadlock debug decimal decode default delete dependency deploy deserialize \
diff digest directory discount disk dispatch dns docker document domain download driver \
duration editor email embed encode endpoint engine entity environment error event exception \
executor export extension factory failure feature fetch field file filter fixture flag float \
flush folder format frame function future gateway generator git graph grpc handler hash header \
heap helper hook host http identifier image import index inference init inline input insert \
install instance integer interface invoice iterator job join json kernel key keyword label \
lambda latency layout lazy leak library limit linker list listener load locale lock log \
lookup loop macro manifest map marker memory merge message metadata method metric middleware \
migration mock model module monitor mount mutex namespace network node notification null \
number object offset order package padding page pagination panic parameter parser partition \
patch path payload payment permission pipeline plugin pointer policy pool port price process \
producer profile promise prompt protocol proxy publish query queue quota race range rate \
reader record recursion redirect reference refresh regex region release render replica \
repository request resolver resource response retry revision role rollback route runtime \
sandbox scheduler schema scope script search secret segment selector serializer server \
service session shard shell shipping signal signature slice snapshot socket sort source \
span spec stack state statement status storage stream string struct subscription suite \
symbol sync syntax table tag task template tenant test thread throttle timeout timestamp \
token trace transaction transform tree trigger tuple type unicode union unit update upload \
url user validation value variable vector version view volume warning webhook widget worker \
workspace wrapper write yaml zone";

const ERROR_TEMPLATES: &[&str] = &[
    "ModuleNotFoundError: No module named '{w}'",
    "TypeError: unsupported operand type(s) for +: '{W}' and '{V}'",
    "KeyError: '{w}'",
    "AttributeError: '{W}' object has no attribute '{v}'",
    "ImportError: cannot import name '{W}' from '{v}'",
    "AssertionError: assert {w} == {v}",
    "ValueError: invalid literal for int() with base 10: '{w}'",
    "thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', src/{w}.rs:42:13",
    "error[E0382]: borrow of moved value: `{w}`",
    "TimeoutError: {W} did not respond within 30s",
    "ConnectionRefusedError: [Errno 111] Connection refused while calling {w}",
    "sqlite3.OperationalError: no such table: {w}",
];

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Vocab {
    words: Vec<String>,
}

impl Vocab {
    /// The word list plus a long tail of compound identifiers, picked with
    /// a skewed distribution so some words are common and most are rare.
    fn new(rng: &mut Rng) -> Vocab {
        let base: Vec<&str> = WORDS.split_whitespace().collect();
        let mut words: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        for _ in 0..6_000 {
            let a = base[rng.below(base.len())];
            let b = base[rng.below(base.len())];
            words.push(match rng.below(3) {
                0 => format!("{a}_{b}"),
                1 => format!("{a}{}", capitalize(b)),
                _ => format!("{a}{}", rng.below(100)),
            });
        }
        Vocab { words }
    }

    fn word(&self, rng: &mut Rng) -> &str {
        let u = rng.unit();
        let i = ((u * u * u) * self.words.len() as f64) as usize;
        &self.words[i.min(self.words.len() - 1)]
    }

    /// `lo..=hi` words.
    fn sentence(&self, rng: &mut Rng, lo: usize, hi: usize) -> String {
        let n = rng.range(lo, hi);
        (0..n).map(|_| self.word(rng)).collect::<Vec<_>>().join(" ")
    }

    fn error(&self, rng: &mut Rng) -> String {
        let t = ERROR_TEMPLATES[rng.below(ERROR_TEMPLATES.len())];
        t.replace("{w}", self.word(rng))
            .replace("{v}", self.word(rng))
            .replace("{W}", &capitalize(self.word(rng)))
            .replace("{V}", &capitalize(self.word(rng)))
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn body(vocab: &Vocab, rng: &mut Rng, kind: Kind, errors: &[String]) -> String {
    let target = rng.range(300, 1500);
    let mut out = String::new();
    let headings: &[&str] = match kind {
        Kind::Hindsight => &["## Error", "## Cause", "## Fix"],
        Kind::HowTo => &["## Goal", "## Steps", "## Check"],
        Kind::Architecture => &["## Overview", "## Parts", "## Gotchas"],
        Kind::Insight => &["## Insight", "## Evidence", "## When it applies"],
    };
    for (i, h) in headings.iter().enumerate() {
        out.push_str(h);
        out.push_str("\n\n");
        if i == 0 && kind == Kind::Hindsight {
            out.push_str("```\n");
            for e in errors {
                out.push_str(e);
                out.push('\n');
            }
            out.push_str("```\n\n");
        }
        let share = target / headings.len();
        let start = out.len();
        while out.len() - start < share {
            out.push_str(&capitalize(&vocab.sentence(rng, 6, 18)));
            out.push_str(". ");
        }
        out.push_str("\n\n");
    }
    out.trim_end().to_string()
}

fn notes(n: usize, vocab: &Vocab, rng: &mut Rng) -> Vec<Note> {
    let t0 = Utc
        .with_ymd_and_hms(2025, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or_default();
    (0..n)
        .map(|i| {
            let kind = match rng.below(20) {
                0..=2 => Kind::Hindsight,
                3..=7 => Kind::HowTo,
                8..=9 => Kind::Architecture,
                _ => Kind::Insight,
            };
            let scope = if rng.below(4) == 0 {
                Scope::Shared
            } else {
                Scope::Project
            };
            let project = (scope == Scope::Project).then(|| format!("project-{}", rng.below(40)));
            let topic = vocab.words[rng.below(120)].replace('_', "-");
            let errors: Vec<String> = if kind == Kind::Hindsight || rng.below(25) == 0 {
                (0..rng.range(1, 2)).map(|_| vocab.error(rng)).collect()
            } else {
                Vec::new()
            };
            let title = capitalize(&vocab.sentence(rng, 4, 9));
            let time = t0 + chrono::Duration::seconds(i as i64 * 60);
            let meta = Frontmatter {
                id: format!("{:026}", i),
                title: title.clone(),
                description: capitalize(&vocab.sentence(rng, 8, 20)),
                keywords: (0..rng.range(2, 6))
                    .map(|_| vocab.word(rng).to_string())
                    .collect(),
                kind,
                scope,
                project: project.clone(),
                topic: topic.clone(),
                provenance: Provenance::default(),
                error_signatures: errors.clone(),
                created: time,
                updated: time,
                helpful: 0,
                harmful: 0,
                status: if rng.below(30) == 0 {
                    Status::Superseded
                } else {
                    Status::Active
                },
                superseded_by: None,
            };
            let folder = match &project {
                Some(p) => format!("projects/{p}/{topic}"),
                None => format!("shared/{topic}"),
            };
            Note {
                body: body(vocab, rng, kind, &errors),
                path: format!("{folder}/note-{i}.md").into(),
                meta,
            }
        })
        .collect()
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

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name:<34} n={:<5} p50 {:>7.2} ms  p90 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms",
        times.len(),
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.9)),
        ms(percentile(&times, 0.99)),
        ms(*times.last().unwrap_or(&Duration::ZERO)),
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and
    // then only a small smoke run is done.
    let full = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("QUIRE_BENCH_NOTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 100_000 } else { 2_000 });
    let queries_n = if full { 1_000 } else { 100 };

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let vocab = Vocab::new(&mut rng);
    let t = Instant::now();
    let notes = notes(n, &vocab, &mut rng);
    let body_chars: usize = notes.iter().map(|n| n.body.len()).sum();
    println!(
        "generated {n} notes in memory in {:.2?} (avg body {} chars, {} with error signatures)",
        t.elapsed(),
        body_chars / n.max(1),
        notes
            .iter()
            .filter(|n| !n.meta.error_signatures.is_empty())
            .count()
    );

    let tmp = tempfile::tempdir()?;
    let tree = NoteTree::open(tmp.path().join("notes"))?;
    let index = NoteIndex::open(tmp.path().join("index"), &tree)?;
    let t = Instant::now();
    index.rebuild_from(&notes)?;
    let build = t.elapsed();
    println!(
        "index build: {build:.2?} ({:.0} notes/s), {} docs",
        n as f64 / build.as_secs_f64(),
        index.len()
    );
    println!(
        "index size on disk: {:.1} MiB",
        dir_size(index.dir()) as f64 / (1024.0 * 1024.0)
    );

    // Queries: 1-6 words, a quarter restricted to a project or kind.
    let mut queries = Vec::with_capacity(queries_n);
    for i in 0..queries_n {
        let mut q = SearchQuery::new(vocab.sentence(&mut rng, 1, 6));
        q.limit = 10;
        match i % 8 {
            0 => q.project = Some(format!("project-{}", rng.below(40))),
            1 => q.kind = Some(Kind::HowTo),
            _ => {}
        }
        queries.push(q);
    }
    for q in queries.iter().take(20) {
        index.search(q)?; // warm caches
    }
    let mut times = Vec::with_capacity(queries.len());
    let mut total_hits = 0;
    for q in &queries {
        let t = Instant::now();
        total_hits += index.search(q)?.len();
        times.push(t.elapsed());
    }
    report("search (limit 10, with snippets)", times);
    println!(
        "  avg hits per query: {:.1}",
        total_hits as f64 / queries.len() as f64
    );

    let mut times = Vec::new();
    for _ in 0..queries_n / 5 {
        let task = vocab.sentence(&mut rng, 15, 40);
        let project = format!("project-{}", rng.below(40));
        let t = Instant::now();
        index.search_for_session(&task, Some(&project), 8, 6_000)?;
        times.push(t.elapsed());
    }
    report("search_for_session (15-40 words)", times);

    // Half: an indexed signature raised from another file and line (is its
    // note among the hits?); half: fresh errors from the same templates
    // (these often match notes with a similar error, as the synthetic
    // vocabulary repeats words).
    let mut times = Vec::new();
    let (mut known, mut recalled, mut fresh_matched) = (0, 0, 0);
    for i in 0..queries_n / 5 {
        let source = (i % 2 == 0)
            .then(|| {
                notes
                    .iter()
                    .skip(rng.below(n))
                    .find(|n| n.meta.kind == Kind::Hindsight && n.meta.status == Status::Active)
            })
            .flatten();
        let error = match source {
            Some(note) => format!(
                "Traceback (most recent call last):\n  File \"/srv/app/{}.py\", line {}, in run\nE   {}",
                vocab.word(&mut rng),
                rng.range(1, 999),
                note.meta.error_signatures[0]
            ),
            None => vocab.error(&mut rng),
        };
        let t = Instant::now();
        let hits = index.search_errors(&error, 5)?;
        times.push(t.elapsed());
        match source {
            Some(note) => {
                known += 1;
                // Synthetic signatures repeat, so count a hit on any note
                // carrying the same signature.
                let same = |h: &quire_notes::Hit| {
                    h.id.parse::<usize>()
                        .ok()
                        .and_then(|i| notes.get(i))
                        .is_some_and(|m| {
                            m.meta
                                .error_signatures
                                .contains(&note.meta.error_signatures[0])
                        })
                };
                if hits.first().is_some_and(same) {
                    recalled += 1;
                } else if std::env::var_os("QUIRE_BENCH_DEBUG").is_some() {
                    eprintln!("MISS {:?}", note.meta.error_signatures);
                    for h in &hits {
                        let m = &notes[h.id.parse::<usize>().unwrap_or(0)];
                        eprintln!("   {:.2} {:?}", h.score, m.meta.error_signatures);
                    }
                }
            }
            None => fresh_matched += usize::from(!hits.is_empty()),
        }
    }
    report("search_errors (tracebacks)", times);
    println!(
        "  known signatures: top hit carries that signature for {recalled}/{known}; fresh errors with a match: {fresh_matched}/{}",
        queries_n / 5 - known
    );

    // Update-to-visible: change a note's title to a fresh word, upsert,
    // search for the word.
    let mut times = Vec::new();
    for round in 0..20 {
        let mut note = notes[rng.below(n)].clone();
        let marker = format!("zqxmarker{round}");
        note.meta.title = format!("{} {marker}", note.meta.title);
        note.meta.status = Status::Active;
        let t = Instant::now();
        index.upsert(&note)?;
        let hits = index.search(&SearchQuery::new(&marker))?;
        let elapsed = t.elapsed();
        if hits.first().map(|h| h.id.as_str()) != Some(note.id()) {
            return Err(format!("upserted note {} not found by {marker}", note.id()).into());
        }
        times.push(elapsed);
    }
    report("upsert -> visible in search", times);
    println!("docs after updates: {}", index.len());
    println!(
        "index size after updates: {:.1} MiB",
        dir_size(index.dir()) as f64 / (1024.0 * 1024.0)
    );
    Ok(())
}
