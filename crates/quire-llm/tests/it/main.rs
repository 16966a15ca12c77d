//! Integration tests: the real clients against the scripted model server
//! over HTTP, record/replay, and the text protocol.

mod clients;
mod common;
mod faults;
mod record_replay;
mod text_protocol;
