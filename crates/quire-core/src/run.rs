use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use quire_config::{AgentConfig, render};
use quire_llm::{LlmError, ModelClient, RetryNotice};
use quire_types::{
    Event, EventKind, Message, MessageSource, ModelRequest, ModelResponse, ToolCall,
    ToolResultViews, ToolSpec, Usage,
};

use crate::context::Ctx;
use crate::error::CoreError;
use crate::interrupt::Interrupt;

/// A tool call whose arguments parsed into a JSON object.
#[derive(Debug, Clone)]
pub struct Action {
    pub call: ToolCall,
    pub args: serde_json::Map<String, serde_json::Value>,
}

/// What the loop does after an action or a step.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    Continue,
    /// The agent is done; the caller takes over (diff, approval, apply).
    Finish {
        summary: String,
    },
    /// An extension ends the run (loop detected, unrecoverable state).
    Stop {
        reason: String,
    },
}

/// A tool's result in its two views, plus what the loop should do next.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    pub agent_view: String,
    pub user_view: String,
    pub is_error: bool,
    pub control: Control,
}

impl ToolOutput {
    pub fn ok(agent_view: impl Into<String>, user_view: impl Into<String>) -> ToolOutput {
        ToolOutput {
            agent_view: agent_view.into(),
            user_view: user_view.into(),
            is_error: false,
            control: Control::Continue,
        }
    }

    /// An error the model should read and act on; the user sees the same text.
    pub fn error(message: impl Into<String>) -> ToolOutput {
        let message = message.into();
        ToolOutput {
            agent_view: message.clone(),
            user_view: message,
            is_error: true,
            control: Control::Continue,
        }
    }

    pub fn with_control(mut self, control: Control) -> ToolOutput {
        self.control = control;
        self
    }
}

/// What happened in one step, for `after_step` callbacks.
#[derive(Debug, Clone, Default)]
pub struct StepSummary {
    /// Each call of the step, in order.
    pub calls: Vec<StepCall>,
}

/// One call of a step and whether its result was an error.
#[derive(Debug, Clone, PartialEq)]
pub struct StepCall {
    pub name: String,
    /// The raw arguments, as the model sent them.
    pub arguments: String,
    pub is_error: bool,
}

/// The model's reply could not be turned into actions; the text is the
/// repair message to send back.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolFailure(pub String);

/// A unit of behaviour plugged into the loop. Every callback defaults to
/// doing nothing, so an extension implements only what it needs.
#[async_trait]
pub trait Extension: Send + Sync {
    fn name(&self) -> &str;

    /// Names of the tools this extension executes; their words come from
    /// the agent config's `tools/<name>.toml`.
    fn tools(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// Tools whose words come with the extension instead of from
    /// `tools/<name>.toml`: an MCP server names and describes its own, known
    /// only once it has started. Declared after [`Extension::tools`], with
    /// the same check that each tool has exactly one owner.
    fn tool_specs(&self) -> Vec<ToolSpec> {
        Vec::new()
    }

    async fn on_start(&self, _ctx: &mut Ctx) -> Result<(), CoreError> {
        Ok(())
    }

    /// Shapes the request just before it is sent. Changes to `request` are
    /// for this call only; an extension that must change the conversation for
    /// good (compaction) rewrites `ctx.messages` and records it.
    async fn on_input_messages(
        &self,
        _ctx: &mut Ctx,
        _request: &mut ModelRequest,
    ) -> Result<(), CoreError> {
        Ok(())
    }

    /// The provider refused the request as longer than its context window.
    /// An extension that can shrink the conversation for good (compaction)
    /// does so here and returns true; the loop then retries the call once.
    async fn on_context_overflow(&self, _ctx: &mut Ctx) -> Result<bool, CoreError> {
        Ok(false)
    }

    /// Interprets the model's reply: may rewrite it (e.g. parse text-protocol
    /// calls into native ones) or reject it with a repair message.
    fn on_model_output(
        &self,
        _ctx: &mut Ctx,
        _response: &mut ModelResponse,
    ) -> Result<(), ProtocolFailure> {
        Ok(())
    }

    /// Runs one of this extension's tools.
    async fn execute(&self, _ctx: &mut Ctx, action: &Action) -> ToolOutput {
        ToolOutput::error(format!("tool `{}` is not implemented", action.call.name))
    }

    /// Sees each executed tool call's result before it is recorded and sent,
    /// and may add to it (e.g. the `notes` extension appends a matching
    /// hindsight note under a failure). Runs for every extension, in config
    /// order; not for calls that failed validation or were interrupted.
    async fn on_tool_result(&self, _ctx: &mut Ctx, _action: &Action, _output: &mut ToolOutput) {}

    /// Reacts after the step's actions ran: inject reminders, stop the run.
    async fn after_step(&self, _ctx: &mut Ctx, _step: &StepSummary) -> Result<Control, CoreError> {
        Ok(Control::Continue)
    }

    /// A tool asked to finish. `Some(reminder)` refuses: the tool's result
    /// becomes an error carrying the reminder and the loop goes on. An
    /// extension must stop refusing at some point (reminders have
    /// `max_fires`), or the model could never finish.
    async fn check_finish(&self, _ctx: &mut Ctx) -> Option<String> {
        None
    }
}

/// How a run of the loop ended.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopOutcome {
    Finished {
        summary: String,
    },
    IterationCap,
    Stopped {
        reason: String,
    },
    Interrupted,
    /// The model kept breaking the protocol.
    Failed {
        reason: String,
    },
}

