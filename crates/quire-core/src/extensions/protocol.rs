use async_trait::async_trait;
use quire_config::{ToolCalling, render};
use quire_llm::text_protocol;
use quire_types::{Message, ModelRequest, ModelResponse};

use crate::context::Ctx;
use crate::error::CoreError;
use crate::run::{Extension, ProtocolFailure};

/// Speaks the text tool protocol to models without native tool calling.
///
/// The conversation is always kept in native form (assistant tool calls and
/// tool results); in text mode this extension renders the tool catalog into
/// the system prompt, turns history into tagged blocks on the way out, and
/// parses blocks back into tool calls on the way in. In native mode it does
/// nothing.
#[derive(Default)]
pub struct ProtocolExtension;

impl ProtocolExtension {
    pub fn new() -> Self {
        ProtocolExtension
    }
}

#[async_trait]
impl Extension for ProtocolExtension {
    fn name(&self) -> &str {
        "protocol"
    }

    async fn on_input_messages(
        &self,
        ctx: &mut Ctx,
        request: &mut ModelRequest,
    ) -> Result<(), CoreError> {
        if ctx.config.model.tool_calling != ToolCalling::Text {
            return Ok(());
        }
        let catalog = text_protocol::render_tool_catalog(&request.tools);
        let instructions = render(&ctx.config.prompts.text_protocol, &[("tools", &catalog)]);
        request.tools.clear();
        let mut out = Vec::with_capacity(request.messages.len());
        for message in request.messages.drain(..) {
            match message {
                Message::System { content } => {
                    out.push(Message::system(format!("{content}\n\n{instructions}")))
                }
                Message::Assistant {
                    content,
                    tool_calls,
                } => out.push(Message::assistant(
                    text_protocol::encode_assistant(&content, &tool_calls),
                    Vec::new(),
                )),
                Message::Tool {
                    call_id,
                    name,
                    content,
                    is_error,
                } => {
                    let block =
                        text_protocol::encode_tool_result(&name, &call_id, &content, is_error);
                    // Consecutive results travel in one user message.
                    match out.last_mut() {
                        Some(Message::User { content: prev })
                            if prev.trim_start().starts_with("<tool_result") =>
                        {
                            prev.push_str("\n\n");
                            prev.push_str(&block);
                        }
                        _ => out.push(Message::user(block)),
                    }
                }
                other => out.push(other),
            }
        }
        request.messages = out;
        Ok(())
    }

    fn on_model_output(
        &self,
        ctx: &mut Ctx,
        response: &mut ModelResponse,
    ) -> Result<(), ProtocolFailure> {
        if ctx.config.model.tool_calling != ToolCalling::Text || !response.tool_calls.is_empty() {
            return Ok(());
        }
        // Ids only need to be unique within the session: the iteration makes them so.
        let prefix = format!("t{}_", ctx.iteration);
        let mut counter = 0;
        match text_protocol::parse_tool_calls(&response.content, &prefix, &mut counter) {
            Ok(parsed) => {
                response.content = parsed.text_without_calls;
                response.tool_calls = parsed.calls;
                Ok(())
            }
            Err(err) => Err(ProtocolFailure(render(
                ctx.config.message("text_protocol_error"),
                &[("error", &err.to_string())],
            ))),
        }
    }
}
