//! The coding tool pack: pi-coding-agent 1.6.0's `read`, `write`, `edit`, `ls`, `find`, `grep`
//! and `bash`, as ordinary agent tools working on one root directory.
//!
//! Names, schemas, descriptions, result texts, notices and error messages follow the reference
//! (the conformance kit in `shared/coding` pins them). Beyond the reference, every path the file
//! tools use stays inside the root (opened relative to a root directory handle, so paths that
//! lead out of it, through `..` or symbolic links, are refused without a check-then-use race),
//! special files (pipes, sockets, devices) are refused without blocking, files with several hard
//! links can be refused (`refuse_hard_links`: a hard link from outside is invisible to path
//! checks), mutating tools can ask the host for consent first, and writes are atomic. `bash` is
//! not confined: its commands run with the host process's rights, anywhere the process can read
//! and write; it is off unless enabled, consent is its only gate, and it has a default timeout.
//!
//! ```
//! use agent::agent::{Agent, AgentOptions, InitialState};
//! use agent::coding::{coding_tools, CodingOptions};
//!
//! let root = std::env::temp_dir();
//! let tools = coding_tools(root.to_str().unwrap(), CodingOptions::default()).unwrap();
//! let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
//! assert_eq!(names, ["read", "write", "edit", "ls", "find", "grep"]); // bash: opt-in
//! let agent = Agent::new(AgentOptions {
//!     initial_state: InitialState { tools, ..Default::default() },
//!     ..Default::default()
//! });
//! # drop(agent);
//! ```

mod bash;
mod definitions;
mod diff;
mod edit;
mod find;
mod grep;
mod ls;
mod open;
mod read;
mod root;
mod truncate;
mod write;

use std::sync::Arc;

use crate::host::{AbortSignal, AgentTool, FnTool, HostFuture, ToolInvocation, OPERATION_ABORTED};
use crate::json::Json;

pub use root::Root;

/// The seven tools, in the reference's order.
pub const TOOL_NAMES: [&str; 7] = ["read", "write", "edit", "ls", "find", "grep", "bash"];

/// What a consent hook is asked: a mutating call (`write`, `edit` or `bash`) about to run.
#[derive(Debug, Clone)]
pub struct ConsentRequest {
    pub tool_call_id: String,
    pub tool: String,
    /// The validated arguments the tool will run with.
    pub args: Json,
    /// The run's abort signal (a host that asks a user can stop asking once it fires).
    pub signal: AbortSignal,
}

/// The host's answer: `Ok(())` lets the call run, `Err(reason)` refuses it (the model sees the
/// reason as the tool's error; an empty reason gets a default sentence).
pub type ConsentFn = Arc<dyn Fn(ConsentRequest) -> HostFuture<Result<(), String>> + Send + Sync>;

/// How the pack is built.
#[derive(Clone)]
pub struct CodingOptions {
    /// Which tools to create, in this order (default: the six without `bash`, or all seven when
    /// `bash` is enabled).
    pub tools: Option<Vec<String>>,
    /// `bash` is off unless the host enables it.
    pub bash: bool,
    /// The timeout of a bash command that gives none (`None`: no default timeout).
    pub bash_timeout_ms: Option<u64>,
    /// Asked before `write`, `edit` and `bash` change anything.
    pub consent: Option<ConsentFn>,
    /// The largest file `edit` loads (it holds the file in memory).
    pub max_edit_bytes: u64,
    /// `read`, `edit` and `grep` refuse files with more than one hard link (one may be outside
    /// the root, which no path check can see); `grep` skips them in a tree. Off by default.
    pub refuse_hard_links: bool,
}

/// The default bash timeout: two minutes.
pub(crate) const DEFAULT_BASH_TIMEOUT_MS: u64 = 120_000;
/// The default `max_edit_bytes`: 64 MiB.
pub(crate) const DEFAULT_MAX_EDIT_BYTES: u64 = 64 << 20;

impl Default for CodingOptions {
    fn default() -> Self {
        Self {
            tools: None,
            bash: false,
            bash_timeout_ms: Some(DEFAULT_BASH_TIMEOUT_MS),
            consent: None,
            max_edit_bytes: DEFAULT_MAX_EDIT_BYTES,
            refuse_hard_links: false,
        }
    }
}

