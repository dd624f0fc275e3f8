//! Drives the fake model server over real HTTP and checks what a client would see.

mod faults;
mod routing;
mod support;
mod wire_anthropic;
mod wire_openai;
