//! JSON values that remember how their numbers were written.
//!
//! Benchmarks and conformance runners feed instances to a grammar as *text*, so the exact
//! serialization matters: `1.0` and `1` are different strings, and MaskBench's published
//! numbers were measured on instances written by Python's `json.dumps`. `serde_json` forgets
//! number text unless a crate-wide feature is switched on, so this module has its own small
//! reader and two writers: [`Json::to_python`] (Python's `json.dumps(value, ensure_ascii=False)`)
//! and [`Json::to_text`] (numbers as written, with chosen separators).

use std::fmt::{self, Write as _};

/// A JSON value; numbers keep their source text, objects keep their key order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, exactly as written in the source.
    Number(String),
    /// A string (escapes decoded).
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object; keys are unique (a repeated key keeps its first position and last value, as
    /// in Python and JavaScript).
    Object(Vec<(String, Json)>),
}

/// Why a JSON text could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Line of the problem, from 1.
    pub line: usize,
    /// Column of the problem (in bytes), from 1.
    pub column: usize,
    /// What is wrong.
    pub message: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for ParseError {}

/// Separators between items and between a key and its value.
#[derive(Clone, Copy, Debug)]
pub struct Separators {
    /// Between array items and object members.
    pub item: &'static str,
    /// Between an object key and its value.
    pub key: &'static str,
}

impl Separators {
    /// `,` and `:`, no spaces.
    pub const COMPACT: Separators = Separators {
        item: ",",
        key: ":",
    };
    /// `, ` and `: `, Python's default.
    pub const SPACED: Separators = Separators {
        item: ", ",
        key: ": ",
    };
}

/// Nesting depth beyond which reading stops with an error instead of exhausting the stack.
const MAX_DEPTH: usize = 512;

impl Json {
    /// Reads one JSON text (surrounding whitespace allowed).
    pub fn parse(text: &str) -> Result<Json, ParseError> {
        let mut reader = Reader {
            text: text.as_bytes(),
            pos: 0,
        };
        reader.skip_whitespace();
        let value = reader.value(0)?;
        reader.skip_whitespace();
        if reader.pos != reader.text.len() {
            return Err(reader.error("trailing characters after the value"));
        }
        Ok(value)
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The items of an array.
    pub fn as_array(&self) -> Option<&[Json]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The value of a boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The text Python's `json.dumps(json.loads(source), ensure_ascii=False)` produces.
    pub fn to_python(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Separators::SPACED, &|text, out| {
            write_python_number(text, out)
        });
        out
    }

    /// The value with numbers exactly as written and the given separators.
    pub fn to_text(&self, separators: Separators) -> String {
        let mut out = String::new();
        self.write(&mut out, separators, &|text, out| out.push_str(text));
        out
    }

    /// A `serde_json` value, numbers written as `serde_json` writes them (integers exactly,
    /// other numbers as the shortest text that reads back to the same `f64`).
    pub fn from_serde(value: &serde_json::Value) -> Json {
        use serde_json::Value;
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.to_string()),
            Value::String(s) => Json::String(s.clone()),
            Value::Array(items) => Json::Array(items.iter().map(Json::from_serde).collect()),
            Value::Object(members) => Json::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), Json::from_serde(v)))
                    .collect(),
            ),
        }
    }

    /// Converts to a `serde_json` value (numbers re-read by `serde_json`).
    pub fn to_serde(&self) -> Result<serde_json::Value, String> {
        use serde_json::Value;
        Ok(match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(text) => Value::Number(
                text.parse::<serde_json::Number>()
                    .map_err(|err| format!("number {text}: {err}"))?,
            ),
            Json::String(s) => Value::String(s.clone()),
            Json::Array(items) => {
                Value::Array(items.iter().map(Json::to_serde).collect::<Result<_, _>>()?)
            }
            Json::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), v.to_serde()?)))
                    .collect::<Result<_, String>>()?,
            ),
        })
    }

    fn write(&self, out: &mut String, seps: Separators, number: &dyn Fn(&str, &mut String)) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(true) => out.push_str("true"),
            Json::Bool(false) => out.push_str("false"),
            Json::Number(text) => number(text, out),
            Json::String(s) => write_string(s, out),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(seps.item);
                    }
                    item.write(out, seps, number);
                }
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(seps.item);
                    }
                    write_string(key, out);
                    out.push_str(seps.key);
                    value.write(out, seps, number);
                }
                out.push('}');
            }
        }
    }
}

