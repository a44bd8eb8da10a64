//! Chat templates: a conversation rendered as the prompt text a chat model was trained on.
//!
//! The templates are llama.cpp's built-in ones, under the names llama.cpp gives them
//! (`gemma`, `chatml`, `llama3`, ...), written out here so they work the same whether or not
//! the GGUF file carries a template of its own (the default model's has none). A model's own
//! template (the Jinja text in its GGUF metadata) is recognized by family, as llama.cpp does:
//! see [`ChatTemplate::detect`].

use std::fmt;

/// One turn of a conversation: a role (`system`, `user`, `assistant`, or any other the
/// template passes through) and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant`, ...
    pub role: String,
    /// The turn's text.
    pub content: String,
}

impl ChatMessage {
    /// A message with `role` and `content`.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// A named chat template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChatTemplate {
    /// `<|im_start|>role\n...<|im_end|>` (Qwen, SmolLM, many fine-tunes).
    ChatMl,
    /// `<start_of_turn>user\n...<end_of_turn>` (Gemma 1-3; the system turn joins the first
    /// user turn, `assistant` is `model`).
    Gemma,
    /// `<|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>` (Llama 3.x).
    Llama3,
    /// `[INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] ...</s>` (Llama 2).
    Llama2,
    /// `[SYSTEM_PROMPT] ...[/SYSTEM_PROMPT][INST] ...[/INST] ...</s>` (Mistral v7).
    MistralV7,
    /// `<|user|>\n...<|end|>\n<|assistant|>\n` (Phi 3).
    Phi3,
    /// `<|user|>\n...<|endoftext|>\n<|assistant|>\n` (Zephyr).
    Zephyr,
}

/// Every template with its name, in the order `--help` lists them.
pub const CHAT_TEMPLATES: &[(&str, ChatTemplate)] = &[
    ("gemma", ChatTemplate::Gemma),
    ("chatml", ChatTemplate::ChatMl),
    ("llama3", ChatTemplate::Llama3),
    ("llama2", ChatTemplate::Llama2),
    ("mistral-v7", ChatTemplate::MistralV7),
    ("phi3", ChatTemplate::Phi3),
    ("zephyr", ChatTemplate::Zephyr),
];

impl fmt::Display for ChatTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ChatTemplate {
    type Err = String;

    fn from_str(name: &str) -> Result<ChatTemplate, String> {
        ChatTemplate::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = CHAT_TEMPLATES.iter().map(|(n, _)| *n).collect();
            format!(
                "unknown chat template {name:?}; known: {}",
                names.join(", ")
            )
        })
    }
}

impl ChatTemplate {
    /// The template llama.cpp calls `name` (`llama2-sys` and `mistral` are accepted as
    /// aliases of `llama2`, `llama-3` of `llama3`).
    pub fn from_name(name: &str) -> Option<ChatTemplate> {
        let name = name.trim().to_ascii_lowercase();
        match name.as_str() {
            "llama2-sys" | "llama2-sys-bos" | "llama2-sys-strip" | "mistral" | "mistral-v1" => {
                return Some(ChatTemplate::Llama2)
            }
            "llama-3" => return Some(ChatTemplate::Llama3),
            _ => {}
        }
        CHAT_TEMPLATES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
    }

