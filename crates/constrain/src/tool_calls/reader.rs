//! Reading a family's tool calls back out of a model's text as it streams: the text before the
//! calls as content, then each call's name as soon as it is whole and its arguments as they
//! come, so a server can send OpenAI's `tool_calls` deltas without waiting for the end.

use super::ToolCallFormat;

/// A call read back from the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedCall {
    /// The function.
    pub name: String,
    /// The arguments, as JSON text exactly as written; for a text call, its input.
    pub arguments: String,
    /// Whether this is a text call (an OpenAI custom tool's input), not JSON arguments.
    pub text_input: bool,
}

/// What a stretch of text turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallPiece {
    /// Text before the calls.
    Content(String),
    /// A call begins: its index among the calls, and the function's name.
    CallStart {
        /// 0, 1, ...
        index: usize,
        /// The function.
        name: String,
        /// Whether its input is text (a custom tool's), not JSON arguments.
        text_input: bool,
    },
    /// More of a call's arguments (the fragments of one call concatenate to its arguments).
    CallArguments {
        /// Which call.
        index: usize,
        /// The next fragment.
        fragment: String,
    },
}

/// Reads text in which one family's calls may appear, piece by piece: text that may be the
/// start of the calls' trigger is held back until it is known not to be.
#[derive(Clone, Debug)]
pub struct CallReader {
    format: ToolCallFormat,
    /// Text received and not yet accounted for.
    buffer: String,
    state: State,
    /// The calls begun so far, their arguments as read.
    calls: Vec<ParsedCall>,
    /// How many of them were read to their closing text.
    complete: usize,
}

/// What [`CallReader::take_name`] found.
enum NameRead {
    /// More text is needed.
    Wait,
    /// What follows the opening is no call's name.
    NotACall,
    Name(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    /// Before the calls: content.
    Content,
    /// At a call's opening text, before its arguments.
    Head,
    /// Inside the arguments of the last call.
    Arguments(JsonEnd),
    /// Inside the input of the last call, a text call.
    TextInput,
    /// After the arguments, before the call's closing text.
    Close,
    /// After a call: a separator and another call, the closing text, or the end.
    Between,
    /// After the calls (what follows is not read).
    Done,
}

impl CallReader {
    /// A reader of `format`'s calls.
    pub fn new(format: ToolCallFormat) -> CallReader {
        CallReader {
            format,
            buffer: String::new(),
            state: State::Content,
            calls: Vec::new(),
            complete: 0,
        }
    }

    /// Takes the next text and returns what can be told of it now.
    pub fn push(&mut self, text: &str) -> Vec<CallPiece> {
        self.buffer.push_str(text);
        let mut out = Vec::new();
        while self.step(&mut out) {}
        out
    }

    /// At the end of the text: content still held back (a trigger that never opened a call).
    pub fn finish(&mut self) -> Vec<CallPiece> {
        let rest = std::mem::take(&mut self.buffer);
        let unopened = matches!(self.state, State::Content)
            || (self.state == State::Head && self.calls.is_empty());
        self.state = State::Done;
        if unopened && !rest.is_empty() {
            vec![CallPiece::Content(rest)]
        } else {
            Vec::new()
        }
    }

    /// Calls begun so far.
    pub fn calls_started(&self) -> usize {
        self.calls.len()
    }

    /// The calls read to their end (a call cut off is not one).
    pub fn into_calls(mut self) -> Vec<ParsedCall> {
        self.calls.truncate(self.complete);
        self.calls
    }

