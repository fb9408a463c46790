//! A catalogue model inside a real `Agent` on the built-in providers: the request follows the
//! catalogue's compat (DeepSeek's `max_tokens` field) and the usage is priced with its cost.
#![cfg(all(feature = "models", feature = "providers", feature = "typed"))]

#[path = "providers/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "providers/mock.rs"]
#[allow(dead_code)]
mod mock;

use agent::json::{json, Json};
use common::{agent_for, chunk, server, sse};

#[tokio::test(flavor = "multi_thread")]
async fn a_catalogue_model_prices_usage_and_shapes_the_request() {
    let mut model = agent::models::find_by_name("deepseek/deepseek-v4-pro").unwrap();
    assert_eq!(model["api"], "openai-completions");
    assert_eq!(model["compat"]["maxTokensField"], "max_tokens");
    let (input_rate, output_rate) = (
        model["cost"]["input"].as_f64().unwrap(),
        model["cost"]["output"].as_f64().unwrap(),
    );
    assert!(input_rate > 0.0 && output_rate > 0.0);

    let usage = json!({"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500});
    let last = format!(
        "data: {}\n\n",
        agent::json::to_string(&json!({"id": "c1", "model": "m", "choices": [{"index": 0,
            "delta": {}, "finish_reason": "stop"}], "usage": usage}))
    );
    let mock = server(vec![sse(vec![
        chunk(json!({"role": "assistant", "content": "Hi."}), None),
        last,
        "data: [DONE]\n\n".into(),
    ])])
    .await;
    model["baseUrl"] = Json::String(format!("http://127.0.0.1:{}", mock.port));
    let agent = agent_for(model);
    agent.prompt_text("hello").await.unwrap();

    let answer = agent.messages().last().unwrap().clone();
    assert_eq!(answer["content"][0]["text"], "Hi.");
    let cost = &answer["usage"]["cost"];
    assert_eq!(cost["input"], json!(input_rate / 1_000_000.0 * 1000.0));
    assert_eq!(cost["output"], json!(output_rate / 1_000_000.0 * 500.0));
    let requests = mock.requests.lock().unwrap().clone();
    let body = &requests[0]["request"]["body"];
    assert_eq!(requests[0]["request"]["path"], "/chat/completions");
    assert_eq!(body["model"], "deepseek-v4-pro");
    assert!(body.get("max_tokens").is_some(), "{body}");
    assert!(body.get("max_completion_tokens").is_none(), "{body}");
}
