//! Grammar (custom) tools: a tool with `constrainedSampling: {type: "grammar"}` on a model with
//! `compat.supportsOpenAIGrammarTools` goes out as an OpenAI custom tool whose free-text input is
//! constrained by a Lark or regex grammar. Its input is one string, kept in the tool call's
//! arguments under the schema's single required string property; the stream's input deltas
//! become the JSON text of those arguments.

use std::collections::HashMap;

use crate::json::{str_field, Json};

/// The input property of each grammar tool, by tool name.
pub(super) type InputProperties = HashMap<String, String>;

/// How a grammar tool is sent.
pub(super) struct Grammar {
    /// `lark` or `regex`.
    pub syntax: &'static str,
    pub definition: String,
    /// The arguments' property that holds the input.
    pub input_property: String,
}

/// The grammar of `tool`, `None` when it is not a grammar tool (or the model takes none); an error
/// text for a grammar tool pi-ai refuses.
pub(super) fn resolve(tool: &Json, supported: bool) -> Result<Option<Grammar>, String> {
    let Some(config) = tool
        .get("constrainedSampling")
        .filter(|c| str_field(c, "type") == Some("grammar"))
    else {
        return Ok(None);
    };
    if !supported {
        return Ok(None);
    }
    let name = str_field(tool, "name").unwrap_or("");
    let variant = |key: &str| {
        config
            .get("variants")
            .and_then(|v| v.get(key))
            .and_then(Json::as_str)
            .filter(|d| !d.trim().is_empty())
            .map(str::to_string)
    };
    let (syntax, definition) = match (variant("openai_lark"), variant("openai_regex")) {
        (Some(lark), _) => ("lark", lark),
        (None, Some(regex)) => ("regex", regex),
        (None, None) => {
            return Err(format!(
                "Tool \"{name}\" cannot use grammar constrained sampling: no supported grammar variant was provided."
            ))
        }
    };
    let input_property = input_property(tool).map_err(|reason| {
        format!("Tool \"{name}\" cannot use grammar constrained sampling: {reason}.")
    })?;
    Ok(Some(Grammar {
        syntax,
        definition,
        input_property,
    }))
}

/// The schema's one required string property.
fn input_property(tool: &Json) -> Result<String, String> {
    let schema = tool.get("parameters").unwrap_or(&Json::Null);
    if str_field(schema, "type") != Some("object") {
        return Err("grammar constrained sampling requires an object parameter schema".into());
    }
    let required = schema.get("required").and_then(Json::as_array);
    let property = match required.map(Vec::as_slice) {
        Some([Json::String(property)]) => property,
        _ => {
            return Err(
                "grammar constrained sampling requires exactly one required string property".into(),
            )
        }
    };
    let Some(definition) = schema
        .get("properties")
        .and_then(|p| p.get(property))
        .filter(|d| !d.is_null())
    else {
        return Err(format!(
            "grammar constrained sampling requires a properties entry for {property}"
        ));
    };
    if str_field(definition, "type") != Some("string") {
        return Err(format!(
            "grammar constrained sampling property {property} must have type string"
        ));
    }
    Ok(property.clone())
}

/// The input property of every grammar tool declared anywhere in the transcript (a later
/// declaration of a name wins), by tool name.
pub(super) fn input_properties(
    messages: &[&Json],
    supported: bool,
) -> Result<InputProperties, String> {
    let mut declared: Vec<&Json> = Vec::new();
    for message in messages
        .iter()
        .filter(|m| str_field(m, "role") == Some("system"))
    {
        for tool in message
            .get("toolsAdded")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            let name = str_field(tool, "name");
            match declared.iter_mut().find(|t| str_field(t, "name") == name) {
                Some(slot) => *slot = tool,
                None => declared.push(tool),
            }
        }
    }
    let mut properties = HashMap::new();
    for tool in declared {
        if let Some(grammar) = resolve(tool, supported)? {
            let name = str_field(tool, "name").unwrap_or("").to_string();
            properties.insert(name, grammar.input_property);
        }
    }
    Ok(properties)
}

/// `JSON.stringify(text)` without its quotes.
fn escaped(text: &str) -> String {
    let mut out = String::new();
    crate::json::write_string(&mut out, text);
    out[1..out.len() - 1].to_string()
}

/// A streamed grammar tool input and the JSON arguments text sent for it so far.
pub(super) struct InputStream {
    property: String,
    input: String,
    started: bool,
    closed: bool,
    /// JSON text produced before the first delta event (from the item's initial input).
    unsent: String,
}

impl InputStream {
    /// A stream whose item arrived with `initial` input.
    pub fn new(property: &str, initial: &str) -> Self {
        let mut stream = InputStream {
            property: property.to_string(),
            input: String::new(),
            started: false,
            closed: false,
            unsent: String::new(),
        };
        stream.unsent = stream
            .append_json(initial)
            .ok()
            .flatten()
            .unwrap_or_default();
        stream
    }

    /// The opening `{"<property>":"`, once.
    fn start(&mut self) -> String {
        if self.started {
            return String::new();
        }
        self.started = true;
        format!(
            "{{{}:\"",
            crate::json::to_string(&Json::String(self.property.clone()))
        )
    }

    fn append_json(&mut self, delta: &str) -> Result<Option<String>, String> {
        if self.closed {
            return Err(format!(
                "grammar tool input for property \"{}\" changed after it was closed",
                self.property
            ));
        }
        if delta.is_empty() {
            return Ok(None);
        }
        self.input.push_str(delta);
        Ok(Some(format!("{}{}", self.start(), escaped(delta))))
    }

    /// The JSON text to stream for an input delta (`None`: nothing to send).
    pub fn append(&mut self, delta: &str) -> Result<Option<String>, String> {
        let json = self.append_json(delta)?;
        Ok(self.send(json))
    }

    /// The JSON text that closes the arguments; `input` is the complete input when the server
    /// sends it (it must continue what streamed).
    pub fn close(&mut self, input: Option<&str>) -> Result<Option<String>, String> {
        if self.closed {
            if input.is_none_or(|i| i == self.input) {
                return Ok(self.send(None));
            }
            return Err(format!(
                "grammar tool input for property \"{}\" changed after it was closed",
                self.property
            ));
        }
        let rest = match input {
            Some(input) => match input.strip_prefix(self.input.as_str()) {
                Some(rest) => rest.to_string(),
                None => {
                    return Err(format!(
                        "grammar tool input for property \"{}\" changed non-monotonically",
                        self.property
                    ))
                }
            },
            None => String::new(),
        };
        self.input.push_str(&rest);
        self.closed = true;
        let json = format!("{}{}\"}}", self.start(), escaped(&rest));
        Ok(self.send(Some(json)))
    }

    /// Prepends what the item's initial input produced to the first text sent.
    fn send(&mut self, json: Option<String>) -> Option<String> {
        if self.unsent.is_empty() {
            return json;
        }
        let mut sent = std::mem::take(&mut self.unsent);
        sent.push_str(json.as_deref().unwrap_or(""));
        Some(sent)
    }
}
