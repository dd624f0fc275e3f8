//! Runs the fake model server on its own, for trying troupe by hand: built with the release
//! build (`cargo build --release --bins --example fake_model`), `target/release/examples/
//! fake_model [PORT]` prints the environment to export (the port is random unless given).
//! Every agent gets the same behaviour, `troupe_testkit::try_it`'s.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

use troupe_testkit::{FakeServer, Wire};

fn main() {
    let port = match std::env::args().nth(1).map(|a| a.parse::<u16>()) {
        None => 0,
        Some(Ok(port)) => port,
        Some(Err(e)) => {
            eprintln!("usage: fake_model [PORT] ({e})");
            std::process::exit(2);
        }
    };
    let server = FakeServer::start_on(port);
    server.set_whole_answers(std::env::var_os("FAKE_MODEL_WHOLE_ANSWERS").is_some());
    troupe_testkit::try_it::install(&server);
    for (key, value) in server.env(Wire::Anthropic) {
        println!("export {key}={value}");
    }
    println!("# fake model server on {} — Ctrl-C to stop", server.url());
    loop {
        std::thread::park();
    }
}
