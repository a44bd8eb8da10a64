//! Texts and checks shared by the tokenizer test suites.

#![allow(dead_code)] // each test binary uses a different part

use constrain_vocab::{TokenKind, Tokenizer};

/// Texts whose encoding must spell them back exactly, as `(label, text)`.
pub const ROUND_TRIP_TEXTS: &[(&str, &str)] = &[
    ("empty", ""),
    ("ascii", "Hello, world! The quick brown fox jumps over the lazy dog."),
    (
        "json",
        r#"{"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry"], "nested": {"ok": true, "x": -1.5e-3, "none": null, "esc": "a\"b\\c\u00e9\n"}}"#,
    ),
    (
        "rust",
        "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{v:?}\");\n}\n",
    ),
    (
        "python",
        "def fib(n: int) -> int:\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n\nprint([fib(i) for i in range(10)])\n",
    ),
    ("emoji", "Emoji: 😀 🚀 👍🏽 🇯🇵 ❤️"),
    ("emoji_zwj", "👩‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 🧑🏿‍💻 coder, 👁️‍🗨️"),
    ("cjk", "日本語のテキストと中文文本，还有한국어 텍스트。漢字カタカナひらがな"),
    (
        "mixed_scripts",
        "Ελληνικά, русский, العربية, עברית, हिन्दी, ไทย, Tiếng Việt, Ærøskøbing, naïve café",
    ),
    ("rare_symbols", "𓀀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ∮ E⋅da = Q ꙮ 🜂 \u{10FFFD}"),
    ("control_bytes", "NUL\u{0}BEL\u{7}ESC\u{1b}DEL\u{7f}NBSP\u{a0}end"),
    ("whitespace_runs", "a  b   c\t\td\n\n\ne \r\n f    \n\t \n    \t\t  x"),
    ("trailing_whitespace", "text   \n\n  "),
    ("only_spaces", "        "),
    ("leading_space", " x"),
    ("leading_spaces", "   leading spaces"),
    ("leading_newlines", "\n\nleading newlines"),
    ("digits", "1234567890 3.14159 -0.5e-10 1,000,000 ٣٤٥"),
    ("special_lookalikes", "<|im_end|> <|endoftext|> <eos> </s> <|eot_id|> <end_of_turn> as text"),
    ("long_run", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
];

/// Encodes every text of [`ROUND_TRIP_TEXTS`] and checks the ids are text tokens whose
/// bytes spell the text exactly.
pub fn assert_round_trips(tokenizer: &Tokenizer, name: &str) {
    let vocab = tokenizer.vocabulary();
    for &(label, text) in ROUND_TRIP_TEXTS {
        let ids = tokenizer
            .encode(text)
            .unwrap_or_else(|e| panic!("{name}/{label}: encode failed: {e}"));
        for &id in &ids {
            assert_eq!(
                vocab.kind(id),
                Some(TokenKind::Text),
                "{name}/{label}: id {id} ({:?}) is not a text token",
                vocab.token_bytes(id).map(String::from_utf8_lossy)
            );
        }
        let bytes = tokenizer.decode_bytes(&ids);
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            text,
            "{name}/{label}: ids {ids:?} do not spell the text"
        );
        assert_eq!(bytes, text.as_bytes(), "{name}/{label}");
    }
}

/// Asserts `id` is `kind` with exactly `bytes`.
pub fn assert_token(tokenizer: &Tokenizer, id: u32, kind: TokenKind, bytes: &[u8]) {
    let vocab = tokenizer.vocabulary();
    assert_eq!(vocab.kind(id), Some(kind), "kind of id {id}");
    assert_eq!(
        vocab.token_bytes(id),
        Some(bytes),
        "bytes of id {id}: {:?} vs {:?}",
        vocab.token_bytes(id).map(String::from_utf8_lossy),
        String::from_utf8_lossy(bytes)
    );
}

/// How many tokens of each kind: `(text, special, end_of_sequence)`.
pub fn kind_counts(tokenizer: &Tokenizer) -> (usize, usize, usize) {
    let mut counts = (0, 0, 0);
    for (_, _, kind) in tokenizer.vocabulary().iter() {
        match kind {
            TokenKind::Text => counts.0 += 1,
            TokenKind::Special => counts.1 += 1,
            TokenKind::EndOfSequence => counts.2 += 1,
        }
    }
    counts
}
