//! Loading a GGUF model and turning prompts into tokens.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use constrain_engine::{CompiledGrammar, Grammar, Limits, TokenIndex};
use constrain_vocab::Vocabulary;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::{send_logs_to_tracing, LogOptions};

use crate::chat::{ChatMessage, ChatTemplate};
use crate::gpu::{default_gpu_layers, gpu_devices, place, Placement};
use crate::vocabulary::vocabulary_from_model;
use crate::LlamaError;

/// How to load a model.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Let llama.cpp write its log to stderr. The first load of a process decides this for the
    /// whole process (llama.cpp's log hook is global).
    pub verbose: bool,
    /// Layers to offload to a GPU (0: CPU only; `u32::MAX`: all). Without a usable GPU the
    /// model runs on the CPU and [`Model::placement`] says why.
    pub gpu_layers: u32,
    /// Which GPU, by its position among the machine's GPUs (`None`: the first).
    pub gpu_device: Option<usize>,
}

impl Default for LoadOptions {
    /// Quiet; every layer on the first GPU in a build with a GPU backend, else the CPU.
    fn default() -> LoadOptions {
        LoadOptions {
            verbose: false,
            gpu_layers: default_gpu_layers(),
            gpu_device: None,
        }
    }
}

/// A loaded model with its vocabulary.
pub struct Model {
    model: LlamaModel,
    path: PathBuf,
    placement: Placement,
    vocabulary: Arc<Vocabulary>,
    index: OnceLock<Arc<TokenIndex>>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("path", &self.path)
            .field("vocabulary_len", &self.vocabulary.len())
            .finish_non_exhaustive()
    }
}

impl Model {
    /// Loads the GGUF model at `path` and reads its vocabulary.
    pub fn load(path: &Path, options: &LoadOptions) -> Result<Model, LlamaError> {
        if !path.is_file() {
            return Err(LlamaError::ModelNotFound {
                path: path.to_path_buf(),
            });
        }
        check_gguf_magic(path)?;
        let backend = backend(options.verbose)?;
        let devices = if options.gpu_layers > 0 {
            gpu_devices()
        } else {
            Vec::new()
        };
        let placement = place(options.gpu_layers, options.gpu_device, devices)?;
        let params = match &placement {
            Placement::Gpu { device, layers } => LlamaModelParams::default()
                .with_n_gpu_layers(*layers)
                .with_devices(&[device.backend_index])?,
            Placement::Cpu | Placement::CpuFallback(_) => {
                LlamaModelParams::default().with_n_gpu_layers(0)
            }
        };
        let model = LlamaModel::load_from_file(backend, path, &params).map_err(|source| {
            LlamaError::ModelLoad {
                path: path.to_path_buf(),
                source,
            }
        })?;
        let vocabulary = Arc::new(vocabulary_from_model(&model)?);
        Ok(Model {
            model,
            path: path.to_path_buf(),
            placement,
            vocabulary,
            index: OnceLock::new(),
        })
    }

    /// The file the model was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the model's layers run: the GPU asked for, the CPU as asked, or the CPU because no
    /// GPU was usable (a caller that asked for GPU layers tells its user so).
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// Every token's bytes and kind, as the model emits them.
    pub fn vocabulary(&self) -> &Arc<Vocabulary> {
        &self.vocabulary
    }

    /// The token trie of the vocabulary, built on first use and shared by every grammar.
    pub fn token_index(&self) -> Arc<TokenIndex> {
        self.index
            .get_or_init(|| TokenIndex::new(Arc::clone(&self.vocabulary)))
            .clone()
    }

    /// Compiles `grammar` against this model's vocabulary.
    pub fn compile(
        &self,
        grammar: &Grammar,
        limits: Limits,
    ) -> Result<Arc<CompiledGrammar>, LlamaError> {
        Ok(CompiledGrammar::new(grammar, self.token_index(), limits)?)
    }

    /// The context length the model was trained with.
    pub fn n_ctx_train(&self) -> u32 {
        self.model.n_ctx_train()
    }

    /// Tokenizes a prompt, with the model's start token.
    ///
    /// With `chat`, the prompt becomes one user turn of the model's chat template
    /// ([`Model::chat_template`]), followed by the opening of the model's turn; the template's
    /// markers become control tokens. Without it, the text is taken literally (text that looks
    /// like a control token stays text).
    pub fn prompt_tokens(&self, prompt: &str, chat: bool) -> Result<Vec<u32>, LlamaError> {
        if chat {
            let template = self.chat_template()?;
            return self.chat_prompt_tokens(template, &[ChatMessage::new("user", prompt)]);
        }
        self.tokenize(prompt, false)
    }

