//! A chat answer read back, whole or as it streams: a reasoning model's thinking, the
//! message's text, and the tool calls in the model family's format.

use constrain::{CallPiece, CallReader, ParsedCall, ToolCallFormat};

use crate::reasoning::{self, Part};

/// What a stretch of an answer is, as OpenAI's messages and deltas carry it: thinking
/// (`reasoning_content`), or the answer's content and calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Thinking.
    Reasoning(String),
    /// The answer: its text, or a call's start or arguments.
    Answer(CallPiece),
}

/// Reads one choice's text as it is generated.
#[derive(Debug)]
pub struct OutputReader {
    /// With thinking first: splits it from the answer.
    thinking: Option<reasoning::Splitter>,
    /// With tools: reads calls out of the answer.
    calls: Option<CallReader>,
}

impl OutputReader {
    /// A reader of an answer with calls in `format` (`None`: no tools), after thinking when
    /// `reasoning`.
    pub fn new(format: Option<&ToolCallFormat>, reasoning: bool) -> OutputReader {
        OutputReader {
            thinking: reasoning.then(reasoning::Splitter::new),
            calls: format.map(ToolCallFormat::reader),
        }
    }

    /// Takes the next text and returns what can be told of it now.
    pub fn push(&mut self, text: &str) -> Vec<Piece> {
        let parts = match &mut self.thinking {
            Some(s) => s.push(text),
            None => vec![Part::Answer(text.to_string())],
        };
        self.answer(parts, false)
    }

    /// At the end of the output: what was held back.
    pub fn finish(&mut self) -> Vec<Piece> {
        let parts = match &mut self.thinking {
            Some(s) => s.finish(),
            None => Vec::new(),
        };
        self.answer(parts, true)
    }

    /// Calls begun so far.
    pub fn calls_started(&self) -> usize {
        self.calls.as_ref().map_or(0, CallReader::calls_started)
    }

    fn answer(&mut self, parts: Vec<Part>, end: bool) -> Vec<Piece> {
        let mut out = Vec::new();
        for part in parts {
            match part {
                Part::Reasoning(r) => out.push(Piece::Reasoning(r)),
                Part::Answer(a) => match &mut self.calls {
                    Some(reader) => out.extend(reader.push(&a).into_iter().map(Piece::Answer)),
                    None if a.is_empty() => {}
                    None => out.push(Piece::Answer(CallPiece::Content(a))),
                },
            }
        }
        if end {
            if let Some(reader) = &mut self.calls {
                out.extend(reader.finish().into_iter().map(Piece::Answer));
            }
        }
        out
    }

    /// The calls read to their end.
    fn into_calls(self) -> Vec<ParsedCall> {
        self.calls.map(CallReader::into_calls).unwrap_or_default()
    }
}

/// A whole answer read back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Read {
    /// The thinking, when the model thought.
    pub reasoning: Option<String>,
    /// The message's text (before any call).
    pub content: String,
    /// The complete calls.
    pub calls: Vec<ParsedCall>,
}

/// Reads a whole answer (see [`OutputReader::new`]).
pub fn read(text: &str, format: Option<&ToolCallFormat>, reasoning: bool) -> Read {
    let mut reader = OutputReader::new(format, reasoning);
    let mut pieces = reader.push(text);
    pieces.extend(reader.finish());
    let mut read = Read::default();
    for piece in pieces {
        match piece {
            Piece::Reasoning(r) => read.reasoning.get_or_insert_with(String::new).push_str(&r),
            Piece::Answer(CallPiece::Content(c)) => read.content.push_str(&c),
            Piece::Answer(_) => {}
        }
    }
    read.calls = reader.into_calls();
    read
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_then_calls() {
        let format = ToolCallFormat::hermes();
        let text = "<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n{\"name\": \"w\", \"arguments\": {\"c\": \"Oslo\"}}\n</tool_call>";
        let read = read(text, Some(&format), true);
        assert_eq!(read.reasoning.as_deref(), Some("The user wants weather."));
        assert_eq!(read.content, "");
        assert_eq!(read.calls.len(), 1);
        assert_eq!(read.calls[0].arguments, "{\"c\": \"Oslo\"}");
        // Without thinking, the same text keeps its thought in the content.
        let plain = super::read(text, Some(&format), false);
        assert!(plain.reasoning.is_none() && plain.content.contains("</think>"));
    }
}
