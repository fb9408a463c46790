//! Tests of the anthropic-messages provider.
