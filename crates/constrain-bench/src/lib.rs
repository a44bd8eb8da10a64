//! The benchmark and conformance tooling of the `constrain` binary, kept apart from the
//! product: `constrain bench maskbench` (and `maskbench-compare`), `constrain bench soundness`,
//! `constrain test-cases` and `constrain funnel`. Each module is one command: its `Args` (clap)
//! and its `run`, which prints a report and returns the process's exit code; `schema_args` and
//! `schema_resources` are what several commands share.
//!
//! These are the command bodies of a binary, so they report errors with `anyhow` like the
//! binary does; the library crates they measure return typed errors.

#![forbid(unsafe_code)]

pub mod funnel;
pub mod maskbench;
pub mod schema_args;
pub mod test_cases;
