//! The `context` extension: staged compaction of the conversation.

use std::sync::Arc;

use async_trait::async_trait;
use quire_config::{AgentConfig, render};
use quire_core::{CoreError, Ctx, Extension};
use quire_llm::ModelClient;
use quire_types::{CompactionStage, EventKind, Message, ModelRequest, Usage};

use crate::compact;
use crate::tokens::TokenCounter;

/// Characters each tool result keeps in the summary call's input, tried in
/// order until the transcript fits the summary model's window.
const TRANSCRIPT_BODY_CAPS: [usize; 4] = [usize::MAX, 4_000, 1_000, 200];

/// What compaction remembers between requests (in `ctx.state`).
#[derive(Debug, Default)]
struct ContextState {
    /// Size of the span whose summary failed last: a retry waits until the
    /// span has grown by the minimum gain, rather than failing every step.
    failed_span: Option<u64>,
    /// Tokens of the last request besides the conversation (system prompt,
    /// tools), for compacting when the provider refuses a request.
    overhead: u64,
}

/// The numbers one request's compaction works with.
struct Plan {
    /// Tokens of the request besides the conversation (system prompt, tools).
    overhead: u64,
    budget: f64,
    /// The window less the reply: never to be exceeded.
    hard: u64,
    min_gain: u64,
}

impl Plan {
    fn new(config: &AgentConfig, overhead: u64) -> Plan {
        let c = &config.context;
        let budget = c.budget_tokens as f64;
        Plan {
            overhead,
            budget,
            hard: c
                .window_tokens
                .saturating_sub(u64::from(config.model.max_output_tokens)),
            min_gain: (c.min_gain * budget) as u64,
        }
    }

    fn over(&self, size: u64, fraction: f64) -> bool {
        size as f64 > fraction * self.budget
    }

    /// Small gains are not worth breaking the cached prefix for, unless the
    /// request would not fit at all.
    fn worth(&self, size: u64, next: u64) -> bool {
        size > self.hard || size.saturating_sub(next) >= self.min_gain
    }
}

/// Keeps requests under `context.budget_tokens` by rewriting the
/// conversation in stages (see `compact`), and never over the window.
///
/// Compaction rewrites `ctx.messages` itself, in discrete steps each recorded
/// as a `Compaction` event, rather than masking each request differently:
/// between two compactions every request extends the previous one byte for
/// byte, so the provider's prompt cache keeps working. It must be the first
/// extension that shapes requests, because it rebuilds the request's
/// conversation from `ctx.messages` after compacting.
pub struct ContextExtension {
    counter: Arc<TokenCounter>,
    summarizer: Arc<dyn ModelClient>,
}

impl ContextExtension {
    /// The extension name used in agent.toml `extensions`.
    pub const NAME: &'static str = "context";

    /// `summarizer` answers the architect summary call (the session's client,
    /// or one for `context.summary_model`).
    pub fn new(counter: Arc<TokenCounter>, summarizer: Arc<dyn ModelClient>) -> ContextExtension {
        ContextExtension {
            counter,
            summarizer,
        }
    }

    /// Calibrated size of a request whose conversation is `messages`, given
    /// the tokens of everything else in it (system prompt, tools).
    fn size(&self, overhead: u64, messages: &[Message]) -> u64 {
        self.counter
            .calibrated(overhead + self.counter.count_messages(messages))
    }

    /// Installs `messages` as the conversation and records the step;
    /// returns the new size.
    fn commit(
        &self,
        ctx: &mut Ctx,
        stage: CompactionStage,
        before: u64,
        plan: &Plan,
        messages: Vec<Message>,
        summary: Option<(String, Usage)>,
    ) -> Result<u64, CoreError> {
        let after = self.size(plan.overhead, &messages);
        let (summary, usage) = match summary {
            Some((text, usage)) => (Some(text), usage),
            None => (None, Usage::default()),
        };
        tracing::info!(%stage, before, after, "context compacted");
        ctx.messages = messages;
        ctx.emit(EventKind::Compaction {
            stage,
            tokens_before: before,
            tokens_after: after,
            summary,
            usage,
            messages: ctx.messages.clone(),
        })?;
        Ok(after)
    }

