//! Compilation state shared by parsing, the set algebra and emission: the document, shared
//! definitions (whose bodies are computed on demand), warnings and budgets.

use std::rc::Rc;

use rustc_hash::FxHashMap;

use crate::document::{Document, DynamicScope, Location};
use crate::error::{pointer_or_root, SchemaError, Warning, WarningKind};
use crate::ir::{DefId, Node};
use crate::re::Re;
use crate::Options;

/// Deepest nesting of schemas inside schemas.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 200;
/// Most shared definitions (`$ref` targets and combinations of them).
pub(crate) const MAX_DEFS: usize = 20_000;
/// Most alternatives produced by distributing an intersection over unions.
pub(crate) const MAX_BRANCHES: usize = 512;
/// Work budget of the set algebra (intersections, complements, emptiness checks).
pub(crate) const FUEL: u64 = 100_000;

/// Where a shared definition's body comes from.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// The schema at a place in the document.
    Schema(Location),
    /// The intersection of two sets.
    Meet(Node, Node),
    /// The complement of a set.
    Not(Node),
}

#[derive(Clone, Debug)]
enum Body {
    Pending(Source),
    InProgress,
    Done(Node),
}

/// A shared definition: becomes one grammar rule.
#[derive(Clone, Debug)]
pub(crate) struct Def {
    /// A readable name (a JSON pointer, or how it was combined).
    pub(crate) name: String,
    /// Where errors inside it are reported.
    pub(crate) pointer: String,
    body: Body,
}

/// A definition was needed while its own body was being computed.
#[derive(Debug)]
pub(crate) struct InProgress(pub(crate) DefId);

/// The outcome of an operation that may meet a definition still being computed.
pub(crate) enum Fail {
    Error(SchemaError),
    InProgress(InProgress),
}

impl From<SchemaError> for Fail {
    fn from(e: SchemaError) -> Fail {
        Fail::Error(e)
    }
}

