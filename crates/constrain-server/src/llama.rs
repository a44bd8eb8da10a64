//! llama.cpp behind the server's two seams: its context as the scheduler's slots
//! ([`SlotModel`]) and its tokenizer ([`Tokenize`]). The router's tests put a fake model behind
//! the same seams ([`crate::state::AppState::with_backend`]).

use constrain_llama::{Model, Session, SessionOptions};

use crate::prompt::Tokenize;
use crate::scheduler::{SlotModel, SlotTokens};

/// A llama.cpp context of several sequences, each limited to `room` tokens.
pub struct LlamaSlots<'m> {
    /// The context; its `ctx_size` is `room` times its sequences.
    pub session: Session<'m>,
    /// Tokens each sequence may hold.
    pub room: usize,
    /// Per slot, the index in its last entry of the first token with logits.
    pub logits_from: Vec<usize>,
}

impl<'m> LlamaSlots<'m> {
    /// Slots of `room` tokens over `session`'s sequences.
    pub fn new(session: Session<'m>, room: usize) -> LlamaSlots<'m> {
        let logits_from = vec![0; session.sequences()];
        LlamaSlots {
            session,
            room,
            logits_from,
        }
    }
}

impl SlotModel for LlamaSlots<'_> {
    fn slots(&self) -> usize {
        self.session.sequences()
    }

    fn slot_room(&self) -> usize {
        self.room
    }

    fn decode(&mut self, work: &[SlotTokens<'_>]) -> Result<(), String> {
        let entries: Vec<constrain_llama::SequenceTokens<'_>> = work
            .iter()
            .filter(|w| !w.tokens.is_empty())
            .map(|w| constrain_llama::SequenceTokens {
                seq: w.slot,
                tokens: w.tokens,
                logits_from: w.tokens.len() - w.rows.clamp(1, w.tokens.len()),
            })
            .collect();
        for entry in &entries {
            if let Some(from) = self.logits_from.get_mut(entry.seq) {
                *from = entry.logits_from;
            }
        }
        self.session.decode(&entries).map_err(|e| e.to_string())
    }

    fn logits(&self, slot: usize, row: usize) -> &[f32] {
        let from = self.logits_from.get(slot).copied().unwrap_or(0);
        self.session.logits_at(slot, from + row)
    }

    fn truncate(&mut self, slot: usize, len: usize) -> Result<(), String> {
        self.session
            .truncate_sequence(slot, len)
            .map_err(|e| e.to_string())
    }

    fn has_spare_core(&self) -> bool {
        self.session.has_spare_core()
    }
}

/// Makes, on the scheduler's thread, a context of `parallel` slots of `room` tokens each over
/// `model` (llama.cpp's context may not move between threads).
pub fn open_slots(
    model: &'static Model,
    parallel: usize,
    room: u32,
    session: SessionOptions,
) -> impl FnOnce() -> Result<LlamaSlots<'static>, String> + Send + 'static {
    let parallel = parallel.max(1);
    let room = room.max(1);
    let options = SessionOptions {
        ctx_size: room.saturating_mul(u32::try_from(parallel).unwrap_or(u32::MAX)),
        sequences: u32::try_from(parallel).unwrap_or(u32::MAX),
        ..session
    };
    move || {
        Session::new(model, &options)
            .map(|session| LlamaSlots::new(session, room as usize))
            .map_err(|e| format!("creating the context ({parallel} slots of {room} tokens): {e}"))
    }
}

/// Special tokens in the text are read as tokens: chat templates write their turn markers as
/// text.
impl Tokenize for Model {
    fn tokenize(&self, text: &str) -> Result<Vec<u32>, String> {
        Model::tokenize(self, text, true).map_err(|e| e.to_string())
    }
}
