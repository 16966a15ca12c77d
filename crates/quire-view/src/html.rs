//! HTML building blocks. Everything shown comes from the data home, and
//! most of it was written by a model (replies, tool output, notes), so every
//! dynamic text goes through [`esc`] and Markdown through [`markdown`],
//! which turns raw HTML into text and drops unsafe links and images.

use std::fmt::Write as _;

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag};

/// Escapes text for HTML element content and quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a value for a URL query or path segment.
pub fn url(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Renders Markdown safely: raw HTML becomes visible text, links keep
/// only `http(s)`, `mailto`, relative and fragment targets, and images
/// become links (nothing is fetched when the page opens).
pub fn markdown(text: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    options.insert(Options::ENABLE_TASKLISTS);
    let events = Parser::new_ext(text, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_link(dest_url),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_link(dest_url),
            title,
            id,
        }),
        Event::End(pulldown_cmark::TagEnd::Image) => Event::End(pulldown_cmark::TagEnd::Link),
        other => other,
    });
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

fn safe_link(dest: CowStr<'_>) -> CowStr<'_> {
    let lower = dest.trim().to_ascii_lowercase();
    let scheme = lower.split_once(':').map(|(s, _)| s);
    let has_scheme = scheme.is_some_and(|s| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    let allowed = !has_scheme || matches!(scheme, Some("http" | "https" | "mailto"));
    if allowed && !lower.starts_with("//") {
        dest
    } else {
        CowStr::Borrowed("#")
    }
}

/// The navigation entries, by section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Home,
    Sessions,
    Notes,
    Evals,
    Generations,
}

const STYLE: &str = r#"
body{font-family:system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#23272f;color:#fff;padding:.5rem 1rem;display:flex;gap:1.2rem;align-items:center}
header a{color:#ddd;text-decoration:none}header a.on{color:#fff;font-weight:600}
header .brand{font-weight:700;color:#fff}
main{padding:1rem 1.5rem;max-width:1400px}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:1.6rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f0f0f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#fff;border:1px solid #e3e3e8;padding:.5rem;overflow:auto;max-height:32rem;white-space:pre-wrap;word-break:break-word;font-size:.82rem;margin:.25rem 0}
.card{background:#fff;border:1px solid #e3e3e8;border-radius:6px;padding:.5rem .8rem;margin:.6rem 0}
.card h3{font-size:.95rem;margin:.1rem 0 .4rem}
.views{display:grid;grid-template-columns:1fr 1fr;gap:.8rem}
.views h4{margin:.2rem 0;font-size:.8rem;color:#555;text-transform:uppercase}
.muted{color:#666;font-size:.85rem}
.tag{display:inline-block;padding:0 .4rem;border-radius:4px;background:#eee;font-size:.8rem}
.ok{background:#d8f5dd}.bad{background:#fbdada}.warn{background:#fff3c4}
.add{color:#116329;background:#e6ffec;display:block}.del{color:#82071e;background:#ffebe9;display:block}.hunk{color:#6639ba;display:block}
form.filters{display:flex;gap:.6rem;flex-wrap:wrap;align-items:end;margin:.5rem 0}
form.filters label{font-size:.8rem;display:flex;flex-direction:column}
.notes{display:grid;grid-template-columns:minmax(16rem,1fr) 2fr;gap:1.5rem}
ul.tree{list-style:none;padding-left:1rem}ul.tree li{margin:.1rem 0}
input[type=search]{width:100%;font-size:1rem;padding:.3rem}
.hit{margin:.5rem 0}.hit .snip{color:#444;font-size:.85rem}
img.chart{max-width:100%;border:1px solid #e3e3e8;background:#fff}
"#;

/// A whole page: navigation, the content and, when given, one inline
/// script allowed by the page's CSP nonce.
pub fn page(section: Section, title: &str, body: &str, script: Option<(&str, &str)>) -> String {
    let mut out = String::with_capacity(body.len() + 4096);
    let nav = [
        (Section::Sessions, "/sessions", "Sessions"),
        (Section::Notes, "/notes", "Notes"),
        (Section::Evals, "/evals", "Evals"),
        (Section::Generations, "/generations", "Generations"),
    ];
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} · quire view</title>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <style>{STYLE}</style></head><body><header><a class=\"brand\" href=\"/\">quire view</a>",
        esc(title)
    );
    for (s, href, label) in nav {
        let class = if s == section { " class=\"on\"" } else { "" };
        let _ = write!(out, "<a{class} href=\"{href}\">{label}</a>");
    }
    out.push_str("</header><main>");
    out.push_str(body);
    out.push_str("</main>");
    if let Some((nonce, code)) = script {
        let _ = write!(out, "<script nonce=\"{}\">{code}</script>", esc(nonce));
    }
    out.push_str("</body></html>\n");
    out
}

/// Thousands with a thin grouping: `12,345`.
pub fn num(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A status as a coloured tag.
pub fn status_tag(status: &str) -> String {
    let class = match status {
        "completed" | "accepted" | "done" | "resolved" | "applied" => "ok",
        "failed" | "rejected" | "refused" | "error" | "rolled_back" => "bad",
        "running" | "pending" | "claimed" | "interrupted" | "queued" => "warn",
        _ => "",
    };
    format!("<span class=\"tag {class}\">{}</span>", esc(status))
}

/// A unified diff, coloured by line, escaped.
pub fn diff_block(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len() + diff.len() / 4);
    out.push_str("<pre class=\"diff\">");
    for line in diff.lines() {
        let class = if line.starts_with("+++") || line.starts_with("---") {
            "hunk"
        } else if line.starts_with('+') {
            "add"
        } else if line.starts_with('-') {
            "del"
        } else if line.starts_with("@@") {
            "hunk"
        } else {
            ""
        };
        if class.is_empty() {
            out.push_str(&esc(line));
            out.push('\n');
        } else {
            let _ = write!(out, "<span class=\"{class}\">{}</span>", esc(line));
        }
    }
    out.push_str("</pre>");
    out
}

/// One file's part of a unified diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    pub path: String,
    pub text: String,
    pub added: usize,
    pub removed: usize,
}

/// Splits a multi-file unified diff into its files (on `diff --git` or on
/// a `---`/`+++` header pair), counting added and removed lines.
pub fn split_diff(diff: &str) -> Vec<FileDiff> {
    let lines: Vec<&str> = diff.lines().collect();
    let mut starts = Vec::new();
    let git = lines.iter().any(|l| l.starts_with("diff --git "));
    for (i, line) in lines.iter().enumerate() {
        let starts_file = if git {
            line.starts_with("diff --git ")
        } else {
            line.starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "))
        };
        if starts_file {
            starts.push(i);
        }
    }
    if starts.is_empty() {
        return if diff.trim().is_empty() {
            Vec::new()
        } else {
            vec![count(String::from("(change)"), &lines)]
        };
    }
    let mut files = Vec::new();
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(lines.len());
        let chunk = &lines[start..end];
        let path = chunk
            .iter()
            .find_map(|l| l.strip_prefix("+++ "))
            .filter(|p| *p != "/dev/null")
            .or_else(|| chunk.iter().find_map(|l| l.strip_prefix("--- ")))
            .map(|p| {
                let p = p.split('\t').next().unwrap_or(p);
                p.strip_prefix("b/")
                    .or_else(|| p.strip_prefix("a/"))
                    .unwrap_or(p)
                    .to_string()
            })
            .unwrap_or_else(|| format!("file {}", k + 1));
        files.push(count(path, chunk));
    }
    files
}

fn count(path: String, lines: &[&str]) -> FileDiff {
    let added = lines
        .iter()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .count();
    let removed = lines
        .iter()
        .filter(|l| l.starts_with('-') && !l.starts_with("---"))
        .count();
    FileDiff {
        path,
        text: lines.join("\n"),
        added,
        removed,
    }
}

/// A diff as one collapsible section per file.
pub fn file_sections(diff: &str) -> String {
    let mut out = String::new();
    for file in split_diff(diff) {
        let _ = write!(
            out,
            "<details open class=\"file\"><summary><code>{}</code> <span class=\"muted\">+{} −{}</span></summary>{}</details>",
            esc(&file.path),
            file.added,
            file.removed,
            diff_block(&file.text)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup_in_model_text() {
        let probe = r#"<script>alert(1)</script><img src=x onerror="alert(2)">'&"#;
        let out = esc(probe);
        assert!(!out.contains('<') && !out.contains('>') && !out.contains('"'));
        assert!(!out.contains('\''));
        assert_eq!(
            out,
            "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;&#39;&amp;"
        );
    }

    #[test]
    fn markdown_keeps_formatting_but_turns_raw_html_into_text() {
        let out = markdown(
            "# Fix\n\n<script>alert(1)</script>\n\nInline <img src=x onerror=alert(1)> and **bold**.\n\n[bad](javascript:alert(1)) [ok](https://example.invalid/x) ![pic](http://tracker.invalid/p.png)\n",
        );
        assert!(out.contains("<h1>Fix</h1>"), "{out}");
        assert!(out.contains("<strong>bold</strong>"), "{out}");
        assert!(!out.contains("<script"), "{out}");
        assert!(!out.contains("<img"), "{out}");
        assert!(out.contains("&lt;script&gt;"), "{out}");
        assert!(!out.contains("javascript:"), "{out}");
        assert!(out.contains("href=\"https://example.invalid/x\""), "{out}");
        assert!(
            out.contains("href=\"http://tracker.invalid/p.png\""),
            "{out}"
        );
    }

    #[test]
    fn link_schemes_other_than_web_and_mail_are_dropped() {
        for bad in [
            "javascript:x",
            " JavaScript:x",
            "data:text/html,x",
            "vbscript:x",
            "//evil",
        ] {
            assert_eq!(safe_link(CowStr::Borrowed(bad)).as_ref(), "#", "{bad}");
        }
        for good in [
            "/notes/1",
            "#top",
            "https://a.invalid",
            "mailto:a@b.invalid",
            "x.md",
        ] {
            assert_eq!(safe_link(CowStr::Borrowed(good)).as_ref(), good);
        }
    }

    #[test]
    fn a_git_diff_splits_into_files_with_counts() {
        let diff = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1,2 @@\n-x\n+y\n+z\ndiff --git a/b.txt b/b.txt\nnew file\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+hi\n";
        let files = split_diff(diff);
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].path, "src/a.py");
        assert_eq!((files[0].added, files[0].removed), (2, 1));
        assert_eq!(files[1].path, "b.txt");
        assert_eq!((files[1].added, files[1].removed), (1, 0));
        let plain = "--- a/x\n+++ b/x\n@@\n-1\n+2\n--- a/y\n+++ b/y\n@@\n+3\n";
        let files = split_diff(plain);
        assert_eq!(
            files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
            ["x", "y"]
        );
    }

    #[test]
    fn numbers_group_thousands_and_urls_encode() {
        assert_eq!(num(0), "0");
        assert_eq!(num(1234567), "1,234,567");
        assert_eq!(url("a b/<c>"), "a%20b%2F%3Cc%3E");
    }
}
