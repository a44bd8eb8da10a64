//! Which tokens end generation: the well-known end tokens, and reading the configured ones
//! from the files beside a tokenizer (the rule is documented on [`crate::Tokenizer`]).
//!
//! The set is a union because chat models end a turn with one token and a document with
//! another, and a model may emit either.

use std::path::Path;

use serde_json::Value;

/// Written forms of tokens that end generation in widespread model families. Only added
/// tokens marked special count, so an ordinary text token spelled `</s>` never does.
pub const WELL_KNOWN_END_TOKENS: &[&str] = &[
    "<|eot_id|>",            // Llama 3: end of turn
    "<|eom_id|>",            // Llama 3.1: end of message (tool call follows)
    "<|end_of_text|>",       // Llama 3: end of document
    "<|im_end|>",            // ChatML (Qwen, ...): end of turn
    "<|endoftext|>",         // GPT-2 family, Qwen, OpenAI tiktoken encodings
    "<|end|>",               // Phi-3: end of turn
    "<|return|>",            // harmony format: end of final answer
    "<|EOT|>",               // DeepSeek-Coder: end of turn
    "<｜end▁of▁sentence｜>", // DeepSeek V2/V3/R1
    "</s>",                  // SentencePiece models (Llama 2, Mistral, T5, ...)
    "<eos>",                 // Gemma
    "<end_of_turn>",         // Gemma: end of turn
];

/// Names of the end tokens that the files beside a tokenizer configure.
#[derive(Debug, Default)]
pub(crate) struct ConfiguredEos {
    /// Written forms (from `tokenizer_config.json`), with the file they came from.
    pub contents: Vec<(String, String)>,
    /// Ids (from `generation_config.json`), with the file they came from.
    pub ids: Vec<(u32, String)>,
}

/// Reads the end tokens configured beside `tokenizer_path`. A missing file is fine; an
/// unreadable or malformed one is an error `(file, message)`.
pub(crate) fn read_configured(tokenizer_path: &Path) -> Result<ConfiguredEos, (String, String)> {
    let mut found = ConfiguredEos::default();
    let Some(dir) = tokenizer_path.parent() else {
        return Ok(found);
    };
    let tokenizer_config = dir.join("tokenizer_config.json");
    if let Some(config) = read_json_if_present(&tokenizer_config)? {
        let file = tokenizer_config.display().to_string();
        match config.get("eos_token") {
            None | Some(Value::Null) => {}
            Some(Value::String(content)) => found.contents.push((content.clone(), file)),
            Some(entry) => match entry.get("content").and_then(Value::as_str) {
                Some(content) => found.contents.push((content.to_string(), file)),
                None => {
                    return Err((
                        file,
                        format!(
                            "eos_token is neither a string nor an object with \"content\": {entry}"
                        ),
                    ))
                }
            },
        }
    }
    let generation_config = dir.join("generation_config.json");
    if let Some(config) = read_json_if_present(&generation_config)? {
        let file = generation_config.display().to_string();
        let entries = match config.get("eos_token_id") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(ids)) => ids.clone(),
            Some(id) => vec![id.clone()],
        };
        for entry in entries {
            let id = entry
                .as_u64()
                .and_then(|id| u32::try_from(id).ok())
                .ok_or_else(|| {
                    (
                        file.clone(),
                        format!("eos_token_id holds {entry}, not a token id"),
                    )
                })?;
            found.ids.push((id, file.clone()));
        }
    }
    Ok(found)
}

fn read_json_if_present(path: &Path) -> Result<Option<Value>, (String, String)> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err((path.display().to_string(), e.to_string())),
    };
    serde_json::from_slice(&text)
        .map(Some)
        .map_err(|e| (path.display().to_string(), format!("invalid JSON: {e}")))
}