/// A model client plus extensions: everything needed to drive a session.
pub struct Agent {
    client: Arc<dyn ModelClient>,
    extensions: Vec<Arc<dyn Extension>>,
    tools: Vec<ToolSpec>,
    owner: HashMap<String, usize>,
}

impl Agent {
    /// Checks that every declared tool has its words in the config and
    /// exactly one owner.
    pub fn new(
        client: Arc<dyn ModelClient>,
        extensions: Vec<Arc<dyn Extension>>,
        config: &AgentConfig,
    ) -> Result<Agent, CoreError> {
        let mut tools = Vec::new();
        let mut owner: HashMap<String, usize> = HashMap::new();
        for (index, ext) in extensions.iter().enumerate() {
            for name in ext.tools() {
                if let Some(first) = owner.get(name) {
                    return Err(CoreError::DuplicateTool {
                        tool: name.to_string(),
                        first: extensions[*first].name().to_string(),
                        second: ext.name().to_string(),
                    });
                }
                let text = config
                    .tools
                    .get(name)
                    .ok_or_else(|| CoreError::MissingToolText(name.to_string()))?;
                tools.push(ToolSpec {
                    name: name.to_string(),
                    description: text.description.trim().to_string(),
                    parameters: text.parameters.clone(),
                });
                owner.insert(name.to_string(), index);
            }
            for spec in ext.tool_specs() {
                if let Some(first) = owner.get(&spec.name) {
                    return Err(CoreError::DuplicateTool {
                        tool: spec.name,
                        first: extensions[*first].name().to_string(),
                        second: ext.name().to_string(),
                    });
                }
                owner.insert(spec.name.clone(), index);
                tools.push(spec);
            }
        }
        Ok(Agent {
            client,
            extensions,
            tools,
            owner,
        })
    }

    pub fn tool_specs(&self) -> &[ToolSpec] {
        &self.tools
    }

    pub fn client(&self) -> &Arc<dyn ModelClient> {
        &self.client
    }

    pub async fn start(&self, ctx: &mut Ctx) -> Result<(), CoreError> {
        for ext in &self.extensions {
            ext.on_start(ctx).await?;
        }
        Ok(())
    }

    /// Runs the loop until it finishes, stops, fails, hits the cap or is interrupted.
    pub async fn run(
        &self,
        ctx: &mut Ctx,
        interrupt: &Interrupt,
    ) -> Result<LoopOutcome, CoreError> {
        while ctx.iteration < ctx.config.limits.max_iterations {
            // An iteration counts once the model has answered, so a call cut
            // short by an interrupt or a kill is made again on resume.
            let iteration = ctx.iteration + 1;
            let Some((mut response, retried, estimated_tokens, started)) =
                self.call_model(ctx, iteration, interrupt).await?
            else {
                return Ok(LoopOutcome::Interrupted);
            };
            ctx.usage.add(retried);
            if response.usage.prompt_tokens > 0 {
                ctx.estimator
                    .observe(estimated_tokens, response.usage.prompt_tokens);
            }
            ctx.iteration = iteration;
            let repair = self.interpret(ctx, &mut response);
            unique_call_ids(ctx, &mut response);
            ctx.usage.add(response.usage);
            ctx.emit(EventKind::ModelResponse {
                iteration: ctx.iteration,
                content: response.content.clone(),
                tool_calls: response.tool_calls.clone(),
                usage: response.usage,
                duration_ms: started.elapsed().as_millis() as u64,
                model: response.model.clone(),
            })?;
            ctx.messages.push(Message::assistant(
                response.content.clone(),
                response.tool_calls.clone(),
            ));

            let (step, control) = match repair {
                Some(failure) => {
                    ctx.push_user(MessageSource::ProtocolRepair, failure.0.clone())?;
                    (StepSummary::default(), self.note_repair(ctx, &failure.0)?)
                }
                None => self.act(ctx, &response.tool_calls, interrupt).await?,
            };
            if let Some(outcome) = self.settle(ctx, &step, control).await? {
                return Ok(outcome);
            }
            if interrupt.is_triggered() {
                return Ok(LoopOutcome::Interrupted);
            }
        }
        Ok(LoopOutcome::IterationCap)
    }

