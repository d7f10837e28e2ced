//! What Corral installs into a management plane and runs there: one list of providers, each
//! with its CRDs, its inventory entry and its controllers. `init` installs the CRDs and the
//! inventory; `controllers` and `corral up` run the controllers.
//!
//! A new built-in provider is one more entry in [`providers`], one more task in
//! [`start_controllers`], and its admission rules in [`admission_rules`].

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use corral_api::clusterctl::{Provider, ProviderType};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, Patch, PatchParams};

use crate::{Connection, Error, FIELD_MANAGER, VERSION};

/// A built-in provider: what clusterctl's inventory says about it, and its CRDs.
pub struct BuiltinProvider {
    pub type_: ProviderType,
    /// The provider's name: `cluster-api`, `kubeadm`, `in-memory`.
    pub name: &'static str,
    /// The namespace of its inventory entry, upstream's for the same provider.
    pub namespace: &'static str,
    pub crds: fn() -> Vec<CustomResourceDefinition>,
}

impl BuiltinProvider {
    /// `cluster-api`, `infrastructure-in-memory`: the inventory name and the
    /// `cluster.x-k8s.io/provider` label value.
    pub fn label(&self) -> String {
        self.type_.manifest_label(self.name)
    }
}

/// Every provider built into Corral, core first (upstream's install order: core, then
/// bootstrap, control plane, infrastructure).
pub fn providers() -> Vec<BuiltinProvider> {
    vec![
        BuiltinProvider {
            type_: ProviderType::CoreProvider,
            name: "cluster-api",
            namespace: "capi-system",
            crds: corral_api::crds,
        },
        BuiltinProvider {
            type_: ProviderType::BootstrapProvider,
            name: "kubeadm",
            namespace: "capi-kubeadm-bootstrap-system",
            crds: || kubeadm_crds(corral_kubeadm::api::BOOTSTRAP_GROUP),
        },
        BuiltinProvider {
            type_: ProviderType::ControlPlaneProvider,
            name: "kubeadm",
            namespace: "capi-kubeadm-control-plane-system",
            crds: || kubeadm_crds(corral_kubeadm::api::CONTROL_PLANE_GROUP),
        },
        BuiltinProvider {
            type_: ProviderType::InfrastructureProvider,
            name: corral_infra_inmemory::api::PROVIDER_NAME,
            namespace: "capim-system",
            crds: corral_infra_inmemory::crds,
        },
        BuiltinProvider {
            type_: ProviderType::InfrastructureProvider,
            name: corral_infra_plugin::api::PROVIDER_NAME,
            namespace: "corral-plugin-system",
            crds: corral_infra_plugin::crds,
        },
    ]
}

/// The admission rules of every built-in provider's kinds (upstream's defaulting and
/// validating webhooks), for the API server that serves their CRDs
/// (`corral_apiserver::ServerConfig::admission`).
pub fn admission_rules() -> corral_admission::RuleSet {
    corral_api::admission::rules()
        .extend(corral_kubeadm::api::admission::rules())
        .extend(corral_infra_inmemory::api::admission::rules())
}

/// corral-kubeadm's CRDs of one of its two providers, by API group.
fn kubeadm_crds(group: &str) -> Vec<CustomResourceDefinition> {
    corral_kubeadm::crds()
        .into_iter()
        .filter(|crd| crd.spec.group == group)
        .collect()
}

/// What [`init`] did.
#[derive(Debug, Default)]
pub struct InitReport {
    /// CRD names, in install order.
    pub crds: Vec<String>,
    /// Inventory entries as `namespace/name`.
    pub providers: Vec<String>,
    /// The components' ClusterRoles (`roles.rs`).
    pub cluster_roles: Vec<String>,
    /// The admission webhook configurations, empty until the process serving them registers.
    pub webhook_configurations: Vec<String>,
}

