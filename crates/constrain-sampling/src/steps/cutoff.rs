//! The cutoffs: top-k, top-p, min-p and typical-p, plus greedy's argmax.
//!
//! Each cutoff first decides which positions survive (`*_kept`: the positions go to the
//! scratch in increasing order, and the return value says whether the cutoff applies at all);
//! `apply_*` then sets every other logit to -inf. [`Funnel`](crate::Funnel) uses the kept
//! positions directly to compact the vocabulary into a short candidate list, so every later
//! step works on a few dozen values instead of the whole vocabulary.
//!
//! Ranking is by probability (equivalently, logit), ties going to the lower position, which is
//! the lower token id both in the full vector and in the funnel's candidate list (kept in id
//! order). Nothing ever sorts the whole vocabulary: top-k streams it through a bounded buffer,
//! top-p and typical-p first gather a band of likely candidates and then sort only the prefix
//! they need, growing it by partial selection (`select_nth_unstable_by`).

use std::cmp::Ordering;

use crate::math::{exp, exp_sum, exp_sum_and_moment, first_position_of, ln, max_finite};

/// A candidate in a ranking: smaller `key` ranks first, then smaller `pos`.
#[derive(Debug, Clone, Copy)]
struct Ranked {
    key: f32,
    value: f32,
    pos: u32,
}

fn by_rank(a: &Ranked, b: &Ranked) -> Ordering {
    a.key.total_cmp(&b.key).then(a.pos.cmp(&b.pos))
}

/// Buffers the cutoffs reuse from one call to the next (so sampling a token allocates
/// nothing once they have grown to size).
#[derive(Debug, Clone, Default)]
pub struct CutoffScratch {
    ranked: Vec<Ranked>,
    kept: Vec<u32>,
    saved: Vec<f32>,
}

impl CutoffScratch {
    /// Empty buffers.
    pub fn new() -> Self {
        CutoffScratch::default()
    }

    /// The positions the last cutoff kept, in increasing order.
    pub(crate) fn kept(&self) -> &[u32] {
        &self.kept
    }
}

/// How many values the streaming and gathering loops test at once before looking at them one
/// by one: most blocks of a large vocabulary hold no candidate at all and are skipped whole.
const BLOCK: usize = 64;

/// Whether some value of the block satisfies `test`. A full block takes a fixed-size,
/// branch-free path that the compiler turns into a few vector comparisons.
#[inline(always)]
fn any_in_block(block: &[f32], test: impl Fn(f32) -> bool) -> bool {
    match <&[f32; BLOCK]>::try_from(block) {
        Ok(full) => full.iter().fold(false, |any, &v| any | test(v)),
        Err(_) => block.iter().any(|&v| test(v)),
    }
}

/// Sets every logit whose position is not in `scratch.kept` to -inf.
pub(crate) fn retain(values: &mut [f32], scratch: &mut CutoffScratch) {
    let CutoffScratch { kept, saved, .. } = scratch;
    saved.clear();
    saved.extend(kept.iter().map(|&p| values[p as usize]));
    values.fill(f32::NEG_INFINITY);
    for (&p, &v) in kept.iter().zip(saved.iter()) {
        values[p as usize] = v;
    }
}

/// Moves the first `len` ranked positions to `kept`, in increasing order.
fn keep_ranked_prefix(scratch: &mut CutoffScratch, len: usize) -> bool {
    scratch.kept.clear();
    scratch
        .kept
        .extend(scratch.ranked[..len].iter().map(|r| r.pos));
    scratch.kept.sort_unstable();
    true
}

/// Keeps the `k` best ranked (partial selection), returning the key of the worst kept.
fn shrink_to_best(ranked: &mut Vec<Ranked>, k: usize) -> f32 {
    ranked.select_nth_unstable_by(k - 1, by_rank);
    ranked.truncate(k);
    ranked[k - 1].value
}

