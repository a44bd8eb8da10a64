//! The check that keeps the elements of unique arrays distinct as they are generated (see
//! [`super`]): it follows the JSON text (containers, keys, positions, strings) through the
//! [`Shapes`], remembers the elements of each unique array it is in, and refuses a token
//! that ends an element equal to one before it, or that starts one which can only end so.
//!
//! The grammar has made the text valid JSON already, so the reading is lenient: it only
//! tells strings, containers and separators apart.

use std::sync::Arc;

use constrain_engine::{BoundTextCheck, CheckState, TextCheck, TokenIndex};
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
    fn bind(&self, index: &Arc<TokenIndex>) -> Arc<dyn BoundTextCheck> {
        Arc::new(Bound(Arc::new(Tokens {
            shapes: self.shapes.clone(),
            index: index.clone(),
        })))
    }
}

/// The check bound to a token index: what every sequence's state shares.
struct Bound(Arc<Tokens>);

struct Tokens {
    shapes: Arc<Shapes>,
    index: Arc<TokenIndex>,
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
        self.reader.settle();
        self.text.extend_from_slice(bytes);
        self.steps.push(self.text.len());
    }

    fn rollback(&mut self, steps: usize) {
        let keep = self.steps.len().saturating_sub(steps);
        self.steps.truncate(keep);
        self.text.truncate(self.steps.last().copied().unwrap_or(0));
        self.reader = Reader::default();
        self.reader.read_all(&self.bound.shapes, &self.text);
        self.reader.settle();
    }

    fn refine(&self, mask: &mut [u32]) {
        let bound = &self.bound;
        let refuse = |mask: &mut [u32], id: u32| {
            let (word, bit) = ((id >> 5) as usize, 1u32 << (id & 31));
            if mask.get(word).is_some_and(|w| w & bit != 0) {
                let refused = bound
                    .index
                    .vocabulary()
                    .token_bytes(id)
                    .is_some_and(|bytes| !self.allows(bytes));
                if refused {
                    mask[word] &= !bit;
                }
            }
        };
        match self.reader.place() {
            // Only a token with a `[` can enter a unique array, and only one with a `"` can
            // leave a string.
            Place::Outside => bound
                .index
                .text_tokens_with_byte(b'[')
                .iter()
                .for_each(|&id| refuse(mask, id)),
            Place::InString => bound
                .index
                .text_tokens_with_byte(b'"')
                .iter()
                .for_each(|&id| refuse(mask, id)),
            Place::Inside => {
                // Between elements or in one outside its strings: a separator, a closing
                // bracket or a literal's letter may end or doom an element.
                for word in 0..mask.len() {
                    let mut bits = mask[word];
                    while bits != 0 {
                        let id = (word as u32) << 5 | bits.trailing_zeros();
                        bits &= bits - 1;
                        refuse(mask, id);
                    }
                }
            }
        }
    }
}

/// Where the text stands for the tokens the check must look at.
enum Place {
    /// Outside every unique array: only a token with a `[` can enter one.
    Outside,
    /// Inside a string within a unique array: only a token with a `"` can leave it.
    InString,
    /// Within a unique array, outside strings.
    Inside,
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
        /// The elements so far, where they must be distinct.
        distinct: Option<Box<Distinct>>,
    },
}

/// The elements of an array that must keep them distinct.
#[derive(Clone, Default)]
struct Distinct {
    /// The canonical text ([`canonical`]) of each element before the last step, shared
    /// with the copies that try tokens ([`CheckState::allows`]).
    seen: Arc<FxHashSet<String>>,
    /// Those of the last step: a copy trying a token adds here, never cloning `seen`.
    added: Vec<String>,
    /// The text of the element being read, from its first byte; `None` between elements.
    element: Option<Vec<u8>>,
}

impl Distinct {
    fn has(&self, key: &str) -> bool {
        self.seen.contains(key) || self.added.iter().any(|a| a == key)
    }
}