impl CodingOptions {
    /// Options from JSON: `{"tools"?: [names], "bash"?: bool, "bashTimeoutMs"?: number|null,
    /// "maxEditBytes"?: number, "refuseHardLinks"?: bool}`.
    pub fn from_json(value: &Json) -> Result<Self, String> {
        let mut options = CodingOptions::default();
        let Some(object) = value.as_object() else {
            return Err("The coding options must be a JSON object.".into());
        };
        for (key, value) in object {
            match key.as_str() {
                "tools" => {
                    let names = value
                        .as_array()
                        .and_then(|items| {
                            items
                                .iter()
                                .map(|item| item.as_str().map(str::to_string))
                                .collect::<Option<Vec<_>>>()
                        })
                        .ok_or("The coding option \"tools\" must be an array of tool names.")?;
                    options.tools = Some(names);
                }
                "bash" => {
                    options.bash = value
                        .as_bool()
                        .ok_or("The coding option \"bash\" must be true or false.")?;
                }
                "bashTimeoutMs" => {
                    options.bash_timeout_ms = match value {
                        Json::Null => None,
                        _ => Some(
                            value
                                .as_u64()
                                .filter(|ms| *ms > 0)
                                .ok_or("The coding option \"bashTimeoutMs\" must be a positive whole number of milliseconds or null.")?,
                        ),
                    };
                }
                "maxEditBytes" => {
                    options.max_edit_bytes = value
                        .as_u64()
                        .filter(|n| *n > 0)
                        .ok_or("The coding option \"maxEditBytes\" must be a positive whole number of bytes.")?;
                }
                "refuseHardLinks" => {
                    options.refuse_hard_links = value
                        .as_bool()
                        .ok_or("The coding option \"refuseHardLinks\" must be true or false.")?;
                }
                other => return Err(format!("Unknown coding option \"{other}\".")),
            }
        }
        Ok(options)
    }
}

/// Shared by the tools of one pack.
struct Pack {
    root: Root,
    options: CodingOptions,
    /// `write` and `edit` run one at a time, so two changes of one file never interleave (the
    /// reference queues them per file).
    mutations: Arc<tokio::sync::Mutex<()>>,
}

/// Creates the pack's tools for `root` (an existing directory).
pub fn coding_tools(root: &str, options: CodingOptions) -> Result<Vec<AgentTool>, String> {
    let names: Vec<String> = match &options.tools {
        Some(names) => names.clone(),
        None => TOOL_NAMES
            .iter()
            .filter(|name| options.bash || **name != "bash")
            .map(|name| name.to_string())
            .collect(),
    };
    for (index, name) in names.iter().enumerate() {
        if !TOOL_NAMES.contains(&name.as_str()) {
            return Err(format!(
                "Unknown coding tool \"{name}\" (the pack has read, write, edit, ls, find, grep and bash)."
            ));
        }
        if names[..index].contains(name) {
            return Err(format!("The coding tool \"{name}\" is listed twice."));
        }
        if name == "bash" && !options.bash {
            return Err("The bash tool is disabled: enable it with the \"bash\" option.".into());
        }
    }
    let pack = Arc::new(Pack {
        root: Root::open(root)?.refusing_hard_links(options.refuse_hard_links),
        options,
        mutations: Arc::new(tokio::sync::Mutex::new(())),
    });
    Ok(names.iter().map(|name| make_tool(&pack, name)).collect())
}

fn make_tool(pack: &Arc<Pack>, name: &str) -> AgentTool {
    let definition = definitions::definition(name);
    let pack = pack.clone();
    let tool = name.to_string();
    let execute = move |invocation: ToolInvocation| -> HostFuture<Result<Option<Json>, String>> {
        let pack = pack.clone();
        let tool = tool.clone();
        Box::pin(async move { pack.run(&tool, invocation).await.map(Some) })
    };
    if name == "edit" {
        FnTool::with_prepare(definition, execute, |args| {
            Ok(edit::prepare_arguments(args))
        })
    } else {
        FnTool::tool(definition, execute)
    }
}

impl Pack {
    async fn run(self: Arc<Self>, tool: &str, invocation: ToolInvocation) -> Result<Json, String> {
        let ToolInvocation {
            tool_call_id,
            args,
            signal,
            on_update,
        } = invocation;
        if signal.is_aborted() {
            return Err(OPERATION_ABORTED.into());
        }
        if matches!(tool, "write" | "edit" | "bash") {
            self.ask_consent(&tool_call_id, tool, &args, &signal)
                .await?;
        }
        match tool {
            "bash" => {
                let timeout = self.options.bash_timeout_ms;
                bash::run(&self.root, &args, &signal, timeout, &on_update).await
            }
            _ => {
                // Held by the work itself: an abort answers at once, the next change still waits.
                let turn = match tool {
                    "write" | "edit" => Some(self.mutations.clone().lock_owned().await),
                    _ => None,
                };
                let pack = self.clone();
                let tool = tool.to_string();
                let worker_signal = signal.clone();
                blocking(&signal, move || {
                    let result = pack.run_blocking(&tool, &args, &worker_signal);
                    drop(turn);
                    result
                })
                .await
            }
        }
    }

