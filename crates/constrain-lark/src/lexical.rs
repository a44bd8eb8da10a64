//! The tokens of Lark's grammar notation.
//!
//! Spaces, tabs, `//` and `#` comments and `\` line continuations separate tokens. A line
//! break ends a definition unless the next line that is not blank or a comment starts with
//! `|`: then it continues the alternatives (one [`Tok::Or`] stands for both).

use crate::error::{ErrorKind, LarkError};

/// One token of the grammar text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// A lowercase name (a rule or a template).
    Rule(String),
    /// An uppercase name (a terminal).
    Terminal(String),
    /// `!`, `?`, `!?` or `?!` before a rule name.
    Modifier(String),
    /// A string literal as written, quotes and flag included.
    Str(String),
    /// A regular expression literal as written, slashes and flags included.
    Regexp(String),
    /// An integer, possibly signed.
    Number(String),
    /// `%` and the word after it.
    Directive(String),
    /// `%json {...}`: the JSON text of the schema, braces included.
    Json(String),
    /// `*`, `+` or `?` after an item.
    Op(char),
    Colon,
    Comma,
    Or,
    Dot,
    DotDot,
    Tilde,
    Arrow,
    LPar,
    RPar,
    LBra,
    RBra,
    LBrace,
    RBrace,
    /// The end of a definition or statement.
    Newline,
    /// The end of the text.
    End,
}

impl Tok {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Tok::Rule(s) | Tok::Terminal(s) | Tok::Str(s) | Tok::Regexp(s) | Tok::Number(s) => {
                format!("'{s}'")
            }
            Tok::Modifier(s) => format!("'{s}'"),
            Tok::Directive(s) => format!("'%{s}'"),
            Tok::Json(_) => "'%json'".into(),
            Tok::Op(c) => format!("'{c}'"),
            Tok::Colon => "':'".into(),
            Tok::Comma => "','".into(),
            Tok::Or => "'|'".into(),
            Tok::Dot => "'.'".into(),
            Tok::DotDot => "'..'".into(),
            Tok::Tilde => "'~'".into(),
            Tok::Arrow => "'->'".into(),
            Tok::LPar => "'('".into(),
            Tok::RPar => "')'".into(),
            Tok::LBra => "'['".into(),
            Tok::RBra => "']'".into(),
            Tok::LBrace => "'{'".into(),
            Tok::RBrace => "'}'".into(),
            Tok::Newline => "end of line".into(),
            Tok::End => "end of input".into(),
        }
    }
}

