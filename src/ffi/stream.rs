//! Host stream functions, the process-wide default, and the built-in scripted model.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::call::{new_stream_call, AgentStream};
use super::*;
use crate::faux::{parse_script, scripted_stream_fn};
use crate::host::{set_default_stream_fn, StreamFn, StreamRequest};
use crate::stream::StreamSender;

/// A stream function (SPEC §3.1): performs one request. Called with `request_json` =
/// `{"model", "context": {"messages"}, "options": {reasoning?, sessionId?, transport?,
/// thinkingBudgets?, maxRetryDelayMs?, maxRetries?, timeoutMs?, connectTimeoutMs?,
/// idleTimeoutMs?, caCertificates?, caCertificateFile?, apiKey?, identity}}` (NUL-terminated,
/// with its length; borrowed for the call). Push events into `stream` with `agent_stream_push`
/// (from any thread, now or later), end with a `done`/`error` event or `agent_stream_end`;
/// `agent_stream_fail` before any push means the stream function failed.
pub type AgentStreamFn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        request_json: *const c_char,
        request_json_len: usize,
        stream: AgentStream,
    ),
>;

/// The core stream function behind a C callback.
pub(crate) fn host_stream_fn(callback: AgentStreamFn, data: Arc<HostData>) -> Option<StreamFn> {
    let callback = callback?;
    Some(Arc::new(
        move |request: StreamRequest, sender: StreamSender| {
            let stream = new_stream_call(sender, &request.signal);
            request.lend_json_text(|text| {
                // JSON text never holds a NUL byte (the renderer escapes it as \u0000): the only
                // one is the terminator. Checked in debug builds; skipping the scan matters in
                // release (a request holds the whole transcript).
                debug_assert!(text.iter().position(|&b| b == 0) == Some(text.len() - 1));
                // SAFETY: the host registered this callback for this user_data; the text is
                // NUL-terminated and lives until the call returns.
                guard_callback(|| unsafe {
                    callback(data.user_data, text.as_ptr().cast(), text.len() - 1, stream)
                })
            });
        },
    ))
}

/// The built-in scripted model from a JSON script (see `agent_options_set_scripted_model`).
pub(crate) fn scripted(script_json: *const c_char, len: usize) -> FfiResult<StreamFn> {
    let script = json_arg(script_json, len, "script_json")?;
    let responses = parse_script(&script).map_err(|m| FfiError {
        status: AGENT_ERR_INVALID_JSON,
        message: m,
    })?;
    Ok(scripted_stream_fn(responses))
}

/// Sets (or, with NULL `stream_fn`, clears) the process-wide default stream function
/// (`setDefaultStreamFn`). Agents capture the default when they are built.
#[no_mangle]
pub unsafe extern "C" fn agent_set_default_stream_fn(
    stream_fn: AgentStreamFn,
    user_data: *mut c_void,
    finalizer: AgentFinalizer,
) -> *mut AgentError {
    boundary(|| {
        set_default_stream_fn(host_stream_fn(
            stream_fn,
            HostData::new(user_data, finalizer),
        ));
        Ok(())
    })
}

/// Makes the built-in scripted model (see `agent_options_set_scripted_model`) the process-wide
/// default stream function.
#[no_mangle]
pub unsafe extern "C" fn agent_set_default_scripted_model(
    script_json: *const c_char,
    script_json_len: usize,
) -> *mut AgentError {
    boundary(|| {
        set_default_stream_fn(Some(scripted(script_json, script_json_len)?));
        Ok(())
    })
}

/// The built-in providers as a stream function, or the error of a build without them.
pub(crate) fn providers_stream_fn() -> FfiResult<StreamFn> {
    #[cfg(feature = "providers")]
    {
        Ok(crate::providers::stream_fn())
    }
    #[cfg(not(feature = "providers"))]
    {
        Err(FfiError {
            status: AGENT_ERR_INVALID_STATE,
            message:
                "libagent was built without the built-in providers (cargo feature `providers`)."
                    .into(),
        })
    }
}

/// Makes the built-in model providers the process-wide default stream function: requests go
/// over HTTP to `model.baseUrl`, speaking `model.api` (`"openai-completions"`,
/// `"anthropic-messages"`, `"openai-responses"` or `"google-generative-ai"`, as pi-ai 1.6.0's `streamSimple`). The API
/// key is the request's `apiKey` (the get-API-key hook), else the provider's environment variable
/// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, `GROQ_API_KEY`, ...). Another `api`
/// fails the request with `No API provider registered for api: <api>`; a missing key with
/// `No API key for provider: <provider>`. `AGENT_ERR_INVALID_STATE` if the library was built
/// without them.
#[no_mangle]
pub extern "C" fn agent_set_default_providers() -> *mut AgentError {
    boundary(|| {
        set_default_stream_fn(Some(providers_stream_fn()?));
        Ok(())
    })
}
