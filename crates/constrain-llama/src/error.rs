//! Errors of loading a model and generating with it.

use std::path::PathBuf;

use thiserror::Error;

/// Why a model could not be loaded or a generation could not run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LlamaError {
    /// llama.cpp could not be initialized.
    #[error("llama.cpp backend: {0}")]
    Backend(#[from] llama_cpp_2::LlamaCppError),
    /// The GPU asked for is not among the machine's GPUs.
    #[error("no GPU {index}: this machine has {available} (numbered from 0)")]
    GpuDeviceNotFound {
        /// The GPU asked for.
        index: usize,
        /// How many GPUs there are.
        available: usize,
    },
    /// The model file does not exist.
    #[error("model file {path} does not exist")]
    ModelNotFound {
        /// The path given.
        path: PathBuf,
    },
    /// The model file does not start with GGUF's magic bytes.
    #[error("the model file {path} is not a GGUF file: it starts with {found:?}, not \"GGUF\"")]
    NotGguf {
        /// The model file.
        path: PathBuf,
        /// Its first bytes (at most four, lossily as text).
        found: String,
    },
    /// llama.cpp refused the model file.
    #[error("could not load the model {path}: {source} (is it a GGUF file?)")]
    ModelLoad {
        /// The model file.
        path: PathBuf,
        /// The underlying error.
        source: llama_cpp_2::LlamaModelLoadError,
    },
    /// The model's vocabulary is unusable.
    #[error("model vocabulary: {0}")]
    Vocabulary(#[from] constrain_vocab::VocabError),
    /// A context (KV cache) could not be created.
    #[error("could not create a context of {ctx_size} tokens: {source}")]
    Context {
        /// The requested context size.
        ctx_size: u32,
        /// The underlying error.
        source: llama_cpp_2::LlamaContextLoadError,
    },
    /// The model has no chat template, or it could not be applied.
    #[error("chat template: {0}")]
    ChatTemplate(String),
    /// The prompt tokenizes to nothing and the model adds no start token.
    #[error("the prompt is empty")]
    EmptyPrompt,
    /// The prompt does not leave room for a single generated token.
    #[error(
        "the prompt is {prompt_tokens} tokens long but the context holds {ctx_size}; \
         shorten the prompt or raise --ctx-size"
    )]
    PromptTooLong {
        /// Tokens in the prompt.
        prompt_tokens: usize,
        /// The context size.
        ctx_size: u32,
    },
    /// The sampling funnel refused its settings or could not draw a token.
    #[error("sampling: {0}")]
    Sampling(#[from] constrain_sampling::SamplingError),
    /// A batch of tokens could not be assembled for llama.cpp.
    #[error("llama.cpp batch: {0}")]
    Batch(#[from] llama_cpp_2::llama_batch::BatchAddError),
    /// llama.cpp failed to evaluate a batch.
    #[error("llama.cpp decode failed: {0}")]
    Decode(#[from] llama_cpp_2::DecodeError),
    /// The grammar could not be compiled against the model's vocabulary.
    #[error("grammar: {0}")]
    Grammar(#[from] constrain_engine::GrammarError),
    /// The matcher failed during generation (a budget ran out, or an internal inconsistency).
    #[error("constraint: {0}")]
    Match(#[from] constrain_engine::MatchError),
    /// The sampler found no token to draw (llama.cpp's reference sampler).
    #[error("no token could be drawn after {generated} generated tokens")]
    DeadEnd {
        /// Tokens generated so far.
        generated: usize,
    },
    /// llama.cpp rejected a grammar (reference sampler only).
    #[error("llama.cpp grammar: {0}")]
    LlamaGrammar(String),
    /// A constraint failed in a way none of the above says (its compilation).
    #[error("constraint: {0}")]
    Constraint(constrain::Error),
    /// Writing the generated text failed (for example a closed pipe).
    #[error("writing output: {0}")]
    Output(#[source] std::io::Error),
    /// A multi-sequence operation was refused (a sequence out of range, no room, a cut the
    /// cache cannot make).
    #[error("sequences: {0}")]
    Sequence(String),
}

/// The step's errors keep their own variants: a matcher's, the funnel's, a grammar's.
impl From<constrain::Error> for LlamaError {
    fn from(error: constrain::Error) -> LlamaError {
        match error {
            constrain::Error::Match(e) => LlamaError::Match(e),
            constrain::Error::Sampling(e) => LlamaError::Sampling(e),
            constrain::Error::Grammar(e) => LlamaError::Grammar(e),
            other => LlamaError::Constraint(other),
        }
    }
}
