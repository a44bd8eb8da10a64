//! The token trie of a vocabulary: the byte strings of all tokens in one flat, depth-first array.
//!
//! Walking it against an automaton visits every shared prefix once, and a rejected byte skips
//! the whole subtree below it in one jump (`subtree_end`).

use std::sync::{Arc, OnceLock};

use constrain_vocab::{TokenKind, Vocabulary};
use parking_lot::Mutex;

use crate::bytes::{alphabet_of, is_string_char, special_token_bytes, NO_ALPHABET};
use crate::lexeme_masks::{set_bits, LexemeMask, SharedLexemeMasks};

pub(crate) use crate::lexeme_masks::Signature;

/// One trie node: the byte that leads to it, where its subtree ends, where its tokens begin,
/// and what the walks ask about the subtree below it. Kept together and small: a walk
/// visits thousands of nodes spread over megabytes of trie, and a visit should touch one
/// cache line, shared with as many neighbours as fit (four), not one per question.
#[derive(Copy, Clone, Debug)]
#[repr(align(16))]
pub(crate) struct Node {
    pub byte: u8,
    /// The narrowest byte alphabet (see [`alphabet_of`]) holding every byte below,
    /// [`NO_ALPHABET`] when none does.
    alphabet_below: u8,
    /// The depth of the subtree below (0 for a leaf), capped at 255.
    height: u8,
    /// The most characters of a token at or below when every such token is a run of string
    /// characters (capped at 254), `u8::MAX` when one is not.
    string_tokens: u8,
    /// As `string_tokens`, where a token of `k` string characters and then a control byte
    /// (see [`chars_before_control`]) counts `k + 1`: a state that survives that many string
    /// characters, and dies on a control byte after any of them, allows exactly the runs of
    /// string characters below.
    runs_or_broken: u8,
    /// Whether every token below continues with string characters only (see
    /// [`string_characters_from`]: the last may be cut short by the token's end).
    string_below: bool,
    /// Whether every token below continues with string characters beyond ASCII only (as
    /// `string_below`, with no ASCII byte).
    non_ascii_below: bool,
    /// Index one past the last node of this node's subtree.
    pub subtree_end: u32,
    /// Where the tokens of this node's subtree begin in the index's token list: its own
    /// tokens first, then its children's. Tokens are stored in node order, so the node after
    /// it begins where its own end, and the node after its subtree where the subtree's end.
    tokens_start: u32,
}

// Four nodes to a cache line, none across two.
const _: () = assert!(std::mem::size_of::<Node>() == 16);

impl Node {
    fn new(byte: u8, tokens_start: u32) -> Node {
        Node {
            byte,
            alphabet_below: 0,
            height: 0,
            string_tokens: 0,
            runs_or_broken: 0,
            string_below: true,
            non_ascii_below: true,
            subtree_end: 0,
            tokens_start,
        }
    }
}

/// The token trie of one vocabulary. Build it once per tokenizer and share it between grammars.
#[derive(Debug)]
pub struct TokenIndex {
    vocab: Arc<Vocabulary>,
    nodes: Vec<Node>,
    tokens: Vec<u32>,
    eos: Vec<u32>,
    mask_words: usize,
    /// The subtrees with so many tokens that or-ing a whole mask is quicker than setting them
    /// one by one, as masks (see [`DENSE_TOKENS_PER_WORD`]).
    dense: NodeMasks,
    /// The dense subtrees that are not all short string tokens, as masks of their short string
    /// tokens (see [`SHORT_STRING`]): a walk from a state that survives that many string
    /// characters allows them all at once, and then skips every subtree of them below.
    short_strings: NodeMasks,
    /// The dense subtrees of runs of string characters and tokens that break off at a control
    /// byte, both, as masks of their runs (see [`Self::allow_runs_below`]).
    runs: NodeMasks,
    /// Per entry of `tokens`: its string characters when it is a run of them, `u8::MAX` when
    /// it is not.
    token_chars: Vec<u8>,
    /// Per count `r` below [`STRING_RUNS`]: every token that is a run of at most `r` string
    /// characters, as a mask (`mask_words` words each). A lexeme walk from a state that
    /// survives exactly `r` such characters takes all of them at once and skips every subtree
    /// of such tokens (see [`Self::allow_string_runs`]).
    string_runs: Vec<u32>,
    /// Per node whose tokens are all short strings: where a walk that allowed them goes on
    /// (see [`Self::past_short_strings`]); 0 for the other nodes. Apart from the nodes, which
    /// every walk reads, as only walks from states surviving long strings read these.
    past_short_strings: Vec<u32>,
    /// As `past_short_strings`, for [`Self::past_short_or_broken`].
    past_short_or_broken: Vec<u32>,
    /// Lexeme walks by lexer-state signature, shared by every grammar compiled for this index.
    lexeme_masks: Mutex<SharedLexemeMasks>,
    /// Per byte value: the text tokens holding it (see [`Self::text_tokens_with_byte`]).
    tokens_with_byte: Box<[OnceLock<Box<[u32]>>]>,
    /// Whether every byte alone is a token (see [`Self::spells_every_byte`]).
    spells_every_byte: bool,
    /// The root's child per byte (0: none): the root has up to 256 children, which
    /// [`Self::child`] would otherwise scan one by one (tokenizing texts starts every token
    /// there).
    root_children: Box<[u32; 256]>,
}

