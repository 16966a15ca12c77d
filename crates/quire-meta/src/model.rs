//! The meta model: a separate model call with its own prompts (the agent
//! folder's `prompts/meta_*.md`), answering with one JSON object. A
//! malformed answer gets one repair request; a second failure is the
//! caller's to record.

use std::path::Path;
use std::sync::Arc;

use quire_config::render;
use quire_llm::ModelClient;
use quire_types::{Message, ModelRequest, Usage};
use serde_json::Value;

use crate::error::MetaError;

/// The meta-agent's prompt texts.
#[derive(Debug, Clone)]
pub struct MetaPrompts {
    /// Placeholders `{round}`, `{parent}`, `{figures}`, `{parts}`, `{digests}`.
    pub reflect: String,
    /// Placeholders `{round}`, `{part}`, `{kind}`, `{current}`, `{diagnosis}`, `{digests}`.
    pub propose: String,
    /// Placeholders `{spec}`, `{extensions}`, `{limits}`.
    pub new_agent: String,
    /// Placeholder `{error}`.
    pub repair: String,
}

const FILES: [&str; 4] = [
    "prompts/meta_reflect.md",
    "prompts/meta_propose.md",
    "prompts/meta_new.md",
    "prompts/meta_repair.md",
];

impl MetaPrompts {
    /// From `dir/prompts/meta_*.md`, each falling back to the built-in
    /// default agent's copy.
    pub fn load(dir: Option<&Path>) -> Result<MetaPrompts, MetaError> {
        let mut texts = Vec::with_capacity(FILES.len());
        for rel in FILES {
            let own = dir
                .map(|d| d.join(rel))
                .filter(|p| p.is_file())
                .map(|p| std::fs::read_to_string(&p).map_err(|e| MetaError::io(&p, e)))
                .transpose()?;
            let text = match own {
                Some(text) => text,
                None => quire_config::builtin_agent_files()
                    .iter()
                    .find(|(name, _)| *name == rel)
                    .map(|(_, text)| (*text).to_string())
                    .ok_or_else(|| {
                        MetaError::Invalid(format!("no {rel} in the agent or the built-in default"))
                    })?,
            };
            texts.push(text);
        }
        let [reflect, propose, new_agent, repair]: [String; 4] = texts
            .try_into()
            .map_err(|_| MetaError::Invalid("meta prompts: wrong count".into()))?;
        Ok(MetaPrompts {
            reflect,
            propose,
            new_agent,
            repair,
        })
    }
}

/// What the meta model used, summed over calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetaUsage {
    pub calls: u32,
    pub usage: Usage,
}

impl MetaUsage {
    fn add(&mut self, usage: Usage) {
        self.calls += 1;
        self.usage.add(usage);
    }
}

/// The meta model's client and prompts.
#[derive(Clone)]
pub struct MetaModel {
    client: Arc<dyn ModelClient>,
    pub prompts: MetaPrompts,
    pub max_output_tokens: u32,
}

impl MetaModel {
    pub fn new(client: Arc<dyn ModelClient>, prompts: MetaPrompts) -> MetaModel {
        MetaModel {
            client,
            prompts,
            max_output_tokens: 4096,
        }
    }

    pub fn model(&self) -> &str {
        self.client.model()
    }

    /// Sends `prompt` (a rendered template) and parses the answer as a JSON
    /// object, then lets `check` validate it. A failure of either gets one
    /// repair request naming the problem. Usage is added to `spent` even
    /// when the call fails.
    pub async fn ask<T>(
        &self,
        prompt: String,
        spent: &mut MetaUsage,
        check: impl Fn(&serde_json::Map<String, Value>) -> Result<T, String>,
    ) -> Result<T, MetaError> {
        let mut messages = vec![Message::user(prompt)];
        let mut last_problem = String::new();
        for attempt in 0..2 {
            let request = ModelRequest {
                messages: messages.clone(),
                tools: Vec::new(),
                temperature: Some(0.0),
                max_output_tokens: Some(self.max_output_tokens),
            };
            let response = self
                .client
                .complete(&request)
                .await
                .map_err(|e| MetaError::Model(e.to_string()))?;
            spent.add(response.usage);
            let answer = response.content;
            let problem = match parse_object(&answer) {
                Ok(object) => match check(&object) {
                    Ok(value) => return Ok(value),
                    Err(problem) => problem,
                },
                Err(problem) => problem,
            };
            tracing::warn!(attempt, %problem, "the meta model's answer is unusable");
            messages.push(Message::assistant(answer, Vec::new()));
            messages.push(Message::user(render(
                &self.prompts.repair,
                &[("error", problem.as_str())],
            )));
            last_problem = problem;
        }
        Err(MetaError::Model(format!(
            "no usable answer after one repair: {last_problem}"
        )))
    }
}

