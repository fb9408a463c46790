//! The accept/reject decision of SPEC §5.5: one walk of the compiled schema over the value.
//!
//! Every keyword is checked here (the explain walk only words the failures). The 2020-12
//! `unevaluated*` keywords need to know which properties and items the node's other keywords
//! evaluated; that bookkeeping ([`Seen`]) is only kept where such a keyword asks for it.
//! Work stays bounded: a failing keyword ends its node's evaluation, `anyOf` stops at the first
//! accepting branch (unless annotations are wanted), and a `$ref` hop already being evaluated
//! for the same value (a cycle) rejects, while one already decided is answered from a memo, so
//! references shared by many branches are evaluated once per value.

use super::formats::format_ok;
use super::keywords::is_multiple_of;
use super::refs::{is_draft7_tuple, MAX_DEPTH};
use super::values::has_duplicates;
use super::{Compiled, Links};
use crate::args::schema::matches_type;
use crate::json::{deep_equal, map_field, Field, Json, JsonMap};
use std::collections::{HashMap, HashSet};

/// The properties (by index in the object) and items an evaluation accepted.
#[derive(Clone, Default)]
pub struct Seen {
    pub properties: Vec<bool>,
    pub items: Vec<bool>,
}

impl Seen {
    fn for_value(value: &Json) -> Seen {
        match value {
            Json::Object(map) => Seen {
                properties: vec![false; map.len()],
                items: Vec::new(),
            },
            Json::Array(items) => Seen {
                properties: Vec::new(),
                items: vec![false; items.len()],
            },
            _ => Seen::default(),
        }
    }

    fn merge(&mut self, other: &Seen) {
        for (mine, theirs) in self.properties.iter_mut().zip(&other.properties) {
            *mine |= theirs;
        }
        for (mine, theirs) in self.items.iter_mut().zip(&other.items) {
            *mine |= theirs;
        }
    }
}

/// A schema node paired with a value, by address: (schema, value).
type Visit = (usize, usize);

/// One validation (of a whole value, or of one subschema for the explain walk and coercion).
pub struct Evaluator<'c> {
    compiled: &'c Compiled,
    /// Resource URIs entered, outermost first (the 2020-12 dynamic scope).
    scope: Vec<&'c str>,
    depth: usize,
    /// `$ref` hops under evaluation: meeting one again is a cycle that consumes nothing.
    active: HashSet<Visit>,
    /// Decided `$ref` hops (only where the value outlives the evaluation, see `temporaries`).
    memo: HashMap<Visit, bool>,
    /// Inside `propertyNames`, whose values are temporaries: their addresses are not memoized.
    temporaries: usize,
}

fn address(value: &Json) -> usize {
    value as *const Json as usize
}

fn num(map: &JsonMap, keyword: &str) -> Option<f64> {
    map_field(map, keyword).and_then(Json::as_f64)
}