/// Installs every built-in provider's CRDs, its inventory entry, its ServiceAccount and its
/// least-privilege ClusterRole (`roles.rs`), as `clusterctl init` does.
/// Idempotent: a second run changes nothing (server-side apply of the same objects).
pub async fn init(connection: &Connection) -> Result<InitReport, Error> {
    let mut report = InitReport::default();
    let providers = providers();
    for provider in &providers {
        report
            .crds
            .extend(install_crds(connection, provider).await?);
    }
    wait_until_served::<Provider>(connection, "providers.clusterctl.cluster.x-k8s.io").await?;
    for provider in &providers {
        report
            .providers
            .push(install_inventory(connection, provider).await?);
    }
    crate::roles::install_controllers_account(connection).await?;
    for provider in &providers {
        report
            .cluster_roles
            .extend(crate::roles::install(connection, provider).await?);
    }
    // The plugin kinds' admission webhook: the process running the plugin controllers fills
    // in where it serves (`start_plugin_webhook`).
    corral_infra_plugin::admission::install_configuration(&connection.client, FIELD_MANAGER)
        .await
        .map_err(|error| {
            connection.fail(
                format!(
                    "creating the ValidatingWebhookConfiguration {}",
                    corral_infra_plugin::admission::CONFIGURATION
                ),
                error,
            )
        })?;
    report
        .webhook_configurations
        .push(corral_infra_plugin::admission::CONFIGURATION.to_owned());
    Ok(report)
}

/// Applies the CRDs of `provider`, labelled as clusterctl labels what it installs.
pub async fn install_crds(
    connection: &Connection,
    provider: &BuiltinProvider,
) -> Result<Vec<String>, Error> {
    let crds: Api<CustomResourceDefinition> = Api::all(connection.client.clone());
    let mut names = Vec::new();
    for mut crd in (provider.crds)() {
        let labels = crd.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels.insert(corral_api::labels::CLUSTERCTL.into(), String::new());
        labels.insert(corral_api::labels::PROVIDER_NAME.into(), provider.label());
        let name = crd.metadata.name.clone().unwrap_or_default();
        let mut value = serde_json::to_value(&crd).expect("a CRD serializes");
        value["apiVersion"] = "apiextensions.k8s.io/v1".into();
        value["kind"] = "CustomResourceDefinition".into();
        crds.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&value),
        )
        .await
        .map_err(|error| connection.fail(format!("installing the CRD {name}"), error))?;
        names.push(name);
    }
    Ok(names)
}

/// Creates the provider's namespace and its `Provider` inventory entry; returns
/// `namespace/name`.
pub async fn install_inventory(
    connection: &Connection,
    provider: &BuiltinProvider,
) -> Result<String, Error> {
    let label = provider.label();
    let labels = BTreeMap::from([
        (corral_api::labels::CLUSTERCTL.to_string(), String::new()),
        (corral_api::labels::PROVIDER_NAME.to_string(), label.clone()),
    ]);
    let namespaces: Api<Namespace> = Api::all(connection.client.clone());
    let namespace = serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": provider.namespace, "labels": labels},
    });
    namespaces
        .patch(
            provider.namespace,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&namespace),
        )
        .await
        .map_err(|error| {
            connection.fail(
                format!("creating the namespace {}", provider.namespace),
                error,
            )
        })?;
    let entry = Provider {
        metadata: ObjectMeta {
            name: Some(label.clone()),
            namespace: Some(provider.namespace.into()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        provider_name: Some(provider.name.into()),
        type_: Some(provider.type_),
        version: Some(VERSION.into()),
        watched_namespace: None,
    };
    let mut value = serde_json::to_value(&entry).expect("a Provider serializes");
    value["apiVersion"] = corral_api::clusterctl::API_VERSION.into();
    value["kind"] = "Provider".into();
    let inventory: Api<Provider> = Api::namespaced(connection.client.clone(), provider.namespace);
    inventory
        .patch(
            &label,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&value),
        )
        .await
        .map_err(|error| connection.fail(format!("recording the provider {label}"), error))?;
    Ok(format!("{}/{label}", provider.namespace))
}

