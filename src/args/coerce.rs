//! Coercion passes of SPEC §5.4 (optional nulls, TypeBox-style conversions, Ajv-style coercion).
//!
//! Each pass works on its own copy of the arguments and never fails: whatever cannot be
//! coerced is left for validation to report.

mod helpers;

pub use helpers::{js_string_to_number, to_boolean, to_js_string, to_null, to_number};

use crate::args::schema::{type_list, Node, Schema, MAX_DEPTH};
use crate::json::{field, map_field, number, set_key, Json};
use helpers::{coerce_primitive, matches_primitive_type, same, to_number_f64};
use std::collections::HashSet;

#[cfg(test)]
thread_local! {
    /// How many times this thread ran the passes (tests check which calls skip them).
    pub(crate) static RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs the three passes in order on a copy of `value`.
pub fn coerce(schema: &Schema<'_>, value: &Json) -> Json {
    #[cfg(test)]
    RUNS.with(|runs| runs.set(runs.get() + 1));
    let root = schema.root();
    let mut v = value.clone();
    drop_nulls(schema, &mut v, &root, 0);
    let mut converter = Converter {
        schema,
        active: HashSet::new(),
        next_id: 1,
    };
    let v = converter.convert(&root, &v, 0, 0);
    coerce_types(schema, v, &root, 0)
}

/// "The schema accepts v" (unknown for an uncompilable subschema).
fn accepts(schema: &Schema<'_>, node: &Node<'_>, value: &Json) -> Option<bool> {
    match node.schema {
        Json::Bool(b) => Some(*b),
        _ => schema.accepts(&node.ptr, value),
    }
}

/// The item schema of index `i` as pass 1 and pass 3 find it.
fn item_schema<'a>(node: &Node<'a>, i: usize) -> Option<Node<'a>> {
    if matches!(field(node.schema, "items"), Some(Json::Array(_))) {
        return node.member("items", &i.to_string());
    }
    if let Some(Json::Array(prefix)) = field(node.schema, "prefixItems") {
        if i < prefix.len() {
            return node.member("prefixItems", &i.to_string());
        }
    }
    node.get("items")
}

/// The pattern schemas of `patternProperties` matching `key`.
fn matching_patterns<'a>(schema: &Schema<'_>, node: &Node<'a>, key: &str) -> Vec<Node<'a>> {
    let Some(Json::Object(patterns)) = field(node.schema, "patternProperties") else {
        return Vec::new();
    };
    patterns
        .keys()
        // Undecided matches coerce nothing; validation reports them.
        .filter(|pattern| schema.pattern_matches(pattern, key) == Ok(true))
        .filter_map(|pattern| node.member("patternProperties", pattern))
        .collect()
}

fn has_property(node: &Node<'_>, key: &str) -> bool {
    field(node.schema, "properties")
        .and_then(|p| p.as_object())
        .is_some_and(|p| p.contains_key(key))
}

/// `additionalProperties` when it is an object schema.
fn additional_object<'a>(node: &Node<'a>) -> Option<Node<'a>> {
    node.get("additionalProperties")
        .filter(|n| n.schema.is_object())
}

/// Pass 1 — drops optional `null` members whose schema rejects `null` (SPEC §5.4.1).
fn drop_nulls(schema: &Schema<'_>, value: &mut Json, node: &Node<'_>, depth: usize) {
    if !node.schema.is_object() || depth > MAX_DEPTH {
        return;
    }
    if let Json::Array(items) = value {
        for (i, item) in items.iter_mut().enumerate() {
            if let Some(child) = item_schema(node, i) {
                drop_nulls(schema, item, &child, depth + 1);
            }
        }
        return;
    }
    let Json::Object(object) = value else { return };
    let properties = field(node.schema, "properties").and_then(Json::as_object);
    let has_patterns = field(node.schema, "patternProperties").is_some_and(Json::is_object);
    let additional = additional_object(node);
    if properties.is_none() && !has_patterns && additional.is_none() {
        return;
    }
    let required: Vec<&str> = match field(node.schema, "required") {
        Some(Json::Array(list)) => list.iter().filter_map(Json::as_str).collect(),
        _ => Vec::new(),
    };
    for key in properties.into_iter().flat_map(|p| p.keys()) {
        let Some(child) = node.member("properties", key) else {
            continue;
        };
        let Some(member) = object.get_mut(key) else {
            continue;
        };
        let is_ref = field(child.schema, "$ref").is_some();
        if member.is_null()
            && !required.contains(&key.as_str())
            && !is_ref
            && accepts(schema, &child, &Json::Null) == Some(false)
        {
            object.shift_remove(key);
        } else {
            drop_nulls(schema, member, &child, depth + 1);
        }
    }
    if has_patterns || additional.is_some() {
        for (key, member) in object.iter_mut() {
            let patterns = matching_patterns(schema, node, key);
            for pattern in &patterns {
                drop_nulls(schema, member, pattern, depth + 1);
            }
            if let (true, Some(additional)) =
                (patterns.is_empty() && !has_property(node, key), &additional)
            {
                drop_nulls(schema, member, additional, depth + 1);
            }
        }
    }
}

