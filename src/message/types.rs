//! Typed serde views of the SPEC §2 data model, for Rust hosts that want structs instead of raw
//! JSON to build and inspect messages, blocks, tools and hook payloads.
//!
//! **These are views, not the storage format.** The core keeps every host message as the
//! order-preserving [`Json`] it received (ARCHITECTURE.md principle 2): key order is observable
//! and custom roles and unknown fields must round-trip byte for byte. A typed value keeps every
//! unknown key in its `extra` map, so nothing is lost, but converting JSON to a type and back
//! writes the known fields first (in SPEC order) and the unknown ones after them, which can move
//! keys. Convert at the edge (when building a message, or when inspecting one you received);
//! hand the original JSON back to the core when order matters.
//!
//! Conventions shared by every type here:
//! - field names are the SPEC's camelCase names;
//! - optional fields are `Option<T>` and are left out when `None`, never written as `null`
//!   (SPEC §0.4.1); a `null` read into an optional typed field (string, number, boolean, enum) is
//!   read as absent, while optional "any JSON" fields (`details`, `deferred`, …) keep a present
//!   `null` as `Some(Json::Null)`;
//! - numbers are `f64` (all JSON numbers are doubles) and are written through
//!   [`crate::json::number`], so integral values render as `3`, not `3.0` (SPEC §0.4.3);
//! - every struct keeps unknown fields in `extra`, written after the known ones;
//! - `to_json` puts object keys in ECMAScript order (array-index keys first, SPEC §0.4.2);
//! - conversions: `T::from_json(&Json)` / `TryFrom<&Json>` / `TryFrom<Json>` fail with a
//!   [`ShapeError`] naming the type and the problem; `T::to_json()` / `From<T> for Json`.
//!
//! The enums of §2 are strict: an unknown `type` of a content block, `stopReason` or
//! `thinkingLevel` value is a shape error. Only [`AgentMessage`] has an open fallback
//! ([`AgentMessage::Custom`]) because any role is a valid (custom) message.

use std::fmt;

use serde::{Deserializer, Serialize, Serializer};

use crate::json::{normalize_key_order, number, Json};

pub use crate::json::JsonMap;

/// Why a JSON value does not have the shape of the requested type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeError {
    message: String,
}

impl ShapeError {
    /// An error with this exact text.
    pub fn new(message: impl Into<String>) -> Self {
        ShapeError {
            message: message.into(),
        }
    }

    /// The error text, e.g. ``invalid UserMessage: missing field `timestamp` ``.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ShapeError {}

/// Reads `value` as `T`, prefixing any error with the type name.
fn from_json<T: serde::de::DeserializeOwned>(value: &Json, what: &str) -> Result<T, ShapeError> {
    T::deserialize(value).map_err(|e| ShapeError::new(format!("invalid {what}: {e}")))
}

/// Writes `value` as JSON with ECMAScript key order.
fn to_json<T: Serialize>(value: &T) -> Json {
    // Our Serialize impls cannot fail (string keys only, non-finite numbers become null).
    let mut json = serde_json::to_value(value).unwrap_or(Json::Null);
    normalize_key_order(&mut json);
    json
}

/// `serialize_with` for `f64` fields: integral values as JSON integers (`3`, not `3.0`).
fn ser_num<S: Serializer>(n: &f64, s: S) -> Result<S::Ok, S::Error> {
    number(*n).serialize(s)
}

/// `serialize_with` for `Option<f64>` fields (only called for `Some`, the field skips `None`).
fn ser_opt_num<S: Serializer>(n: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    n.map(number).serialize(s)
}

/// `deserialize_with` for optional "any JSON" fields: a present `null` stays `Some(Null)`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Json>, D::Error> {
    serde::Deserialize::deserialize(d).map(Some)
}

/// A unit type that reads and writes exactly one string: the `type` / `role` discriminant.
macro_rules! tag {
    ($name:ident, $value:literal) => {
        #[doc = concat!("The constant discriminant `\"", $value, "\"`.")]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let found = <Json as serde::Deserialize>::deserialize(d)?;
                if found.as_str() == Some($value) {
                    Ok($name)
                } else {
                    Err(serde::de::Error::custom(format!(
                        "expected \"{}\", found {}",
                        $value,
                        crate::json::to_string(&found)
                    )))
                }
            }
        }
    };
}

/// `from_json` / `to_json` and the `TryFrom` / `From` conversions for a serde type.
macro_rules! json_conversions {
    ($($ty:ident),* $(,)?) => {$(
        impl $ty {
            #[doc = concat!("Reads a `", stringify!($ty), "` from JSON; wrong shapes are a [`ShapeError`].")]
            pub fn from_json(value: &Json) -> Result<Self, ShapeError> {
                super::from_json(value, stringify!($ty))
            }

            /// Writes this value as JSON (known fields in SPEC order, then `extra`).
            pub fn to_json(&self) -> Json {
                super::to_json(self)
            }
        }

        impl TryFrom<&Json> for $ty {
            type Error = ShapeError;
            fn try_from(value: &Json) -> Result<Self, ShapeError> {
                $ty::from_json(value)
            }
        }

        impl TryFrom<Json> for $ty {
            type Error = ShapeError;
            fn try_from(value: Json) -> Result<Self, ShapeError> {
                $ty::from_json(&value)
            }
        }

        impl From<&$ty> for Json {
            fn from(value: &$ty) -> Json {
                value.to_json()
            }
        }

        impl From<$ty> for Json {
            fn from(value: $ty) -> Json {
                value.to_json()
            }
        }
    )*};
}

mod content;
mod hooks;
mod messages;
mod tools;

pub use content::*;
pub use hooks::*;
pub use messages::*;
pub use tools::*;