/// A mask of tokens for some trie nodes.
#[derive(Debug, Default)]
struct NodeMasks {
    /// Per node: where its mask starts in `bits` ([`NO_MASK`] for a node without one).
    at: Vec<u32>,
    /// The masks, `words` words each.
    bits: Vec<u32>,
    words: usize,
}

/// [`NodeMasks::at`] of a node without a mask.
const NO_MASK: u32 = u32::MAX;

impl NodeMasks {
    /// Masks of `words` words for the nodes `tokens_of` gives tokens for.
    fn build(
        nodes: usize,
        words: usize,
        mut tokens_of: impl FnMut(usize) -> Option<Vec<u32>>,
    ) -> NodeMasks {
        let mut masks = NodeMasks {
            at: vec![NO_MASK; nodes],
            bits: Vec::new(),
            words,
        };
        for node in 0..nodes {
            if let Some(tokens) = tokens_of(node) {
                let start = masks.bits.len();
                masks.at[node] = start as u32;
                masks.bits.resize(start + words, 0);
                set_bits(&mut masks.bits[start..], &tokens);
            }
        }
        masks
    }

    #[inline]
    fn has(&self, node: usize) -> bool {
        self.at[node] != NO_MASK
    }

    /// Ors the mask of `node` into `mask`; returns whether `node` has one.
    #[inline]
    fn or_into(&self, node: usize, mask: &mut [u32]) -> bool {
        let at = self.at[node];
        if at == NO_MASK {
            return false;
        }
        let bits = &self.bits[at as usize..at as usize + self.words];
        mask.iter_mut().zip(bits).for_each(|(m, b)| *m |= b);
        true
    }
}

/// Tokens of at most this many string characters are "short" (see
/// [`TokenIndex::allow_short_strings`]): nearly every token of a vocabulary is.
pub(crate) const SHORT_STRING: u8 = 16;

/// Counts of string characters [`TokenIndex::allow_string_runs`] has a mask for: those a
/// string radius below `text_run::MAX_RADIUS` can be (1 MB for a 128k vocabulary).
pub(crate) const STRING_RUNS: usize = 64;

/// A subtree gets a mask of its own from this many tokens per mask word on: setting that many
/// scattered bits costs more than or-ing every word (a few dozen subtrees of a 128k or 262k
/// vocabulary, about 1 MB).
const DENSE_TOKENS_PER_WORD: f64 = 0.25;

impl TokenIndex {
    /// Indexes every text and special token of `vocab`.
    ///
    /// Special tokens are indexed under their grammar spelling (`0xFF` + big-endian id), so only
    /// grammars that name them can allow them; end-of-sequence tokens are not indexed at all:
    /// they are allowed exactly when the grammar is complete.
    pub fn new(vocab: Arc<Vocabulary>) -> Arc<TokenIndex> {
        let mut entries: Vec<(Vec<u8>, u32)> = Vec::with_capacity(vocab.len());
        let mut eos = Vec::new();
        for (id, bytes, kind) in vocab.iter() {
            match kind {
                TokenKind::Text if !bytes.is_empty() => entries.push((bytes.to_vec(), id)),
                TokenKind::Text => {}
                TokenKind::Special => entries.push((special_token_bytes(id).to_vec(), id)),
                TokenKind::EndOfSequence => eos.push(id),
            }
        }
        entries.sort_unstable();
        let mut nodes = vec![Node::new(0, 0)];
        let mut tokens = Vec::with_capacity(entries.len());
        let mut string_from = Vec::new();
        // Per entry of `tokens`: its characters when it is all string characters.
        let mut token_chars: Vec<u8> = Vec::with_capacity(entries.len());
        // `path[d]` is the node at depth d + 1 on the current path.
        let mut path: Vec<usize> = Vec::new();
        let mut previous: &[u8] = &[];
        for (bytes, id) in &entries {
            let common = bytes
                .iter()
                .zip(previous)
                .take_while(|(a, b)| a == b)
                .count();
            while path.len() > common {
                let done = path.pop().unwrap_or(0);
                nodes[done].subtree_end = nodes.len() as u32;
            }
            for &b in &bytes[common..] {
                path.push(nodes.len());
                nodes.push(Node::new(b, tokens.len() as u32));
            }
            string_characters_from(bytes, &mut string_from);
            let whole = string_from[0].map_or(u8::MAX, |chars| chars.min(u8::MAX - 1));
            let run_or_broken = if whole < u8::MAX {
                whole
            } else {
                chars_before_control(bytes).map_or(u8::MAX, |k| k.saturating_add(1))
            };
            // Where the bytes beyond ASCII that end the token begin.
            let non_ascii_from = bytes.iter().rposition(|&b| b < 0x80).map_or(0, |p| p + 1);
            for (depth, node) in std::iter::once(0).chain(path.iter().copied()).enumerate() {
                nodes[node].string_below &= string_from[depth].is_some();
                nodes[node].non_ascii_below &=
                    string_from[depth].is_some() && depth >= non_ascii_from;
                nodes[node].string_tokens = nodes[node].string_tokens.max(whole);
                nodes[node].runs_or_broken = nodes[node].runs_or_broken.max(run_or_broken);
            }
            // In sorted order a token comes before every longer one it begins, so a node's own
            // tokens come before its children's, right where its subtree's begin.
            debug_assert_eq!(
                path.last().map_or(0, |&last| last + 1),
                nodes.len(),
                "a token's node has no children yet"
            );
            tokens.push(*id);
            token_chars.push(whole);
            previous = bytes;
        }
        while let Some(done) = path.pop() {
            nodes[done].subtree_end = nodes.len() as u32;
        }
        nodes[0].subtree_end = nodes.len() as u32;
        let mask_words = vocab.logits_width().div_ceil(32);
        let parents = parents(&nodes);
        let height = subtree_heights(&nodes, &parents);
        let alphabet_below = alphabets_below(&nodes, &parents);
        let past_short_strings = past_short(&nodes, &parents, |node| node.string_tokens);
        let past_short_or_broken = past_short(&nodes, &parents, |node| node.runs_or_broken);
        for (i, node) in nodes.iter_mut().enumerate() {
            node.height = height[i];
            node.alphabet_below = alphabet_below[i];
        }
        let dense = dense_subtrees(&nodes, &tokens, mask_words);
        let dense_where = |wanted: &dyn Fn(usize, &[u8]) -> bool, keep: &dyn Fn(u8) -> bool| {
            dense_masks_where(
                &nodes,
                &tokens,
                &token_chars,
                &dense,
                mask_words,
                wanted,
                keep,
            )
        };
        // The short string tokens (see [`SHORT_STRING`]) of the dense subtrees that hold
        // other tokens too (when all are, the subtree's own mask serves).
        let short_strings =
            dense_where(&|_, chars| chars.iter().any(|&c| c > SHORT_STRING), &|c| {
                c <= SHORT_STRING
            });
        // The runs of the dense subtrees with tokens that break off at a control byte and
        // none that is neither that nor a run.
        let runs = dense_where(
            &|node, _| nodes[node].string_tokens == u8::MAX && nodes[node].runs_or_broken < u8::MAX,
            &|c| c < u8::MAX,
        );
        let string_runs = string_run_masks(&tokens, &token_chars, mask_words);
        let mut root_children = Box::new([0u32; 256]);
        let mut spelled = [false; 256];
        let mut i = 1;
        while i < nodes.len() {
            let start = nodes[i].tokens_start as usize;
            root_children[nodes[i].byte as usize] = i as u32;
            spelled[nodes[i].byte as usize] |= tokens_start_at(&nodes, &tokens, i + 1) > start;
            i = nodes[i].subtree_end as usize;
        }
        let spells_every_byte = spelled.iter().all(|&s| s);
        Arc::new(TokenIndex {
            vocab,
            nodes,
            tokens,
            eos,
            mask_words,
            dense,
            short_strings,
            runs,
            token_chars,
            string_runs,
            past_short_strings,
            past_short_or_broken,
            lexeme_masks: Mutex::default(),
            tokens_with_byte: (0..256).map(|_| OnceLock::new()).collect(),
            spells_every_byte,
            root_children,
        })
    }

