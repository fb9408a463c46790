//! JSON Schema validation and the error walk of SPEC §5.5–§5.6.