    /// Builds the request and calls the model; `None` when interrupted.
    /// Returns the tokens of retried attempts too. A
    /// request the provider finds longer than its window is compacted and
    /// sent once more; a second refusal ends the run with the reason.
    async fn call_model(
        &self,
        ctx: &mut Ctx,
        iteration: u32,
        interrupt: &Interrupt,
    ) -> Result<Option<(ModelResponse, Usage, u64, Instant)>, CoreError> {
        let mut compacted = false;
        let mut retried = Usage::default();
        loop {
            // Extensions may call a model here (compaction), so it is interruptible too.
            let request = tokio::select! {
                r = self.build_request(ctx) => r?,
                _ = interrupt.triggered() => return Ok(None),
            };
            let estimated_tokens = ctx.estimator.estimate(&request);
            ctx.emit(EventKind::ModelRequest {
                iteration,
                messages: request.messages.len(),
                tools: request.tools.len(),
                estimated_tokens,
            })?;
            let started = Instant::now();
            let result = tokio::select! {
                r = self.complete_observed(ctx, &request, iteration) => r,
                _ = interrupt.triggered() => return Ok(None),
            };
            let result = result.map(|(response, usage)| {
                retried.add(usage);
                response
            });
            match result {
                Ok(response) => return Ok(Some((response, retried, estimated_tokens, started))),
                Err(LlmError::ContextLengthExceeded { detail }) if !compacted => {
                    tracing::warn!(%detail, "the request is over the model's window; compacting");
                    compacted = self.shrink_for_overflow(ctx, interrupt).await?;
                    if interrupt.is_triggered() {
                        return Ok(None);
                    }
                    if !compacted {
                        return Err(LlmError::ContextLengthExceeded {
                            detail: format!("{detail} (nothing could compact the conversation)"),
                        }
                        .into());
                    }
                }
                Err(LlmError::ContextLengthExceeded { detail }) => {
                    return Err(LlmError::ContextLengthExceeded {
                        detail: format!("{detail} (still too long after compacting once)"),
                    }
                    .into());
                }
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// Asks every extension to shrink the conversation; true if one did.
    async fn shrink_for_overflow(
        &self,
        ctx: &mut Ctx,
        interrupt: &Interrupt,
    ) -> Result<bool, CoreError> {
        let mut shrunk = false;
        for ext in &self.extensions {
            let done = tokio::select! {
                r = ext.on_context_overflow(ctx) => r?,
                _ = interrupt.triggered() => return Ok(shrunk),
            };
            shrunk |= done;
        }
        Ok(shrunk)
    }

    /// One model call with retries. Each retried attempt is recorded as it happens
    /// (`ModelRetry`: the user's line and the trajectory's record); the
    /// tokens those attempts reported are returned to be counted too.
    async fn complete_observed(
        &self,
        ctx: &Ctx,
        request: &ModelRequest,
        iteration: u32,
    ) -> Result<(ModelResponse, Usage), LlmError> {
        let sink = ctx.sink();
        let retried = std::sync::Mutex::new(Usage::default());
        let observe = |notice: &RetryNotice| {
            if let Ok(mut usage) = retried.lock() {
                usage.add(notice.usage);
            }
            let event = Event::now(EventKind::ModelRetry {
                iteration,
                failed_attempt: notice.attempt,
                max_attempts: notice.max_attempts,
                reason: notice.reason.clone(),
                timed_out_after_secs: notice.timed_out_after.map(|d| d.as_secs_f64()),
                usage: notice.usage,
                elapsed_ms: notice.elapsed.as_millis() as u64,
                retry_in_ms: notice.delay.as_millis() as u64,
            });
            if let Err(err) = sink.emit(&event) {
                tracing::warn!(%err, "cannot record a model retry");
            }
        };
        let response = self.client.complete_observed(request, &observe).await?;
        let retried = retried.into_inner().unwrap_or_else(|p| p.into_inner());
        Ok((response, retried))
    }

    async fn build_request(&self, ctx: &mut Ctx) -> Result<ModelRequest, CoreError> {
        let mut messages = Vec::with_capacity(ctx.messages.len() + 1);
        messages.push(Message::system(ctx.system_prompt.clone()));
        messages.extend(ctx.messages.iter().cloned());
        let mut request = ModelRequest {
            messages,
            tools: self.tools.clone(),
            temperature: ctx.config.model.temperature,
            max_output_tokens: Some(ctx.config.model.max_output_tokens),
        };
        for ext in &self.extensions {
            ext.on_input_messages(ctx, &mut request).await?;
        }
        Ok(request)
    }

    fn interpret(&self, ctx: &mut Ctx, response: &mut ModelResponse) -> Option<ProtocolFailure> {
        for ext in &self.extensions {
            if let Err(failure) = ext.on_model_output(ctx, response) {
                return Some(failure);
            }
        }
        if response.tool_calls.is_empty() {
            return Some(ProtocolFailure(
                ctx.config.message("no_tool_call").to_string(),
            ));
        }
        None
    }

    /// Runs each call of a reply in order; every call gets a result, so
    /// calls and results stay paired whatever happens.
    async fn act(
        &self,
        ctx: &mut Ctx,
        calls: &[ToolCall],
        interrupt: &Interrupt,
    ) -> Result<(StepSummary, Control), CoreError> {
        let mut step = StepSummary::default();
        let mut control = Control::Continue;
        let mut valid = 0;
        for call in calls {
            let mut started = Instant::now();
            let mut output = if control != Control::Continue || interrupt.is_triggered() {
                ToolOutput::error(ctx.config.message("call_skipped").to_string())
            } else {
                match self.validate(ctx, call) {
                    Err(message) => ToolOutput::error(message),
                    Ok((action, index)) => {
                        valid += 1;
                        ctx.emit(EventKind::ToolCallStarted {
                            call_id: call.id.clone(),
                            name: call.name.clone(),
                            arguments: call.arguments.clone(),
                        })?;
                        started = Instant::now();
                        let executed = tokio::select! {
                            out = self.extensions[index].execute(ctx, &action) => Some(out),
                            _ = interrupt.triggered() => None,
                        };
                        match executed {
                            Some(mut out) => {
                                for ext in &self.extensions {
                                    ext.on_tool_result(ctx, &action, &mut out).await;
                                }
                                out
                            }
                            None => ToolOutput::error(
                                ctx.config.message("call_interrupted").to_string(),
                            ),
                        }
                    }
                }
            };
            if matches!(output.control, Control::Finish { .. })
                && let Some(reminder) = self.check_finish(ctx).await
            {
                output = ToolOutput::error(reminder);
            }
            if control == Control::Continue {
                control = output.control.clone();
            }
            self.record(ctx, call, &output, started.elapsed().as_millis() as u64)?;
            step.calls.push(StepCall {
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                is_error: output.is_error,
            });
        }
        if valid > 0 {
            ctx.protocol_repairs = 0;
            Ok((step, control))
        } else {
            let control = self.note_repair(ctx, "no valid tool call")?;
            Ok((step, control))
        }
    }

    /// The first extension's reason not to finish yet, if any.
    async fn check_finish(&self, ctx: &mut Ctx) -> Option<String> {
        for ext in &self.extensions {
            if let Some(reminder) = ext.check_finish(ctx).await {
                return Some(reminder);
            }
        }
        None
    }

    fn note_repair(&self, ctx: &mut Ctx, reason: &str) -> Result<Control, CoreError> {
        ctx.protocol_repairs += 1;
        ctx.emit(EventKind::ProtocolRepair {
            attempt: ctx.protocol_repairs,
            reason: reason.to_string(),
        })?;
        if ctx.protocol_repairs > ctx.config.limits.max_protocol_repairs {
            return Ok(Control::Stop {
                reason: format!(
                    "the model broke the tool protocol {} times in a row (last: {reason})",
                    ctx.protocol_repairs
                ),
            });
        }
        Ok(Control::Continue)
    }

    fn record(
        &self,
        ctx: &mut Ctx,
        call: &ToolCall,
        output: &ToolOutput,
        duration_ms: u64,
    ) -> Result<(), CoreError> {
        ctx.tool_calls += 1;
        ctx.emit(EventKind::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            views: ToolResultViews {
                agent_view: output.agent_view.clone(),
                user_view: output.user_view.clone(),
            },
            is_error: output.is_error,
            duration_ms,
        })?;
        ctx.messages.push(Message::tool(
            call.id.clone(),
            call.name.clone(),
            output.agent_view.clone(),
            output.is_error,
        ));
        Ok(())
    }

    /// Resolves a call to its owning extension and checks its arguments
    /// against the tool's schema; errors are repair texts from the config.
    fn validate(&self, ctx: &Ctx, call: &ToolCall) -> Result<(Action, usize), String> {
        let config = &ctx.config;
        let Some(&index) = self.owner.get(&call.name) else {
            let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
            return Err(render(
                config.message("unknown_tool"),
                &[("name", &call.name), ("tools", &names.join(", "))],
            ));
        };
        let raw = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            call.arguments.as_str()
        };
        let args = match serde_json::from_str::<serde_json::Value>(raw) {
            Ok(serde_json::Value::Object(map)) => map,
            Ok(_) => {
                return Err(render(
                    config.message("bad_arguments"),
                    &[("name", &call.name), ("error", "not an object")],
                ));
            }
            Err(err) => {
                return Err(render(
                    config.message("bad_arguments"),
                    &[("name", &call.name), ("error", &err.to_string())],
                ));
            }
        };
        if let Some(spec) = self.tools.iter().find(|t| t.name == call.name) {
            check_schema(config, spec, &args)?;
        }
        Ok((
            Action {
                call: call.clone(),
                args,
            },
            index,
        ))
    }

    /// Lets extensions react to the step, then decides whether the loop ends.
    async fn settle(
        &self,
        ctx: &mut Ctx,
        step: &StepSummary,
        control: Control,
    ) -> Result<Option<LoopOutcome>, CoreError> {
        let mut control = control;
        for ext in &self.extensions {
            let next = ext.after_step(ctx, step).await?;
            if control == Control::Continue {
                control = next;
            }
        }
        Ok(match control {
            Control::Continue => None,
            Control::Finish { summary } => Some(LoopOutcome::Finished { summary }),
            Control::Stop { reason }
                if ctx.protocol_repairs > ctx.config.limits.max_protocol_repairs =>
            {
                Some(LoopOutcome::Failed { reason })
            }
            Control::Stop { reason } => Some(LoopOutcome::Stopped { reason }),
        })
    }
}

/// Gives every tool call an id no earlier call in the conversation has:
/// some servers reuse ids (or send none), and a resumed session may meet a
/// server whose counter started again.
fn unique_call_ids(ctx: &Ctx, response: &mut ModelResponse) {
    let mut seen: std::collections::HashSet<String> = ctx
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { tool_calls, .. } => Some(tool_calls.iter().map(|c| c.id.clone())),
            _ => None,
        })
        .flatten()
        .collect();
    for (index, call) in response.tool_calls.iter_mut().enumerate() {
        if call.id.is_empty() || seen.contains(&call.id) {
            let mut fresh = format!("q{}_{index}", ctx.iteration);
            while seen.contains(&fresh) {
                fresh.push('_');
            }
            call.id = fresh;
        }
        seen.insert(call.id.clone());
    }
}

/// Required arguments present and of the declared JSON type.
fn check_schema(
    config: &AgentConfig,
    spec: &ToolSpec,
    args: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), String> {
    if let Some(required) = spec.parameters.get("required").and_then(|r| r.as_array()) {
        for name in required.iter().filter_map(|r| r.as_str()) {
            if !args.contains_key(name) {
                return Err(render(
                    config.message("missing_argument"),
                    &[("name", &spec.name), ("argument", name)],
                ));
            }
        }
    }
    let Some(props) = spec
        .parameters
        .get("properties")
        .and_then(|p| p.as_object())
    else {
        return Ok(());
    };
    for (name, value) in args {
        let Some(expected) = props
            .get(name)
            .and_then(|p| p.get("type"))
            .and_then(|t| t.as_str())
        else {
            continue;
        };
        let ok = match expected {
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => true,
        };
        if !ok && !value.is_null() {
            let error = format!("expected {expected}, got {value}");
            return Err(render(
                config.message("invalid_argument"),
                &[("name", &spec.name), ("argument", name), ("error", &error)],
            ));
        }
    }
    Ok(())
}