/// A string as Python writes it with `ensure_ascii=False`: only `"`, `\` and control
/// characters are escaped.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A number as Python prints it after `json.loads`: integers exactly (`-0` becomes `0`),
/// anything with a fraction or exponent as the shortest round-tripping `float` repr.
fn write_python_number(text: &str, out: &mut String) {
    let is_float = text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'));
    if !is_float {
        out.push_str(if text == "-0" { "0" } else { text });
        return;
    }
    // The reader only lets through JSON number syntax, which always parses as f64.
    match text.parse::<f64>() {
        Ok(value) => write_python_float(value, out),
        Err(_) => out.push_str(text),
    }
}

/// Python's `repr(float)`: shortest round-trip digits, positional notation when the decimal
/// point falls within `-4 < exponent + 1 <= 16`, otherwise `d.ddde±XX`.
pub fn write_python_float(value: f64, out: &mut String) {
    if value.is_nan() {
        out.push_str("NaN");
        return;
    }
    if value.is_infinite() {
        out.push_str(if value < 0.0 { "-Infinity" } else { "Infinity" });
        return;
    }
    if value.is_sign_negative() {
        out.push('-');
    }
    // `{:e}` gives the shortest round-trip digits: "1.2345e-7", "5e0".
    let sci = format!("{:e}", value.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let point = exponent + 1; // digits before the decimal point
    if -4 < point && point <= 16 {
        if point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-point) as usize));
            out.push_str(&digits);
        } else if point as usize >= digits.len() {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', point as usize - digits.len()));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point as usize]);
            out.push('.');
            out.push_str(&digits[point as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exponent.abs());
    }
}