    /// The text tokens whose bytes hold `byte`, in id order: all a text check must read where
    /// only that byte can matter to it. Found on first use, then kept for every grammar.
    pub fn text_tokens_with_byte(&self, byte: u8) -> &[u32] {
        self.tokens_with_byte[usize::from(byte)].get_or_init(|| {
            self.vocab
                .iter()
                .filter(|(_, bytes, kind)| *kind == TokenKind::Text && bytes.contains(&byte))
                .map(|(id, _, _)| id)
                .collect()
        })
    }

    /// The lexeme mask of the lexer states with `signature`, if a grammar computed it already.
    pub(crate) fn shared_lexeme_mask(&self, signature: &Signature) -> Option<Arc<LexemeMask>> {
        self.lexeme_masks.lock().get(signature)
    }

    /// Shares `mask`, the lexeme mask of the lexer states with `signature`.
    pub(crate) fn share_lexeme_mask(&self, signature: Signature, mask: Arc<LexemeMask>) {
        self.lexeme_masks.lock().insert(signature, mask);
    }

    /// The indexed vocabulary.
    pub fn vocabulary(&self) -> &Arc<Vocabulary> {
        &self.vocab
    }

    /// Words of a token mask: `ceil(logits_width / 32)`.
    pub fn mask_words(&self) -> usize {
        self.mask_words
    }

