//! Speculative decoding's verification: the tokens that come out follow the target model
//! exactly, whatever the draft proposes.

mod common;

use common::{assert_fits, chi_square, chi_square_critical};
use constrain_sampling::{draw, verify_draft, Xoshiro256StarStar};

const WIDTH: usize = 6;
const DRAFTED: usize = 3;
const TRIALS: usize = 100_000;

/// The target's next-token distribution after `prev`: context-dependent, with one impossible
/// token.
fn target(prev: usize) -> [f32; WIDTH] {
    let base = [0.3, 0.25, 0.2, 0.15, 0.1, 0.0];
    std::array::from_fn(|i| base[(i + prev) % WIDTH])
}

/// The draft's: different, puts mass where the target has none and none where it has some.
fn draft(prev: usize) -> [f32; WIDTH] {
    let base = [0.1, 0.4, 0.0, 0.2, 0.1, 0.2];
    std::array::from_fn(|i| base[(i + 2 * prev) % WIDTH])
}

/// One round of speculative decoding after `prev`: the draft proposes `DRAFTED` tokens, the
/// target verifies them. `verify` is the verification under test.
fn round(
    prev: usize,
    rng: &mut Xoshiro256StarStar,
    verify: impl Fn(&[u32], &[f32], &[f32], &mut Xoshiro256StarStar) -> Vec<u32>,
) -> Vec<u32> {
    let mut tokens = Vec::with_capacity(DRAFTED);
    let mut draft_rows = Vec::with_capacity(DRAFTED * WIDTH);
    let mut target_rows = Vec::with_capacity((DRAFTED + 1) * WIDTH);
    let mut context = prev;
    for _ in 0..DRAFTED {
        let row = draft(context);
        let token = draw(&row, rng).unwrap();
        draft_rows.extend_from_slice(&row);
        target_rows.extend_from_slice(&target(context));
        tokens.push(token as u32);
        context = token;
    }
    target_rows.extend_from_slice(&target(context));
    verify(&tokens, &draft_rows, &target_rows, rng)
}

/// The first two tokens of generations that start after token 0, over `TRIALS` generations.
fn first_pairs(
    seed: u64,
    verify: impl Fn(&[u32], &[f32], &[f32], &mut Xoshiro256StarStar) -> Vec<u32> + Copy,
) -> Vec<u64> {
    let mut rng = Xoshiro256StarStar::seed_from_u64(seed);
    let mut counts = vec![0u64; WIDTH * WIDTH];
    for _ in 0..TRIALS {
        let mut sequence: Vec<u32> = Vec::new();
        while sequence.len() < 2 {
            let prev = sequence.last().map_or(0, |&t| t as usize);
            sequence.extend(round(prev, &mut rng, verify));
        }
        counts[sequence[0] as usize * WIDTH + sequence[1] as usize] += 1;
    }
    counts
}

/// What the target alone gives: `q(a | 0) q(b | a)`.
fn target_pairs() -> Vec<f64> {
    let mut expected = vec![0.0; WIDTH * WIDTH];
    for a in 0..WIDTH {
        for b in 0..WIDTH {
            expected[a * WIDTH + b] = target(0)[a] as f64 * target(a)[b] as f64;
        }
    }
    expected
}

fn verified(tokens: &[u32], p: &[f32], q: &[f32], rng: &mut Xoshiro256StarStar) -> Vec<u32> {
    verify_draft(tokens, p, q, rng).unwrap().tokens
}

#[test]
fn verified_tokens_follow_the_target_alone() {
    let counts = first_pairs(2024, verified);
    assert_fits(&counts, &target_pairs(), "first two tokens");
}

/// Without the correction (accept every draft token) the test notices: the chi-square test
/// has the power to catch a wrong verification.
#[test]
fn accepting_every_draft_token_would_be_caught() {
    let naive = |tokens: &[u32], _: &[f32], _: &[f32], _: &mut Xoshiro256StarStar| tokens.to_vec();
    let mut rng = Xoshiro256StarStar::seed_from_u64(5);
    let mut counts = vec![0u64; WIDTH * WIDTH];
    for _ in 0..TRIALS {
        let sequence = round(0, &mut rng, naive);
        counts[sequence[0] as usize * WIDTH + sequence[1] as usize] += 1;
    }
    // Pairs the target never produces show up, so compare on the target's support only.
    let expected = target_pairs();
    let on_support: Vec<u64> = counts
        .iter()
        .zip(&expected)
        .map(|(&c, &e)| if e > 0.0 { c } else { 0 })
        .collect();
    let (statistic, df) = chi_square(&on_support, &expected);
    assert!(
        statistic > 10.0 * chi_square_critical(df),
        "chi-square {statistic}"
    );
}

/// The first draft token is accepted with probability sum_x min(p(x), q(x)).
#[test]
fn the_acceptance_rate_is_the_overlap_of_the_distributions() {
    let overlap: f64 = draft(0)
        .iter()
        .zip(&target(0))
        .map(|(&p, &q)| p.min(q) as f64)
        .sum();
    let mut rng = Xoshiro256StarStar::seed_from_u64(8);
    let mut accepted = 0usize;
    for _ in 0..TRIALS {
        let first = draw(&draft(0), &mut rng).unwrap() as u32;
        let verdict = verify_draft(
            &[first],
            &draft(0),
            &[target(0), target(first as usize)].concat(),
            &mut rng,
        )
        .unwrap();
        accepted += verdict.accepted;
    }
    let rate = accepted as f64 / TRIALS as f64;
    let sigma = (overlap * (1.0 - overlap) / TRIALS as f64).sqrt();
    assert!(
        (rate - overlap).abs() < 5.0 * sigma,
        "rate {rate}, overlap {overlap}"
    );
}
