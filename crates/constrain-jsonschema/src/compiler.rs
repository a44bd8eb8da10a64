//! The pipeline: index the document, read the root schema (and what it refers to) into
//! [`Node`](crate::ir::Node)s, emit the grammar.

use crate::ctx::Ctx;
use crate::document::{Document, Location};
use crate::ir::Node;
use crate::{Compiled, Options, SchemaError};

/// Compiles `schema` within `budget` of wall-clock time (`None`: no limit).
pub(crate) fn compile(
    schema: &serde_json::Value,
    options: &Options,
    budget: Option<std::time::Duration>,
) -> Result<Compiled, SchemaError> {
    let _deadline = crate::deadline::Guard::install(budget);
    let _string_sets = crate::strings::Combined::install();
    let doc = Document::new(schema, &options.resources);
    let base = doc.base_at("");
    let mut ctx = Ctx::new(options, doc);
    let root = ctx.schema_def(Location {
        pointer: String::new(),
        base,
        scope: Default::default(),
    })?;
    let (grammar, mut warnings) = crate::emit::compile_root(&mut ctx, Node::Ref(root))?;
    // Parts spelled after the deadline passed are cut short (see `json_text`): a grammar
    // finished late is never returned.
    crate::deadline::check("")?;
    let mut seen = std::collections::HashSet::new();
    warnings.retain(|w| seen.insert((w.pointer.clone(), w.keyword.clone(), w.message.clone())));
    Ok(Compiled { grammar, warnings })
}