impl<'c> Evaluator<'c> {
    pub fn new(compiled: &'c Compiled) -> Evaluator<'c> {
        let mut scope = Vec::new();
        if let Some(root) = compiled.index.resource_roots.get("") {
            scope.push(root.as_str());
        }
        Evaluator {
            compiled,
            scope,
            depth: 0,
            active: HashSet::new(),
            memo: HashMap::new(),
            temporaries: 0,
        }
    }

    /// Whether `schema` (a node of the compiled document) accepts `value`.
    pub fn accepts(&mut self, schema: &'c Json, value: &Json) -> bool {
        self.node(schema, value, None)
    }

    /// The property indexes and item indexes of `value` that the keywords of `schema` other
    /// than `unevaluated*` leave unevaluated.
    pub fn unevaluated(&mut self, schema: &'c Json, value: &Json) -> Seen {
        let mut seen = Seen::for_value(value);
        if let Json::Object(map) = schema {
            let links = self.compiled.links.get(&address(schema));
            self.keywords(links, map, value, &mut seen, true);
        }
        seen.properties.iter_mut().for_each(|b| *b = !*b);
        seen.items.iter_mut().for_each(|b| *b = !*b);
        seen
    }

    fn node(&mut self, schema: &'c Json, value: &Json, seen: Option<&mut Seen>) -> bool {
        let map = match schema {
            Json::Bool(accepts) => return *accepts,
            Json::Object(map) => map,
            _ => return true,
        };
        if self.depth >= MAX_DEPTH {
            return false;
        }
        let links = self.compiled.links.get(&address(schema));
        let resource = links.and_then(|l| l.resource.as_deref());
        if let Some(uri) = resource {
            self.scope.push(uri);
        }
        self.depth += 1;
        let wants_own = (value.is_object() && map.field("unevaluatedProperties").is_some())
            || (value.is_array() && map.field("unevaluatedItems").is_some());
        let ok = match seen {
            Some(seen) => self.with_unevaluated(links, map, value, seen),
            None if wants_own => {
                self.with_unevaluated(links, map, value, &mut Seen::for_value(value))
            }
            None => self.keywords(links, map, value, &mut Seen::default(), false),
        };
        self.depth -= 1;
        if resource.is_some() {
            self.scope.pop();
        }
        ok
    }

    fn with_unevaluated(
        &mut self,
        links: Option<&'c Links>,
        map: &'c JsonMap,
        value: &Json,
        seen: &mut Seen,
    ) -> bool {
        self.keywords(links, map, value, seen, true) && self.unevaluated_keywords(map, value, seen)
    }

    /// Every keyword but `unevaluated*`; `collect`: record evaluated members in `seen`.
    fn keywords(
        &mut self,
        links: Option<&'c Links>,
        map: &'c JsonMap,
        value: &Json,
        seen: &mut Seen,
        collect: bool,
    ) -> bool {
        self.assertions(map, value)
            && self.members(map, value, seen, collect)
            && self.applicators(links, map, value, seen, collect)
    }

    /// Keywords about the value itself (no subschemas).
    fn assertions(&mut self, map: &JsonMap, value: &Json) -> bool {
        match map_field(map, "type") {
            Some(Json::String(name)) if !matches_type(value, name) => return false,
            Some(Json::Array(names))
                if !names
                    .iter()
                    .any(|n| n.as_str().is_some_and(|n| matches_type(value, n))) =>
            {
                return false
            }
            _ => {}
        }
        if let Some(Json::Array(members)) = map_field(map, "enum") {
            if !members.iter().any(|m| deep_equal(m, value)) {
                return false;
            }
        }
        if let Some(constant) = map_field(map, "const") {
            if !deep_equal(constant, value) {
                return false;
            }
        }
        match value {
            Json::String(text) => self.string(map, text),
            Json::Number(n) => number(map, n.as_f64().unwrap_or(0.0)),
            Json::Object(object) => {
                let count = object.len() as f64;
                let required_ok = match map_field(map, "required") {
                    Some(Json::Array(keys)) => keys
                        .iter()
                        .filter_map(Json::as_str)
                        .all(|k| object.field(k).is_some()),
                    _ => true,
                };
                required_ok
                    && num(map, "minProperties").is_none_or(|n| count >= n)
                    && num(map, "maxProperties").is_none_or(|n| count <= n)
                    && dependent_required(map, object)
            }
            Json::Array(items) => {
                let count = items.len() as f64;
                num(map, "minItems").is_none_or(|n| count >= n)
                    && num(map, "maxItems").is_none_or(|n| count <= n)
                    && (map_field(map, "uniqueItems") != Some(&Json::Bool(true))
                        || !has_duplicates(items))
            }
            _ => true,
        }
    }

    fn string(&self, map: &JsonMap, text: &str) -> bool {
        let (min, max) = (num(map, "minLength"), num(map, "maxLength"));
        if min.is_some() || max.is_some() {
            let length = text.chars().count() as f64;
            if min.is_some_and(|n| length < n) || max.is_some_and(|n| length > n) {
                return false;
            }
        }
        if let Some(Json::String(pattern)) = map_field(map, "pattern") {
            if !self.compiled.pattern_matches(pattern, text) {
                return false;
            }
        }
        match map_field(map, "format") {
            Some(Json::String(name)) => format_ok(name, text),
            _ => true,
        }
    }

    /// Keywords applying subschemas to the members of an object or array.
    fn members(&mut self, map: &'c JsonMap, value: &Json, seen: &mut Seen, collect: bool) -> bool {
        match value {
            Json::Object(object) => self.properties(map, object, seen, collect),
            Json::Array(items) => self.items(map, items, seen, collect),
            _ => true,
        }
    }

    fn properties(
        &mut self,
        map: &'c JsonMap,
        object: &JsonMap,
        seen: &mut Seen,
        collect: bool,
    ) -> bool {
        let properties = map_field(map, "properties").and_then(Json::as_object);
        let patterns = map_field(map, "patternProperties").and_then(Json::as_object);
        let additional = map_field(map, "additionalProperties").filter(|s| is_schema(s));
        let names = map_field(map, "propertyNames").filter(|s| is_schema(s));
        if properties.is_none() && patterns.is_none() && additional.is_none() && names.is_none() {
            return true;
        }
        for (i, (key, member)) in object.iter().enumerate() {
            let mut matched = false;
            if let Some(schema) = properties.and_then(|p| p.field(key)) {
                matched = true;
                if is_schema(schema) && !self.node(schema, member, None) {
                    return false;
                }
            }
            for (pattern, schema) in patterns.into_iter().flatten() {
                if self.compiled.pattern_matches(pattern, key) {
                    matched = true;
                    if is_schema(schema) && !self.node(schema, member, None) {
                        return false;
                    }
                }
            }
            if let (false, Some(schema)) = (matched, additional) {
                matched = true;
                if !self.node(schema, member, None) {
                    return false;
                }
            }
            if let Some(schema) = names {
                self.temporaries += 1;
                let ok = self.node(schema, &Json::String(key.clone()), None);
                self.temporaries -= 1;
                if !ok {
                    return false;
                }
            }
            if collect && matched {
                seen.properties[i] = true;
            }
        }
        true
    }

    fn items(&mut self, map: &'c JsonMap, items: &[Json], seen: &mut Seen, collect: bool) -> bool {
        let (prefix, rest) = if is_draft7_tuple(map) {
            (map_field(map, "items"), map_field(map, "additionalItems"))
        } else {
            (map_field(map, "prefixItems"), map_field(map, "items"))
        };
        let prefix: &[Json] = match prefix {
            Some(Json::Array(list)) => list,
            _ => &[],
        };
        let rest = rest.filter(|s| is_schema(s));
        for (i, item) in items.iter().enumerate() {
            let Some(schema) = prefix.get(i).or(rest) else {
                break;
            };
            if !self.node(schema, item, None) {
                return false;
            }
            if collect {
                seen.items[i] = true;
            }
        }
        let Some(contains) = map_field(map, "contains").filter(|s| is_schema(s)) else {
            return true;
        };
        let mut matching = 0.0;
        for (i, item) in items.iter().enumerate() {
            if self.node(contains, item, None) {
                matching += 1.0;
                if collect {
                    seen.items[i] = true;
                }
            }
        }
        num(map, "minContains").unwrap_or(1.0) <= matching
            && num(map, "maxContains").is_none_or(|max| matching <= max)
    }

    /// In-place applicators: the value itself against more subschemas.
    fn applicators(
        &mut self,
        links: Option<&'c Links>,
        map: &'c JsonMap,
        value: &Json,
        seen: &mut Seen,
        collect: bool,
    ) -> bool {
        if let Some(Json::Array(members)) = map_field(map, "allOf") {
            for member in members {
                if !self.node(member, value, collect.then_some(&mut *seen)) {
                    return false;
                }
            }
        }
        if let Some(Json::Array(branches)) = map_field(map, "anyOf") {
            let mut any = false;
            for branch in branches {
                if self.branch(branch, value, seen, collect) {
                    any = true;
                    if !collect {
                        break;
                    }
                }
            }
            if !any {
                return false;
            }
        }
        if let Some(Json::Array(branches)) = map_field(map, "oneOf") {
            let mut count = 0;
            for branch in branches {
                if self.branch(branch, value, seen, collect) {
                    count += 1;
                    if count > 1 {
                        return false;
                    }
                }
            }
            if count != 1 {
                return false;
            }
        }
        if let Some(not) = map_field(map, "not").filter(|s| is_schema(s)) {
            if self.node(not, value, None) {
                return false;
            }
        }
        if let Some(condition) = map_field(map, "if").filter(|s| is_schema(s)) {
            let branch = if self.branch(condition, value, seen, collect) {
                map_field(map, "then")
            } else {
                map_field(map, "else")
            };
            if let Some(branch) = branch.filter(|s| is_schema(s)) {
                if !self.node(branch, value, collect.then_some(&mut *seen)) {
                    return false;
                }
            }
        }
        if let Json::Object(object) = value {
            if !self.dependent_schemas(map, object, value, seen, collect) {
                return false;
            }
        }
        self.references(links, value, seen, collect)
    }

    /// A subschema whose failure does not fail the node: its annotations count only if it accepts.
    fn branch(&mut self, schema: &'c Json, value: &Json, seen: &mut Seen, collect: bool) -> bool {
        if !collect {
            return self.node(schema, value, None);
        }
        let mut own = Seen::for_value(value);
        let ok = self.node(schema, value, Some(&mut own));
        if ok {
            seen.merge(&own);
        }
        ok
    }

    fn dependent_schemas(
        &mut self,
        map: &'c JsonMap,
        object: &JsonMap,
        value: &Json,
        seen: &mut Seen,
        collect: bool,
    ) -> bool {
        for keyword in ["dependentSchemas", "dependencies"] {
            let Some(Json::Object(entries)) = map_field(map, keyword) else {
                continue;
            };
            for (key, schema) in entries {
                if is_schema(schema)
                    && object.field(key).is_some()
                    && !self.node(schema, value, collect.then_some(&mut *seen))
                {
                    return false;
                }
            }
        }
        true
    }

    /// `$ref` and `$dynamicRef` (resolved at compile time; unresolved ones reject).
    fn references(
        &mut self,
        links: Option<&'c Links>,
        value: &Json,
        seen: &mut Seen,
        collect: bool,
    ) -> bool {
        let Some(links) = links else {
            return true;
        };
        if let Some(target) = &links.reference {
            let Some(target) = target.as_deref().and_then(|t| self.compiled.doc.pointer(t)) else {
                return false;
            };
            if !self.hop(target, value, seen, collect) {
                return false;
            }
        }
        if let Some(dynamic) = &links.dynamic {
            let mut target = dynamic.target.as_deref();
            if let Some(name) = &dynamic.anchor {
                // The outermost resource of the dynamic scope that declares the anchor wins.
                let anchors = &self.compiled.index.dynamic_anchors;
                if let Some(found) = self
                    .scope
                    .iter()
                    .find_map(|uri| anchors.get(&(uri.to_string(), name.clone())))
                {
                    target = Some(found.as_str());
                }
            }
            let Some(target) = target.and_then(|t| self.compiled.doc.pointer(t)) else {
                return false;
            };
            if !self.hop(target, value, seen, collect) {
                return false;
            }
        }
        true
    }

    fn hop(&mut self, target: &'c Json, value: &Json, seen: &mut Seen, collect: bool) -> bool {
        let visit = (address(target), address(value));
        let memoizable = !collect && self.temporaries == 0 && !self.compiled.dynamic;
        if memoizable {
            if let Some(&known) = self.memo.get(&visit) {
                return known;
            }
        }
        if !self.active.insert(visit) {
            return false; // a reference cycle that never reaches a smaller value
        }
        let ok = self.node(target, value, collect.then_some(seen));
        self.active.remove(&visit);
        if memoizable {
            self.memo.insert(visit, ok);
        }
        ok
    }

    fn unevaluated_keywords(&mut self, map: &'c JsonMap, value: &Json, seen: &mut Seen) -> bool {
        match value {
            Json::Object(object) => self.unevaluated_members(
                map,
                "unevaluatedProperties",
                object.values(),
                &mut seen.properties,
            ),
            Json::Array(items) => {
                self.unevaluated_members(map, "unevaluatedItems", items.iter(), &mut seen.items)
            }
            _ => true,
        }
    }

    /// `unevaluatedProperties`/`unevaluatedItems` (`keyword`): each member no other keyword
    /// evaluated must match its schema, and is marked evaluated for the enclosing schemas.
    fn unevaluated_members<'v>(
        &mut self,
        map: &'c JsonMap,
        keyword: &str,
        members: impl Iterator<Item = &'v Json>,
        evaluated: &mut [bool],
    ) -> bool {
        let Some(schema) = map_field(map, keyword).filter(|s| is_schema(s)) else {
            return true;
        };
        for (member, evaluated) in members.zip(evaluated.iter_mut()) {
            if !*evaluated {
                if !self.node(schema, member, None) {
                    return false;
                }
                *evaluated = true;
            }
        }
        true
    }
}

fn is_schema(value: &Json) -> bool {
    value.is_object() || value.is_boolean()
}

fn number(map: &JsonMap, v: f64) -> bool {
    num(map, "minimum").is_none_or(|m| v >= m)
        && num(map, "maximum").is_none_or(|m| v <= m)
        && num(map, "exclusiveMinimum").is_none_or(|m| v > m)
        && num(map, "exclusiveMaximum").is_none_or(|m| v < m)
        && num(map, "multipleOf").is_none_or(|m| is_multiple_of(v, m))
}

/// `dependentRequired` and the array form of `dependencies`: both apply.
fn dependent_required(map: &JsonMap, object: &JsonMap) -> bool {
    ["dependentRequired", "dependencies"].iter().all(|keyword| {
        let Some(Json::Object(entries)) = map_field(map, keyword) else {
            return true;
        };
        entries.iter().all(|(key, listed)| match listed {
            Json::Array(listed) if object.field(key).is_some() => listed
                .iter()
                .filter_map(Json::as_str)
                .all(|k| object.field(k).is_some()),
            _ => true,
        })
    })
}
