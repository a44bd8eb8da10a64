//! Random documents drawn from a grammar by walking its matcher.
//!
//! Every document a matcher lets through must belong to the language; drawing many at random
//! and checking them with an independent validator tests the *masks* for soundness, the
//! counterpart of MaskBench's "invalid instance accepted".
//!
//! The walk picks uniformly among the allowed tokens. Unconstrained, such a walk rarely ends
//! (inside a string almost every token is allowed), so after a soft budget of tokens it turns
//! greedy towards completion: end-of-sequence when allowed, otherwise the shortest allowed token
//! that starts by closing something (`"`, `}`, `]`) and opens nothing. Forced tokens are taken
//! as the matcher reports them. The random source is a seeded SplitMix64, so a failing
//! document can be drawn again from its seed.

use constrain_engine::{MatchError, Matcher};
use constrain_vocab::Vocabulary;

/// A small deterministic random source (SplitMix64; Steele, Lea and Flood, OOPSLA 2014).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for document `index` of the item named `name` (FNV-1a of the name mixed
    /// with the index), so every document has its own reproducible stream.
    pub fn for_item(name: &str, index: u64) -> Rng {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in name.bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        Rng(hash ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform number in `0..n` (`n > 0`), by Lemire's multiply-shift (the bias is below
    /// 2^-32 for the sizes used here).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// How long a walk may get.
#[derive(Clone, Copy, Debug)]
pub struct WalkLimits {
    /// Tokens after which the walk steers towards completion.
    pub soft_budget: usize,
    /// Tokens after which the walk gives up (the document is then unfinished).
    pub max_tokens: usize,
}

impl Default for WalkLimits {
    fn default() -> WalkLimits {
        WalkLimits {
            soft_budget: 64,
            max_tokens: 512,
        }
    }
}

/// A drawn document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Walk {
    /// The bytes of the tokens taken.
    pub bytes: Vec<u8>,
    /// The tokens taken.
    pub tokens: Vec<u32>,
    /// How many of them were forced.
    pub forced: usize,
    /// Whether the walk ended with end-of-sequence (otherwise it ran out of tokens).
    pub complete: bool,
}

/// Why a walk stopped before a document was complete, other than running out of tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalkError {
    /// The engine returned an error.
    Engine(MatchError),
    /// No token and no end-of-sequence allowed: the masks led into a dead end.
    DeadEnd,
    /// The mask and the matcher disagree (a token in the mask was refused, a forced token is
    /// not in the mask, or end-of-sequence is in the mask of a state that is not accepting).
    Inconsistent(String),
}

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WalkError::Engine(err) => write!(f, "engine error: {err}"),
            WalkError::DeadEnd => f.write_str("dead end: the mask allows nothing"),
            WalkError::Inconsistent(what) => write!(f, "inconsistent matcher: {what}"),
        }
    }
}

impl From<MatchError> for WalkError {
    fn from(err: MatchError) -> WalkError {
        WalkError::Engine(err)
    }
}

/// Draws documents through matchers of grammars compiled for one vocabulary.
pub struct Walker {
    limits: WalkLimits,
    /// Per token id, how well it leads towards the end (see [`closing_rank`]).
    closing_ranks: Vec<u32>,
}

impl Walker {
    /// A walker for grammars compiled for `vocab`.
    pub fn new(vocab: &Vocabulary, limits: WalkLimits) -> Walker {
        let closing_ranks = (0..vocab.len() as u32)
            .map(|id| closing_rank(vocab.token_bytes(id).unwrap_or_default()))
            .collect();
        Walker {
            limits,
            closing_ranks,
        }
    }

    /// Draws one document from `matcher`'s current state (normally a fresh matcher).
    ///
    /// On error the bytes taken so far are returned with it, to show where the walk went
    /// wrong.
    pub fn walk(&self, matcher: &mut Matcher, rng: &mut Rng) -> Result<Walk, (WalkError, Walk)> {
        walk(matcher, rng, self.limits, &self.closing_ranks)
    }
}

