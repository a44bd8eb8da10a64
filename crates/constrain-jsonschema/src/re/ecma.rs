//! ECMA-262 regular expressions (the dialect of JSON Schema's `pattern`) parsed into [`Re`].
//!
//! Character classes follow ECMA-262 with the `u` flag: `\d` is `[0-9]`, `\w` is `[A-Za-z0-9_]`,
//! `\s` is ECMA's white space and line terminators, `.` is any character but a line terminator.
//! Back-references, look-around and word boundaries have no regular equivalent the engine can
//! use and are errors. `^` and `$` are assertions (no multiline mode).

use super::{CharSet, Look, Re};

/// Why a pattern could not be translated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PatternError {
    /// Byte offset in the pattern.
    pub(crate) offset: usize,
    pub(crate) message: String,
    /// The pattern is valid ECMA-262 but uses something that cannot be translated.
    pub(crate) unsupported: bool,
}

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at offset {}", self.message, self.offset)
    }
}

/// Deepest group nesting accepted (the parser is recursive).
const MAX_NESTING: usize = 100;
/// Largest repetition count accepted in `{n,m}`.
const MAX_REPEAT: u32 = 100_000;

/// Parses an ECMA-262 pattern into a regular expression that may still contain `^`/`$`.
pub(crate) fn parse(pattern: &str) -> Result<Re, PatternError> {
    let mut p = Parser {
        chars: pattern.char_indices().collect(),
        pos: 0,
        len: pattern.len(),
        depth: 0,
    };
    let re = p.disjunction()?;
    if p.pos < p.chars.len() {
        return Err(p.error("unmatched ')'", false));
    }
    Ok(re)
}

/// The language of strings in which `pattern` finds a match (ECMA `RegExp.prototype.test`):
/// unanchored ends may be surrounded by any text.
///
/// Look-ahead assertions are supported where they test the whole string: right after a
/// leading `^` (`^(?!foo)`, `^(?=.*[0-9])...`). Then `^(?=X)Y` is Y's language intersected with
/// that of `^X`, and `^(?!X)Y` is Y's language minus that of `^X`.
pub(crate) fn search_language(pattern: &str) -> Result<Re, PatternError> {
    let Some((negated, inner, rest)) = leading_lookahead(pattern)? else {
        return Ok(anchor(parse(pattern)?));
    };
    let base = search_language(&format!("^{rest}"))?;
    let test = search_language(&format!("^(?:{inner})"))?;
    let too_large = |e: super::dfa::TooLarge| PatternError {
        offset: 1,
        message: format!("look-ahead: the automaton exceeds {} {}", e.limit, e.what),
        unsupported: true,
    };
    let dfa = if negated {
        super::dfa::difference(&[base], &[test])
    } else {
        super::dfa::difference(&[base, test], &[])
    }
    .map_err(too_large)?;
    dfa.to_re().map_err(too_large)
}

