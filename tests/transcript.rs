//! SPEC §4 (system-prompt replay, tool declarations, tool-state diffs): checklist items 70–91
//! and the worked examples of §4.2–§4.8.

use agent::json::{json, now_ms, parse, to_string, Json};
use agent::transcript::*;

fn p(text: &str) -> Json {
    parse(text).expect("test JSON must parse")
}

fn s(value: &Json) -> String {
    to_string(value)
}

fn keys(value: &Json) -> Vec<String> {
    value
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// An executable tool definition (declaration fields plus runtime-only fields).
fn def(name: &str, description: &str) -> Json {
    json!({"name": name, "label": name.to_uppercase(), "description": description,
        "parameters": {"type": "object"}, "executionMode": "parallel", "replay": "safe"})
}

fn decl(name: &str, description: &str) -> Json {
    json!({"name": name, "description": description, "parameters": {"type": "object"}})
}

fn read() -> Json {
    decl("read", "read tool")
}

fn names(tools: &[Json]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("?").to_string())
        .collect()
}

fn sys_tools(added: &[Json], removed: &[&str], ts: i64) -> Json {
    let mut m = json!({"role": "system", "content": "", "timestamp": ts});
    let map = m.as_object_mut().expect("object");
    if !added.is_empty() {
        map.insert("toolsAdded".into(), Json::Array(added.to_vec()));
    }
    if !removed.is_empty() {
        let refs = removed.iter().map(|n| json!({"name": n})).collect();
        map.insert("toolsRemoved".into(), Json::Array(refs));
    }
    m
}

/// The §4.5 worked example transcript.
fn worked_example() -> Vec<Json> {
    let v = p(r#"[
      { "role": "system", "content": "Base prompt",
        "sections": { "skills": "<skills>A</skills>", "env": "<env>1</env>" },
        "toolsAdded": [ { "name": "read", "description": "read tool", "parameters": { "type": "object" } } ],
        "timestamp": 10 },
      { "role": "user", "content": "hi", "timestamp": 11 },
      { "role": "system",
        "content": [ { "type": "text", "text": "Extra 1" }, { "type": "image", "data": "x", "mimeType": "image/png" },
                     { "type": "text", "text": "Extra 2" } ],
        "sections": { "skills": "<skills>B</skills>", "env": null, "zed": "<z/>" },
        "toolsAdded": [ { "name": "write", "description": "write tool", "parameters": { "type": "object" } } ],
        "toolsRemoved": [ { "name": "read" } ], "timestamp": 12 },
      { "role": "system", "content": "", "sections": { "env": "<env>2</env>" },
        "toolsAdded": [ { "name": "read", "description": "read tool", "parameters": { "type": "object" } } ],
        "timestamp": 13 }
    ]"#);
    v.as_array().cloned().unwrap_or_default()
}

// ---------------------------------------------------------------- §4.1 contentText

#[test]
fn content_text_string_and_blocks() {
    assert_eq!(content_text(&json!("abc"), "\n"), "abc");
    let blocks = json!([{"type": "text", "text": "a"}, {"type": "image", "data": "x"},
        {"type": "text", "text": "b"}]);
    assert_eq!(content_text(&blocks, "\n"), "a\nb");
    assert_eq!(content_text(&blocks, " | "), "a | b");
    assert_eq!(content_text(&json!([]), "\n"), "");
    // Malformed content never panics.
    assert_eq!(content_text(&json!(null), "\n"), "");
    assert_eq!(content_text(&json!({"text": "x"}), "\n"), "");
    assert_eq!(content_text(&json!([1, null, {"type": "text"}]), "\n"), "");
}

// ---------------------------------------------------------------- §4.2

#[test]
fn c070_initial_system_message_absent_without_prompt_and_tools() {
    assert_eq!(create_initial_system_message(None, &[]), None);
    assert_eq!(create_initial_system_message(Some(""), &[]), None);
}

