//! `corral generate cluster`: a workload cluster's manifests from a template, as
//! `clusterctl generate cluster` renders them.
//!
//! Templates are embedded in the binary (`templates/<provider>/cluster-template[-<flavor>].yaml`,
//! upstream's file names), so generating works offline; `--from FILE` renders any other
//! template. Variables get their values from the command's flags first (the cluster name,
//! `--target-namespace`, `--kubernetes-version`, the machine counts), then from the
//! environment, then from the template's defaults; a variable left without a value is an
//! error naming it.
//!
//! The `machine-based` flavor describes a control plane of plain Machines, so its template
//! cannot say "N machines" by itself: its control plane fragment is rendered once per machine
//! with `CONTROL_PLANE_MACHINE_INDEX` set.

pub mod envsubst;

use std::collections::BTreeMap;

use crate::Error;

/// An embedded template: provider, flavor (empty for the default) and text.
struct Embedded {
    provider: &'static str,
    flavor: &'static str,
    text: &'static str,
    /// Rendered once per control plane machine and appended.
    per_control_plane_machine: Option<&'static str>,
}

const EMBEDDED: &[Embedded] = &[
    Embedded {
        provider: "in-memory",
        flavor: "",
        text: include_str!("../../templates/in-memory/cluster-template.yaml"),
        per_control_plane_machine: None,
    },
    Embedded {
        provider: "in-memory",
        flavor: "machine-based",
        text: include_str!("../../templates/in-memory/cluster-template-machine-based.yaml"),
        per_control_plane_machine: Some(include_str!(
            "../../templates/in-memory/cluster-template-machine-based-control-plane.yaml"
        )),
    },
    // `--infrastructure plugin:<name>`: the ProviderPlugin `<name>` (PLUGIN_NAME).
    Embedded {
        provider: "plugin",
        flavor: "",
        text: include_str!("../../templates/plugin/cluster-template.yaml"),
        per_control_plane_machine: None,
    },
];

/// The ProviderPlugin that `--infrastructure plugin:<name>` names, for the plugin template's
/// `PLUGIN_NAME` (where clusterctl's `<provider>:<version>` names a version).
fn plugin_name(source: &Source) -> Option<&str> {
    match source {
        Source::Embedded {
            infrastructure: Some(infrastructure),
            ..
        } if infrastructure == LOCAL => Some(LOCAL),
        Source::Embedded {
            infrastructure: Some(infrastructure),
            ..
        } => infrastructure
            .strip_prefix("plugin:")
            .filter(|name| !name.is_empty()),
        _ => None,
    }
}

/// `--infrastructure local`: the local provider (`corral provider local`), a plugin registered
/// as the ProviderPlugin `local` (what `corral up --infrastructure local` does); the same as
/// `plugin:local`.
pub const LOCAL: &str = "local";

/// The infrastructure providers with embedded templates.
pub fn infrastructure_providers() -> Vec<&'static str> {
    let mut providers: Vec<&str> = EMBEDDED.iter().map(|t| t.provider).collect();
    providers.dedup();
    providers.push(LOCAL);
    providers
}

/// Where the template comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// An embedded template of an infrastructure provider (`None`: the only one there is) and
    /// flavor (`None`: the default).
    Embedded {
        infrastructure: Option<String>,
        flavor: Option<String>,
    },
    /// A template's text, read from `name` (a file).
    Text { name: String, text: String },
}

/// What `generate cluster` renders.
#[derive(Clone, Debug)]
pub struct GenerateCluster {
    pub cluster_name: String,
    pub source: Source,
    /// `--target-namespace`; else `NAMESPACE` from the environment; else `default`.
    pub target_namespace: Option<String>,
    pub kubernetes_version: Option<String>,
    /// clusterctl's flag defaults are 1 and 0.
    pub control_plane_machine_count: u32,
    pub worker_machine_count: u32,
    /// The environment (values for the variables no flag sets).
    pub environment: BTreeMap<String, String>,
}

/// The template a [`Source`] names: its text and, for machine-based flavors, the fragment
/// rendered per control plane machine.
fn template(source: &Source) -> Result<(String, Option<&'static str>), Error> {
    match source {
        Source::Text { text, .. } => Ok((text.clone(), None)),
        Source::Embedded {
            infrastructure,
            flavor,
        } => {
            let providers = infrastructure_providers();
            let provider = match infrastructure {
                // `in-memory:v0.0.0` names a version, as clusterctl allows; there is one.
                Some(name) if name == LOCAL => "plugin".to_string(),
                Some(name) => name.split(':').next().unwrap_or(name).to_string(),
                None => providers[0].to_string(),
            };
            if !providers.contains(&provider.as_str()) {
                return Err(Error::Usage(format!(
                    "no templates for the infrastructure provider {provider:?}; --infrastructure must be one of: {}",
                    providers.join(", ")
                )));
            }
            let flavor = flavor.as_deref().unwrap_or("");
            let found = EMBEDDED
                .iter()
                .find(|t| t.provider == provider && t.flavor == flavor);
            match found {
                Some(t) => Ok((t.text.to_string(), t.per_control_plane_machine)),
                None => {
                    let flavors: Vec<&str> = EMBEDDED
                        .iter()
                        .filter(|t| t.provider == provider)
                        .map(|t| {
                            if t.flavor.is_empty() {
                                "(default)"
                            } else {
                                t.flavor
                            }
                        })
                        .collect();
                    Err(Error::Usage(format!(
                        "the {provider} provider has no flavor {flavor:?}; --flavor must be one of: {}",
                        flavors.join(", ")
                    )))
                }
            }
        }
    }
}

