//! Strict tool schemas (pi-ai's `constrained-sampling.js` for Anthropic): a tool with
//! `constrainedSampling: {type: "json_schema", strict}` is sent with `strict: true` and a schema
//! rewritten to the strict subset when the model supports strict tools and the schema allows it.

use crate::json::{json, str_field, Json, JsonMap};

/// Keys no strict schema may have.
const UNSUPPORTED_KEYS: [&str; 16] = [
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
];

/// Keywords Anthropic's strict mode rejects (`isAnthropicStrictUnsupportedKeyword`).
fn anthropic_unsupported(key: &str, value: &Json) -> bool {
    const ALWAYS: [&str; 11] = [
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "maxItems",
        "uniqueItems",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
    ];
    const FORMATS: [&str; 10] = [
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    ];
    if ALWAYS.contains(&key) {
        return true;
    }
    match key {
        "minItems" => value.as_f64() != Some(0.0) && value.as_f64() != Some(1.0),
        "format" => !value.as_str().is_some_and(|f| FORMATS.contains(&f)),
        _ => false,
    }
}

/// Why a schema cannot be strict (pi-ai's `UnsupportedStrictJsonSchemaError` text).
type Unsupported = String;

fn is_structured(schema: &Json) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    let has_type = |t: &str| match map.get("type") {
        Some(Json::String(s)) => s == t,
        Some(Json::Array(types)) => types.iter().any(|x| x.as_str() == Some(t)),
        _ => false,
    };
    has_type("object")
        || has_type("array")
        || map.contains_key("properties")
        || map.contains_key("items")
}

fn allows_null(schema: &Json) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    let null_type = match map.get("type") {
        Some(Json::String(s)) => s == "null",
        Some(Json::Array(types)) => types.iter().any(|x| x.as_str() == Some("null")),
        _ => false,
    };
    null_type
        || map.get("const") == Some(&Json::Null)
        || map
            .get("enum")
            .and_then(Json::as_array)
            .is_some_and(|e| e.contains(&Json::Null))
        || map
            .get("anyOf")
            .and_then(Json::as_array)
            .is_some_and(|variants| variants.iter().any(allows_null))
}

/// A provider's test for keywords its strict mode rejects.
pub type UnsupportedKeyword = fn(&str, &Json) -> bool;

/// `makeJsonSchemaNodeStrict`, in place.
fn make_node_strict(schema: &mut Json, unsupported: UnsupportedKeyword) -> Result<(), Unsupported> {
    let Some(map) = schema.as_object_mut() else {
        return Err("boolean schemas are unsupported".into());
    };
    for key in UNSUPPORTED_KEYS {
        if map.contains_key(key) {
            return Err(format!("{key} schemas are unsupported"));
        }
    }
    for (key, value) in map.iter() {
        if unsupported(key, value) {
            return Err(format!(
                "{key}: {} is unsupported",
                crate::json::to_string(value)
            ));
        }
    }
    if !map.contains_key("type") && !map.contains_key("anyOf") && !map.contains_key("enum") {
        return Err("schemas without a type are unsupported".into());
    }
    if let Some(any_of) = map.get_mut("anyOf") {
        let Some(variants) = any_of.as_array_mut().filter(|v| !v.is_empty()) else {
            return Err("anyOf must contain at least one schema".into());
        };
        for variant in variants {
            if is_structured(variant) {
                return Err("object and array unions are unsupported".into());
            }
            make_node_strict(variant, unsupported)?;
        }
    }
    if let Some(items) = map.get_mut("items") {
        if items.is_array() {
            return Err("tuple schemas are unsupported".into());
        }
        make_node_strict(items, unsupported)?;
    }
    let is_object = str_field_map(map, "type") == Some("object");
    if map.contains_key("properties") && !is_object {
        return Err("properties require type object".into());
    }
    if !is_object {
        return Ok(());
    }
    if map
        .get("additionalProperties")
        .is_some_and(|v| *v != Json::Bool(false))
    {
        return Err("schema-valued or true additionalProperties is unsupported".into());
    }
    if map.get("properties").is_some_and(|p| !p.is_object()) {
        return Err("object properties must be a schema map".into());
    }
    let required: Vec<String> = match map.get("required") {
        None => Vec::new(),
        Some(Json::Array(keys)) if keys.iter().all(Json::is_string) => keys
            .iter()
            .filter_map(|k| k.as_str().map(str::to_string))
            .collect(),
        Some(_) => return Err("object required must be a string array".into()),
    };
    let mut empty = JsonMap::new();
    let properties = match map.get_mut("properties") {
        Some(Json::Object(properties)) => properties,
        // Absent: checked against `{}` and not added.
        _ => &mut empty,
    };
    if required.iter().any(|k| !properties.contains_key(k)) {
        return Err("required contains an unknown property".into());
    }
    for (key, property) in properties.iter_mut() {
        make_node_strict(property, unsupported)?;
        if !required.contains(key) && !allows_null(property) {
            let inner = std::mem::take(property);
            *property = json!({"anyOf": [inner, {"type": "null"}]});
        }
    }
    let names: Vec<Json> = properties.keys().map(|k| Json::String(k.clone())).collect();
    map.insert("required".into(), Json::Array(names));
    map.insert("additionalProperties".into(), Json::Bool(false));
    Ok(())
}