    /// One move of the state machine; `false` when it needs more text.
    fn step(&mut self, out: &mut Vec<CallPiece>) -> bool {
        let f = &self.format;
        match &mut self.state {
            State::Content => {
                if let Some(at) = self.buffer.find(f.trigger) {
                    let before: String = self.buffer.drain(..at).collect();
                    if !before.is_empty() {
                        out.push(CallPiece::Content(before));
                    }
                    self.state = State::Head;
                    true
                } else {
                    let keep = partial_suffix(&self.buffer, f.trigger);
                    let before: String = self.buffer.drain(..self.buffer.len() - keep).collect();
                    if !before.is_empty() {
                        out.push(CallPiece::Content(before));
                    }
                    false
                }
            }
            State::Head => {
                let opening = if self.calls.is_empty() {
                    f.calls_open
                } else {
                    ""
                };
                let head = format!("{opening}{}", f.before_name);
                if !prefix_compatible(&self.buffer, &head) {
                    if let Some(t) = &f.text_call {
                        let text_head = format!("{opening}{}", t.before_name);
                        if prefix_compatible(&self.buffer, &text_head) {
                            return self.text_head(&text_head, out);
                        }
                    }
                    return self.not_a_call(out);
                }
                let (after_name, name_in_json) = (f.after_name, f.name_in_json);
                let spelled = match self.take_name(head.len(), after_name) {
                    NameRead::Wait => return false,
                    NameRead::NotACall => return self.not_a_call(out),
                    NameRead::Name(spelled) => spelled,
                };
                let name = if name_in_json {
                    serde_json::from_str::<String>(&format!("\"{spelled}\"")).unwrap_or(spelled)
                } else {
                    spelled
                };
                self.start_call(name, false, out);
                true
            }
            State::TextInput => {
                let close = f.text_call.as_ref().map_or("", |t| t.close);
                let index = self.calls.len() - 1;
                let (take, ended) = match self.buffer.find(close) {
                    Some(at) => (at, true),
                    None => (
                        self.buffer.len() - partial_suffix(&self.buffer, close),
                        false,
                    ),
                };
                if take > 0 {
                    let fragment: String = self.buffer.drain(..take).collect();
                    self.calls[index].arguments.push_str(&fragment);
                    out.push(CallPiece::CallArguments { index, fragment });
                }
                if ended {
                    self.buffer.drain(..close.len());
                    self.complete += 1;
                    self.state = State::Between;
                }
                ended
            }
            State::Arguments(scan) => {
                let (taken, ended) = scan.feed(&self.buffer);
                if taken > 0 {
                    let fragment: String = self.buffer.drain(..taken).collect();
                    let index = self.calls.len() - 1;
                    self.calls[index].arguments.push_str(&fragment);
                    out.push(CallPiece::CallArguments { index, fragment });
                }
                if ended {
                    self.state = State::Close;
                }
                ended
            }
            State::Close => {
                if self.buffer.starts_with(f.call_close) {
                    self.buffer.drain(..f.call_close.len());
                    self.complete += 1;
                    self.state = State::Between;
                    true
                } else {
                    if !f.call_close.starts_with(self.buffer.as_str()) {
                        self.state = State::Done;
                    }
                    false
                }
            }
            State::Between => {
                let head = match &f.text_call {
                    Some(t) => common_prefix(f.before_name, t.before_name),
                    None => f.before_name,
                };
                let next = format!("{}{head}", f.separator);
                if !f.calls_close.is_empty() && self.buffer.starts_with(f.calls_close) {
                    self.buffer.drain(..f.calls_close.len());
                    self.state = State::Done;
                    true
                } else if self.buffer.starts_with(&next) {
                    self.buffer.drain(..f.separator.len());
                    self.state = State::Head;
                    true
                } else {
                    let waiting = !self.buffer.is_empty()
                        && (next.starts_with(self.buffer.as_str())
                            || f.calls_close.starts_with(self.buffer.as_str()));
                    if !self.buffer.is_empty() && !waiting {
                        self.state = State::Done;
                    }
                    false
                }
            }
            State::Done => {
                self.buffer.clear();
                false
            }
        }
    }

    /// At a text call's opening `head`: its name, then its input.
    fn text_head(&mut self, head: &str, out: &mut Vec<CallPiece>) -> bool {
        let Some(t) = self.format.text_call.clone() else {
            return self.not_a_call(out);
        };
        match self.take_name(head.len(), t.after_name) {
            NameRead::Wait => false,
            NameRead::NotACall => self.not_a_call(out),
            NameRead::Name(name) => {
                self.start_call(name, true, out);
                true
            }
        }
    }

