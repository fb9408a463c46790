//! API keys from the environment: pi-ai's variable per provider, `options.env` first.

use crate::json::Json;

/// The environment variables pi-ai reads a provider's API key from, in order.
pub fn api_key_env_vars(provider: &str) -> &'static [&'static str] {
    match provider {
        // pi-ai skips ANTHROPIC_AUTH_TOKEN for keys (it must go out as a bearer token).
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "openai" => &["OPENAI_API_KEY"],
        "google" => &["GEMINI_API_KEY"],
        "azure" => &["AZURE_OPENAI_API_KEY"],
        "nvidia" => &["NVIDIA_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "together" => &["TOGETHER_API_KEY"],
        "baseten" => &["BASETEN_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        // OpenCode serves OpenAI's models over the Responses API too.
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "cloudflare-workers-ai" | "cloudflare-ai-gateway" => &["CLOUDFLARE_API_KEY"],
        _ => &[],
    }
}

/// A variable from `options.env` (an object of strings), else the process environment; empty
/// values count as unset.
pub fn value(name: &str, env: Option<&Json>) -> Option<String> {
    let scoped = env
        .and_then(|env| env.get(name))
        .and_then(Json::as_str)
        .filter(|v| !v.is_empty())
        .map(str::to_string);
    scoped.or_else(|| std::env::var(name).ok().filter(|v| !v.is_empty()))
}

/// The provider's API key from the environment, if any.
pub fn api_key(provider: &str, env: Option<&Json>) -> Option<String> {
    api_key_env_vars(provider)
        .iter()
        .find_map(|name| value(name, env))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::json;

    #[test]
    fn scoped_env_wins_and_empty_values_count_as_unset() {
        let env = json!({"GROQ_API_KEY": "gsk-scoped", "OPENAI_API_KEY": ""});
        assert_eq!(api_key("groq", Some(&env)).as_deref(), Some("gsk-scoped"));
        assert_eq!(
            api_key_env_vars("anthropic"),
            ["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"]
        );
        assert_eq!(api_key_env_vars("opencode"), ["OPENCODE_API_KEY"]);
        assert!(api_key_env_vars("llama-local").is_empty());
        assert_eq!(api_key("llama-local", Some(&env)), None);
    }
}
