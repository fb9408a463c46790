//! Provider conformance runner (`../shared/providers/README.md`): runs each fixture through
//! libagent's built-in providers over loopback HTTP against the kit's mock server and writes the
//! normalized trace.
//!
//!     provider-runner FIXTURES_DIR OUT_DIR     OUT_DIR/<name>.jsonl per FIXTURES_DIR/<name>.json
//!     provider-runner --one FIXTURE.json       one trace on stdout
//!
//! The stream is consumed the way the agent consumes it (`agent::stream`), so each event's
//! partial is the one an agent's listeners see.

mod mock;

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent::host::{AbortSignal, StreamRequest};
use agent::json::{Json, JsonMap};
use agent::message::Message;
use agent::stream::{channel, StreamOutput};
use mock::{End, Mock, Response};

const FIXTURE_TIMEOUT: Duration = Duration::from_secs(20);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("the mock server's runtime");
    match args.as_slice() {
        [flag, fixture] if flag == "--one" => match run_file(&server, Path::new(fixture)) {
            Ok(lines) => print!("{lines}"),
            Err(error) => {
                eprintln!("FAIL {fixture}: {error}");
                std::process::exit(1);
            }
        },
        [fixtures, out] => {
            let failed = run_dir(&server, Path::new(fixtures), Path::new(out));
            server.shutdown_background();
            std::process::exit(i32::from(failed));
        }
        _ => {
            eprintln!("usage: provider-runner FIXTURES_DIR OUT_DIR | --one FIXTURE.json");
            std::process::exit(2);
        }
    }
}

/// Runs every `*.json` of `dir` in name order; true if any failed.
fn run_dir(server: &tokio::runtime::Runtime, dir: &Path, out: &Path) -> bool {
    std::fs::create_dir_all(out).expect("the output directory");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        // An empty or partly copied fixtures directory must not pass as a run of nothing.
        eprintln!(
            "provider-runner: no fixtures (*.json) in {}; give a directory that holds some.",
            dir.display()
        );
        std::process::exit(2);
    }
    let mut failed = false;
    for file in files {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        match run_file(server, &file) {
            Ok(lines) => std::fs::write(out.join(format!("{name}.jsonl")), lines).expect("write"),
            Err(error) => {
                eprintln!("FAIL {name}: {error}");
                failed = true;
            }
        }
    }
    failed
}

/// A checked fixture.
struct Fixture {
    model: Json,
    context: Json,
    options: Json,
    responses: Vec<Response>,
    abort_after: Option<u64>,
}

fn run_file(server: &tokio::runtime::Runtime, file: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let json = agent::json::parse(&text)?;
    let fixture = check(&json)?;
    let mock = server
        .block_on(Mock::start(fixture.responses.clone()))
        .map_err(|e| format!("mock server: {e}"))?;
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let requests = mock.requests.clone();
    let port = mock.port;
    std::thread::spawn(move || {
        let _ = done_tx.send(run_call(&fixture, port));
    });
    let events = done_rx
        .recv_timeout(FIXTURE_TIMEOUT)
        .map_err(|_| "did not finish within 20 s".to_string())?;
    let mut out = String::new();
    for request in requests.lock().unwrap().iter() {
        out.push_str(&line(request.clone()));
    }
    for event in events {
        out.push_str(&line(event));
    }
    Ok(out)
}

