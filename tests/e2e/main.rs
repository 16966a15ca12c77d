//! End to end: the real `quire` binary, a real session copy, real tools,
//! real pytest and SQLite, with the scripted model server on 127.0.0.1
//! playing the model over real HTTP.

mod harness;

mod cli_basics;
mod commands;
mod concurrent;
mod eval;
mod kill9;
mod kill9_distill;
mod kill9_eval;
mod learn;
mod mcp;
mod meta;
mod notes;
mod resume;
mod run;
mod secrets;
mod view;
mod view_browser;
