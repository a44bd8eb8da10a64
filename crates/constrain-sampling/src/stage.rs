//! The stages of the funnel and their canonical order.

/// One step of the funnel that works on logits. Softmax and the draw always come last and
/// are not stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// -inf for every token the grammar forbids.
    GrammarMask,
    /// CTRL's multiplicative penalty on the tokens of the penalty window.
    RepetitionPenalty,
    /// OpenAI's additive frequency and presence penalties.
    FrequencyPresencePenalty,
    /// Per-token additive bias.
    LogitBias,
    /// Division by the temperature (0: greedy).
    Temperature,
    /// Keep the k most likely.
    TopK,
    /// Keep the nucleus of mass p.
    TopP,
    /// Keep tokens within a factor of the most likely.
    MinP,
    /// Keep the most typical tokens of mass p.
    TypicalP,
}

impl Stage {
    /// The canonical order: constraints, then history, then bias, then shape, then cutoffs
    /// from the bluntest to the finest.
    pub const CANONICAL_ORDER: [Stage; 9] = [
        Stage::GrammarMask,
        Stage::RepetitionPenalty,
        Stage::FrequencyPresencePenalty,
        Stage::LogitBias,
        Stage::Temperature,
        Stage::TopK,
        Stage::TopP,
        Stage::MinP,
        Stage::TypicalP,
    ];

    /// The stage's name in traces and on the command line (`"top-k"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Stage::GrammarMask => "grammar-mask",
            Stage::RepetitionPenalty => "repetition-penalty",
            Stage::FrequencyPresencePenalty => "frequency-presence-penalty",
            Stage::LogitBias => "logit-bias",
            Stage::Temperature => "temperature",
            Stage::TopK => "top-k",
            Stage::TopP => "top-p",
            Stage::MinP => "min-p",
            Stage::TypicalP => "typical-p",
        }
    }

    /// The stage with this [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::CANONICAL_ORDER
            .into_iter()
            .find(|stage| stage.name() == name)
    }

    /// Whether the stage looks at token ids (the mask, the penalties, the bias), as opposed to
    /// only the values of the logits. The funnel compacts the vocabulary only after the last
    /// such stage.
    pub fn reads_token_ids(self) -> bool {
        matches!(
            self,
            Stage::GrammarMask
                | Stage::RepetitionPenalty
                | Stage::FrequencyPresencePenalty
                | Stage::LogitBias
        )
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