/// The JSON object in an answer: the whole text, or a fenced block, or the
/// span from the first `{` to the last `}`. Anything else is an error.
pub fn parse_object(answer: &str) -> Result<serde_json::Map<String, Value>, String> {
    let trimmed = answer.trim();
    let fenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .map(str::trim);
    let candidate = fenced.unwrap_or(trimmed);
    let parsed = serde_json::from_str::<Value>(candidate).or_else(|first| {
        match (candidate.find('{'), candidate.rfind('}')) {
            (Some(start), Some(end)) if start < end => {
                serde_json::from_str::<Value>(&candidate[start..=end]).map_err(|_| first)
            }
            _ => Err(first),
        }
    });
    match parsed {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!("expected a JSON object, got {}", kind(&other))),
        Err(err) => Err(format!("the answer is not valid JSON ({err})")),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A required non-empty string field.
pub fn string_field(object: &serde_json::Map<String, Value>, key: &str) -> Result<String, String> {
    match object.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(other) => Err(format!(
            "`{key}` must be a non-empty string, not {}",
            kind(other)
        )),
        None => Err(format!("the object has no `{key}` field")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use quire_llm::{LlmError, Provider};
    use quire_types::ModelResponse;
    use std::sync::Mutex;

    struct Canned {
        answers: Mutex<Vec<String>>,
        seen: Mutex<Vec<ModelRequest>>,
    }

    #[async_trait]
    impl ModelClient for Canned {
        async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, LlmError> {
            self.seen.lock().unwrap().push(request.clone());
            let content = self.answers.lock().unwrap().remove(0);
            Ok(ModelResponse {
                content,
                tool_calls: vec![],
                usage: Usage {
                    prompt_tokens: 10,
                    completion_tokens: 2,
                    cached_tokens: 0,
                },
                stop_reason: Default::default(),
                model: "canned".into(),
            })
        }
        fn model(&self) -> &str {
            "canned"
        }
        fn provider(&self) -> Provider {
            Provider::OpenAi
        }
    }

    fn model(answers: &[&str]) -> (MetaModel, Arc<Canned>) {
        let client = Arc::new(Canned {
            answers: Mutex::new(answers.iter().map(|s| s.to_string()).collect()),
            seen: Mutex::new(vec![]),
        });
        let prompts = MetaPrompts::load(None).unwrap();
        (MetaModel::new(client.clone(), prompts), client)
    }

    #[test]
    fn objects_are_found_strictly() {
        assert!(parse_object("{\"a\": 1}").is_ok());
        assert!(parse_object("```json\n{\"a\": 1}\n```").is_ok());
        assert!(parse_object("Here: {\"a\": 1} done").is_ok());
        assert!(parse_object("[1]").unwrap_err().contains("an array"));
        assert!(parse_object("no json").is_err());
    }

    #[tokio::test]
    async fn one_repair_then_failure() {
        let (m, client) = model(&["not json", "{\"part\": \"x\"}"]);
        let mut spent = MetaUsage::default();
        let got = m
            .ask("q".into(), &mut spent, |o| string_field(o, "part"))
            .await
            .unwrap();
        assert_eq!(got, "x");
        assert_eq!(spent.calls, 2);
        assert_eq!(spent.usage.prompt_tokens, 20);
        let repair = client.seen.lock().unwrap()[1]
            .messages
            .last()
            .unwrap()
            .text()
            .to_string();
        assert!(repair.contains("not valid JSON"), "{repair}");

        let (m, _) = model(&["nope", "{\"other\": 1}"]);
        let mut spent = MetaUsage::default();
        let err = m
            .ask("q".into(), &mut spent, |o| string_field(o, "part"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("no `part` field"), "{err}");
        assert_eq!(spent.calls, 2);
    }
}
