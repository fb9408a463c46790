//! Tool names as pi-coding-agent 1.6.0 gives them: `mcp__<server>__<tool>`, every character but
//! ASCII letters, digits and `_` replaced by `_`; a name longer than 64 characters, or one two tools
//! would share, is cut and suffixed with 8 hex digits of SHA-256(`server\0tool`). Names stay with the
//! tool that first got them (an owner map across servers and list refreshes).

use std::collections::{HashMap, HashSet};

/// Model providers accept tool names of at most this many characters.
const MAX_NAME_LENGTH: usize = 64;

/// The name of `server`'s `tool`; `taken` says whether a candidate belongs to another tool.
pub fn tool_name(server: &str, tool: &str, taken: impl Fn(&str) -> bool) -> String {
    let name: String = format!("mcp__{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    // Every character is ASCII now, so lengths in characters and bytes agree.
    if name.len() <= MAX_NAME_LENGTH && !taken(&name) {
        return name;
    }
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{server}\0{tool}").as_bytes(),
    );
    let hash: String = digest.as_ref()[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let keep = name.len().min(MAX_NAME_LENGTH - hash.len() - 1);
    format!("{}_{hash}", &name[..keep])
}

/// Who owns which name: `server\0tool` by tool name, kept across refreshes so names are stable.
#[derive(Default)]
pub struct Owners(HashMap<String, String>);

impl Owners {
    /// Names for a server's listed tools, in order. Tools whose plain names collide all get the
    /// hash suffix, so which keeps the plain name never depends on the order of the list.
    pub fn assign(&mut self, server: &str, tools: &[&str]) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut plain_counts: HashMap<String, usize> = HashMap::new();
        for tool in tools.iter().filter(|tool| seen.insert(**tool)) {
            *plain_counts
                .entry(tool_name(server, tool, |_| false))
                .or_default() += 1;
        }
        let mut current = HashSet::new();
        tools
            .iter()
            .map(|tool| {
                let owner = format!("{server}\0{tool}");
                let name = tool_name(server, tool, |candidate| {
                    self.0.get(candidate).is_some_and(|o| *o != owner)
                        || current.contains(candidate)
                        || plain_counts.get(candidate).is_some_and(|n| *n > 1)
                });
                self.0.insert(name.clone(), owner);
                current.insert(name.clone());
                name
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_sanitized_and_suffixed_names() {
        assert_eq!(
            tool_name("fs", "read_file", |_| false),
            "mcp__fs__read_file"
        );
        assert_eq!(
            tool_name("my-srv", "a.b c", |_| false),
            "mcp__my_srv__a_b_c"
        );
        let long = tool_name("server", &"x".repeat(80), |_| false);
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__server__xxx"));
        assert_eq!(long.as_bytes()[55], b'_');
    }

    #[test]
    fn colliding_tools_all_get_suffixes_and_names_are_stable() {
        let mut owners = Owners::default();
        let names = owners.assign("s", &["a-b", "a_b", "c"]);
        assert_eq!(names[2], "mcp__s__c");
        assert!(names[0].starts_with("mcp__s__a_b_") && names[1].starts_with("mcp__s__a_b_"));
        assert_ne!(names[0], names[1]);
        // A refresh keeps the names.
        assert_eq!(
            owners.assign("s", &["c", "a_b", "a-b"]),
            [names[2].clone(), names[1].clone(), names[0].clone()]
        );
    }
}