/// The tokens of `text`, each with its byte offset.
pub(crate) fn tokenize(text: &str) -> Result<Vec<(Tok, usize)>, LarkError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |kind, at| LarkError::at(kind, text, at);
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        match c {
            b' ' | b'\t' | b'\r' => i += 1,
            b'\\' => {
                // A line continuation: `\`, spaces, line break.
                let mut j = i + 1;
                while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\r') {
                    j += 1;
                }
                if bytes.get(j) != Some(&b'\n') {
                    return Err(err(unexpected(text, i, "a definition"), i));
                }
                i = j + 1;
            }
            b'#' => i = line_end(bytes, i),
            b'/' if bytes.get(i + 1) == Some(&b'/') => i = line_end(bytes, i),
            b'\n' => {
                i = skip_blank_lines(bytes, i);
                if bytes.get(i) == Some(&b'|') {
                    out.push((Tok::Or, i));
                    i += 1;
                } else {
                    out.push((Tok::Newline, start));
                }
            }
            b'"' => {
                let mut j = i + 1;
                loop {
                    match bytes.get(j) {
                        None | Some(b'\n') => return Err(err(ErrorKind::UnterminatedString, i)),
                        Some(b'\\') if matches!(bytes.get(j + 1), Some(b'"' | b'\\')) => j += 2,
                        Some(b'"') => break,
                        Some(_) => j += 1,
                    }
                }
                j += 1;
                if bytes.get(j) == Some(&b'i') {
                    j += 1;
                }
                out.push((Tok::Str(text[i..j].to_string()), i));
                i = j;
            }
            b'/' => {
                let mut j = i + 1;
                loop {
                    match bytes.get(j) {
                        None => return Err(err(ErrorKind::UnterminatedRegex, i)),
                        Some(b'\\') if matches!(bytes.get(j + 1), Some(b'/' | b'\\')) => j += 2,
                        Some(b'/') => break,
                        Some(_) => j += 1,
                    }
                }
                j += 1;
                while j < bytes.len() && b"imslux".contains(&bytes[j]) {
                    j += 1;
                }
                out.push((Tok::Regexp(text[i..j].to_string()), i));
                i = j;
            }
            b'%' => {
                let j = word_end(bytes, i + 1);
                if &text[i + 1..j] == "json" {
                    let end = json_object_end(bytes, j).ok_or_else(|| {
                        err(
                            ErrorKind::Json(
                                "%json must be followed by a JSON object in braces".into(),
                            ),
                            i,
                        )
                    })?;
                    let open = j + text[j..].find('{').unwrap_or(0);
                    out.push((Tok::Json(text[open..end].to_string()), i));
                    i = end;
                } else {
                    out.push((Tok::Directive(text[i + 1..j].to_string()), i));
                    i = j;
                }
            }
            b'!' | b'?' => {
                let mut j = i + 1;
                if c == b'!' && bytes.get(j) == Some(&b'?')
                    || c == b'?' && bytes.get(j) == Some(&b'!')
                {
                    j += 1;
                }
                let before_rule = bytes
                    .get(j)
                    .is_some_and(|&b| b == b'_' || b.is_ascii_lowercase());
                if before_rule {
                    out.push((Tok::Modifier(text[i..j].to_string()), i));
                    i = j;
                } else if c == b'?' {
                    out.push((Tok::Op('?'), i));
                    i += 1;
                } else {
                    return Err(err(unexpected(text, i, "an expression"), i));
                }
            }
            b'*' | b'+' if !(c == b'+' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) => {
                out.push((Tok::Op(c as char), i));
                i += 1;
            }
            b'0'..=b'9' | b'+' | b'-'
                if c != b'-' || bytes.get(i + 1).is_some_and(u8::is_ascii_digit) =>
            {
                let mut j = i + 1;
                while j < bytes.len() && bytes[j].is_ascii_digit() {
                    j += 1;
                }
                out.push((Tok::Number(text[i..j].to_string()), i));
                i = j;
            }
            b'-' if bytes.get(i + 1) == Some(&b'>') => {
                out.push((Tok::Arrow, i));
                i += 2;
            }
            b'.' if bytes.get(i + 1) == Some(&b'.') => {
                out.push((Tok::DotDot, i));
                i += 2;
            }
            b'_' | b'a'..=b'z' | b'A'..=b'Z' => {
                let j = word_end(bytes, i);
                let word = &text[i..j];
                let body = word.trim_start_matches('_');
                let tok = if word.len() - body.len() > 1 || body.is_empty() {
                    return Err(err(unexpected(text, i, "a rule or terminal name"), i));
                } else if body.bytes().all(|b| !b.is_ascii_uppercase()) {
                    Tok::Rule(word.to_string())
                } else if body.bytes().all(|b| !b.is_ascii_lowercase()) {
                    Tok::Terminal(word.to_string())
                } else {
                    return Err(err(
                        ErrorKind::Unexpected {
                            found: format!("'{word}'"),
                            expected: "a rule name (lowercase) or a terminal name (uppercase)",
                        },
                        i,
                    ));
                };
                out.push((tok, i));
                i = j;
            }
            _ => {
                let tok = match c {
                    b':' => Tok::Colon,
                    b',' => Tok::Comma,
                    b'|' => Tok::Or,
                    b'.' => Tok::Dot,
                    b'~' => Tok::Tilde,
                    b'(' => Tok::LPar,
                    b')' => Tok::RPar,
                    b'[' => Tok::LBra,
                    b']' => Tok::RBra,
                    b'{' => Tok::LBrace,
                    b'}' => Tok::RBrace,
                    b'<' => {
                        return Err(err(
                            ErrorKind::Unsupported {
                                construct: "a special token '<...>'".into(),
                                why: "token ids depend on the vocabulary; use a GBNF grammar with named tokens",
                            },
                            i,
                        ))
                    }
                    _ => return Err(err(unexpected(text, i, "a definition or an expression"), i)),
                };
                out.push((tok, i));
                i += 1;
            }
        }
    }
    out.push((Tok::End, text.len()));
    Ok(out)
}

fn unexpected(text: &str, at: usize, expected: &'static str) -> ErrorKind {
    ErrorKind::Unexpected {
        found: text[at..]
            .chars()
            .next()
            .map_or("end of input".into(), |c| format!("{c:?}")),
        expected,
    }
}

fn line_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i] != b'\n' {
        i += 1;
    }
    i
}

fn word_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && (bytes[i] == b'_' || bytes[i].is_ascii_alphanumeric()) {
        i += 1;
    }
    i
}

/// Past line breaks, blank lines, indentation and whole-line comments.
fn skip_blank_lines(bytes: &[u8], mut i: usize) -> usize {
    loop {
        match bytes.get(i) {
            Some(b'\n' | b' ' | b'\t' | b'\r') => i += 1,
            Some(b'#') => i = line_end(bytes, i),
            Some(b'/') if bytes.get(i + 1) == Some(&b'/') => i = line_end(bytes, i),
            _ => return i,
        }
    }
}

/// After `%json` at `from`: whitespace, then a JSON object; the offset just after its closing
/// brace (braces inside JSON strings do not count), `None` when there is none.
fn json_object_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while bytes.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    while let Some(&b) = bytes.get(i) {
        i += 1;
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}
