//! Waking an idle agent the moment mail arrives, across processes: the store sends a datagram
//! to the recipient's wake socket after each append; the recipient awaits it here.

use std::io;
use troupe_store::{FileStore, MailboxStore};

/// An agent's bound wake socket.
pub struct WakeListener {
    socket: tokio::net::UnixDatagram,
}

impl WakeListener {
    /// Binds the wake socket of `agent`. Must be called inside a tokio runtime.
    pub fn bind(store: &FileStore, agent: &str) -> io::Result<WakeListener> {
        let socket = store.wake_listener(agent).map_err(io::Error::other)?;
        socket.set_nonblocking(true)?;
        Ok(WakeListener {
            socket: tokio::net::UnixDatagram::from_std(socket)?,
        })
    }

    /// Waits for the next wake, then drains any others queued behind it.
    pub async fn wait(&mut self) {
        let mut buf = [0u8; 16];
        if let Err(e) = self.socket.recv(&mut buf).await {
            tracing::warn!(error = %e, "wake socket failed; falling back to a short sleep");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        while self.socket.try_recv(&mut buf).is_ok() {}
    }
}