#[derive(Clone, Default)]
enum Mode {
    /// Between values, keys and separators.
    #[default]
    Between,
    /// Inside a string; a key keeps its raw text (to find the shape of its value).
    String { key: Option<Vec<u8>>, escaped: bool },
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
    fn place(&self) -> Place {
        let inside = self.frames.iter().any(|f| {
            matches!(
                f,
                Frame::Array {
                    distinct: Some(_),
                    ..
                }
            )
        });
        match (inside, &self.mode) {
            (false, _) => Place::Outside,
            (true, Mode::String { .. }) => Place::InString,
            (true, _) => Place::Inside,
        }
    }

    /// Moves the elements of the last step into the sets they are looked up in (a set
    /// shared with a copy is cloned once here, not once per token a copy tries).
    fn settle(&mut self) {
        for frame in &mut self.frames {
            if let Frame::Array {
                distinct: Some(d), ..
            } = frame
            {
                if !d.added.is_empty() {
                    Arc::make_mut(&mut d.seen).extend(d.added.drain(..));
                }
            }
        }
    }

    /// Reads `bytes`; `false` when one ends or dooms an element equal to an earlier one.
    fn read_all(&mut self, shapes: &Shapes, bytes: &[u8]) -> bool {
        bytes.iter().all(|&b| self.read(shapes, b))
    }

    fn read(&mut self, shapes: &Shapes, b: u8) -> bool {
        match self.mode {
            Mode::String { .. } => self.in_string(b),
            Mode::Scalar if !matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') => {
                self.record(b);
                self.scalar_can_be_new()
            }
            Mode::Scalar => {
                self.mode = Mode::Between;
                self.value_ended() && self.between(shapes, b)
            }
            Mode::Between => self.between(shapes, b),
        }
    }

    fn in_string(&mut self, b: u8) -> bool {
        self.record(b);
        let Mode::String { key, escaped } = &mut self.mode else {
            return true;
        };
        let closes = !*escaped && b == b'"';
        *escaped = !*escaped && b == b'\\';
        if !closes {
            if let Some(raw) = key {
                raw.push(b);
            }
            return true;
        }
        let key = key.take();
        self.mode = Mode::Between;
        match key {
            Some(raw) => {
                if let Some(Frame::Object { key: slot, .. }) = self.frames.last_mut() {
                    *slot = Some(decode(&raw));
                }
                true
            }
            None => self.value_ended(),
        }
    }

    fn between(&mut self, shapes: &Shapes, b: u8) -> bool {
        match b {
            b' ' | b'\t' | b'\n' | b'\r' | b':' => self.record(b),
            b',' => {
                self.record(b);
                match self.frames.last_mut() {
                    Some(Frame::Object { key, .. }) => *key = None,
                    Some(Frame::Array { index, .. }) => *index += 1,
                    None => {}
                }
            }
            b'}' | b']' => {
                self.frames.pop();
                self.record(b);
                return self.value_ended();
            }
            _ => {
                self.begin_value();
                self.record(b);
                match b {
                    b'"' => {
                        let is_key =
                            matches!(self.frames.last(), Some(Frame::Object { key: None, .. }));
                        self.started = true;
                        self.mode = Mode::String {
                            key: is_key.then(Vec::new),
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
                            distinct: unique.then(Default::default),
                        });
                    }
                    _ => {
                        self.started = true;
                        self.mode = Mode::Scalar;
                        return self.scalar_can_be_new();
                    }
                }
            }
        }
        true
    }

    /// A value begins: directly in an array that keeps its elements distinct, an element.
    fn begin_value(&mut self) {
        if let Some(Frame::Array {
            distinct: Some(d), ..
        }) = self.frames.last_mut()
        {
            d.element.get_or_insert_with(Vec::new);
        }
    }

    /// Adds `b` to the element being read, if any (the innermost unique array's: no unique
    /// array stands inside an element of another).
    fn record(&mut self, b: u8) {
        let distinct = self.frames.iter_mut().rev().find_map(|f| match f {
            Frame::Array {
                distinct: Some(d), ..
            } => Some(d),
            _ => None,
        });
        if let Some(element) = distinct.and_then(|d| d.element.as_mut()) {
            element.push(b);
        }
    }

    /// A value has ended: directly in an array that keeps its elements distinct, it must
    /// differ from those before it.
    fn value_ended(&mut self) -> bool {
        let Some(Frame::Array {
            distinct: Some(d), ..
        }) = self.frames.last_mut()
        else {
            return true;
        };
        let Some(element) = d.element.take() else {
            return true;
        };
        let key = canonical(&element);
        if d.has(&key) {
            return false;
        }
        d.added.push(key);
        true
    }

    /// Whether the number or literal being read directly in a unique array can still end
    /// as a new element. A literal's first letter already decides its value, and so does
    /// the exponent of a zero (`0e`, `-0.00E+` are `0` whatever follows); every other
    /// number goes on to endlessly many values.
    fn scalar_can_be_new(&self) -> bool {
        let Some(Frame::Array {
            distinct: Some(d), ..
        }) = self.frames.last()
        else {
            return true;
        };
        let Some(element) = &d.element else {
            return true;
        };
        // The first byte past the sign, zeros and point is the exponent's: read per byte
        // tried, so it stops at the first other digit.
        let zero_exponent = element
            .iter()
            .find(|b| !matches!(b, b'0' | b'-' | b'.'))
            .is_some_and(|&b| b == b'e' || b == b'E');
        if zero_exponent && d.has("#0") {
            return false;
        }
        [("null", "n"), ("true", "t"), ("false", "f")]
            .iter()
            .all(|(word, key)| !(word.as_bytes().starts_with(element) && d.has(key)))
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
}