#[test]
fn c071_initial_system_message_timestamp_zero_and_no_tools_added_without_tools() {
    let m = create_initial_system_message(Some("Base"), &[]).expect("message");
    assert_eq!(s(&m), r#"{"role":"system","content":"Base","timestamp":0}"#);
}

#[test]
fn initial_system_message_declares_tools_in_order() {
    let m = create_initial_system_message(
        Some("Base"),
        &[def("read", "read tool"), def("write", "write tool")],
    )
    .expect("message");
    assert_eq!(
        s(&m),
        r#"{"role":"system","content":"Base","toolsAdded":[{"name":"read","description":"read tool","parameters":{"type":"object"}},{"name":"write","description":"write tool","parameters":{"type":"object"}}],"timestamp":0}"#
    );
    let m = create_initial_system_message(None, &[read()]).expect("message");
    assert_eq!(
        s(&m),
        r#"{"role":"system","content":"","toolsAdded":[{"name":"read","description":"read tool","parameters":{"type":"object"}}],"timestamp":0}"#
    );
}

// ---------------------------------------------------------------- §4.3

#[test]
fn c072_current_tools_applies_removals_before_additions() {
    let a = decl("A", "a");
    let b = decl("B", "b");
    let messages = vec![
        sys_tools(&[a.clone(), b.clone()], &[], 1),
        sys_tools(std::slice::from_ref(&a), &["A"], 2),
    ];
    let tools = get_current_tools(&messages);
    assert_eq!(names(&tools), ["B", "A"]);
    // A removal in a later message removes it.
    let messages = vec![sys_tools(&[a, b], &[], 1), sys_tools(&[], &["A"], 2)];
    assert_eq!(names(&get_current_tools(&messages)), ["B"]);
}

#[test]
fn c073_redefinition_keeps_position_and_readd_moves_to_end() {
    let a2 = decl("A", "a changed");
    let messages = vec![
        sys_tools(&[decl("A", "a"), decl("B", "b")], &[], 1),
        sys_tools(std::slice::from_ref(&a2), &[], 2),
    ];
    let tools = get_current_tools(&messages);
    assert_eq!(names(&tools), ["A", "B"]);
    assert_eq!(tools[0], a2);
    let messages = vec![
        sys_tools(&[decl("A", "a"), decl("B", "b")], &[], 1),
        sys_tools(&[], &["A"], 2),
        sys_tools(&[decl("A", "a")], &[], 3),
    ];
    assert_eq!(names(&get_current_tools(&messages)), ["B", "A"]);
}

#[test]
fn current_tools_ignore_non_system_and_malformed_entries() {
    let messages = vec![
        json!({"role": "user", "toolsAdded": [decl("U", "u")], "timestamp": 1}),
        json!({"role": "notification", "toolsAdded": [decl("N", "n")]}),
        json!({"role": "system", "content": "", "toolsAdded": [1, "x", {"description": "no name"},
            {"name": 5}, decl("ok", "ok")], "toolsRemoved": [null, {"name": 3}, "ok"], "timestamp": 2}),
        json!({"role": "system", "toolsAdded": {"name": "obj"}, "toolsRemoved": "ok"}),
        json!({"toolsAdded": [decl("norole", "")]}),
        json!(42),
    ];
    assert_eq!(names(&get_current_tools(&messages)), ["ok"]);
}

// ---------------------------------------------------------------- §4.4 / §4.5

#[test]
fn c074_current_system_message_absent_without_system_message() {
    assert_eq!(get_current_system_message(&[]), None);
    let messages = vec![
        json!({"role": "user", "content": "hi", "timestamp": 1}),
        json!({"role": "notification", "text": "x", "timestamp": 2}),
    ];
    assert_eq!(get_current_system_message(&messages), None);
}

#[test]
fn worked_example_current_system_message_is_exact() {
    let m = get_current_system_message(&worked_example()).expect("message");
    assert_eq!(
        s(&m),
        r#"{"role":"system","content":"Base prompt\n\nExtra 1\nExtra 2","sections":{"skills":"<skills>B</skills>","zed":"<z/>","env":"<env>2</env>"},"toolsAdded":[{"name":"write","description":"write tool","parameters":{"type":"object"}},{"name":"read","description":"read tool","parameters":{"type":"object"}}],"timestamp":10}"#
    );
}

#[test]
fn worked_example_current_system_prompt_is_exact() {
    assert_eq!(
        get_current_system_prompt(&worked_example()),
        "Base prompt\n\nExtra 1\nExtra 2\n\n<skills>B</skills>\n\n<z/>\n\n<env>2</env>"
    );
}

#[test]
fn c075_contents_joined_by_blank_line_blocks_by_newline() {
    let messages = vec![
        json!({"role": "system", "content": "A", "timestamp": 1}),
        json!({"role": "system", "content": "", "timestamp": 2}),
        json!({"role": "system", "content": [{"type": "text", "text": "B1"},
            {"type": "image", "data": "x", "mimeType": "image/png"}, {"type": "text", "text": "B2"}],
            "timestamp": 3}),
        json!({"role": "system", "content": [], "timestamp": 4}),
        json!({"role": "system", "content": "C", "timestamp": 5}),
    ];
    let m = get_current_system_message(&messages).expect("message");
    assert_eq!(m["content"], json!("A\n\nB1\nB2\n\nC"));
}

#[test]
fn c076_current_system_message_uses_first_timestamp() {
    let messages = vec![
        json!({"role": "user", "content": "u", "timestamp": 1}),
        json!({"role": "system", "content": "A", "timestamp": 7}),
        json!({"role": "system", "content": "B", "timestamp": 9}),
    ];
    let m = get_current_system_message(&messages).expect("message");
    assert_eq!(m["timestamp"], json!(7));
}

#[test]
fn c077_null_section_deletes_and_reset_moves_to_end() {
    let messages = vec![
        json!({"role": "system", "content": "", "sections": {"a": "A", "b": "B", "c": "C"},
            "timestamp": 1}),
        json!({"role": "system", "content": "", "sections": {"a": null, "b": "B2"}, "timestamp": 2}),
        json!({"role": "system", "content": "", "sections": {"a": "A2"}, "timestamp": 3}),
    ];
    let m = get_current_system_message(&messages).expect("message");
    assert_eq!(s(&m["sections"]), r#"{"b":"B2","c":"C","a":"A2"}"#);
    assert_eq!(get_current_system_prompt(&messages), "B2\n\nC\n\nA2");
    // Deleting a section that was never set is harmless.
    let only =
        vec![json!({"role": "system", "content": "x", "sections": {"zz": null}, "timestamp": 1})];
    assert_eq!(
        s(&get_current_system_message(&only).expect("message")),
        r#"{"role":"system","content":"x","timestamp":1}"#
    );
}

#[test]
fn c078_omits_empty_sections_and_tools_and_never_tools_removed() {
    let messages = vec![
        sys_tools(&[read()], &[], 7),
        json!({"role": "system", "content": "", "sections": {"s": "S"}, "timestamp": 8}),
        json!({"role": "system", "content": "", "sections": {"s": null}, "toolsRemoved": [{"name": "read"}],
            "timestamp": 9}),
    ];
    let m = get_current_system_message(&messages).expect("message");
    assert_eq!(s(&m), r#"{"role":"system","content":"","timestamp":7}"#);
    // Only tools (§4.5 example).
    let only_tools = vec![sys_tools(&[read()], &[], 7)];
    let m = get_current_system_message(&only_tools).expect("message");
    assert_eq!(keys(&m), ["role", "content", "toolsAdded", "timestamp"]);
    assert_eq!(
        s(&m),
        r#"{"role":"system","content":"","toolsAdded":[{"name":"read","description":"read tool","parameters":{"type":"object"}}],"timestamp":7}"#
    );
    assert_eq!(get_current_system_prompt(&only_tools), "");
}

#[test]
fn c079_prompt_is_content_then_sections_skipping_empties() {
    let message = json!({"role": "system", "content": "", "sections": {"a": "A", "e": "", "n": null,
        "b": "B"}, "timestamp": 1});
    assert_eq!(get_system_message_text(&message), "A\n\nB");
    let message =
        json!({"role": "system", "content": "Base", "sections": {"a": "A"}, "timestamp": 1});
    assert_eq!(get_system_message_text(&message), "Base\n\nA");
    assert_eq!(get_current_system_prompt(&[message]), "Base\n\nA");
}

#[test]
fn c080_integer_like_section_names_render_first_in_numeric_order() {
    let m = p(
        r#"{"role":"system","content":"B","sections":{"b":"B1","2":"two","a":"A1","1":"one"},"timestamp":1}"#,
    );
    assert_eq!(get_system_message_text(&m), "B\n\none\n\ntwo\n\nB1\n\nA1");
    assert_eq!(
        get_current_system_prompt(std::slice::from_ref(&m)),
        "B\n\none\n\ntwo\n\nB1\n\nA1"
    );
    // Even a hand-built (insertion-ordered) object renders index keys first.
    let hand = json!({"role": "system", "content": "B",
        "sections": {"b": "B1", "10": "ten", "a": "A1", "9": "nine", "01": "zero-one"}, "timestamp": 1});
    assert_eq!(
        get_system_message_text(&hand),
        "B\n\nnine\n\nten\n\nB1\n\nA1\n\nzero-one"
    );
    assert_eq!(
        get_current_system_prompt(&[hand]),
        "B\n\nnine\n\nten\n\nB1\n\nA1\n\nzero-one"
    );
    // A re-set integer-like name still sorts numerically, not at the end.
    let messages = vec![
        p(r#"{"role":"system","content":"","sections":{"x":"X","5":"five"},"timestamp":1}"#),
        p(r#"{"role":"system","content":"","sections":{"5":null}, "timestamp":2}"#),
        p(r#"{"role":"system","content":"","sections":{"5":"FIVE","3":"three"},"timestamp":3}"#),
    ];
    let m = get_current_system_message(&messages).expect("message");
    assert_eq!(s(&m["sections"]), r#"{"3":"three","5":"FIVE","x":"X"}"#);
}

#[test]
fn c081_current_system_prompt_of_empty_list_is_empty() {
    assert_eq!(get_current_system_prompt(&[]), "");
    assert_eq!(
        get_current_system_prompt(&[json!({"role": "user", "content": "x", "timestamp": 1})]),
        ""
    );
}

#[test]
fn malformed_system_messages_do_not_panic() {
    let messages = vec![
        json!({"role": "system"}),
        json!({"role": "system", "content": 5, "sections": "nope", "timestamp": "x"}),
        json!({"role": "system", "content": {"a": 1}, "sections": [1, 2], "toolsAdded": "x"}),
        json!({"role": "system", "content": "ok", "sections": {"n": 1, "o": {}, "s": "S"}}),
        json!({"role": 3}),
        json!(null),
    ];
    let m = get_current_system_message(&messages).expect("message");
    // The first system message has no timestamp: the first one present is used.
    assert_eq!(
        s(&m),
        r#"{"role":"system","content":"ok","sections":{"s":"S"},"timestamp":"x"}"#
    );
    assert_eq!(get_current_system_prompt(&messages), "ok\n\nS");
    assert_eq!(get_system_message_text(&json!(null)), "");
    assert_eq!(render_system_message_update(&json!([])), "");
    // No timestamp and no tools: the reference replays nothing (conformance 946).
    let none = vec![json!({"role": "system"})];
    assert_eq!(get_current_system_message(&none), None);
}

// ---------------------------------------------------------------- §4.6

#[test]
fn c082_declarations_equal_is_key_order_sensitive() {
    let a = json!({"name": "t", "description": "d", "parameters": {"type": "object", "properties": {}}});
    let b = json!({"name": "t", "description": "d", "parameters": {"properties": {}, "type": "object"}});
    assert!(!declarations_equal(&a, &b));
    assert!(declarations_equal(&a, &a.clone()));
    // Top-level declaration keys are put in declaration order first.
    let c = json!({"parameters": {"type": "object", "properties": {}}, "description": "d", "name": "t"});
    assert!(declarations_equal(&a, &c));
    // Numbers compare by their JS rendering.
    let one = p(r#"{"name":"t","parameters":{"maximum":1}}"#);
    let one_f = p(r#"{"name":"t","parameters":{"maximum":1.0}}"#);
    assert!(declarations_equal(&one, &one_f));
}

#[test]
fn c083_declarations_equal_ignores_non_declaration_fields() {
    let a = def("read", "read tool");
    let mut b = read();
    b["label"] = json!("Something else");
    b["executionMode"] = json!("sequential");
    b["execute"] = json!("callback-handle");
    b["outputSchema"] = json!({"type": "string"});
    assert!(declarations_equal(&a, &b));
    assert!(declarations_equal(&a, &read()));
    assert!(!declarations_equal(&a, &decl("read", "other")));
    assert!(!declarations_equal(&a, &decl("reader", "read tool")));
}

#[test]
fn c084_declarations_equal_distinguishes_constrained_sampling_false_from_absent() {
    let mut with_false = read();
    with_false["constrainedSampling"] = json!(false);
    assert!(!declarations_equal(&read(), &with_false));
    assert!(declarations_equal(&with_false, &with_false.clone()));
    let mut without_description = read();
    if let Some(m) = without_description.as_object_mut() {
        m.shift_remove("description");
    }
    assert!(!declarations_equal(&read(), &without_description));
}

#[test]
fn c085_tool_state_changes_report_changed_definition_as_removal_and_addition() {
    let previous = vec![def("A", "a"), def("B", "b")];
    let current = vec![def("B", "b changed"), def("C", "c")];
    let changes = get_tool_state_changes(&previous, &current);
    assert_eq!(
        s(&Json::Array(changes.tools_added.clone())),
        r#"[{"name":"B","description":"b changed","parameters":{"type":"object"}},{"name":"C","description":"c","parameters":{"type":"object"}}]"#
    );
    assert_eq!(
        s(&Json::Array(changes.tools_removed.clone())),
        r#"[{"name":"A"},{"name":"B"}]"#
    );
    // Unchanged definitions (labels differ only) produce nothing.
    let mut relabelled = def("A", "a");
    relabelled["label"] = json!("new label");
    let same = get_tool_state_changes(&[def("A", "a")], &[decl("A", "a")]);
    assert!(same.tools_added.is_empty() && same.tools_removed.is_empty());
    let same = get_tool_state_changes(&[relabelled], &[def("A", "a")]);
    assert_eq!(
        same,
        ToolStateChanges {
            tools_added: vec![],
            tools_removed: vec![]
        }
    );
}

#[test]
fn tool_state_changes_orders_follow_each_list() {
    let previous = vec![decl("z", "1"), decl("y", "1"), decl("x", "1")];
    let current = vec![decl("c", "1"), decl("y", "2"), decl("a", "1")];
    let changes = get_tool_state_changes(&previous, &current);
    assert_eq!(names(&changes.tools_added), ["c", "y", "a"]);
    assert_eq!(names(&changes.tools_removed), ["z", "y", "x"]);
    let all_new = get_tool_state_changes(&[], &current);
    assert_eq!(names(&all_new.tools_added), ["c", "y", "a"]);
    assert!(all_new.tools_removed.is_empty());
    // Nameless entries are skipped, not panicked on.
    let odd = get_tool_state_changes(&[json!(1), json!({})], &[json!(null), json!({"name": 2})]);
    assert_eq!(odd, ToolStateChanges::default());
}

// ---------------------------------------------------------------- §4.7

/// C.messages of "Agent with prompt Base and tools [read, write], after one completed prompt".
fn completed_transcript() -> Vec<Json> {
    let initial = create_initial_system_message(
        Some("Base"),
        &[def("read", "read tool"), def("write", "write tool")],
    )
    .expect("message");
    vec![
        initial,
        json!({"role": "user", "content": "one", "timestamp": 1}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "api": "a",
            "provider": "p", "model": "m", "stopReason": "stop", "timestamp": 2}),
    ]
}

fn user(text: &str, ts: i64) -> Json {
    json!({"role": "user", "content": text, "timestamp": ts})
}

fn assert_now(value: &Json, before: &Json) {
    let (Some(t), Some(b)) = (value.as_i64(), before.as_i64()) else {
        panic!("timestamp must be an integer: {value}");
    };
    let after = now_ms().as_i64().unwrap_or(i64::MAX);
    assert!(b <= t && t <= after, "{b} <= {t} <= {after}");
}

/// Replaying the transcript after appending must yield exactly the executable tools.
fn assert_replay_matches(transcript: &[Json], tools: &[Json]) {
    let declared = get_current_tools(transcript);
    let expected: Vec<Json> = tools.iter().map(agent::message::tool_declaration).collect();
    assert_eq!(s(&Json::Array(declared)), s(&Json::Array(expected)));
}

#[test]
fn declare_tool_changes_examples_1_to_5_in_sequence() {
    let mut transcript = completed_transcript();
    let write2 = def("write", "write tool v2");
    let grep = def("grep", "grep tool");

    // Example 1 (c086): tools changed, plain prompt → new system message before the user message.
    let tools = vec![def("read", "read tool"), write2.clone(), grep.clone()];
    let before = now_ms();
    let out = declare_tool_changes(&transcript, &tools, vec![user("two", 3)]);
    assert_eq!(out.len(), 2);
    assert_eq!(
        keys(&out[0]),
        ["role", "content", "timestamp", "toolsAdded", "toolsRemoved"]
    );
    assert_now(&out[0]["timestamp"], &before);
    assert_eq!(
        s(&out[0]["toolsAdded"]),
        r#"[{"name":"write","description":"write tool v2","parameters":{"type":"object"}},{"name":"grep","description":"grep tool","parameters":{"type":"object"}}]"#
    );
    assert_eq!(s(&out[0]["toolsRemoved"]), r#"[{"name":"write"}]"#);
    assert_eq!(out[1], user("two", 3));
    transcript.extend(out);
    assert_replay_matches(&transcript, &tools);

    // Example 2 (c089): the caller's bogus toolsAdded is discarded, replaced by the exact delta.
    let tools = vec![def("read", "read tool")];
    let pending = vec![
        json!({"role": "system", "content": "note", "toolsAdded": [decl("bogus", "b")], "timestamp": 99}),
        user("three", 100),
    ];
    let out = declare_tool_changes(&transcript, &tools, pending);
    assert_eq!(
        s(&out[0]),
        r#"{"role":"system","content":"note","timestamp":99,"toolsRemoved":[{"name":"write"},{"name":"grep"}]}"#
    );
    assert_eq!(out[1], user("three", 100));
    transcript.extend(out);
    assert_replay_matches(&transcript, &tools);

    // Example 3 (c088): nothing changed → the system message is kept exactly as given.
    let keep =
        json!({"role": "system", "content": "keep", "extra": {"b": 1, "a": 2}, "timestamp": 101});
    let pending = vec![keep.clone(), user("four", 102)];
    let out = declare_tool_changes(&transcript, &tools, pending.clone());
    assert_eq!(s(&Json::Array(out.clone())), s(&Json::Array(pending)));
    transcript.extend(out);

    // Example 4 (c087): the last pending system message receives the delta; s1 untouched.
    let tools = vec![grep.clone()];
    let s1 = json!({"role": "system", "content": "s1", "timestamp": 1});
    let pending = vec![
        s1.clone(),
        user("u", 2),
        json!({"role": "system", "content": "s2", "toolsRemoved": [{"name": "zzz"}], "timestamp": 3}),
        user("u2", 4),
    ];
    let out = declare_tool_changes(&transcript, &tools, pending);
    assert_eq!(out.len(), 4);
    assert_eq!(s(&out[0]), s(&s1));
    assert_eq!(
        s(&out[2]),
        r#"{"role":"system","content":"s2","timestamp":3,"toolsAdded":[{"name":"grep","description":"grep tool","parameters":{"type":"object"}}],"toolsRemoved":[{"name":"read"}]}"#
    );
    transcript.extend(out);
    assert_replay_matches(&transcript, &tools);

    // Example 5 (c091): all tools removed → toolsRemoved for each declared tool.
    let before = now_ms();
    let out = declare_tool_changes(&transcript, &[], vec![user("x", 5)]);
    assert_eq!(out.len(), 2);
    assert_eq!(
        keys(&out[0]),
        ["role", "content", "timestamp", "toolsRemoved"]
    );
    assert_eq!(out[0]["content"], json!(""));
    assert_now(&out[0]["timestamp"], &before);
    assert_eq!(s(&out[0]["toolsRemoved"]), r#"[{"name":"grep"}]"#);
    transcript.extend(out);
    assert_replay_matches(&transcript, &[]);
}

#[test]
fn c086_new_system_message_goes_before_first_non_system_pending_message() {
    let transcript = completed_transcript();
    let tools = vec![
        def("read", "read tool"),
        def("write", "write tool"),
        def("grep", "g"),
    ];
    let notice = json!({"role": "notification", "text": "n", "timestamp": 5});
    let out = declare_tool_changes(&transcript, &tools, vec![notice.clone(), user("two", 6)]);
    assert_eq!(out.len(), 3);
    assert_eq!(out[0]["role"], json!("system"));
    assert_eq!(
        keys(&out[0]),
        ["role", "content", "timestamp", "toolsAdded"]
    );
    assert_eq!(
        names(out[0]["toolsAdded"].as_array().expect("array")),
        ["grep"]
    );
    assert_eq!(out[1], notice);
    assert_eq!(out[2], user("two", 6));
    // Unchanged tools and no pending system message → P as is.
    let same = vec![def("read", "read tool"), def("write", "write tool")];
    let out = declare_tool_changes(&transcript, &same, vec![user("two", 6)]);
    assert_eq!(out, vec![user("two", 6)]);
}

#[test]
fn c087_last_pending_system_message_gets_exact_delta_after_other_keys() {
    let transcript = completed_transcript();
    let tools = vec![def("read", "read tool")];
    let pending = vec![
        json!({"role": "system", "toolsRemoved": [{"name": "x"}], "content": "c",
            "toolsAdded": [decl("y", "y")], "sections": {"k": "v"}, "timestamp": 3}),
        user("u", 4),
    ];
    let out = declare_tool_changes(&transcript, &tools, pending);
    assert_eq!(
        s(&out[0]),
        r#"{"role":"system","content":"c","sections":{"k":"v"},"timestamp":3,"toolsRemoved":[{"name":"write"}]}"#
    );
}

#[test]
fn c087_earlier_pending_system_messages_keep_their_tool_fields() {
    let transcript = completed_transcript();
    let tools = vec![def("read", "read tool"), def("write", "write tool")];
    let s1 = json!({"role": "system", "content": "s1", "toolsAdded": [decl("extra", "e")], "timestamp": 1});
    let pending = vec![
        s1.clone(),
        json!({"role": "system", "content": "s2", "timestamp": 2}),
    ];
    let out = declare_tool_changes(&transcript, &tools, pending);
    assert_eq!(out[0], s1);
    assert_eq!(
        s(&out[1]),
        r#"{"role":"system","content":"s2","timestamp":2,"toolsRemoved":[{"name":"extra"}]}"#
    );
    let mut all = transcript.clone();
    all.extend(out);
    assert_replay_matches(&all, &tools);
}

#[test]
fn c088_pending_system_message_untouched_when_nothing_changes() {
    let transcript = completed_transcript();
    let tools = vec![def("read", "read tool"), def("write", "write tool")];
    // Empty tool arrays count as "declares no tools": kept verbatim, empty arrays included.
    let message = json!({"role": "system", "content": "keep", "toolsAdded": [], "timestamp": 101,
        "toolsRemoved": []});
    let pending = vec![message.clone(), user("u", 102)];
    let out = declare_tool_changes(&transcript, &tools, pending.clone());
    assert_eq!(s(&Json::Array(out)), s(&Json::Array(pending)));
}

#[test]
fn c088_pending_system_message_declaring_same_tools_is_rewritten_without_fields() {
    // Re-declaring the current tools is intent that matches: the delta is empty, so the copy
    // carries no tool fields (replay still yields the executable tools).
    let transcript = completed_transcript();
    let tools = vec![def("read", "read tool"), def("write", "write tool")];
    let pending =
        vec![json!({"role": "system", "content": "k", "toolsAdded": [read()], "timestamp": 1})];
    let out = declare_tool_changes(&transcript, &tools, pending);
    assert_eq!(
        s(&out[0]),
        r#"{"role":"system","content":"k","timestamp":1}"#
    );
}

#[test]
fn c089_intent_tool_fields_are_discarded() {
    let transcript = completed_transcript();
    let tools = vec![def("read", "read tool"), def("write", "write tool")];
    let pending = vec![
        json!({"role": "system", "content": "note", "toolsAdded": [decl("bogus", "b")],
            "toolsRemoved": [{"name": "read"}], "timestamp": 99}),
        user("u", 100),
    ];
    let out = declare_tool_changes(&transcript, &tools, pending);
    assert_eq!(
        s(&out[0]),
        r#"{"role":"system","content":"note","timestamp":99}"#
    );
    let mut all = transcript.clone();
    all.extend(out);
    assert_replay_matches(&all, &tools);
}

#[test]
fn c090_empty_pending_with_changed_tools_yields_only_the_new_message() {
    // Example 6: declared [read]; the next turn's context has [read, grep].
    let transcript = vec![sys_tools(&[read()], &[], 0), user("u", 1)];
    let tools = vec![def("read", "read tool"), def("grep", "grep tool")];
    let before = now_ms();
    let out = declare_tool_changes(&transcript, &tools, vec![]);
    assert_eq!(out.len(), 1);
    assert_eq!(
        keys(&out[0]),
        ["role", "content", "timestamp", "toolsAdded"]
    );
    assert_now(&out[0]["timestamp"], &before);
    assert_eq!(
        s(&out[0]["toolsAdded"]),
        r#"[{"name":"grep","description":"grep tool","parameters":{"type":"object"}}]"#
    );
    // Nothing changed and nothing pending → nothing appended.
    let out = declare_tool_changes(&transcript, &[def("read", "read tool")], vec![]);
    assert!(out.is_empty());
}

#[test]
fn c091_removing_all_tools_declares_each_removal() {
    let transcript = completed_transcript();
    let out = declare_tool_changes(&transcript, &[], vec![user("x", 5)]);
    assert_eq!(
        s(&out[0]["toolsRemoved"]),
        r#"[{"name":"read"},{"name":"write"}]"#
    );
    assert!(out[0].get("toolsAdded").is_none());
    assert_eq!(out[1], user("x", 5));
}

#[test]
fn declare_tool_changes_on_empty_context_declares_everything() {
    let out = declare_tool_changes(&[], &[def("a", "A")], vec![user("hi", 1)]);
    assert_eq!(
        s(&out[0]["toolsAdded"]),
        r#"[{"name":"a","description":"A","parameters":{"type":"object"}}]"#
    );
    assert!(declare_tool_changes(&[], &[], vec![]).is_empty());
}

#[test]
fn replay_of_a_long_transcript_removes_every_declared_tool() {
    // Many remove/re-add cycles. That the replay's cost is linear in them is measured in
    // instructions by tests/cost (scenario `transcript`), not timed here.
    let mut transcript = Vec::new();
    for i in 0..20_000 {
        transcript.push(sys_tools(
            &[decl("t", "d"), decl(&format!("x{i}"), "d")],
            &["t"],
            i,
        ));
        transcript.push(user("u", i));
    }
    let tools = vec![decl("t", "d")];
    let out = declare_tool_changes(&transcript, &tools, vec![]);
    assert_eq!(
        names(out[0]["toolsRemoved"].as_array().expect("array")).len(),
        20_000
    );
    assert!(out[0].get("toolsAdded").is_none());
}

// ---------------------------------------------------------------- §4.8

#[test]
fn normalize_context_prepends_initial_message_when_any() {
    let messages = vec![user("hi", 1)];
    assert_eq!(normalize_context(None, messages.clone(), &[]), messages);
    let out = normalize_context(Some("Base"), messages.clone(), &[def("read", "read tool")]);
    assert_eq!(out.len(), 2);
    assert_eq!(
        s(&out[0]),
        r#"{"role":"system","content":"Base","toolsAdded":[{"name":"read","description":"read tool","parameters":{"type":"object"}}],"timestamp":0}"#
    );
    assert_eq!(out[1], messages[0]);
}

#[test]
fn initial_system_message_helpers() {
    let sys = json!({"role": "system", "content": "a", "timestamp": 1});
    let messages = vec![sys.clone(), user("u", 2), sys.clone()];
    assert_eq!(get_initial_system_message(&messages), Some(&sys));
    assert_eq!(without_initial_system_message(&messages), &messages[1..]);
    let no_head = vec![user("u", 2), sys.clone()];
    assert_eq!(get_initial_system_message(&no_head), None);
    assert_eq!(without_initial_system_message(&no_head), no_head.as_slice());
    assert_eq!(get_initial_system_message(&[]), None);
    assert!(without_initial_system_message(&[]).is_empty());
}

#[test]
fn collapse_system_messages_merges_head_and_keeps_others() {
    let messages = worked_example();
    let out = collapse_system_messages(&messages);
    assert_eq!(out.len(), 2);
    assert_eq!(
        Some(&out[0]),
        get_current_system_message(&messages).as_ref()
    );
    assert_eq!(out[1], messages[1]);
    let plain = vec![user("a", 1), json!({"role": "custom", "x": 1})];
    assert_eq!(collapse_system_messages(&plain), plain);
}

#[test]
fn render_system_message_update_describes_content_and_sections() {
    let m = p(
        r#"{"role":"system","content":[{"type":"text","text":"More"}],
        "sections":{"skills":"<s/>","env":null,"2":"two"},"timestamp":1}"#,
    );
    assert_eq!(
        render_system_message_update(&m),
        "More\n\nUpdated system prompt section \"2\":\n\ntwo\n\nUpdated system prompt section \"skills\":\n\n<s/>\n\nRemoved system prompt section \"env\"."
    );
    let empty = json!({"role": "system", "content": "", "timestamp": 1});
    assert_eq!(render_system_message_update(&empty), "");
}

#[test]
fn declared_tools_keep_first_position_and_last_definition() {
    let a2 = decl("A", "a2");
    let messages = vec![
        sys_tools(&[decl("A", "a"), decl("B", "b")], &[], 1),
        sys_tools(&[], &["A"], 2),
        json!({"role": "user", "toolsAdded": [decl("U", "u")], "timestamp": 3}),
        sys_tools(&[decl("C", "c"), a2.clone()], &["B"], 4),
    ];
    let declared = get_declared_tools(&messages);
    assert_eq!(names(&declared), ["A", "B", "C"]);
    assert_eq!(declared[0], a2);
}
