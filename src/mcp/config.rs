//! The `{"mcpServers": {...}}` configuration every MCP client reads: stdio servers (`command`,
//! `args`, `env`, `cwd`) and streamable-HTTP servers (`url`, `headers`), both with `timeout`
//! (seconds, default 60) and `enabled`. `${VAR}` in `env` and `headers` values is replaced by the
//! environment variable. A wrong entry is reported for that server alone.

use std::time::Duration;

use crate::json::Json;

/// The timeout of a server's requests when its entry gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One server's checked entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub transport: Transport,
    /// The bound of each request (initialize, list, call); progress resets it for a call.
    pub timeout: Duration,
    pub enabled: bool,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        /// Set on top of the host process's environment.
        env: Vec<(String, String)>,
        cwd: Option<String>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// An entry of the configuration: its server name and either its settings or why it is invalid.
pub type Entry = (String, Result<ServerConfig, String>);

/// Reads a whole configuration. Fails only when it is not `{"mcpServers": {...}}`; each wrong
/// entry comes back as an `Err` of its own.
pub fn parse(config: &Json) -> Result<Vec<Entry>, String> {
    let servers = config
        .get("mcpServers")
        .and_then(Json::as_object)
        .ok_or("The MCP configuration must be a JSON object with an \"mcpServers\" object.")?;
    Ok(servers
        .iter()
        .map(|(name, entry)| {
            (
                name.clone(),
                server(name, entry, &|var| std::env::var(var).ok()),
            )
        })
        .collect())
}

/// One entry; `lookup` reads environment variables.
fn server(
    name: &str,
    entry: &Json,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "The MCP server name \"{name}\" is not allowed: use letters, digits, \"_\" and \"-\"."
        ));
    }
    let fail = |what: &str| Err(format!("MCP server \"{name}\": {what}"));
    let Some(object) = entry.as_object() else {
        return fail("its entry must be a JSON object.");
    };
    let enabled = match object.get("enabled") {
        None => true,
        Some(Json::Bool(enabled)) => *enabled,
        Some(_) => return fail("\"enabled\" must be true or false."),
    };
    let timeout = match object.get("timeout") {
        None => DEFAULT_TIMEOUT,
        Some(value) => match value.as_f64().filter(|s| *s > 0.0 && s.is_finite()) {
            Some(seconds) => Duration::from_secs_f64(seconds.min(1e9)),
            None => return fail("\"timeout\" must be a positive number of seconds."),
        },
    };
    let kind = object.get("type").map(|t| t.as_str().unwrap_or("?"));
    let url = object.get("url");
    let command = object.get("command");
    let transport = match kind {
        Some("sse") => return fail("the legacy SSE transport is not supported; give the server's streamable-HTTP URL instead (\"type\": \"http\")."),
        Some("http" | "streamable-http") | None if url.is_some() => {
            let Some(url) = url.and_then(Json::as_str).filter(|u| is_http_url(u)) else {
                return fail("\"url\" must be an http:// or https:// URL.");
            };
            Transport::Http {
                url: url.to_string(),
                headers: expanded_map(object.get("headers"), "headers", lookup)
                    .map_err(|error| format!("MCP server \"{name}\": {error}"))?,
            }
        }
        Some("stdio") | None if command.is_some() => {
            let Some(command) = command.and_then(Json::as_str).filter(|c| !c.is_empty()) else {
                return fail("\"command\" must be a non-empty string.");
            };
            let args = match object.get("args") {
                None => Vec::new(),
                Some(args) => match args.as_array().and_then(|items| {
                    items
                        .iter()
                        .map(|a| a.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>()
                }) {
                    Some(args) => args,
                    None => return fail("\"args\" must be an array of strings."),
                },
            };
            let cwd = match object.get("cwd") {
                None => None,
                Some(Json::String(cwd)) => Some(cwd.clone()),
                Some(_) => return fail("\"cwd\" must be a string."),
            };
            Transport::Stdio {
                command: command.to_string(),
                args,
                env: expanded_map(object.get("env"), "env", lookup)
                    .map_err(|error| format!("MCP server \"{name}\": {error}"))?,
                cwd,
            }
        }
        Some(kind @ ("stdio" | "http" | "streamable-http")) => {
            let needs = if kind == "stdio" { "\"command\"" } else { "\"url\"" };
            return fail(&format!("a \"{kind}\" server needs {needs}."));
        }
        Some(_) => {
            return fail("\"type\" must be \"stdio\", \"http\" or \"streamable-http\".");
        }
        None => return fail("give \"command\" (a stdio server) or \"url\" (a streamable-HTTP server)."),
    };
    Ok(ServerConfig {
        transport,
        timeout,
        enabled,
    })
}

