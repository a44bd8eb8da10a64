//! Stored responses, for `previous_response_id` on `/v1/responses`: each response's
//! conversation (its input after the one it continued, then its output as an assistant turn),
//! kept in memory under a budget of bytes, the oldest dropped first. Nothing survives a
//! restart. A leaf: the shared state holds it, [`crate::responses`] fills and reads it.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::api::{Content, Message};

/// The conversations of stored responses, by response id.
pub struct ResponseStore {
    /// The budget (0: nothing is stored).
    max_bytes: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_id: HashMap<String, (Arc<Vec<Message>>, usize)>,
    /// Ids, oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

impl ResponseStore {
    /// A store that keeps up to `max_bytes` of conversations (0: none).
    pub fn new(max_bytes: usize) -> ResponseStore {
        ResponseStore {
            max_bytes,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Whether responses are kept at all.
    pub fn enabled(&self) -> bool {
        self.max_bytes > 0
    }

    /// The conversation of response `id`, if it is still kept.
    pub fn get(&self, id: &str) -> Option<Arc<Vec<Message>>> {
        self.inner.lock().by_id.get(id).map(|(c, _)| c.clone())
    }

    /// Keeps `conversation` as response `id`'s, dropping the oldest until it fits; one larger
    /// than the whole budget is not kept.
    pub fn put(&self, id: String, conversation: Vec<Message>) {
        let size = size(&conversation);
        if size > self.max_bytes {
            return;
        }
        let mut inner = self.inner.lock();
        while inner.bytes + size > self.max_bytes {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            if let Some((_, freed)) = inner.by_id.remove(&oldest) {
                inner.bytes -= freed;
            }
        }
        inner.bytes += size;
        inner.order.push_back(id.clone());
        inner.by_id.insert(id, (Arc::new(conversation), size));
    }

    /// Responses kept.
    pub fn len(&self) -> usize {
        self.inner.lock().by_id.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The bytes a conversation holds: its texts, plus a fixed cost per message and per call.
fn size(conversation: &[Message]) -> usize {
    const OVERHEAD: usize = 64;
    conversation
        .iter()
        .map(|m| {
            let text = match &m.content {
                Some(Content::Text(t)) => t.len(),
                Some(Content::Parts(parts)) => parts
                    .iter()
                    .map(|p| p.text.as_ref().map_or(0, String::len))
                    .sum(),
                None => 0,
            };
            let calls: usize = m
                .tool_calls
                .iter()
                .flatten()
                .map(|c| {
                    OVERHEAD
                        + c.id.as_ref().map_or(0, String::len)
                        + c.function.name.len()
                        + c.function.arguments.len()
                })
                .sum();
            OVERHEAD + m.role.len() + text + calls + m.tool_call_id.as_ref().map_or(0, String::len)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(text: &str) -> Vec<Message> {
        vec![Message {
            role: "user".into(),
            content: Some(Content::Text(text.into())),
            name: None,
            tool_calls: None,
            tool_call_id: None,
        }]
    }

    #[test]
    fn the_oldest_go_first_and_the_budget_holds() {
        let one = size(&turn(&"x".repeat(100)));
        let store = ResponseStore::new(one * 3);
        for i in 0..5 {
            store.put(format!("resp_{i}"), turn(&"x".repeat(100)));
        }
        assert_eq!(store.len(), 3);
        assert!(store.get("resp_0").is_none() && store.get("resp_1").is_none());
        assert!(store.get("resp_4").is_some());
        // Larger than the whole budget: not kept, and nothing else is dropped for it.
        store.put("big".into(), turn(&"x".repeat(one * 4)));
        assert!(store.get("big").is_none());
        assert_eq!(store.len(), 3);
    }

    #[test]
    fn a_store_of_zero_bytes_keeps_nothing() {
        let store = ResponseStore::new(0);
        assert!(!store.enabled());
        store.put("resp_1".into(), turn("hi"));
        assert!(store.is_empty());
    }
}