    /// Number of trie nodes (the root included).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub(crate) fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub(crate) fn eos(&self) -> &[u32] {
        &self.eos
    }

    /// The tokens spelled exactly by node `node`.
    #[inline]
    pub(crate) fn tokens_of(&self, node: usize) -> &[u32] {
        let start = self.nodes[node].tokens_start as usize;
        &self.tokens[start..tokens_start_at(&self.nodes, &self.tokens, node + 1)]
    }

    /// The child of `node` reached by `byte`.
    pub(crate) fn child(&self, node: usize, byte: u8) -> Option<usize> {
        if node == 0 {
            let child = self.root_children[byte as usize];
            return (child != 0).then_some(child as usize);
        }
        let end = self.nodes[node].subtree_end as usize;
        let mut i = node + 1;
        while i < end {
            if self.nodes[i].byte == byte {
                return Some(i);
            }
            i = self.nodes[i].subtree_end as usize;
        }
        None
    }

    /// Whether `node` has children.
    pub(crate) fn has_children(&self, node: usize) -> bool {
        self.nodes[node].subtree_end as usize > node + 1
    }

    /// The tokens spelled by `node` and every node below it: tokens are stored in node order
    /// (every node's `tokens_start` is where its subtree's tokens begin), so one run.
    pub(crate) fn subtree_tokens(&self, node: usize) -> &[u32] {
        subtree_tokens(&self.nodes, &self.tokens, node)
    }

    /// Sets the bits of every token of `node`'s subtree in `mask` (`mask_words` long).
    #[inline]
    pub(crate) fn allow_subtree(&self, mask: &mut [u32], node: usize) {
        if !self.dense.or_into(node, mask) {
            set_bits(mask, self.subtree_tokens(node));
        }
    }

    /// How deep the subtree below `node` goes (capped at 255): a state of at least that text
    /// radius (see `text_run`) allows all of it when [`Self::text_below`] holds.
    pub(crate) fn subtree_height(&self, node: usize) -> u8 {
        self.nodes[node].height
    }

    /// Whether every byte alone is a token: longest-match tokenization then spells any
    /// text, in at most as many tokens as it has bytes.
    pub(crate) fn spells_every_byte(&self) -> bool {
        self.spells_every_byte
    }

    /// The most bytes of any token (special tokens as they are spelled in the trie), or
    /// `u32::MAX` when some token is too long for [`Self::subtree_height`] to tell.
    pub(crate) fn longest_token(&self) -> u32 {
        match self.nodes.first().map(|root| root.height) {
            Some(h) if h < u8::MAX => u32::from(h),
            _ => u32::MAX,
        }
    }

    /// Whether every byte below `node` is a text byte (see [`is_text_byte`]).
    pub(crate) fn text_below(&self, node: usize) -> bool {
        self.nodes[node].alphabet_below != NO_ALPHABET
    }

    /// The narrowest byte alphabet holding every byte below `node` (see [`alphabet_of`]),
    /// if one does: a state that survives that alphabet as deep as the subtree goes allows
    /// all of it.
    pub(crate) fn alphabet_below(&self, node: usize) -> Option<usize> {
        let alphabet = self.nodes[node].alphabet_below;
        (alphabet != NO_ALPHABET).then_some(alphabet as usize)
    }

    /// Whether `node` keeps its short string tokens as a mask of their own (see
    /// [`Self::allow_short_strings`]).
    #[inline]
    pub(crate) fn has_short_strings(&self, node: usize) -> bool {
        self.short_strings.has(node)
    }

    /// Sets the bits of every token below `node` of at most [`SHORT_STRING`] string
    /// characters, if `node` keeps them as a mask of their own; returns whether it did. The
    /// caller must know that all such tokens are allowed.
    #[inline]
    pub(crate) fn allow_short_strings(&self, mask: &mut [u32], node: usize) -> bool {
        self.short_strings.or_into(node, mask)
    }

    /// Where a walk that has allowed the short string tokens (see
    /// [`Self::allow_short_strings`]) goes on from `node`: past it and the siblings after it
    /// whose tokens are all short strings, or `None` when `node` holds other tokens.
    #[inline]
    pub(crate) fn past_short_strings(&self, node: usize) -> Option<usize> {
        (self.nodes[node].string_tokens <= SHORT_STRING)
            .then(|| self.past_short_strings[node] as usize)
    }

    /// As [`Self::past_short_strings`], past the siblings whose tokens are short strings or
    /// break off at a control byte within as many characters (see [`Self::runs_or_broken`]),
    /// for a walk from a state that control bytes kill: those tokens are rejected.
    #[inline]
    pub(crate) fn past_short_or_broken(&self, node: usize) -> Option<usize> {
        (self.nodes[node].runs_or_broken <= SHORT_STRING)
            .then(|| self.past_short_or_broken[node] as usize)
    }

    /// Sets the bits of every token that is a run of at most `chars` string characters;
    /// returns whether it could (`chars` below [`STRING_RUNS`]). The caller must know that all
    /// such tokens are allowed.
    pub(crate) fn allow_string_runs(&self, mask: &mut [u32], chars: u8) -> bool {
        let chars = chars as usize;
        if chars >= STRING_RUNS {
            return false;
        }
        let bits = &self.string_runs[chars * self.mask_words..(chars + 1) * self.mask_words];
        mask.iter_mut().zip(bits).for_each(|(m, b)| *m |= b);
        true
    }

    /// Sets the bits of every token below `node` that is a run of at most `chars` string
    /// characters. The caller must know that all such tokens are allowed. Reads the subtree's
    /// tokens in order, so a walk that decides a large subtree this way reads no node of it.
    pub(crate) fn allow_runs_up_to(&self, mask: &mut [u32], node: usize, chars: u8) {
        let (from, below) = subtree_range(&self.nodes, &self.tokens, node);
        let counts = &self.token_chars[from..from + below.len()];
        for (&t, _) in below.iter().zip(counts).filter(|&(_, &c)| c <= chars) {
            mask[(t >> 5) as usize] |= 1 << (t & 31);
        }
    }

    /// Whether every token below `node` continues with string characters only (see
    /// [`string_characters_from`]).
    pub(crate) fn string_below(&self, node: usize) -> bool {
        self.nodes[node].string_below
    }

    /// Whether every token below `node` continues with string characters beyond ASCII only.
    pub(crate) fn non_ascii_below(&self, node: usize) -> bool {
        self.nodes[node].non_ascii_below
    }

    /// As [`Self::string_tokens`], a token of `k` string characters and then a control byte
    /// counting `k + 1`, `u8::MAX` when some token is neither.
    #[inline]
    pub(crate) fn runs_or_broken(&self, node: usize) -> u8 {
        self.nodes[node].runs_or_broken
    }

    /// Sets the bits of every token below `node` that is a run of string characters. The
    /// caller must know that all of them are allowed.
    pub(crate) fn allow_runs_below(&self, mask: &mut [u32], node: usize) {
        if self.runs.or_into(node, mask) {
            return;
        }
        let (from, below) = subtree_range(&self.nodes, &self.tokens, node);
        let chars = &self.token_chars[from..from + below.len()];
        for (&t, _) in below.iter().zip(chars).filter(|&(_, &c)| c < u8::MAX) {
            mask[(t >> 5) as usize] |= 1 << (t & 31);
        }
    }

    /// The most characters of a token at or below `node` when every such token is a run of
    /// string characters, `u8::MAX` when one is not: a lexeme walk from a state that
    /// survives that many string characters allows all of them.
    pub(crate) fn string_tokens(&self, node: usize) -> u8 {
        self.nodes[node].string_tokens
    }
}