/// Pass 2 — TypeBox-style conversions (SPEC §5.4.2).
struct Converter<'s, 'a> {
    schema: &'s Schema<'a>,
    /// (target schema pointer, value identity) pairs being converted: the recursion guard.
    active: HashSet<(String, u64)>,
    next_id: u64,
}

impl<'a> Converter<'_, 'a> {
    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Converts through `target` unless the same (target, value) is already in progress.
    fn guarded(&mut self, target: &Node<'a>, value: &Json, id: u64, depth: usize) -> Option<Json> {
        let key = (target.ptr.clone(), id);
        if !self.active.insert(key.clone()) {
            return None;
        }
        let result = self.convert(target, value, id, depth + 1);
        self.active.remove(&key);
        Some(result)
    }

    fn accepts(&self, node: &Node<'a>, value: &Json) -> bool {
        accepts(self.schema, node, value) == Some(true)
    }

    fn convert(&mut self, node: &Node<'a>, value: &Json, id: u64, depth: usize) -> Json {
        let Json::Object(map) = node.schema else {
            return value.clone();
        };
        if depth > MAX_DEPTH {
            return value.clone();
        }
        if let Some(Json::String(_)) = map_field(map, "$ref") {
            return match self.schema.ref_target(&node.ptr) {
                Some(Some(target)) if target.schema.is_object() => self
                    .guarded(&target, value, id, depth)
                    .unwrap_or_else(|| value.clone()),
                _ => value.clone(),
            };
        }
        if let Some(literal) = map_field(map, "const") {
            return convert_literal(literal, value);
        }
        if let Some(Json::Array(members)) = map_field(map, "enum") {
            if members
                .iter()
                .any(|m| !m.is_object() && !m.is_array() && same(m, value))
            {
                return value.clone();
            }
            for member in members {
                let c = convert_literal(member, value);
                if !same(&c, value) && self.accepts(node, &c) {
                    return c;
                }
            }
            return value.clone();
        }
        for keyword in ["anyOf", "oneOf"] {
            if map.get(keyword).is_some_and(Json::is_array) {
                let branches = node.list(keyword);
                if branches.iter().any(|b| self.accepts(b, value)) {
                    return self.convert_members(node, value, id, depth);
                }
                for branch in &branches {
                    let converted = self.convert(branch, value, id, depth + 1);
                    let c = self.convert_members(node, &converted, id, depth);
                    if self.accepts(node, &c) {
                        return c;
                    }
                }
                return self.convert_members(node, value, id, depth);
            }
        }
        if map_field(map, "allOf").is_some_and(Json::is_array) {
            let mut v = value.clone();
            for member in node.list("allOf") {
                v = self.convert(&member, &v, id, depth + 1);
            }
            return self.convert_members(node, &v, id, depth);
        }
        let converted = match map_field(map, "type") {
            Some(Json::String(name)) => match name.as_str() {
                "string" => helpers::to_js_string(value),
                "number" => to_number(value),
                "integer" => to_number_f64(value).map(|n| number(n.trunc())),
                "boolean" => to_boolean(value),
                "null" => to_null(value),
                "array" => Some(self.convert_array(node, value, id, depth)),
                "object" => Some(self.convert_object(node, value, depth)),
                _ => None,
            },
            Some(_) => None,
            None if map.contains_key("properties") || map.contains_key("patternProperties") => {
                Some(self.convert_object(node, value, depth))
            }
            None if map.contains_key("items") || map.contains_key("prefixItems") => {
                Some(self.convert_array(node, value, id, depth))
            }
            None => None,
        };
        converted.unwrap_or_else(|| value.clone())
    }

    fn convert_members(&mut self, node: &Node<'a>, value: &Json, _id: u64, depth: usize) -> Json {
        let map = node.schema;
        if ["properties", "patternProperties", "additionalProperties"]
            .iter()
            .any(|k| map.get(k).is_some())
        {
            self.convert_object(node, value, depth)
        } else {
            value.clone()
        }
    }

    fn convert_array(&mut self, node: &Node<'a>, value: &Json, id: u64, depth: usize) -> Json {
        let draft7 = matches!(field(node.schema, "items"), Some(Json::Array(_)));
        let prefix_tuple = matches!(field(node.schema, "prefixItems"), Some(Json::Array(_)));
        if draft7 || prefix_tuple {
            let Json::Array(items) = value else {
                return value.clone();
            };
            let prefix = if draft7 {
                node.list("items")
            } else {
                node.list("prefixItems")
            };
            let rest = if draft7 { None } else { node.get("items") };
            let converted = items
                .iter()
                .enumerate()
                .map(|(i, item)| match prefix.get(i).or(rest.as_ref()) {
                    Some(child) => {
                        let child_id = self.fresh_id();
                        self.convert(child, item, child_id, depth + 1)
                    }
                    None => item.clone(),
                })
                .collect();
            return Json::Array(converted);
        }
        let items_schema = node.get("items");
        if let Json::Array(items) = value {
            let Some(child) = items_schema else {
                return value.clone();
            };
            let converted = items
                .iter()
                .map(|item| {
                    let child_id = self.fresh_id();
                    self.convert(&child, item, child_id, depth + 1)
                })
                .collect();
            return Json::Array(converted);
        }
        match items_schema.filter(|n| n.schema.is_object()) {
            Some(child) => match self.guarded(&child, value, id, depth) {
                Some(item) => Json::Array(vec![item]),
                None => value.clone(),
            },
            None => Json::Array(vec![value.clone()]),
        }
    }

    fn convert_object(&mut self, node: &Node<'a>, value: &Json, depth: usize) -> Json {
        let Json::Object(object) = value else {
            return value.clone();
        };
        let mut result = object.clone();
        let additional = additional_object(node);
        for (key, member) in object {
            let id = self.fresh_id();
            let mut v = member.clone();
            let in_properties = has_property(node, key);
            if let Some(child) = node.member("properties", key).filter(|_| in_properties) {
                v = self.convert(&child, &v, id, depth + 1);
            }
            let patterns = matching_patterns(self.schema, node, key);
            for pattern in &patterns {
                v = self.convert(pattern, &v, id, depth + 1);
            }
            if let (false, true, Some(additional)) =
                (in_properties, patterns.is_empty(), &additional)
            {
                v = self.convert(additional, &v, id, depth + 1);
            }
            if &v != member {
                set_key(&mut result, key, v);
            }
        }
        Json::Object(result)
    }
}

