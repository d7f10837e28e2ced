//! Bootstrap data in cloud-init's `#cloud-config` format, as the kubeadm bootstrap provider
//! writes it (`corral_kubeadm::bootstrap::cloud_init`): read, its Jinja variables
//! (`{{ ds.meta_data.* }}`) filled from the machine's metadata, its `write_files` written under
//! the machine's root directory, its `runcmd` entries classified into the kubeadm commands the
//! agent performs itself and the rest.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use base64::Engine;
use serde::Deserialize;

/// What cloud-config the agent could not use; the machine reports it as its failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "the bootstrap data is not a #cloud-config (the local provider runs cloud-init's format only)"
    )]
    NotCloudConfig,
    #[error("the bootstrap data uses {{{{ {0} }}}}, which the machine's metadata does not have")]
    UnknownVariable(String),
    #[error("the bootstrap data is not valid cloud-config YAML: {0}")]
    Yaml(#[from] serde_yaml::Error),
    #[error("write_files {path}: {reason}")]
    File { path: String, reason: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A machine's cloud-config, its variables filled in.
#[derive(Debug, Default, Deserialize)]
pub struct CloudConfig {
    #[serde(default)]
    pub write_files: Vec<WriteFile>,
    #[serde(default)]
    pub runcmd: Vec<RunCommand>,
}

/// One entry of `write_files`.
#[derive(Debug, Deserialize)]
pub struct WriteFile {
    pub path: String,
    #[serde(default)]
    pub content: String,
    pub encoding: Option<String>,
    pub permissions: Option<String>,
    #[serde(default)]
    pub append: bool,
}

/// One entry of `runcmd`: a shell line, or an argument list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RunCommand {
    Shell(String),
    Arguments(Vec<String>),
}

/// What a `runcmd` entry asks for, as far as the agent understands it.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// `kubeadm init --config <path>`, the success sentinel written after it.
    KubeadmInit { config: String },
    /// `kubeadm join --config <path>`.
    KubeadmJoin { config: String },
    /// Anything else: not run, as the machine shares the host's file system.
    Other(String),
}

impl CloudConfig {
    /// Reads bootstrap data, filling `{{ ds.meta_data.<key> }}` from `metadata`.
    pub fn parse(text: &str, metadata: &BTreeMap<&str, String>) -> Result<CloudConfig, Error> {
        let body = text
            .strip_prefix("## template: jinja\n")
            .unwrap_or(text)
            .trim_start();
        if !body.starts_with("#cloud-config") {
            return Err(Error::NotCloudConfig);
        }
        let rendered = render_variables(body, metadata)?;
        Ok(serde_yaml::from_str(&rendered)?)
    }

    /// The commands, in order.
    pub fn commands(&self) -> Vec<Command> {
        self.runcmd.iter().map(Command::of).collect()
    }

    /// Writes every file under `root` (a file's path `/etc/x` is `<root>/etc/x`), decoded, with
    /// its permissions.
    pub fn write_files(&self, root: &Path) -> Result<(), Error> {
        for file in &self.write_files {
            let target = under_root(root, &file.path)?;
            let content = decode(file)?;
            let parent = target.parent().expect("a file under the root has a parent");
            let write = || -> std::io::Result<()> {
                std::fs::create_dir_all(parent)?;
                let mut options = std::fs::OpenOptions::new();
                options.create(true).write(true);
                if file.append {
                    options.append(true);
                } else {
                    options.truncate(true);
                }
                use std::io::Write;
                options.open(&target)?.write_all(&content)?;
                if let Some(mode) = file.permissions.as_deref().and_then(parse_mode) {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))?;
                }
                Ok(())
            };
            write().map_err(|source| Error::Write {
                path: target.clone(),
                source,
            })?;
        }
        Ok(())
    }
}

impl Command {
    fn of(entry: &RunCommand) -> Command {
        let line = match entry {
            RunCommand::Shell(line) => line.clone(),
            RunCommand::Arguments(arguments) => arguments.join(" "),
        };
        // `kubeadm init --config P [--v N] && echo success > SENTINEL`: the agent writes the
        // sentinel itself once its work is done.
        let kubeadm = line.split("&&").next().unwrap_or_default();
        let words: Vec<&str> = kubeadm.split_whitespace().collect();
        let config = words
            .iter()
            .position(|word| *word == "--config")
            .and_then(|at| words.get(at + 1))
            .map(|path| path.to_string());
        match (words.first(), words.get(1), config) {
            (Some(&"kubeadm"), Some(&"init"), Some(config)) => Command::KubeadmInit { config },
            (Some(&"kubeadm"), Some(&"join"), Some(config)) => Command::KubeadmJoin { config },
            _ => Command::Other(line),
        }
    }
}

/// A path of the machine's, under its root; `..` is refused, so nothing is written outside.
pub fn under_root(root: &Path, path: &str) -> Result<PathBuf, Error> {
    let mut target = root.to_path_buf();
    for component in Path::new(path).components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(part) => target.push(part),
            Component::ParentDir | Component::Prefix(_) => {
                return Err(Error::File {
                    path: path.into(),
                    reason: "the path leaves the machine's root (`..`)".into(),
                });
            }
        }
    }
    if target == root {
        return Err(Error::File {
            path: path.into(),
            reason: "the path names no file".into(),
        });
    }
    Ok(target)
}

fn decode(file: &WriteFile) -> Result<Vec<u8>, Error> {
    let error = |reason: String| Error::File {
        path: file.path.clone(),
        reason,
    };
    let base64 = |text: &str| {
        let compact: String = text.split_whitespace().collect();
        base64::engine::general_purpose::STANDARD
            .decode(compact)
            .map_err(|problem| error(format!("content is not base64: {problem}")))
    };
    let gunzip = |bytes: Vec<u8>| {
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_end(&mut text)
            .map_err(|problem| error(format!("content is not gzip: {problem}")))?;
        Ok(text)
    };
    // cloud-init's names: b64/base64, gz/gzip, and the two combined; text/plain is the default.
    match file.encoding.as_deref().unwrap_or("text/plain") {
        "text/plain" => Ok(file.content.clone().into_bytes()),
        "b64" | "base64" => base64(&file.content),
        "gz+b64" | "gz+base64" | "gzip+b64" | "gzip+base64" => gunzip(base64(&file.content)?),
        "gz" | "gzip" => gunzip(file.content.clone().into_bytes()),
        other => Err(error(format!(
            "encoding {other:?} is not one of cloud-init's"
        ))),
    }
}

fn parse_mode(permissions: &str) -> Option<u32> {
    u32::from_str_radix(permissions.trim_start_matches("0o"), 8).ok()
}

/// Replaces every `{{ <name> }}` with the metadata value of `ds.meta_data.<key>`.
fn render_variables(text: &str, metadata: &BTreeMap<&str, String>) -> Result<String, Error> {
    let mut rendered = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(length) = rest[start..].find("}}") else {
            break;
        };
        rendered.push_str(&rest[..start]);
        let name = rest[start + 2..start + length].trim();
        let value = name
            .strip_prefix("ds.meta_data.")
            .and_then(|key| metadata.get(key))
            .ok_or_else(|| Error::UnknownVariable(name.to_owned()))?;
        rendered.push_str(value);
        rest = &rest[start + length + 2..];
    }
    rendered.push_str(rest);
    Ok(rendered)
}

#[cfg(test)]
mod tests;
