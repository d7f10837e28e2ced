//! Finding the management plane: the kubeconfig as kubectl resolves it, and a client for the
//! server it names.

use std::ffi::OsString;
use std::path::PathBuf;

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::Error;

/// Where a kubeconfig may come from, in kubectl's order: the `--kubeconfig` flag, then the
/// `KUBECONFIG` variable (a list of files, merged), then `~/.kube/config`. The binary fills it
/// from its flags and environment.
#[derive(Clone, Debug, Default)]
pub struct KubeconfigSource {
    /// `--kubeconfig FILE`.
    pub flag: Option<PathBuf>,
    /// The value of `KUBECONFIG`.
    pub env: Option<OsString>,
    /// The home directory, for `~/.kube/config`.
    pub home: Option<PathBuf>,
}

impl KubeconfigSource {
    /// The kubeconfig the files of [`Self::paths`] make up when merged as kubectl merges
    /// them, and those paths as one text for messages.
    pub fn read(&self) -> Result<(Kubeconfig, String), Error> {
        let paths = self.paths()?;
        let mut merged: Option<Kubeconfig> = None;
        for path in &paths {
            let read = Kubeconfig::read_from(path).map_err(|error| Error::ReadKubeconfig {
                path: path.display().to_string(),
                reason: crate::error::innermost_message(&error),
            })?;
            merged = Some(match merged {
                None => read,
                Some(earlier) => earlier.merge(read).map_err(|error| Error::ReadKubeconfig {
                    path: path.display().to_string(),
                    reason: crate::error::innermost_message(&error),
                })?,
            });
        }
        let kubeconfig = merged.expect("paths() returns at least one file");
        let shown = paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(":");
        Ok((kubeconfig, shown))
    }

    /// The files to read, merged in order, as kubectl picks them; an error naming every place
    /// looked at when there is none.
    pub fn paths(&self) -> Result<Vec<PathBuf>, Error> {
        if let Some(flag) = &self.flag {
            // An explicit file must exist; kubectl fails the same way.
            return Ok(vec![flag.clone()]);
        }
        let mut looked = Vec::new();
        if let Some(env) = self.env.as_ref().filter(|env| !env.is_empty()) {
            let listed: Vec<PathBuf> = std::env::split_paths(env)
                .filter(|path| !path.as_os_str().is_empty())
                .collect();
            let present: Vec<PathBuf> = listed.iter().filter(|p| p.exists()).cloned().collect();
            if !present.is_empty() {
                return Ok(present);
            }
            looked.extend(listed.iter().map(|p| p.display().to_string()));
        }
        if let Some(home) = &self.home {
            let default = home.join(".kube").join("config");
            if default.exists() {
                return Ok(vec![default]);
            }
            looked.push(default.display().to_string());
        }
        Err(Error::NoKubeconfig {
            looked: if looked.is_empty() {
                "nothing: neither KUBECONFIG nor HOME is set".into()
            } else {
                looked.join(", ")
            },
        })
    }
}

/// An error naming the contexts there are when the kubeconfig has no `context` (from
/// `--kubeconfig-context`: a usage error) or, without one, no context its `current-context`
/// names (kube's own message would only say "failed to load current context").
fn check_context(kubeconfig: &Kubeconfig, shown: &str, context: Option<&str>) -> Result<(), Error> {
    let known: Vec<&str> = kubeconfig
        .contexts
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let listed = if known.is_empty() {
        "none".to_string()
    } else {
        known.join(", ")
    };
    match context {
        Some(context) if !known.contains(&context) => Err(Error::Usage(format!(
            "the kubeconfig {shown} has no context {context} (it has: {listed}); pass one of them to --kubeconfig-context"
        ))),
        Some(_) => Ok(()),
        None => match kubeconfig.current_context.as_deref() {
            Some(current) if !known.contains(&current) => Err(Error::ReadKubeconfig {
                path: shown.to_string(),
                reason: format!(
                    "its current-context {current} is not one of its contexts ({listed}); pass --kubeconfig-context or fix current-context"
                ),
            }),
            None | Some("") if known.is_empty() => Err(Error::ReadKubeconfig {
                path: shown.to_string(),
                reason: "it has no contexts".into(),
            }),
            _ => Ok(()),
        },
    }
}

/// A client for a management plane, with what a message about it needs.
#[derive(Clone)]
pub struct Connection {
    pub client: kube::Client,
    /// The server URL, for messages.
    pub server: String,
    /// The namespace of the kubeconfig's current context, `default` when it names none.
    pub default_namespace: String,
}

impl Connection {
    /// A client for the server of the current context of the kubeconfig `source` resolves to.
    /// Reaching the server is left to the first request.
    pub async fn open(source: &KubeconfigSource) -> Result<Connection, Error> {
        Connection::open_context(source, None).await
    }

    /// A client for the server of `context` in the kubeconfig `source` resolves to (its current
    /// context when `None`), as clusterctl's `--kubeconfig-context`. An unknown context is an
    /// error that names it and the contexts there are.
    pub async fn open_context(
        source: &KubeconfigSource,
        context: Option<&str>,
    ) -> Result<Connection, Error> {
        let (kubeconfig, shown) = source.read()?;
        check_context(&kubeconfig, &shown, context)?;
        let options = KubeConfigOptions {
            context: context.map(str::to_string),
            ..KubeConfigOptions::default()
        };
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|error| Error::ReadKubeconfig {
                path: shown.clone(),
                reason: crate::error::innermost_message(&error),
            })?;
        Connection::from_config(config)
    }

    /// A client for `config`.
    pub fn from_config(config: kube::Config) -> Result<Connection, Error> {
        let server = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string();
        let default_namespace = config.default_namespace.clone();
        let client = kube::Client::try_from(config).map_err(|error| Error::ReadKubeconfig {
            path: server.clone(),
            reason: crate::error::innermost_message(&error),
        })?;
        Ok(Connection {
            client,
            server,
            default_namespace,
        })
    }

    /// A client for a server at `url` without authentication, as `corral up` serves.
    pub fn for_url(url: &str) -> Result<Connection, Error> {
        let uri = url
            .parse()
            .map_err(|_| Error::Invalid(format!("{url} is not a server URL")))?;
        Connection::from_config(kube::Config::new(uri))
    }

    /// The error of a failed request made while `doing` something.
    pub fn fail(&self, doing: impl Into<String>, error: kube::Error) -> Error {
        Error::request(doing, &self.server, error)
    }
}

#[cfg(test)]
mod tests;
