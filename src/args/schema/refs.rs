//! `$ref` resolution (SPEC §5.5.3) and the engine copy of the schema handed to `jsonschema`.
//!
//! libagent resolves every reference itself, so that an unresolved one can act as a `false`
//! schema at its place instead of failing compilation. The engine copy then holds only
//! document-local references (`#/json/pointer`), no `$id` and no `$schema`.

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

/// What the walk of the original schema learned.
#[derive(Default)]
pub struct Index {
    /// Resource URI (no fragment) → pointer of the resource root.
    resources: HashMap<String, String>,
    /// (resource URI, anchor name) → pointer.
    anchors: HashMap<(String, String), String>,
    /// Original pointer → engine pointer, where they differ (draft-7 `items` arrays).
    pub engine_ptrs: HashMap<String, String>,
    /// Pointer of a node holding a string `$ref` → pointer of its target (None: unresolved).
    pub refs: HashMap<String, Option<String>>,
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

/// True for an object holding the draft-7 array form of `items` (renamed for the engine).
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
    /// Walks the original schema: resources, anchors, pointers, then resolves every `$ref`.
    pub fn build(root: &Json) -> Index {
        let mut index = Index::default();
        if let Ok(base) = Url::parse(ROOT_BASE) {
            index.walk(root, String::new(), String::new(), base, 0);
        }
        let mut refs = HashMap::new();
        for node in &index.nodes {
            if let Some(Json::String(reference)) =
                root.pointer(&node.ptr).and_then(|n| n.get("$ref"))
            {
                let target = index.resolve(root, &node.base, reference);
                refs.insert(node.ptr.clone(), target);
            }
        }
        index.refs = refs;
        index
    }

    fn walk(&mut self, node: &Json, ptr: String, engine_ptr: String, mut base: Url, depth: usize) {
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
                self.resources
                    .entry(without_fragment(&base))
                    .or_insert_with(|| ptr.clone());
            }
        } else if ptr.is_empty() {
            self.resources
                .insert(without_fragment(&base), String::new());
        }
        for key in ["$anchor", "$dynamicAnchor"] {
            if let Some(Json::String(name)) = map.get(key) {
                let entry = (without_fragment(&base), name.clone());
                self.anchors.entry(entry).or_insert_with(|| ptr.clone());
            }
        }
        let draft7 = is_draft7_tuple(map);
        for (keyword, member, child) in schema_children(map) {
            let engine_keyword = match keyword {
                "items" if draft7 => "prefixItems",
                "additionalItems" if draft7 => "items",
                other => other,
            };
            let mut child_ptr = push_segment(&ptr, keyword);
            let mut child_engine = push_segment(&engine_ptr, engine_keyword);
            if let Some(member) = &member {
                child_ptr = push_segment(&child_ptr, member);
                child_engine = push_segment(&child_engine, member);
            }
            if child_ptr != child_engine {
                self.engine_ptrs
                    .insert(child_ptr.clone(), child_engine.clone());
            }
            self.walk(child, child_ptr, child_engine, base.clone(), depth + 1);
        }
        self.nodes.push(NodeInfo { ptr, base });
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

    /// The engine pointer of an original pointer.
    pub fn engine_ptr<'a>(&'a self, ptr: &'a str) -> &'a str {
        self.engine_ptrs.get(ptr).map_or(ptr, String::as_str)
    }

    /// The copy of `root` given to `jsonschema` (see the module comment).
    pub fn engine_document(&self, root: &Json) -> Json {
        let mut doc = root.clone();
        let mut false_def = None;
        if self.refs.values().any(Option::is_none) {
            // A `false` definition that unresolved references point to.
            let mut name = String::from("libagent-unresolved-reference");
            while root.pointer(&push_segment("/$defs", &name)).is_some() {
                name.push('_');
            }
            false_def = Some(push_segment("/$defs", &name));
            if let Json::Object(map) = &mut doc {
                let defs = map
                    .entry("$defs")
                    .or_insert_with(|| Json::Object(JsonMap::new()));
                if let Json::Object(defs) = defs {
                    defs.insert(name, Json::Bool(false));
                }
            }
        }
        // `nodes` is in post-order: every node is edited before its parent renames a key on
        // the way to it.
        for node in &self.nodes {
            let Some(Json::Object(map)) = doc.pointer_mut(&node.ptr) else {
                continue;
            };
            map.shift_remove("$schema");
            map.shift_remove("$id");
            if let Some(target) = self.refs.get(&node.ptr) {
                let target_ptr = match target {
                    Some(t) => self.engine_ptr(t).to_string(),
                    None => false_def.clone().unwrap_or_default(),
                };
                map.insert(
                    "$ref".into(),
                    Json::String(format!("#{}", percent_encode(&target_ptr))),
                );
            }
            if is_draft7_tuple(map) {
                if let Some(items) = map.shift_remove("items") {
                    if let Some(rest) = map.shift_remove("additionalItems") {
                        map.insert("items".into(), rest);
                    }
                    map.insert("prefixItems".into(), items);
                }
            }
            fix_unknown_types(map);
        }
        doc
    }
}

/// Unknown type names match nothing (SPEC §5.5.1); jsonschema refuses them at compile time, so
/// they are dropped, and a `type` left with no known name becomes `enum: []` (rejects all).
fn fix_unknown_types(map: &mut JsonMap) {
    const KNOWN: [&str; 7] = [
        "string", "number", "integer", "boolean", "null", "array", "object",
    ];
    let known = |t: &Json| t.as_str().is_none_or(|s| KNOWN.contains(&s));
    let fixed = match map.get("type") {
        Some(Json::String(s)) if !KNOWN.contains(&s.as_str()) => None,
        Some(Json::Array(list)) if !list.iter().all(known) || list.is_empty() => {
            let kept: Vec<Json> = list.iter().filter(|t| known(t)).cloned().collect();
            (!kept.is_empty()).then_some(Json::Array(kept))
        }
        _ => return,
    };
    match fixed {
        Some(list) => {
            map.insert("type".into(), list);
        }
        None => {
            map.shift_remove("type");
            map.insert("enum".into(), Json::Array(Vec::new()));
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

fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