fn is_http_url(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

/// `env` or `headers`: names to strings, each `${VAR}` replaced.
fn expanded_map(
    value: Option<&Json>,
    field: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let Some(object) = value.as_object() else {
        return Err(format!("\"{field}\" must map names to strings."));
    };
    object
        .iter()
        .map(|(key, value)| {
            let text = value
                .as_str()
                .ok_or_else(|| format!("\"{field}\" must map names to strings."))?;
            let expanded = expand(text, lookup).map_err(|var| {
                format!("{field} \"{key}\" uses ${{{var}}}, which is not set in the environment.")
            })?;
            Ok((key.clone(), expanded))
        })
        .collect()
}

/// Replaces each `${VAR}` with the variable's value; `Err(VAR)` names one that is not set.
fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(length) = rest[start + 2..].find('}') else {
            break;
        };
        let var = &rest[start + 2..start + 2 + length];
        out.push_str(&rest[..start]);
        out.push_str(&lookup(var).ok_or_else(|| var.to_string())?);
        rest = &rest[start + 3 + length..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::json;

    fn entry(value: Json) -> Result<ServerConfig, String> {
        let lookup = |var: &str| (var == "TOKEN").then(|| "s3cret".to_string());
        server("srv", &value, &lookup)
    }

    #[test]
    fn stdio_and_http_entries() {
        let stdio = entry(
            json!({"command": "node", "args": ["a.js"], "env": {"K": "x${TOKEN}y"},
            "cwd": "/tmp", "timeout": 2.5}),
        )
        .unwrap();
        assert_eq!(stdio.timeout, Duration::from_millis(2500));
        assert_eq!(
            stdio.transport,
            Transport::Stdio {
                command: "node".into(),
                args: vec!["a.js".into()],
                env: vec![("K".into(), "xs3crety".into())],
                cwd: Some("/tmp".into()),
            }
        );
        let http = entry(
            json!({"type": "streamable-http", "url": "http://127.0.0.1:1/mcp",
            "headers": {"Authorization": "Bearer ${TOKEN}"}, "enabled": false}),
        )
        .unwrap();
        assert!(!http.enabled);
        assert_eq!(http.timeout, DEFAULT_TIMEOUT);
        assert_eq!(
            http.transport,
            Transport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer s3cret".into())],
            }
        );
    }

    #[test]
    fn wrong_entries_say_what_is_wrong() {
        let cases = [
            (
                json!({"type": "sse", "url": "http://h/sse"}),
                "legacy SSE transport",
            ),
            (json!({"url": "ftp://h"}), "http:// or https://"),
            (json!({"command": 3}), "non-empty string"),
            (json!({"command": "x", "args": [1]}), "array of strings"),
            (
                json!({"command": "x", "env": {"A": "${MISSING}"}}),
                "${MISSING}, which is not set",
            ),
            (json!({"command": "x", "timeout": 0}), "positive number"),
            (json!({"command": "x", "enabled": "yes"}), "true or false"),
            (
                json!({"type": "stdio", "url": "http://h"}),
                "needs \"command\"",
            ),
            (json!({}), "give \"command\""),
            (json!([]), "JSON object"),
        ];
        for (value, expected) in cases {
            let error = entry(value.clone()).unwrap_err();
            assert!(error.contains(expected), "{value}: {error}");
            assert!(error.starts_with("MCP server \"srv\": "), "{error}");
        }
        let bad_name = server("a b", &json!({"command": "x"}), &|_| None).unwrap_err();
        assert!(bad_name.contains("\"a b\" is not allowed"), "{bad_name}");
    }

    #[test]
    fn a_configuration_without_servers_is_refused() {
        assert!(parse(&json!({"servers": {}}))
            .unwrap_err()
            .contains("\"mcpServers\""));
        let entries = parse(&json!({"mcpServers": {"a": {"command": "x"}, "b": 1}})).unwrap();
        assert_eq!(entries.len(), 2);
        assert!(entries[0].1.is_ok() && entries[1].1.is_err());
    }
}
