//! Python `re` patterns → the grammar core's regex syntax (the Rust `regex` crate's), exactly
//! or not at all.
//!
//! Every literal character is written as `\x{…}`, so the metacharacters Rust has and Python
//! lacks (`&&`, `--`, `~~` and nested `[` in classes, `#` and spaces under `x`) never reach
//! Rust's parser. Classes are written with Python's definitions, which differ from Rust's:
//! `\s` is `str.isspace()` (it includes `\x1c`–`\x1f`), `\w` is letters, numbers (`\p{L}`,
//! `\p{N}`) and `_`, `\d` is `\p{Nd}`.
//!
//! Refused, because the language of a terminal cannot express them: look-around, back
//! references, conditionals, atomic groups and possessive repetition, anchors (`^ $ \A \Z
//! \b \B`), `\N{…}`, and the `x` (verbose), `a` and `L` flags. Python's own syntax errors
//! (`a**`, `*a`, an unknown escape) are errors too.

/// Python's `\s`: the characters for which `str.isspace()` holds.
const SPACE: &str = r"\t\n\x0B\x0C\r\x1C-\x1F \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}";
/// Python's `\w`: `str.isalnum()` or `_`.
const WORD: &str = r"\p{L}\p{N}_";

/// Translates `pattern` (as Python's `re` reads it) into Rust regex syntax; the error says
/// what cannot be translated.
pub(crate) fn translate(pattern: &str) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut t = Translator {
        chars,
        i: 0,
        out: String::new(),
        can_repeat: false,
    };
    t.run()?;
    Ok(t.out)
}

struct Translator {
    chars: Vec<char>,
    i: usize,
    out: String,
    /// Whether the last thing written can take a quantifier.
    can_repeat: bool,
}

fn literal(c: char) -> String {
    if c.is_ascii_alphanumeric() {
        c.to_string()
    } else {
        format!("\\x{{{:X}}}", c as u32)
    }
}