/// The variables of the template `source` names, as `--list-variables` shows them.
pub fn list_variables(source: &Source) -> Result<envsubst::Variables, Error> {
    let (text, per_machine) = template(source)?;
    let mut all = text;
    if let Some(fragment) = per_machine {
        all.push('\n');
        all.push_str(fragment);
    }
    let mut variables = envsubst::variables(&all);
    // Set by the generator itself, not by the user.
    variables
        .required
        .retain(|name| name != "CONTROL_PLANE_MACHINE_INDEX");
    Ok(variables)
}

/// `list_variables` as clusterctl prints it.
pub fn render_variables(variables: &envsubst::Variables) -> String {
    let mut out = String::from("Required Variables:\n");
    for name in &variables.required {
        out.push_str(&format!("  - {name}\n"));
    }
    out.push_str("\nOptional Variables:\n");
    let width = variables
        .optional
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);
    for (name, default) in &variables.optional {
        out.push_str(&format!("  - {name:<width$} (defaults to {default})\n"));
    }
    out
}

/// The flag that sets a variable, for the message about it being unset.
fn flag_of(variable: &str) -> Option<&'static str> {
    match variable {
        "KUBERNETES_VERSION" => Some("--kubernetes-version"),
        "NAMESPACE" => Some("--target-namespace"),
        "CONTROL_PLANE_MACHINE_COUNT" => Some("--control-plane-machine-count"),
        "WORKER_MACHINE_COUNT" => Some("--worker-machine-count"),
        "PLUGIN_NAME" => Some("--infrastructure plugin:<ProviderPlugin name>"),
        _ => None,
    }
}

/// Renders the cluster's manifests: a multi-document YAML stream.
pub fn generate_cluster(request: &GenerateCluster) -> Result<String, Error> {
    validate_name(&request.cluster_name)?;
    if let Some(version) = &request.kubernetes_version
        && !is_kubernetes_version(version)
    {
        return Err(Error::Usage(format!(
            "--kubernetes-version {version:?} is not a Kubernetes version; use the form v1.32.0"
        )));
    }
    let (text, per_machine) = template(&request.source)?;
    let mut values: BTreeMap<String, String> = request.environment.clone();
    values.insert("CLUSTER_NAME".into(), request.cluster_name.clone());
    let namespace = request
        .target_namespace
        .clone()
        .or_else(|| request.environment.get("NAMESPACE").cloned())
        .unwrap_or_else(|| "default".into());
    values.insert("NAMESPACE".into(), namespace);
    if let Some(version) = &request.kubernetes_version {
        values.insert("KUBERNETES_VERSION".into(), version.clone());
    }
    values.insert(
        "CONTROL_PLANE_MACHINE_COUNT".into(),
        request.control_plane_machine_count.to_string(),
    );
    values.insert(
        "WORKER_MACHINE_COUNT".into(),
        request.worker_machine_count.to_string(),
    );
    if let Some(plugin) = plugin_name(&request.source) {
        values.insert("PLUGIN_NAME".into(), plugin.to_owned());
    }
    let render = |text: &str, values: &BTreeMap<String, String>| {
        envsubst::substitute(text, |name| values.get(name).cloned()).map_err(|missing| {
            let first = &missing[0];
            let how = match flag_of(first) {
                Some(flag) => format!("pass {flag} or set the environment variable {first}"),
                None => format!("set the environment variable {first}"),
            };
            let names = if missing.len() == 1 {
                format!("template variable {first} is not set")
            } else {
                format!("template variables {} are not set", missing.join(", "))
            };
            Error::Invalid(format!(
                "{names}; {how} (`corral generate cluster NAME --list-variables` lists them)"
            ))
        })
    };
    let mut output = render(&text, &values)?;
    if let Some(fragment) = per_machine {
        for index in 0..request.control_plane_machine_count {
            let mut values = values.clone();
            values.insert("CONTROL_PLANE_MACHINE_INDEX".into(), index.to_string());
            if !output.ends_with('\n') {
                output.push('\n');
            }
            output.push_str("---\n");
            output.push_str(&render(fragment, &values)?);
        }
    }
    check_yaml(&output, &request.source)?;
    Ok(output)
}

/// Whether every document of the rendered output is YAML: a value that breaks the YAML (a
/// stray quote in a variable) is reported here rather than by the server.
fn check_yaml(output: &str, source: &Source) -> Result<(), Error> {
    use serde::Deserialize;
    for (index, document) in serde_yaml::Deserializer::from_str(output).enumerate() {
        if let Err(error) = serde_yaml::Value::deserialize(document) {
            let name = match source {
                Source::Text { name, .. } => name.clone(),
                Source::Embedded { .. } => "the embedded template".into(),
            };
            return Err(Error::Invalid(format!(
                "document {} of {name} is not valid YAML after substitution: {error}",
                index + 1
            )));
        }
    }
    Ok(())
}

/// A cluster name must be a DNS-1035 label of at most 63 characters (upstream's Cluster
/// webhook), since it prefixes the names of the objects generated for it.
fn validate_name(name: &str) -> Result<(), Error> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if valid {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "cluster name {name:?} is not valid: use at most 63 lowercase letters, digits and '-', starting with a letter and ending with a letter or digit"
        )))
    }
}

/// `v1.32.0`, `1.32.0`, `v1.32.0-rc.1`, `v1.32.0+build`: a semantic version with an optional `v`.
fn is_kubernetes_version(version: &str) -> bool {
    let version = version.strip_prefix('v').unwrap_or(version);
    let core = version.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests;
