//! How a tokenizer's vocabulary strings spell bytes, and how to tell from its `tokenizer.json`.
//!
//! A Hugging Face vocabulary stores every token as a JSON string, but tokens are byte
//! strings (one may be half of a UTF-8 sequence). Two conventions cover the tokenizers in use:
//! GPT-2's byte-level alphabet and SentencePiece's `▁`-for-space with `<0xNN>` byte tokens.

use serde_json::Value;

/// The convention mapping a vocabulary string to the token's bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TokenSpelling {
    /// GPT-2 byte-level BPE: each character stands for one byte through GPT-2's
    /// `bytes_to_unicode` table (`Ġ` is a space, `Ċ` a newline, ...).
    ByteLevel,
    /// SentencePiece style: `space_marker` (normally `▁`) is a space, a token written
    /// `<0xNN>` is the single byte `NN`, anything else is its own UTF-8.
    SentencePiece {
        /// The character written for a space.
        space_marker: char,
    },
}

/// The usual SentencePiece space marker, U+2581 LOWER ONE EIGHTH BLOCK.
pub(crate) const SPACE_MARKER: char = '\u{2581}';

impl TokenSpelling {
    /// The bytes spelled by the vocabulary string `token`.
    ///
    /// A byte-level string holding a character outside GPT-2's table is taken as its own
    /// UTF-8, as the tokenizer's `ByteLevel` decoder does.
    pub fn token_bytes(self, token: &str) -> Vec<u8> {
        match self {
            TokenSpelling::ByteLevel => byte_level_bytes(token).unwrap_or_else(|| token.into()),
            TokenSpelling::SentencePiece { space_marker } => {
                if let Some(byte) = byte_fallback_token(token) {
                    return vec![byte];
                }
                let mut out = Vec::with_capacity(token.len());
                let mut utf8 = [0; 4];
                for c in token.chars() {
                    let c = if c == space_marker { ' ' } else { c };
                    out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                }
                out
            }
        }
    }

    /// Tells the spelling from the serialized `decoder`, `pre_tokenizer` and `model`.
    ///
    /// The decoder is authoritative (it is what turns tokens back into text); the
    /// pre-tokenizer and the model's `byte_fallback` flag (`<0xNN>` tokens) are consulted
    /// when it says nothing.
    pub(crate) fn detect(
        decoder: &Value,
        pre_tokenizer: &Value,
        model_byte_fallback: bool,
    ) -> Result<TokenSpelling, String> {
        if let Some(spelling) = from_component(decoder) {
            return Ok(spelling);
        }
        if let Some(spelling) = from_component(pre_tokenizer) {
            return Ok(spelling);
        }
        if model_byte_fallback {
            return Ok(TokenSpelling::SentencePiece {
                space_marker: SPACE_MARKER,
            });
        }
        Err(
            "cannot tell how vocabulary strings map to bytes: neither the decoder nor the \
             pre-tokenizer is byte-level or SentencePiece-style (ByteLevel, Metaspace, \
             ByteFallback, Replace of \u{2581})"
                .to_string(),
        )
    }
}

