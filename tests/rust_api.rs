//! The crate as a Rust binding: typed tools, the pull queue (blocking, async, `Stream`), options
//! from JSON and errors by kind.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::agent::{AgentOptions, EventQueue};
use agent::error::ErrorKind;
use agent::event::EventShape;
use agent::host::{parameters_schema, text_result, typed_tool};
use agent::json::{json, Json};
use common::agent_with;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Forecast {
    /// The city.
    city: String,
    /// Days ahead.
    days: Option<u32>,
}

fn tool_call(id: &str, name: &str, arguments: Json) -> Json {
    json!({"content": [{"type": "toolCall", "id": id, "name": name, "arguments": arguments}]})
}

fn text(t: &str) -> Json {
    json!({"content": [{"type": "text", "text": t}]})
}

/// The (city, days) of every call.
type Calls = Arc<Mutex<Vec<(String, Option<u32>)>>>;

fn forecast_tool(seen: Calls) -> agent::host::AgentTool {
    typed_tool(
        "forecast",
        "Weather forecast",
        move |args: Forecast, ctx| {
            let seen = seen.clone();
            async move {
                ctx.update(json!({"progress": 1}));
                seen.lock().unwrap().push((args.city.clone(), args.days));
                if args.city == "Atlantis" {
                    return Err("No weather under the sea".into());
                }
                Ok(text_result(&format!("Sunny in {}", args.city)))
            }
        },
    )
}

#[test]
fn typed_tool_schema_is_derived_from_the_type() {
    let schema = parameters_schema::<Forecast>();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["city"]["type"], "string");
    assert_eq!(schema["properties"]["city"]["description"], "The city.");
    assert_eq!(schema["required"], json!(["city"]));
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    let tool = forecast_tool(Default::default());
    assert_eq!(tool.name(), "forecast");
    assert_eq!(tool.definition["parameters"], schema);
}

#[tokio::test(flavor = "multi_thread")]
async fn typed_tool_decodes_coerced_arguments_and_reports_failures() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = agent_with(
        vec![
            // "3" is coerced to 3 by the schema (SPEC §5.4) before the tool decodes it.
            tool_call("a", "forecast", json!({"city": "Paris", "days": "3"})),
            tool_call("b", "forecast", json!({"city": "Atlantis"})),
            tool_call("c", "forecast", json!({"days": 2})),
            text("done"),
        ],
        vec![forecast_tool(seen.clone())],
        None,
    );
    agent.prompt_text("go").await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("Paris".to_string(), Some(3)),
            ("Atlantis".to_string(), None)
        ]
    );
    let results: Vec<Json> = agent
        .messages()
        .into_iter()
        .filter(|m| m["role"] == "toolResult")
        .collect();
    assert_eq!(results[0]["content"][0]["text"], "Sunny in Paris");
    assert_eq!(results[0]["isError"], false);
    assert_eq!(results[1]["content"][0]["text"], "No weather under the sea");
    assert_eq!(results[1]["isError"], true);
    // Missing `city`: rejected by validation before the tool runs.
    assert_eq!(results[2]["isError"], true);
    assert!(results[2]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("city"));
}

#[tokio::test(flavor = "multi_thread")]
async fn events_stream_yields_every_event_in_order_and_ends_on_shutdown() {
    let agent = agent_with(vec![text("hello")], vec![], None);
    let recorder = common::Recorder::attach(&agent);
    let stream = agent.open_events(64).unwrap().into_stream();
    agent.prompt_text("hi").await.unwrap();
    agent.shutdown("bye");
    let events: Vec<Json> = stream.map(|e| e.to_json(EventShape::Full)).collect().await;
    assert_eq!(events, recorder.events());
    assert_eq!(events.first().unwrap()["type"], "agent_start");
    assert_eq!(events.last().unwrap()["type"], "agent_end");
}

#[test]
fn blocking_queue_reads_time_out_and_close() {
    let agent = agent_with(vec![text("hello")], vec![], None);
    let recorder = common::Recorder::attach(&agent);
    let queue: EventQueue = agent.open_events(1).unwrap();
    let timeout = queue.next_blocking(Some(Duration::ZERO)).unwrap_err();
    assert_eq!(timeout.kind, ErrorKind::Timeout);
    agent
        .start_prompt(
            agent::agent::PromptInput::Text {
                text: "hi".into(),
                images: vec![],
            },
            None,
        )
        .unwrap();
    // Capacity 1: the run waits for each read (backpressure), and nothing is lost.
    let mut types = Vec::new();
    loop {
        let event = queue.next_blocking(Some(Duration::from_secs(30))).unwrap();
        types.push(event.to_json(EventShape::Full));
        if event.type_name() == "agent_end" {
            break;
        }
    }
    assert_eq!(types, recorder.events());
    assert_eq!(types.len(), 11);
    assert_eq!(agent.message_range(0, 10).len(), agent.message_count());
    agent.shutdown("bye");
    let closed = queue.next_blocking(None).unwrap_err();
    assert_eq!(closed.kind, ErrorKind::Closed);
    assert_eq!(
        agent.open_events(4).err().map(|e| e.kind),
        Some(ErrorKind::InvalidState)
    );
}

#[test]
fn options_from_json_name_what_is_wrong() {
    let options = AgentOptions::from_json(json!({
        "initialState": {"systemPrompt": "Be brief.", "thinkingLevel": "low"},
        "toolExecution": "sequential"
    }))
    .unwrap();
    assert_eq!(
        options.initial_state.system_prompt.as_deref(),
        Some("Be brief.")
    );
    assert_eq!(options.settings.tool_execution, "sequential");
    for (bad, text) in [
        (json!([]), "must be a JSON object"),
        (
            json!({"initialState": {"tools": []}}),
            "initialState.tools cannot be JSON",
        ),
        (
            json!({"steeringMode": "most"}),
            "\"steeringMode\" must be one of",
        ),
        (
            json!({"initialState": {"messages": [{}]}}),
            "initialState.messages[0] must be a message",
        ),
        (json!({"colour": 1}), "Unknown option \"colour\""),
    ] {
        let error = AgentOptions::from_json(bad).err().unwrap();
        assert_eq!(error.kind, ErrorKind::InvalidInput);
        assert!(error.message.contains(text), "{}", error.message);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn lean_events_from_the_queue_omit_the_partial() {
    let agent = agent_with(vec![text("hello")], vec![], None);
    let mut stream = agent.open_events(64).unwrap().into_stream();
    agent.prompt_text("hi").await.unwrap();
    let mut updates = 0;
    while let Some(event) = stream.next().await {
        if event.type_name() == "message_update" {
            updates += 1;
            let lean = event.to_json(EventShape::Lean);
            assert!(lean.get("message").is_none());
            assert!(event.to_json(EventShape::Full).get("message").is_some());
        }
        if event.type_name() == "agent_end" {
            break;
        }
    }
    assert!(updates > 0);
}