/// Calls the provider and consumes its stream; returns the event, throws and result lines.
fn run_call(fixture: &Fixture, port: u16) -> Vec<Json> {
    let mut model = fixture.model.clone();
    if let Some(Json::String(url)) = model.get_mut("baseUrl") {
        *url = url.replace("{{BASE_URL}}", &format!("http://127.0.0.1:{port}"));
    }
    let messages = fixture
        .context
        .get("messages")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    let signal = AbortSignal::new();
    if fixture.abort_after == Some(0) {
        signal.abort();
    }
    let (sender, mut receiver) = channel(&model);
    let request = StreamRequest {
        model: model.into(),
        messages: std::sync::Arc::new(messages.into_iter().map(Message::new).collect()),
        options: fixture.options.clone(),
        signal: signal.clone(),
        text_cache: None,
    };
    agent::providers::stream_simple(request, sender);
    let mut lines = Vec::new();
    let mut events = 0u64;
    agent::runtime::handle().block_on(async {
        loop {
            let event = match receiver.next().await {
                StreamOutput::Ignored => continue,
                StreamOutput::FunctionFailed(message) => {
                    lines.push(object([("throws", Json::String(message))]));
                    return;
                }
                StreamOutput::Start { partial } => {
                    object([("type", "start".into()), ("partial", partial.to_json())])
                }
                StreamOutput::Update { event } => {
                    let partial = receiver.partial().snapshot();
                    let mut json = event.to_json(&partial);
                    if let Some(map) = json.as_object_mut() {
                        map.insert("partial".into(), partial.to_json());
                    }
                    json
                }
                StreamOutput::Final { message, .. } => {
                    let reason = message.get("stopReason").cloned().unwrap_or(Json::Null);
                    let failed = matches!(reason.as_str(), Some("error" | "aborted"));
                    let (kind, key) = if failed {
                        ("error", "error")
                    } else {
                        ("done", "message")
                    };
                    let event = object([
                        ("type", kind.into()),
                        ("reason", reason),
                        (key, message.clone()),
                    ]);
                    lines.push(object([("event", event)]));
                    lines.push(object([("result", message)]));
                    return;
                }
            };
            lines.push(object([("event", event)]));
            events += 1;
            if fixture.abort_after == Some(events) {
                signal.abort();
            }
        }
    });
    lines
}

fn object<const N: usize>(entries: [(&str, Json); N]) -> Json {
    agent::json::object(entries)
}

/// One normalized trace line (README §5): keys sorted, `timestamp` numbers 0, `durationMs`
/// `"<ms>"`, compact.
fn line(value: Json) -> String {
    let mut text = agent::json::to_string(&normalize(value, None));
    text.push('\n');
    text
}

fn normalize(value: Json, key: Option<&str>) -> Json {
    match (key, value) {
        (Some("timestamp"), Json::Number(_)) => Json::from(0),
        (Some("durationMs"), _) => Json::String("<ms>".into()),
        (_, Json::Object(map)) => {
            let mut entries: Vec<(String, Json)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let map: JsonMap = entries
                .into_iter()
                .map(|(k, v)| {
                    let v = normalize(v, Some(&k));
                    (k, v)
                })
                .collect();
            Json::Object(map)
        }
        (_, Json::Array(items)) => {
            Json::Array(items.into_iter().map(|v| normalize(v, None)).collect())
        }
        (_, value) => value,
    }
}

// ---------------------------------------------------------------------------------------------
// Fixture checking (README §2): unknown fields and wrong types are errors.
// ---------------------------------------------------------------------------------------------

fn check(json: &Json) -> Result<Fixture, String> {
    let top = json.as_object().ok_or("the fixture must be an object")?;
    only(
        top,
        &[
            "description",
            "comment",
            "request",
            "responses",
            "abortAfterEvents",
        ],
        "fixture",
    )?;
    let request = top
        .get("request")
        .and_then(Json::as_object)
        .ok_or("`request` must be an object")?;
    only(request, &["model", "context", "options"], "request")?;
    let model = request
        .get("model")
        .filter(|m| m.is_object())
        .ok_or("`request.model` must be an object")?;
    for field in ["id", "api", "provider", "baseUrl"] {
        if !model.get(field).is_some_and(Json::is_string) {
            return Err(format!("`request.model.{field}` must be a string"));
        }
    }
    let context = request
        .get("context")
        .filter(|c| c.is_object())
        .ok_or("`request.context` must be an object")?;
    only(
        context.as_object().unwrap(),
        &["messages"],
        "request.context",
    )?;
    if !context.get("messages").is_some_and(Json::is_array) {
        return Err("`request.context.messages` must be an array".into());
    }
    let options = match request.get("options") {
        None => Json::Object(JsonMap::new()),
        Some(o @ Json::Object(map)) => {
            if map.contains_key("signal") {
                return Err("`request.options` must not contain `signal`".into());
            }
            o.clone()
        }
        Some(_) => return Err("`request.options` must be an object".into()),
    };
    let responses = top
        .get("responses")
        .and_then(Json::as_array)
        .ok_or("`responses` must be an array")?
        .iter()
        .enumerate()
        .map(|(i, r)| check_response(r).map_err(|e| format!("responses[{i}]: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let abort_after = match top.get("abortAfterEvents") {
        None => None,
        Some(n) => Some(
            n.as_u64()
                .ok_or("`abortAfterEvents` must be an integer >= 0")?,
        ),
    };
    Ok(Fixture {
        model: model.clone(),
        context: context.clone(),
        options,
        responses,
        abort_after,
    })
}

fn only(map: &JsonMap, allowed: &[&str], what: &str) -> Result<(), String> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(format!("unknown field `{key}` in {what}")),
        None => Ok(()),
    }
}

