//! Markdown for the terminal (`quire notes show`): headings bold, code dim,
//! lists indented with bullets or numbers, quotes with a bar. Without colour
//! the text stays readable plain text.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use crate::render::Style;

/// Renders `text` (CommonMark with tables, task lists, strikethrough).
pub fn render_markdown(text: &str, style: Style) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS | Options::ENABLE_STRIKETHROUGH;
    let mut md = Md {
        style,
        out: String::new(),
        at_start: true,
        lists: Vec::new(),
        quote: 0,
        heading: false,
        strong: 0,
        code_block: false,
        link: Vec::new(),
        cell: 0,
    };
    for event in Parser::new_ext(text, options) {
        md.event(event);
    }
    let mut out = md.out.trim_end().to_string();
    out.push('\n');
    out
}

struct Md {
    style: Style,
    out: String,
    /// The next write starts a line (gets the quote and list prefix).
    at_start: bool,
    /// Open lists: the next number for ordered ones.
    lists: Vec<Option<u64>>,
    quote: usize,
    heading: bool,
    strong: usize,
    code_block: bool,
    /// Destinations of open links.
    link: Vec<String>,
    /// Cells written in the current table row.
    cell: usize,
}

impl Md {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                if self.code_block {
                    for line in text.lines() {
                        let line = format!("    {}", self.style.dim(line));
                        self.write(&line);
                        self.newline();
                    }
                } else if self.heading || self.strong > 0 {
                    let bold = self.style.bold(&text);
                    self.write(&bold);
                } else {
                    self.write(&text);
                }
            }
            Event::Code(code) => {
                let text = if self.style.color {
                    self.style.dim(&code)
                } else {
                    format!("`{code}`")
                };
                self.write(&text);
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                let text = self.style.dim(html.trim_end());
                self.write(&text);
                if html.ends_with('\n') {
                    self.newline();
                }
            }
            Event::SoftBreak => self.write(" "),
            Event::HardBreak => self.newline(),
            Event::Rule => {
                self.gap();
                let rule = self.style.dim(&"─".repeat(40));
                self.write(&rule);
                self.newline();
            }
            Event::TaskListMarker(done) => self.write(if done { "[x] " } else { "[ ] " }),
            Event::FootnoteReference(name) => self.write(&format!("[{name}]")),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { .. } => {
                self.gap();
                self.heading = true;
            }
            Tag::Paragraph => {
                if self.lists.is_empty() {
                    self.gap();
                } else if !self.at_start && !self.out.ends_with(' ') {
                    self.newline();
                }
            }
            Tag::List(first) => {
                if self.lists.is_empty() {
                    self.gap();
                } else if !self.at_start {
                    self.newline();
                }
                self.lists.push(first);
            }
            Tag::Item => {
                if !self.at_start {
                    self.newline();
                }
                let depth = self.lists.len();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_string(),
                };
                let prefix = format!("{}{}{marker}", self.quote_prefix(), "  ".repeat(depth));
                self.out.push_str(&prefix);
                self.at_start = false;
            }
            Tag::CodeBlock(kind) => {
                if self.lists.is_empty() {
                    self.gap();
                } else if !self.at_start {
                    self.newline();
                }
                if let CodeBlockKind::Fenced(lang) = kind
                    && !lang.is_empty()
                {
                    let label = self.style.dim(&format!("    [{lang}]"));
                    self.write(&label);
                    self.newline();
                }
                self.code_block = true;
            }
            Tag::BlockQuote(_) => {
                self.gap();
                self.quote += 1;
            }
            Tag::Strong => self.strong += 1,
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.link.push(dest_url.to_string());
            }
            Tag::Table(_) => self.gap(),
            Tag::TableCell => {
                if self.cell > 0 {
                    self.write(" | ");
                }
                self.cell += 1;
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.heading = false;
                self.newline();
            }
            TagEnd::Paragraph => self.newline(),
            TagEnd::List(_) => {
                self.lists.pop();
            }
            TagEnd::Item if !self.at_start => self.newline(),
            TagEnd::CodeBlock => self.code_block = false,
            TagEnd::BlockQuote(_) => {
                self.quote = self.quote.saturating_sub(1);
            }
            TagEnd::Strong => self.strong = self.strong.saturating_sub(1),
            TagEnd::Link | TagEnd::Image => {
                if let Some(url) = self.link.pop()
                    && !url.is_empty()
                {
                    let text = self.style.dim(&format!(" ({url})"));
                    self.write(&text);
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                self.cell = 0;
                self.newline();
            }
            _ => {}
        }
    }

    fn quote_prefix(&self) -> String {
        "│ ".repeat(self.quote)
    }

    fn write(&mut self, text: &str) {
        if self.at_start {
            let indent = if self.lists.is_empty() {
                String::new()
            } else {
                "  ".repeat(self.lists.len() + 1)
            };
            let prefix = format!("{}{indent}", self.quote_prefix());
            self.out.push_str(&prefix);
            self.at_start = false;
        }
        self.out.push_str(text);
    }

    fn newline(&mut self) {
        self.out.push('\n');
        self.at_start = true;
    }

    /// A blank line before a block, unless at the very top.
    fn gap(&mut self) {
        if self.out.is_empty() {
            return;
        }
        if !self.at_start {
            self.newline();
        }
        if !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
        self.at_start = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = "## Error\n\n```\nModuleNotFoundError: No module named 'src'\n```\n\n## Fix\n\nSet `pythonpath` in **pytest.ini**:\n\n1. open it\n2. add the line\n   - under `[pytest]`\n\n> checked twice\n";

    #[test]
    fn plain_text_is_readable() {
        let out = render_markdown(NOTE, Style { color: false });
        assert_eq!(
            out,
            "Error\n\n    ModuleNotFoundError: No module named 'src'\n\nFix\n\nSet `pythonpath` in pytest.ini:\n\n  1. open it\n  2. add the line\n    • under `[pytest]`\n\n│ checked twice\n"
        );
    }

    #[test]
    fn headings_are_bold_and_code_dim_in_colour() {
        let out = render_markdown(NOTE, Style { color: true });
        assert!(out.starts_with("\x1b[1mError\x1b[0m\n"), "{out:?}");
        assert!(out.contains("    \x1b[2mModuleNotFoundError"), "{out:?}");
        assert!(out.contains("\x1b[2mpythonpath\x1b[0m"), "{out:?}");
        assert!(out.contains("\x1b[1mpytest.ini\x1b[0m"), "{out:?}");
    }

    #[test]
    fn links_tables_and_rules() {
        let out = render_markdown(
            "[docs](https://x.test/a)\n\n---\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
            Style { color: false },
        );
        assert!(out.contains("docs (https://x.test/a)"), "{out}");
        assert!(out.contains("a | b\n1 | 2"), "{out}");
        assert!(out.contains("────"), "{out}");
    }
}