fn walk(
    matcher: &mut Matcher,
    rng: &mut Rng,
    limits: WalkLimits,
    closing_ranks: &[u32],
) -> Result<Walk, (WalkError, Walk)> {
    let vocab = matcher.grammar().vocabulary().clone();
    let eos: Vec<u32> = vocab.eos_tokens().to_vec();
    let mut mask = vec![0u32; matcher.grammar().mask_words()];
    let mut walk = Walk {
        bytes: Vec::new(),
        tokens: Vec::new(),
        forced: 0,
        complete: false,
    };
    let take = |walk: &mut Walk, token: u32| {
        walk.tokens.push(token);
        walk.bytes
            .extend_from_slice(vocab.token_bytes(token).unwrap_or_default());
    };
    while walk.tokens.len() < limits.max_tokens {
        let forced = match matcher.forced_tokens() {
            Ok(forced) => forced,
            Err(err) => return Err((err.into(), walk)),
        };
        if !forced.is_empty() {
            for token in forced {
                if let Err(err) = step_forced(matcher, &mut mask, token) {
                    return Err((err, walk));
                }
                take(&mut walk, token);
                walk.forced += 1;
            }
            continue;
        }
        if let Err(err) = matcher.fill_mask(&mut mask) {
            return Err((err.into(), walk));
        }
        let eos_allowed = eos.iter().any(|&t| is_set(&mask, t));
        if eos_allowed != matcher.is_accepting() {
            let what = format!(
                "end-of-sequence {} in the mask but is_accepting() = {}",
                if eos_allowed { "is" } else { "is not" },
                matcher.is_accepting()
            );
            return Err((WalkError::Inconsistent(what), walk));
        }
        let greedy = walk.tokens.len() >= limits.soft_budget;
        let choice = if greedy && eos_allowed {
            None
        } else if greedy {
            // End-of-sequence is not allowed here (else the walk would have ended).
            match closest_to_completion(&mask, closing_ranks, rng) {
                Some(token) => Some(token),
                None => return Err((WalkError::DeadEnd, walk)),
            }
        } else {
            // Uniform over every allowed token; an end-of-sequence token ends the document.
            match uniform_choice(&mask, rng) {
                Some(token) if eos.contains(&token) => None,
                Some(token) => Some(token),
                None => return Err((WalkError::DeadEnd, walk)),
            }
        };
        let Some(token) = choice else {
            walk.complete = true;
            return Ok(walk);
        };
        if let Err(err) = matcher.accept_token(token) {
            let what = format!("token {token} is in the mask but accept_token failed: {err}");
            return Err((WalkError::Inconsistent(what), walk));
        }
        take(&mut walk, token);
    }
    Ok(walk)
}

fn step_forced(matcher: &mut Matcher, mask: &mut [u32], token: u32) -> Result<(), WalkError> {
    matcher.fill_mask(mask)?;
    if !is_set(mask, token) {
        return Err(WalkError::Inconsistent(format!(
            "forced token {token} is not in the mask"
        )));
    }
    matcher
        .accept_token(token)
        .map_err(|err| WalkError::Inconsistent(format!("forced token {token} refused: {err}")))
}

/// A token drawn uniformly among the set bits of `mask`.
fn uniform_choice(mask: &[u32], rng: &mut Rng) -> Option<u32> {
    let total: usize = mask.iter().map(|w| w.count_ones() as usize).sum();
    if total == 0 {
        return None;
    }
    let mut k = rng.below(total);
    for (w, &word) in mask.iter().enumerate() {
        let ones = word.count_ones() as usize;
        if k < ones {
            let mut bits = word;
            for _ in 0..k {
                bits &= bits - 1; // drop the lowest set bit
            }
            return Some((w * 32) as u32 + bits.trailing_zeros());
        }
        k -= ones;
    }
    None
}

