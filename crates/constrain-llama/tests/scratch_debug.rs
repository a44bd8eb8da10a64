mod common;
use constrain_engine::{Limits, Matcher};
use constrain_llama::*;
use constrain_sampling::SamplerConfig;
#[test]
fn debug() {
    let model = common::model_or_skip("debug").unwrap();
    let v = model.vocabulary().clone();
    let mut s = Session::new(&model, &SessionOptions { ctx_size: 512, threads: Some(1), ..Default::default() }).unwrap();
    let prompt = model.prompt_tokens("A person record as JSON:\n", false).unwrap();
    let text = std::fs::read_to_string("../../schemas/person.json").unwrap();
    let c = constrain_jsonschema::compile_str(&text, &Default::default()).unwrap();
    let g = model.compile(&c.grammar, Limits::default()).unwrap();
    let g3 = s.generate(Request { prompt: &prompt, constraint: Some(Matcher::new(g.clone())), sampling: SamplerConfig::greedy(), seed: 0, max_tokens: 50 }, &mut |_| Ok(())).unwrap();
    let toks: Vec<String> = g3.tokens.iter().map(|&t| format!("{t}:{:?}", String::from_utf8_lossy(v.token_bytes(t).unwrap()))).collect();
    println!("TOKENS {}", toks.join(" "));
    // Where do the logits go after the prefix that ends in `"language`?
    let mut m = Matcher::new(g.clone());
    let cut = toks.iter().position(|t| t.contains("\\\\")).unwrap();
    let mut all = prompt.clone();
    for &t in &g3.tokens[..cut] { m.accept_token(t).unwrap(); all.push(t); }
    let mut mask = vec![0u32; g.mask_words()];
    m.fill_mask(&mut mask).unwrap();
    let g4 = s.generate(Request { prompt: &all, constraint: None, sampling: SamplerConfig::greedy(), seed: 0, max_tokens: 1 }, &mut |_| Ok(())).unwrap();
    println!("unconstrained next after prefix: {:?}", g4.tokens.iter().map(|&t| String::from_utf8_lossy(v.token_bytes(t).unwrap()).into_owned()).collect::<Vec<_>>());
    for t in ["s", "s\"", "\\", "es", "s\":"] {
        let id = v.iter().find(|(_, b, _)| *b == t.as_bytes()).map(|(i, _, _)| i);
        println!("{t:?} id {id:?} allowed {:?}", id.map(|i| mask[i as usize / 32] >> (i % 32) & 1));
    }
    println!("allowed total {}", mask.iter().map(|w| w.count_ones()).sum::<u32>());
}
