//! The token history the penalties read, and its occurrence counts.

use crate::PenaltyWindow;

/// The tokens of one sequence so far: the prompt, then what was generated.
///
/// ```
/// use constrain_sampling::{History, PenaltyWindow};
/// let mut history = History::from_prompt(&[1, 2, 3]);
/// history.push(7);
/// history.push(8);
/// let generated_only = PenaltyWindow { last_n: None, include_prompt: false };
/// assert_eq!(history.window(&generated_only), &[7, 8]);
/// let last_three = PenaltyWindow { last_n: Some(3), include_prompt: true };
/// assert_eq!(history.window(&last_three), &[3, 7, 8]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    tokens: Vec<u32>,
    prompt_len: usize,
}

impl History {
    /// An empty history (no prompt).
    pub fn new() -> Self {
        History::default()
    }

    /// A history that starts with these prompt tokens.
    pub fn from_prompt(prompt: &[u32]) -> Self {
        History {
            tokens: prompt.to_vec(),
            prompt_len: prompt.len(),
        }
    }

    /// Appends a generated token.
    pub fn push(&mut self, token: u32) {
        self.tokens.push(token);
    }

    /// Appends generated tokens.
    pub fn extend(&mut self, tokens: &[u32]) {
        self.tokens.extend_from_slice(tokens);
    }

    /// Keeps the first `len` tokens (to roll back rejected draft tokens); the prompt shrinks
    /// with it if `len` cuts into it.
    pub fn truncate(&mut self, len: usize) {
        self.tokens.truncate(len);
        self.prompt_len = self.prompt_len.min(self.tokens.len());
    }

    /// Every token, prompt first.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// The prompt tokens.
    pub fn prompt(&self) -> &[u32] {
        &self.tokens[..self.prompt_len]
    }

    /// The generated tokens.
    pub fn generated(&self) -> &[u32] {
        &self.tokens[self.prompt_len..]
    }

    /// The number of tokens (prompt included).
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether there is no token at all.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The tokens a penalty window covers: the most recent `last_n`, never reaching into the
    /// prompt unless the window includes it.
    pub fn window(&self, window: &PenaltyWindow) -> &[u32] {
        let floor = if window.include_prompt {
            0
        } else {
            self.prompt_len
        };
        let start = match window.last_n {
            None => floor,
            Some(n) => self.tokens.len().saturating_sub(n).max(floor),
        };
        &self.tokens[start..]
    }
}

/// How often each token occurs in a window, as `(token, count)` sorted by token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenCounts {
    entries: Vec<(u32, u32)>,
    sorted: Vec<u32>,
}

impl TokenCounts {
    /// No token counted.
    pub fn new() -> Self {
        TokenCounts::default()
    }

    /// The counts of these tokens.
    pub fn from_tokens(tokens: &[u32]) -> Self {
        let mut counts = TokenCounts::new();
        counts.recount(tokens);
        counts
    }

    /// Replaces the counts by those of `tokens`, reusing the buffers.
    pub fn recount(&mut self, tokens: &[u32]) {
        self.sorted.clear();
        self.sorted.extend_from_slice(tokens);
        self.sorted.sort_unstable();
        self.entries.clear();
        for &token in &self.sorted {
            match self.entries.last_mut() {
                Some((last, count)) if *last == token => *count += 1,
                _ => self.entries.push((token, 1)),
            }
        }
    }

    /// `(token, count)` for every distinct token, by increasing token id.
    pub fn entries(&self) -> &[(u32, u32)] {
        &self.entries
    }

    /// How often `token` occurs.
    pub fn count(&self, token: u32) -> u32 {
        self.entries
            .binary_search_by_key(&token, |&(t, _)| t)
            .map_or(0, |i| self.entries[i].1)
    }

    /// The largest token id counted.
    pub fn max_token(&self) -> Option<u32> {
        self.entries.last().map(|&(t, _)| t)
    }

    /// Whether no token was counted.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_respect_the_prompt_boundary() {
        let mut history = History::from_prompt(&[5, 6]);
        history.extend(&[7, 8, 9]);
        let all = PenaltyWindow {
            last_n: None,
            include_prompt: true,
        };
        assert_eq!(history.window(&all), &[5, 6, 7, 8, 9]);
        let recent = PenaltyWindow {
            last_n: Some(4),
            include_prompt: false,
        };
        assert_eq!(history.window(&recent), &[7, 8, 9]);
        let none = PenaltyWindow {
            last_n: Some(0),
            include_prompt: true,
        };
        assert!(history.window(&none).is_empty());
        history.truncate(1);
        assert_eq!(history.prompt(), &[5]);
        assert!(history.generated().is_empty());
    }

    #[test]
    fn counts_are_sorted_run_lengths() {
        let counts = TokenCounts::from_tokens(&[3, 0, 3, 9, 0, 3]);
        assert_eq!(counts.entries(), &[(0, 2), (3, 3), (9, 1)]);
        assert_eq!(counts.count(3), 3);
        assert_eq!(counts.count(4), 0);
        assert_eq!(counts.max_token(), Some(9));
    }
}
