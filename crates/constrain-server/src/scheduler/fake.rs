//! A fake model for the scheduler's tests and the router's: logits that are a function of each
//! slot's tokens, so what a sequence generates is reproducible whatever it is batched with.

use super::{SlotModel, SlotTokens};

/// Logits that depend on every token the slot holds, and on nothing else.
pub(crate) fn logits_after(history: &[u32], width: usize) -> Vec<f32> {
    constrain_testdata::hashed_logits(history, 0, width)
}

/// A context of independent slots; records every decode.
pub(crate) struct FakeModel {
    pub(crate) histories: Vec<Vec<u32>>,
    /// Per slot, the rows of logits of its entry in the last decode.
    pub(crate) rows: Vec<Vec<Vec<f32>>>,
    pub(crate) room: usize,
    pub(crate) width: usize,
    pub(crate) decodes: Vec<Vec<(usize, usize)>>,
    /// The logits after a slot's tokens.
    pub(crate) logits_of: fn(&[u32], usize) -> Vec<f32>,
    /// Whether the scheduler may fill masks while `decode` runs.
    pub(crate) spare_core: bool,
}

impl FakeModel {
    /// `slots` empty slots of `room` tokens, logits `width` wide.
    pub(crate) fn new(slots: usize, room: usize, width: usize) -> FakeModel {
        FakeModel {
            histories: vec![Vec::new(); slots],
            rows: vec![Vec::new(); slots],
            room,
            width,
            decodes: Vec::new(),
            logits_of: logits_after,
            spare_core: false,
        }
    }
}

impl SlotModel for FakeModel {
    fn slots(&self) -> usize {
        self.histories.len()
    }

    fn slot_room(&self) -> usize {
        self.room
    }

    fn decode(&mut self, work: &[SlotTokens<'_>]) -> Result<(), String> {
        let mut seen = Vec::new();
        for w in work {
            if seen.contains(&w.slot) {
                return Err(format!("slot {} twice in one batch", w.slot));
            }
            if w.tokens.is_empty() || w.rows == 0 || w.rows > w.tokens.len() {
                return Err(format!(
                    "slot {}: {} rows of {:?}",
                    w.slot, w.rows, w.tokens
                ));
            }
            seen.push(w.slot);
            let history = &mut self.histories[w.slot];
            history.extend_from_slice(w.tokens);
            if history.len() > self.room {
                return Err(format!("slot {} past its room", w.slot));
            }
            let first = history.len() - w.rows;
            self.rows[w.slot] = (first..history.len())
                .map(|end| (self.logits_of)(&history[..=end], self.width))
                .collect();
        }
        self.decodes
            .push(work.iter().map(|w| (w.slot, w.tokens.len())).collect());
        Ok(())
    }

    fn logits(&self, slot: usize, row: usize) -> &[f32] {
        self.rows[slot].get(row).map_or(&[], Vec::as_slice)
    }

    fn has_spare_core(&self) -> bool {
        self.spare_core
    }

    fn truncate(&mut self, slot: usize, len: usize) -> Result<(), String> {
        let history = &mut self.histories[slot];
        if len > history.len() {
            return Err(format!("slot {slot} holds {}, not {len}", history.len()));
        }
        history.truncate(len);
        if len == 0 {
            self.rows[slot].clear();
        }
        Ok(())
    }
}
