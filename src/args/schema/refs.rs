//! `$ref` and `$dynamicRef` resolution (SPEC §5.5.3).
//!
//! libagent resolves every reference itself when a schema is compiled, so that an unresolved one
//! acts as a `false` schema at its place instead of failing compilation.

use super::keywords::ROOT_BASE;
use crate::json::{Json, JsonMap};
use std::collections::HashMap;
use url::Url;

/// Deeper schemas are not walked (a guard against stack exhaustion on hostile input).
pub const MAX_DEPTH: usize = 512;

/// One schema position of the document.
struct NodeInfo {
    ptr: String,
    base: Url,
}

/// A `$dynamicRef`: its static target, and the anchor name to look up in the dynamic scope when
/// that target holds the same `$dynamicAnchor` (2020-12; otherwise it acts as a `$ref`).
pub struct DynamicRef {
    pub target: Option<String>,
    pub anchor: Option<String>,
}

/// What the walk of the original schema learned.
#[derive(Default)]
pub struct Index {
    /// Resource URI (no fragment) → pointer of the resource root.
    resources: HashMap<String, String>,
    /// Pointer of a resource root → its URI (no fragment): entering it extends the dynamic scope.
    pub resource_roots: HashMap<String, String>,
    /// (resource URI, anchor name) → pointer (`$anchor` and `$dynamicAnchor`).
    anchors: HashMap<(String, String), String>,
    /// (resource URI, name) → pointer, `$dynamicAnchor` only.
    pub dynamic_anchors: HashMap<(String, String), String>,
    /// Pointer of a node holding a string `$ref` → pointer of its target (None: unresolved).
    pub refs: HashMap<String, Option<String>>,
    /// Pointer of a node holding a string `$dynamicRef` → its resolution.
    pub dynamic_refs: HashMap<String, DynamicRef>,
    nodes: Vec<NodeInfo>,
}