    fn run_blocking(&self, tool: &str, args: &Json, signal: &AbortSignal) -> Result<Json, String> {
        match tool {
            "read" => read::run(&self.root, args, signal),
            "write" => write::run(&self.root, args, signal),
            "edit" => edit::run(&self.root, args, signal, self.options.max_edit_bytes),
            "ls" => ls::run(&self.root, args, signal),
            "find" => find::run(&self.root, args, signal),
            "grep" => grep::run(&self.root, args, signal),
            other => Err(format!("Tool {other} not found")),
        }
    }

    async fn ask_consent(
        &self,
        tool_call_id: &str,
        tool: &str,
        args: &Json,
        signal: &AbortSignal,
    ) -> Result<(), String> {
        let Some(consent) = &self.options.consent else {
            return Ok(());
        };
        let answer = consent(ConsentRequest {
            tool_call_id: tool_call_id.to_string(),
            tool: tool.to_string(),
            args: args.clone(),
            signal: signal.clone(),
        })
        .await;
        answer.map_err(|reason| {
            if reason.is_empty() {
                format!("The host did not allow this {tool} call.")
            } else {
                reason
            }
        })
    }
}

/// Runs file work off the runtime thread; an abort answers at once with `Operation aborted`
/// (the work itself checks the signal and stops early).
async fn blocking<T: Send + 'static>(
    signal: &AbortSignal,
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let task = tokio::task::spawn_blocking(work);
    tokio::select! {
        joined = task => joined.unwrap_or_else(|error| Err(format!("The tool failed: {error}"))),
        _ = signal.aborted() => Err(OPERATION_ABORTED.into()),
    }
}

/// `Err("Operation aborted")` once the signal aborted: called between steps of long work.
fn check_abort(signal: &AbortSignal) -> Result<(), String> {
    if signal.is_aborted() {
        Err(OPERATION_ABORTED.into())
    } else {
        Ok(())
    }
}

/// An optional number argument.
fn number(args: &Json, key: &str) -> Option<f64> {
    args.get(key).and_then(Json::as_f64)
}

/// An optional string argument.
fn string<'a>(args: &'a Json, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Json::as_str)
}

/// `find`'s and `grep`'s `pattern` and search `path` (the root when absent or empty).
fn search_args(args: &Json) -> (&str, &str) {
    let pattern = string(args, "pattern").unwrap_or_default();
    let search = string(args, "path").filter(|p| !p.is_empty());
    (pattern, search.unwrap_or("."))
}

/// A result with one text block and, when there are any, details.
fn text_result(text: &str, details: Option<Json>) -> Json {
    let mut result = serde_json::Map::new();
    result.insert(
        "content".into(),
        serde_json::json!([{"type": "text", "text": text}]),
    );
    if let Some(details) = details {
        result.insert("details".into(), details);
    }
    Json::Object(result)
}

/// A limit argument as the reference reads it: `max(1, floor(limit ?? default))`.
fn limit_arg(args: &Json, default: usize) -> usize {
    match number(args, "limit") {
        Some(limit) if limit.is_finite() => limit.floor().max(1.0) as usize,
        _ => default,
    }
}

/// The order results are listed in: in each directory its files, then its subdirectories, each
/// by name (deterministic, and close to the shallow-first order of fd and ripgrep, so a limit
/// keeps the same results).
fn files_first(a: &std::path::Path, b: &std::path::Path) -> std::cmp::Ordering {
    (is_dir(a), a).cmp(&(is_dir(b), b))
}

type EntryKinds = (
    std::path::PathBuf,
    std::collections::HashMap<std::ffi::OsString, bool>,
);

thread_local! {
    /// The kinds of the entries of the directory sorted last (see `is_dir`).
    static KINDS: std::cell::RefCell<EntryKinds> = Default::default();
}

/// Forgets the directory kinds read by an earlier walk (called before each walk).
fn fresh_order() {
    KINDS.with(|kinds| *kinds.borrow_mut() = Default::default());
}

/// Whether `path` is a directory (not following links). The kinds of a directory's entries are
/// read once per directory (the sort compares siblings only), not once per comparison.
fn is_dir(path: &std::path::Path) -> bool {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return false;
    };
    KINDS.with(|kinds| {
        let mut kinds = kinds.borrow_mut();
        if kinds.0 != parent {
            kinds.0 = parent.to_path_buf();
            kinds.1 = std::fs::read_dir(parent)
                .map(|entries| {
                    entries
                        .flatten()
                        .map(|e| (e.file_name(), e.file_type().is_ok_and(|t| t.is_dir())))
                        .collect()
                })
                .unwrap_or_default();
        }
        kinds.1.get(name).copied().unwrap_or(false)
    })
}
