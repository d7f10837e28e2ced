//! The objects the day-two verbs act on, named as kubectl names them: `md/NAME`,
//! `machinedeployment/NAME`, `kcp/NAME`, `kubeadmcontrolplane.controlplane.cluster.x-k8s.io/NAME`.

use kube::api::ApiResource;

use crate::Error;

/// A kind the verbs know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    MachineDeployment,
    MachineSet,
    KubeadmControlPlane,
}

impl Kind {
    pub fn resource(self) -> ApiResource {
        let (group, kind, plural) = match self {
            Kind::MachineDeployment => {
                (corral_api::GROUP, "MachineDeployment", "machinedeployments")
            }
            Kind::MachineSet => (corral_api::GROUP, "MachineSet", "machinesets"),
            Kind::KubeadmControlPlane => (
                "controlplane.cluster.x-k8s.io",
                "KubeadmControlPlane",
                "kubeadmcontrolplanes",
            ),
        };
        ApiResource {
            group: group.into(),
            version: "v1beta2".into(),
            api_version: format!("{group}/v1beta2"),
            kind: kind.into(),
            plural: plural.into(),
        }
    }

    /// How kubectl prints an object of the kind: `machinedeployment.cluster.x-k8s.io/NAME`.
    pub fn qualified(self, name: &str) -> String {
        let resource = self.resource();
        format!("{}.{}/{name}", resource.kind.to_lowercase(), resource.group)
    }
}

/// A `KIND/NAME` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRef {
    pub kind: Kind,
    pub name: String,
}

impl ResourceRef {
    /// Parses `KIND/NAME`, accepting `allowed` kinds only, by short name, singular, plural or
    /// `<kind>.<group>`.
    pub fn parse(text: &str, allowed: &[Kind]) -> Result<ResourceRef, Error> {
        let names = |kind: Kind| -> &'static [&'static str] {
            match kind {
                Kind::MachineDeployment => &["md", "machinedeployment", "machinedeployments"],
                Kind::MachineSet => &["ms", "machineset", "machinesets"],
                Kind::KubeadmControlPlane => {
                    &["kcp", "kubeadmcontrolplane", "kubeadmcontrolplanes"]
                }
            }
        };
        let accepted = allowed
            .iter()
            .map(|kind| format!("{}/NAME", names(*kind)[0]))
            .collect::<Vec<_>>()
            .join(" or ");
        let usage = || {
            Error::Usage(format!(
                "{text:?} names no object this command acts on; use {accepted}"
            ))
        };
        let (kind_text, name) = text.split_once('/').ok_or_else(usage)?;
        if name.is_empty() || name.contains('/') {
            return Err(usage());
        }
        let kind_text = kind_text.to_ascii_lowercase();
        let kind = allowed
            .iter()
            .copied()
            .find(|kind| {
                let group = kind.resource().group;
                names(*kind).iter().any(|candidate| {
                    kind_text == *candidate || kind_text == format!("{candidate}.{group}")
                })
            })
            .ok_or_else(usage)?;
        Ok(ResourceRef {
            kind,
            name: name.to_string(),
        })
    }
}

#[cfg(test)]
mod tests;
