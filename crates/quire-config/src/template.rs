/// Fills `{name}` placeholders in a config text.
///
/// Placeholders without a value are left as they are, so a text edited by a
/// person or by the meta-agent never makes a tool fail; `{{` and `}}` stand
/// for literal braces.
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(pos) = rest.find(['{', '}']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if let Some(inner) = tail.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => {
                    let name = &inner[..end];
                    match vars.iter().find(|(k, _)| *k == name) {
                        Some((_, value)) => out.push_str(value),
                        None => out.push_str(&tail[..end + 2]),
                    }
                    rest = &inner[end + 1..];
                }
                None => {
                    out.push_str(tail);
                    rest = "";
                }
            }
        } else {
            out.push('}');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn fills_known_and_keeps_unknown_placeholders() {
        let out = render("No file {path}; try {hint}.", &[("path", "src/a.py")]);
        assert_eq!(out, "No file src/a.py; try {hint}.");
    }

    #[test]
    fn doubled_braces_are_literal() {
        assert_eq!(render("{{\"a\": {v}}}", &[("v", "1")]), "{\"a\": 1}");
    }

    #[test]
    fn unclosed_brace_is_kept() {
        assert_eq!(render("x {oops", &[]), "x {oops");
    }
}
