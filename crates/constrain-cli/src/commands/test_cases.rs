//! PLACEHOLDER: replaced by the module's owner.

use std::process::ExitCode;

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not built yet")
}
