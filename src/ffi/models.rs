//! The model catalogue from C: pi-ai 1.6.0's models by `"provider/id"` (src/models.rs).
//!
//! One name rather than provider and id apart: it is how people write a model
//! (`LIBAGENT_MODEL=anthropic/claude-sonnet-4-5`, pi's `--model`), and it splits without
//! ambiguity at its first slash, since provider names never hold one while model ids may
//! (`openrouter/anthropic/claude-sonnet-4.5`).

use std::ffi::c_char;

use super::{boundary, check_out, str_arg, AgentError, FfiResult};

/// Writes `*out_model_json` (free with `agent_string_free`): the model named `"provider/id"` in
/// libagent's model catalogue (pi-ai 1.6.0's built-in chat models), a model object ready for
/// `initialState.model`: `{id, name, api, provider, baseUrl, reasoning, thinkingLevelMap?,
/// input, cost: {input, output, cacheRead, cacheWrite, tiers?} (dollars per million tokens),
/// contextWindow, maxTokens, headers?, compat?}`, members in pi-ai's order. The name splits at
/// its first slash (`"openrouter/anthropic/claude-sonnet-4.5"` is provider `openrouter`, model
/// `anthropic/claude-sonnet-4.5`). `AGENT_ERR_INVALID_ARGUMENT`, with a sentence naming the
/// model, for a name the catalogue does not have (`agent_model_list` lists them);
/// `AGENT_ERR_INVALID_STATE` if the library was built without the catalogue (cargo feature
/// `models`).
#[no_mangle]
pub unsafe extern "C" fn agent_model_find(
    name: *const c_char,
    name_len: usize,
    out_model_json: *mut *mut c_char,
    out_model_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        let name = str_arg(name, name_len, "name")?;
        check_out(out_model_json, "out_model_json")?;
        let model = catalogue::find(name)?;
        super::write_owned_text(
            out_model_json,
            out_model_json_len,
            &crate::json::to_string(&model),
        );
        Ok(())
    })
}

/// Writes `*out_models_json` (free with `agent_string_free`): a JSON array of the catalogue's
/// models of `provider` (as `agent_model_find` gives them, in pi-ai's order), or of every
/// provider when `provider` is NULL. `AGENT_ERR_INVALID_ARGUMENT` for a provider the catalogue
/// does not have; `AGENT_ERR_INVALID_STATE` if the library was built without the catalogue.
#[no_mangle]
pub unsafe extern "C" fn agent_model_list(
    provider: *const c_char,
    provider_len: usize,
    out_models_json: *mut *mut c_char,
    out_models_json_len: *mut usize,
) -> *mut AgentError {
    boundary(|| {
        let provider = if provider.is_null() {
            None
        } else {
            Some(str_arg(provider, provider_len, "provider")?)
        };
        check_out(out_models_json, "out_models_json")?;
        let models = catalogue::list(provider)?;
        super::write_owned_text(
            out_models_json,
            out_models_json_len,
            &crate::json::to_string(&crate::json::Json::Array(models)),
        );
        Ok(())
    })
}

#[cfg(feature = "models")]
mod catalogue {
    use super::FfiResult;
    use crate::ffi::{err, AGENT_ERR_INVALID_ARGUMENT};
    use crate::json::Json;
    use crate::models;

    pub fn find(name: &str) -> FfiResult<Json> {
        match models::find_by_name(name) {
            Some(model) => Ok(model),
            None => err(
                AGENT_ERR_INVALID_ARGUMENT,
                models::unknown_model_message(
                    name,
                    "agent_model_list lists the models (agent_model_list(NULL, 0, ...) every provider's)",
                ),
            ),
        }
    }

    pub fn list(provider: Option<&str>) -> FfiResult<Vec<Json>> {
        match provider {
            Some(provider) if !models::providers().contains(&provider) => err(
                AGENT_ERR_INVALID_ARGUMENT,
                format!(
                    "Unknown provider '{provider}': the model catalogue ({}) has the providers {}.",
                    models::SOURCE,
                    models::providers().join(", ")
                ),
            ),
            _ => Ok(models::list(provider)),
        }
    }
}

#[cfg(not(feature = "models"))]
mod catalogue {
    use super::FfiResult;
    use crate::ffi::{err, AGENT_ERR_INVALID_STATE};
    use crate::json::Json;

    const MISSING: &str = "libagent was built without the model catalogue (cargo feature `models`): describe the model in full (api, baseUrl, contextWindow, maxTokens, cost).";

    pub fn find(_name: &str) -> FfiResult<Json> {
        err(AGENT_ERR_INVALID_STATE, MISSING)
    }

    pub fn list(_provider: Option<&str>) -> FfiResult<Vec<Json>> {
        err(AGENT_ERR_INVALID_STATE, MISSING)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::{agent_error_code, agent_error_free, agent_error_message, agent_string_free};

    /// The status and message of a failed call (freed), or the text it wrote.
    fn call(name: &str) -> Result<String, (i32, String)> {
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: valid pointers for the call; the results are freed below.
        unsafe {
            let error = agent_model_find(
                name.as_ptr() as *const c_char,
                name.len(),
                &mut out,
                std::ptr::null_mut(),
            );
            if error.is_null() {
                let text = std::ffi::CStr::from_ptr(out).to_str().unwrap().to_string();
                agent_string_free(out);
                return Ok(text);
            }
            let message =
                std::ffi::CStr::from_ptr(agent_error_message(error, std::ptr::null_mut()));
            let failed = (
                agent_error_code(error),
                message.to_str().unwrap().to_string(),
            );
            agent_error_free(error);
            Err(failed)
        }
    }

    #[cfg(feature = "models")]
    #[test]
    fn finds_by_name_or_names_the_unknown_model() {
        let found = call("anthropic/claude-sonnet-4-5").unwrap();
        assert!(found.contains("\"contextWindow\":200000"), "{found}");
        let (code, message) = call("anthropic/claude-x").unwrap_err();
        assert_eq!(code, crate::ffi::AGENT_ERR_INVALID_ARGUMENT);
        assert!(message.contains("'anthropic/claude-x'"), "{message}");
    }

    #[cfg(not(feature = "models"))]
    #[test]
    fn says_the_catalogue_is_not_built_in() {
        let (code, message) = call("anthropic/claude-sonnet-4-5").unwrap_err();
        assert_eq!(code, crate::ffi::AGENT_ERR_INVALID_STATE);
        assert!(message.starts_with(
            "libagent was built without the model catalogue (cargo feature `models`)"
        ));
    }
}
