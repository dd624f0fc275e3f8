//! The `sandbox` key: `"auto"`, `"off"`, or `{"mode": …, "writableRoots": […], "network": …}`.

use serde::{Deserialize, Deserializer, Serialize};
use std::path::PathBuf;

/// Whether bash commands run under the OS sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Sandbox where the kernel supports it; fail closed where it does not.
    #[default]
    Auto,
    /// Never sandbox: the read-only classification is trusted as is.
    Off,
}

/// Which sockets workspace-write commands may open (read-only commands never may).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    /// Internet sockets only (TCP and UDP over IPv4 and IPv6; the default): no unix socket, so
    /// no way to the person's tmux, ssh agent or session bus.
    #[default]
    Inet,
    /// Every kind of socket, unix sockets included.
    Allow,
    /// `socket()` is refused for every kind of socket, as in the read-only sandbox.
    Deny,
}

/// The sandbox configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxSettings {
    /// Whether to sandbox.
    pub mode: SandboxMode,
    /// Extra directories an explicitly allowed command may write to.
    pub writable_roots: Vec<PathBuf>,
    /// Whether workspace-write commands may open sockets.
    pub network: SandboxNetwork,
}

/// Both spellings the key accepts.
#[derive(Deserialize)]
#[serde(untagged)]
enum Spelling {
    Mode(SandboxMode),
    Full {
        #[serde(default)]
        mode: SandboxMode,
        #[serde(default, rename = "writableRoots")]
        writable_roots: Vec<PathBuf>,
        #[serde(default)]
        network: SandboxNetwork,
    },
}

impl<'de> Deserialize<'de> for SandboxSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Spelling::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "`sandbox` must be \"auto\", \"off\" or {\"mode\": \"auto\"|\"off\", \"writableRoots\": [\"/abs/dir\", …], \"network\": \"inet\"|\"allow\"|\"deny\"}",
            )
        })? {
            Spelling::Mode(mode) => Ok(SandboxSettings {
                mode,
                writable_roots: Vec::new(),
                network: SandboxNetwork::Inet,
            }),
            Spelling::Full {
                mode,
                writable_roots,
                network,
            } => {
                if let Some(relative) = writable_roots.iter().find(|p| !p.is_absolute()) {
                    return Err(serde::de::Error::custom(format!(
                        "sandbox.writableRoots entry `{}` is not an absolute path",
                        relative.display()
                    )));
                }
                Ok(SandboxSettings {
                    mode,
                    writable_roots,
                    network,
                })
            }
        }
    }
}
