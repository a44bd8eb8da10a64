//! Byte and character predicates the whole engine shares: which bytes are text, which
//! characters a JSON string holds unescaped, the nested byte alphabets over which the mask
//! walks take whole subtrees, and the bytes that stand for a special token. A leaf: it depends
//! on no other module.

/// Characters a JSON string holds unescaped: what string bodies, free text and
/// most of a vocabulary (every script, not only ASCII) are made of. A walk that reaches a state
/// that never dies or ends on them can take a whole subtree of them at once (see `mask`).
///
/// The line separators U+2028 and U+2029 are left out: ECMA-262's `.` does not match them, so
/// the `.+` of a pattern (`^.+@.+$`) lives through every other string character, and its
/// lexer states are free in strings; the few tokens holding them are walked one by one.
pub(crate) fn is_string_char(c: char) -> bool {
    c >= ' ' && c != '"' && c != '\\' && !LINE_SEPARATORS.contains(&c)
}

/// The characters ECMA-262's `.` leaves out beyond ASCII (see [`is_string_char`]).
pub(crate) const LINE_SEPARATORS: [char; 2] = ['\u{2028}', '\u{2029}'];

/// A byte of some [`is_string_char`] character: every byte from the space on but `"` and `\`
/// (from 0x80 on, more than UTF-8 puts together, which errs towards more paths).
pub(crate) fn is_string_byte(b: u8) -> bool {
    b >= b' ' && b != b'"' && b != b'\\'
}

/// Printable ASCII other than `"` and `\`: what long runs inside JSON strings and free text are
/// made of. A walk that reaches a state which every such byte leads back to can take a whole
/// subtree of such bytes at once (see `mask`).
pub(crate) fn is_text_byte(b: u8) -> bool {
    (0x20..=0x7e).contains(&b) && b != b'"' && b != b'\\'
}

/// How many byte alphabets the walks know (see [`alphabet_of`]).
pub(crate) const BYTE_ALPHABETS: usize = 5;

/// The widest byte alphabet: the text bytes.
pub(crate) const TEXT: usize = BYTE_ALPHABETS - 1;

/// Above every alphabet: the byte is in none.
pub(crate) const NO_ALPHABET: u8 = u8::MAX;

/// The narrowest of the byte alphabets holding `b` ([`NO_ALPHABET`] when none does). Each
/// holds the one before: ASCII letters (most of a vocabulary's words, and of patterns such as
/// `^[a-zA-Z]+( [a-zA-Z]+)*$`, which a digit kills); those and digits; those and `-`, `_`,
/// `.` (identifiers, host names, URI schemes); text bytes but the space (the characters of a
/// `\S+` pattern); every text byte (see [`is_text_byte`]). A walk takes a subtree at once
/// from a state that survives the narrowest alphabet holding every byte below it, however the
/// state does on other bytes.
pub(crate) fn alphabet_of(b: u8) -> u8 {
    match b {
        b'a'..=b'z' | b'A'..=b'Z' => 0,
        b'0'..=b'9' => 1,
        b'-' | b'_' | b'.' => 2,
        b' ' => 4,
        _ if is_text_byte(b) => 3,
        _ => NO_ALPHABET,
    }
}

/// The first byte of a special token's encoding (never part of UTF-8 text).
pub const SPECIAL_TOKEN_MARKER: u8 = 0xFF;

/// The five bytes that stand for special token `id` inside grammars and token tries.
pub fn special_token_bytes(id: u32) -> [u8; 5] {
    let [a, b, c, d] = id.to_be_bytes();
    [SPECIAL_TOKEN_MARKER, a, b, c, d]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphabets_nest_and_hold_only_text() {
        for b in 0..=255u8 {
            let a = alphabet_of(b);
            assert_eq!(a != NO_ALPHABET, is_text_byte(b), "byte {b}");
        }
        assert_eq!(alphabet_of(b'q'), 0);
        assert_eq!(alphabet_of(b'7'), 1);
        assert_eq!(alphabet_of(b'_'), 2);
        assert_eq!(alphabet_of(b'/'), 3);
        assert_eq!(alphabet_of(b' '), TEXT as u8);
    }
}
