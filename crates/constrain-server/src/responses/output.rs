//! A response's output items (`reasoning` with `reasoning_text`, `message` with `output_text`,
//! `function_call`), from a finished
//! answer ([`items`]) or as it streams ([`Writer`]: OpenAI's typed events, numbered).
//!
//! Both read the model's text the same way, so that a streamed response ends with the output
//! its whole form has: the text before the first call is a message (left out when it is blank
//! and calls follow), each complete call a `function_call` item, and the last item of an
//! answer cut by `max_output_tokens` is `incomplete`.

use serde_json::{json, Value};

use crate::api::{Content, FunctionCall, Message, ToolCall};
use crate::output::{self as answer, Piece};
use crate::reply::new_id;
use constrain::{CallPiece, ToolCallFormat};

/// An item's `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Still being written (streamed events only).
    InProgress,
    /// Complete.
    Completed,
    /// Cut by the token limit.
    Incomplete,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
            Status::Incomplete => "incomplete",
        }
    }
}

/// One output item.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A reasoning model's thinking.
    Reasoning {
        /// `rs_...`.
        id: String,
        /// The thinking.
        text: String,
        /// Its status.
        status: Status,
    },
    /// The assistant's text.
    Message {
        /// `msg_...`.
        id: String,
        /// The text.
        text: String,
        /// Its status.
        status: Status,
    },
    /// A call of a function tool.
    Call {
        /// `fc_...`: the item's id.
        id: String,
        /// `call_...`: what the call's output is sent back with.
        call_id: String,
        /// The function.
        name: String,
        /// The arguments, JSON text.
        arguments: String,
        /// Its status.
        status: Status,
    },
}

impl Item {
    fn message(text: String) -> Item {
        Item::Message {
            id: new_id("msg_"),
            text,
            status: Status::Completed,
        }
    }

    fn reasoning(text: String) -> Item {
        Item::Reasoning {
            id: new_id("rs_"),
            text,
            status: Status::Completed,
        }
    }

    fn call(name: String, arguments: String) -> Item {
        Item::Call {
            id: new_id("fc_"),
            call_id: new_id("call_"),
            name,
            arguments,
            status: Status::Completed,
        }
    }

    fn set_status(&mut self, to: Status) {
        match self {
            Item::Reasoning { status, .. }
            | Item::Message { status, .. }
            | Item::Call { status, .. } => *status = to,
        }
    }

    fn id(&self) -> &str {
        match self {
            Item::Reasoning { id, .. } | Item::Message { id, .. } | Item::Call { id, .. } => id,
        }
    }

    /// The item as the API spells it.
    pub fn to_json(&self) -> Value {
        match self {
            Item::Reasoning { id, text, status } => json!({
                "id": id, "type": "reasoning", "status": status.name(), "summary": [],
                "content": [{"type": "reasoning_text", "text": text}],
            }),
            Item::Message { id, text, status } => json!({
                "id": id, "type": "message", "status": status.name(), "role": "assistant",
                "content": [text_part(text)],
            }),
            Item::Call {
                id,
                call_id,
                name,
                arguments,
                status,
            } => json!({
                "id": id, "type": "function_call", "status": status.name(),
                "call_id": call_id, "name": name, "arguments": arguments,
            }),
        }
    }
}

fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

/// The output of an answer: `text` as generated, calls read from it in `format` (`None`: no
/// tools), thinking first when `reasoning`, `cut` when the token limit ended it.
pub fn items(text: &str, format: Option<&ToolCallFormat>, reasoning: bool, cut: bool) -> Vec<Item> {
    let answer::Read {
        reasoning: thought,
        content,
        calls,
    } = answer::read(text, format, reasoning);
    let mut items = Vec::new();
    let thought_given = thought.is_some();
    if let Some(thought) = thought {
        items.push(Item::reasoning(thought));
    }
    if !content.trim().is_empty() || (calls.is_empty() && !thought_given) {
        items.push(Item::message(content));
    }
    items.extend(calls.into_iter().map(|c| Item::call(c.name, c.arguments)));
    if cut {
        if let Some(last) = items.last_mut() {
            last.set_status(Status::Incomplete);
        }
    }
    items
}

