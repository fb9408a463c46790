//! What the loopback provider tests share: the scripted mock server, its fixtures' helpers, and
//! servers written by hand for transport cases.
#![allow(dead_code)]

#[path = "common.rs"]
pub mod common;
#[path = "loopback.rs"]
pub mod loopback;
#[path = "mock.rs"]
pub mod mock;