/// `from[k]` for `k` in `0..=bytes.len()`: how many characters `bytes[k..]` holds if it is a
/// run of [`is_string_char`] characters (capped at 255), `None` if it is not. The last
/// character may be cut short by the end of the token (byte-level vocabularies split
/// characters between tokens): it counts as one, since a state that survives one more
/// string character of any script survives the first bytes of every one.
fn string_characters_from(bytes: &[u8], from: &mut Vec<Option<u8>>) {
    from.clear();
    from.resize(bytes.len() + 1, None);
    from[bytes.len()] = Some(0);
    for k in (0..bytes.len()).rev() {
        let width = match bytes[k] {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => continue,
        };
        let Some(char_bytes) = bytes.get(k..k + width) else {
            if starts_a_character(&bytes[k..]) {
                from[k] = Some(1);
            }
            continue;
        };
        let whole = std::str::from_utf8(char_bytes)
            .ok()
            .and_then(|s| s.chars().next())
            .is_some_and(is_string_char);
        if whole {
            from[k] = from[k + width].map(|chars| chars.saturating_add(1));
        }
    }
}

/// How many string characters `bytes` holds before its first control byte (U+0000 to U+001F),
/// when everything before that byte is a run of whole string characters; `None` otherwise (no
/// control byte, or something else comes first).
fn chars_before_control(bytes: &[u8]) -> Option<u8> {
    let at = bytes.iter().position(|&b| b < b' ')?;
    let before = std::str::from_utf8(&bytes[..at]).ok()?;
    before
        .chars()
        .all(is_string_char)
        .then(|| before.chars().count().min(usize::from(u8::MAX - 2)) as u8)
}

/// Whether `bytes`, shorter than the character its first byte announces, begins the UTF-8
/// encoding of some character (the ranges of RFC 3629, section 4: no overlong form, no
/// surrogate, nothing above U+10FFFF). Every character beyond ASCII is a string character but
/// the line separators, and their first bytes begin string characters too (U+2000 to U+2027).
fn starts_a_character(bytes: &[u8]) -> bool {
    let second = match bytes.first() {
        Some(0xC2..=0xDF | 0xE1..=0xEC | 0xEE..=0xEF | 0xF1..=0xF3) => 0x80..=0xBF,
        Some(0xE0) => 0xA0..=0xBF,
        Some(0xED) => 0x80..=0x9F,
        Some(0xF0) => 0x90..=0xBF,
        Some(0xF4) => 0x80..=0x8F,
        _ => return false,
    };
    bytes.get(1).is_none_or(|b| second.contains(b))
        && bytes.iter().skip(2).all(|b| (0x80..=0xBF).contains(b))
}

/// Per node of a depth-first trie: its parent (the root's is itself).
fn parents(nodes: &[Node]) -> Vec<u32> {
    let mut parent = vec![0u32; nodes.len()];
    // Open ancestors: (node, end of its subtree).
    let mut open: Vec<(usize, usize)> = vec![(0, nodes.len())];
    for (i, node) in nodes.iter().enumerate().skip(1) {
        while open.last().is_some_and(|&(_, end)| end <= i) {
            open.pop();
        }
        parent[i] = open.last().map_or(0, |&(p, _)| p as u32);
        open.push((i, node.subtree_end as usize));
    }
    parent
}

/// Per node of a depth-first trie: the narrowest byte alphabet holding every byte below it.
fn alphabets_below(nodes: &[Node], parent: &[u32]) -> Vec<u8> {
    // Alphabets are nested, so the narrowest holding several bytes is the widest of theirs.
    let mut below = vec![0u8; nodes.len()];
    for i in (1..nodes.len()).rev() {
        let p = parent[i] as usize;
        below[p] = below[p].max(alphabet_of(nodes[i].byte)).max(below[i]);
    }
    below
}

/// Per node of a depth-first trie: how deep its subtree goes below it (capped at 255).
fn subtree_heights(nodes: &[Node], parent: &[u32]) -> Vec<u8> {
    let mut height = vec![0u8; nodes.len()];
    for i in (1..nodes.len()).rev() {
        let p = parent[i] as usize;
        height[p] = height[p].max(height[i].saturating_add(1));
    }
    height
}

