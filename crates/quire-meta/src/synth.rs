//! `quire meta new`: from a description to an agent folder. The meta model
//! fills a structured form (extensions, test command, limits, safety
//! constraints, suite); the person confirms it; the base agent's files are
//! copied and edited to match, and generation 0 is written.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use quire_config::render;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toml::Spanned;

use crate::error::MetaError;
use crate::generation::Lineage;
use crate::model::{MetaModel, MetaUsage, string_field};
use crate::parts::{AgentFiles, Part, PartValue, write_atomic};

use quire_session::REQUIRED_EXTENSIONS as REQUIRED;

/// The structured form of a description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSpec {
    pub description: String,
    pub extensions: Vec<String>,
    pub test_command: String,
    pub limits: BTreeMap<String, i64>,
    pub safety: Vec<String>,
    pub suite: String,
}

impl AgentSpec {
    /// For the confirmation.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "description:  {}", self.description);
        let _ = writeln!(out, "extensions:   {}", self.extensions.join(", "));
        let _ = writeln!(
            out,
            "test command: {}",
            if self.test_command.is_empty() {
                "(from the workspace)"
            } else {
                &self.test_command
            }
        );
        let limits: Vec<String> = self
            .limits
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        let _ = writeln!(out, "limits:       {}", limits.join(", "));
        let _ = writeln!(out, "safety:");
        for s in &self.safety {
            let _ = writeln!(out, "  - {s}");
        }
        let _ = writeln!(
            out,
            "suite:        {}",
            if self.suite.is_empty() {
                "-"
            } else {
                &self.suite
            }
        );
        out
    }
}

