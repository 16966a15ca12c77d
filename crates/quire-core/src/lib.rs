//! The agent loop and the extension trait.
//!
//! The loop knows no tool: it builds a request, calls the model, lets
//! extensions interpret the output into actions, routes each action to the
//! extension that owns it, records the observations, and repeats until an
//! extension finishes or stops the run, the iteration cap hits, or the user
//! interrupts. Everything else is an extension.

mod context;
mod error;
mod estimate;
pub mod extensions;
mod facts;
mod history;
mod interrupt;
mod run;
mod sink;

pub use context::{Ctx, StateMap};
pub use error::CoreError;
pub use estimate::{CharEstimator, TokenEstimator};
pub use facts::{EditCall, TestOutcome, WorkFacts};
pub use history::{pair_tool_calls, rebuild_history};
pub use interrupt::Interrupt;
pub use run::{
    Action, Agent, Control, Extension, LoopOutcome, ProtocolFailure, StepCall, StepSummary,
    ToolOutput,
};
pub use sink::{EventSink, MemorySink, NullSink, SinkError};