pub(crate) struct Ctx<'a> {
    pub(crate) options: &'a Options,
    pub(crate) doc: Document<'a>,
    pub(crate) defs: Vec<Def>,
    def_by_location: FxHashMap<(String, DynamicScope), DefId>,
    meet_memo: FxHashMap<(Node, Node), DefId>,
    not_memo: FxHashMap<Node, DefId>,
    matchers: FxHashMap<Rc<Re>, regex_automata::meta::Regex>,
    /// The complements of the string languages `not` and `oneOf` met, or why they have
    /// none: separating the branches of a `oneOf` takes each branch's complement once per
    /// other branch, and finding that a complement's expression is past its budget costs
    /// as much as building it.
    pub(crate) complements: FxHashMap<Rc<Re>, Result<Rc<Re>, crate::re::dfa::TooLarge>>,
    /// Languages enforced on a subset (some formats), each with a superset of the exact
    /// language: their complement cannot be taken, and only the superset proves emptiness.
    pub(crate) subset_langs: FxHashMap<Rc<Re>, Rc<Re>>,
    pub(crate) warnings: Vec<Warning>,
    fuel: u64,
    /// The definition whose body is being computed, innermost last.
    stack: Vec<DefId>,
    /// What is known of the instance of the schema about to be parsed (see
    /// `Ctx::parse_within`); taken by the first schema object parsed.
    pub(crate) within: Option<Node>,
    /// The dynamic anchors in force where parsing is.
    pub(crate) scope: DynamicScope,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(options: &'a Options, doc: Document<'a>) -> Ctx<'a> {
        Ctx {
            options,
            doc,
            defs: Vec::new(),
            def_by_location: FxHashMap::default(),
            meet_memo: FxHashMap::default(),
            not_memo: FxHashMap::default(),
            matchers: FxHashMap::default(),
            complements: FxHashMap::default(),
            subset_langs: FxHashMap::default(),
            warnings: Vec::new(),
            fuel: FUEL,
            stack: Vec::new(),
            within: None,
            scope: DynamicScope::default(),
        }
    }

    /// Spends one unit of the algebra's work budget.
    pub(crate) fn burn(&mut self, pointer: &str) -> Result<(), SchemaError> {
        if self.fuel == 0 {
            return Err(SchemaError::TooComplex {
                pointer: pointer.to_string(),
                what: "work on combining subschemas (allOf/anyOf/oneOf/not)".into(),
                limit: FUEL as usize,
            });
        }
        self.fuel -= 1;
        crate::deadline::check(pointer)
    }

    fn add_def(
        &mut self,
        name: String,
        pointer: String,
        source: Source,
    ) -> Result<DefId, SchemaError> {
        if self.defs.len() >= MAX_DEFS {
            return Err(SchemaError::TooComplex {
                pointer,
                what: "shared definitions".into(),
                limit: MAX_DEFS,
            });
        }
        self.defs.push(Def {
            name,
            pointer,
            body: Body::Pending(source),
        });
        Ok(self.defs.len() - 1)
    }

    /// The definition of the schema at `location`: one per place and dynamic scope.
    pub(crate) fn schema_def(&mut self, location: Location) -> Result<DefId, SchemaError> {
        let key = (location.pointer.clone(), location.scope.clone());
        if let Some(&id) = self.def_by_location.get(&key) {
            return Ok(id);
        }
        let name = format!("#{}", location.pointer);
        let pointer = location.pointer.clone();
        let id = self.add_def(name, pointer, Source::Schema(location))?;
        self.def_by_location.insert(key, id);
        Ok(id)
    }

    /// A definition for the intersection of `a` and `b`, computed when needed.
    pub(crate) fn meet_def(
        &mut self,
        a: Node,
        b: Node,
        pointer: &str,
    ) -> Result<DefId, SchemaError> {
        if let Some(&id) = self.meet_memo.get(&(b.clone(), a.clone())) {
            return Ok(id);
        }
        let key = (a, b);
        if let Some(&id) = self.meet_memo.get(&key) {
            return Ok(id);
        }
        let name = format!("{}&{}", self.node_name(&key.0), self.node_name(&key.1));
        let id = self.add_def(
            name,
            pointer.to_string(),
            Source::Meet(key.0.clone(), key.1.clone()),
        )?;
        self.meet_memo.insert(key, id);
        Ok(id)
    }

    /// A definition for the complement of `a`, computed when needed.
    pub(crate) fn not_def(&mut self, a: Node, pointer: &str) -> Result<DefId, SchemaError> {
        if let Some(&id) = self.not_memo.get(&a) {
            return Ok(id);
        }
        let name = format!("not-{}", self.node_name(&a));
        let id = self.add_def(name, pointer.to_string(), Source::Not(a.clone()))?;
        self.not_memo.insert(a, id);
        Ok(id)
    }

    fn node_name(&self, n: &Node) -> String {
        match n {
            Node::Ref(d) => self.defs[*d].name.clone(),
            _ => "schema".into(),
        }
    }

    /// The body of definition `id`, computing it if needed.
    pub(crate) fn body(&mut self, id: DefId) -> Result<Node, Fail> {
        match &self.defs[id].body {
            Body::Done(n) => return Ok(n.clone()),
            Body::InProgress => return Err(Fail::InProgress(InProgress(id))),
            Body::Pending(_) => {}
        }
        if self.stack.len() >= MAX_SCHEMA_DEPTH {
            return Err(Fail::Error(SchemaError::TooComplex {
                pointer: self.defs[id].pointer.clone(),
                what: "nesting of $ref targets being resolved".into(),
                limit: MAX_SCHEMA_DEPTH,
            }));
        }
        let Body::Pending(source) = std::mem::replace(&mut self.defs[id].body, Body::InProgress)
        else {
            return Err(Fail::InProgress(InProgress(id)));
        };
        self.stack.push(id);
        let result = self.compute(&source, id);
        self.stack.pop();
        match result {
            Ok(node) => {
                self.defs[id].body = Body::Done(node.clone());
                Ok(node)
            }
            Err(e) => {
                self.defs[id].body = Body::Pending(source);
                Err(e)
            }
        }
    }

    fn compute(&mut self, source: &Source, id: DefId) -> Result<Node, Fail> {
        let pointer = self.defs[id].pointer.clone();
        match source {
            Source::Schema(loc) => {
                let value =
                    self.doc
                        .value_at(&loc.pointer)
                        .ok_or_else(|| SchemaError::UnresolvedRef {
                            reference: format!("#{}", loc.pointer),
                            pointer: loc.pointer.clone(),
                            reason: "nothing there".into(),
                        })?;
                let outer = std::mem::replace(&mut self.scope, loc.scope.clone());
                let parsed = self.parse_schema(value, &loc.pointer, &loc.base, 0);
                self.scope = outer;
                Ok(parsed?)
            }
            Source::Meet(a, b) => {
                let a = self.expand(a)?;
                let b = self.expand(b)?;
                Ok(self.meet(&a, &b, &pointer)?)
            }
            Source::Not(a) => {
                let a = self.expand(a)?;
                Ok(self.complement(&a, &pointer)?)
            }
        }
    }

    /// `node` with references replaced by their bodies (at the top only).
    pub(crate) fn expand(&mut self, node: &Node) -> Result<Node, Fail> {
        let mut node = node.clone();
        let mut seen = Vec::new();
        while let Node::Ref(d) = node {
            if seen.contains(&d) {
                return Err(Fail::Error(SchemaError::Invalid {
                    pointer: self.defs[d].pointer.clone(),
                    message: "$ref cycle that never reaches a schema".into(),
                }));
            }
            seen.push(d);
            node = self.body(d)?;
        }
        Ok(node)
    }

    /// Records a warning.
    pub(crate) fn warn(
        &mut self,
        pointer: &str,
        keyword: &str,
        kind: WarningKind,
        message: impl Into<String>,
    ) {
        self.warnings.push(Warning {
            pointer: pointer.to_string(),
            keyword: keyword.to_string(),
            kind,
            message: message.into(),
        });
    }

    /// A keyword that cannot be enforced: an error, or with `lenient` a warning (and the caller
    /// drops the keyword).
    pub(crate) fn unsupported(
        &mut self,
        pointer: &str,
        keyword: &str,
        reason: impl Into<String>,
    ) -> Result<(), SchemaError> {
        let reason = reason.into();
        // Out of time, not out of support: never a dropped constraint.
        crate::deadline::check(pointer)?;
        if self.options.lenient {
            self.warn(pointer, keyword, WarningKind::Dropped, reason);
            Ok(())
        } else {
            Err(SchemaError::Unsupported {
                keyword: keyword.to_string(),
                pointer: pointer_or_root(pointer),
                reason,
            })
        }
    }

    /// Whether the decoded string `text` is in the full-match language `re`.
    pub(crate) fn lang_matches(&mut self, re: &Rc<Re>, text: &str) -> Result<bool, SchemaError> {
        if let Re::Automaton(a) = &**re {
            return Ok(a.dfa().matches(text));
        }
        if re.has_automaton() {
            return crate::re::dfa::minimal_dfa(re)
                .map(|a| a.matches(text))
                .map_err(|e| e.into_error(String::new()));
        }
        if !self.matchers.contains_key(re) {
            let hir = regex_syntax::hir::Hir::concat(vec![
                regex_syntax::hir::Hir::look(regex_syntax::hir::Look::Start),
                re.to_hir(),
                regex_syntax::hir::Hir::look(regex_syntax::hir::Look::End),
            ]);
            let m = regex_automata::meta::Regex::builder()
                .build_from_hir(&hir)
                .map_err(|e| SchemaError::TooComplex {
                    pointer: String::new(),
                    what: format!("regular expression ({e})"),
                    limit: 0,
                })?;
            self.matchers.insert(re.clone(), m);
        }
        Ok(self.matchers.get(re).is_some_and(|m| m.is_match(text)))
    }
}
