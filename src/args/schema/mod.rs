//! JSON Schema validation of SPEC §5.5 and the error walk of §5.6.
//!
//! Accept/reject decisions come from the `jsonschema` crate, compiled once per call for every
//! subschema of an engine copy of the schema (see `refs`); libagent adds the reference's
//! `$ref` rules, keyword overrides (`keywords`) and the explain walk (`explain`).

mod explain;
mod keywords;
mod pattern;
mod refs;
mod values;

pub use explain::{explain, format_path, matches_type, type_list, type_name, SchemaError};
pub use keywords::{compile_regex, is_multiple_of};
pub use pattern::Pattern;
pub use refs::{push_segment, MAX_DEPTH};

use crate::json::Json;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// The compiled parts of a schema that do not borrow the document, so they can be kept and
/// shared between calls (compiling is the expensive part of a validation).
pub struct Compiled {
    index: refs::Index,
    validator: jsonschema::Validator,
    validators: jsonschema::ValidatorMap,
}

impl Compiled {
    /// Compiles `root` (SPEC §5.5.1). Fails with the reference's text for a non-schema root,
    /// or with the engine's compile error (for example an invalid `pattern`).
    pub fn new(root: &Json) -> Result<Compiled, String> {
        if !root.is_object() && !root.is_boolean() {
            return Err(format!(
                "A schema must be an object or a boolean, got {}",
                crate::json::to_string(root)
            ));
        }
        let index = refs::Index::build(root);
        let engine = index.engine_document(root);
        let options = keywords::engine_options();
        // The root compile gives the error text; the map gives every subschema's validator.
        let validator = options.build(&engine).map_err(|e| e.to_string())?;
        let validators = options.build_map(&engine).map_err(|e| e.to_string())?;
        Ok(Compiled {
            index,
            validator,
            validators,
        })
    }
}

/// A compiled tool schema: the original document plus one engine validator per subschema.
pub struct Schema<'a> {
    root: &'a Json,
    compiled: Arc<Compiled>,
    regexes: RefCell<HashMap<String, Option<Pattern>>>,
    formats: RefCell<HashMap<String, Option<jsonschema::Validator>>>,
}

/// A subschema of the document: its value and its JSON pointer in the original schema.
#[derive(Clone)]
pub struct Node<'a> {
    pub schema: &'a Json,
    pub ptr: String,
}

impl<'a> Node<'a> {
    /// The child schema at `keyword` (a schema-valued keyword), if it is a schema.
    pub fn get(&self, keyword: &str) -> Option<Node<'a>> {
        let schema = crate::json::field(self.schema, keyword)?;
        (schema.is_object() || schema.is_boolean()).then(|| Node {
            schema,
            ptr: push_segment(&self.ptr, keyword),
        })
    }

    /// The child schema at `keyword/member` (a member of a map or array keyword).
    pub fn member(&self, keyword: &str, member: &str) -> Option<Node<'a>> {
        let container = crate::json::field(self.schema, keyword)?;
        let schema = match container {
            Json::Object(map) => crate::json::map_field(map, member)?,
            Json::Array(items) => items.get(member.parse::<usize>().ok()?)?,
            _ => return None,
        };
        (schema.is_object() || schema.is_boolean()).then(|| Node {
            schema,
            ptr: push_segment(&push_segment(&self.ptr, keyword), member),
        })
    }

    /// The members of an array keyword (`allOf`, `anyOf`, `prefixItems`, ...), schemas only
    /// (a non-schema member keeps its index but is skipped).
    pub fn list(&self, keyword: &str) -> Vec<Node<'a>> {
        let Some(Json::Array(items)) = crate::json::field(self.schema, keyword) else {
            return Vec::new();
        };
        let base = push_segment(&self.ptr, keyword);
        items
            .iter()
            .enumerate()
            .map(|(i, schema)| Node {
                schema,
                ptr: push_segment(&base, &i.to_string()),
            })
            .collect()
    }

    /// The schema as an object, if it is one.
    pub fn object(&self) -> Option<&'a crate::json::JsonMap> {
        self.schema.as_object()
    }
}

