//! Unit tests of the openai-responses request and error texts.
