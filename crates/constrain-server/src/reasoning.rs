//! Reasoning models: the thinking a model writes between `<think>` and `</think>` before its
//! answer, kept apart from the answer (OpenAI-style servers return it as
//! `reasoning_content`), whole or as it streams.
//!
//! The constraint of a request applies to the answer only: the thinking is free text, and its
//! end is the trigger of the answer's grammar (see `ConstraintKind::Reasoning`).

/// Opens the thinking (a template may already have written it into the prompt).
pub const START: &str = "<think>";
/// Ends the thinking; the answer follows.
pub const END: &str = "</think>";

/// What a stretch of a reasoning model's output is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Thinking.
    Reasoning(String),
    /// The answer.
    Answer(String),
}

/// Splits a reasoning model's output as it streams: thinking until `</think>` (a leading
/// `<think>` dropped), the answer after it (its leading whitespace dropped).
#[derive(Debug, Default)]
pub struct Splitter {
    buffer: String,
    /// The thinking's opening text was read (or cannot come any more).
    opened: bool,
    /// Some of the thinking was read (newlines before it are dropped until then).
    thought: bool,
    /// `</think>` was read.
    answering: bool,
    /// Some of the answer was sent (whitespace before it is dropped until then).
    answered: bool,
}

impl Splitter {
    /// A splitter at the start of an output.
    pub fn new() -> Splitter {
        Splitter::default()
    }

    /// Takes the next text and returns what can be told of it now.
    pub fn push(&mut self, text: &str) -> Vec<Part> {
        self.buffer.push_str(text);
        let mut out = Vec::new();
        if !self.answering {
            if !self.opened {
                let trimmed = self.buffer.trim_start();
                if let Some(rest) = trimmed.strip_prefix(START) {
                    self.buffer = rest.to_string();
                    self.opened = true;
                } else if START.starts_with(trimmed) {
                    return out;
                } else {
                    self.opened = true;
                }
            }
            if !self.thought {
                self.buffer = self.buffer.trim_start_matches('\n').to_string();
                if self.buffer.is_empty() {
                    return out;
                }
                self.thought = true;
            }
            match self.buffer.find(END) {
                Some(at) => {
                    let thinking = self.buffer[..at].trim_end_matches('\n').to_string();
                    self.buffer.drain(..at + END.len());
                    if !thinking.is_empty() {
                        out.push(Part::Reasoning(thinking));
                    }
                    self.answering = true;
                }
                None => {
                    // Hold back what may be the start of `</think>`, and trailing newlines
                    // (dropped if `</think>` follows them).
                    let keep = held_back(&self.buffer);
                    let thinking: String = self.buffer.drain(..self.buffer.len() - keep).collect();
                    if !thinking.is_empty() {
                        out.push(Part::Reasoning(thinking));
                    }
                    return out;
                }
            }
        }
        if !self.answered {
            let trimmed = self.buffer.trim_start().to_string();
            self.buffer = trimmed;
            if self.buffer.is_empty() {
                return out;
            }
            self.answered = true;
        }
        let answer = std::mem::take(&mut self.buffer);
        if !answer.is_empty() {
            out.push(Part::Answer(answer));
        }
        out
    }

    /// At the end of the output: what was held back (thinking never closed is thinking).
    pub fn finish(&mut self) -> Vec<Part> {
        let rest = std::mem::take(&mut self.buffer);
        match (self.answering, rest.is_empty()) {
            (_, true) => Vec::new(),
            (false, false) => vec![Part::Reasoning(rest.trim_end_matches('\n').to_string())],
            (true, false) => vec![Part::Answer(rest)],
        }
    }
}

/// A whole output split into its thinking (`None` when it has none) and its answer.
pub fn split(text: &str) -> (Option<String>, String) {
    let mut splitter = Splitter::new();
    let mut parts = splitter.push(text);
    parts.extend(splitter.finish());
    let (mut reasoning, mut answer) = (None::<String>, String::new());
    for part in parts {
        match part {
            Part::Reasoning(r) => reasoning.get_or_insert_with(String::new).push_str(&r),
            Part::Answer(a) => answer.push_str(&a),
        }
    }
    (reasoning, answer)
}

/// How much of the end of `text` may still turn out to be (newlines before) `</think>`.
fn held_back(text: &str) -> usize {
    let partial = (1..END.len().min(text.len() + 1))
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n) && END.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0);
    let before = &text[..text.len() - partial];
    partial + (before.len() - before.trim_end_matches('\n').len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_and_answer_in_any_split() {
        let text = "<think>\nLet me see: 2 < 3.\n</think>\n\n{\"a\": 1}";
        for step in [1, 2, 3, 5, 8, 100] {
            let mut s = Splitter::new();
            let mut parts = Vec::new();
            let chars: Vec<char> = text.chars().collect();
            for chunk in chars.chunks(step) {
                parts.extend(s.push(&chunk.iter().collect::<String>()));
            }
            parts.extend(s.finish());
            let (mut r, mut a) = (String::new(), String::new());
            for p in parts {
                match p {
                    Part::Reasoning(x) => r.push_str(&x),
                    Part::Answer(x) => a.push_str(&x),
                }
            }
            assert_eq!(r, "Let me see: 2 < 3.", "step {step}");
            assert_eq!(a, "{\"a\": 1}", "step {step}");
        }
    }

    #[test]
    fn without_the_opening_tag_and_cut_off() {
        assert_eq!(
            split("thinking...</think>answer"),
            (Some("thinking...".into()), "answer".into())
        );
        assert_eq!(
            split("still thinking"),
            (Some("still thinking".into()), String::new())
        );
        assert_eq!(split("</think>\n\nx"), (None, "x".into()));
    }
}
