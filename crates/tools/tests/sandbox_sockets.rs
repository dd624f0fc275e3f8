//! The read-only sandbox has no way out through sockets: with real processes and a real
//! listening unix socket beside them, a read-only command cannot connect to it, send a UDP
//! datagram, or open a netlink or raw socket — while socketpair still works. Skipped where the
//! kernel has no Landlock or seccomp (fails under `CI=true`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code may panic on a broken fixture

mod common;

use common::{ok, Fixture};
use serde_json::json;
use troupe_tools::Sandbox;

fn usable() -> bool {
    let landlock = troupe_tools::sandbox::support().is_available();
    let seccomp = troupe_tools::sandbox::seccomp_support().is_ok();
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let usable = landlock && seccomp && python;
    if !usable {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must run the socket tests (landlock {landlock}, seccomp {seccomp}, python3 {python})"
        );
        eprintln!("skipping: landlock {landlock}, seccomp {seccomp}, python3 {python}");
    }
    usable
}

async fn python(f: &Fixture, script: &str) -> troupe_tools::ToolOutput {
    let command = format!("python3 -c \"{script}\"");
    f.call("bash", json!({ "command": command })).await
}

#[tokio::test]
async fn read_only_commands_open_no_socket_of_any_kind() {
    if !usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let port = udp.local_addr().unwrap().port();
    let attempts = [
        format!(
            "import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}')",
            path.display()
        ),
        format!(
            "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port}))"
        ),
        "import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)".to_string(),
        "import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)"
            .to_string(),
        "import socket; socket.socket(socket.AF_INET6, socket.SOCK_STREAM)".to_string(),
    ];
    for level in [Sandbox::Unsandboxed, Sandbox::ReadOnly] {
        let f = Fixture::new().sandboxed(level);
        for (i, script) in attempts.iter().enumerate() {
            let out = python(&f, script).await;
            match level {
                Sandbox::ReadOnly => {
                    assert!(out.is_error, "attempt {i} went through: {}", out.content);
                    assert!(
                        out.content.contains("PermissionError")
                            || out.content.contains("Operation not permitted"),
                        "attempt {i}: {}",
                        out.content
                    );
                }
                // Unconfined, the unix connect and the datagram really go through.
                _ if i < 2 => {
                    ok(out);
                }
                _ => {}
            }
        }
        if level == Sandbox::Unsandboxed {
            assert!(listener.accept().is_ok(), "the unconfined connect arrived");
            let mut buf = [0u8; 4];
            assert!(
                udp.recv(&mut buf).is_ok(),
                "the unconfined datagram arrived"
            );
        }
    }
    assert!(listener.accept().is_err(), "a read-only command connected");
    let mut buf = [0u8; 4];
    assert!(
        udp.recv(&mut buf).is_err(),
        "a read-only command sent a datagram"
    );
}

#[tokio::test]
async fn read_only_commands_keep_socketpair_and_cannot_set_up_io_uring() {
    if !usable() {
        return;
    }
    let f = Fixture::new().sandboxed(Sandbox::ReadOnly);
    let text = ok(python(
        &f,
        "import socket; a, b = socket.socketpair(); a.send(b'hi'); print(b.recv(2))",
    )
    .await);
    assert!(text.contains("b'hi'"), "{text}");
    // io_uring_setup(2) is system call 425 on x86_64 and aarch64.
    let setup = "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); p = ctypes.create_string_buffer(120); r = libc.syscall(425, 8, p); print('result', r, os.strerror(ctypes.get_errno()) if r < 0 else 'ok')";
    let unconfined = ok(python(&Fixture::new().sandboxed(Sandbox::Unsandboxed), setup).await);
    let text = ok(python(&f, setup).await);
    assert!(text.contains("result -1 Operation not permitted"), "{text}");
    // open_tree(2) (428) would copy a mount without the read-only mounts on top of it.
    let text = ok(python(
        &Fixture::new().sandboxed(Sandbox::WorkspaceWrite),
        "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); r = libc.syscall(428, -100, b'.', 1); print('result', r, os.strerror(ctypes.get_errno()))",
    )
    .await);
    assert!(text.contains("result -1 Operation not permitted"), "{text}");
    if !unconfined.contains("ok") {
        eprintln!("io_uring is off on this machine anyway: {unconfined}");
    }
}