    /// Commits a cheap stage's result if it frees enough; the new size, or
    /// `None` when nothing was done.
    fn cheap_stage(
        &self,
        ctx: &mut Ctx,
        stage: CompactionStage,
        size: u64,
        plan: &Plan,
        next: Option<Vec<Message>>,
    ) -> Result<Option<u64>, CoreError> {
        match next {
            Some(next) if plan.worth(size, self.size(plan.overhead, &next)) => {
                self.commit(ctx, stage, size, plan, next, None).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Stage 3: the architect summary of everything between the task and
    /// the recent turns, or, when the call fails, fading all of it.
    async fn summary_stage(
        &self,
        ctx: &mut Ctx,
        config: &AgentConfig,
        size: u64,
        plan: &Plan,
        force: bool,
    ) -> Result<Option<u64>, CoreError> {
        let c = &config.context;
        let recent = compact::turn_start(&ctx.messages, c.keep_recent_turns as usize);
        let failed = ctx.state.get_mut::<ContextState>().failed_span;
        // The summary may be as long as summary_max_tokens: the span must be
        // larger than that by the minimum gain, and after a failure it must
        // have grown by that much before the next try.
        let span = compact::summary_span(&ctx.messages, recent).and_then(|(start, end)| {
            let tokens = self
                .counter
                .calibrated(self.counter.count_messages(&ctx.messages[start..end]));
            let after = size.saturating_sub(tokens) + u64::from(c.summary_max_tokens);
            let retry = failed.is_none_or(|f| tokens >= f + plan.min_gain);
            // Forced (the provider refused the request): whatever it frees.
            (force || (retry && plan.worth(size, after))).then_some(((start, end), tokens))
        });
        let Some((span, tokens)) = span else {
            return Ok(None);
        };
        match self.summarize(config, &ctx.messages, span).await {
            Ok((summary, usage)) => {
                ctx.usage.add(usage);
                ctx.state.get_mut::<ContextState>().failed_span = None;
                let message = Message::user(render(
                    config.message("context_summary"),
                    &[("summary", &summary)],
                ));
                let next = compact::replace_span(&ctx.messages, span, message);
                let step = Some((summary, usage));
                self.commit(ctx, CompactionStage::Summary, size, plan, next, step)
                    .map(Some)
            }
            Err(reason) => {
                // The session goes on with what the cheap stages can do.
                tracing::warn!(%reason, "summary failed; fading all but the recent turns");
                ctx.emit(EventKind::Error {
                    message: format!("context summary: {reason}"),
                })?;
                ctx.state.get_mut::<ContextState>().failed_span = Some(tokens);
                let faded = faded_texts(config);
                match compact::fade(&ctx.messages, recent, 0, true, &config.tool_roles, faded) {
                    Some(next) => self
                        .commit(ctx, CompactionStage::FadeAll, size, plan, next, None)
                        .map(Some),
                    None => Ok(None),
                }
            }
        }
    }

    /// Asks the architect for a summary of `span`; the error is the reason
    /// the call gave nothing usable.
    async fn summarize(
        &self,
        config: &AgentConfig,
        messages: &[Message],
        (start, end): (usize, usize),
    ) -> Result<(String, Usage), String> {
        let context = &config.context;
        let prompt = config.prompts.compaction.trim().to_string();
        // The task goes along so the summary can state it; it stays in the
        // conversation either way.
        let mut input: Vec<Message> = messages[..start]
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .cloned()
            .collect();
        input.extend_from_slice(&messages[start..end]);
        let room = context
            .window_tokens
            .saturating_sub(u64::from(context.summary_max_tokens))
            .saturating_sub(self.counter.count_text(&prompt))
            .saturating_mul(9)
            / 10;
        let mut transcript = String::new();
        for cap in TRANSCRIPT_BODY_CAPS {
            transcript = compact::transcript(&input, cap);
            if self
                .counter
                .calibrated(self.counter.count_text(&transcript))
                <= room
            {
                break;
            }
        }
        let request = ModelRequest {
            messages: vec![Message::system(prompt), Message::user(transcript)],
            tools: Vec::new(),
            temperature: config.model.temperature,
            max_output_tokens: Some(context.summary_max_tokens),
        };
        match self.summarizer.complete(&request).await {
            Ok(response) if !response.content.trim().is_empty() => {
                Ok((response.content.trim().to_string(), response.usage))
            }
            Ok(_) => Err("the summary call returned no text".into()),
            Err(err) => Err(format!("the summary call failed: {err}")),
        }
    }
}

#[async_trait]
impl Extension for ContextExtension {
    fn name(&self) -> &str {
        Self::NAME
    }

    /// The trajectory records BPE counts even with compaction off.
    async fn on_start(&self, ctx: &mut Ctx) -> Result<(), CoreError> {
        ctx.estimator = self.counter.clone();
        Ok(())
    }

    /// The provider refused a request as too long, so the local count was
    /// short of its own: the architect summary runs whatever the thresholds
    /// say (or, when it fails, all but the recent turns fade).
    async fn on_context_overflow(&self, ctx: &mut Ctx) -> Result<bool, CoreError> {
        let config = ctx.config.clone();
        if !config.context.enabled {
            return Ok(false);
        }
        let plan = Plan::new(&config, ctx.state.get_mut::<ContextState>().overhead);
        let size = self.size(plan.overhead, &ctx.messages);
        Ok(self
            .summary_stage(ctx, &config, size, &plan, true)
            .await?
            .is_some())
    }

    async fn on_input_messages(
        &self,
        ctx: &mut Ctx,
        request: &mut ModelRequest,
    ) -> Result<(), CoreError> {
        let config = ctx.config.clone();
        let c = &config.context;
        if !c.enabled {
            return Ok(());
        }
        // The request must still be system prompt + conversation, or a
        // rebuilt one would lose what an earlier extension did.
        let system = match request.messages.first() {
            Some(m @ Message::System { .. })
                if request.messages.len() == ctx.messages.len() + 1 =>
            {
                m.clone()
            }
            _ => {
                tracing::warn!(
                    "the request was reshaped before `context` ran; list `context` first in extensions"
                );
                return Ok(());
            }
        };
        let overhead = self
            .counter
            .count_request(request)
            .saturating_sub(self.counter.count_messages(&ctx.messages));
        ctx.state.get_mut::<ContextState>().overhead = overhead;
        let plan = Plan::new(&config, overhead);
        let recent = compact::turn_start(&ctx.messages, c.keep_recent_turns as usize);
        let long = compact::turn_start(&ctx.messages, c.keep_error_turns as usize);
        let roles = &config.tool_roles;
        // Supersede and fade keep every message in place, so `recent` and
        // `long` stay valid until the summary, which works them out again.
        let mut size = self.size(plan.overhead, &ctx.messages);
        let mut changed = false;

        if plan.over(size, c.supersede_at) {
            let superseded = config.message("context_superseded");
            let next = compact::supersede(&ctx.messages, recent, roles, &ctx.facts, superseded);
            if let Some(after) =
                self.cheap_stage(ctx, CompactionStage::Supersede, size, &plan, next)?
            {
                (size, changed) = (after, true);
            }
        }
        if plan.over(size, c.fade_at) {
            let next = compact::fade(
                &ctx.messages,
                recent,
                long,
                false,
                roles,
                faded_texts(&config),
            );
            if let Some(after) = self.cheap_stage(ctx, CompactionStage::Fade, size, &plan, next)? {
                (size, changed) = (after, true);
            }
        }
        if plan.over(size, c.summary_at)
            && let Some(after) = self.summary_stage(ctx, &config, size, &plan, false).await?
        {
            (size, changed) = (after, true);
        }
        if size > plan.hard {
            let fits = |m: &[Message]| self.size(plan.overhead, m) <= plan.hard;
            if let Some(next) = compact::trim(&ctx.messages, fits, roles, faded_texts(&config)) {
                (size, changed) = (
                    self.commit(ctx, CompactionStage::Trim, size, &plan, next, None)?,
                    true,
                );
            }
            if size > plan.hard {
                tracing::warn!(
                    size,
                    hard = plan.hard,
                    "the request is still larger than the window"
                );
            }
        }
        if changed {
            request.messages = std::iter::once(system)
                .chain(ctx.messages.iter().cloned())
                .collect();
        }
        Ok(())
    }
}

/// The fade texts of `config`.
fn faded_texts(config: &AgentConfig) -> compact::Faded<'_> {
    compact::Faded {
        result: config.message("context_faded"),
        arg: config.message("context_faded_arg"),
    }
}