/// Splits `^(?=X)rest` / `^(?!X)rest` into (negated, X, rest).
fn leading_lookahead(pattern: &str) -> Result<Option<(bool, &str, &str)>, PatternError> {
    let negated = if pattern.starts_with("^(?!") {
        true
    } else if pattern.starts_with("^(?=") {
        false
    } else {
        return Ok(None);
    };
    // Find the parenthesis closing the assertion, skipping escapes and classes.
    let bytes = pattern.as_bytes();
    let (mut depth, mut i, mut in_class) = (1usize, 4usize, false);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'[' if !in_class => in_class = true,
            b']' if in_class => in_class = false,
            b'(' if !in_class => depth += 1,
            b')' if !in_class => {
                depth -= 1;
                if depth == 0 {
                    return Ok(Some((negated, &pattern[4..i], &pattern[i + 1..])));
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err(PatternError {
        offset: pattern.len(),
        message: "missing ')'".into(),
        unsupported: false,
    })
}

/// Turns a parsed pattern into the language of strings it finds a match in.
pub(crate) fn anchor(re: Re) -> Re {
    let alternatives = match re {
        Re::Alt(v) => v,
        other => vec![other],
    };
    // The bodies of the alternatives anchored alike, searched together: `.*(a|b).*` rather
    // than `.*a.*|.*b.*`, whose automaton tracks which of the words have been seen (past
    // 5,000 states for ten words) before minimizing.
    let mut groups: Vec<((bool, bool), Vec<Re>)> = Vec::new();
    let mut unresolved = Vec::new();
    for alt in alternatives {
        let (starts, body) = match strip_start(&alt) {
            Some(b) => (true, b),
            None => (false, alt.clone()),
        };
        let (ends, body) = match strip_end(&body) {
            Some(b) => (true, b),
            None => (false, body),
        };
        if body.has_looks() {
            unresolved.push(alt);
            continue;
        }
        match groups
            .iter_mut()
            .find(|(anchors, _)| *anchors == (starts, ends))
        {
            Some((_, bodies)) => bodies.push(body),
            None => groups.push(((starts, ends), vec![body])),
        }
    }
    let mut out = Vec::with_capacity(groups.len() + 1);
    for ((starts, ends), bodies) in groups {
        let mut parts = Vec::with_capacity(3);
        if !starts {
            parts.push(Re::any_string());
        }
        parts.push(Re::alt(bodies));
        if !ends {
            parts.push(Re::any_string());
        }
        out.push(Re::concat(parts));
    }
    if !unresolved.is_empty() {
        let searched = Re::concat(vec![
            Re::any_string(),
            Re::alt(unresolved),
            Re::any_string(),
        ]);
        out.push(searched);
    }
    Re::alt(out)
}

/// `re` without its leading `^`, if every match of `re` starts with one.
fn strip_start(re: &Re) -> Option<Re> {
    match re {
        Re::Look(Look::Start) => Some(Re::empty()),
        Re::Concat(parts) => {
            let first = strip_start(parts.first()?)?;
            let mut v = vec![first];
            v.extend(parts[1..].iter().cloned());
            Some(Re::concat(v))
        }
        Re::Alt(parts) if !parts.is_empty() => Some(Re::alt(
            parts.iter().map(strip_start).collect::<Option<Vec<_>>>()?,
        )),
        _ => None,
    }
}

/// `re` without its trailing `$`, if every match of `re` ends with one.
fn strip_end(re: &Re) -> Option<Re> {
    match re {
        Re::Look(Look::End) => Some(Re::empty()),
        Re::Concat(parts) => {
            let last = strip_end(parts.last()?)?;
            let mut v: Vec<Re> = parts[..parts.len() - 1].to_vec();
            v.push(last);
            Some(Re::concat(v))
        }
        Re::Alt(parts) if !parts.is_empty() => Some(Re::alt(
            parts.iter().map(strip_end).collect::<Option<Vec<_>>>()?,
        )),
        _ => None,
    }
}

/// ECMA-262 `\s`: WhiteSpace and LineTerminator.
pub(crate) fn space_class() -> CharSet {
    CharSet::from_ranges([
        (0x09, 0x0D),
        (0x20, 0x20),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    ])
}

pub(crate) fn word_class() -> CharSet {
    CharSet::from_ranges([
        (b'0' as u32, b'9' as u32),
        (b'A' as u32, b'Z' as u32),
        (b'_' as u32, b'_' as u32),
        (b'a' as u32, b'z' as u32),
    ])
}

pub(crate) fn digit_class() -> CharSet {
    CharSet::from_ranges([(b'0' as u32, b'9' as u32)])
}

/// `.`: anything but a line terminator.
fn dot_class() -> CharSet {
    CharSet::from_ranges([(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]).complement()
}

struct Parser {
    chars: Vec<(usize, char)>,
    pos: usize,
    len: usize,
    depth: usize,
}

/// One item inside `[...]`: a character (may start a range) or a whole class (`\d`...).
enum ClassAtom {
    Char(char),
    Set(CharSet),
}

impl Parser {
    fn offset(&self) -> usize {
        self.chars.get(self.pos).map_or(self.len, |&(o, _)| o)
    }

    fn error(&self, message: &str, unsupported: bool) -> PatternError {
        PatternError {
            offset: self.offset(),
            message: message.to_string(),
            unsupported,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).map(|&(_, c)| c)
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.pos + n).map(|&(_, c)| c)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn disjunction(&mut self) -> Result<Re, PatternError> {
        let mut alternatives = vec![self.alternative()?];
        while self.eat('|') {
            alternatives.push(self.alternative()?);
        }
        Ok(if alternatives.len() == 1 {
            alternatives.pop().unwrap_or_else(Re::empty)
        } else {
            Re::alt(alternatives)
        })
    }

    fn alternative(&mut self) -> Result<Re, PatternError> {
        let mut terms = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = match c {
                '^' => {
                    self.pos += 1;
                    Re::Look(Look::Start)
                }
                '$' => {
                    self.pos += 1;
                    Re::Look(Look::End)
                }
                _ => self.atom()?,
            };
            let term = self.quantified(atom)?;
            terms.push(term);
        }
        Ok(Re::concat(terms))
    }

    fn quantified(&mut self, atom: Re) -> Result<Re, PatternError> {
        let start = self.pos;
        let (min, max) = match self.peek() {
            Some('*') => {
                self.pos += 1;
                (0, None)
            }
            Some('+') => {
                self.pos += 1;
                (1, None)
            }
            Some('?') => {
                self.pos += 1;
                (0, Some(1))
            }
            Some('{') => match self.braces()? {
                Some(q) => q,
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        self.eat('?'); // lazy: same language
        if matches!(atom, Re::Look(_)) {
            self.pos = start;
            return Err(self.error("quantified assertion", false));
        }
        if matches!(self.peek(), Some('*' | '+' | '?'))
            || (self.peek() == Some('{') && self.looks_like_quantifier())
        {
            return Err(self.error("nothing to repeat", false));
        }
        Ok(Re::repeat(atom, min, max))
    }

    fn looks_like_quantifier(&self) -> bool {
        let mut i = self.pos + 1;
        let mut digits = 0;
        while let Some(&(_, c)) = self.chars.get(i) {
            if c.is_ascii_digit() {
                digits += 1;
                i += 1;
            } else {
                break;
            }
        }
        digits > 0 && matches!(self.chars.get(i), Some(&(_, ',' | '}')))
    }

    /// `{n}`, `{n,}` or `{n,m}`; `None` (and nothing consumed) if the brace is a literal.
    fn braces(&mut self) -> Result<Option<(u32, Option<u32>)>, PatternError> {
        let save = self.pos;
        self.pos += 1;
        let Some(min) = self.number()? else {
            self.pos = save;
            return Ok(None);
        };
        let max = if self.eat(',') {
            if self.peek() == Some('}') {
                None
            } else {
                match self.number()? {
                    Some(m) => Some(m),
                    None => {
                        self.pos = save;
                        return Ok(None);
                    }
                }
            }
        } else {
            Some(min)
        };
        if !self.eat('}') {
            self.pos = save;
            return Ok(None);
        }
        if let Some(m) = max {
            if m < min {
                return Err(self.error("numbers out of order in {} quantifier", false));
            }
        }
        Ok(Some((min, max)))
    }

    fn number(&mut self) -> Result<Option<u32>, PatternError> {
        let mut value: Option<u32> = None;
        while let Some(c) = self.peek() {
            let Some(d) = c.to_digit(10) else { break };
            self.pos += 1;
            let v = value
                .unwrap_or(0)
                .checked_mul(10)
                .and_then(|v| v.checked_add(d));
            match v {
                Some(v) if v <= MAX_REPEAT => value = Some(v),
                _ => return Err(self.error(&format!("repetition count above {MAX_REPEAT}"), true)),
            }
        }
        Ok(value)
    }

    fn atom(&mut self) -> Result<Re, PatternError> {
        let Some(c) = self.next() else {
            return Err(self.error("unexpected end", false));
        };
        match c {
            '.' => Ok(Re::class(dot_class())),
            '(' => self.group(),
            '[' => self.class(),
            '\\' => self.atom_escape(),
            '*' | '+' | '?' => {
                self.pos -= 1;
                Err(self.error("nothing to repeat", false))
            }
            '{' => {
                self.pos -= 1;
                if self.looks_like_quantifier() {
                    return Err(self.error("nothing to repeat", false));
                }
                self.pos += 1;
                Ok(Re::literal("{"))
            }
            other => Ok(Re::Literal(other.to_string())),
        }
    }

    fn group(&mut self) -> Result<Re, PatternError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.error(&format!("groups nested deeper than {MAX_NESTING}"), true));
        }
        if self.eat('?') {
            match self.next() {
                Some(':') => {}
                Some('=' | '!') => return Err(self.error("look-ahead assertions", true)),
                Some('<') => match self.peek() {
                    Some('=' | '!') => return Err(self.error("look-behind assertions", true)),
                    _ => {
                        let mut name_len = 0;
                        while let Some(c) = self.next() {
                            if c == '>' {
                                break;
                            }
                            if !(c.is_alphanumeric() || c == '_' || c == '$') {
                                return Err(self.error("invalid group name", false));
                            }
                            name_len += 1;
                        }
                        if name_len == 0 {
                            return Err(self.error("empty group name", false));
                        }
                    }
                },
                _ => return Err(self.error("invalid group", false)),
            }
        }
        let inner = self.disjunction()?;
        if !self.eat(')') {
            return Err(self.error("missing ')'", false));
        }
        self.depth -= 1;
        Ok(inner)
    }

    fn atom_escape(&mut self) -> Result<Re, PatternError> {
        let Some(c) = self.peek() else {
            return Err(self.error("pattern ends with '\\'", false));
        };
        match c {
            'b' | 'B' => Err(self.error("word boundary assertions", true)),
            '1'..='9' => Err(self.error("back-references", true)),
            'k' if self.peek_at(1) == Some('<') => Err(self.error("back-references", true)),
            _ => match self.class_escape()? {
                ClassAtom::Char(c) => Ok(Re::Literal(c.to_string())),
                ClassAtom::Set(s) => Ok(Re::class(s)),
            },
        }
    }

    /// An escape after `\` (outside or inside a class; `\b` is handled by the callers).
    fn class_escape(&mut self) -> Result<ClassAtom, PatternError> {
        let Some(c) = self.next() else {
            return Err(self.error("pattern ends with '\\'", false));
        };
        let set = |s: CharSet| Ok(ClassAtom::Set(s));
        match c {
            'd' => set(digit_class()),
            'D' => set(digit_class().complement()),
            'w' => set(word_class()),
            'W' => set(word_class().complement()),
            's' => set(space_class()),
            'S' => set(space_class().complement()),
            'p' | 'P' => {
                let s = self.property(c == 'P')?;
                set(s)
            }
            't' => Ok(ClassAtom::Char('\t')),
            'n' => Ok(ClassAtom::Char('\n')),
            'v' => Ok(ClassAtom::Char('\u{0B}')),
            'f' => Ok(ClassAtom::Char('\u{0C}')),
            'r' => Ok(ClassAtom::Char('\r')),
            '0' if !self.peek().is_some_and(|c| c.is_ascii_digit()) => Ok(ClassAtom::Char('\0')),
            'c' => match self.peek() {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.pos += 1;
                    Ok(ClassAtom::Char(char::from(l as u8 % 32)))
                }
                _ => {
                    // Annex B: a `\c` without a letter is a backslash followed by `c`.
                    self.pos -= 1;
                    Ok(ClassAtom::Char('\\'))
                }
            },
            'x' => {
                let v = self
                    .hex_digits(2)
                    .ok_or_else(|| self.error("invalid \\x escape", false))?;
                Ok(ClassAtom::Char(char::from_u32(v).unwrap_or('\0')))
            }
            'u' => self.unicode_escape().map(ClassAtom::Char),
            c if c.is_ascii_punctuation() || !c.is_ascii() => Ok(ClassAtom::Char(c)),
            other => Err(self.error(&format!("unknown escape '\\{other}'"), false)),
        }
    }

    fn hex_digits(&mut self, n: usize) -> Option<u32> {
        let mut v = 0u32;
        for i in 0..n {
            let d = self.peek_at(i)?.to_digit(16)?;
            v = v * 16 + d;
        }
        self.pos += n;
        Some(v)
    }

    fn unicode_escape(&mut self) -> Result<char, PatternError> {
        if self.eat('{') {
            let mut v: u32 = 0;
            let mut n = 0;
            while let Some(d) = self.peek().and_then(|c| c.to_digit(16)) {
                self.pos += 1;
                v = v.saturating_mul(16).saturating_add(d);
                n += 1;
            }
            if n == 0 || !self.eat('}') {
                return Err(self.error("invalid \\u{...} escape", false));
            }
            return char::from_u32(v)
                .ok_or_else(|| self.error("\\u{...} escape is not a scalar value", false));
        }
        let hi = self
            .hex_digits(4)
            .ok_or_else(|| self.error("invalid \\u escape", false))?;
        if (0xD800..0xDC00).contains(&hi)
            && self.peek() == Some('\\')
            && self.peek_at(1) == Some('u')
        {
            let save = self.pos;
            self.pos += 2;
            if let Some(lo) = self.hex_digits(4) {
                if (0xDC00..0xE000).contains(&lo) {
                    let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    return char::from_u32(c)
                        .ok_or_else(|| self.error("invalid surrogate pair", false));
                }
            }
            self.pos = save;
        }
        char::from_u32(hi).ok_or_else(|| self.error("lone surrogate escapes", true))
    }

    /// `\p{...}` / `\P{...}`, resolved through `regex-syntax`'s Unicode tables.
    fn property(&mut self, negated: bool) -> Result<CharSet, PatternError> {
        if !self.eat('{') {
            return Err(self.error("invalid property escape", false));
        }
        let mut name = String::new();
        loop {
            match self.next() {
                Some('}') => break,
                Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '=' => name.push(c),
                _ => return Err(self.error("invalid property escape", false)),
            }
        }
        let hir = regex_syntax::ParserBuilder::new()
            .build()
            .parse(&format!("\\p{{{name}}}"))
            .map_err(|_| self.error(&format!("unknown Unicode property '{name}'"), true))?;
        let set = match hir.kind() {
            regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(cls)) => {
                CharSet::from_ranges(
                    cls.ranges()
                        .iter()
                        .map(|r| (r.start() as u32, r.end() as u32)),
                )
            }
            _ => return Err(self.error(&format!("unknown Unicode property '{name}'"), true)),
        };
        Ok(if negated { set.complement() } else { set })
    }

    fn class(&mut self) -> Result<Re, PatternError> {
        let negated = self.eat('^');
        let mut set = CharSet::empty();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error("missing ']'", false));
            };
            if c == ']' {
                self.pos += 1;
                break;
            }
            let first = self.class_atom()?;
            if self.peek() == Some('-') && self.peek_at(1).is_some_and(|c| c != ']') {
                self.pos += 1;
                let second = self.class_atom()?;
                match (first, second) {
                    (ClassAtom::Char(a), ClassAtom::Char(b)) => {
                        if a > b {
                            return Err(self.error("range out of order in character class", false));
                        }
                        set = set.union(&CharSet::from_ranges([(a as u32, b as u32)]));
                    }
                    (a, b) => {
                        // Annex B: a class escape at either end makes '-' literal.
                        set = set
                            .union(&atom_set(a))
                            .union(&CharSet::single('-'))
                            .union(&atom_set(b));
                    }
                }
            } else {
                set = set.union(&atom_set(first));
            }
        }
        Ok(Re::class(if negated { set.complement() } else { set }))
    }

    fn class_atom(&mut self) -> Result<ClassAtom, PatternError> {
        match self.next() {
            Some('\\') => match self.peek() {
                Some('b') => {
                    self.pos += 1;
                    Ok(ClassAtom::Char('\u{08}'))
                }
                Some('-') => {
                    self.pos += 1;
                    Ok(ClassAtom::Char('-'))
                }
                Some(d) if d.is_ascii_digit() && d != '0' => {
                    Err(self.error("back-references", true))
                }
                _ => self.class_escape(),
            },
            Some(c) => Ok(ClassAtom::Char(c)),
            None => Err(self.error("missing ']'", false)),
        }
    }
}