/// The positions of the `k` largest finite values (`false` if there are at most `k`).
///
/// One pass over the values through a buffer of at most `2k` (at least `k + 512`) entries: a
/// value enters only if it beats the k-th best seen so far, and a full buffer is cut back to
/// `k` by partial selection. A later value equal to that k-th best has a higher position, so
/// it ranks lower and is rightly skipped.
pub(crate) fn top_k_kept(values: &[f32], k: usize, scratch: &mut CutoffScratch) -> bool {
    if k == 0 {
        return false;
    }
    let capacity = k + k.max(512);
    let ranked = &mut scratch.ranked;
    ranked.clear();
    let mut floor = f32::NEG_INFINITY;
    let mut shrunk = false;
    for (block_index, block) in values.chunks(BLOCK).enumerate() {
        if !any_in_block(block, |v| v > floor) {
            continue;
        }
        for (offset, &value) in block.iter().enumerate() {
            if value > floor {
                ranked.push(Ranked {
                    key: -value,
                    value,
                    pos: (block_index * BLOCK + offset) as u32,
                });
                if ranked.len() == capacity {
                    floor = shrink_to_best(ranked, k);
                    shrunk = true;
                }
            }
        }
    }
    if !shrunk && ranked.len() <= k {
        return false;
    }
    if ranked.len() > k {
        shrink_to_best(ranked, k);
    }
    keep_ranked_prefix(scratch, k)
}

/// Gathers every finite value whose key `key_of(v)` is at most `band` into the ranking and
/// returns their unnormalized mass `sum e^(v - max)`.
fn gather_band(
    values: &[f32],
    band: f32,
    max: f32,
    key_of: impl Fn(f32) -> f32,
    ranked: &mut Vec<Ranked>,
) -> f64 {
    ranked.clear();
    let inside = |v: f32| v > f32::NEG_INFINITY && key_of(v) <= band;
    let mut mass = 0.0f64;
    for (block_index, block) in values.chunks(BLOCK).enumerate() {
        if !any_in_block(block, inside) {
            continue;
        }
        for (offset, &value) in block.iter().enumerate() {
            if inside(value) {
                ranked.push(Ranked {
                    key: key_of(value),
                    value,
                    pos: (block_index * BLOCK + offset) as u32,
                });
                mass += exp(value - max) as f64;
            }
        }
    }
    mass
}

/// The length of the shortest prefix of the ranking (in rank order) whose mass
/// `sum e^(v - max)` reaches `target`; the whole ranking if none does. Sorts only that prefix:
/// blocks of 32, 128, 512, ... are selected with `select_nth_unstable_by`, then sorted.
fn shortest_prefix_reaching(ranked: &mut [Ranked], target: f64, max: f32) -> usize {
    let mut sorted = 0;
    let mut mass = 0.0f64;
    let mut block = 32usize;
    while sorted < ranked.len() {
        let end = (sorted + block).min(ranked.len());
        if end < ranked.len() {
            ranked[sorted..].select_nth_unstable_by(end - sorted - 1, by_rank);
        }
        ranked[sorted..end].sort_unstable_by(by_rank);
        for (i, candidate) in ranked[sorted..end].iter().enumerate() {
            mass += exp(candidate.value - max) as f64;
            if mass >= target {
                return sorted + i + 1;
            }
        }
        sorted = end;
        block = block.saturating_mul(4);
    }
    ranked.len()
}

/// Bands (in logits below the maximum) tried in turn when gathering the nucleus; the last
/// takes everything. A token 8 below the maximum is 3000 times less likely, so the first band
/// nearly always holds the nucleus.
const TOP_P_BANDS: [f32; 4] = [8.0, 16.0, 32.0, f32::INFINITY];

/// Nucleus sampling's set (Holtzman et al. 2020): the smallest set of most likely tokens whose
/// probability reaches `p`.
pub(crate) fn top_p_kept(values: &[f32], p: f32, scratch: &mut CutoffScratch) -> bool {
    if p >= 1.0 {
        return false;
    }
    let max = max_finite(values);
    if max == f32::NEG_INFINITY {
        return false;
    }
    let target = p as f64 * exp_sum(values, max);
    for band in TOP_P_BANDS {
        // key = -v; v >= max - band  <=>  -v <= band - max.
        let mass = gather_band(values, band - max, max, |v| -v, &mut scratch.ranked);
        if mass >= target {
            break;
        }
    }
    let len = shortest_prefix_reaching(&mut scratch.ranked, target, max);
    keep_ranked_prefix(scratch, len)
}