    /// Tokenizes a conversation rendered with `template`, followed by the opening of the
    /// assistant's turn; the template's markers (and any control token written in the
    /// messages) become control tokens.
    pub fn chat_prompt_tokens(
        &self,
        template: ChatTemplate,
        messages: &[ChatMessage],
    ) -> Result<Vec<u32>, LlamaError> {
        self.tokenize(&template.render(messages, true), true)
    }

    /// Tokenizes `text` with the model's start token; with `special`, text spelling a control
    /// token becomes that token.
    pub fn tokenize(&self, text: &str, special: bool) -> Result<Vec<u32>, LlamaError> {
        let vocab = self.model.vocab();
        // `add_special` adds the start token if the model wants one.
        let tokens = vocab.tokenize(text.as_bytes(), true, special);
        let mut ids: Vec<u32> = tokens.iter().map(|t| t.0 as u32).collect();
        // A template that writes the start token itself would otherwise give two of them.
        let bos = vocab.bos().0 as u32;
        if ids.len() >= 2 && ids[0] == bos && ids[1] == bos {
            ids.remove(0);
        }
        if ids.is_empty() {
            return Err(LlamaError::EmptyPrompt);
        }
        Ok(ids)
    }

    /// The Jinja chat template in the GGUF file, if it has one.
    pub fn chat_template_text(&self) -> Option<String> {
        self.model
            .chat_template(None)
            .ok()
            .and_then(|t| t.to_string().ok())
    }

    /// The texts of the beginning- and end-of-sequence tokens (a Jinja chat template's
    /// `bos_token` and `eos_token`); empty where the model has none.
    pub fn bos_eos_text(&self) -> (String, String) {
        let text = |id: llama_cpp_2::token::LlamaToken| {
            u32::try_from(id.0)
                .ok()
                .and_then(|id| self.vocabulary.token_bytes(id))
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
        };
        let vocab = self.model.vocab();
        (text(vocab.bos()), text(vocab.eos()))
    }

    /// The model's chat template: the family of the GGUF's own template, or, where the file
    /// has none (or one of no known family), the family whose turn markers are tokens of the
    /// vocabulary (`<start_of_turn>`: Gemma).
    pub fn chat_template(&self) -> Result<ChatTemplate, LlamaError> {
        let text = self.chat_template_text();
        if let Some(template) = text.as_deref().and_then(ChatTemplate::detect) {
            return Ok(template);
        }
        let has_token = |spelling: &str| {
            self.vocabulary.iter().any(|(_, bytes, kind)| {
                kind != constrain_vocab::TokenKind::Text && bytes == spelling.as_bytes()
            })
        };
        ChatTemplate::detect_from_tokens(has_token).ok_or_else(|| {
            LlamaError::ChatTemplate(format!(
                "the model {} has {}; name one with --chat-template ({})",
                self.path.display(),
                if text.is_some() {
                    "a chat template of no known family"
                } else {
                    "no chat template"
                },
                crate::chat::CHAT_TEMPLATES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }

    pub(crate) fn llama(&self) -> &LlamaModel {
        &self.model
    }
}

/// The process-wide llama.cpp backend; llama.cpp may be initialized only once per process.
pub(crate) fn backend(verbose: bool) -> Result<&'static LlamaBackend, LlamaError> {
    static BACKEND: Mutex<Option<&'static LlamaBackend>> = Mutex::new(None);
    let mut slot = BACKEND
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(backend) = *slot {
        return Ok(backend);
    }
    if !verbose {
        // Without a subscriber, tracing drops the records: llama.cpp stays silent.
        send_logs_to_tracing(LogOptions::default().with_logs_enabled(false));
    }
    let backend: &'static LlamaBackend = Box::leak(Box::new(LlamaBackend::init()?));
    *slot = Some(backend);
    Ok(backend)
}

/// An error naming what the file starts with when it does not start with GGUF's magic bytes:
/// llama.cpp's own answer to such a file is a bare null pointer.
fn check_gguf_magic(path: &Path) -> Result<(), LlamaError> {
    use std::io::Read;
    let mut head = Vec::with_capacity(4);
    let read = std::fs::File::open(path).and_then(|f| f.take(4).read_to_end(&mut head));
    if read.is_ok() && head.as_slice() != b"GGUF" {
        return Err(LlamaError::NotGguf {
            path: path.to_path_buf(),
            found: String::from_utf8_lossy(&head).into_owned(),
        });
    }
    // An unreadable file is llama.cpp's to report.
    Ok(())
}
