//! `corral scale md/NAME --replicas N`: sets the replicas through the scale subresource, as
//! `kubectl scale` and the cluster autoscaler do.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

use crate::resource::{Kind, ResourceRef};
use crate::{Connection, Error};

/// The kinds `scale` accepts.
pub const KINDS: &[Kind] = &[
    Kind::MachineDeployment,
    Kind::MachineSet,
    Kind::KubeadmControlPlane,
];

/// Scales the object to `replicas`; returns kubectl's line (`... scaled`).
pub async fn scale(
    connection: &Connection,
    namespace: &str,
    target: &ResourceRef,
    replicas: i32,
) -> Result<String, Error> {
    if replicas < 0 {
        return Err(Error::Usage(format!(
            "--replicas must be 0 or more, not {replicas}"
        )));
    }
    let resource = target.kind.resource();
    let api: Api<DynamicObject> =
        Api::namespaced_with(connection.client.clone(), namespace, &resource);
    let patch = json!({"spec": {"replicas": replicas}});
    match api
        .patch_scale(&target.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(format!("{} scaled", target.kind.qualified(&target.name))),
        Err(kube::Error::Api(status)) if status.code == 404 => Err(Error::NotFound {
            kind: resource.kind,
            name: target.name.clone(),
            namespace: namespace.into(),
            hint: String::new(),
        }),
        Err(error) => Err(connection.fail(
            format!("scaling {}", target.kind.qualified(&target.name)),
            error,
        )),
    }
}
