//! Built-in model providers: pi-ai 1.6.0's `streamSimple` for the `openai-completions`,
//! `anthropic-messages`, `openai-responses` and `google-generative-ai` APIs, as a stream function
//! (SPEC §3.1)
//! dispatching on `model.api`.
//!
//! Each request runs as a task on libagent's runtime: build the HTTP request from the transcript
//! (`transcript`, `limits` and the API module), send it with pi-ai's retry policy (`http`) within
//! the transport options' timeouts (`transport`; failures named by `errors`), read the server-sent
//! events within size limits (`sse`) and map them onto the stream protocol (`output`). Nothing
//! here blocks the runtime thread; an abort drops the connection at once.

mod anthropic;
mod env;
mod errors;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod google;
mod http;
mod limits;
mod openai;
mod openai_responses;
mod output;
mod sse;
mod surrogates;
mod transcript;
mod transport;
mod wire;

use std::sync::{Arc, OnceLock};

use crate::host::{set_default_stream_fn, AbortSignal, StreamFn, StreamRequest};
use crate::json::{str_field, Json};
use crate::message::Message;
use crate::stream::StreamSender;

pub use env::api_key_env_vars;

/// The APIs the built-in providers speak.
pub const APIS: [&str; 4] = [
    "openai-completions",
    "anthropic-messages",
    "openai-responses",
    "google-generative-ai",
];

/// The built-in providers as one stream function for agents: [`stream_simple`], with a missing
/// API key's error naming the environment variable to set.
pub fn stream_fn() -> StreamFn {
    static PROVIDERS: OnceLock<StreamFn> = OnceLock::new();
    PROVIDERS
        .get_or_init(|| Arc::new(|request, sender| start(request, sender, true)))
        .clone()
}

/// Checks one transport option (`timeoutMs`, `caCertificates`, ...) as a stream call would.
pub fn check_transport_option(key: &str, value: &Json) -> Result<(), String> {
    let mut options = crate::json::JsonMap::new();
    options.insert(key.into(), value.clone());
    transport::Transport::from_options(&Json::Object(options)).map(|_| ())
}

/// Whether `stream_fn` is the built-in providers' (so models set with it can be checked early).
pub fn is_providers(stream_fn: &StreamFn) -> bool {
    Arc::ptr_eq(stream_fn, &self::stream_fn())
}

/// Makes the built-in providers the process-wide default stream function.
pub fn set_as_default() {
    set_default_stream_fn(Some(stream_fn()));
}

/// One request, as both APIs read it.
pub(crate) struct Call {
    pub model: Arc<Json>,
    /// The request's messages, shared with the transcript (read, never copied).
    pub messages: Arc<Vec<Message>>,
    pub options: Json,
    pub signal: AbortSignal,
    /// `options.apiKey`, else the provider's environment variable.
    pub api_key: Option<String>,
    /// Timeouts, retries and extra CAs from the options.
    pub transport: transport::Transport,
}

impl Call {
    /// `options[key]` unless absent or null.
    pub fn option(&self, key: &str) -> Option<&Json> {
        self.options.get(key).filter(|v| !v.is_null())
    }

    pub fn model_str(&self, key: &str) -> &str {
        str_field(&self.model, key).unwrap_or("")
    }

    /// `model.compat[key]` unless absent or null.
    pub fn compat(&self, key: &str) -> Option<&Json> {
        self.model
            .get("compat")
            .and_then(|c| c.get(key))
            .filter(|v| !v.is_null())
    }
}

/// `streamSimple(model, context, options)`: fails (the stream function throws) for an unknown
/// API, a model without the fields the API needs, bad transport options and a missing API key;
/// everything else is encoded in the stream.
pub fn stream_simple(request: StreamRequest, sender: StreamSender) {
    start(request, sender, false)
}

fn start(request: StreamRequest, sender: StreamSender, key_hint: bool) {
    if let Err(message) = check_model(&request.model) {
        let _ = sender.fail(&message);
        return;
    }
    let api = str_field(&request.model, "api").unwrap_or("").to_string();
    let options = match request.options {
        Json::Object(_) => request.options,
        _ => Json::Object(Default::default()),
    };
    let transport = match transport::Transport::from_options(&options) {
        Ok(transport) => transport,
        Err(message) => {
            let _ = sender.fail(&message);
            return;
        }
    };
    let explicit_key = options
        .get("apiKey")
        .and_then(Json::as_str)
        .filter(|key| !key.trim().is_empty())
        .map(str::to_string);
    let provider = str_field(&request.model, "provider").unwrap_or("");
    let api_key = explicit_key.or_else(|| env::api_key(provider, options.get("env")));
    let call = Call {
        messages: request.messages,
        model: request.model,
        options,
        signal: request.signal,
        api_key,
        transport,
    };
    let provider = call.model_str("provider").to_string();
    let started = match api.as_str() {
        "openai-completions" => openai::start(call, &sender),
        "anthropic-messages" => anthropic::start(call, &sender),
        "openai-responses" => openai_responses::start(call, &sender),
        "google-generative-ai" => google::start(call, &sender),
        _ => Err(format!("No API provider registered for api: {api}")),
    };
    if let Err(mut message) = started {
        if key_hint && message.starts_with("No API key for provider: ") {
            if let Some(variable) = env::api_key_env_vars(&provider).last() {
                message.push_str(&format!(
                    " (set the environment variable {variable} or give an API key)"
                ));
            }
        }
        let _ = sender.fail(&message);
    }
}

