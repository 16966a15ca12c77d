/// Removes secrets from text before it is stored, logged or shown.
///
/// Two kinds of secrets: exact values (the API keys named by the agent
/// config, read from the environment) and strings shaped like well-known
/// key formats. Both become `[REDACTED]`.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    values: Vec<String>,
}

const MASK: &str = "[REDACTED]";

/// Prefixes of common key formats and the minimum length of the tail that
/// makes a match look like a real key rather than prose.
const KEY_PREFIXES: &[(&str, usize)] = &[
    ("sk-ant-", 16),
    ("sk-proj-", 16),
    ("sk-", 20),
    ("ghp_", 20),
    ("gho_", 20),
    ("github_pat_", 20),
    ("xoxb-", 16),
    ("xoxp-", 16),
    ("AKIA", 16),
    ("AIza", 30),
    ("hf_", 30),
];

impl Redactor {
    pub fn new() -> Self {
        Redactor::default()
    }

    /// Adds an exact secret value. Values shorter than 8 characters are
    /// ignored: masking them would mangle ordinary text.
    pub fn add_secret(&mut self, value: impl Into<String>) {
        let value = value.into();
        if value.len() >= 8 && !self.values.contains(&value) {
            self.values.push(value);
        }
    }

    /// Adds the values of the named environment variables that are set.
    pub fn add_env_secrets<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) {
        for name in names {
            if let Ok(value) = std::env::var(name) {
                self.add_secret(value);
            }
        }
    }

    /// Adds every exact value `other` knows (a process serving several
    /// configs masks the secrets of all of them).
    pub fn merge(&mut self, other: &Redactor) {
        for value in &other.values {
            self.add_secret(value.clone());
        }
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), MASK);
            }
        }
        redact_key_shapes(&out)
    }

    /// Redacts every string inside a JSON value.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => {
                let red = self.redact(s);
                if red != *s {
                    *s = red;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| self.redact_json(v)),
            _ => {}
        }
    }
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Bytes that can start a key prefix: positions starting with anything else
/// are skipped without comparing prefixes (this runs on every stored event).
fn may_start_key(byte: u8) -> bool {
    matches!(byte, b's' | b'g' | b'x' | b'A' | b'h')
}

fn redact_key_shapes(text: &str) -> String {
    if !text.bytes().any(may_start_key) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'outer: while !rest.is_empty() {
        if !rest.as_bytes().first().is_some_and(|b| may_start_key(*b)) {
            // Copy up to the next candidate byte in one go.
            let skip = rest.bytes().position(may_start_key).unwrap_or(rest.len());
            out.push_str(&rest[..skip]);
            rest = &rest[skip..];
            continue;
        }
        for (prefix, min_tail) in KEY_PREFIXES {
            if rest.starts_with(prefix) && starts_word(text, rest) {
                let tail_len = rest[prefix.len()..]
                    .chars()
                    .take_while(|c| is_key_char(*c))
                    .map(char::len_utf8)
                    .sum::<usize>();
                let tail = &rest[prefix.len()..prefix.len() + tail_len];
                if tail_len >= *min_tail && tail.chars().any(|c| c.is_ascii_digit()) {
                    out.push_str(MASK);
                    rest = &rest[prefix.len() + tail_len..];
                    continue 'outer;
                }
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

/// True when `rest` (a suffix of `text`) does not continue a key-like word.
fn starts_word(text: &str, rest: &str) -> bool {
    let offset = text.len() - rest.len();
    text[..offset]
        .chars()
        .next_back()
        .is_none_or(|c| !is_key_char(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_values_are_masked() {
        let mut r = Redactor::new();
        r.add_secret("hunter2-supersecret");
        assert_eq!(r.redact("key=hunter2-supersecret;"), "key=[REDACTED];");
    }

    #[test]
    fn short_values_are_not_registered() {
        let mut r = Redactor::new();
        r.add_secret("abc");
        assert_eq!(r.redact("abc abc"), "abc abc");
    }

    #[test]
    fn key_shapes_are_masked_but_prose_is_not() {
        let r = Redactor::new();
        let text = "use sk-proj-AbCdEf0123456789xyzw now; sk-learn is fine; task-1234";
        let red = r.redact(text);
        assert!(!red.contains("AbCdEf0123456789"), "{red}");
        assert!(red.contains("sk-learn is fine"), "{red}");
        assert!(red.contains("task-1234"), "{red}");
        assert!(r.redact("AKIAABCDEFGHIJ123456").contains(MASK));
    }

    #[test]
    fn every_prefix_starts_with_a_candidate_byte() {
        for (prefix, _) in KEY_PREFIXES {
            assert!(may_start_key(prefix.as_bytes()[0]), "{prefix}");
        }
    }

    #[test]
    fn keys_in_the_middle_of_multibyte_text_are_masked() {
        let r = Redactor::new();
        let red = r.redact("clé → ghp_abcdefghijklmnopqrstuvwxyz0123 ünd");
        assert_eq!(red, "clé → [REDACTED] ünd");
    }

    #[test]
    fn merged_values_are_masked() {
        let mut a = Redactor::new();
        a.add_secret("first-secret-value");
        let mut b = Redactor::new();
        b.add_secret("second-secret-value");
        a.merge(&b);
        assert_eq!(
            a.redact("first-secret-value second-secret-value"),
            "[REDACTED] [REDACTED]"
        );
    }

    #[test]
    fn json_strings_are_redacted_in_place() {
        let mut r = Redactor::new();
        r.add_secret("value-of-the-key-123");
        let mut v = serde_json::json!({"a": ["x value-of-the-key-123 y"], "b": 1});
        r.redact_json(&mut v);
        assert_eq!(v["a"][0], "x [REDACTED] y");
    }
}