/// The output as the assistant turn of a chat history (what a stored response adds to its
/// conversation).
pub fn as_message(items: &[Item]) -> Message {
    let mut text = String::new();
    let mut calls = Vec::new();
    for item in items {
        match item {
            // Earlier turns' thinking is not shown again, as reasoning models' templates do.
            Item::Reasoning { .. } => {}
            Item::Message { text: t, .. } => text.push_str(t),
            Item::Call {
                call_id,
                name,
                arguments,
                ..
            } => calls.push(ToolCall {
                id: Some(call_id.clone()),
                kind: Some("function".into()),
                function: FunctionCall {
                    name: name.clone(),
                    arguments: arguments.clone(),
                },
                custom: None,
            }),
        }
    }
    Message {
        role: "assistant".into(),
        content: Some(Content::Text(text)),
        name: None,
        tool_calls: (!calls.is_empty()).then_some(calls),
        tool_call_id: None,
    }
}

/// The streamed events of one answer: each event numbered (`sequence_number`) in the order
/// OpenAI sends them: an item added, its content part added, its deltas, its text done, its
/// part done, the item done; a call's argument deltas and their done between its added and
/// done.
#[derive(Default)]
pub struct Writer {
    sequence: u64,
    /// Items finished, in order.
    done: Vec<Item>,
    /// The item being streamed.
    open: Option<Item>,
    /// Blank text before anything else: the start of a message, or nothing if a call follows.
    held: String,
    calls: usize,
}

impl Writer {
    /// A writer before any event.
    pub fn new() -> Writer {
        Writer::default()
    }

    /// Event `kind` with `fields`, numbered.
    pub fn event(&mut self, kind: &str, mut fields: Value) -> Value {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        fields
    }

    /// The events of the next piece of the answer.
    pub fn push(&mut self, piece: Piece) -> Vec<Value> {
        let mut events = Vec::new();
        match piece {
            Piece::Reasoning(text) => {
                if !matches!(self.open, Some(Item::Reasoning { .. })) {
                    self.close(Status::Completed, &mut events);
                    let mut item = Item::reasoning(String::new());
                    item.set_status(Status::InProgress);
                    let added = json!({"output_index": self.done.len(), "item": item.to_json()});
                    events.push(self.event("response.output_item.added", added));
                    self.open = Some(item);
                }
                if let Some(Item::Reasoning {
                    id, text: so_far, ..
                }) = &mut self.open
                {
                    so_far.push_str(&text);
                    let fields = json!({"item_id": id, "output_index": self.done.len(),
                                        "content_index": 0, "delta": text});
                    events.push(self.event("response.reasoning_text.delta", fields));
                }
            }
            Piece::Answer(CallPiece::Content(text)) => {
                if let Some(Item::Message { text: so_far, .. }) = &mut self.open {
                    so_far.push_str(&text);
                    events.push(self.delta(text));
                } else if self.calls == 0 {
                    self.held.push_str(&text);
                    if !self.held.trim().is_empty() {
                        let text = std::mem::take(&mut self.held);
                        self.close(Status::Completed, &mut events);
                        self.open_message(&mut events);
                        if let Some(Item::Message { text: so_far, .. }) = &mut self.open {
                            so_far.push_str(&text);
                        }
                        events.push(self.delta(text));
                    }
                }
            }
            Piece::Answer(CallPiece::CallStart { name, .. }) => {
                self.close(Status::Completed, &mut events);
                self.held.clear();
                self.calls += 1;
                let mut call = Item::call(name, String::new());
                call.set_status(Status::InProgress);
                let added = json!({"output_index": self.done.len(), "item": call.to_json()});
                events.push(self.event("response.output_item.added", added));
                self.open = Some(call);
            }
            Piece::Answer(CallPiece::CallArguments { fragment, .. }) => {
                if let Some(Item::Call { id, arguments, .. }) = &mut self.open {
                    arguments.push_str(&fragment);
                    let fields = json!({"item_id": id, "output_index": self.done.len(),
                                        "delta": fragment});
                    events.push(self.event("response.function_call_arguments.delta", fields));
                }
            }
        }
        events
    }