impl<'a> Schema<'a> {
    /// Compiles `root` (SPEC §5.5.1). Fails with the reference's text for a non-schema root,
    /// or with the engine's compile error (for example an invalid `pattern`).
    pub fn compile(root: &'a Json) -> Result<Schema<'a>, String> {
        Ok(Schema::with_compiled(root, Arc::new(Compiled::new(root)?)))
    }

    /// The schema of `root` from its already compiled parts (`Compiled::new(root)`).
    pub fn with_compiled(root: &'a Json, compiled: Arc<Compiled>) -> Schema<'a> {
        Schema {
            root,
            compiled,
            regexes: RefCell::new(HashMap::new()),
            formats: RefCell::new(HashMap::new()),
        }
    }

    /// The root node.
    pub fn root(&self) -> Node<'a> {
        Node {
            schema: self.root,
            ptr: String::new(),
        }
    }

    /// Full validation of `value` against the whole schema.
    pub fn is_valid(&self, value: &Json) -> bool {
        self.compiled.validator.is_valid(value)
    }

    /// Full validation of `value` against the subschema at `ptr`; `None` when that subschema
    /// could not be compiled ("unknown": neither accept nor reject, SPEC §5.4).
    pub fn accepts(&self, ptr: &str, value: &Json) -> Option<bool> {
        let key = format!("#{}", self.compiled.index.engine_ptr(ptr));
        self.compiled
            .validators
            .get(&key)
            .map(|v| v.is_valid(value))
    }

    /// The unevaluated property names and items (as engine JSON text) of `value` at `ptr`, from
    /// the engine's errors: only the engine keeps the 2020-12 annotation bookkeeping.
    pub fn unevaluated(&self, ptr: &str, value: &Json) -> (Vec<String>, Vec<String>) {
        use jsonschema::error::ValidationErrorKind as Kind;
        let key = format!("#{}", self.compiled.index.engine_ptr(ptr));
        let (mut properties, mut items) = (Vec::new(), Vec::new());
        if let Some(validator) = self.compiled.validators.get(&key) {
            for error in validator.iter_errors(value) {
                if !error.instance_path().as_str().is_empty() {
                    continue;
                }
                match error.kind() {
                    Kind::UnevaluatedProperties { unexpected } => {
                        properties.extend(unexpected.iter().cloned())
                    }
                    Kind::UnevaluatedItems { unexpected } => {
                        items.extend(unexpected.iter().cloned())
                    }
                    _ => {}
                }
            }
        }
        (properties, items)
    }

    /// The target of the `$ref` of the node at `ptr`: `Some(None)` when unresolved, `None` when
    /// the node has no string `$ref`.
    pub fn ref_target(&self, ptr: &str) -> Option<Option<Node<'a>>> {
        let target = self.compiled.index.refs.get(ptr)?;
        Some(target.as_ref().and_then(|t| self.node_at(t)))
    }

    fn node_at(&self, ptr: &str) -> Option<Node<'a>> {
        let schema = self.root.pointer(ptr)?;
        Some(Node {
            schema,
            ptr: ptr.to_string(),
        })
    }

    /// Whether an ECMAScript `pattern` matches `text` (invalid patterns match nothing); an
    /// error naming the pattern when that cannot be decided in bounded time.
    pub fn pattern_matches(&self, pattern: &str, text: &str) -> Result<bool, String> {
        let mut cache = self.regexes.borrow_mut();
        let compiled = cache
            .entry(pattern.to_string())
            .or_insert_with(|| Pattern::new(pattern).ok());
        compiled.as_ref().map_or(Ok(false), |p| p.is_match(text))
    }

    /// Whether `text` satisfies the named format (unknown names always do).
    pub fn format_ok(&self, name: &str, text: &str) -> bool {
        let mut cache = self.formats.borrow_mut();
        let validator = cache.entry(name.to_string()).or_insert_with(|| {
            keywords::engine_options()
                .build(&serde_json::json!({ "format": name }))
                .ok()
        });
        validator
            .as_ref()
            .is_none_or(|v| v.is_valid(&Json::String(text.to_string())))
    }
}
