//! Shared test helpers: the built-in agent config, a context, an action.

use std::sync::Arc;

use quire_config::{AgentConfig, AgentSource, Loader};
use quire_core::{Action, Ctx, MemorySink};
use quire_types::ToolCall;

/// The built-in default agent.
pub(crate) fn config() -> AgentConfig {
    Loader::default()
        .load(&AgentSource::Builtin)
        .expect("the built-in agent loads")
}

pub(crate) fn ctx(config: AgentConfig) -> Ctx {
    Ctx::new(Arc::new(config), Arc::new(MemorySink::default()))
}

pub(crate) fn ctx_with_sink(config: AgentConfig, sink: Arc<MemorySink>) -> Ctx {
    Ctx::new(Arc::new(config), sink)
}

pub(crate) fn action(name: &str, args: serde_json::Value) -> Action {
    let serde_json::Value::Object(map) = args.clone() else {
        panic!("arguments must be an object");
    };
    Action {
        call: ToolCall::new("c1", name, args.to_string()),
        args: map,
    }
}
