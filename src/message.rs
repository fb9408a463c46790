//! Data model (SPEC §2): messages, content blocks, usage, models and tool declarations.
//!
//! Messages are host JSON kept verbatim (custom roles and unknown fields round-trip); this
//! module holds the fixed shapes the core creates itself and small accessors.

pub mod list;
pub mod types;

use crate::json::Field;
use crate::json::{json, now_ms, object, Json, JsonMap};
use crate::stream::partial::PartialSnapshot;

pub use list::{ListMark, MessageList};

/// The zero usage of SPEC §2.2: a copy of one built once (a copy reuses the maps' hashes and
/// index tables, where building hashes every key again: ~2.5 k instructions against ~6 k, and
/// every assistant message the core makes holds one).
pub fn zero_usage() -> Json {
    static ZERO: std::sync::OnceLock<Json> = std::sync::OnceLock::new();
    ZERO.get_or_init(|| {
        json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
    })
    .clone()
}

/// The placeholder model of an Agent created without a model (SPEC §2.4).
pub fn placeholder_model() -> Json {
    json!({"id": "unknown", "name": "unknown", "api": "unknown", "provider": "unknown",
        "baseUrl": "", "reasoning": false, "input": [],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 0, "maxTokens": 0})
}

/// The default client identity merged under the configured one (SPEC §2.5): a copy of one built
/// once (every request carries it; a copy does not hash its keys again).
pub fn default_identity() -> Json {
    static DEFAULT: std::sync::OnceLock<Json> = std::sync::OnceLock::new();
    DEFAULT
        .get_or_init(|| {
            json!({"attribution": {"name": "pi", "url": "https://pi.dev",
                "categories": ["cli-agent"]}})
        })
        .clone()
}

/// An error tool result created by the loop (SPEC §2.7).
pub fn error_tool_result(text: &str) -> Json {
    json!({"content": [{"type": "text", "text": text}], "details": {}})
}

/// A user message with array content: the text block, then the images (SPEC §7.6).
pub fn user_text_message(text: &str, images: &[Json]) -> Json {
    let mut content = Vec::with_capacity(1 + images.len());
    content.push(object([("type", "text".into()), ("text", text.into())]));
    content.extend(images.iter().cloned());
    object([
        ("role", "user".into()),
        ("content", Json::Array(content)),
        ("timestamp", now_ms()),
    ])
}

/// The role of a message ("" when it has none).
pub fn role(message: &Json) -> &str {
    crate::json::field(message, "role")
        .and_then(Json::as_str)
        .unwrap_or("")
}

/// True for the four roles the default `convertToLlm` keeps.
/// Checks the loosest message shape the reference accepts: an object with a string `role`.
pub fn check_message(message: &Json, name: &str) -> Result<(), String> {
    if message.field("role").is_some_and(Json::is_string) {
        Ok(())
    } else {
        Err(format!(
            "{name} must be a message: a JSON object with a string \"role\"."
        ))
    }
}

/// An array of messages, each checked with `check_message`.
pub fn messages_from(value: Json, name: &str) -> Result<Vec<Json>, String> {
    let Json::Array(messages) = value else {
        return Err(format!("{name} must be a JSON array of messages."));
    };
    for (index, message) in messages.iter().enumerate() {
        check_message(message, &format!("{name}[{index}]"))?;
    }
    Ok(messages)
}

pub fn is_llm_role(role: &str) -> bool {
    matches!(role, "system" | "user" | "assistant" | "toolResult")
}

/// The synthetic assistant message of the failure path (SPEC §7.9).
pub fn failure_message(model: &Json, error: &str, aborted: bool) -> Json {
    let field = |k: &str| model.get(k).cloned().unwrap_or(Json::Null);
    json!({
        "role": "assistant",
        "content": [{"type": "text", "text": ""}],
        "api": field("api"),
        "provider": field("provider"),
        "model": field("id"),
        "usage": zero_usage(),
        "stopReason": if aborted { "aborted" } else { "error" },
        "errorMessage": error,
        "timestamp": now_ms(),
    })
}

