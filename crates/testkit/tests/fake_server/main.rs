//! Drives the fake model server over real HTTP and checks what a client would see.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod faults;
mod routing;
mod support;
mod wire_anthropic;
mod wire_openai;
mod wire_responses;