    /// The name spelled after the call's opening (`head` bytes at the buffer's start) up to
    /// `after_name`, taken from the buffer with both.
    fn take_name(&mut self, head: usize, after_name: &str) -> NameRead {
        if self.buffer.len() < head {
            return NameRead::Wait;
        }
        let Some(end) = self.buffer[head..].find(after_name) else {
            // A name is short: a long run without the text after it is not a call.
            return if self.buffer.len() - head > 1024 {
                NameRead::NotACall
            } else {
                NameRead::Wait
            };
        };
        let name = self.buffer[head..head + end].to_string();
        self.buffer.drain(..head + end + after_name.len());
        NameRead::Name(name)
    }

    /// Opens call `name`, whose input is text or JSON arguments.
    fn start_call(&mut self, name: String, text_input: bool, out: &mut Vec<CallPiece>) {
        out.push(CallPiece::CallStart {
            index: self.calls.len(),
            name: name.clone(),
            text_input,
        });
        self.calls.push(ParsedCall {
            name,
            arguments: String::new(),
            text_input,
        });
        self.state = if text_input {
            State::TextInput
        } else {
            State::Arguments(JsonEnd::default())
        };
    }

    /// The trigger appeared, but what follows is no call: before any call, the trigger's text
    /// is content and reading goes on after it; after a call, the calls are over.
    fn not_a_call(&mut self, out: &mut Vec<CallPiece>) -> bool {
        if self.calls.is_empty() {
            let skip = self.format.trigger.len().min(self.buffer.len());
            let text: String = self.buffer.drain(..skip).collect();
            out.push(CallPiece::Content(text));
            self.state = State::Content;
        } else {
            self.state = State::Done;
        }
        true
    }
}

/// Where one JSON value ends in text that starts with it (after optional whitespace).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct JsonEnd {
    started: bool,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// Inside a number, `true`, `false` or `null`.
    in_literal: bool,
}

impl JsonEnd {
    /// Reads `text` on from where the last call left off: how many bytes of it belong to the
    /// value, and whether the value ended there.
    fn feed(&mut self, text: &str) -> (usize, bool) {
        for (at, c) in text.char_indices() {
            let after = at + c.len_utf8();
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if c == '\\' {
                    self.escaped = true;
                } else if c == '"' {
                    self.in_string = false;
                    if self.depth == 0 {
                        return (after, true);
                    }
                }
                continue;
            }
            if self.in_literal {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-') {
                    continue;
                }
                return (at, true);
            }
            match c {
                '"' => {
                    self.started = true;
                    self.in_string = true;
                }
                '{' | '[' => {
                    self.started = true;
                    self.depth += 1;
                }
                '}' | ']' if self.depth > 0 => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return (after, true);
                    }
                }
                c if c.is_whitespace() || self.depth > 0 => {}
                _ if !self.started => {
                    self.started = true;
                    self.in_literal = true;
                }
                _ => return (at, true),
            }
        }
        (text.len(), false)
    }
}

/// The longest common prefix of `a` and `b` (on character boundaries).
fn common_prefix<'a>(a: &'a str, b: &str) -> &'a str {
    let n = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i);
    &a[..n]
}

/// Whether `text` and `pattern` agree on their common length.
fn prefix_compatible(text: &str, pattern: &str) -> bool {
    let n = text.len().min(pattern.len());
    text.as_bytes()[..n] == pattern.as_bytes()[..n]
}

/// Length of the longest suffix of `text` that is a proper prefix of `pattern` (on character
/// boundaries).
fn partial_suffix(text: &str, pattern: &str) -> usize {
    let max = pattern.len().saturating_sub(1).min(text.len());
    (1..=max)
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n) && pattern.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}
