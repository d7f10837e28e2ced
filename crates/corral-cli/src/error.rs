//! The one error type of the CLI operations. Each message is one line that says what is wrong
//! and, where a person can do something about it, what to do; the binary prints it as is.

/// A failed CLI operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No kubeconfig was given and none exists where kubectl looks.
    #[error(
        "no kubeconfig found (looked at {looked}); pass --kubeconfig FILE, set KUBECONFIG, or start a management plane with `corral up` and export the KUBECONFIG it prints"
    )]
    NoKubeconfig { looked: String },
    /// The kubeconfig exists but cannot be read or used.
    #[error(
        "cannot use the kubeconfig {path}: {reason}; check that the file exists and holds a kubeconfig (`kubectl config view --kubeconfig {path}`), or pass another with --kubeconfig FILE"
    )]
    ReadKubeconfig { path: String, reason: String },
    /// Nothing answers at the kubeconfig's server address.
    #[error(
        "cannot reach the API server at {server} ({reason}); is the management plane running (`corral up`) and does the kubeconfig point at it?"
    )]
    Unreachable { server: String, reason: String },
    /// The object the command names does not exist.
    #[error("{kind} {name} not found in namespace {namespace}{hint}")]
    NotFound {
        kind: String,
        name: String,
        namespace: String,
        hint: String,
    },
    /// The API server refused a request.
    #[error("{doing}: {reason}")]
    Api { doing: String, reason: String },
    /// The command's input is wrong: a template, a variable, the state it needs.
    #[error("{0}")]
    Invalid(String),
    /// The command line is wrong in a way only the operation can tell (such as `md/NAME`
    /// naming an unknown kind); the binary exits with 2, as for other usage errors.
    #[error("{0}")]
    Usage(String),
    /// Waiting for something took longer than allowed.
    #[error("{0}")]
    Timeout(String),
    /// Losing the leader lease stops the controllers.
    #[error("lost the leader lease {lease}: {reason}")]
    LostLease { lease: String, reason: String },
}

impl Error {
    /// A failed request made while `doing` something against the server at `server`. A
    /// refusal by the API server keeps its message; anything else means the server could not
    /// be reached.
    pub fn request(doing: impl Into<String>, server: &str, error: kube::Error) -> Error {
        match error {
            kube::Error::Api(status) => Error::Api {
                doing: doing.into(),
                reason: status.message.clone(),
            },
            other => Error::Unreachable {
                server: server.to_string(),
                reason: innermost_message(&other),
            },
        }
    }
}

/// The message of the deepest source of `error`: "Connection refused (os error 111)" rather
/// than the layers of client wrapping above it.
pub(crate) fn innermost_message(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}
