//! The scripted session the headless-contract fixture was recorded with (see
//! `scripts/record-claude-code.sh`) and that `crates/cli/tests/contract.rs` replays: the
//! first request gets a sentence and one shell call (`Bash` when the client offers Claude
//! Code's tool, else troupe's `bash`), the request carrying its result gets the final answer.
//! Any other request (a client's side requests) gets a one-line answer.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use troupe_testkit::{FakeServer, Wire};

fn main() {
    let server = FakeServer::start();
    server.set_fallback(troupe_testkit::contract::step);
    for (key, value) in server.env(Wire::Anthropic) {
        println!("export {key}={value}");
    }
    println!(
        "# contract model server on {} — Ctrl-C to stop",
        server.url()
    );
    loop {
        std::thread::park();
    }
}
