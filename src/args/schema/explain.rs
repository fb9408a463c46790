//! The error walk of SPEC §5.6: which `(path, message)` pairs a failed validation reports.

use super::refs::{is_draft7_tuple, push_segment, MAX_DEPTH};
use super::values::{has_duplicates, union_tag};
use super::{is_multiple_of, Node, Schema};
use crate::json::{deep_equal, number_to_string, to_string, Json, JsonMap};
use std::collections::HashSet;

/// One reported error: `path` is a JSON Pointer into the value (`""` = the whole value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub path: String,
    pub message: String,
}

/// Explains why `value` fails the schema (SPEC §5.6). Never empty: when the walk finds nothing
/// the single error is `(root, "invalid")`.
pub fn explain(schema: &Schema<'_>, value: &Json) -> Vec<SchemaError> {
    let mut walker = Walker {
        schema,
        out: Vec::new(),
        active: HashSet::new(),
    };
    walker.explain(&schema.root(), value, "", 0);
    if walker.out.is_empty() {
        walker.out.push(SchemaError {
            path: String::new(),
            message: "invalid".into(),
        });
    }
    walker.out
}

/// Renders a JSON pointer for the message: `root`, or unescaped segments joined with `.`.
pub fn format_path(pointer: &str) -> String {
    if pointer.is_empty() {
        return "root".into();
    }
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

/// The reference's `typeName`: `integer` for numbers without a fraction.
pub fn type_name(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) => match n.as_f64() {
            Some(f) if f.is_finite() && f == f.trunc() => "integer",
            _ => "number",
        },
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// Whether `value` is of the JSON Schema type `name` (unknown names match nothing).
pub fn matches_type(value: &Json, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|f| f == f.trunc()),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

/// The `type` keyword as a list of names (string entries of an array), if present.
pub fn type_list(schema: &JsonMap) -> Option<Vec<&str>> {
    match schema.get("type")? {
        Json::String(name) => Some(vec![name.as_str()]),
        Json::Array(names) => Some(names.iter().filter_map(Json::as_str).collect()),
        _ => None,
    }
}

/// `<list>` of enum messages: at most 20 values, then `, ... and N more]`.
fn value_list(values: &[Json]) -> String {
    if values.len() <= 20 {
        return to_string(&Json::Array(values.to_vec()));
    }
    let mut text = to_string(&Json::Array(values[..20].to_vec()));
    text.pop();
    format!("{text}, ... and {} more]", values.len() - 20)
}

fn num(value: &Json) -> Option<f64> {
    value.as_f64()
}

/// (keyword, operator shown in the message, whether the bound holds).
type BoundCheck = (&'static str, &'static str, fn(f64, f64) -> bool);

struct Walker<'s, 'a> {
    schema: &'s Schema<'a>,
    out: Vec<SchemaError>,
    /// (schema pointer, value path) pairs being explained: a guard against `$ref` cycles.
    active: HashSet<(String, String)>,
}

impl<'a> Walker<'_, 'a> {
    fn push(&mut self, path: &str, message: impl Into<String>) {
        self.out.push(SchemaError {
            path: path.to_string(),
            message: message.into(),
        });
    }

    fn accepts(&self, node: &Node<'_>, value: &Json) -> Option<bool> {
        match node.schema {
            Json::Bool(b) => Some(*b),
            _ => self.schema.accepts(&node.ptr, value),
        }
    }

    fn explain(&mut self, node: &Node<'a>, value: &Json, path: &str, depth: usize) {
        let map = match node.schema {
            Json::Bool(true) => return,
            Json::Bool(false) => return self.push(path, "no value is allowed here"),
            Json::Object(map) => map,
            _ => return,
        };
        if depth > MAX_DEPTH || self.accepts(node, value) == Some(true) {
            return;
        }
        let key = (node.ptr.clone(), path.to_string());
        if !self.active.insert(key.clone()) {
            return;
        }
        self.explain_object_schema(node, map, value, path, depth);
        self.active.remove(&key);
    }

    fn explain_object_schema(
        &mut self,
        node: &Node<'a>,
        map: &'a JsonMap,
        value: &Json,
        path: &str,
        depth: usize,
    ) {
        let start = self.out.len();
        if let Some(types) = type_list(map) {
            if !types.iter().any(|t| matches_type(value, t)) {
                let message = format!("expected {}, got {}", types.join(" or "), type_name(value));
                return self.push(path, message);
            }
        }
        if let Some(Json::Array(members)) = map.get("enum") {
            if !members.iter().any(|m| deep_equal(m, value)) {
                self.push(path, format!("expected one of {}", value_list(members)));
            }
        }
        if let Some(constant) = map.get("const") {
            if !deep_equal(constant, value) {
                self.push(path, format!("expected {}", to_string(constant)));
            }
        }
        match value {
            Json::String(text) => self.explain_string(map, text, path),
            Json::Number(n) => self.explain_number(map, n.as_f64().unwrap_or(0.0), path),
            Json::Object(object) => self.explain_fields(node, map, object, value, path, depth),
            Json::Array(items) => self.explain_items(node, map, items, path, depth),
            _ => {}
        }
        for member in node.list("allOf") {
            self.explain(&member, value, path, depth + 1);
        }
        for keyword in ["anyOf", "oneOf"] {
            if map.get(keyword).is_some_and(Json::is_array) {
                self.explain_union(node, keyword, value, path, depth);
            }
        }
        if let Some(not) = node.get("not") {
            if self.accepts(&not, value) == Some(true) {
                self.push(path, "must not match the schema in not");
            }
        }
        if let Some(condition) = node.get("if") {
            let branch = match self.accepts(&condition, value) {
                Some(true) => node.get("then"),
                Some(false) => node.get("else"),
                None => None,
            };
            if let Some(branch) = branch {
                self.explain(&branch, value, path, depth + 1);
            }
        }
        match self.schema.ref_target(&node.ptr) {
            Some(Some(target)) => self.explain(&target, value, path, depth + 1),
            Some(None) => {
                let reference = map.get("$ref").and_then(Json::as_str).unwrap_or("");
                self.push(path, format!("unresolved reference {reference}"));
            }
            None => {}
        }
        if self.out.len() == start {
            self.explain_unevaluated(node, value, path, depth);
        }
        if self.out.len() == start && map.contains_key("$dynamicRef") {
            self.push(path, "does not match the dynamically referenced schema");
        }
    }

    fn explain_string(&mut self, map: &JsonMap, text: &str, path: &str) {
        let length = text.chars().count() as f64;
        if let Some(n) = map.get("minLength").and_then(num) {
            if length < n {
                self.push(
                    path,
                    format!("expected at least {} characters", number_to_string(n)),
                );
            }
        }
        if let Some(n) = map.get("maxLength").and_then(num) {
            if length > n {
                self.push(
                    path,
                    format!("expected at most {} characters", number_to_string(n)),
                );
            }
        }
        if let Some(Json::String(pattern)) = map.get("pattern") {
            match self.schema.pattern_matches(pattern, text) {
                Ok(true) => {}
                Ok(false) => self.push(path, format!("expected to match {pattern}")),
                Err(error) => self.push(path, error),
            }
        }
        if let Some(Json::String(format)) = map.get("format") {
            if !self.schema.format_ok(format, text) {
                self.push(path, format!("expected format {format}"));
            }
        }
    }

    fn explain_number(&mut self, map: &JsonMap, v: f64, path: &str) {
        let checks: [BoundCheck; 4] = [
            ("minimum", ">=", |v, m| v >= m),
            ("maximum", "<=", |v, m| v <= m),
            ("exclusiveMinimum", ">", |v, m| v > m),
            ("exclusiveMaximum", "<", |v, m| v < m),
        ];
        for (keyword, op, ok) in checks {
            if let Some(m) = map.get(keyword).and_then(num) {
                if !ok(v, m) {
                    self.push(path, format!("expected {op} {}", number_to_string(m)));
                }
            }
        }
        if let Some(m) = map.get("multipleOf").and_then(num) {
            if !is_multiple_of(v, m) {
                self.push(
                    path,
                    format!("expected a multiple of {}", number_to_string(m)),
                );
            }
        }
    }

    fn explain_fields(
        &mut self,
        node: &Node<'a>,
        map: &'a JsonMap,
        object: &JsonMap,
        value: &Json,
        path: &str,
        depth: usize,
    ) {
        if let Some(Json::Array(required)) = map.get("required") {
            for key in required.iter().filter_map(Json::as_str) {
                if !object.contains_key(key) {
                    self.push(&push_segment(path, key), "missing");
                }
            }
        }
        let properties = map.get("properties").and_then(Json::as_object);
        if let Some(properties) = properties {
            for key in properties.keys() {
                if let (Some(child), Some(member)) =
                    (node.member("properties", key), object.get(key))
                {
                    self.explain(&child, member, &push_segment(path, key), depth + 1);
                }
            }
        }
        let patterns = map.get("patternProperties").and_then(Json::as_object);
        let additional = node.get("additionalProperties");
        let names = node.get("propertyNames");
        for (key, member) in object {
            let key_path = push_segment(path, key);
            let mut matched = properties.is_some_and(|p| p.contains_key(key));
            for pattern in patterns.into_iter().flat_map(|p| p.keys()) {
                let matches = match self.schema.pattern_matches(pattern, key) {
                    Ok(matches) => matches,
                    Err(error) => {
                        self.push(&key_path, error);
                        // Undecided: not "unknown field" on top of the error.
                        matched = true;
                        false
                    }
                };
                if matches {
                    matched = true;
                    if let Some(child) = node.member("patternProperties", pattern) {
                        self.explain(&child, member, &key_path, depth + 1);
                    }
                }
            }
            if let (false, Some(additional)) = (matched, &additional) {
                if additional.schema == &Json::Bool(false) {
                    self.push(&key_path, "unknown field");
                } else {
                    self.explain(additional, member, &key_path, depth + 1);
                }
            }
            if let Some(names) = &names {
                if self.accepts(names, &Json::String(key.clone())) == Some(false) {
                    self.push(&key_path, "invalid property name");
                }
            }
        }
        let count = object.len() as f64;
        if let Some(n) = map.get("minProperties").and_then(num) {
            if count < n {
                self.push(
                    path,
                    format!("expected at least {} properties", number_to_string(n)),
                );
            }
        }
        if let Some(n) = map.get("maxProperties").and_then(num) {
            if count > n {
                self.push(
                    path,
                    format!("expected at most {} properties", number_to_string(n)),
                );
            }
        }
        // `dependencies` entries override `dependentRequired` entries of the same key.
        let mut dependencies: Vec<(&String, Json, Option<Node<'a>>)> = Vec::new();
        for keyword in ["dependentRequired", "dependencies"] {
            for (key, entry) in map
                .get(keyword)
                .and_then(Json::as_object)
                .into_iter()
                .flatten()
            {
                let schema = node.member(keyword, key);
                match dependencies.iter_mut().find(|(k, _, _)| *k == key) {
                    Some(slot) => *slot = (key, entry.clone(), schema),
                    None => dependencies.push((key, entry.clone(), schema)),
                }
            }
        }
        for (key, entry, schema) in dependencies {
            if !object.contains_key(key) {
                continue;
            }
            match (entry, schema) {
                (Json::Array(listed), _) => {
                    for missing in listed.iter().filter_map(Json::as_str) {
                        if !object.contains_key(missing) {
                            self.push(
                                &push_segment(path, missing),
                                format!("required when {key} is present"),
                            );
                        }
                    }
                }
                (_, Some(schema)) => self.explain(&schema, value, path, depth + 1),
                _ => {}
            }
        }
        for key in map
            .get("dependentSchemas")
            .and_then(Json::as_object)
            .into_iter()
            .flat_map(|m| m.keys())
        {
            if object.contains_key(key) {
                if let Some(schema) = node.member("dependentSchemas", key) {
                    self.explain(&schema, value, path, depth + 1);
                }
            }
        }
    }

    fn explain_items(
        &mut self,
        node: &Node<'a>,
        map: &'a JsonMap,
        items: &[Json],
        path: &str,
        depth: usize,
    ) {
        let (prefix, rest) = if is_draft7_tuple(map) {
            (node.list("items"), node.get("additionalItems"))
        } else {
            (node.list("prefixItems"), node.get("items"))
        };
        for (i, item) in items.iter().enumerate() {
            if let Some(item_schema) = prefix.get(i).cloned().or_else(|| rest.clone()) {
                self.explain(
                    &item_schema,
                    item,
                    &push_segment(path, &i.to_string()),
                    depth + 1,
                );
            }
        }
        let count = items.len() as f64;
        if let Some(n) = map.get("minItems").and_then(num) {
            if count < n {
                self.push(
                    path,
                    format!("expected at least {} items", number_to_string(n)),
                );
            }
        }
        if let Some(n) = map.get("maxItems").and_then(num) {
            if count > n {
                self.push(
                    path,
                    format!("expected at most {} items", number_to_string(n)),
                );
            }
        }
        if map.get("uniqueItems") == Some(&Json::Bool(true)) && has_duplicates(items) {
            self.push(path, "expected unique items");
        }
        if let Some(contains) = node.get("contains") {
            let matching = items
                .iter()
                .filter(|item| self.accepts(&contains, item) == Some(true))
                .count() as f64;
            let min = map.get("minContains").and_then(num).unwrap_or(1.0);
            let max = map.get("maxContains").and_then(num);
            if matching < min || max.is_some_and(|max| matching > max) {
                let noun = |n: f64| if n == 1.0 { "item" } else { "items" };
                let message = match max {
                    None => format!(
                        "expected at least {} matching {}",
                        number_to_string(min),
                        noun(min)
                    ),
                    Some(max) if min == 0.0 => {
                        format!(
                            "expected at most {} matching {}",
                            number_to_string(max),
                            noun(max)
                        )
                    }
                    Some(max) => format!(
                        "expected between {} and {} matching items",
                        number_to_string(min),
                        number_to_string(max)
                    ),
                };
                self.push(path, message);
            }
        }
    }

    fn explain_unevaluated(&mut self, node: &Node<'a>, value: &Json, path: &str, depth: usize) {
        let wants_properties = value.is_object() && node.get("unevaluatedProperties").is_some();
        let wants_items = value.is_array() && node.get("unevaluatedItems").is_some();
        if !wants_properties && !wants_items {
            return;
        }
        let (keys, indexes) = self.schema.unevaluated(&node.ptr, value);
        if let (Json::Object(object), Some(schema)) = (value, node.get("unevaluatedProperties")) {
            for key in keys {
                let key_path = push_segment(path, &key);
                if schema.schema == &Json::Bool(false) {
                    self.push(&key_path, "unknown field");
                } else if let Some(member) = object.get(&key) {
                    self.explain(&schema, member, &key_path, depth + 1);
                }
            }
        }
        if let (Json::Array(items), Some(schema)) = (value, node.get("unevaluatedItems")) {
            for i in indexes {
                let item_path = push_segment(path, &i.to_string());
                if schema.schema == &Json::Bool(false) {
                    self.push(&item_path, "unexpected item");
                } else {
                    self.explain(&schema, &items[i], &item_path, depth + 1);
                }
            }
        }
    }

    /// A `$ref` branch stands for its target when looking at `properties` (SPEC §5.6.1).
    fn resolved(&self, node: &Node<'a>) -> Node<'a> {
        match self.schema.ref_target(&node.ptr) {
            Some(Some(target)) => target,
            _ => node.clone(),
        }
    }

    fn explain_union(
        &mut self,
        node: &Node<'a>,
        keyword: &str,
        value: &Json,
        path: &str,
        depth: usize,
    ) {
        let branches = node.list(keyword);
        let accepted = branches
            .iter()
            .filter(|b| self.accepts(b, value) == Some(true))
            .count();
        if accepted == 1 || (accepted > 1 && keyword == "anyOf") {
            return;
        }
        if accepted > 1 {
            return self.push(path, "matches more than one alternative");
        }
        let resolved: Vec<Node<'a>> = branches.iter().map(|b| self.resolved(b)).collect();
        if let (Some((tag, consts)), Json::Object(object)) = (union_tag(&resolved), value) {
            let position = object
                .get(tag)
                .and_then(|v| consts.iter().position(|c| deep_equal(c, v)));
            match position {
                Some(i) => self.explain(&branches[i], value, path, depth + 1),
                None => {
                    let list = value_list(&consts);
                    self.push(&push_segment(path, tag), format!("expected one of {list}"));
                }
            }
            return;
        }
        let mut best: Option<(usize, usize, Vec<SchemaError>)> = None;
        for (branch, target) in branches.iter().zip(&resolved) {
            let saved = std::mem::take(&mut self.out);
            self.explain(branch, value, path, depth + 1);
            let errors = std::mem::replace(&mut self.out, saved);
            let Some(first) = errors.first() else {
                continue;
            };
            let declared = match (value, target.schema.get("properties")) {
                (Json::Object(object), Some(Json::Object(props))) => {
                    props.keys().filter(|k| object.contains_key(*k)).count()
                }
                _ => 0,
            };
            let score = (declared, first.path.len());
            if best.as_ref().is_none_or(|(d, l, _)| score > (*d, *l)) {
                best = Some((score.0, score.1, errors));
            }
        }
        match best {
            Some((_, _, errors)) => self.out.extend(errors),
            None => self.push(path, "matches no alternative"),
        }
    }
}