/// Waits until the server serves the kind `K` of the CRD `crd`: a real kube-apiserver serves a
/// new CRD only once it is Established.
async fn wait_until_served<K>(connection: &Connection, crd: &str) -> Result<(), Error>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::all(connection.client.clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match api.list_metadata(&ListParams::default().limit(1)).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(connection.fail(format!("listing {crd}"), error)),
        }
        if tokio::time::Instant::now() > deadline {
            return Err(Error::Timeout(format!(
                "the server did not serve the CRD {crd} within 60s of its creation"
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Fails with what to do when the Cluster API CRDs are not installed at the server.
pub async fn check_installed(connection: &Connection) -> Result<(), Error> {
    let clusters: Api<corral_api::Cluster> = Api::all(connection.client.clone());
    match clusters
        .list_metadata(&ListParams::default().limit(1))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Err(Error::Invalid(format!(
            "the Cluster API CRDs are not installed at {}; run `corral init` first",
            connection.server
        ))),
        Err(error) => Err(connection.fail("listing Clusters", error)),
    }
}

/// The simulated cloud of the in-memory provider.
pub type Cloud = Arc<dyn corral_cloud::Cloud>;

/// Runs the core controllers and every built-in provider's controllers until `shutdown`
/// resolves; returns when they have all stopped.
pub async fn run_controllers(
    client: kube::Client,
    cloud: Cloud,
    shutdown: impl Future<Output = ()> + Send + Clone + 'static,
) -> Result<(), Error> {
    // The providers and the core controllers share one watch per kind.
    let caches = corral_runtime::Caches::new(client.clone());
    let provider = corral_infra_inmemory::run_with_caches(
        client.clone(),
        cloud,
        caches.clone(),
        shutdown.clone(),
    );
    let bootstrap = corral_kubeadm::bootstrap::run_with_caches(
        client.clone(),
        caches.clone(),
        shutdown.clone(),
    );
    let control_plane = corral_kubeadm::controlplane::run_with_caches(
        client.clone(),
        corral_kubeadm::controlplane::Config::default(),
        caches.clone(),
        shutdown.clone(),
    );
    // Providers in any language: the generic controllers calling ProviderPlugins.
    let plugins =
        corral_infra_plugin::run_with_caches(client.clone(), caches.clone(), shutdown.clone());
    let core = corral_controllers::run_with_caches(
        client,
        corral_controllers::Config::default(),
        caches,
        shutdown,
    );
    let ((), (), (), (), core) = tokio::join!(provider, plugins, bootstrap, control_plane, core);
    core.map_err(|error| Error::Api {
        doing: "running the core controllers".into(),
        reason: crate::error::innermost_message(&error),
    })
}

/// Serves the admission webhook of the plugin kinds' `spec.config`
/// (`corral_infra_plugin::admission`) on `listen` until `shutdown`, reading ProviderPlugins
/// through `client`, and registers it in the configuration `init` created, as reached at
/// `host` (the name or address the API server calls; its certificate is issued for it).
/// Returns the URL registered.
pub async fn start_plugin_webhook(
    client: kube::Client,
    listen: std::net::SocketAddr,
    host: &str,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<String, Error> {
    use corral_infra_plugin::admission::{WebhookServer, register};
    let failed = |error: corral_infra_plugin::admission::Error| Error::Api {
        doing: "serving the plugin admission webhook".into(),
        reason: crate::error::innermost_message(&error),
    };
    // `init` creates it: this process may only change it.
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let name = corral_infra_plugin::admission::CONFIGURATION;
    let existing = configurations
        .get_opt(name)
        .await
        .map_err(|error| Error::Api {
            doing: format!("reading the ValidatingWebhookConfiguration {name}"),
            reason: crate::error::innermost_message(&error),
        })?;
    if existing.is_none() {
        return Err(Error::Invalid(format!(
            "the ValidatingWebhookConfiguration {name} does not exist; run `corral init` first"
        )));
    }
    let server = WebhookServer::start(client.clone(), listen, host, shutdown)
        .await
        .map_err(failed)?;
    register(&client, &server.url, &server.ca_pem)
        .await
        .map_err(failed)?;
    Ok(server.url)
}

/// [`run_controllers`] on a task of its own; a failure is logged.
pub fn start_controllers(
    client: kube::Client,
    cloud: Cloud,
    shutdown: impl Future<Output = ()> + Send + Clone + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if let Err(error) = run_controllers(client, cloud, shutdown).await {
            tracing::error!(error = %error, "The controllers stopped");
        }
    })
}
