//! Several sequences in one context: a batch of tokens for many of them in one evaluation,
//! logits at chosen positions, and the cache operations that branch and cut sequences.
//!
//! The primitive under beam search (one sequence per beam, copied when a beam branches),
//! speculative decoding (every drafted position scored at once, the cache cut back past the
//! first rejection) and continuous batching (one sequence per request).

use llama_cpp_2::token::LlamaToken;

use crate::session::{LogitsRow, RowSource};
use crate::{LlamaError, Session};

/// Tokens to append to one sequence in a [`Session::decode`].
#[derive(Clone, Copy, Debug)]
pub struct SequenceTokens<'a> {
    /// The sequence (below [`SessionOptions::sequences`](crate::SessionOptions::sequences)).
    pub seq: usize,
    /// The tokens, appended after the ones the sequence holds.
    pub tokens: &'a [u32],
    /// Logits are wanted after every token from this index on (`tokens.len() - 1`: after the
    /// last only; a draft's verification wants them at every drafted position).
    pub logits_from: usize,
}

impl Session<'_> {
    /// How many sequences the context holds side by side.
    pub fn sequences(&self) -> usize {
        self.positions.len()
    }

    /// Tokens held by sequence `seq` (its next token's position).
    pub fn sequence_len(&self, seq: usize) -> usize {
        self.positions.get(seq).copied().unwrap_or(0)
    }

    /// Evaluates the tokens of every entry, each appended to its sequence, in as few
    /// llama.cpp calls as the batch size allows (one, usually). Afterwards
    /// [`Session::logits_at`] reads the logits each entry asked for.
    ///
    /// # Errors
    ///
    /// [`LlamaError::Sequence`] for a sequence out of range or named twice; llama.cpp's
    /// errors (a context without room among them).
    pub fn decode(&mut self, work: &[SequenceTokens<'_>]) -> Result<(), LlamaError> {
        for (i, entry) in work.iter().enumerate() {
            if entry.seq >= self.positions.len() {
                return Err(LlamaError::Sequence(format!(
                    "sequence {} is beyond the {} of this session (SessionOptions::sequences)",
                    entry.seq,
                    self.positions.len()
                )));
            }
            if work[..i].iter().any(|other| other.seq == entry.seq) {
                return Err(LlamaError::Sequence(format!(
                    "sequence {} appears twice in one batch",
                    entry.seq
                )));
            }
        }
        self.rows.clear();
        self.saved_logits.clear();
        self.logits_index_reset();
        // (entry, token index) in batch order, cut into chunks of the batch size.
        let items: Vec<(usize, usize)> = work
            .iter()
            .enumerate()
            .flat_map(|(e, entry)| (0..entry.tokens.len()).map(move |t| (e, t)))
            .collect();
        let chunks = items.len().div_ceil(self.batch_size);
        for (c, chunk) in items.chunks(self.batch_size).enumerate() {
            let last_chunk = c + 1 == chunks;
            self.batch.clear();
            let mut wanted = Vec::new();
            for (b, &(e, t)) in chunk.iter().enumerate() {
                let entry = &work[e];
                let wants = t >= entry.logits_from || t + 1 == entry.tokens.len();
                let position = i32::try_from(self.positions[entry.seq] + t)
                    .map_err(|_| LlamaError::Sequence("position beyond i32".into()))?;
                let token = LlamaToken::new(i32::try_from(entry.tokens[t]).unwrap_or(i32::MAX));
                let seq_id = i32::try_from(entry.seq).unwrap_or(i32::MAX);
                self.batch.add(token, position, &[seq_id], wants)?;
                if wants {
                    wanted.push((entry.seq, t, b));
                }
            }
            self.ctx.decode(&mut self.batch)?;
            for (seq, index, b) in wanted {
                let b = i32::try_from(b).unwrap_or(i32::MAX);
                let source = if last_chunk {
                    RowSource::Context(b)
                } else {
                    let row = self.ctx.get_logits_ith(b);
                    let start = self.saved_logits.len();
                    self.saved_logits.extend_from_slice(row);
                    RowSource::Saved(start, row.len())
                };
                self.rows.push(LogitsRow { seq, index, source });
            }
        }
        for entry in work {
            self.positions[entry.seq] += entry.tokens.len();
        }
        Ok(())
    }

    /// The next-token logits after token `index` of sequence `seq`'s entry in the last
    /// [`Session::decode`] (empty if that entry did not ask for them).
    pub fn logits_at(&self, seq: usize, index: usize) -> &[f32] {
        self.rows
            .iter()
            .find(|row| row.seq == seq && row.index == index)
            .map_or(&[], |row| self.row_logits(row))
    }

    /// The logits after the last token of `seq`'s entry in the last [`Session::decode`].
    pub fn last_logits_of(&self, seq: usize) -> &[f32] {
        self.rows
            .iter()
            .filter(|row| row.seq == seq)
            .max_by_key(|row| row.index)
            .map_or(&[], |row| self.row_logits(row))
    }

    fn row_logits(&self, row: &LogitsRow) -> &[f32] {
        match row.source {
            RowSource::Context(b) => self.ctx.get_logits_ith(b),
            RowSource::Saved(start, len) => {
                self.saved_logits.get(start..start + len).unwrap_or(&[])
            }
        }
    }

    /// Makes sequence `to` a copy of sequence `from` (its cache entries are shared, not
    /// duplicated); what `to` held is dropped.
    pub fn copy_sequence(&mut self, from: usize, to: usize) -> Result<(), LlamaError> {
        self.check_seq(from)?;
        self.check_seq(to)?;
        if from == to {
            return Ok(());
        }
        self.remove_sequence(to)?;
        self.ctx
            .copy_kv_cache_seq(seq_id(from), seq_id(to), None, None)
            .map_err(|e| LlamaError::Sequence(format!("copying sequence {from}: {e}")))?;
        self.positions[to] = self.positions[from];
        Ok(())
    }

    /// Empties sequence `seq`.
    pub fn remove_sequence(&mut self, seq: usize) -> Result<(), LlamaError> {
        self.truncate_sequence(seq, 0)
    }

    /// Cuts sequence `seq` back to its first `len` tokens (a rejected draft's tail).
    pub fn truncate_sequence(&mut self, seq: usize, len: usize) -> Result<(), LlamaError> {
        self.check_seq(seq)?;
        if len >= self.positions[seq] {
            return Ok(());
        }
        let start =
            u32::try_from(len).map_err(|_| LlamaError::Sequence("position beyond u32".into()))?;
        let id = u32::try_from(seq).unwrap_or(u32::MAX);
        let removed = self
            .ctx
            .clear_kv_cache_seq(Some(id), Some(start), None)
            .map_err(|e| LlamaError::Sequence(format!("cutting sequence {seq}: {e}")))?;
        if !removed {
            return Err(LlamaError::Sequence(format!(
                "llama.cpp cannot cut sequence {seq} back to {len} tokens"
            )));
        }
        self.positions[seq] = len;
        self.rows.retain(|row| row.seq != seq);
        Ok(())
    }

    fn check_seq(&self, seq: usize) -> Result<(), LlamaError> {
        if seq < self.positions.len() {
            Ok(())
        } else {
            Err(LlamaError::Sequence(format!(
                "sequence {seq} is beyond the {} of this session",
                self.positions.len()
            )))
        }
    }
}

fn seq_id(seq: usize) -> i32 {
    i32::try_from(seq).unwrap_or(i32::MAX)
}
