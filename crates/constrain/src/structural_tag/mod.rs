//! XGrammar's structural tags: a JSON description of output made of tagged parts (a
//! `<think>` block, then prose in which `<tool_call>` opens a call whose body follows a schema).
//!
//! The JSON is accepted as XGrammar defines it, so a request that vLLM's tool parsers send
//! (`{"type": "structural_tag", "format": {...}}`, or the older `structures` and `triggers`)
//! works unchanged. This module reads it into a typed tree ([`parse`]) whose every node keeps
//! its JSON pointer, and builds the free-text languages the tree needs ([`free_text`]); the
//! facade's [`Constraint`](crate::Constraint) lowers the tree to one grammar, with the
//! schemas, regular expressions and grammars inside compiled by their own front-ends.
//!
//! What the formats mean (read from XGrammar's documentation and structural-tag parser):
//! - `const_string` (`value`), `json_schema` (`json_schema`), `grammar` (EBNF, start rule
//!   `root`), `regex` (`pattern`): one part of that language.
//! - `sequence` and `or` (`elements`): each in turn, or any one.
//! - `tag` (`begin`, `content`, `end`: a string or a list of strings): the begin text, the
//!   content, then one of the end texts.
//! - `any_text` (`excludes`): any text without the excluded strings. At the end of the output
//!   it runs until generation ends; as the content of a tag it runs until the tag's end text
//!   first appears.
//! - `triggered_tags` (`triggers`, `tags`, `at_least_one`, `stop_after_first`, `excludes`):
//!   free text until a trigger appears, then the one tag whose begin starts with that trigger,
//!   then free text again. With `at_least_one` the output starts with a tag; with
//!   `stop_after_first` it ends after the first tag.
//! - `tags_with_separator` (`tags`, `separator`, `at_least_one`, `stop_after_first`): tags
//!   separated by the separator and nothing else (none at all unless `at_least_one`).
//!
//! `any_text`, `triggered_tags` and `tags_with_separator` are *unlimited*: nothing inside
//! them says where they stop. They may only come last (in a sequence, or as a tag's content,
//! where the tag's end text stops them), as XGrammar requires.

mod free_text;
mod parse;

pub(crate) use free_text::{free_text, Ending};
pub use parse::StructuralTagError;
pub(crate) use parse::{parse, Format, Kind, Tag};
