//! libagent quickstart in Rust (`cargo run --example quickstart`): the conversation of
//! examples/c/quickstart.c. Two typed tools (list a directory, read a file) are called in
//! parallel by the built-in scripted model; streamed text is printed as it arrives, tool calls
//! and results are shown from the event stream, and a transcript summary ends the run.
//!
//! A real model is a `StreamFn`: a closure receiving the request and pushing assistant stream
//! events into its `StreamSender` from any thread (see `my_model` at the bottom).

use agent::agent::{Agent, AgentOptions, InitialState};
use agent::event::{AgentEvent, EventShape};
use agent::faux::scripted_stream_fn;
use agent::host::{text_result, typed_tool};
use agent::json::json;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;

/// The arguments of both tools: the schema the model sees is derived from this type.
#[derive(Deserialize, JsonSchema)]
struct PathArgs {
    /// A path relative to the working directory.
    path: String,
}

fn tools() -> Vec<agent::host::AgentTool> {
    let list_dir = typed_tool(
        "list_dir",
        "List a directory",
        |args: PathArgs, _ctx| async move {
            let mut names: Vec<String> = std::fs::read_dir(&args.path)
                .map_err(|e| format!("cannot open directory: {e}"))?
                .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                .filter(|name| !name.starts_with('.'))
                .collect();
            names.sort();
            Ok(text_result(&names.join("\n")))
        },
    );
    let read_file = typed_tool(
        "read_file",
        "Read a file",
        |args: PathArgs, _ctx| async move {
            let text = std::fs::read_to_string(&args.path)
                .map_err(|e| format!("cannot open file: {e}"))?;
            let head: Vec<&str> = text.lines().take(6).collect();
            Ok(text_result(&head.join("\n")))
        },
    );
    vec![list_dir, read_file]
}

fn script() -> Vec<agent::json::Json> {
    vec![
        json!({"content": [
            {"type": "text", "text": "Let me look at the project: its files and its README.", "chunks": 6},
            {"type": "toolCall", "id": "call_1", "name": "list_dir", "arguments": {"path": "."}},
            {"type": "toolCall", "id": "call_2", "name": "read_file", "arguments": {"path": "README.md"}, "chunks": 3}
        ]}),
        json!({"content": [{"type": "text", "chunks": 8, "text":
            "This is libagent: a Rust agent runtime with a C ABI. The listing shows its sources, tests and examples; the README explains how to run the demo and the tests."}]}),
    ]
}

/// Prints one event: text deltas as they stream, tool calls and their results.
fn show(event: &AgentEvent) {
    if event.update_type() == Some("text_delta") {
        print!("{}", event.delta().unwrap_or(""));
        return;
    }
    let lean = event.to_json(EventShape::Lean);
    match event.type_name() {
        "tool_execution_start" => {
            println!(
                "  -> {} {}",
                lean["toolName"].as_str().unwrap_or(""),
                lean["args"]
            )
        }
        "tool_execution_end" => {
            let text = lean["result"]["content"][0]["text"].as_str().unwrap_or("");
            let first: String = text.replace('\n', " | ").chars().take(70).collect();
            println!(
                "  <- {}: {first}...",
                lean["toolName"].as_str().unwrap_or("")
            );
        }
        "message_end" if lean["message"]["role"] == "assistant" => println!(),
        _ => {}
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), agent::error::Error> {
    let agent = Agent::new(AgentOptions {
        initial_state: InitialState {
            system_prompt: Some("You are a helpful project guide.".into()),
            model: Some(json!({"id": "scripted", "api": "faux", "provider": "libagent"})),
            tools: tools(),
            ..Default::default()
        },
        stream_fn: Some(scripted_stream_fn(script())), // a real model: Some(my_model())
        ..Default::default()
    })?;

    // Events as a futures::Stream, read by a task of our own.
    let mut events = agent.open_events(256)?.into_stream();
    let printer = tokio::spawn(async move {
        while let Some(event) = events.next().await {
            show(&event);
            if event.type_name() == "agent_end" {
                break;
            }
        }
    });

    println!("> What is this project?");
    agent.prompt_text("What is this project?").await?;
    printer.await.expect("the printer task panicked");
    println!(
        "Transcript: {} messages (system prompt, user, assistant with 2 tool calls, 2 tool results, assistant).",
        agent.message_count()
    );
    Ok(())
}

/// Plugging in a real model: push assistant stream events (SPEC §3) as the response arrives.
#[allow(dead_code)]
fn my_model() -> agent::host::StreamFn {
    std::sync::Arc::new(|_request, sink| {
        std::thread::spawn(move || {
            // e.g. an HTTP client reading the provider's server-sent events:
            let _ = sink.push(json!({"type": "start"}));
            let _ = sink.push(json!({"type": "text_start", "contentIndex": 0}));
            let _ = sink.push(json!({"type": "text_delta", "contentIndex": 0, "delta": "Hello"}));
            let _ = sink.push(json!({"type": "text_end", "contentIndex": 0}));
            let _ = sink.push(json!({"type": "done", "reason": "stop"}));
        });
    })
}
