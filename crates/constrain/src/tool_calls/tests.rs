use super::*;

fn every_family() -> Vec<ToolCallFormat> {
    TOOL_CALL_FORMATS
        .iter()
        .map(|n| ToolCallFormat::from_name(n).unwrap())
        .collect()
}

/// Feeds `text` in pieces of `step` characters and reassembles what the reader tells.
fn stream(format: &ToolCallFormat, text: &str, step: usize) -> (String, Vec<(String, String)>) {
    let mut reader = format.reader();
    let mut pieces = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    for chunk in chars.chunks(step) {
        pieces.extend(reader.push(&chunk.iter().collect::<String>()));
    }
    pieces.extend(reader.finish());
    let mut content = String::new();
    let mut calls: Vec<(String, String)> = Vec::new();
    for piece in pieces {
        match piece {
            CallPiece::Content(c) => content.push_str(&c),
            CallPiece::CallStart { index, name, .. } => {
                assert_eq!(index, calls.len());
                calls.push((name, String::new()));
            }
            CallPiece::CallArguments { index, fragment } => calls[index].1.push_str(&fragment),
        }
    }
    (content, calls)
}

#[test]
fn each_family_reads_back_what_it_renders_in_any_split() {
    let calls = [
        (
            "get_weather",
            "{\"city\": \"Oslo \\\"}\", \"days\": [1, {\"x\": null}]}",
        ),
        ("now", "{}"),
    ];
    for format in every_family() {
        let count = if format.allows_parallel() { 2 } else { 1 };
        let text = format!("Let me look. {}", format.render(&calls[..count]));
        let expected: Vec<(String, String)> = calls[..count]
            .iter()
            .map(|(n, a)| (n.to_string(), a.to_string()))
            .collect();
        for step in [1, 2, 3, 5, 7, 11, 1000] {
            let (content, read) = stream(&format, &text, step);
            assert_eq!(content, "Let me look. ", "{} step {step}", format.name());
            assert_eq!(read, expected, "{} step {step}", format.name());
        }
        let (content, parsed) = format.parse(&text);
        assert_eq!(content, "Let me look. ");
        assert_eq!(parsed.len(), count, "{}", format.name());
    }
}

#[test]
fn a_call_cut_off_is_dropped_and_plain_text_is_content() {
    for format in every_family() {
        let text = format.render(&[("f", "{\"a\": 1}")]);
        let text = text.strip_suffix(format.calls_close).unwrap();
        let chars: Vec<char> = text.chars().collect();
        let cut: String = chars[..chars.len() - 2].iter().collect();
        let (_, calls) = format.parse(&cut);
        assert!(calls.is_empty(), "{}", format.name());
        assert_eq!(format.parse("just text").0, "just text");
        // A partial trigger at the end is content in the end.
        let partial: String = format.trigger_text().chars().take(3).collect();
        assert_eq!(
            format.parse(&format!("a {partial}")).0,
            format!("a {partial}")
        );
    }
}

#[test]
fn a_trigger_that_opens_no_call_is_content() {
    let format = ToolCallFormat::llama3();
    let text = "{\"name\": \"Bob\"} is a person";
    let (content, calls) = format.parse(text);
    assert_eq!(content, text);
    assert!(calls.is_empty());
}

#[test]
fn names_are_unknown_to_the_reader_but_escaped_in_json() {
    let format = ToolCallFormat::generic();
    let text = format.render(&[("a\"b", "{}")]);
    assert!(text.contains("a\\\"b"), "{text}");
    let (_, calls) = format.parse(&text);
    assert_eq!(calls[0].name, "a\"b");
}

#[test]
fn formats_are_detected_from_template_markers() {
    let cases = [
        ("{{ '<tool_call>\\n' }}", "hermes"),
        ("{{ '[TOOL_CALLS][' }}", "mistral"),
        ("<｜tool▁calls▁begin｜>", "deepseek"),
        (
            "<|start|>assistant<|channel|>commentary to=functions.x",
            "harmony",
        ),
        ("<|python_tag|>", "llama3"),
        ("<start_of_turn>", "generic"),
    ];
    for (template, family) in cases {
        assert_eq!(
            ToolCallFormat::detect(template).name(),
            family,
            "{template}"
        );
    }
    assert!("nope".parse::<ToolCallFormat>().is_err());
    assert_eq!("qwen".parse::<ToolCallFormat>().unwrap().name(), "hermes");
}

#[test]
fn text_calls_mix_with_json_calls_in_the_generic_format() {
    let format = ToolCallFormat::generic();
    let json = format.render(&[("f", "{\"a\": 1}")]);
    let text = format.render_text_call("math", "1 + 2 < 4\n{x}").unwrap();
    let all = format!("ok {text}\n{json}\n{text}");
    for step in [1, 2, 5, 100] {
        let (content, calls) = stream(&format, &all, step);
        assert_eq!(content, "ok ");
        assert_eq!(
            calls,
            vec![
                ("math".to_string(), "1 + 2 < 4\n{x}".to_string()),
                ("f".to_string(), "{\"a\": 1}".to_string()),
                ("math".to_string(), "1 + 2 < 4\n{x}".to_string()),
            ],
            "step {step}"
        );
    }
    let (_, parsed) = format.parse(&all);
    assert_eq!(
        parsed.iter().map(|c| c.text_input).collect::<Vec<_>>(),
        [true, false, true]
    );
    assert!(ToolCallFormat::hermes()
        .render_text_call("m", "x")
        .is_none());
}