/// Checks the meta model's form against what the base agent offers.
fn parse_spec(
    o: &serde_json::Map<String, Value>,
    base_extensions: &[String],
    base_limits: &BTreeMap<String, i64>,
) -> Result<AgentSpec, String> {
    let description = string_field(o, "description")?;
    let wanted: Vec<String> = o
        .get("extensions")
        .and_then(Value::as_array)
        .ok_or("`extensions` must be a list of names")?
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or("`extensions` must hold names")
        })
        .collect::<Result<_, _>>()?;
    if let Some(unknown) = wanted.iter().find(|w| !base_extensions.contains(w)) {
        return Err(format!(
            "unknown extension `{unknown}` (choose from {})",
            base_extensions.join(", ")
        ));
    }
    // The base order, the required ones always in.
    let extensions: Vec<String> = base_extensions
        .iter()
        .filter(|e| wanted.contains(e) || REQUIRED.contains(&e.as_str()))
        .cloned()
        .collect();
    let test_command = o
        .get("test_command")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut limits = BTreeMap::new();
    if let Some(map) = o.get("limits").and_then(Value::as_object) {
        for (key, value) in map {
            if !base_limits.contains_key(key) {
                return Err(format!(
                    "unknown limit `{key}` (choose from {})",
                    base_limits.keys().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
            match value.as_i64() {
                Some(n) if n > 0 => {
                    limits.insert(key.clone(), n);
                }
                _ => return Err(format!("limit `{key}` must be a positive integer")),
            }
        }
    }
    let safety = o
        .get("safety")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let suite = o
        .get("suite")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(AgentSpec {
        description,
        extensions,
        test_command,
        limits,
        safety,
        suite,
    })
}

/// Asks the meta model to fill the form for `spec`, given the base agent
/// folder (its extensions and limits are the choices).
pub async fn synthesize(
    meta: &MetaModel,
    base: &Path,
    spec: &str,
    usage: &mut MetaUsage,
) -> Result<AgentSpec, MetaError> {
    let files = AgentFiles::open(base)?;
    let PartValue::Order(extensions) = files.get(&Part::Extensions)? else {
        return Err(MetaError::Invalid(
            "the base agent has no extension list".into(),
        ));
    };
    let mut limits = BTreeMap::new();
    for part in files.parts()? {
        if let Part::Limit { section, key } = &part
            && section == "limits"
            && let Ok(PartValue::Number(toml::Value::Integer(n))) = files.get(&part)
        {
            limits.insert(key.clone(), n);
        }
    }
    let limits_text = limits
        .iter()
        .map(|(k, v)| format!("- {k} = {v}"))
        .collect::<Vec<_>>()
        .join("\n");
    let prompt = render(
        &meta.prompts.new_agent,
        &[
            ("spec", spec),
            ("extensions", extensions.join(", ").as_str()),
            ("limits", limits_text.as_str()),
        ],
    );
    meta.ask(prompt, usage, |o| parse_spec(o, &extensions, &limits))
        .await
}

#[derive(Debug, Deserialize)]
struct HeadSpans {
    name: Spanned<String>,
    description: Spanned<String>,
    tests: TestsSpans,
    prompts: SystemSpans,
}

#[derive(Debug, Deserialize)]
struct TestsSpans {
    command: Spanned<String>,
}

#[derive(Debug, Deserialize)]
struct SystemSpans {
    system: Spanned<Vec<String>>,
}

fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Writes the agent `name` into `dest` (which must not exist): the base
/// agent's files edited to the spec, plus `prompts/safety.md` when there
/// are constraints; then generation 0.
pub fn write_agent(
    base: &Path,
    dest: &Path,
    name: &str,
    spec: &AgentSpec,
    usage: &MetaUsage,
) -> Result<(), MetaError> {
    if dest.exists() {
        return Err(MetaError::Invalid(format!(
            "{} exists already; pick another name",
            dest.display()
        )));
    }
    crate::generation::copy_agent_files(base, dest)?;
    let path = dest.join("agent.toml");
    let mut text = std::fs::read_to_string(&path).map_err(|e| MetaError::io(&path, e))?;
    let spans: HeadSpans = toml::from_str(&text).map_err(|e| MetaError::File {
        path: path.clone(),
        message: e.message().trim().to_string(),
    })?;
    let mut system = spans.prompts.system.get_ref().clone();
    if !spec.safety.is_empty() {
        let body: String = spec.safety.iter().map(|s| format!("- {s}\n")).collect();
        write_atomic(
            &dest.join("prompts/safety.md"),
            format!("# Constraints\n\nAlways follow these:\n{body}").as_bytes(),
        )?;
        if !system.iter().any(|s| s == "prompts/safety.md") {
            system.push("prompts/safety.md".into());
        }
    }
    let system_literal = format!(
        "[{}]",
        system
            .iter()
            .map(|s| quoted(s))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Later spans first, so earlier ones stay valid.
    let mut edits = vec![
        (spans.name.span(), quoted(name)),
        (spans.description.span(), quoted(&spec.description)),
        (spans.tests.command.span(), quoted(&spec.test_command)),
        (spans.prompts.system.span(), system_literal),
    ];
    edits.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
    for (span, with) in edits {
        text = format!("{}{with}{}", &text[..span.start], &text[span.end..]);
    }
    write_atomic(&path, text.as_bytes())?;
    let files = AgentFiles::open(dest)?;
    files.set(
        &Part::Extensions,
        &PartValue::Order(spec.extensions.clone()),
    )?;
    for (key, value) in &spec.limits {
        let files = AgentFiles::open(dest)?;
        files.set(
            &Part::Limit {
                section: "limits".into(),
                key: key.clone(),
            },
            &PartValue::Number(toml::Value::Integer(*value)),
        )?;
    }
    let config = quire_config::Loader::default()
        .load(&quire_config::AgentSource::Dir(dest.to_path_buf()))?;
    let lineage = Lineage::new(dest);
    let mut root = lineage.ensure_root(&config.hash)?;
    root.reason = "synthesised from a description".into();
    root.rationale = serde_json::to_string(spec).unwrap_or_default();
    root.cost.meta_calls = usage.calls;
    root.cost.meta_prompt_tokens = usage.usage.prompt_tokens;
    root.cost.meta_completion_tokens = usage.usage.completion_tokens;
    lineage.save(&root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_becomes_a_loadable_agent_with_generation_zero() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("default");
        for (rel, text) in quire_config::builtin_agent_files() {
            let p = base.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let o = serde_json::json!({
            "description": "Fixes flaky tests",
            "extensions": ["finish", "workspace_tools", "protocol", "tests", "guidance"],
            "test_command": "pytest -q",
            "limits": {"max_iterations": 20},
            "safety": ["Never delete tests."],
            "suite": "evals/shop"
        });
        let files = AgentFiles::open(&base).unwrap();
        let PartValue::Order(exts) = files.get(&Part::Extensions).unwrap() else {
            panic!()
        };
        let limits = BTreeMap::from([("max_iterations".to_string(), 40)]);
        let spec = parse_spec(o.as_object().unwrap(), &exts, &limits).unwrap();
        assert_eq!(
            spec.extensions,
            vec!["protocol", "workspace_tools", "tests", "finish", "guidance"]
        );
        let bad = serde_json::json!({"description": "x", "extensions": ["warp"]});
        assert!(parse_spec(bad.as_object().unwrap(), &exts, &limits).is_err());

        let dest = dir.path().join("flaky");
        write_agent(&base, &dest, "flaky", &spec, &MetaUsage::default()).unwrap();
        let config = quire_config::Loader::default()
            .load(&quire_config::AgentSource::Dir(dest.clone()))
            .unwrap();
        assert_eq!(config.name, "flaky");
        assert_eq!(config.limits.max_iterations, 20);
        assert_eq!(config.tests.command, "pytest -q");
        assert!(config.system_prompt().contains("Never delete tests."));
        assert_eq!(config.extensions, spec.extensions);
        let root = Lineage::new(&dest).load(0).unwrap();
        assert!(root.rationale.contains("Fixes flaky tests"));
        assert!(dest.join("generations/0/prompts/safety.md").is_file());
    }
}