fn subtree_tokens<'a>(nodes: &[Node], tokens: &'a [u32], node: usize) -> &'a [u32] {
    subtree_range(nodes, tokens, node).1
}

/// Where the tokens of `node`'s subtree start in `tokens`, and the tokens.
fn subtree_range<'a>(nodes: &[Node], tokens: &'a [u32], node: usize) -> (usize, &'a [u32]) {
    let n = &nodes[node];
    let start = n.tokens_start as usize;
    let end = tokens_start_at(nodes, tokens, n.subtree_end as usize);
    (start, &tokens[start..end])
}

/// Where the tokens of node `node` begin, the end of the list past the last node: where the
/// tokens of every node before it end.
#[inline]
fn tokens_start_at(nodes: &[Node], tokens: &[u32], node: usize) -> usize {
    nodes
        .get(node)
        .map_or(tokens.len(), |n| n.tokens_start as usize)
}

/// The masks of the subtrees with enough tokens (see [`DENSE_TOKENS_PER_WORD`]).
fn dense_subtrees(nodes: &[Node], tokens: &[u32], mask_words: usize) -> NodeMasks {
    let least = ((mask_words as f64 * DENSE_TOKENS_PER_WORD) as usize).max(64);
    NodeMasks::build(nodes.len(), mask_words, |node| {
        let below = subtree_tokens(nodes, tokens, node);
        (below.len() >= least).then(|| below.to_vec())
    })
}

/// Masks for the dense subtrees that `wanted` picks (given the node and the string characters
/// of its tokens), each of the tokens whose string characters `keep` takes (`token_chars`: per
/// entry of `tokens`, as the index keeps them).
fn dense_masks_where(
    nodes: &[Node],
    tokens: &[u32],
    token_chars: &[u8],
    dense: &NodeMasks,
    mask_words: usize,
    wanted: impl Fn(usize, &[u8]) -> bool,
    keep: impl Fn(u8) -> bool,
) -> NodeMasks {
    NodeMasks::build(nodes.len(), mask_words, |node| {
        if !dense.has(node) {
            return None;
        }
        let (from, below) = subtree_range(nodes, tokens, node);
        let chars = &token_chars[from..from + below.len()];
        wanted(node, chars).then(|| {
            below
                .iter()
                .zip(chars)
                .filter(|&(_, &c)| keep(c))
                .map(|(&t, _)| t)
                .collect()
        })
    })
}

/// The masks of [`TokenIndex::string_runs`]: each count's tokens added to the previous mask.
fn string_run_masks(tokens: &[u32], token_chars: &[u8], mask_words: usize) -> Vec<u32> {
    let mut by_chars: Vec<Vec<u32>> = vec![Vec::new(); STRING_RUNS];
    for (&token, &chars) in tokens.iter().zip(token_chars) {
        if let Some(same) = by_chars.get_mut(chars as usize) {
            same.push(token);
        }
    }
    let mut masks = vec![0u32; STRING_RUNS * mask_words];
    for (chars, same) in by_chars.iter().enumerate() {
        let (before, this) = masks.split_at_mut(chars * mask_words);
        let this = &mut this[..mask_words];
        if chars > 0 {
            this.copy_from_slice(&before[(chars - 1) * mask_words..]);
        }
        set_bits(this, same);
    }
    masks
}