/// The APIs of [`APIS`] as a sentence: `"a", "b" or "c"`.
fn api_names() -> String {
    let quoted: Vec<String> = APIS.iter().map(|api| format!("\"{api}\"")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Absent, null or an empty string.
fn absent(value: Option<&Json>) -> bool {
    match value {
        None | Some(Json::Null) => true,
        Some(Json::String(text)) => text.is_empty(),
        Some(_) => false,
    }
}

/// The model fields the built-in providers need: `api` (one they speak), `id`, `provider` and
/// an absolute http(s) `baseUrl` (optional for anthropic-messages and google-generative-ai); the
/// error names the missing or wrong field.
pub fn check_model(model: &Json) -> Result<(), String> {
    if !model.is_object() {
        return Err("The model must be an object.".into());
    }
    let field = |key: &str| match model.get(key) {
        Some(Json::String(text)) if !text.trim().is_empty() => Ok(text.as_str()),
        Some(Json::String(_)) | None | Some(Json::Null) => Err(format!(
            "The model has no \"{key}\" (the built-in providers need {}).",
            match key {
                "api" => api_names(),
                "id" => "the model name the API expects".into(),
                "provider" => "a provider name such as \"openai\"".into(),
                _ => "the API's base URL, such as https://api.openai.com/v1".into(),
            }
        )),
        Some(_) => Err(format!("The model's \"{key}\" must be a string.")),
    };
    let api = field("api")?;
    if !APIS.contains(&api) {
        return Err(format!("No API provider registered for api: {api}"));
    }
    field("id")?;
    field("provider")?;
    // The Anthropic and Google SDKs have default URLs; the OpenAI one needs the URL.
    let base_url = match field("baseUrl") {
        Err(_)
            if matches!(api, "anthropic-messages" | "google-generative-ai")
                && absent(model.get("baseUrl")) =>
        {
            return Ok(())
        }
        other => other?,
    };
    match url::Url::parse(base_url) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => Ok(()),
        Ok(url) => Err(format!(
            "The model's baseUrl \"{base_url}\" must be an http:// or https:// URL (got scheme \"{}\").",
            url.scheme()
        )),
        Err(e) => Err(format!(
            "The model's baseUrl \"{base_url}\" is not a valid URL ({e})."
        )),
    }
}

/// The `User-Agent`: identity `userAgent` `"short"` → `pi`, `{"custom": X}` → X, else pi-ai's
/// detailed form with libagent in the runtime's place.
pub(crate) fn user_agent(call: &Call) -> String {
    let identity = call.option("identity");
    match identity.and_then(|i| i.get("userAgent")) {
        Some(Json::String(mode)) if mode == "short" => return "pi".into(),
        Some(Json::Object(custom)) => {
            if let Some(Json::String(custom)) = custom.get("custom") {
                return custom.clone();
            }
        }
        _ => {}
    }
    let version = identity
        .and_then(|i| i.get("version"))
        .and_then(Json::as_str)
        .unwrap_or(PI_AI_VERSION);
    format!(
        "pi/{version} ({}; libagent/{}; {})",
        std::env::consts::OS,
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    )
}

/// The pi-ai version the providers reproduce (its default client version).
pub const PI_AI_VERSION: &str = "1.6.0";

/// Provider attribution from `options.identity.attribution` (OpenRouter, NVIDIA NIM, OpenCode).
pub(crate) fn attribution_headers(call: &Call) -> Vec<(String, String)> {
    let Some(attribution) = call
        .option("identity")
        .and_then(|i| i.get("attribution"))
        .filter(|a| a.is_object())
    else {
        return Vec::new();
    };
    let text = |key: &str| str_field(attribution, key).unwrap_or("").to_string();
    let provider = call.model_str("provider");
    let base_url = call.model_str("baseUrl");
    let host = url::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string));
    if provider == "openrouter" || base_url.contains("openrouter.ai") {
        let mut headers = vec![
            ("HTTP-Referer".to_string(), text("url")),
            ("X-OpenRouter-Title".to_string(), text("name")),
        ];
        let categories: Vec<&str> = attribution
            .get("categories")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(Json::as_str)
            .collect();
        if !categories.is_empty() {
            headers.push(("X-OpenRouter-Categories".into(), categories.join(",")));
        }
        return headers;
    }
    if provider == "nvidia" || host.as_deref() == Some("integrate.api.nvidia.com") {
        let name = text("name");
        let mut chars = name.chars();
        let capitalized = chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
        return vec![("X-BILLING-INVOKE-ORIGIN".into(), capitalized)];
    }
    if matches!(provider, "opencode" | "opencode-go") || host.as_deref() == Some("opencode.ai") {
        return vec![("x-opencode-client".into(), text("name"))];
    }
    Vec::new()
}

/// `No API key for provider: <provider>` unless the call has a key or `options.headers` carries
/// one of `auth_headers` with a non-blank value (pi-ai accepts an explicit authorization header
/// instead of a key).
pub(crate) fn require_api_key(call: &Call, auth_headers: &[&str]) -> Result<(), String> {
    if call.api_key.is_some() {
        return Ok(());
    }
    let headers = call.option("headers").and_then(Json::as_object);
    let has_header = headers.is_some_and(|headers| {
        headers.iter().any(|(name, value)| {
            auth_headers.contains(&name.to_ascii_lowercase().as_str())
                && value
                    .as_str()
                    .is_some_and(|v| !v.trim_matches(crate::json::is_js_whitespace).is_empty())
        })
    });
    if has_header {
        Ok(())
    } else {
        Err(format!(
            "No API key for provider: {}",
            call.model_str("provider")
        ))
    }
}