fn str_field_map<'a>(map: &'a JsonMap, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Json::as_str)
}

/// `makeStrictJsonSchema`.
fn make_strict(schema: &Json, unsupported: UnsupportedKeyword) -> Result<Json, Unsupported> {
    let mut schema = schema.clone();
    if !schema.is_object() {
        return Err("root schema must have type object".into());
    }
    make_node_strict(&mut schema, unsupported)?;
    if str_field(&schema, "type") != Some("object") {
        return Err("root schema must have type object".into());
    }
    Ok(schema)
}

/// `prefersJsonSchemaStrictSampling`: `constrainedSampling` is `{type: "json_schema", strict:
/// "prefer"}`.
pub fn prefers_strict(tool: &Json) -> bool {
    tool.get("constrainedSampling").is_some_and(|c| {
        str_field(c, "type") == Some("json_schema") && str_field(c, "strict") == Some("prefer")
    })
}

/// `resolveJsonSchemaStrictSampling` + `getJsonSchemaToolParameters`: the strict schema when
/// the tool is sent strict, `None` when not, an error text when the tool requires strict mode and
/// cannot have it.
pub fn resolve(tool: &Json, supported: bool) -> Result<Option<Json>, String> {
    resolve_with(tool, supported, anthropic_unsupported)
}

/// [`resolve`] for a provider whose strict mode rejects the keywords `unsupported` names (pi-ai
/// passes none for Google: `|_, _| false`).
pub fn resolve_with(
    tool: &Json,
    supported: bool,
    unsupported: UnsupportedKeyword,
) -> Result<Option<Json>, String> {
    let Some(config) = tool
        .get("constrainedSampling")
        .filter(|c| str_field(c, "type") == Some("json_schema"))
    else {
        return Ok(None);
    };
    let required = str_field(config, "strict") == Some("require");
    let name = str_field(tool, "name").unwrap_or("");
    let parameters = tool.get("parameters").cloned().unwrap_or(Json::Null);
    if supported {
        return match make_strict(&parameters, unsupported) {
            Ok(schema) => Ok(Some(schema)),
            Err(_) if !required => Ok(None),
            Err(reason) => Err(format!(
                "Tool \"{name}\" requires JSON-schema constrained sampling, but {reason}."
            )),
        };
    }
    if required {
        return Err(format!(
            "Tool \"{name}\" requires JSON-schema constrained sampling, but strict tools are unsupported."
        ));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(parameters: Json, strict: &str) -> Json {
        json!({"name": "t", "parameters": parameters,
            "constrainedSampling": {"type": "json_schema", "strict": strict}})
    }

    #[test]
    fn optional_properties_become_nullable_and_all_required() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]});
        let strict = resolve(&tool(schema, "prefer"), true).unwrap().unwrap();
        assert_eq!(
            strict,
            json!({"type": "object", "properties": {"a": {"type": "string"},
                "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
                "required": ["a", "b"], "additionalProperties": false})
        );
    }

    #[test]
    fn unsupported_keywords_fall_back_or_fail() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}});
        assert_eq!(resolve(&tool(schema.clone(), "prefer"), true), Ok(None));
        assert_eq!(
            resolve(&tool(schema, "require"), true),
            Err("Tool \"t\" requires JSON-schema constrained sampling, but minimum: 1 is unsupported.".into())
        );
        assert_eq!(
            resolve(&tool(json!({"type": "object"}), "require"), false),
            Err("Tool \"t\" requires JSON-schema constrained sampling, but strict tools are unsupported.".into())
        );
        assert_eq!(resolve(&json!({"name": "plain"}), true), Ok(None));
    }
}