/// How well a token leads towards the end of a JSON-like document; higher is better.
///
/// The first byte decides, because it is what the token does in the current context: `"` ends
/// the string being written (or starts a short one), `}` and `]` close a container; a token
/// that opens a container anywhere is avoided, and so is pure whitespace. Among equals shorter
/// tokens rank higher, so that a closing quote is not followed by new structure.
fn closing_rank(bytes: &[u8]) -> u32 {
    let mut score: u32 = match bytes.first() {
        Some(b'"') => 10,
        Some(b'}' | b']') => 9,
        _ => 7,
    };
    if bytes.iter().any(|b| matches!(b, b'{' | b'[')) {
        score -= 5;
    }
    if !bytes.is_empty() && bytes.iter().all(u8::is_ascii_whitespace) {
        score -= 1; // whitespace never brings the end closer
    }
    let shortness = 0xFFFF - bytes.len().min(0xFFFF) as u32;
    (score << 16) | shortness
}

/// A random token among the best-ranked ones of `mask` (which holds no end-of-sequence bit).
fn closest_to_completion(mask: &[u32], ranks: &[u32], rng: &mut Rng) -> Option<u32> {
    // One pass; ties are resolved by reservoir sampling, so each is equally likely.
    let mut best: Option<(u32, u32)> = None;
    let mut ties = 0;
    for (w, &word) in mask.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let token = (w * 32) as u32 + bits.trailing_zeros();
            bits &= bits - 1;
            let rank = ranks.get(token as usize).copied().unwrap_or(0);
            match best {
                Some((b, _)) if rank < b => {}
                Some((b, _)) if rank == b => {
                    ties += 1;
                    if rng.below(ties) == 0 {
                        best = Some((rank, token));
                    }
                }
                _ => {
                    best = Some((rank, token));
                    ties = 1;
                }
            }
        }
    }
    best.map(|(_, token)| token)
}

fn is_set(mask: &[u32], token: u32) -> bool {
    mask.get(token as usize / 32)
        .is_some_and(|word| word & (1 << (token % 32)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_in_range() {
        let mut a = Rng::for_item("schema.json", 3);
        let mut b = Rng::for_item("schema.json", 3);
        let xs: Vec<usize> = (0..100).map(|_| a.below(7)).collect();
        let ys: Vec<usize> = (0..100).map(|_| b.below(7)).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|&x| x < 7));
        assert!((0..7).all(|v| xs.contains(&v)), "all values drawn: {xs:?}");
        assert_ne!(
            Rng::for_item("schema.json", 4).next_u64(),
            Rng::for_item("schema.json", 3).next_u64()
        );
    }

    #[test]
    fn greedy_choice_prefers_short_closing_tokens() {
        let vocab: [&[u8]; 7] = [b"abc", b"{\"", b"\"}", b" ", b"\"]}", b"}}}", b"\""];
        let ranks: Vec<u32> = vocab.iter().map(|b| closing_rank(b)).collect();
        let mut rng = Rng::for_item("greedy", 0);
        let all = [0b111_1111];
        assert_eq!(
            closest_to_completion(&all, &ranks, &mut rng),
            Some(6),
            "a lone quote"
        );
        let no_quote = [0b010_1011];
        assert_eq!(closest_to_completion(&no_quote, &ranks, &mut rng), Some(5));
        assert_eq!(closest_to_completion(&[0], &ranks, &mut rng), None);
    }

    #[test]
    fn uniform_choice_reaches_every_allowed_token_and_nothing_else() {
        let mask = [0b1011u32, 1 << 31];
        let mut rng = Rng::for_item("uniform", 0);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            seen.insert(uniform_choice(&mask, &mut rng).unwrap());
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![0, 1, 3, 63]);
        assert_eq!(uniform_choice(&[0, 0], &mut rng), None);
    }
}