/// A text equal for the values JSON Schema calls equal: numbers by value (`1`, `1.0` and
/// `10e-1` alike), strings decoded, objects with their keys sorted (the last of a repeated
/// key counts, as JSON readers take it). `text` is one complete JSON value: the grammar has
/// seen to that.
fn canonical(text: &[u8]) -> String {
    let mut out = String::new();
    let mut reader = Canonical { text, at: 0 };
    if reader.value(&mut out).is_none() {
        // Not reached on JSON text; the raw text still tells different texts apart.
        out = format!("?{}", String::from_utf8_lossy(text));
    }
    out
}

struct Canonical<'a> {
    text: &'a [u8],
    at: usize,
}

impl Canonical<'_> {
    fn peek(&mut self) -> Option<u8> {
        while self
            .text
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
        self.text.get(self.at).copied()
    }

    fn value(&mut self, out: &mut String) -> Option<()> {
        match self.peek()? {
            b'n' | b't' | b'f' => {
                let word: &[u8] = match self.text[self.at] {
                    b'n' => b"null",
                    b't' => b"true",
                    _ => b"false",
                };
                self.text.get(self.at..)?.starts_with(word).then_some(())?;
                self.at += word.len();
                out.push(char::from(word[0]));
            }
            b'"' => {
                let s = self.string()?;
                out.push('"');
                out.push_str(&serde_json::to_string(&s).ok()?);
            }
            b'[' => {
                self.at += 1;
                out.push('[');
                if self.peek()? == b']' {
                    self.at += 1;
                } else {
                    loop {
                        self.value(out)?;
                        out.push(',');
                        match self.peek()? {
                            b',' => self.at += 1,
                            b']' => {
                                self.at += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                out.push(']');
            }
            b'{' => {
                self.at += 1;
                let mut members = std::collections::BTreeMap::new();
                if self.peek()? == b'}' {
                    self.at += 1;
                } else {
                    loop {
                        self.peek()?;
                        let key = self.string()?;
                        (self.peek()? == b':').then_some(())?;
                        self.at += 1;
                        let mut value = String::new();
                        self.value(&mut value)?;
                        members.insert(key, value);
                        match self.peek()? {
                            b',' => self.at += 1,
                            b'}' => {
                                self.at += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                out.push('{');
                for (key, value) in members {
                    out.push_str(&serde_json::to_string(&key).ok()?);
                    out.push(':');
                    out.push_str(&value);
                    out.push(',');
                }
                out.push('}');
            }
            _ => {
                let start = self.at;
                while self
                    .text
                    .get(self.at)
                    .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    self.at += 1;
                }
                out.push('#');
                out.push_str(&canonical_number(&self.text[start..self.at])?);
            }
        }
        Some(())
    }

    /// The string starting here, decoded.
    fn string(&mut self) -> Option<String> {
        let start = self.at;
        (self.text.get(start) == Some(&b'"')).then_some(())?;
        let mut escaped = false;
        let mut at = start + 1;
        loop {
            let b = *self.text.get(at)?;
            if !escaped && b == b'"' {
                break;
            }
            escaped = !escaped && b == b'\\';
            at += 1;
        }
        self.at = at + 1;
        serde_json::from_slice(&self.text[start..self.at]).ok()
    }
}

/// A JSON number's value as `digits` `e` `exponent`: the digits without leading or trailing
/// zeros, the exponent exact however long it is written (`0e71199187803971190389` is `0`).
fn canonical_number(text: &[u8]) -> Option<String> {
    let (negative, rest) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, text),
    };
    let (mantissa, exponent) = match rest.iter().position(|&b| b == b'e' || b == b'E') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b"0"[..]),
    };
    let (int, frac) = match mantissa.iter().position(|&b| b == b'.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, &[][..]),
    };
    let digits: Vec<u8> = int.iter().chain(frac).copied().collect();
    let first = digits.iter().position(|&d| d != b'0');
    let last = digits.iter().rposition(|&d| d != b'0');
    let (Some(first), Some(last)) = (first, last) else {
        return Some("0".into());
    };
    // value = digits[first..=last] × 10^(exponent − frac + trailing zeros)
    let trailing = (digits.len() - 1 - last) as u64;
    let (exp_negative, exp_digits) = match exponent.split_first()? {
        (b'-', d) => (true, d),
        (b'+', d) => (false, d),
        _ => (false, exponent),
    };
    let shift = trailing as i128 - frac.len() as i128;
    let exp = signed_add(
        (exp_negative, exp_digits),
        (shift < 0, shift.unsigned_abs().to_string().as_bytes()),
    );
    let sign = if negative { "-" } else { "" };
    let exp_sign = if exp.0 { "-" } else { "" };
    Some(format!(
        "{sign}{}e{exp_sign}{}",
        String::from_utf8_lossy(&digits[first..=last]),
        String::from_utf8_lossy(&exp.1)
    ))
}

/// The sum of two integers written as sign and decimal digits, in the same form (no
/// leading zeros, zero never negative): exponents may be longer than any machine integer.
fn signed_add(a: (bool, &[u8]), b: (bool, &[u8])) -> (bool, Vec<u8>) {
    let trim = |d: &[u8]| -> Vec<u8> {
        let start = d.iter().position(|&c| c != b'0').unwrap_or(d.len());
        d[start..].to_vec()
    };
    let (x, y) = (trim(a.1), trim(b.1));
    let (sign, digits) = if a.0 == b.0 {
        (a.0, add_magnitudes(&x, &y))
    } else {
        match (x.len(), &x).cmp(&(y.len(), &y)) {
            std::cmp::Ordering::Less => (b.0, sub_magnitudes(&y, &x)),
            _ => (a.0, sub_magnitudes(&x, &y)),
        }
    };
    let digits = trim(&digits);
    (
        sign && !digits.is_empty(),
        if digits.is_empty() {
            b"0".to_vec()
        } else {
            digits
        },
    )
}

fn add_magnitudes(x: &[u8], y: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(x.len().max(y.len()) + 1);
    let (mut i, mut j, mut carry) = (x.len(), y.len(), 0u8);
    while i > 0 || j > 0 || carry > 0 {
        let mut sum = carry;
        if i > 0 {
            i -= 1;
            sum += x[i] - b'0';
        }
        if j > 0 {
            j -= 1;
            sum += y[j] - b'0';
        }
        out.push(b'0' + sum % 10);
        carry = sum / 10;
    }
    out.reverse();
    out
}

/// `x − y` for `x ≥ y`.
fn sub_magnitudes(x: &[u8], y: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(x.len());
    let (mut j, mut borrow) = (y.len(), 0i8);
    for i in (0..x.len()).rev() {
        let mut d = (x[i] - b'0') as i8 - borrow;
        if j > 0 {
            j -= 1;
            d -= (y[j] - b'0') as i8;
        }
        borrow = i8::from(d < 0);
        out.push(b'0' + (d + 10 * borrow) as u8);
    }
    out.reverse();
    out
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
