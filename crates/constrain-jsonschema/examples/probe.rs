use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).expect("path");
    let any = std::env::args().nth(2).is_some();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    if v.get("tests").is_some() {
        v = v["schema"].clone();
    }
    let mut o = constrain_jsonschema::Options::default();
    if any {
        o.property_order = constrain_jsonschema::PropertyOrder::Any;
        o.lenient = true;
        o.max_any_order_properties = std::env::var("MAXANY")
            .map(|v| v.parse().unwrap())
            .unwrap_or(6);
    }
    let t = Instant::now();
    let c = constrain_jsonschema::compile(&v, &o).unwrap();
    println!("compile {:?} rules {}", t.elapsed(), c.grammar.rule_count());
    let mut tokens: Vec<(u32, Vec<u8>, constrain_vocab::TokenKind)> = (0..=255u8)
        .map(|b| (u32::from(b), vec![b], constrain_vocab::TokenKind::Text))
        .collect();
    tokens.push((
        256,
        b"</s>".to_vec(),
        constrain_vocab::TokenKind::EndOfSequence,
    ));
    let index = constrain_engine::TokenIndex::new(std::sync::Arc::new(
        constrain_vocab::Vocabulary::from_tokens(tokens).unwrap(),
    ));
    let t = Instant::now();
    let g = constrain_engine::CompiledGrammar::new(&c.grammar, index, Default::default());
    println!("engine compile {:?} {:?}", t.elapsed(), g.as_ref().err());
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    for l in status.lines() {
        if l.starts_with("VmPeak") || l.starts_with("VmHWM") {
            println!("{l}");
        }
    }
}
