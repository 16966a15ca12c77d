//! Extensions that belong to no tool: they shape the protocol itself.

mod protocol;

pub use protocol::ProtocolExtension;