    /// The events that end the output (`cut`: by the token limit); [`Writer::output`] is then
    /// the output [`items`] gives for the same text.
    pub fn finish(&mut self, cut: bool) -> Vec<Value> {
        let mut events = Vec::new();
        if self.open.is_none() && self.done.is_empty() {
            // No call and no text that is not blank: the answer is this (blank) message.
            let text = std::mem::take(&mut self.held);
            self.open_message(&mut events);
            if !text.is_empty() {
                if let Some(Item::Message { text: so_far, .. }) = &mut self.open {
                    so_far.push_str(&text);
                }
                events.push(self.delta(text));
            }
        }
        let last = if cut {
            Status::Incomplete
        } else {
            Status::Completed
        };
        self.close(last, &mut events);
        events
    }

    /// The items finished so far.
    pub fn output(&self) -> &[Item] {
        &self.done
    }

    fn open_message(&mut self, events: &mut Vec<Value>) {
        let mut message = Item::message(String::new());
        message.set_status(Status::InProgress);
        let index = self.done.len();
        let added = json!({"output_index": index, "item": message.to_json()});
        events.push(self.event("response.output_item.added", added));
        let part = json!({"item_id": message.id(), "output_index": index, "content_index": 0,
                          "part": text_part("")});
        events.push(self.event("response.content_part.added", part));
        self.open = Some(message);
    }

    fn delta(&mut self, text: String) -> Value {
        let id = self
            .open
            .as_ref()
            .map(Item::id)
            .unwrap_or_default()
            .to_string();
        let fields = json!({"item_id": id, "output_index": self.done.len(), "content_index": 0,
                            "delta": text, "logprobs": []});
        self.event("response.output_text.delta", fields)
    }