fn check_response(json: &Json) -> Result<Response, String> {
    let map = json.as_object().ok_or("must be an object")?;
    only(
        map,
        &[
            "comment",
            "status",
            "headers",
            "body",
            "chunks",
            "splitAtBytes",
            "end",
            "disconnectAfterBytes",
            "noHeaders",
        ],
        "response",
    )?;
    let status = match map.get("status") {
        None => 200,
        Some(s) => s
            .as_u64()
            .filter(|s| (100..=599).contains(s))
            .ok_or("`status` must be an integer 100-599")? as u16,
    };
    let mut headers = Vec::new();
    if let Some(h) = map.get("headers") {
        for (name, value) in h.as_object().ok_or("`headers` must be an object")? {
            let value = value.as_str().ok_or("header values must be strings")?;
            headers.push((name.clone(), value.to_string()));
        }
    }
    let no_headers = match map.get("noHeaders") {
        None => false,
        Some(b) => b.as_bool().ok_or("`noHeaders` must be a boolean")?,
    };
    let mut end = match map.get("end").map(|e| e.as_str()) {
        None => End::Normal,
        Some(Some("normal")) => End::Normal,
        Some(Some("disconnect")) => End::Disconnect,
        Some(Some("stall")) => End::Stall,
        Some(_) => return Err("`end` must be normal, disconnect or stall".into()),
    };
    let body = match map.get("body") {
        None => None,
        Some(b) => Some(
            b.as_str()
                .ok_or("`body` must be a string")?
                .as_bytes()
                .to_vec(),
        ),
    };
    let mut pieces = match (map.get("chunks"), &body) {
        (Some(_), Some(_)) => return Err("`chunks` and `body` exclude each other".into()),
        (Some(chunks), None) => chunks
            .as_array()
            .ok_or("`chunks` must be an array of strings")?
            .iter()
            .map(|c| {
                c.as_str()
                    .map(|s| s.as_bytes().to_vec())
                    .ok_or("`chunks` must be an array of strings")
            })
            .collect::<Result<Vec<_>, _>>()?,
        (None, Some(body)) => vec![body.clone()],
        (None, None) => vec![Vec::new()],
    };
    if let Some(cuts) = map.get("splitAtBytes") {
        let body = body.as_ref().ok_or("`splitAtBytes` needs `body`")?;
        let cuts = cuts.as_array().ok_or("`splitAtBytes` must be an array")?;
        let mut previous = 0usize;
        pieces = Vec::new();
        for cut in cuts {
            let cut = cut.as_u64().ok_or("`splitAtBytes` must hold integers")? as usize;
            if cut <= previous || cut > body.len() {
                return Err(
                    "`splitAtBytes` must be strictly increasing offsets into the body".into(),
                );
            }
            pieces.push(body[previous..cut].to_vec());
            previous = cut;
        }
        pieces.push(body[previous..].to_vec());
    }
    if let Some(limit) = map.get("disconnectAfterBytes") {
        let mut left = limit
            .as_u64()
            .ok_or("`disconnectAfterBytes` must be an integer >= 0")?
            as usize;
        pieces = pieces
            .into_iter()
            .map(|p| {
                let keep = p.len().min(left);
                left -= keep;
                p[..keep].to_vec()
            })
            .collect();
        end = End::Disconnect;
    }
    if no_headers && end == End::Normal {
        return Err("`noHeaders` needs `end` disconnect or stall".into());
    }
    Ok(Response {
        status,
        headers,
        pieces,
        end,
        no_headers,
    })
}