/// Min-p's set (Nguyen et al. 2024): the tokens with `p_i >= min_p * p_max`, i.e. with a
/// logit at least `max + ln(min_p)`.
pub(crate) fn min_p_kept(values: &[f32], min_p: f32, scratch: &mut CutoffScratch) -> bool {
    if min_p <= 0.0 {
        return false;
    }
    let max = max_finite(values);
    if max == f32::NEG_INFINITY {
        return false;
    }
    let threshold = (max as f64 + ln(min_p as f64)) as f32;
    scratch.kept.clear();
    for (block_index, block) in values.chunks(BLOCK).enumerate() {
        if !any_in_block(block, |v| v >= threshold) {
            continue;
        }
        for (offset, &value) in block.iter().enumerate() {
            if value >= threshold {
                scratch.kept.push((block_index * BLOCK + offset) as u32);
            }
        }
    }
    true
}

/// Bands (in nats of surprisal around the entropy) tried in turn when gathering the typical
/// set; the last takes everything.
const TYPICAL_BANDS: [f32; 6] = [1.0, 2.0, 4.0, 8.0, 16.0, f32::INFINITY];

/// Locally typical sampling's set (Meister et al. 2023, as Hugging Face's
/// `TypicalLogitsWarper` computes it): tokens ordered by how far their surprisal `-ln p_i` is
/// from the entropy `H`, and the smallest prefix of that order whose mass reaches `p`.
///
/// The most likely token is kept even when it is not among the most typical: no cutoff of
/// the funnel removes the argmax.
pub(crate) fn typical_p_kept(values: &[f32], p: f32, scratch: &mut CutoffScratch) -> bool {
    if p >= 1.0 {
        return false;
    }
    let max = max_finite(values);
    if max == f32::NEG_INFINITY {
        return false;
    }
    let (total, moment) = exp_sum_and_moment(values, max);
    let ln_total = ln(total);
    let entropy = ln_total + moment / total;
    // -ln p_i = (max - v_i) + ln_total, so |-ln p_i - H| = |v_i - center|.
    let center = (max as f64 + ln_total - entropy) as f32;
    let target = p as f64 * total;
    for band in TYPICAL_BANDS {
        let mass = gather_band(
            values,
            band,
            max,
            |v| (v - center).abs(),
            &mut scratch.ranked,
        );
        if mass >= target {
            break;
        }
    }
    let len = shortest_prefix_reaching(&mut scratch.ranked, target, max);
    keep_ranked_prefix(scratch, len);
    if let Some(argmax) = first_position_of(values, max) {
        let argmax = argmax as u32;
        if let Err(at) = scratch.kept.binary_search(&argmax) {
            scratch.kept.insert(at, argmax);
        }
    }
    true
}

/// Greedy's set: the first position of the largest value.
pub(crate) fn argmax_kept(values: &[f32], scratch: &mut CutoffScratch) -> bool {
    let max = max_finite(values);
    let Some(argmax) = first_position_of(values, max).filter(|_| max > f32::NEG_INFINITY) else {
        return false;
    };
    scratch.kept.clear();
    scratch.kept.push(argmax as u32);
    true
}

/// Top-k: keeps the `k` most likely tokens (ties to the lower id); `k == 0` keeps all.
///
/// ```
/// use constrain_sampling::{apply_top_k, CutoffScratch};
/// let ninf = f32::NEG_INFINITY;
/// let mut logits = [6.0, 5.0, 4.5, 3.5, 2.0, 0.0];
/// apply_top_k(&mut logits, 3, &mut CutoffScratch::new());
/// assert_eq!(logits, [6.0, 5.0, 4.5, ninf, ninf, ninf]);
/// ```
pub fn apply_top_k(logits: &mut [f32], k: usize, scratch: &mut CutoffScratch) {
    if top_k_kept(logits, k, scratch) {
        retain(logits, scratch);
    }
}

/// Top-p (nucleus): keeps the smallest set of most likely tokens whose probability reaches
/// `p`; `p >= 1` keeps all, `p == 0` only the most likely token.
///
/// ```
/// use constrain_sampling::{apply_top_p, CutoffScratch};
/// let ninf = f32::NEG_INFINITY;
/// // Probabilities .590 .217 .132 .048 .011 .0015: .590 + .217 + .132 = .939 >= .9.
/// let mut logits = [6.0, 5.0, 4.5, 3.5, 2.0, 0.0];
/// apply_top_p(&mut logits, 0.9, &mut CutoffScratch::new());
/// assert_eq!(logits, [6.0, 5.0, 4.5, ninf, ninf, ninf]);
/// ```
pub fn apply_top_p(logits: &mut [f32], p: f32, scratch: &mut CutoffScratch) {
    if top_p_kept(logits, p, scratch) {
        retain(logits, scratch);
    }
}

