use std::time::Instant;
use serde_json::json;
fn main() {
    let h = std::thread::Builder::new().stack_size(256 << 20).spawn(|| {
        let t = Instant::now();
        let mut v = json!({"type": "integer"});
        for _ in 0..10_000 { v = json!({"type": "object", "properties": {"a": v}}); }
        println!("build {:?}", t.elapsed());
        let t = Instant::now();
        let r = constrain_jsonschema::compile(&v, &Default::default());
        println!("compile {:?} {:?}", t.elapsed(), r.err());
        let t = Instant::now();
        let s = serde_json::to_string(&v).unwrap();
        println!("to_string {:?}", t.elapsed());
        let t = Instant::now();
        let r = constrain_jsonschema::compile_str(&s, &Default::default());
        println!("compile_str {:?} {:?}", t.elapsed(), r.err());
        let t = Instant::now();
        drop(v);
        println!("drop {:?}", t.elapsed());
    }).unwrap();
    h.join().unwrap();
    let values: Vec<serde_json::Value> = (0..10_000).map(|i| json!(format!("value-{i}"))).collect();
    let t = Instant::now();
    let c = constrain_jsonschema::compile(&json!({"enum": values}), &Default::default()).unwrap();
    println!("enum compile {:?}", t.elapsed());
    let mut tokens: Vec<(u32, Vec<u8>, constrain_vocab::TokenKind)> = (0..=255u8).map(|b| (u32::from(b), vec![b], constrain_vocab::TokenKind::Text)).collect();
    tokens.push((256, b"</s>".to_vec(), constrain_vocab::TokenKind::EndOfSequence));
    let index = constrain_engine::TokenIndex::new(std::sync::Arc::new(constrain_vocab::Vocabulary::from_tokens(tokens).unwrap()));
    let t = Instant::now();
    let g = constrain_engine::CompiledGrammar::new(&c.grammar, index, Default::default()).unwrap();
    println!("engine compile {:?}", t.elapsed());
    let t = Instant::now();
    let mut m = constrain_engine::Matcher::new(g);
    let ok = m.accept_bytes(b"\"value-9999\"").is_ok() && m.is_accepting();
    println!("match {:?} {ok}", t.elapsed());
}
