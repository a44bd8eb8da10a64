//! A context (KV cache) of a model, and the evaluation of tokens in it.

use std::num::NonZeroU32;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;

use crate::model::{backend, Model};
use crate::LlamaError;

/// How to create a [`Session`].
#[derive(Clone, Debug)]
pub struct SessionOptions {
    /// Tokens the context holds: prompt plus output.
    pub ctx_size: u32,
    /// Threads for evaluation (`None`: all available cores).
    pub threads: Option<u32>,
    /// Largest number of tokens evaluated in one llama.cpp call.
    pub batch_size: u32,
    /// Sequences the context holds side by side (beams, drafts, a server's requests): each
    /// has its own positions and cache entries, and they share the `ctx_size` cells (a copied
    /// prefix takes no room twice).
    pub sequences: u32,
}

impl Default for SessionOptions {
    fn default() -> SessionOptions {
        SessionOptions {
            ctx_size: 4096,
            threads: None,
            batch_size: 512,
            sequences: 1,
        }
    }
}

/// One sequence's context: evaluates tokens and exposes the logits of the last one.
///
/// Generation lives in [`Session::generate`](crate::Session::generate); a session can run any
/// number of generations one after the other (each starts from an empty context).
pub struct Session<'m> {
    pub(crate) model: &'m Model,
    pub(crate) ctx: LlamaContext<'m>,
    pub(crate) batch: LlamaBatch<'static>,
    ctx_size: u32,
    pub(crate) batch_size: usize,
    /// Tokens evaluated so far in each sequence (the next token's position); sequence 0 is
    /// the one [`Session::eval`] extends.
    pub(crate) positions: Vec<usize>,
    /// Index in the last batch of the token whose logits are current.
    logits_index: Option<i32>,
    /// Where the logits that the last [`Session::decode`] asked for are.
    pub(crate) rows: Vec<LogitsRow>,
    /// Logits of rows evaluated in an earlier chunk of the last decode, copied out before the
    /// next chunk overwrote them.
    pub(crate) saved_logits: Vec<f32>,
    /// Whether a core is left over beside the model's threads: masks are then computed
    /// while the model evaluates (see `generate`). On a machine the model fills, a mask thread
    /// would only take time from it.
    pub(crate) overlap_masks: bool,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("ctx_size", &self.ctx_size)
            .field("positions", &self.positions)
            .finish_non_exhaustive()
    }
}

impl<'m> Session<'m> {
    /// Creates a context for `model`.
    pub fn new(model: &'m Model, options: &SessionOptions) -> Result<Session<'m>, LlamaError> {
        let threads = options.threads.map_or_else(available_threads, |t| t.max(1));
        let overlap_masks = available_threads() > threads;
        let threads = i32::try_from(threads).unwrap_or(i32::MAX);
        let ctx_size = options.ctx_size.max(1);
        let batch_size = options.batch_size.clamp(1, ctx_size);
        let sequences = options.sequences.max(1);
        let params = LlamaContextParams::default()
            .with_n_seq_max(sequences)
            // One pool of cells for every sequence: a copied prefix is shared, not duplicated,
            // and each sequence may grow to the whole context.
            .with_kv_unified(sequences > 1)
            .with_n_ctx(NonZeroU32::new(ctx_size))
            .with_n_batch(batch_size)
            .with_n_ubatch(batch_size)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        // The backend exists: the model was loaded through it.
        let backend = backend(false)?;
        let ctx = model
            .llama()
            .new_context(backend, params)
            .map_err(|source| LlamaError::Context { ctx_size, source })?;
        Ok(Session {
            model,
            ctx,
            batch: LlamaBatch::new(batch_size as usize, 1),
            ctx_size,
            batch_size: batch_size as usize,
            positions: vec![0; sequences as usize],
            logits_index: None,
            rows: Vec::new(),
            saved_logits: Vec::new(),
            overlap_masks,
        })
    }

    /// The model of this session.
    pub fn model(&self) -> &'m Model {
        self.model
    }

    /// Whether a core is left over beside the model's threads, so that masks computed while
    /// the model evaluates take no time from it.
    pub fn has_spare_core(&self) -> bool {
        self.overlap_masks
    }

    /// Tokens the context holds.
    pub fn ctx_size(&self) -> u32 {
        self.ctx_size
    }

    /// The cells a generation from `prompt` has left for its output: a prompt must be
    /// non-empty and leave room for at least one token.
    pub(crate) fn room_after(&self, prompt: &[u32]) -> Result<usize, LlamaError> {
        let ctx_size = self.ctx_size as usize;
        if prompt.is_empty() {
            return Err(LlamaError::EmptyPrompt);
        }
        if prompt.len() >= ctx_size {
            return Err(LlamaError::PromptTooLong {
                prompt_tokens: prompt.len(),
                ctx_size: self.ctx_size,
            });
        }
        Ok(ctx_size - prompt.len())
    }

    /// Tokens evaluated since the last [`Session::clear`].
    pub fn position(&self) -> usize {
        self.positions[0]
    }

    /// Forgets every evaluated token.
    pub fn clear(&mut self) {
        self.ctx.clear_kv_cache();
        self.positions.fill(0);
        self.logits_index = None;
        self.rows.clear();
    }

    /// Evaluates `tokens` after the ones already evaluated; afterwards [`Session::logits`] are the
    /// next-token logits after the last of them.
    ///
    /// [`Session::generate`] drives this itself; a decode loop of one's own (a server's, with
    /// its own stopping rules) calls it directly.
    pub fn eval(&mut self, tokens: &[u32]) -> Result<(), LlamaError> {
        self.rows.clear();
        for (i, chunk) in tokens.chunks(self.batch_size).enumerate() {
            let last_chunk = (i + 1) * self.batch_size >= tokens.len();
            self.batch.clear();
            for (j, &token) in chunk.iter().enumerate() {
                let wants_logits = last_chunk && j + 1 == chunk.len();
                let position = i32::try_from(self.positions[0] + j).unwrap_or(i32::MAX);
                let token = LlamaToken::new(i32::try_from(token).unwrap_or(i32::MAX));
                self.batch.add(token, position, &[0], wants_logits)?;
            }
            self.ctx.decode(&mut self.batch)?;
            self.positions[0] += chunk.len();
            if last_chunk {
                self.logits_index = Some(self.batch.n_tokens() - 1);
            }
        }
        Ok(())
    }

    /// The next-token logits after the last evaluated token (one per vocabulary id; empty
    /// before anything was evaluated).
    pub fn logits(&self) -> &[f32] {
        match self.logits_index {
            Some(index) => self.ctx.get_logits_ith(index),
            // After a multi-sequence decode: the last row of sequence 0.
            None => self.last_logits_of(0),
        }
    }
}

impl Session<'_> {
    /// After a multi-sequence decode, [`Session::logits`] has no current row.
    pub(crate) fn logits_index_reset(&mut self) {
        self.logits_index = None;
    }
}

fn available_threads() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1))
}

/// Where one row of logits of the last decode is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogitsRow {
    /// The sequence.
    pub(crate) seq: usize,
    /// The token's index in its entry's tokens.
    pub(crate) index: usize,
    /// Where its logits are.
    pub(crate) source: RowSource,
}

/// Where a row's logits are kept (filled by [`Session::decode`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum RowSource {
    /// In llama.cpp's output of the final chunk, at this batch index.
    Context(i32),
    /// Copied into `saved_logits`: where the row starts, and its length.
    Saved(usize, usize),
}