    /// The name llama.cpp gives this template.
    pub fn name(self) -> &'static str {
        CHAT_TEMPLATES
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("?", |(n, _)| n)
    }

    /// The family of a Jinja chat template (a GGUF's `tokenizer.chat_template`), by the markers
    /// it writes, as llama.cpp recognizes its built-in templates; `None` for an unknown one.
    pub fn detect(jinja: &str) -> Option<ChatTemplate> {
        let has = |s: &str| jinja.contains(s);
        if has("<|im_start|>") {
            Some(ChatTemplate::ChatMl)
        } else if has("[SYSTEM_PROMPT]") {
            Some(ChatTemplate::MistralV7)
        } else if has("[INST]") {
            Some(ChatTemplate::Llama2)
        } else if has("<|assistant|>") && has("<|end|>") {
            Some(ChatTemplate::Phi3)
        } else if has("<|user|>") && has("<|endoftext|>") {
            Some(ChatTemplate::Zephyr)
        } else if has("<start_of_turn>") {
            Some(ChatTemplate::Gemma)
        } else if has("<|start_header_id|>") && has("<|end_header_id|>") {
            Some(ChatTemplate::Llama3)
        } else {
            None
        }
    }

    /// The family whose turn markers are tokens of a vocabulary (`has_token` says whether a
    /// token is spelled so): for a model whose GGUF carries no template.
    pub fn detect_from_tokens(has_token: impl Fn(&str) -> bool) -> Option<ChatTemplate> {
        if has_token("<start_of_turn>") && has_token("<end_of_turn>") {
            Some(ChatTemplate::Gemma)
        } else if has_token("<|im_start|>") && has_token("<|im_end|>") {
            Some(ChatTemplate::ChatMl)
        } else if has_token("<|start_header_id|>") && has_token("<|eot_id|>") {
            Some(ChatTemplate::Llama3)
        } else if has_token("<|assistant|>") && has_token("<|end|>") {
            Some(ChatTemplate::Phi3)
        } else if has_token("[INST]") && has_token("[SYSTEM_PROMPT]") {
            Some(ChatTemplate::MistralV7)
        } else {
            None
        }
    }

    /// The conversation as prompt text; with `add_generation_prompt`, followed by the opening
    /// of the assistant's turn. The start-of-text token is not written (the tokenizer adds it).
    pub fn render(self, messages: &[ChatMessage], add_generation_prompt: bool) -> String {
        let mut out = String::new();
        match self {
            ChatTemplate::ChatMl => {
                for m in messages {
                    out.push_str(&format!(
                        "<|im_start|>{}\n{}<|im_end|>\n",
                        m.role, m.content
                    ));
                }
                if add_generation_prompt {
                    out.push_str("<|im_start|>assistant\n");
                }
            }
            ChatTemplate::Gemma => {
                // Gemma has no system turn: its text opens the first user turn.
                let mut system = String::new();
                for m in messages {
                    if m.role == "system" {
                        if !system.is_empty() {
                            system.push_str("\n\n");
                        }
                        system.push_str(m.content.trim());
                        continue;
                    }
                    let role = if m.role == "assistant" {
                        "model"
                    } else {
                        m.role.as_str()
                    };
                    out.push_str(&format!("<start_of_turn>{role}\n"));
                    if !system.is_empty() && role != "model" {
                        out.push_str(&system);
                        out.push_str("\n\n");
                        system.clear();
                    }
                    out.push_str(m.content.trim());
                    out.push_str("<end_of_turn>\n");
                }
                if !system.is_empty() {
                    // Only a system turn: it stands as a user turn of its own.
                    out.push_str(&format!("<start_of_turn>user\n{system}<end_of_turn>\n"));
                }
                if add_generation_prompt {
                    out.push_str("<start_of_turn>model\n");
                }
            }
            ChatTemplate::Llama3 => {
                for m in messages {
                    out.push_str(&format!(
                        "<|start_header_id|>{}<|end_header_id|>\n\n{}<|eot_id|>",
                        m.role,
                        m.content.trim()
                    ));
                }
                if add_generation_prompt {
                    out.push_str("<|start_header_id|>assistant<|end_header_id|>\n\n");
                }
            }
            ChatTemplate::Llama2 => {
                let mut system = String::new();
                let mut open = false;
                for m in messages {
                    match m.role.as_str() {
                        "system" => {
                            system = format!("<<SYS>>\n{}\n<</SYS>>\n\n", m.content.trim());
                        }
                        "assistant" => {
                            out.push_str(&format!(" {}</s>", m.content.trim()));
                            open = false;
                        }
                        _ => {
                            if !out.is_empty() && !open {
                                out.push_str("<s>");
                            }
                            out.push_str(&format!(
                                "[INST] {}{} [/INST]",
                                std::mem::take(&mut system),
                                m.content.trim()
                            ));
                            open = true;
                        }
                    }
                }
                let _ = add_generation_prompt; // the open [INST] block is the generation prompt
            }
            ChatTemplate::MistralV7 => {
                for m in messages {
                    match m.role.as_str() {
                        "system" => {
                            out.push_str(&format!("[SYSTEM_PROMPT] {}[/SYSTEM_PROMPT]", m.content))
                        }
                        "assistant" => out.push_str(&format!(" {}</s>", m.content)),
                        _ => out.push_str(&format!("[INST] {}[/INST]", m.content)),
                    }
                }
                let _ = add_generation_prompt;
            }
            ChatTemplate::Phi3 => {
                for m in messages {
                    out.push_str(&format!("<|{}|>\n{}<|end|>\n", m.role, m.content));
                }
                if add_generation_prompt {
                    out.push_str("<|assistant|>\n");
                }
            }
            ChatTemplate::Zephyr => {
                for m in messages {
                    out.push_str(&format!("<|{}|>\n{}<|endoftext|>\n", m.role, m.content));
                }
                if add_generation_prompt {
                    out.push_str("<|assistant|>\n");
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation() -> Vec<ChatMessage> {
        vec![
            ChatMessage::new("system", "Be brief."),
            ChatMessage::new("user", "Hi"),
            ChatMessage::new("assistant", "Hello!"),
            ChatMessage::new("user", "Colors?"),
        ]
    }

    #[test]
    fn gemma_joins_the_system_turn_to_the_first_user_turn() {
        assert_eq!(
            ChatTemplate::Gemma.render(&conversation(), true),
            "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n\
             <start_of_turn>model\nHello!<end_of_turn>\n\
             <start_of_turn>user\nColors?<end_of_turn>\n\
             <start_of_turn>model\n"
        );
    }

    #[test]
    fn chatml_and_llama3() {
        let one = [ChatMessage::new("user", "Hi")];
        assert_eq!(
            ChatTemplate::ChatMl.render(&one, true),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
        assert_eq!(
            ChatTemplate::Llama3.render(&one, true),
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>\
             <|start_header_id|>assistant<|end_header_id|>\n\n"
        );
        assert_eq!(
            ChatTemplate::ChatMl.render(&one, false),
            "<|im_start|>user\nHi<|im_end|>\n"
        );
    }

    #[test]
    fn llama2_and_mistral() {
        assert_eq!(
            ChatTemplate::Llama2.render(&conversation(), true),
            "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello!</s><s>[INST] Colors? [/INST]"
        );
        assert_eq!(
            ChatTemplate::MistralV7.render(&conversation(), true),
            "[SYSTEM_PROMPT] Be brief.[/SYSTEM_PROMPT][INST] Hi[/INST] Hello!</s>[INST] Colors?[/INST]"
        );
    }

    #[test]
    fn names_round_trip_and_aliases() {
        for (name, template) in CHAT_TEMPLATES {
            assert_eq!(ChatTemplate::from_name(name), Some(*template));
            assert_eq!(template.name(), *name);
        }
        assert_eq!(
            ChatTemplate::from_name("llama2-sys"),
            Some(ChatTemplate::Llama2)
        );
        assert!("nope"
            .parse::<ChatTemplate>()
            .unwrap_err()
            .contains("gemma"));
    }

    #[test]
    fn detects_families_from_jinja_and_tokens() {
        assert_eq!(
            ChatTemplate::detect("{{ '<|im_start|>' + message['role'] }}"),
            Some(ChatTemplate::ChatMl)
        );
        assert_eq!(
            ChatTemplate::detect("{{ '<start_of_turn>' + role }}"),
            Some(ChatTemplate::Gemma)
        );
        assert_eq!(
            ChatTemplate::detect("<|start_header_id|>x<|end_header_id|>"),
            Some(ChatTemplate::Llama3)
        );
        assert_eq!(ChatTemplate::detect("{{ messages }}"), None);
        let gemma_vocab = |t: &str| t == "<start_of_turn>" || t == "<end_of_turn>";
        assert_eq!(
            ChatTemplate::detect_from_tokens(gemma_vocab),
            Some(ChatTemplate::Gemma)
        );
        assert_eq!(ChatTemplate::detect_from_tokens(|_| false), None);
    }
}
