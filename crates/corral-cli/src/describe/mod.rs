//! `corral describe cluster`: reads a Cluster and everything that belongs to it and builds
//! upstream's tree (`cmd/clusterctl/client/tree/discovery.go`): the Cluster; its
//! infrastructure (`ClusterInfrastructure`); its control plane (`ControlPlane`, the object of
//! `controlPlaneRef` or, for a machine-based control plane, a virtual node) with its Machines;
//! `Workers` with each MachineDeployment (and, with `--show-machinesets`, its MachineSets) and
//! their Machines; Machines of neither under `Workers/Other`. Each Machine's infrastructure and
//! bootstrap objects appear only when their state adds something to the Machine's (upstream's
//! echo suppression; `--echo` shows them always). `--show-templates` adds a `Templates` node of
//! template references under the control plane and each MachineDeployment.
//! `--show-resourcesets` adds a `ClusterResourceSets` node with the ClusterResourceSets the
//! Cluster's ClusterResourceSetBinding lists; as upstream, nothing when there is no binding or
//! the `addons.cluster.x-k8s.io` API is not installed (Corral has no ClusterResourceSet
//! controller of its own, so the binding exists only where another one runs).

pub mod tree;
pub mod watch;

use std::collections::BTreeMap;

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;

use crate::{Connection, Error};
use tree::{Condition, Node, Shown};

/// What to show.
#[derive(Clone, Debug, Default)]
pub struct DescribeOptions {
    pub namespace: String,
    pub name: String,
    /// `all`, or kinds and `Kind/name`s whose every condition gets a row.
    pub show_conditions: Vec<String>,
    /// Show MachineSets between MachineDeployments and their Machines.
    pub show_machine_sets: bool,
    /// Show every Machine's infrastructure and bootstrap objects.
    pub echo: bool,
    /// Group Machines in the same state (upstream's default).
    pub grouping: bool,
    /// Show the infrastructure and bootstrap templates of the control plane and of each
    /// MachineDeployment under a `Templates` node (upstream's `--show-templates`).
    pub show_templates: bool,
    /// Show the ClusterResourceSets bound to the Cluster (upstream's `--show-resourcesets`).
    pub show_resource_sets: bool,
}

/// Reads the cluster and builds its tree.
pub async fn describe_cluster(
    connection: &Connection,
    options: &DescribeOptions,
) -> Result<Node, Error> {
    let mut reader = Reader::new(connection, &options.namespace);
    let clusters = core_resource("Cluster", "clusters");
    let Some(cluster) = reader.get(&clusters, &options.name).await? else {
        return Err(Error::NotFound {
            kind: "Cluster".into(),
            name: options.name.clone(),
            namespace: options.namespace.clone(),
            hint: "; `corral get clusters -A` lists the clusters".into(),
        });
    };
    let selector = format!("{}={}", corral_api::labels::CLUSTER_NAME, options.name);
    let machines = reader
        .list(&core_resource("Machine", "machines"), &selector)
        .await?;
    let machine_sets = reader
        .list(&core_resource("MachineSet", "machinesets"), &selector)
        .await?;
    let machine_deployments = reader
        .list(
            &core_resource("MachineDeployment", "machinedeployments"),
            &selector,
        )
        .await?;

    let mut root = object_node(&cluster, options);
    root.shown = Shown::Available;
    set_cluster_counters(&mut root, &cluster);
    if let Some(infrastructure) = reader
        .referenced(&cluster["spec"]["infrastructureRef"])
        .await?
    {
        let mut node = object_node(&infrastructure, options);
        node.meta_name = Some("ClusterInfrastructure".into());
        root.children.push(node);
    }
    if options.show_resource_sets
        && let Some(node) = resource_sets_node(&mut reader, &options.name).await?
    {
        root.children.push(node);
    }

    let mut control_plane = control_plane_node(&mut reader, &cluster, &machines, options).await?;
    let mut other = Node::virtual_node("Other");
    let machines_by_set = place_machines(
        &mut reader,
        &machines,
        control_plane.as_mut(),
        &mut other,
        options,
    )
    .await?;
    let workers = workers_node(
        &machine_sets,
        &machine_deployments,
        machines_by_set,
        other,
        options,
    );
    if let Some(control_plane) = control_plane {
        root.children.push(control_plane);
    }
    if !workers.children.is_empty() {
        root.children.push(workers);
    }
    sort_children(&mut root);
    if options.grouping {
        tree::group_machines(&mut root);
    }
    Ok(root)
}

