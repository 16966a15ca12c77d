use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use quire_config::AgentConfig;
use quire_types::{Event, EventKind, Message, MessageSource, Usage};

use crate::estimate::{CharEstimator, TokenEstimator};
use crate::facts::WorkFacts;
use crate::sink::{EventSink, SinkError};

/// Per-session state that extensions share without knowing each other:
/// one value per type (e.g. the set of files read, the last test run).
#[derive(Default)]
pub struct StateMap {
    values: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl StateMap {
    /// The value of type `T`, created with `Default` on first use.
    pub fn get_mut<T: Default + Send + Sync + 'static>(&mut self) -> &mut T {
        let slot = self
            .values
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()));
        match slot.downcast_mut::<T>() {
            Some(value) => value,
            // The map is keyed by TypeId, so the box always holds a T.
            None => unreachable!("StateMap slot holds the type of its key"),
        }
    }

    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|b| b.downcast_ref())
    }
}

/// The run context every callback receives: the conversation (agent view),
/// counters, shared extension state and the event channel.
pub struct Ctx {
    pub config: Arc<AgentConfig>,
    pub system_prompt: String,
    /// The conversation after the system prompt, in the agent view.
    pub messages: Vec<Message>,
    pub iteration: u32,
    pub usage: Usage,
    pub tool_calls: u32,
    /// Consecutive model replies that broke the protocol.
    pub protocol_repairs: u32,
    pub state: StateMap,
    /// What the tools found out about the work (files touched, tests).
    pub facts: WorkFacts,
    /// Counts request tokens for the trajectory; extensions may install a
    /// better one than the chars/4 default in `on_start`.
    pub estimator: Arc<dyn TokenEstimator>,
    sink: Arc<dyn EventSink>,
}

impl Ctx {
    pub fn new(config: Arc<AgentConfig>, sink: Arc<dyn EventSink>) -> Ctx {
        let system_prompt = config.system_prompt();
        Ctx {
            config,
            system_prompt,
            messages: Vec::new(),
            iteration: 0,
            usage: Usage::default(),
            tool_calls: 0,
            protocol_repairs: 0,
            state: StateMap::default(),
            facts: WorkFacts::default(),
            estimator: Arc::new(CharEstimator),
            sink,
        }
    }

    /// The event channel, for what is recorded while the loop waits (a
    /// model call's retries).
    pub fn sink(&self) -> Arc<dyn EventSink> {
        self.sink.clone()
    }

    pub fn emit(&self, kind: EventKind) -> Result<(), SinkError> {
        self.sink.emit(&Event::now(kind))
    }

    /// Adds a user-role message to the conversation and records it.
    pub fn push_user(
        &mut self,
        source: MessageSource,
        content: impl Into<String>,
    ) -> Result<(), SinkError> {
        let content = content.into();
        self.emit(EventKind::UserMessage {
            source,
            content: content.clone(),
        })?;
        self.messages.push(Message::user(content));
        Ok(())
    }

    /// Estimated cost so far, from the config's price table.
    pub fn cost_usd(&self) -> f64 {
        self.config.pricing.cost(
            self.usage.prompt_tokens,
            self.usage.cached_tokens,
            self.usage.completion_tokens,
        )
    }
}
