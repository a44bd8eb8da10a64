//! The lexical level of GBNF: spaces and comments, names, numbers and escaped characters.
//!
//! These mirror llama.cpp's grammar parser (`src/llama-grammar.cpp`): `#` starts a comment
//! that runs to the end of the line, and whether a line break counts as space depends on
//! where the parser is (inside parentheses, after `::=` or `|` it does; elsewhere it ends the
//! rule).

/// Whether `b` may appear in a rule name. llama.cpp allows letters, digits and `-` (no `_`).
pub(crate) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// The position after the spaces, tabs and comments at `pos`, and line breaks too when
/// `newlines` is set.
pub(crate) fn skip_space(bytes: &[u8], mut pos: usize, newlines: bool) -> usize {
    while let Some(&b) = bytes.get(pos) {
        match b {
            b' ' | b'\t' => pos += 1,
            b'\r' | b'\n' if newlines => pos += 1,
            b'#' => {
                while bytes.get(pos).is_some_and(|&b| b != b'\r' && b != b'\n') {
                    pos += 1;
                }
            }
            _ => break,
        }
    }
    pos
}

/// The end of the run of bytes at `pos` that satisfy `pred`.
pub(crate) fn span_while(bytes: &[u8], mut pos: usize, pred: impl Fn(u8) -> bool) -> usize {
    while bytes.get(pos).is_some_and(|&b| pred(b)) {
        pos += 1;
    }
    pos
}

/// One character of a literal or class, as written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum CharError {
    /// `\` followed by this character is not an escape.
    UnknownEscape(char),
    /// `\x`, `\u`, `\U` followed by too few hex digits.
    BadHex { escape: char, digits: usize },
    /// The text ends after a `\`.
    EndOfInput,
}

/// Reads the (possibly escaped) character at `pos` of `text`: its code point and the position
/// after it. `pos` must be a character boundary before the end of `text`.
///
/// `\xNN`, `\uNNNN` and `\UNNNNNNNN` give a code point (not a raw byte), as in llama.cpp; the
/// value is not checked here, since a range end may be a surrogate.
pub(crate) fn read_char(text: &str, pos: usize) -> Result<(u32, usize), CharError> {
    let rest = &text[pos..];
    let mut chars = rest.chars();
    let first = chars.next().ok_or(CharError::EndOfInput)?;
    if first != '\\' {
        return Ok((first as u32, pos + first.len_utf8()));
    }
    let escape = chars.next().ok_or(CharError::EndOfInput)?;
    let simple = match escape {
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        '\\' | '"' | '[' | ']' | '-' => Some(escape),
        _ => None,
    };
    if let Some(c) = simple {
        return Ok((c as u32, pos + 2));
    }
    let digits = match escape {
        'x' => 2,
        'u' => 4,
        'U' => 8,
        _ => return Err(CharError::UnknownEscape(escape)),
    };
    let hex = rest.as_bytes().get(2..2 + digits);
    match hex {
        Some(hex) if hex.iter().all(u8::is_ascii_hexdigit) => {
            let value = hex.iter().fold(0u32, |acc, &h| {
                let d = (h as char).to_digit(16).unwrap_or(0);
                (acc << 4) | d
            });
            Ok((value, pos + 2 + digits))
        }
        _ => Err(CharError::BadHex { escape, digits }),
    }
}

/// How a code point is shown in messages: the character when printable ASCII, else `U+XXXX`.
pub(crate) fn show_code_point(c: u32) -> String {
    match char::from_u32(c) {
        Some(ch) if ch.is_ascii_graphic() => format!("'{ch}'"),
        _ => format!("U+{c:04X}"),
    }
}

/// How the text at `pos` is shown in messages: the next character quoted, or `end of input`.
pub(crate) fn show_at(text: &str, pos: usize) -> String {
    match text.get(pos..).and_then(|rest| rest.chars().next()) {
        None => "end of input".to_string(),
        Some('\n') | Some('\r') => "line break".to_string(),
        Some(c) if c.is_control() => format!("U+{:04X}", c as u32),
        Some(c) => format!("'{c}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_code_points() {
        assert_eq!(read_char(r"\xe9", 0), Ok((0xE9, 4)));
        assert_eq!(read_char(r"\u00E9z", 0), Ok((0xE9, 6)));
        assert_eq!(read_char(r"\U0001F600", 0), Ok((0x1F600, 10)));
        assert_eq!(read_char(r"\n", 0), Ok((10, 2)));
        assert_eq!(read_char(r"\]", 0), Ok((u32::from(b']'), 2)));
        assert_eq!(read_char("é", 0), Ok((0xE9, 2)));
    }

    #[test]
    fn bad_escapes() {
        assert_eq!(read_char(r"\q", 0), Err(CharError::UnknownEscape('q')));
        assert_eq!(
            read_char(r"\x4", 0),
            Err(CharError::BadHex {
                escape: 'x',
                digits: 2
            })
        );
        assert_eq!(
            read_char(r"\u12g4", 0),
            Err(CharError::BadHex {
                escape: 'u',
                digits: 4
            })
        );
        assert_eq!(read_char("\\", 0), Err(CharError::EndOfInput));
    }

    #[test]
    fn comments_and_newlines() {
        let text = b"  # note\n  x";
        assert_eq!(skip_space(text, 0, false), 8);
        assert_eq!(skip_space(text, 0, true), 11);
    }
}