/// The Cluster row's counters: the sums of its control plane's and workers' replicas.
fn set_cluster_counters(root: &mut Node, cluster: &Value) {
    let status = &cluster["status"];
    let sum = |field: &str| -> Option<i64> {
        let (cp, workers) = (&status["controlPlane"][field], &status["workers"][field]);
        (cp.is_i64() || workers.is_i64())
            .then(|| cp.as_i64().unwrap_or(0) + workers.as_i64().unwrap_or(0))
    };
    if sum("desiredReplicas").is_some() || sum("replicas").is_some() {
        root.replicas = Some(format!(
            "{}/{}",
            sum("replicas").unwrap_or(0),
            sum("desiredReplicas").unwrap_or(0)
        ));
    }
    root.available = sum("availableReplicas").map(|n| n.to_string());
    root.ready = sum("readyReplicas").map(|n| n.to_string());
    root.up_to_date = sum("upToDateReplicas").map(|n| n.to_string());
}

/// Whether the Machine is a control plane one (its label).
fn is_control_plane(machine: &Value) -> bool {
    machine["metadata"]["labels"]
        .get(corral_api::labels::CONTROL_PLANE)
        .is_some()
}

/// The name of the object's controller owner of `kind`.
fn owner_of(object: &Value, kind: &str) -> Option<String> {
    object["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["kind"] == kind && r["controller"] == true)
        .and_then(|r| r["name"].as_str())
        .map(String::from)
}

/// The ControlPlane node: the Cluster's control plane object with its counters (and
/// templates), or a virtual node when there is none but control plane Machines are.
async fn control_plane_node(
    reader: &mut Reader<'_>,
    cluster: &Value,
    machines: &[Value],
    options: &DescribeOptions,
) -> Result<Option<Node>, Error> {
    Ok(
        match reader
            .referenced(&cluster["spec"]["controlPlaneRef"])
            .await?
        {
            Some(object) => {
                let mut node = object_node(&object, options);
                node.meta_name = Some("ControlPlane".into());
                // A v1beta2 control plane (KubeadmControlPlane) reports Available, not Ready.
                if node.condition("Ready").is_none() && node.condition("Available").is_some() {
                    node.shown = Shown::Available;
                }
                let spec = &object["spec"];
                let status = &object["status"];
                if let (Some(current), Some(desired)) =
                    (status["replicas"].as_i64(), spec["replicas"].as_i64())
                {
                    node.replicas = Some(format!("{current}/{desired}"));
                }
                node.available = status["availableReplicas"].as_i64().map(|n| n.to_string());
                node.ready = status["readyReplicas"].as_i64().map(|n| n.to_string());
                node.up_to_date = status["upToDateReplicas"].as_i64().map(|n| n.to_string());
                if options.show_templates {
                    let machine_template = &spec["machineTemplate"];
                    let infrastructure =
                        if machine_template["spec"]["infrastructureRef"].is_object() {
                            &machine_template["spec"]["infrastructureRef"]
                        } else {
                            &machine_template["infrastructureRef"]
                        };
                    add_templates(
                        &mut node,
                        [("MachineInfrastructureTemplate", infrastructure)],
                    );
                }
                Some(node)
            }
            None if machines.iter().any(is_control_plane) => {
                let mut node = Node::virtual_node("ControlPlane");
                node.meta_name = Some("ControlPlane".into());
                Some(node)
            }
            None => None,
        },
    )
}

/// Places each Machine's node: under the control plane, or under `other` when no MachineSet
/// owns it; returns the others by their MachineSet.
async fn place_machines(
    reader: &mut Reader<'_>,
    machines: &[Value],
    mut control_plane: Option<&mut Node>,
    other: &mut Node,
    options: &DescribeOptions,
) -> Result<BTreeMap<String, Vec<Node>>, Error> {
    let mut machines_by_set: BTreeMap<String, Vec<Node>> = BTreeMap::new();
    for machine in machines {
        let node = machine_node(reader, machine, options).await?;
        if let Some(control_plane) = control_plane
            .as_deref_mut()
            .filter(|_| is_control_plane(machine))
        {
            control_plane.children.push(node);
        } else if let Some(set) = owner_of(machine, "MachineSet") {
            machines_by_set.entry(set).or_default().push(node);
        } else {
            other.children.push(node);
        }
    }
    Ok(machines_by_set)
}

/// The Workers node: MachineDeployments with their MachineSets (or their Machines), MachineSets
/// no deployment owns, and `other` with the Machines whose MachineSet is gone.
fn workers_node(
    machine_sets: &[Value],
    machine_deployments: &[Value],
    mut machines_by_set: BTreeMap<String, Vec<Node>>,
    mut other: Node,
    options: &DescribeOptions,
) -> Node {
    let mut workers = Node::virtual_node("Workers");
    let mut sets_by_deployment: BTreeMap<String, Vec<Node>> = BTreeMap::new();
    for machine_set in machine_sets {
        let name = machine_set["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let mut node = object_node(machine_set, options);
        set_replica_counters(&mut node, machine_set);
        node.shown = Shown::Nothing;
        node.children = machines_by_set.remove(&name).unwrap_or_default();
        match owner_of(machine_set, "MachineDeployment") {
            Some(deployment) => sets_by_deployment.entry(deployment).or_default().push(node),
            None => workers.children.push(node),
        }
    }
    // Machines whose MachineSet is gone.
    for (_, nodes) in machines_by_set {
        other.children.extend(nodes);
    }
    for deployment in machine_deployments {
        let name = deployment["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let mut node = object_node(deployment, options);
        node.shown = Shown::Available;
        set_replica_counters(&mut node, deployment);
        let sets = sets_by_deployment.remove(&name).unwrap_or_default();
        if options.show_machine_sets {
            node.children = sets;
        } else {
            node.children = sets.into_iter().flat_map(|set| set.children).collect();
        }
        if options.show_templates {
            let template = &deployment["spec"]["template"]["spec"];
            add_templates(
                &mut node,
                [
                    (
                        "BootstrapConfigTemplate",
                        &template["bootstrap"]["configRef"],
                    ),
                    (
                        "MachineInfrastructureTemplate",
                        &template["infrastructureRef"],
                    ),
                ],
            );
        }
        workers.children.push(node);
    }
    for (_, sets) in sets_by_deployment {
        workers.children.extend(sets);
    }
    if !other.children.is_empty() {
        workers.children.push(other);
    }
    workers
}

/// A virtual `Templates` node under `node` with a row per template reference that names one
/// (`meta_name`, reference), as upstream's `--show-templates`: the reference only, the
/// template has no state to show.
fn add_templates<'v>(
    node: &mut Node,
    references: impl IntoIterator<Item = (&'static str, &'v Value)>,
) {
    let mut templates = Node::virtual_node(TEMPLATES);
    templates.meta_name = Some(TEMPLATES.into());
    for (meta_name, reference) in references {
        if let (Some(kind), Some(name)) = (reference["kind"].as_str(), reference["name"].as_str()) {
            let mut template = Node::object(kind, name);
            template.meta_name = Some(meta_name.into());
            template.shown = Shown::Nothing;
            templates.children.push(template);
        }
    }
    if !templates.children.is_empty() {
        node.children.push(templates);
    }
}

/// The `ClusterResourceSets` node: the ClusterResourceSets of the binding named after the
/// Cluster (`spec.bindings[].clusterResourceSetName`), as references without state, as
/// upstream's `addClusterResourceSetsToObjectTree`. `None` without a binding, including when
/// the server does not serve `addons.cluster.x-k8s.io`.
async fn resource_sets_node(reader: &mut Reader<'_>, cluster: &str) -> Result<Option<Node>, Error> {
    let reference = serde_json::json!({
        "apiGroup": ADDONS_GROUP,
        "kind": "ClusterResourceSetBinding",
        "name": cluster,
    });
    let Some(binding) = reader.referenced(&reference).await? else {
        return Ok(None);
    };
    let mut group = Node::virtual_node(RESOURCE_SETS);
    group.meta_name = Some(RESOURCE_SETS.into());
    let bindings = binding["spec"]["bindings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for bound in bindings {
        if let Some(name) = bound["clusterResourceSetName"].as_str() {
            let mut node = Node::object("ClusterResourceSet", name);
            node.shown = Shown::Nothing;
            group.children.push(node);
        }
    }
    Ok(Some(group))
}

/// The API group of ClusterResourceSets and their bindings.
const ADDONS_GROUP: &str = "addons.cluster.x-k8s.io";

/// The virtual node of `--show-resourcesets`.
const RESOURCE_SETS: &str = "ClusterResourceSets";

/// The name a row shows, which upstream orders siblings by: `Meta - Kind/name`, `Kind/name`,
/// or a virtual node's name (so a Machine's BootstrapConfig comes before its
/// MachineInfrastructure).
fn row_name(node: &Node) -> String {
    match (&node.meta_name, node.is_virtual) {
        (Some(meta), true) => meta.clone(),
        (None, true) => node.name.clone(),
        (Some(meta), false) => format!("{meta} - {}/{}", node.kind, node.name),
        (None, false) => format!("{}/{}", node.kind, node.name),
    }
}

/// The virtual node of `--show-templates`.
const TEMPLATES: &str = "Templates";

/// Children in row-name order, except under the Cluster, where upstream's order holds
/// (infrastructure, control plane, workers); a `Templates` node comes first (upstream gives it
/// a higher z-order) and other virtual nodes (`Other`) last.
fn sort_children(node: &mut Node) {
    if node.kind != "Cluster" {
        node.children.sort_by_key(|child| {
            let templates = child.is_virtual && child.name == TEMPLATES;
            (!templates, child.is_virtual, row_name(child))
        });
    }
    for child in &mut node.children {
        sort_children(child);
    }
}

/// The REPLICAS (`spec/status`, as upstream prints them for MachineDeployments and
/// MachineSets), AVAILABLE, READY and UP TO DATE columns.
fn set_replica_counters(node: &mut Node, object: &Value) {
    let status = &object["status"];
    if let Some(desired) = object["spec"]["replicas"].as_i64() {
        node.replicas = Some(format!(
            "{desired}/{}",
            status["replicas"].as_i64().unwrap_or(0)
        ));
    }
    node.available = status["availableReplicas"].as_i64().map(|n| n.to_string());
    node.ready = status["readyReplicas"].as_i64().map(|n| n.to_string());
    node.up_to_date = status["upToDateReplicas"].as_i64().map(|n| n.to_string());
}

/// A Machine's node: counters from its conditions, and its infrastructure and bootstrap
/// objects when they are worth showing.
async fn machine_node(
    reader: &mut Reader<'_>,
    machine: &Value,
    options: &DescribeOptions,
) -> Result<Node, Error> {
    let mut node = object_node(machine, options);
    let is_true = |type_: &str| {
        if node.condition(type_).is_some_and(|c| c.status == "True") {
            "1"
        } else {
            "0"
        }
    };
    let (available, ready, up_to_date) =
        (is_true("Available"), is_true("Ready"), is_true("UpToDate"));
    node.replicas = Some("1".into());
    node.available = Some(available.into());
    node.ready = Some(ready.into());
    node.up_to_date = Some(up_to_date.into());
    let machine_ready = node.condition("Ready").cloned();
    let references = [
        (
            &machine["spec"]["infrastructureRef"],
            "MachineInfrastructure",
        ),
        (
            &machine["spec"]["bootstrap"]["configRef"],
            "BootstrapConfig",
        ),
    ];
    for (reference, meta_name) in references {
        let Some(object) = reader.referenced(reference).await? else {
            continue;
        };
        let mut child = object_node(&object, options);
        child.meta_name = Some(meta_name.into());
        let child_ready = child.condition("Ready");
        let echoes = match (child_ready, &machine_ready) {
            (None, _) => true,
            (Some(c), _) if c.status == "True" => true,
            (Some(c), Some(m)) => c.status == m.status && c.reason == m.reason,
            (Some(_), None) => false,
        };
        if options.echo || !echoes || child.show_conditions {
            node.children.push(child);
        }
    }
    Ok(node)
}

/// The node of an object: kind, name, deletion, conditions and whether to list them all.
fn object_node(object: &Value, options: &DescribeOptions) -> Node {
    let kind = object["kind"].as_str().unwrap_or("").to_string();
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let mut node = Node::object(&kind, &name);
    node.deleting = object["metadata"]["deletionTimestamp"].is_string();
    node.conditions = Condition::of(object);
    node.show_conditions = options.show_conditions.iter().any(|wanted| {
        wanted.eq_ignore_ascii_case("all")
            || wanted.eq_ignore_ascii_case(&kind)
            || *wanted == format!("{kind}/{name}")
    });
    node
}

fn core_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: corral_api::GROUP.into(),
        version: corral_api::VERSION.into(),
        api_version: format!("{}/{}", corral_api::GROUP, corral_api::VERSION),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Reads objects of one namespace, resolving the kinds references name through discovery
/// once per group.
pub(crate) struct Reader<'a> {
    connection: &'a Connection,
    namespace: String,
    resources: BTreeMap<(String, String), Option<ApiResource>>,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(connection: &'a Connection, namespace: &str) -> Reader<'a> {
        Reader {
            connection,
            namespace: namespace.into(),
            resources: BTreeMap::new(),
        }
    }

    /// Reads from `namespace` from now on, keeping the kinds resolved so far.
    pub(crate) fn set_namespace(&mut self, namespace: &str) {
        self.namespace = namespace.into();
    }

    fn api(&self, resource: &ApiResource) -> Api<DynamicObject> {
        Api::namespaced_with(self.connection.client.clone(), &self.namespace, resource)
    }

    async fn get(&self, resource: &ApiResource, name: &str) -> Result<Option<Value>, Error> {
        let object = self.api(resource).get_opt(name).await.map_err(|e| {
            self.connection
                .fail(format!("reading {} {name}", resource.kind), e)
        })?;
        Ok(object.map(|object| to_value(object, resource)))
    }

    async fn list(&self, resource: &ApiResource, selector: &str) -> Result<Vec<Value>, Error> {
        let list = self
            .api(resource)
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| {
                self.connection
                    .fail(format!("listing {}s", resource.kind), e)
            })?;
        Ok(list
            .items
            .into_iter()
            .map(|object| to_value(object, resource))
            .collect())
    }

    /// The object a v1beta2 reference (`apiGroup`, `kind`, `name`) names, if it exists and
    /// its kind is served.
    pub(crate) async fn referenced(&mut self, reference: &Value) -> Result<Option<Value>, Error> {
        let (Some(kind), Some(name)) = (reference["kind"].as_str(), reference["name"].as_str())
        else {
            return Ok(None);
        };
        let group = reference["apiGroup"]
            .as_str()
            .map(String::from)
            .or_else(|| {
                reference["apiVersion"]
                    .as_str()
                    .and_then(|v| v.split_once('/').map(|(g, _)| g.to_string()))
            })
            .unwrap_or_default();
        let key = (group.clone(), kind.to_string());
        if !self.resources.contains_key(&key) {
            let resolved = match kube::discovery::group(&self.connection.client, &group).await {
                Ok(api_group) => api_group
                    .recommended_kind(kind)
                    .map(|(resource, _)| resource),
                Err(kube::Error::Api(status)) if status.code == 404 => None,
                Err(kube::Error::Discovery(_)) => None,
                Err(error) => {
                    return Err(self
                        .connection
                        .fail(format!("discovering the API group {group}"), error));
                }
            };
            self.resources.insert(key.clone(), resolved);
        }
        match self.resources[&key].clone() {
            Some(resource) => self.get(&resource, name).await,
            None => Ok(None),
        }
    }
}

fn to_value(object: DynamicObject, resource: &ApiResource) -> Value {
    let mut value = serde_json::to_value(object).unwrap_or(Value::Null);
    value["kind"] = resource.kind.clone().into();
    value
}
