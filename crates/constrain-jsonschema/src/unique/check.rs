//! The check that keeps the strings of unique arrays distinct as they are generated (see
//! [`super`]): it follows the JSON text (containers, keys, positions, strings) through the
//! [`Shapes`], remembers the elements of each unique array it is in, and refuses a token
//! that closes an element equal to one before it.
//!
//! The grammar has made the text valid JSON already, so the reading is lenient: it only
//! tells strings, containers and separators apart.

use std::sync::Arc;

use constrain_engine::{BoundTextCheck, CheckState, TextCheck};
use constrain_vocab::{TokenKind, Vocabulary};
use rustc_hash::FxHashSet;

use super::{Shapes, NONE};

/// [`TextCheck`] of a schema's unique arrays.
#[derive(Debug)]
pub(crate) struct UniqueCheck {
    shapes: Arc<Shapes>,
}

impl UniqueCheck {
    pub(crate) fn new(shapes: Shapes) -> UniqueCheck {
        UniqueCheck {
            shapes: Arc::new(shapes),
        }
    }
}

impl TextCheck for UniqueCheck {
    fn bind(&self, vocabulary: &Arc<Vocabulary>) -> Arc<dyn BoundTextCheck> {
        // Only a token with a quote can close an element, and outside a unique array only
        // one with a bracket can enter one.
        let mut quotes = Vec::new();
        let mut brackets = Vec::new();
        for (id, bytes) in text_tokens(vocabulary) {
            if bytes.contains(&b'"') {
                quotes.push(id);
            }
            if bytes.contains(&b'[') {
                brackets.push(id);
            }
        }
        Arc::new(Bound(Arc::new(Tokens {
            shapes: self.shapes.clone(),
            vocabulary: vocabulary.clone(),
            quotes,
            brackets,
        })))
    }
}

fn text_tokens(vocabulary: &Vocabulary) -> impl Iterator<Item = (u32, &[u8])> {
    (0..vocabulary.logits_width() as u32).filter_map(move |id| {
        match (vocabulary.kind(id), vocabulary.token_bytes(id)) {
            (Some(TokenKind::Text), Some(bytes)) => Some((id, bytes)),
            _ => None,
        }
    })
}

/// The check bound to a vocabulary: what every sequence's state shares.
struct Bound(Arc<Tokens>);

struct Tokens {
    shapes: Arc<Shapes>,
    vocabulary: Arc<Vocabulary>,
    /// Text tokens holding a `"`.
    quotes: Vec<u32>,
    /// Text tokens holding a `[`.
    brackets: Vec<u32>,
}

impl BoundTextCheck for Bound {
    fn start(&self) -> Box<dyn CheckState> {
        Box::new(State {
            bound: self.0.clone(),
            reader: Reader::default(),
            text: Vec::new(),
            steps: Vec::new(),
        })
    }
}

/// One sequence's place in the text.
#[derive(Clone)]
struct State {
    bound: Arc<Tokens>,
    reader: Reader,
    /// Everything read, and where each step ended (to roll back by reading it again).
    text: Vec<u8>,
    steps: Vec<usize>,
}

impl CheckState for State {
    fn boxed_clone(&self) -> Box<dyn CheckState> {
        Box::new(self.clone())
    }

    fn allows(&self, bytes: &[u8]) -> bool {
        let mut reader = self.reader.clone();
        reader.read_all(&self.bound.shapes, bytes)
    }

    fn accept(&mut self, bytes: &[u8]) {
        self.reader.read_all(&self.bound.shapes, bytes);
        self.text.extend_from_slice(bytes);
        self.steps.push(self.text.len());
    }

    fn rollback(&mut self, steps: usize) {
        let keep = self.steps.len().saturating_sub(steps);
        self.steps.truncate(keep);
        self.text.truncate(self.steps.last().copied().unwrap_or(0));
        self.reader = Reader::default();
        self.reader.read_all(&self.bound.shapes, &self.text);
    }

    fn refine(&self, mask: &mut [u32]) {
        let candidates = if self.reader.in_unique_array() {
            &self.bound.quotes
        } else {
            &self.bound.brackets
        };
        for &id in candidates {
            let (word, bit) = ((id >> 5) as usize, 1u32 << (id & 31));
            if mask.get(word).is_none_or(|w| w & bit == 0) {
                continue;
            }
            let Some(bytes) = self.bound.vocabulary.token_bytes(id) else {
                continue;
            };
            if !self.allows(bytes) {
                mask[word] &= !bit;
            }
        }
    }
}

/// A container the text is in.
#[derive(Clone)]
enum Frame {
    Object {
        shape: u32,
        /// The key of the member being read, once its closing quote is read.
        key: Option<String>,
    },
    Array {
        shape: u32,
        /// The position of the element being read.
        index: usize,
        /// The elements so far, decoded, where they must be distinct.
        seen: Option<Arc<FxHashSet<String>>>,
    },
}