/// The spelling a (possibly `Sequence`) decoder or pre-tokenizer implies, if any.
fn from_component(component: &Value) -> Option<TokenSpelling> {
    let parts = component
        .get("decoders")
        .or_else(|| component.get("pretokenizers"))
        .and_then(Value::as_array);
    if let Some(parts) = parts {
        return parts.iter().find_map(from_component);
    }
    let field = |name| component.get(name).and_then(Value::as_str);
    match field("type")? {
        "ByteLevel" => Some(TokenSpelling::ByteLevel),
        "Metaspace" => {
            let space_marker = field("replacement")
                .and_then(|r| r.chars().next())
                .unwrap_or(SPACE_MARKER);
            Some(TokenSpelling::SentencePiece { space_marker })
        }
        "ByteFallback" => Some(TokenSpelling::SentencePiece {
            space_marker: SPACE_MARKER,
        }),
        "Replace" if field("content") == Some(" ") => {
            let pattern = component.get("pattern")?.get("String")?.as_str()?;
            let mut chars = pattern.chars();
            match (chars.next(), chars.next()) {
                (Some(space_marker), None) => Some(TokenSpelling::SentencePiece { space_marker }),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `<0xNN>` (two hex digits) is SentencePiece's token for the raw byte `NN`.
fn byte_fallback_token(token: &str) -> Option<u8> {
    let hex = token.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// The bytes of a byte-level string, or `None` if a character is outside GPT-2's table.
fn byte_level_bytes(token: &str) -> Option<Vec<u8>> {
    token
        .chars()
        .map(|c| CHAR_TO_BYTE.get(c as usize).copied().flatten())
        .collect()
}

/// Number of characters GPT-2's table uses: code points `0..324`.
const TABLE_CHARS: usize = 256 + 68;

/// The inverse of GPT-2's `bytes_to_unicode` (Radford et al., 2019, `encoder.py`).
///
/// The table keeps the 188 printable bytes `!..=~`, `¡..=¬`, `®..=ÿ` as the characters
/// with the same code point and gives the other 68 bytes, in increasing order, the
/// characters U+0100, U+0101, ... so that every byte has a visible, non-space character.
static CHAR_TO_BYTE: [Option<u8>; TABLE_CHARS] = build_char_to_byte();

const fn keeps_own_code_point(byte: u8) -> bool {
    matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

const fn build_char_to_byte() -> [Option<u8>; TABLE_CHARS] {
    let mut table = [None; TABLE_CHARS];
    let mut shifted = 0;
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        if keeps_own_code_point(b) {
            table[byte] = Some(b);
        } else {
            table[256 + shifted] = Some(b);
            shifted += 1;
        }
        byte += 1;
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gpt2_table_is_a_bijection_onto_bytes() {
        let mut seen = [false; 256];
        for b in CHAR_TO_BYTE.iter().flatten() {
            assert!(!seen[*b as usize], "byte {b} mapped twice");
            seen[*b as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn byte_level_well_known_characters() {
        let spell = |s| TokenSpelling::ByteLevel.token_bytes(s);
        assert_eq!(spell("Ġhello"), b" hello");
        assert_eq!(spell("Ċ"), b"\n");
        assert_eq!(spell("ĉ"), b"\t");
        assert_eq!(spell("Ā"), [0u8]);
        assert_eq!(spell("ÃŃ"), "í".as_bytes());
        // Half of a UTF-8 sequence is a legitimate token.
        assert_eq!(spell("ð"), [0xF0]);
        // Outside the table (an added token's content): its own UTF-8.
        assert_eq!(spell("<｜fim▁hole｜>"), "<｜fim▁hole｜>".as_bytes());
    }

    #[test]
    fn sentencepiece_markers_and_byte_tokens() {
        let spell = |s| {
            TokenSpelling::SentencePiece {
                space_marker: SPACE_MARKER,
            }
            .token_bytes(s)
        };
        assert_eq!(spell("▁hello"), b" hello");
        assert_eq!(spell("▁▁"), b"  ");
        assert_eq!(spell("<0x0A>"), b"\n");
        assert_eq!(spell("<0xF0>"), [0xF0]);
        assert_eq!(spell("<0xZZ>"), b"<0xZZ>");
        assert_eq!(spell("<0x100>"), b"<0x100>");
        assert_eq!(spell("日本"), "日本".as_bytes());
    }

    #[test]
    fn detection_prefers_the_decoder() {
        let byte_level = json!({"type": "ByteLevel", "add_prefix_space": true});
        let gemma_decoder = json!({"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]});
        let none = Value::Null;
        assert_eq!(
            TokenSpelling::detect(&byte_level, &none, false),
            Ok(TokenSpelling::ByteLevel)
        );
        assert_eq!(
            TokenSpelling::detect(&gemma_decoder, &byte_level, false),
            Ok(TokenSpelling::SentencePiece {
                space_marker: SPACE_MARKER
            })
        );
        let pre = json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split"}, {"type": "ByteLevel"}]});
        assert_eq!(
            TokenSpelling::detect(&none, &pre, false),
            Ok(TokenSpelling::ByteLevel)
        );
        assert!(matches!(
            TokenSpelling::detect(&none, &none, true),
            Ok(TokenSpelling::SentencePiece { .. })
        ));
        let wordpiece = json!({"type": "WordPiece", "prefix": "##"});
        assert!(TokenSpelling::detect(&wordpiece, &none, false).is_err());
    }
}
