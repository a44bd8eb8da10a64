//! What a literal's text means: Lark evaluates the inside of `"…"` and `/…/` with Python's
//! string escapes before it becomes a string or a pattern, and the same is done here.
//!
//! Lark rewrites the text so that only `\n \f \t \r \xNN \uNNNN \UNNNNNNNN` are evaluated (and
//! `\\` is kept as `\\`); any other `\c` keeps its backslash, so `/\d/` stays a digit class
//! and `"\d"` is a backslash and a `d`. `\"` stands for `"`. A string then has `\\` turned
//! into `\`; a pattern keeps it, as a regex escape.

use crate::error::ErrorKind;

/// A `"…"` literal's text (quotes and `i` flag included) → the string and whether it ignores
/// case.
pub(crate) fn string(raw: &str) -> Result<(String, bool), ErrorKind> {
    let (inner, insensitive) = match raw.strip_suffix('i') {
        Some(r) => (&r[1..r.len() - 1], true),
        None => (&raw[1..raw.len() - 1], false),
    };
    let text = evaluate(inner)?.replace("\\\\", "\\");
    if text.is_empty() {
        return Err(ErrorKind::EmptyLiteral);
    }
    Ok((text, insensitive))
}

/// A `/…/flags` literal's text → the pattern Python's `re` receives, and the flags.
pub(crate) fn regex(raw: &str) -> Result<(String, String), ErrorKind> {
    let close = raw.rfind('/').unwrap_or(0);
    let flags = raw[close + 1..].to_string();
    let inner = &raw[1..close];
    if inner.contains('\n') && !flags.contains('x') {
        return Err(ErrorKind::BadEscape(
            "a line break inside a regular expression needs the x flag".into(),
        ));
    }
    let pattern = evaluate(inner)?;
    if pattern.is_empty() {
        return Err(ErrorKind::EmptyLiteral);
    }
    Ok((pattern, flags))
}

/// Lark's `eval_escaping`: the rewrite described in the module docs, then Python's evaluation
/// of the rewritten text as a string literal.
fn evaluate(inner: &str) -> Result<String, ErrorKind> {
    let mut w = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        w.push(c);
        if c == '\\' {
            let Some(n) = chars.next() else {
                return Err(ErrorKind::BadEscape(
                    "the literal ends with a backslash".into(),
                ));
            };
            if n == '\\' {
                w.push_str("\\\\");
            } else if !"Uuxnftr".contains(n) {
                w.push('\\');
            }
            w.push(n);
        }
    }
    let w = w.replace("\\\"", "\"").replace('\'', "\\'");
    python_unescape(&w)
}

/// Python's reading of a string literal's escapes, for the escapes [`evaluate`] leaves.
fn python_unescape(w: &str) -> Result<String, ErrorKind> {
    let mut out = String::new();
    let mut chars = w.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(n) = chars.next() else {
            return Err(ErrorKind::BadEscape(
                "the literal ends with a backslash".into(),
            ));
        };
        let digits = match n {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => 0,
        };
        if digits > 0 {
            let hex: String = (0..digits).filter_map(|_| chars.next()).collect();
            let code = (hex.len() == digits && hex.chars().all(|h| h.is_ascii_hexdigit()))
                .then(|| u32::from_str_radix(&hex, 16).ok())
                .flatten()
                .ok_or_else(|| ErrorKind::BadEscape(format!("\\{n}{hex}")))?;
            let ch = char::from_u32(code)
                .ok_or_else(|| ErrorKind::BadEscape(format!("\\{n}{hex} is not a character")))?;
            out.push(ch);
            continue;
        }
        match n {
            '\\' => out.push('\\'),
            '\'' => out.push('\''),
            '"' => out.push('"'),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'f' => out.push('\x0c'),
            '\n' => {}
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'v' => out.push('\x0b'),
            '0'..='7' => {
                let mut code = n.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            code = code * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(code).unwrap_or('\0'));
            }
            'N' => {
                return Err(ErrorKind::BadEscape(
                    "\\N{...} (characters by name) is not supported".into(),
                ))
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_unescape_like_lark() {
        assert_eq!(string(r#""a\nb""#).unwrap().0, "a\nb");
        assert_eq!(string(r#""\\""#).unwrap().0, "\\");
        assert_eq!(string(r#""\"""#).unwrap().0, "\"");
        assert_eq!(string(r#""\d""#).unwrap().0, "\\d");
        assert_eq!(string(r#""\x41\u00e9""#).unwrap().0, "Aé");
        assert_eq!(string(r#""it's""#).unwrap().0, "it's");
        assert_eq!(string(r#""SELECT"i"#).unwrap(), ("SELECT".into(), true));
        assert_eq!(string(r#""""#), Err(ErrorKind::EmptyLiteral));
        assert!(string(r#""\x4""#).is_err());
    }

    #[test]
    fn patterns_keep_regex_escapes() {
        assert_eq!(regex(r"/\d+/").unwrap().0, r"\d+");
        assert_eq!(regex(r"/a\\b/").unwrap().0, r"a\\b");
        assert_eq!(regex(r"/\//").unwrap().0, r"\/");
        assert_eq!(regex(r"/\n/i").unwrap(), ("\n".into(), "i".into()));
    }
}