/// What a string being read is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Key,
    Element,
    Other,
}

#[derive(Clone, Default)]
enum Mode {
    /// Between values, keys and separators.
    #[default]
    Between,
    /// Inside a string: its raw text so far (kept for keys and elements).
    String {
        role: Role,
        raw: Vec<u8>,
        escaped: bool,
    },
    /// Inside a number or a literal.
    Scalar,
}

#[derive(Clone, Default)]
struct Reader {
    frames: Vec<Frame>,
    mode: Mode,
    /// The document's value has begun.
    started: bool,
}

impl Reader {
    /// Whether the text is inside a unique array: between its elements or in one.
    fn in_unique_array(&self) -> bool {
        matches!(self.frames.last(), Some(Frame::Array { seen: Some(_), .. }))
    }

    /// Reads `bytes`; `false` when one closes an element equal to an earlier one.
    fn read_all(&mut self, shapes: &Shapes, bytes: &[u8]) -> bool {
        bytes.iter().all(|&b| self.read(shapes, b))
    }

    fn read(&mut self, shapes: &Shapes, b: u8) -> bool {
        match &mut self.mode {
            Mode::String { role, raw, escaped } => {
                if *escaped {
                    *escaped = false;
                } else if b == b'\\' {
                    *escaped = true;
                } else if b == b'"' {
                    let (role, raw) = (*role, std::mem::take(raw));
                    self.mode = Mode::Between;
                    return self.end_string(role, &raw);
                }
                if *role != Role::Other {
                    raw.push(b);
                }
                true
            }
            Mode::Scalar => {
                if matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                    self.mode = Mode::Between;
                    self.between(shapes, b);
                }
                true
            }
            Mode::Between => {
                self.between(shapes, b);
                true
            }
        }
    }

    fn between(&mut self, shapes: &Shapes, b: u8) {
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'"' => {
                let role = match self.frames.last() {
                    Some(Frame::Object { key: None, .. }) => Role::Key,
                    Some(Frame::Array { seen: Some(_), .. }) => Role::Element,
                    _ => Role::Other,
                };
                self.started = true;
                self.mode = Mode::String {
                    role,
                    raw: Vec::new(),
                    escaped: false,
                };
            }
            b'{' => {
                let shape = self.value_shape(shapes);
                self.frames.push(Frame::Object { shape, key: None });
            }
            b'[' => {
                let shape = self.value_shape(shapes);
                let unique = shape != NONE && shapes.shapes[shape as usize].unique;
                self.frames.push(Frame::Array {
                    shape,
                    index: 0,
                    seen: unique.then(Default::default),
                });
            }
            b'}' | b']' => {
                self.frames.pop();
            }
            b',' => match self.frames.last_mut() {
                Some(Frame::Object { key, .. }) => *key = None,
                Some(Frame::Array { index, .. }) => *index += 1,
                None => {}
            },
            b':' => {}
            _ => {
                self.started = true;
                self.mode = Mode::Scalar;
            }
        }
    }

    /// The shape of the value beginning here.
    fn value_shape(&mut self, shapes: &Shapes) -> u32 {
        let shape = match self.frames.last() {
            None if !self.started => 0,
            None => NONE,
            Some(Frame::Object { shape, key }) => match (shape, key) {
                (&NONE, _) | (_, None) => NONE,
                (&s, Some(k)) => {
                    let s = &shapes.shapes[s as usize];
                    s.keys.get(k).copied().unwrap_or(s.other_key)
                }
            },
            Some(Frame::Array { shape, index, .. }) => match *shape {
                NONE => NONE,
                s => {
                    let s = &shapes.shapes[s as usize];
                    s.prefix.get(*index).copied().unwrap_or(s.items)
                }
            },
        };
        self.started = true;
        shape
    }

    /// A string's closing quote: a key is remembered for its value, an element of a unique
    /// array must differ from those before it.
    fn end_string(&mut self, role: Role, raw: &[u8]) -> bool {
        match role {
            Role::Other => true,
            Role::Key => {
                let key = decode(raw);
                if let Some(Frame::Object { key: slot, .. }) = self.frames.last_mut() {
                    *slot = Some(key);
                }
                true
            }
            Role::Element => {
                let value = decode(raw);
                match self.frames.last_mut() {
                    Some(Frame::Array {
                        seen: Some(seen), ..
                    }) => {
                        if seen.contains(&value) {
                            return false;
                        }
                        Arc::make_mut(seen).insert(value);
                        true
                    }
                    _ => true,
                }
            }
        }
    }
}

/// The value of a JSON string's text (between its quotes); the raw text itself if it is
/// not valid (the grammar never lets one through).
fn decode(raw: &[u8]) -> String {
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted)
        .unwrap_or_else(|_| String::from_utf8_lossy(raw).into_owned())
}
