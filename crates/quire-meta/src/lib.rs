//! The meta-agent: agent design as a measured loop.
//!
//! - [`parts`]: the changeable parts of an agent folder, by stable id.
//! - [`generation`]: `agents/<name>/generations/<n>/`, each a complete
//!   loadable agent folder plus `meta.toml` (parent, part, rationale,
//!   status, eval runs by split, costs).
//! - [`copycheck`]: refuses edits that copy task text into the agent.
//! - [`model`]: the meta model's JSON calls (prompts from the agent folder).
//! - [`improve`]: reflect → propose → train minibatch → val, Pareto parents.
//! - [`history`]: history rows and charts, diffs, paired comparisons.

pub mod copycheck;
pub mod digest;
mod error;
pub mod evaluate;
pub mod generation;
pub mod history;
pub mod improve;
pub mod model;
pub mod parts;
pub mod synth;

pub use error::MetaError;
