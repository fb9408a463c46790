//! JSON Schema validation of SPEC §5.5 and the error walk of §5.6.
//!
//! libagent evaluates schemas itself, as the reference does: `refs` resolves references when a
//! schema is compiled, `validate` decides accept or reject, `explain` words the failures, with
//! the ECMAScript patterns of `pattern` and the format checks of `formats`.

mod explain;
mod formats;
mod keywords;
mod pattern;
mod refs;
mod validate;
mod values;

pub use explain::{explain, format_path, matches_type, type_list, type_name, SchemaError};
pub use keywords::{compile_regex, is_multiple_of};
pub use pattern::Pattern;
pub use refs::{push_segment, MAX_DEPTH};

use crate::json::Json;
use std::collections::HashMap;
use std::sync::Arc;

/// The compiled parts of a schema, kept and shared between calls: a copy of the document whose
/// node addresses key the resolved references, and every pattern compiled.
pub struct Compiled {
    index: refs::Index,
    /// Boxed: the addresses of its nodes (the root's too) must not change once `links` uses them.
    doc: Box<Json>,
    links: HashMap<usize, Links>,
    /// Every `pattern` and `patternProperties` key of the document.
    patterns: HashMap<String, Pattern>,
    /// The document has a `$dynamicRef`: results depend on the dynamic scope (no memo).
    dynamic: bool,
    /// See [`Compiled::is_flat`].
    flat: bool,
}

/// What a schema node refers to, resolved at compile time.
#[derive(Default)]
struct Links {
    /// `$ref`: the target's pointer, `None` when unresolved.
    reference: Option<Option<String>>,
    dynamic: Option<refs::DynamicRef>,
    /// The node is a resource root (the document root, or `$id`): its URI.
    resource: Option<String>,
}

impl Compiled {
    /// Compiles `root` (SPEC §5.5.1). Fails with the reference's text for a non-schema root,
    /// or with the compile error of an invalid pattern.
    pub fn new(root: &Json) -> Result<Compiled, String> {
        if !root.is_object() && !root.is_boolean() {
            return Err(format!(
                "A schema must be an object or a boolean, got {}",
                crate::json::to_string(root)
            ));
        }
        let mut index = refs::Index::build(root);
        let mut patterns = HashMap::new();
        for (_, map) in index.object_nodes(root) {
            let pattern = map.get("pattern").and_then(Json::as_str);
            let keys = map
                .get("patternProperties")
                .and_then(Json::as_object)
                .into_iter()
                .flat_map(|p| p.keys().map(String::as_str));
            for source in pattern.into_iter().chain(keys) {
                if !patterns.contains_key(source) {
                    patterns.insert(source.to_string(), Pattern::new(source)?);
                }
            }
        }
        let doc = Box::new(root.clone());
        let mut links: HashMap<usize, Links> = HashMap::new();
        let address = |ptr: &str| doc.pointer(ptr).map(|n| n as *const Json as usize);
        for (ptr, target) in &index.refs {
            if let Some(node) = address(ptr) {
                links.entry(node).or_default().reference = Some(target.clone());
            }
        }
        let dynamic = !index.dynamic_refs.is_empty();
        for (ptr, target) in std::mem::take(&mut index.dynamic_refs) {
            if let Some(node) = address(&ptr) {
                links.entry(node).or_default().dynamic = Some(target);
            }
        }
        for (ptr, uri) in &index.resource_roots {
            if let Some(node) = address(ptr) {
                links.entry(node).or_default().resource = Some(uri.clone());
            }
        }
        Ok(Compiled {
            index,
            flat: flat_schema(&doc),
            doc,
            links,
            patterns,
            dynamic,
        })
    }

    /// The schema is an object of primitive-typed properties and nothing else that coerces
    /// (most tools' parameters): the coercion passes leave a value it accepts unchanged.
    pub fn is_flat(&self) -> bool {
        self.flat
    }

    /// A compiled pattern matches `text` (an undecidable match counts as no match).
    fn pattern_matches(&self, source: &str, text: &str) -> bool {
        self.patterns
            .get(source)
            .is_some_and(|p| p.is_match(text) == Ok(true))
    }
}

/// A compiled tool schema: the original document and its compiled parts.
pub struct Schema<'a> {
    root: &'a Json,
    compiled: Arc<Compiled>,
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
        Schema { root, compiled }
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
        validate::Evaluator::new(&self.compiled).accepts(&self.compiled.doc, value)
    }

    /// Full validation of `value` against the subschema at `ptr`; `None` when there is no
    /// subschema there ("unknown": neither accept nor reject, SPEC §5.4).
    pub fn accepts(&self, ptr: &str, value: &Json) -> Option<bool> {
        let node = self.compiled.doc.pointer(ptr)?;
        Some(validate::Evaluator::new(&self.compiled).accepts(node, value))
    }

    /// The property names and item indexes of `value` that the subschema at `ptr` leaves
    /// unevaluated (2020-12 annotations), for `unevaluatedProperties` / `unevaluatedItems`.
    pub fn unevaluated(&self, ptr: &str, value: &Json) -> (Vec<String>, Vec<usize>) {
        let Some(node) = self.compiled.doc.pointer(ptr) else {
            return (Vec::new(), Vec::new());
        };
        let left = validate::Evaluator::new(&self.compiled).unevaluated(node, value);
        let properties = match value {
            Json::Object(map) => map
                .keys()
                .zip(&left.properties)
                .filter(|(_, &left)| left)
                .map(|(key, _)| key.clone())
                .collect(),
            _ => Vec::new(),
        };
        let items = (0..left.items.len()).filter(|&i| left.items[i]).collect();
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

    /// Whether an ECMAScript `pattern` of the schema matches `text` (invalid patterns match
    /// nothing); an error naming the pattern when that cannot be decided in bounded time.
    pub fn pattern_matches(&self, pattern: &str, text: &str) -> Result<bool, String> {
        self.compiled
            .patterns
            .get(pattern)
            .map_or(Ok(false), |p| p.is_match(text))
    }

    /// Whether `text` satisfies the named format (unknown names always do).
    pub fn format_ok(&self, name: &str, text: &str) -> bool {
        formats::format_ok(name, text)
    }
}

/// An object schema whose members are only `type: "object"`, `properties`, `required`, a boolean
/// `additionalProperties` and annotations, each property being `{type: string|number|integer|
/// boolean}` with annotations: most tools' parameters. Every coercion pass (SPEC §5.4) changes
/// only a member whose value the property's type rejects, or a `null` it rejects, and a value
/// such a schema accepts has neither; so coercing it is the identity.
fn flat_schema(doc: &Json) -> bool {
    const ANNOTATIONS: [&str; 3] = ["description", "title", "$schema"];
    let Some(root) = doc.as_object() else {
        return false;
    };
    let root_member_ok = |(key, value): (&String, &Json)| match key.as_str() {
        "type" => value == "object",
        "properties" => value.as_object().is_some_and(|properties| {
            properties.values().all(|property| {
                property.as_object().is_some_and(|property| {
                    property.iter().all(|(key, value)| match key.as_str() {
                        "type" => matches!(
                            value.as_str(),
                            Some("string" | "number" | "integer" | "boolean")
                        ),
                        key => ANNOTATIONS.contains(&key),
                    }) && property.contains_key("type")
                })
            })
        }),
        "required" => value.is_array(),
        "additionalProperties" => value.is_boolean(),
        key => ANNOTATIONS.contains(&key),
    };
    root.get("type").is_some_and(|t| t == "object") && root.iter().all(root_member_ok)
}