fn atom_set(a: ClassAtom) -> CharSet {
    match a {
        ClassAtom::Char(c) => CharSet::single(c),
        ClassAtom::Set(s) => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        let re = search_language(pattern).expect("pattern parses");
        let hir = re.to_hir();
        let m = regex_automata::meta::Regex::builder()
            .build_from_hir(&regex_syntax::hir::Hir::concat(vec![
                regex_syntax::hir::Hir::look(regex_syntax::hir::Look::Start),
                hir,
                regex_syntax::hir::Hir::look(regex_syntax::hir::Look::End),
            ]))
            .expect("builds");
        m.is_match(text)
    }

    #[test]
    fn unanchored_patterns_search() {
        assert!(matches("a", "xxaxx"));
        assert!(!matches("a", "xyz"));
        assert!(matches("^a", "abc"));
        assert!(!matches("^a", "bac"));
        assert!(matches("c$", "abc"));
        assert!(!matches("c$", "acb"));
        assert!(matches("^a$|^b$", "b"));
        assert!(!matches("^a$|^b$", "ab"));
        assert!(matches("^(ab|cd)+$", "abcdab"));
    }

    /// The alternatives of an unanchored pattern are searched as one body, `.*(a|b).*`:
    /// searched one by one (`.*a.*|.*b.*`), the automaton tracks which of the words have been
    /// seen, past 5,000 states for these ten before minimizing.
    #[test]
    fn unanchored_alternations_of_many_words_are_searched_together() {
        let words = "trace|debug[2-5]?|info|stats|notice|warning|error|critical|alert|fatal";
        let language = search_language(words).expect("pattern parses");
        let dfa = crate::re::dfa::Dfa::from_re(&language).expect("builds");
        assert!(dfa.state_count() < 500, "{} states", dfa.state_count());
        assert!(matches(words, "x-trace-y"));
        assert!(matches(words, "debug3 and my error"));
        assert!(!matches(words, "deb"));
    }

    #[test]
    fn classes_follow_ecma() {
        assert!(matches(r"^\d+$", "0123"));
        assert!(!matches(r"^\d$", "٣")); // Arabic-Indic digit: not \d in ECMA
        assert!(matches(r"^\w+$", "a_Z9"));
        assert!(!matches(r"^\w$", "é"));
        assert!(matches(r"^\s$", "\u{a0}"));
        assert!(matches(r"^[^]$", "\n"));
        assert!(!matches(r"[]", ""));
        assert!(!matches(r"^.$", "\n"));
        assert!(matches(r"^[\d-x]$", "-"));
        assert!(matches(r"^[a-c\-]+$", "a-b"));
        assert!(matches(r"^\u00e9\x41$", "éA"));
        assert!(matches(r"^\p{L}+$", "héllo"));
        assert!(matches(r"^\uD83D\uDE00$", "😀"));
        assert!(matches(r"^a{2,3}$", "aaa"));
        assert!(matches(r"^a{,3}$", "a{,3}"));
        assert!(matches(r"^\/$", "/"));
    }

    #[test]
    fn leading_lookaheads() {
        assert!(matches("^(?!pattern$).*$", "patterns"));
        assert!(!matches("^(?!pattern$).*$", "pattern"));
        assert!(!matches("^(?![iI][oO]broker)", "iObroker.x"));
        assert!(matches("^(?![iI][oO]broker)", "adapter"));
        assert!(matches("^(?=.*[0-9])[a-z0-9]+$", "abc1"));
        assert!(!matches("^(?=.*[0-9])[a-z0-9]+$", "abc"));
    }

    #[test]
    fn unsupported_constructs_are_errors() {
        for p in [
            r"a(?=a)",
            r"x(?!a)",
            r"(?<=a)b",
            r"\bfoo",
            r"(a)\1",
            r"(?<n>a)\k<n>",
        ] {
            let e = parse(p).expect_err(p);
            assert!(e.unsupported, "{p}");
        }
        for p in ["(", "[a", "a**", "*a", "a{3,2}", "\\"] {
            assert!(parse(p).is_err(), "{p}");
        }
    }
}