    /// Ends the open item, if any, with `status`.
    fn close(&mut self, status: Status, events: &mut Vec<Value>) {
        let Some(mut item) = self.open.take() else {
            return;
        };
        item.set_status(status);
        let index = self.done.len();
        match &item {
            Item::Reasoning { id, text, .. } => {
                let done = json!({"item_id": id, "output_index": index, "content_index": 0,
                                  "text": text});
                events.push(self.event("response.reasoning_text.done", done));
            }
            Item::Message { id, text, .. } => {
                let done = json!({"item_id": id, "output_index": index, "content_index": 0,
                                  "text": text, "logprobs": []});
                events.push(self.event("response.output_text.done", done));
                let part = json!({"item_id": id, "output_index": index, "content_index": 0,
                                  "part": text_part(text)});
                events.push(self.event("response.content_part.done", part));
            }
            Item::Call {
                id,
                name,
                arguments,
                ..
            } => {
                let done = json!({"item_id": id, "output_index": index, "name": name,
                                  "arguments": arguments});
                events.push(self.event("response.function_call_arguments.done", done));
            }
        }
        let done = json!({"output_index": index, "item": item.to_json()});
        events.push(self.event("response.output_item.done", done));
        self.done.push(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::OutputReader;

    /// What matters of an item for comparing outputs: everything but its ids.
    fn shape(items: &[Item]) -> Vec<Value> {
        items
            .iter()
            .map(|i| {
                let mut v = i.to_json();
                v["id"] = Value::Null;
                if v.get("call_id").is_some() {
                    v["call_id"] = Value::Null;
                }
                v
            })
            .collect()
    }

    /// Streams `text` in pieces of `step` bytes (at character boundaries).
    fn streamed(text: &str, tools_active: bool, cut: bool, step: usize) -> (Vec<Value>, Vec<Item>) {
        let mut writer = Writer::new();
        let format = ToolCallFormat::generic();
        let mut streamer = OutputReader::new(tools_active.then_some(&format), false);
        let mut events = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let mut at = step.min(rest.len());
            while !rest.is_char_boundary(at) {
                at += 1;
            }
            let (chunk, tail) = rest.split_at(at);
            rest = tail;
            streamer
                .push(chunk)
                .into_iter()
                .for_each(|p| events.extend(writer.push(p)));
        }
        for p in streamer.finish() {
            events.extend(writer.push(p));
        }
        events.extend(writer.finish(cut));
        (events, writer.output().to_vec())
    }

    const CALL: &str = r#"<tool_call>{"name": "get", "arguments": {"c": 1}}</tool_call>"#;

    #[test]
    fn streamed_output_is_the_whole_output() {
        let two_calls = format!("{CALL}\n{CALL}");
        let text_then_call = format!("Let me see.\n{CALL}");
        let blank_then_call = format!("\n {CALL}");
        let cases: Vec<(&str, bool, bool)> = vec![
            ("Hello there, caf\u{e9}.", false, false),
            ("", false, false),
            ("cut sho", false, true),
            ("  ", true, false),
            ("no call <tool_ca", true, true),
            (CALL, true, false),
            (&two_calls, true, false),
            (&text_then_call, true, false),
            (&blank_then_call, true, false),
        ];
        for (text, tools_active, cut) in cases {
            let whole = items(
                text,
                tools_active.then_some(&ToolCallFormat::generic()),
                false,
                cut,
            );
            for step in [1, 3, 7, 1000] {
                let (events, output) = streamed(text, tools_active, cut, step);
                assert_eq!(shape(&output), shape(&whole), "{text:?} in steps of {step}");
                let numbers: Vec<u64> = events
                    .iter()
                    .filter_map(|e| e["sequence_number"].as_u64())
                    .collect();
                assert_eq!(numbers, (0..events.len() as u64).collect::<Vec<_>>());
                let deltas: String = events
                    .iter()
                    .filter(|e| e["type"] == "response.output_text.delta")
                    .filter_map(|e| e["delta"].as_str())
                    .collect();
                let message: String = whole
                    .iter()
                    .filter_map(|i| match i {
                        Item::Message { text, .. } => Some(text.as_str()),
                        Item::Call { .. } | Item::Reasoning { .. } => None,
                    })
                    .collect();
                assert_eq!(deltas, message);
            }
        }
    }

    #[test]
    fn a_message_streams_in_openais_order() {
        let (events, _) = streamed("Hi there", false, false, 3);
        let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
        assert_eq!(
            kinds,
            [
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
            ]
        );
        assert_eq!(events[0]["item"]["status"], "in_progress");
        assert_eq!(events[7]["item"]["status"], "completed");
        assert_eq!(events[7]["item"]["content"][0]["text"], "Hi there");
    }

    #[test]
    fn calls_stream_their_arguments_and_end_with_them_whole() {
        let text = format!("{CALL}\n{CALL}");
        let (events, output) = streamed(&text, true, false, 5);
        let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
        assert_eq!(kinds.first(), Some(&"response.output_item.added"));
        assert_eq!(
            kinds
                .iter()
                .filter(|k| **k == "response.function_call_arguments.done")
                .count(),
            2
        );
        assert!(!kinds.contains(&"response.output_text.delta"));
        let done: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "response.function_call_arguments.done")
            .collect();
        assert_eq!(done[1]["arguments"], "{\"c\": 1}");
        assert_eq!(done[1]["output_index"], 1);
        assert_eq!(output.len(), 2);
        let message = as_message(&output);
        assert_eq!(message.tool_calls.map(|c| c.len()), Some(2));
    }
}
