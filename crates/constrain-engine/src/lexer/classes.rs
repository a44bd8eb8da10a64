//! Byte classes: the partition of bytes no terminal tells apart, found from the regular
//! expressions before any NFA is built, and the string characters spelled as those classes.

use regex_syntax::hir::{Class, Hir, HirKind};
use regex_syntax::utf8::Utf8Sequences;
use rustc_hash::FxHashSet;

use super::Lexer;

/// The string characters as byte classes: per UTF-8 sequence of [`STRING_CHAR_SEQUENCES`], per
/// byte of it, the classes its range spans. Stepping a set of states through them byte by
/// byte reaches every state some character leads to without spelling out every sequence of
/// classes, which multiply where patterns split the UTF-8 ranges finely.
pub(super) type CharClasses = std::sync::Arc<[Box<[Box<[usize]>]>]>;

impl Lexer {
    /// The string characters as byte classes (see [`CharClasses`]).
    pub(super) fn char_classes(&mut self) -> CharClasses {
        if let Some(chars) = &self.char_classes {
            return chars.clone();
        }
        let chars = self.classes_of(&STRING_CHAR_SEQUENCES);
        self.char_classes = Some(chars.clone());
        chars
    }

    /// As [`Self::char_classes`], for the characters beyond ASCII.
    pub(super) fn non_ascii_char_classes(&mut self) -> CharClasses {
        if let Some(chars) = &self.non_ascii_char_classes {
            return chars.clone();
        }
        let sequences: Vec<Vec<(u8, u8)>> = STRING_CHAR_SEQUENCES
            .iter()
            .filter(|sequence| sequence[0].0 >= 0x80)
            .cloned()
            .collect();
        let chars = self.classes_of(&sequences);
        self.non_ascii_char_classes = Some(chars.clone());
        chars
    }

    /// `sequences` of UTF-8 byte ranges as byte classes, per byte the classes its range spans.
    pub(super) fn classes_of(&self, sequences: &[Vec<(u8, u8)>]) -> CharClasses {
        let classes_in = |lo: u8, hi: u8| -> Box<[usize]> {
            let mut out = vec![self.byte_class[lo as usize] as usize];
            while let Some(&next) = self.class_rep.get(out[out.len() - 1] + 1) {
                if next > hi {
                    break;
                }
                out.push(out[out.len() - 1] + 1);
            }
            out.into_boxed_slice()
        };
        sequences
            .iter()
            .map(|sequence| {
                sequence
                    .iter()
                    .map(|&(lo, hi)| classes_in(lo, hi))
                    .collect()
            })
            .collect()
    }
}

/// The UTF-8 byte ranges of string characters (see `bytes::is_string_char`), one
/// sequence of ranges per character length and lead-byte range; ASCII first, where most
/// states that do not loop fail.
pub(super) static STRING_CHAR_SEQUENCES: std::sync::LazyLock<Vec<Vec<(u8, u8)>>> =
    std::sync::LazyLock::new(|| {
        let mut sequences: Vec<Vec<(u8, u8)>> = [(b'#', b'['), (b' ', b'!'), (b']', 0x7F)]
            .iter()
            .map(|&r| vec![r])
            .collect();
        // Around the line separators, U+2028 and U+2029 (`bytes::LINE_SEPARATORS`).
        for (lo, hi) in [('\u{80}', '\u{2027}'), ('\u{202A}', char::MAX)] {
            for seq in Utf8Sequences::new(lo, hi) {
                sequences.push(seq.as_slice().iter().map(|r| (r.start, r.end)).collect());
            }
        }
        sequences
    });

/// Marks where byte classes must split for `hir`: around every literal byte, at the ends of
/// every byte range, and at the ends of the UTF-8 byte ranges of every Unicode range (as its
/// NFA will spell them).
///
/// Unicode ranges in `spelled` are already marked (the same ones recur in every string of a
/// grammar); the rest are added to it.
pub(super) fn mark_byte_boundaries(
    hir: &Hir,
    boundary: &mut [bool; 256],
    spelled: &mut FxHashSet<(char, char)>,
) {
    let mut mark = |start: u8, end: u8| {
        boundary[start as usize] = true;
        if end < 255 {
            boundary[end as usize + 1] = true;
        }
    };
    let mut stack = vec![hir];
    while let Some(h) = stack.pop() {
        match h.kind() {
            HirKind::Empty | HirKind::Look(_) => {}
            HirKind::Literal(lit) => lit.0.iter().for_each(|&b| mark(b, b)),
            HirKind::Class(Class::Bytes(class)) => {
                class.ranges().iter().for_each(|r| mark(r.start(), r.end()))
            }
            HirKind::Class(Class::Unicode(class)) => {
                for r in class.ranges() {
                    if !spelled.insert((r.start(), r.end())) {
                        continue;
                    }
                    for seq in Utf8Sequences::new(r.start(), r.end()) {
                        seq.as_slice().iter().for_each(|r| mark(r.start, r.end));
                    }
                }
            }
            HirKind::Repetition(rep) => stack.push(&rep.sub),
            HirKind::Capture(cap) => stack.push(&cap.sub),
            HirKind::Concat(parts) | HirKind::Alternation(parts) => stack.extend(parts),
        }
    }
}

/// The partition of bytes into classes given where classes begin (byte 0 always does).
pub(super) fn byte_classes(boundary: &[bool; 256]) -> ([u8; 256], Vec<u8>) {
    let mut map = [0u8; 256];
    let mut reps = vec![0u8];
    for b in 1..256 {
        if boundary[b] {
            reps.push(b as u8);
        }
        map[b] = (reps.len() - 1) as u8;
    }
    (map, reps)
}