/// Per node of a depth-first trie whose `count` is at most [`SHORT_STRING`]: the next sibling
/// for which it is not, or the end of its parent's subtree (0 for the other nodes).
fn past_short(nodes: &[Node], parent: &[u32], count: impl Fn(&Node) -> u8) -> Vec<u32> {
    let short = |i: usize| count(&nodes[i]) <= SHORT_STRING;
    let mut past = vec![0u32; nodes.len()];
    for i in (1..nodes.len()).rev() {
        if !short(i) {
            continue;
        }
        let next = nodes[i].subtree_end as usize;
        let parent_end = nodes[parent[i] as usize].subtree_end as usize;
        past[i] = if next < parent_end && short(next) {
            past[next]
        } else {
            next as u32
        };
    }
    past
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`letter_vocab`] with tokens that are not short strings under some letters: with a
    /// quote, with a backslash, and longer than [`SHORT_STRING`] characters.
    fn mixed_letter_vocab() -> Arc<Vocabulary> {
        let base = letter_vocab();
        let mut tokens: Vec<(u32, Vec<u8>, TokenKind)> = base
            .iter()
            .map(|(id, bytes, kind)| (id, bytes.to_vec(), kind))
            .collect();
        let extra: [&[u8]; 19] = [
            b"a\"",
            b"ab\"",
            b"b\\n",
            b"\"x",
            b"abcdefghijklmnopqrstu",
            b"zz zz zz zz zz zz zz",
            // Characters cut short by the token's end, whole or not at all.
            b"a\xE6\x97",
            b"ab\xF0\x9F",
            b"abcdefghijklmnop\xC3",
            b"ab\xED\xA0",
            b"a\x97",
            b"b\xE6\x97a",
            // Runs broken off at a control byte, and tokens that break off otherwise first.
            b"ab\n",
            b"a\n\n\"",
            b"\t",
            b"abc\r\nx",
            b"a\"\n",
            b"b\xE6\n",
            b"zz\n",
        ];
        for (id, word) in (base.len() as u32..).zip(extra) {
            tokens.push((id, word.to_vec(), TokenKind::Text));
        }
        Arc::new(Vocabulary::from_tokens(tokens).expect("distinct ids"))
    }

    /// The characters of `bytes` when they are string characters, the last possibly cut short
    /// by the end (the standard library's decoder says where input ended mid-character).
    fn string_run_chars(bytes: &[u8]) -> Option<usize> {
        let (text, cut) = match std::str::from_utf8(bytes) {
            Ok(text) => (text, 0),
            Err(e) if e.error_len().is_none() => {
                let whole = std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()?;
                (whole, 1)
            }
            Err(_) => return None,
        };
        text.chars()
            .all(is_string_char)
            .then(|| text.chars().count() + cut)
    }

    /// `k + 1` for `k` string characters and then a control byte (whatever follows).
    fn broken_chars(bytes: &[u8]) -> Option<usize> {
        chars_before_control(bytes).map(|k| usize::from(k) + 1)
    }

    #[test]
    fn characters_before_a_control_byte_are_counted() {
        assert_eq!(chars_before_control(b"ab\n"), Some(2));
        assert_eq!(chars_before_control("é\t\"x".as_bytes()), Some(1));
        assert_eq!(chars_before_control(b"\r\n"), Some(0));
        assert_eq!(chars_before_control(b"ab"), None, "no control byte");
        assert_eq!(chars_before_control(b"a\"\n"), None, "a quote first");
        assert_eq!(chars_before_control(b"a\\\n"), None, "a backslash first");
        assert_eq!(
            chars_before_control(&[b'a', 0xE6, b'\n']),
            None,
            "a cut character first"
        );
    }

    #[test]
    fn runs_and_tokens_broken_at_a_control_byte_are_told_apart() {
        let index = TokenIndex::new(mixed_letter_vocab());
        let vocab = index.vocabulary().clone();
        let bytes = |t: u32| vocab.token_bytes(t).expect("indexed token");
        let mut masks = 0;
        for node in 0..index.node_count() {
            let below = index.subtree_tokens(node);
            let counts: Option<Vec<usize>> = below
                .iter()
                .map(|&t| string_run_chars(bytes(t)).or_else(|| broken_chars(bytes(t))))
                .collect();
            let expected = counts.map_or(u8::MAX, |c| c.into_iter().max().unwrap_or(0) as u8);
            assert_eq!(index.runs_or_broken(node), expected, "node {node}");
            if expected == u8::MAX {
                continue;
            }
            masks += usize::from(index.runs.has(node));
            let mut got = vec![0u32; index.mask_words()];
            index.allow_runs_below(&mut got, node);
            let runs: Vec<u32> = below
                .iter()
                .copied()
                .filter(|&t| string_run_chars(bytes(t)).is_some())
                .collect();
            let mut want = vec![0u32; index.mask_words()];
            set_bits(&mut want, &runs);
            assert_eq!(got, want, "node {node}");
        }
        assert!(masks >= 1, "a dense subtree keeps its runs as a mask");
        // Jumps pass exactly the siblings of short runs and short broken tokens.
        let short_or_broken = |t: u32| {
            string_run_chars(bytes(t))
                .or_else(|| broken_chars(bytes(t)))
                .is_some_and(|c| c <= SHORT_STRING as usize)
        };
        let parents = parents(index.nodes());
        for (node, &parent) in parents.iter().enumerate().skip(1) {
            let all = index
                .subtree_tokens(node)
                .iter()
                .all(|&t| short_or_broken(t));
            let Some(past) = index.past_short_or_broken(node) else {
                assert!(!all, "node {node}");
                continue;
            };
            let mut at = node;
            while at < past {
                let below = index.subtree_tokens(at);
                assert!(below.iter().all(|&t| short_or_broken(t)), "node {at}");
                at = index.nodes()[at].subtree_end as usize;
            }
            assert_eq!(at, past, "jumps go sibling by sibling");
            let parent_end = index.nodes()[parent as usize].subtree_end as usize;
            assert!(past == parent_end || index.past_short_or_broken(past).is_none());
        }
    }

    #[test]
    fn string_run_masks_hold_exactly_the_tokens_of_so_many_string_characters() {
        let index = TokenIndex::new(mixed_letter_vocab());
        let vocab = index.vocabulary().clone();
        let chars = string_run_chars;
        for count in [0u8, 1, 2, 5, 16, STRING_RUNS as u8 - 1] {
            let mut got = vec![0u32; index.mask_words()];
            assert!(index.allow_string_runs(&mut got, count));
            let expected: Vec<u32> = vocab
                .iter()
                .filter(|(_, bytes, kind)| *kind == TokenKind::Text && !bytes.is_empty())
                .filter(|(_, bytes, _)| chars(bytes).is_some_and(|c| c <= count as usize))
                .map(|(id, _, _)| id)
                .collect();
            let mut want = vec![0u32; index.mask_words()];
            set_bits(&mut want, &expected);
            assert_eq!(got, want, "{count} characters");
        }
        let mut mask = vec![0u32; index.mask_words()];
        assert!(!index.allow_string_runs(&mut mask, STRING_RUNS as u8));
    }

    #[test]
    fn short_string_masks_and_jumps_cover_exactly_the_short_string_tokens() {
        let index = TokenIndex::new(mixed_letter_vocab());
        let vocab = index.vocabulary().clone();
        let short = |t: u32| {
            let bytes = vocab.token_bytes(t).expect("indexed token");
            string_run_chars(bytes).is_some_and(|c| c <= SHORT_STRING as usize)
        };
        let mut masks = 0;
        for node in 0..index.node_count() {
            let mut got = vec![0u32; index.mask_words()];
            if index.allow_short_strings(&mut got, node) {
                masks += 1;
                let mut expected = vec![0u32; index.mask_words()];
                let below: Vec<u32> = index
                    .subtree_tokens(node)
                    .iter()
                    .copied()
                    .filter(|&t| short(t))
                    .collect();
                set_bits(&mut expected, &below);
                assert_eq!(got, expected, "node {node}");
            }
            if let Some(past) = index.past_short_strings(node) {
                // Every node skipped holds only short string tokens, and the jump lands on a
                // sibling that does not, or at the end of the parent's subtree.
                let mut at = node;
                while at < past {
                    assert!(
                        index.subtree_tokens(at).iter().all(|&t| short(t)),
                        "node {at}"
                    );
                    at = index.nodes()[at].subtree_end as usize;
                }
                assert_eq!(at, past, "jumps go sibling by sibling");
                let parents = parents(index.nodes());
                let parent_end = index.nodes()[parents[node] as usize].subtree_end as usize;
                assert!(past == parent_end || index.past_short_strings(past).is_none());
            } else {
                assert!(
                    !index.subtree_tokens(node).iter().all(|&t| short(t)),
                    "node {node}"
                );
            }
        }
        assert!(
            masks >= 2,
            "the root and the letter `a` hold other tokens: {masks}"
        );
    }

    /// Every two- and three-letter lowercase word, ids shuffled by a multiplier.
    fn letter_vocab() -> Arc<Vocabulary> {
        let letters = b'a'..=b'z';
        let words: Vec<Vec<u8>> = letters
            .clone()
            .flat_map(|a| letters.clone().map(move |b| vec![a, b]))
            .chain(letters.clone().flat_map(|a| {
                letters
                    .clone()
                    .flat_map(move |b| (b'a'..=b'z').map(move |c| vec![a, b, c]))
            }))
            .collect();
        let n = words.len() as u32;
        let vocab = Vocabulary::from_tokens(
            words
                .into_iter()
                .enumerate()
                .map(|(i, w)| ((i as u32 * 7919) % n, w, TokenKind::Text)),
        )
        .expect("distinct ids: 7919 is prime and does not divide the count");
        Arc::new(vocab)
    }

    #[test]
    fn dense_subtrees_allow_exactly_their_tokens() {
        let index = TokenIndex::new(letter_vocab());
        let dense = index.dense.at.iter().filter(|&&at| at != NO_MASK).count();
        assert!(
            dense > 1,
            "the root and the first letters have masks of their own"
        );
        assert!(
            dense < index.node_count(),
            "small subtrees set their tokens one by one"
        );
        for node in 0..index.node_count() {
            let mut expected = vec![0u32; index.mask_words()];
            set_bits(&mut expected, index.subtree_tokens(node));
            let mut got = vec![0u32; index.mask_words()];
            index.allow_subtree(&mut got, node);
            assert_eq!(got, expected, "node {node}");
            // Or-ed into a mask with bits set already, nothing is cleared.
            let mut both = vec![u32::MAX; index.mask_words()];
            index.allow_subtree(&mut both, node);
            assert!(both.iter().all(|&w| w == u32::MAX), "node {node}");
        }
    }

    fn from(bytes: &[u8]) -> Vec<bool> {
        let mut out = Vec::new();
        string_characters_from(bytes, &mut out);
        out.iter().map(Option::is_some).collect()
    }

    #[test]
    fn string_characters_are_counted() {
        let mut out = Vec::new();
        string_characters_from("aé日\"x".as_bytes(), &mut out);
        assert_eq!(
            out,
            [None, None, None, None, None, None, None, Some(1), Some(0)]
        );
        string_characters_from("aé日".as_bytes(), &mut out);
        assert_eq!(out, [Some(3), Some(2), None, Some(1), None, None, Some(0)]);
        string_characters_from(&"aé日".as_bytes()[..4], &mut out);
        assert_eq!(out, [Some(3), Some(2), None, Some(1), Some(0)]);
    }

    #[test]
    fn string_characters_are_characters_of_any_script_the_last_possibly_cut() {
        assert_eq!(
            from("aé日".as_bytes()),
            [true, true, false, true, false, false, true]
        );
        // A quote, a backslash or a control character ends the run behind it.
        assert_eq!(from(b"a\"b"), [false, false, true, true]);
        assert_eq!(from(b"\\n"), [false, true, true]);
        assert_eq!(from(b"\n "), [false, true, true]);
        // A character cut short by the token's end (byte-level tokens) counts, as the first
        // bytes of a string character; a stray continuation byte, a cut surrogate or a byte
        // that begins no character does not; special tokens neither.
        assert_eq!(from(&[0xE6, 0x97]), [true, false, true]);
        assert_eq!(from(&[0x97]), [false, true]);
        assert_eq!(from(&[0xED, 0xA0]), [false, false, true]);
        assert_eq!(from(&[0xF4, 0x90]), [false, false, true]);
        assert_eq!(from(&[0xC0]), [false, true]);
        assert_eq!(from(&[0xE6, 0x97, b'a']), [false, false, true, true]);
        assert_eq!(
            from(&special_token_bytes(7)),
            [false, false, false, false, false, true]
        );
    }
}