impl Translator {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).copied()
    }

    fn starts_with(&self, s: &str) -> bool {
        s.chars().enumerate().all(|(k, c)| self.peek(k) == Some(c))
    }

    fn run(&mut self) -> Result<(), String> {
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => {
                    let piece = self.escape(false)?;
                    self.out.push_str(&piece);
                    self.can_repeat = true;
                }
                '[' => {
                    let class = self.class()?;
                    self.out.push_str(&class);
                    self.can_repeat = true;
                }
                '(' => {
                    self.group()?;
                    self.can_repeat = false;
                }
                ')' => {
                    self.i += 1;
                    self.out.push(')');
                    self.can_repeat = true;
                }
                '|' => {
                    self.i += 1;
                    self.out.push('|');
                    self.can_repeat = false;
                }
                '.' => {
                    self.i += 1;
                    self.out.push('.');
                    self.can_repeat = true;
                }
                '^' | '$' => return Err(format!("the anchor '{c}' is not supported")),
                '*' | '+' | '?' => {
                    self.i += 1;
                    self.quantifier(c.to_string())?;
                }
                '{' => match self.braces() {
                    Some(q) => self.quantifier(q)?,
                    None => {
                        self.i += 1;
                        self.out.push_str(&literal('{'));
                        self.can_repeat = true;
                    }
                },
                _ => {
                    self.i += 1;
                    self.out.push_str(&literal(c));
                    self.can_repeat = true;
                }
            }
        }
        Ok(())
    }

    /// Writes the quantifier `q` (already read), then skips a lazy `?` (the language is the
    /// same) and refuses a possessive `+`.
    fn quantifier(&mut self, q: String) -> Result<(), String> {
        if !self.can_repeat {
            return Err(format!("nothing to repeat before '{q}'"));
        }
        self.out.push_str(&q);
        match self.peek(0) {
            Some('?') => self.i += 1,
            Some('+') => return Err("possessive repetition is not supported".into()),
            _ => {}
        }
        self.can_repeat = false;
        Ok(())
    }

    /// `{m}`, `{m,}`, `{,n}`, `{m,n}` at the cursor, read and written in Rust's form; `None`
    /// (nothing read) when the brace is a literal, as Python reads it then.
    fn braces(&mut self) -> Option<String> {
        let mut j = self.i + 1;
        let digits = |j: &mut usize, chars: &[char]| {
            let start = *j;
            while chars.get(*j).is_some_and(char::is_ascii_digit) {
                *j += 1;
            }
            chars[start..*j].iter().collect::<String>()
        };
        let min = digits(&mut j, &self.chars);
        let (max, comma) = if self.chars.get(j) == Some(&',') {
            j += 1;
            (digits(&mut j, &self.chars), true)
        } else {
            (String::new(), false)
        };
        if self.chars.get(j) != Some(&'}') || (min.is_empty() && (!comma || max.is_empty())) {
            return None;
        }
        self.i = j + 1;
        let min = if min.is_empty() { "0".to_string() } else { min };
        Some(match comma {
            false => format!("{{{min}}}"),
            true => format!("{{{min},{max}}}"),
        })
    }

    fn group(&mut self) -> Result<(), String> {
        self.i += 1;
        if self.peek(0) != Some('?') {
            self.out.push_str("(?:");
            return Ok(());
        }
        let refuse = |what: &str| Err(format!("{what} is not supported"));
        if self.starts_with("?:") {
            self.i += 2;
            self.out.push_str("(?:");
        } else if self.starts_with("?P<") {
            while self.peek(0).is_some_and(|c| c != '>') {
                self.i += 1;
            }
            self.i += 1;
            self.out.push_str("(?:");
        } else if self.starts_with("?P=") {
            return refuse("a back reference");
        } else if self.starts_with("?=") || self.starts_with("?!") {
            return refuse("look-ahead");
        } else if self.starts_with("?<=") || self.starts_with("?<!") {
            return refuse("look-behind");
        } else if self.starts_with("?(") {
            return refuse("a conditional group");
        } else if self.starts_with("?>") {
            return refuse("an atomic group");
        } else if self.starts_with("?#") {
            while self.peek(0).is_some_and(|c| c != ')') {
                self.i += 1;
            }
            if self.peek(0).is_none() {
                return Err("unterminated comment".into());
            }
            self.i += 1;
            // A comment is nothing: what came before it can still be repeated.
            self.out.push_str("(?:)");
            return Ok(());
        } else {
            self.i += 1;
            let mut flags = String::new();
            while let Some(c) = self.peek(0).filter(|c| *c != ')' && *c != ':') {
                match c {
                    'i' | 'm' | 's' | '-' => flags.push(c),
                    'u' => {}
                    'x' => return refuse("the x (verbose) flag"),
                    'a' | 'L' => return refuse(&format!("the {c} flag")),
                    _ => return Err(format!("unknown group flag '{c}'")),
                }
                self.i += 1;
            }
            match self.peek(0) {
                Some(':') => {
                    self.i += 1;
                    self.out.push_str(&format!("(?{flags}:"));
                }
                Some(')') => {
                    self.i += 1;
                    if flags.contains('-') {
                        return Err("global flags cannot be turned off".into());
                    }
                    self.out.push_str(&format!("(?{flags})"));
                    self.can_repeat = false;
                    // Rust needs the flag group closed as an expression: keep going.
                }
                _ => return Err("unterminated group".into()),
            }
        }
        Ok(())
    }

    /// One escape at the cursor, written as Rust syntax (inside a class when `in_class`).
    fn escape(&mut self, in_class: bool) -> Result<String, String> {
        self.i += 1;
        let Some(c) = self.peek(0) else {
            return Err("the pattern ends with a backslash".into());
        };
        self.i += 1;
        let class = |inner: &str, negated: bool| {
            if in_class && !negated {
                inner.to_string()
            } else {
                format!("[{}{inner}]", if negated { "^" } else { "" })
            }
        };
        Ok(match c {
            'd' => class(r"\p{Nd}", false),
            'D' => class(r"\p{Nd}", true),
            's' => class(SPACE, false),
            'S' => class(SPACE, true),
            'w' => class(WORD, false),
            'W' => class(WORD, true),
            'n' => literal('\n'),
            't' => literal('\t'),
            'r' => literal('\r'),
            'f' => literal('\x0c'),
            'v' => literal('\x0b'),
            'a' => literal('\x07'),
            'b' if in_class => literal('\x08'),
            'b' | 'B' => return Err("word boundaries are not supported".into()),
            'A' | 'Z' => return Err(format!("the anchor '\\{c}' is not supported")),
            'x' | 'u' | 'U' => {
                let n = match c {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = (0..n).filter_map(|k| self.peek(k)).collect();
                if hex.len() != n || !hex.chars().all(|h| h.is_ascii_hexdigit()) {
                    return Err(format!("bad escape \\{c}{hex}"));
                }
                self.i += n;
                let code = u32::from_str_radix(&hex, 16).map_err(|e| e.to_string())?;
                literal(char::from_u32(code).ok_or(format!("\\{c}{hex} is not a character"))?)
            }
            '0'..='7' => {
                let mut code = c.to_digit(8).unwrap_or(0);
                let mut octal_digits = 1;
                while octal_digits < 3 {
                    match self.peek(0).and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            code = code * 8 + d;
                            octal_digits += 1;
                            self.i += 1;
                        }
                        None => break,
                    }
                }
                if c != '0' && octal_digits < 3 {
                    if in_class {
                        return Err(format!("bad escape \\{c} in a class"));
                    }
                    return Err("a back reference is not supported".into());
                }
                if code > 0o377 {
                    return Err("octal escape above \\377".into());
                }
                literal(char::from_u32(code).unwrap_or('\0'))
            }
            '8' | '9' => return Err("a back reference is not supported".into()),
            'N' => return Err("\\N{...} (characters by name) is not supported".into()),
            c if c.is_ascii_alphanumeric() => return Err(format!("bad escape \\{c}")),
            c => literal(c),
        })
    }

    /// A `[…]` class at the cursor.
    fn class(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out = String::from("[");
        if self.peek(0) == Some('^') {
            self.i += 1;
            out.push('^');
        }
        let mut first = true;
        loop {
            let Some(c) = self.peek(0) else {
                return Err("unterminated character class".into());
            };
            if c == ']' && !first {
                self.i += 1;
                break;
            }
            first = false;
            // One item: a character (maybe the start of a range) or a class escape.
            let (item, single) = self.class_item()?;
            if let Some(low) = single {
                if self.peek(0) == Some('-') && self.peek(1).is_some_and(|c| c != ']') {
                    self.i += 1;
                    let (_, high) = self.class_item()?;
                    let Some(high) = high else {
                        return Err("bad character range".into());
                    };
                    if high < low {
                        return Err(format!("bad character range {low:?}-{high:?}"));
                    }
                    out.push_str(&format!("{}-{}", literal(low), literal(high)));
                    continue;
                }
            }
            out.push_str(&item);
        }
        Ok(out + "]")
    }

    /// One class item: its Rust text and, when it is one character, that character.
    fn class_item(&mut self) -> Result<(String, Option<char>), String> {
        let c = self.peek(0).ok_or("unterminated character class")?;
        if c != '\\' {
            self.i += 1;
            return Ok((literal(c), Some(c)));
        }
        let text = self.escape(true)?;
        let single = text
            .strip_prefix("\\x{")
            .and_then(|h| h.strip_suffix('}'))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .and_then(char::from_u32)
            .or_else(|| {
                let mut chars = text.chars();
                let c = chars.next()?;
                (chars.next().is_none()).then_some(c)
            });
        Ok((text, single))
    }
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn classes_and_literals() {
        assert_eq!(translate(r"[a-z]+").unwrap(), "[a-z]+");
        assert_eq!(translate(r"a\.b").unwrap(), r"a\x{2E}b");
        assert_eq!(translate(r"[]a]").unwrap(), r"[\x{5D}a]");
        assert_eq!(translate(r"[^\d]").unwrap(), r"[^\p{Nd}]");
        assert_eq!(translate(r"a{,3}").unwrap(), "a{0,3}");
        assert_eq!(translate(r"a{x").unwrap(), r"a\x{7B}x");
        assert_eq!(translate(r"a*?").unwrap(), "a*");
        assert_eq!(translate(r"(?P<n>x)").unwrap(), "(?:x)");
        assert_eq!(translate(r"\101").unwrap(), "A");
        assert_eq!(translate(r"[&&]").unwrap(), r"[\x{26}\x{26}]");
    }

    #[test]
    fn refusals() {
        for p in [
            r"(?=a)",
            r"(?!a)",
            r"(?<=a)b",
            r"(?<!a)b",
            r"(a)\1",
            r"(?P<x>a)(?P=x)",
            r"^a",
            r"a$",
            r"\bword",
            r"a*+",
            r"*a",
            r"a**",
            r"\q",
            r"(?x)a b",
            r"(?>a)",
            r"\N{DASH}",
            r"[z-a]",
            r"[a",
        ] {
            assert!(translate(p).is_err(), "{p} should be refused");
        }
    }
}