/// The fields of a tool declaration, in declaration order (SPEC §2.6).
pub const DECLARATION_FIELDS: [&str; 4] =
    ["name", "description", "parameters", "constrainedSampling"];

/// `tool`'s values of [`DECLARATION_FIELDS`], found in one pass over its keys (no hashing: a
/// tool object has a handful of keys, and this runs for every tool on every turn).
pub fn declaration_fields(tool: &Json) -> [Option<&Json>; 4] {
    let mut fields = [None; 4];
    if let Json::Object(map) = tool {
        for (key, value) in map {
            if let Some(i) = DECLARATION_FIELDS.iter().position(|field| field == key) {
                fields[i] = Some(value);
            }
        }
    }
    fields
}

/// `toToolDeclaration` (SPEC §2.6): name, description (if any), parameters, constrainedSampling
/// (if the key exists, including `false`), in that order.
pub fn tool_declaration(tool: &Json) -> Json {
    let mut out = JsonMap::with_capacity(4);
    for (key, value) in DECLARATION_FIELDS.iter().zip(declaration_fields(tool)) {
        if let Some(value) = value {
            out.insert(key.to_string(), value.clone());
        }
    }
    Json::Object(out)
}

/// A tool result message for an outcome, fields in the loop's order (SPEC §2.3, §6.10).
pub fn tool_result_message(
    tool_call: &Json,
    result: Json,
    is_error: bool,
    duration_ms: Option<u64>,
) -> Json {
    // The result is consumed: its content, details and usage move into the message (taken in
    // one walk over its fields: removing each by key would hash it).
    let (mut content, mut details, mut usage) = (None, None, None);
    if let Json::Object(result) = result {
        for (key, value) in result {
            match key.as_str() {
                "content" => content = Some(value),
                "details" => details = Some(value),
                "usage" => usage = Some(value),
                _ => {}
            }
        }
    }
    // Sized for every field: growing a map rehashes its keys and moves its entries.
    let mut m = JsonMap::with_capacity(8);
    m.insert("role".into(), json!("toolResult"));
    m.insert(
        "toolCallId".into(),
        tool_call.field("id").cloned().unwrap_or(json!("")),
    );
    m.insert(
        "toolName".into(),
        tool_call.field("name").cloned().unwrap_or(json!("")),
    );
    let content = content.filter(|c| !c.is_null());
    m.insert("content".into(), content.unwrap_or_else(|| json!([])));
    if let Some(details) = details {
        m.insert("details".into(), details);
    }
    if let Some(usage) = usage {
        m.insert("usage".into(), usage);
    }
    m.insert("isError".into(), json!(is_error));
    if let Some(ms) = duration_ms {
        m.insert("durationMs".into(), json!(ms));
    }
    m.insert("timestamp".into(), now_ms());
    Json::Object(m)
}