/// Min-p: keeps the tokens whose probability is at least `min_p` times the largest;
/// `min_p == 0` keeps all.
///
/// ```
/// use constrain_sampling::{apply_min_p, CutoffScratch};
/// let ninf = f32::NEG_INFINITY;
/// // The bar is 0.1 * .590 = .059: bed (.048) misses it.
/// let mut logits = [6.0, 5.0, 4.5, 3.5, 2.0, 0.0];
/// apply_min_p(&mut logits, 0.1, &mut CutoffScratch::new());
/// assert_eq!(logits, [6.0, 5.0, 4.5, ninf, ninf, ninf]);
/// ```
pub fn apply_min_p(logits: &mut [f32], min_p: f32, scratch: &mut CutoffScratch) {
    if min_p_kept(logits, min_p, scratch) {
        retain(logits, scratch);
    }
}

/// Typical-p: keeps the smallest set of the most typical tokens (surprisal closest to the
/// entropy) whose probability reaches `p`, plus the most likely token; `p >= 1` keeps all.
pub fn apply_typical_p(logits: &mut [f32], p: f32, scratch: &mut CutoffScratch) {
    if typical_p_kept(logits, p, scratch) {
        retain(logits, scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NINF: f32 = f32::NEG_INFINITY;

    fn kept_after(f: impl Fn(&mut [f32], &mut CutoffScratch), logits: &[f32]) -> Vec<usize> {
        let mut values = logits.to_vec();
        f(&mut values, &mut CutoffScratch::new());
        (0..values.len()).filter(|&i| values[i] > NINF).collect()
    }

    #[test]
    fn top_k_breaks_ties_by_lower_id_and_streams_long_inputs() {
        let logits = [1.0, 3.0, 2.0, 3.0, 3.0, NINF];
        assert_eq!(kept_after(|v, s| apply_top_k(v, 2, s), &logits), [1, 3]);
        assert_eq!(
            kept_after(|v, s| apply_top_k(v, 10, s), &logits),
            [0, 1, 2, 3, 4]
        );
        // Long enough to go through several buffer shrinks, with many ties.
        let long: Vec<f32> = (0..100_000).map(|i| ((i * 7919) % 1000) as f32).collect();
        let kept = kept_after(|v, s| apply_top_k(v, 700, s), &long);
        assert_eq!(kept.len(), 700);
        let mut want: Vec<usize> = (0..long.len()).collect();
        want.sort_by(|&a, &b| long[b].total_cmp(&long[a]).then(a.cmp(&b)));
        want.truncate(700);
        want.sort_unstable();
        assert_eq!(kept, want);
    }

    #[test]
    fn top_p_zero_keeps_only_the_argmax_and_wide_bands_are_reached() {
        let logits = [1.0, 3.0, 2.0, 3.0];
        assert_eq!(kept_after(|v, s| apply_top_p(v, 0.0, s), &logits), [1]);
        // A flat tail far below the max that carries most of the mass.
        // 50,000 tokens at -10 hold 70% of the mass: the nucleus of .5 needs about 14,000 of
        // them, beyond the first band.
        let mut flat = vec![-10.0f32; 50_000];
        flat[7] = 0.0;
        let kept = kept_after(|v, s| apply_top_p(v, 0.5, s), &flat);
        assert!((13_900..14_100).contains(&kept.len()), "{}", kept.len());
        assert!(kept.contains(&7));
    }

    #[test]
    fn min_p_keeps_ties_with_the_max() {
        let logits = [1.0, 3.0, 2.0, 3.0];
        assert_eq!(kept_after(|v, s| apply_min_p(v, 1.0, s), &logits), [1, 3]);
    }

    #[test]
    fn typical_p_follows_the_entropy_and_keeps_the_argmax() {
        // One token at .3, seventy at .01: the entropy is .3 ln(1/.3) + .7 ln 100 = 3.59 nats,
        // closer to the small tokens' surprisal (4.61) than to the big one's (1.20).
        let mut logits = vec![0.0f32; 71];
        logits[0] = 30.0f32.ln();
        let kept = kept_after(|v, s| apply_typical_p(v, 0.195, s), &logits);
        // 20 tokens of .01 reach .195; the argmax is added back.
        assert_eq!(kept.len(), 21);
        assert!(kept.contains(&0));
    }
}
