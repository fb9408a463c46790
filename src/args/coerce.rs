//! Coercion passes of SPEC §5.4 (optional nulls, TypeBox-style conversions, Ajv-style coercion).
