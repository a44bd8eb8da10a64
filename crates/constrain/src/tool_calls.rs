//! Tool calls as constraints: the text a model writes around each call, composed with the
//! schema of one call.

use std::sync::Arc;

use constrain_vocab::Vocabulary;

use crate::constraint::Constraint;
use crate::triggered::Trigger;

/// How a model writes tool calls: the text that opens and closes each call, and what stands
/// between two calls.
///
/// ```
/// use constrain::{Constraint, ToolCallFormat};
///
/// let format = ToolCallFormat::hermes();
/// let call = Constraint::JsonSchema(serde_json::json!({"type": "object"}));
/// let grammar = format.calls(call, false).grammar()?;
/// assert!(grammar.rule_count() > 1);
/// # Ok::<(), constrain::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCallFormat {
    /// The text before each call.
    pub open: String,
    /// The text after each call.
    pub close: String,
    /// The text between two calls.
    pub separator: String,
}

impl ToolCallFormat {
    /// `<tool_call>CALL</tool_call>`, calls one per line: the Hermes form, which Qwen models
    /// use too.
    pub fn hermes() -> ToolCallFormat {
        ToolCallFormat {
            open: "<tool_call>".into(),
            close: "</tool_call>".into(),
            separator: "\n".into(),
        }
    }

    /// One call (`call` is the constraint of its body), or with `parallel` one or more.
    pub fn calls(&self, call: Constraint, parallel: bool) -> Constraint {
        let one = Constraint::Sequence(vec![
            Constraint::Text(self.open.clone()),
            call,
            Constraint::Text(self.close.clone()),
        ]);
        if !parallel {
            return one;
        }
        Constraint::Sequence(vec![
            one.clone(),
            Constraint::Repeat {
                item: Box::new(Constraint::Sequence(vec![
                    Constraint::Text(self.separator.clone()),
                    one,
                ])),
                min: 0,
                max: None,
            },
        ])
    }

    /// What follows the opening text once a call began in free text: the rest of that call,
    /// then, with `parallel`, more calls. Its [`trigger`](Self::trigger) is the opening text.
    pub fn after_open(&self, call: Constraint, parallel: bool) -> Constraint {
        let mut parts = vec![call.clone(), Constraint::Text(self.close.clone())];
        if parallel {
            parts.push(Constraint::Repeat {
                item: Box::new(Constraint::Sequence(vec![
                    Constraint::Text(self.separator.clone()),
                    Constraint::Text(self.open.clone()),
                    call,
                    Constraint::Text(self.close.clone()),
                ])),
                min: 0,
                max: None,
            });
        }
        Constraint::Sequence(parts)
    }

    /// The trigger that opens a call in free text, for
    /// [`TriggeredMatcher`](crate::TriggeredMatcher) with the grammar of
    /// [`after_open`](Self::after_open).
    pub fn trigger(&self, vocabulary: &Vocabulary) -> Arc<Trigger> {
        Arc::new(Trigger::new(&self.open, vocabulary))
    }
}