/// The `toolCall` blocks of an assistant message, in order.
pub fn tool_calls(message: &Json) -> Vec<Json> {
    message
        .field("content")
        .and_then(Json::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.field("type").and_then(Json::as_str) == Some("toolCall"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::to_string;

    #[test]
    fn zero_usage_matches_spec() {
        assert_eq!(
            to_string(&zero_usage()),
            r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#
        );
    }

    #[test]
    fn placeholder_model_matches_spec() {
        assert_eq!(
            to_string(&placeholder_model()),
            r#"{"id":"unknown","name":"unknown","api":"unknown","provider":"unknown","baseUrl":"","reasoning":false,"input":[],"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0},"contextWindow":0,"maxTokens":0}"#
        );
    }

    #[test]
    fn declaration_keeps_only_declared_keys_in_order() {
        let tool = json!({"label": "R", "constrainedSampling": false, "parameters": {"type": "object"},
            "name": "read", "executionMode": "sequential", "extra": 1, "description": "d"});
        assert_eq!(
            to_string(&tool_declaration(&tool)),
            r#"{"name":"read","description":"d","parameters":{"type":"object"},"constrainedSampling":false}"#
        );
        let bare = json!({"name": "x", "parameters": {}});
        assert_eq!(
            to_string(&tool_declaration(&bare)),
            r#"{"name":"x","parameters":{}}"#
        );
    }

    /// A stored message reads back the same tree and text: escapes, non-ASCII text, fractions,
    /// key order (index keys first) and custom fields survive the text form.
    #[test]
    fn a_stored_message_reads_back_what_was_stored() {
        let json = crate::json::parse(
            r#"{"role":"user","content":[{"type":"text","text":"a \"q\"\n\u00e9 \ud83d\ude00"}],"x":{"b":1.5,"a":-0.25,"2":[null,true]},"timestamp":1}"#,
        )
        .unwrap();
        let stored = Message::stored(json.clone());
        assert_eq!(stored.text(), crate::json::to_string(&json));
        assert!(!stored.is_system() && stored.is_llm());
        assert_eq!(*stored.json(), json);
        assert_eq!(stored.text(), crate::json::to_string(stored.json()));
        assert_eq!(stored.into_json(), json);
        // -0 reads back as 0, as `JSON.parse(JSON.stringify(-0))` does: the text is the same.
        let minus_zero = crate::json::parse(r#"{"role":"user","n":-0}"#).unwrap();
        let stored = Message::stored(minus_zero.clone());
        assert_eq!(to_string(stored.json()), to_string(&minus_zero));
        assert_eq!(stored.text(), r#"{"role":"user","n":0}"#);
    }

    /// A tree nested beyond what the parser accepts stays a tree (its text could not be read
    /// back), and is still rendered and read like any message.
    #[test]
    fn a_message_too_deep_to_parse_back_is_kept_as_a_tree() {
        let mut deep = json!("bottom");
        for _ in 0..crate::json::MAX_PARSE_DEPTH + 10 {
            deep = json!([deep]);
        }
        let json = json!({"role": "system", "content": "", "deep": deep});
        let stored = Message::stored(json.clone());
        assert!(stored.is_system());
        assert_eq!(*stored.json(), json);
        assert!(crate::json::parse(stored.text()).is_err());
    }

    /// A message taken from a stream's partial reads as that partial: its text without building
    /// a tree, its tree on demand, its role from the partial's fields; later changes to the
    /// partial do not reach it.
    #[test]
    fn an_assembled_message_reads_as_its_partial_did() {
        use crate::stream::partial::Partial;
        let map = json!({"role": "assistant", "content": [], "api": "a", "usage": {"input": 1}});
        let mut partial = Partial::from_map(map.as_object().unwrap().clone());
        let block = json!({"type": "text", "text": ""});
        partial.place_block(0, block.as_object().unwrap().clone());
        partial.append_text(0, "text", "he said \"hi\"");
        let expected = partial.to_json();
        let message = Message::assembled(partial.snapshot());
        partial.append_text(0, "text", " and left");
        partial.set_field("stopReason", json!("stop"));
        assert!(message.is_llm() && !message.is_system());
        assert_eq!(message.text(), to_string(&expected));
        assert!(!message.has_tree(), "the text was written without a tree");
        assert_eq!(*message.json(), expected);
        let system = Partial::from_map(json!({"role": "system"}).as_object().unwrap().clone());
        assert!(Message::assembled(system.snapshot()).is_system());
    }

    #[test]
    fn tool_result_message_key_order_and_absent_fields() {
        let call = json!({"type": "toolCall", "id": "c1", "name": "t", "arguments": {}});
        let result = json!({"usage": {"input": 1}, "extra": 1, "content": [], "terminate": true});
        let m = tool_result_message(&call, result, false, Some(5));
        let keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "role",
                "toolCallId",
                "toolName",
                "content",
                "usage",
                "isError",
                "durationMs",
                "timestamp"
            ]
        );
        let m = tool_result_message(&call, json!({"details": null}), true, None);
        assert_eq!(m["content"], json!([]));
        assert_eq!(m["details"], Json::Null);
        assert!(m.get("durationMs").is_none());
    }
}

/// A committed message: immutable and shared (a clone is a reference count), so the agent
/// state, a run's working context, `newMessages`, events and requests hold the same value
/// instead of copies. It holds its `JSON.stringify` text, its tree, or both: each is built from
/// the other at most once, on first use. A stored message ([`Message::stored`]) keeps only its
/// text until something reads the tree, which is what an idle agent's transcript costs.
#[derive(Clone)]
pub struct Message(std::sync::Arc<MessageInner>);

struct MessageInner {
    json: std::sync::OnceLock<Json>,
    text: std::sync::OnceLock<String>,
    /// The streamed partial message this one is, when it is one (`message_start`): its tree
    /// and text are built from it on first use, when someone reads them.
    /// Boxed: every message pays for this field, and few are partials.
    partial: Option<Box<PartialSnapshot>>,
    /// `role` is `"system"` (read once: the per-request scans then cost a flag test).
    system: bool,
    /// `role` is one the default `convertToLlm` keeps.
    llm: bool,
}

/// What a message's `role` says, read once.
struct Roles {
    system: bool,
    llm: bool,
}

impl Roles {
    fn of(message: &Json) -> Roles {
        Roles::named(role(message))
    }

    fn named(role: &str) -> Roles {
        Roles {
            system: role == "system",
            llm: is_llm_role(role),
        }
    }
}

impl Message {
    pub fn new(json: Json) -> Self {
        let roles = Roles::of(&json);
        Self::with_parts(
            roles,
            std::sync::OnceLock::from(json),
            std::sync::OnceLock::new(),
        )
    }

    /// The partial message a stream has assembled so far, as a message whose tree and text are
    /// built only when read.
    pub fn assembled(partial: PartialSnapshot) -> Self {
        let role = partial.field("role").and_then(Json::as_str).unwrap_or("");
        let Roles { system, llm } = Roles::named(role);
        Message(std::sync::Arc::new(MessageInner {
            json: std::sync::OnceLock::new(),
            text: std::sync::OnceLock::new(),
            partial: Some(Box::new(partial)),
            system,
            llm,
        }))
    }

    /// A message kept in text form: its tree is dropped now and parsed again only when read
    /// (a text is a fraction of a tree's bytes: no per-key allocation, hash index or slack).
    /// A tree nested beyond what [`crate::json::parse`] accepts stays a tree.
    pub fn stored(json: Json) -> Self {
        let text = crate::json::to_string(&json);
        if crate::json::nesting_depth(&text) > crate::json::MAX_PARSE_DEPTH {
            return Self::new(json);
        }
        let text = std::sync::OnceLock::from(text);
        Self::with_parts(Roles::of(&json), std::sync::OnceLock::new(), text)
    }

    fn with_parts(
        Roles { system, llm }: Roles,
        json: std::sync::OnceLock<Json>,
        mut text: std::sync::OnceLock<String>,
    ) -> Self {
        if let Some(text) = text.get_mut() {
            text.shrink_to_fit();
        }
        Message(std::sync::Arc::new(MessageInner {
            json,
            text,
            partial: None,
            system,
            llm,
        }))
    }

    /// `role(message) == "system"`.
    pub fn is_system(&self) -> bool {
        self.0.system
    }

    /// `is_llm_role(role(message))`.
    pub fn is_llm(&self) -> bool {
        self.0.llm
    }

    /// The message as a tree, parsed back from its text on first use for a stored message.
    /// There is no `Deref` to the tree: every reader of fields calls this, so each place that
    /// forces a parse is visible.
    pub fn json(&self) -> &Json {
        self.0.json.get_or_init(|| match &self.0.partial {
            Some(partial) => partial.to_json(),
            // The text is this library's own rendering of a tree within the depth limit.
            None => crate::json::parse(self.text()).unwrap_or(Json::Null),
        })
    }

    /// Whether the tree exists yet (tests check what a path leaves unparsed).
    #[cfg(test)]
    pub(crate) fn has_tree(&self) -> bool {
        self.0.json.get().is_some()
    }

    /// `crate::json::to_string` of the message, rendered on first use and kept.
    pub fn text(&self) -> &str {
        self.0.text.get_or_init(|| match &self.0.partial {
            Some(partial) if self.0.json.get().is_none() => {
                let mut text = String::new();
                partial.write_text(&mut text);
                text
            }
            _ => crate::json::to_string(self.json()),
        })
    }

    /// The JSON value: moved out when this is the only holder, copied otherwise.
    pub fn into_json(self) -> Json {
        match std::sync::Arc::try_unwrap(self.0) {
            Ok(inner) if inner.json.get().is_some() => inner.json.into_inner().unwrap_or_default(),
            Ok(inner) => Message(std::sync::Arc::new(inner)).json().clone(),
            Err(shared) => Message(shared).json().clone(),
        }
    }

    /// True when both are the same shared value.
    pub fn ptr_eq(&self, other: &Message) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }

    /// This message's identity, kept without keeping its content.
    pub fn identity(&self) -> MessageIdentity {
        MessageIdentity(std::sync::Arc::downgrade(&self.0))
    }
}

/// Which message a value is, held without its content (a weak reference: the content goes when
/// the last message holding it goes, and the address is not reused while this lives, so it
/// names no other message).
pub struct MessageIdentity(std::sync::Weak<MessageInner>);

impl MessageIdentity {
    /// True for the message this identity was taken from (or a clone of it).
    pub fn is(&self, message: &Message) -> bool {
        std::ptr::eq(self.0.as_ptr(), std::sync::Arc::as_ptr(&message.0))
    }

    /// Whether a message still holds the content (tests check that an identity keeps none).
    #[cfg(test)]
    pub(crate) fn is_alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

/// Copies of a message list as plain JSON values.
pub fn to_json_vec(messages: &[Message]) -> Vec<Json> {
    messages.iter().map(|m| m.json().clone()).collect()
}

/// Appends the JSON array of `messages` from their cached texts (no rendering after the first).
pub fn write_json_array(out: &mut String, messages: &[Message]) {
    out.reserve(messages.iter().map(|m| m.text().len() + 1).sum::<usize>() + 2);
    out.push('[');
    for (i, message) in messages.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(message.text());
    }
    out.push(']');
}

/// Wraps plain JSON values as committed messages.
pub fn from_json_vec(messages: Vec<Json>) -> Vec<Message> {
    messages.into_iter().map(Message::new).collect()
}

/// Wraps plain JSON values as stored messages (text form, for a transcript kept between runs).
pub fn stored_vec(messages: Vec<Json>) -> Vec<Message> {
    messages.into_iter().map(Message::stored).collect()
}

impl std::borrow::Borrow<Json> for Message {
    fn borrow(&self) -> &Json {
        self.json()
    }
}

impl AsRef<Json> for Message {
    fn as_ref(&self) -> &Json {
        self.json()
    }
}

impl From<Json> for Message {
    fn from(json: Json) -> Self {
        Message::new(json)
    }
}

impl From<Message> for Json {
    fn from(message: Message) -> Self {
        message.into_json()
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.json().fmt(f)
    }
}

impl PartialEq for Message {
    fn eq(&self, other: &Message) -> bool {
        self.ptr_eq(other) || self.json() == other.json()
    }
}

impl PartialEq<Json> for Message {
    fn eq(&self, other: &Json) -> bool {
        self.json() == other
    }
}

impl PartialEq<Message> for Json {
    fn eq(&self, other: &Message) -> bool {
        self == other.json()
    }
}