/// `convertLiteral(literal, value)` (SPEC §5.4.2).
fn convert_literal(literal: &Json, value: &Json) -> Json {
    if same(value, literal) {
        return value.clone();
    }
    let converted = match literal {
        Json::String(_) => helpers::to_js_string(value),
        Json::Number(_) => to_number(value),
        Json::Bool(_) => to_boolean(value),
        _ => None,
    };
    match converted {
        Some(c) if same(&c, literal) => c,
        _ => value.clone(),
    }
}

/// Pass 3 — primitive coercion by type (SPEC §5.4.3).
fn coerce_types(schema: &Schema<'_>, value: Json, node: &Node<'_>, depth: usize) -> Json {
    let Json::Object(map) = node.schema else {
        return value;
    };
    if depth > MAX_DEPTH {
        return value;
    }
    let mut v = value;
    for member in node.list("allOf") {
        v = coerce_types(schema, v, &member, depth + 1);
    }
    for keyword in ["anyOf", "oneOf"] {
        let branches = node.list(keyword);
        if branches.is_empty()
            || branches
                .iter()
                .any(|b| accepts(schema, b, &v) == Some(true))
        {
            continue;
        }
        for branch in &branches {
            let c = coerce_types(schema, v.clone(), branch, depth + 1);
            if accepts(schema, branch, &c) == Some(true) {
                v = c;
                break;
            }
        }
    }
    let types = type_list(map).unwrap_or_default();
    let already = types.len() > 1 && types.iter().any(|t| matches_primitive_type(&v, t));
    if !types.is_empty() && !already {
        if let Some(c) = types
            .iter()
            .find_map(|t| coerce_primitive(&v, t).filter(|c| !same(c, &v)))
        {
            v = c;
        }
    }
    if types.contains(&"object") {
        if let Json::Object(object) = &mut v {
            let properties = map_field(map, "properties").and_then(Json::as_object);
            for key in properties.into_iter().flat_map(|p| p.keys()) {
                if let (Some(child), Some(member)) =
                    (node.member("properties", key), object.get_mut(key))
                {
                    *member = coerce_types(schema, std::mem::take(member), &child, depth + 1);
                }
            }
            let additional = additional_object(node);
            for (key, member) in object.iter_mut() {
                let patterns = matching_patterns(schema, node, key);
                for pattern in &patterns {
                    *member = coerce_types(schema, std::mem::take(member), pattern, depth + 1);
                }
                if let (true, Some(additional)) =
                    (patterns.is_empty() && !has_property(node, key), &additional)
                {
                    *member = coerce_types(schema, std::mem::take(member), additional, depth + 1);
                }
            }
        }
    }
    if types.contains(&"array") {
        if let Json::Array(items) = &mut v {
            for (i, item) in items.iter_mut().enumerate() {
                if let Some(child) = item_schema(node, i) {
                    *item = coerce_types(schema, std::mem::take(item), &child, depth + 1);
                }
            }
        }
    }
    v
}