/// Appends one escaped JSON-pointer segment.
pub fn push_segment(ptr: &str, segment: &str) -> String {
    let mut out = String::with_capacity(ptr.len() + segment.len() + 1);
    out.push_str(ptr);
    out.push('/');
    for ch in segment.chars() {
        match ch {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

/// True for an object holding the draft-7 array form of `items` (a tuple, with `additionalItems`).
pub fn is_draft7_tuple(map: &JsonMap) -> bool {
    matches!(map.get("items"), Some(Json::Array(_))) && !map.contains_key("prefixItems")
}

/// The schema-valued children of a schema object: (keyword, optional member key, child).
pub fn schema_children(map: &JsonMap) -> Vec<(&str, Option<String>, &Json)> {
    const SINGLE: [&str; 12] = [
        "additionalProperties",
        "propertyNames",
        "contains",
        "not",
        "if",
        "then",
        "else",
        "unevaluatedProperties",
        "unevaluatedItems",
        "additionalItems",
        "contentSchema",
        "items",
    ];
    const MAPS: [&str; 6] = [
        "properties",
        "patternProperties",
        "$defs",
        "definitions",
        "dependentSchemas",
        "dependencies",
    ];
    const ARRAYS: [&str; 5] = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];
    let mut out = Vec::new();
    for (key, value) in map {
        let key = key.as_str();
        match value {
            Json::Object(members) if MAPS.contains(&key) => {
                for (name, child) in members {
                    if child.is_object() || child.is_boolean() {
                        out.push((key, Some(name.clone()), child));
                    }
                }
            }
            Json::Array(items) if ARRAYS.contains(&key) => {
                for (i, child) in items.iter().enumerate() {
                    out.push((key, Some(i.to_string()), child));
                }
            }
            Json::Object(_) | Json::Bool(_) if SINGLE.contains(&key) => {
                out.push((key, None, value))
            }
            _ => {}
        }
    }
    out
}

fn without_fragment(url: &Url) -> String {
    let mut copy = url.clone();
    copy.set_fragment(None);
    copy.to_string()
}

impl Index {
    /// Walks the original schema: resources, anchors, pointers, then resolves every reference.
    pub fn build(root: &Json) -> Index {
        let mut index = Index::default();
        if let Ok(base) = Url::parse(ROOT_BASE) {
            index.walk(root, String::new(), base, 0);
        }
        let mut refs = HashMap::new();
        let mut dynamic_refs = HashMap::new();
        for node in &index.nodes {
            let Some(Json::Object(map)) = root.pointer(&node.ptr) else {
                continue;
            };
            if let Some(Json::String(reference)) = map.get("$ref") {
                let target = index.resolve(root, &node.base, reference);
                refs.insert(node.ptr.clone(), target);
            }
            if let Some(Json::String(reference)) = map.get("$dynamicRef") {
                let target = index.resolve(root, &node.base, reference);
                let name = reference.rsplit_once('#').map(|(_, f)| percent_decode(f));
                // Dynamic only when the static target declares the same `$dynamicAnchor`.
                let anchor = name.filter(|name| {
                    !name.is_empty()
                        && !name.starts_with('/')
                        && target
                            .as_deref()
                            .and_then(|t| root.pointer(t))
                            .and_then(|t| t.get("$dynamicAnchor"))
                            == Some(&Json::String(name.clone()))
                });
                dynamic_refs.insert(node.ptr.clone(), DynamicRef { target, anchor });
            }
        }
        index.refs = refs;
        index.dynamic_refs = dynamic_refs;
        index
    }

    fn walk(&mut self, node: &Json, ptr: String, mut base: Url, depth: usize) {
        let Json::Object(map) = node else {
            self.nodes.push(NodeInfo { ptr, base });
            return;
        };
        if depth > MAX_DEPTH {
            return;
        }
        if let Some(Json::String(id)) = map.get("$id") {
            if let Ok(url) = base.join(id) {
                base = url;
                let uri = without_fragment(&base);
                self.resources
                    .entry(uri.clone())
                    .or_insert_with(|| ptr.clone());
                self.resource_roots.insert(ptr.clone(), uri);
            }
        } else if ptr.is_empty() {
            let uri = without_fragment(&base);
            self.resources.insert(uri.clone(), String::new());
            self.resource_roots.insert(String::new(), uri);
        }
        for key in ["$anchor", "$dynamicAnchor"] {
            if let Some(Json::String(name)) = map.get(key) {
                let entry = (without_fragment(&base), name.clone());
                if key == "$dynamicAnchor" {
                    self.dynamic_anchors
                        .entry(entry.clone())
                        .or_insert_with(|| ptr.clone());
                }
                self.anchors.entry(entry).or_insert_with(|| ptr.clone());
            }
        }
        for (keyword, member, child) in schema_children(map) {
            let mut child_ptr = push_segment(&ptr, keyword);
            if let Some(member) = &member {
                child_ptr = push_segment(&child_ptr, member);
            }
            self.walk(child, child_ptr, base.clone(), depth + 1);
        }
        self.nodes.push(NodeInfo { ptr, base });
    }

    /// Pointers of every object schema of the document (post-order).
    pub fn object_nodes<'r>(
        &'r self,
        root: &'r Json,
    ) -> impl Iterator<Item = (&'r str, &'r JsonMap)> {
        self.nodes.iter().filter_map(move |node| {
            root.pointer(&node.ptr)
                .and_then(Json::as_object)
                .map(|map| (node.ptr.as_str(), map))
        })
    }

    /// Resolves `reference` against `base` to the pointer of an object or boolean schema.
    fn resolve(&self, root: &Json, base: &Url, reference: &str) -> Option<String> {
        let full = base.join(reference).ok()?;
        let resource = self.resources.get(&without_fragment(&full))?;
        let fragment = percent_decode(full.fragment().unwrap_or(""));
        let target = if fragment.is_empty() {
            resource.clone()
        } else if fragment.starts_with('/') {
            format!("{resource}{fragment}")
        } else {
            self.anchors
                .get(&(without_fragment(&full), fragment))?
                .clone()
        };
        match root.pointer(&target) {
            Some(Json::Object(_) | Json::Bool(_)) => Some(target),
            _ => None,
        }
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