struct Reader<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn error(&self, message: &'static str) -> ParseError {
        let before = &self.text[..self.pos.min(self.text.len())];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        ParseError {
            line,
            column: self.pos - line_start + 1,
            message,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect_word(&mut self, word: &str, value: Json) -> Result<Json, ParseError> {
        if self.text[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("unknown literal"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        match self.peek() {
            None => Err(self.error("unexpected end of input")),
            Some(b'n') => self.expect_word("null", Json::Null),
            Some(b't') => self.expect_word("true", Json::Bool(true)),
            Some(b'f') => self.expect_word("false", Json::Bool(false)),
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b'[') => self.array(depth),
            Some(b'{') => self.object(depth),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("expected a value")),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, ParseError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Json::Array(items));
        }
        loop {
            self.skip_whitespace();
            items.push(self.value(depth + 1)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                _ => return Err(self.error("expected ',' or ']'")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, ParseError> {
        self.pos += 1;
        let mut members: Vec<(String, Json)> = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Json::Object(members));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a string key"));
            }
            let key = self.string()?;
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':'"));
            }
            self.pos += 1;
            self.skip_whitespace();
            let value = self.value(depth + 1)?;
            match members.iter_mut().find(|(k, _)| *k == key) {
                Some(member) => member.1 = value,
                None => members.push((key, value)),
            }
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Json::Object(members));
                }
                _ => return Err(self.error("expected ',' or '}'")),
            }
        }
    }

    fn number(&mut self) -> Result<Json, ParseError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error("expected a digit")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("expected a digit after '.'"));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("expected a digit in the exponent"));
            }
            self.digits();
        }
        // Only ASCII was consumed, so this slice is valid UTF-8.
        let text = String::from_utf8_lossy(&self.text[start..self.pos]).into_owned();
        Ok(Json::Number(text))
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.pos += 1; // opening quote
        let mut out = String::new();
        loop {
            let run_start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            let run = std::str::from_utf8(&self.text[run_start..self.pos])
                .map_err(|_| self.error("invalid UTF-8 in a string"))?;
            out.push_str(run);
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    out.push(self.escape()?);
                }
                Some(_) => return Err(self.error("control character in a string")),
            }
        }
    }

    fn escape(&mut self) -> Result<char, ParseError> {
        let Some(b) = self.peek() else {
            return Err(self.error("unterminated escape"));
        };
        self.pos += 1;
        Ok(match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4()?;
                if (0xD800..0xDC00).contains(&high) {
                    if !self.text[self.pos..].starts_with(b"\\u") {
                        return Err(self.error("unpaired surrogate escape"));
                    }
                    self.pos += 2;
                    let low = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return Err(self.error("unpaired surrogate escape"));
                    }
                    let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                    char::from_u32(code).ok_or_else(|| self.error("invalid escape"))?
                } else {
                    char::from_u32(high).ok_or_else(|| self.error("unpaired surrogate escape"))?
                }
            }
            _ => return Err(self.error("invalid escape")),
        })
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let digits = self
            .text
            .get(self.pos..self.pos + 4)
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u32::from_str_radix(d, 16).ok())
            .ok_or_else(|| self.error("expected four hex digits"))?;
        self.pos += 4;
        Ok(digits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn python(source: &str) -> String {
        Json::parse(source).expect("valid JSON").to_python()
    }

    /// Expected outputs were produced by CPython 3.11:
    /// `json.dumps(json.loads(source), ensure_ascii=False)`.
    #[test]
    fn numbers_are_written_like_python() {
        let cases = [
            ("1.0", "1.0"),
            ("1e5", "100000.0"),
            ("1E+5", "100000.0"),
            ("-0.0", "-0.0"),
            ("0.1", "0.1"),
            ("1e16", "1e+16"),
            ("1e15", "1000000000000000.0"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
            ("1.5e-7", "1.5e-07"),
            ("0.0001", "0.0001"),
            ("0.00001", "1e-05"),
            ("1e400", "Infinity"),
            ("-1e400", "-Infinity"),
            ("12345678901234567.0", "1.2345678901234568e+16"),
            ("5e-324", "5e-324"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("2.50", "2.5"),
            ("-0", "0"),
            ("1e22", "1e+22"),
            ("100e-2", "1.0"),
            ("0e0", "0.0"),
            ("-0.0e0", "-0.0"),
        ];
        for (source, expected) in cases {
            assert_eq!(python(source), expected, "source {source}");
        }
    }

    #[test]
    fn strings_keep_non_ascii_and_escape_controls() {
        assert_eq!(
            python(r#""\u00e9\n\u0001\u007f\u2028\\\/""#),
            "\"é\\n\\u0001\u{7f}\u{2028}\\\\/\""
        );
        assert_eq!(python(r#""\uD83D\uDCA9""#), "\"💩\"");
    }

    #[test]
    fn containers_use_python_separators_and_key_order() {
        assert_eq!(
            python(r#"{"b":1,"a":[1,[2,{}]],"c":{}}"#),
            r#"{"b": 1, "a": [1, [2, {}]], "c": {}}"#
        );
        assert_eq!(python(r#"{"a":1,"b":2,"a":3}"#), r#"{"a": 3, "b": 2}"#);
        assert_eq!(python("[]"), "[]");
    }

    #[test]
    fn text_keeps_numbers_as_written() {
        let value = Json::parse(r#" { "x" : [1.0, 1e5, -0] } "#).unwrap();
        assert_eq!(value.to_text(Separators::COMPACT), r#"{"x":[1.0,1e5,-0]}"#);
        assert_eq!(
            value.to_text(Separators::SPACED),
            r#"{"x": [1.0, 1e5, -0]}"#
        );
    }

    #[test]
    fn malformed_input_is_an_error_with_a_position() {
        for source in [
            "",
            "[1,]",
            "{\"a\" 1}",
            "01",
            "1.",
            "\"\\ud800\"",
            "\"a",
            "tru",
            "[1] x",
            "\"\u{1}\"",
        ] {
            assert!(Json::parse(source).is_err(), "{source:?} should not parse");
        }
        let err = Json::parse("[\n  1,\n  x]").unwrap_err();
        assert_eq!((err.line, err.column), (3, 3));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        assert!(Json::parse(&deep).is_err());
    }
}
