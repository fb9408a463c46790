//! The tools' definitions as the model sees them: pi-coding-agent 1.6.0's names, labels,
//! descriptions and parameter schemas (the model-facing contract, pinned by the conformance kit).

use crate::json::{json, Json};

/// The definition of the tool `name` (one of `TOOL_NAMES`).
pub(super) fn definition(name: &str) -> Json {
    match name {
        "read" => json!({
            "name": "read",
            "label": "read",
            "description": "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.",
            "parameters": {
                "type": "object",
                "required": [
                    "path"
                ],
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Path to the file to read (relative or absolute)"
                    },
                    "offset": {
                        "type": "number",
                        "description": "Line number to start reading from (1-indexed)"
                    },
                    "limit": {
                        "type": "number",
                        "description": "Maximum number of lines to read"
                    }
                }
            },
            "outputSchema": {
                "anyOf": [
                    {
                        "type": "string"
                    },
                    {
                        "type": "object",
                        "required": [
                            "type",
                            "data",
                            "mimeType",
                            "note"
                        ],
                        "properties": {
                            "type": {
                                "type": "string",
                                "const": "image"
                            },
                            "data": {
                                "type": "string"
                            },
                            "mimeType": {
                                "type": "string"
                            },
                            "note": {
                                "type": "string"
                            }
                        }
                    }
                ]
            },
            "constrainedSampling": {
                "type": "json_schema",
                "strict": "prefer"
            }
        }),
        "write" => json!({
            "name": "write",
            "label": "write",
            "description": "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
            "parameters": {
                "type": "object",
                "required": [
                    "path",
                    "content"
                ],
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Path to the file to write (relative or absolute)"
                    },
                    "content": {
                        "type": "string",
                        "description": "Content to write to the file"
                    }
                }
            },
            "constrainedSampling": {
                "type": "json_schema",
                "strict": "prefer"
            }
        }),
        "edit" => json!({
            "name": "edit",
            "label": "edit",
            "description": "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.",
            "parameters": {
                "type": "object",
                "required": [
                    "path",
                    "edits"
                ],
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Path to the file to edit (relative or absolute)"
                    },
                    "edits": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": [
                                "oldText",
                                "newText"
                            ],
                            "properties": {
                                "oldText": {
                                    "type": "string",
                                    "description": "Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."
                                },
                                "newText": {
                                    "type": "string",
                                    "description": "Replacement text for this targeted edit."
                                }
                            }
                        },
                        "description": "One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."
                    }
                }
            },
            "constrainedSampling": {
                "type": "json_schema",
                "strict": "prefer"
            }
        }),
        "ls" => json!({
            "name": "ls",
            "label": "ls",
            "description": "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever is hit first).",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Directory to list (default: current directory)"
                    },
                    "limit": {
                        "type": "number",
                        "description": "Maximum number of entries to return (default: 500)"
                    }
                }
            }
        }),
        "find" => json!({
            "name": "find",
            "label": "find",
            "description": "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to 1000 results or 50KB (whichever is hit first).",
            "parameters": {
                "type": "object",
                "required": [
                    "pattern"
                ],
                "properties": {
                    "pattern": {
                        "type": "string",
                        "description": "Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth"
                    },
                    "path": {
                        "type": "string",
                        "description": "Directory to search in (default: current directory)"
                    },
                    "limit": {
                        "type": "number",
                        "description": "Maximum number of results (default: 1000)"
                    }
                }
            }
        }),
        "grep" => json!({
            "name": "grep",
            "label": "grep",
            "description": "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to 100 matches or 50KB (whichever is hit first). Long lines are truncated to 500 chars.",
            "parameters": {
                "type": "object",
                "required": [
                    "pattern"
                ],
                "properties": {
                    "pattern": {
                        "type": "string",
                        "description": "Search pattern (regex or literal string)"
                    },
                    "path": {
                        "type": "string",
                        "description": "Directory or file to search (default: current directory)"
                    },
                    "glob": {
                        "type": "string",
                        "description": "Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth"
                    },
                    "ignoreCase": {
                        "type": "boolean",
                        "description": "Case-insensitive search (default: false)"
                    },
                    "literal": {
                        "type": "boolean",
                        "description": "Treat pattern as literal string instead of regex (default: false)"
                    },
                    "context": {
                        "type": "number",
                        "description": "Number of lines to show before and after each match (default: 0)"
                    },
                    "limit": {
                        "type": "number",
                        "description": "Maximum number of matches to return (default: 100)"
                    }
                }
            }
        }),
        "bash" => json!({
            "name": "bash",
            "label": "bash",
            "description": "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.",
            "parameters": {
                "type": "object",
                "required": [
                    "command"
                ],
                "properties": {
                    "command": {
                        "type": "string",
                        "description": "Shell command to execute"
                    },
                    "timeout": {
                        "type": "number",
                        "description": "Timeout in seconds (optional, no default timeout)"
                    }
                }
            },
            "outputSchema": {
                "type": "object",
                "required": [
                    "output",
                    "truncated",
                    "exit_code",
                    "wall_time_seconds"
                ],
                "properties": {
                    "output": {
                        "type": "string",
                        "description": "Combined stdout and stderr, possibly truncated"
                    },
                    "truncated": {
                        "type": "boolean"
                    },
                    "full_output_path": {
                        "type": "string",
                        "description": "Full output, when truncated"
                    },
                    "exit_code": {
                        "type": "number"
                    },
                    "wall_time_seconds": {
                        "type": "number"
                    }
                }
            },
            "constrainedSampling": {
                "type": "json_schema",
                "strict": "prefer"
            }
        }),
        _ => json!({"name": name}),
    }
}
