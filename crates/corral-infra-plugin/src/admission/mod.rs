//! Typed validation of `spec.config` at admission: a validating admission webhook
//! (`admission.k8s.io/v1` AdmissionReview) for PluginCluster, PluginMachine and their
//! templates, served by the process that runs the plugin controllers (`corral controllers`,
//! `corral up`) and registered with the ValidatingWebhookConfiguration [`CONFIGURATION`]
//! (`server.rs`). So it works alike on Corral's API server and on a real Kubernetes cluster.
//!
//! A create, or an update that changes `spec.plugin` or `spec.config`, is checked in two steps:
//!
//! 1. against the plugin's published schema (`clusterConfigSchema` or `machineConfigSchema`
//!    of the ProviderPlugin's last GetInfo, or of a GetInfo made now when it has none), with
//!    the API server's own CRD schema validation (`corral_apiserver::schema::check`): every
//!    field error in one 422 `Invalid`, each cause naming its path under `spec.config`
//!    (`spec.template.spec.config` for templates); a field the schema does not declare is an
//!    error too, unless the schema preserves unknown fields;
//! 2. then, when the plugin lists the capability, with its `ValidateConfig`, whose field
//!    errors come back the same way.
//!
//! A plugin that cannot be asked (not Ready, unreachable, no answer in time, garbage) refuses
//! the object with a message naming it, unless its ProviderPlugin says
//! `spec.admission.failurePolicy: Ignore`. Deletions, and updates that leave the plugin and
//! its configuration alone (finalizers, labels), are always allowed.

mod server;

pub use server::{CONFIGURATION, Error, WEBHOOK, WebhookServer, install_configuration, register};

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use corral_admission::field::{ErrorType, FieldError};
use corral_apiserver::schema::CompiledSchema;
use corral_provider_sdk::v1::{self, ConfigKind};
use corral_provider_sdk::{CallFailure, Client};
use kube::api::Api;
use serde_json::{Value, json};

use crate::api::{FailurePolicy, GROUP, PluginInfo, ProviderPlugin, ProviderPluginSpec};

/// The longest an admission waits for one call to a plugin: less than the webhook's own
/// timeout, so that the answer names the plugin rather than the webhook.
const CALL_DEADLINE: Duration = Duration::from_secs(10);

/// What the webhook holds: a client of the management plane to read ProviderPlugins, a
/// client per plugin and the schemas compiled so far.
pub struct ConfigWebhook {
    client: kube::Client,
    plugins: Mutex<HashMap<String, (ProviderPluginSpec, Client)>>,
}

/// Compiled object schemas, by the plugin schema's JSON text and the kind (where the config
/// sits); shared by the webhook and the PluginMachine controller's last check.
static SCHEMAS: LazyLock<SchemaCache> = LazyLock::new(Default::default);

type SchemaCache = Mutex<HashMap<(String, &'static str), Arc<CompiledSchema>>>;

/// Which of the four kinds a request is about, and where its configuration sits.
#[derive(Clone, Copy)]
struct Target {
    kind: &'static str,
    config_kind: ConfigKind,
    /// The path of the object holding `plugin` and `config`: `spec` or `spec.template.spec`.
    spec_path: &'static [&'static str],
}

impl Target {
    fn of(kind: &str) -> Option<Target> {
        const SPEC: &[&str] = &["spec"];
        const TEMPLATE: &[&str] = &["spec", "template", "spec"];
        let (kind, config_kind, spec_path) = match kind {
            "PluginCluster" => ("PluginCluster", ConfigKind::Cluster, SPEC),
            "PluginClusterTemplate" => ("PluginClusterTemplate", ConfigKind::Cluster, TEMPLATE),
            "PluginMachine" => ("PluginMachine", ConfigKind::Machine, SPEC),
            "PluginMachineTemplate" => ("PluginMachineTemplate", ConfigKind::Machine, TEMPLATE),
            _ => return None,
        };
        Some(Target {
            kind,
            config_kind,
            spec_path,
        })
    }

    fn spec<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        self.spec_path
            .iter()
            .try_fold(object, |value, key| value.get(key))
    }

    fn field(&self, name: &str) -> String {
        let mut path = self.spec_path.join(".");
        path.push('.');
        path.push_str(name);
        path
    }
}

/// Why an object is refused.
enum Refusal {
    /// Field errors: a 422 `Invalid`.
    Invalid(Vec<FieldError>),
    /// The plugin could not be asked (under failurePolicy Fail): a 503 naming it.
    Unavailable(String),
}

impl ConfigWebhook {
    pub fn new(client: kube::Client) -> ConfigWebhook {
        ConfigWebhook {
            client,
            plugins: Mutex::new(HashMap::new()),
        }
    }

    /// Answers an AdmissionReview request with its AdmissionReview response.
    pub async fn review(&self, review: &Value) -> Value {
        let request = review.get("request").cloned().unwrap_or(Value::Null);
        let uid = request.get("uid").cloned().unwrap_or(Value::from(""));
        let response = match self.admit(&request).await {
            Ok(()) => json!({ "uid": uid, "allowed": true }),
            Err(refusal) => json!({
                "uid": uid,
                "allowed": false,
                "status": status(&request, refusal),
            }),
        };
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        })
    }

    /// Admits a PluginCluster's or PluginMachine's config (unchanged ones and deletions pass):
    /// the ProviderPlugin must exist and speak Corral's contract, the config must match the
    /// plugin's schema, then pass the plugin's own ValidateConfig.
    async fn admit(&self, request: &Value) -> Result<(), Refusal> {
        let kind = request
            .pointer("/kind/kind")
            .and_then(Value::as_str)
            .unwrap_or("");
        let Some(target) = Target::of(kind) else {
            return Ok(());
        };
        let object = request.get("object").unwrap_or(&Value::Null);
        if object.pointer("/metadata/deletionTimestamp").is_some() {
            return Ok(());
        }
        let Some(spec) = target.spec(object) else {
            return Ok(());
        };
        let plugin_name = spec.get("plugin").and_then(Value::as_str).unwrap_or("");
        let config = spec.get("config");
        if let Some(old_spec) = request.get("oldObject").and_then(|old| target.spec(old))
            && old_spec.get("plugin") == spec.get("plugin")
            && old_spec.get("config") == config
        {
            return Ok(());
        }
        let plugin = self.read_plugin(&target, plugin_name).await?;
        let policy = plugin.failure_policy();
        let unavailable = |why: String| match policy {
            FailurePolicy::Fail => Err(Refusal::Unavailable(format!(
                "ProviderPlugin {plugin_name} cannot check {}: {why} (spec.admission.failurePolicy of the ProviderPlugin is Fail)",
                target.field("config")
            ))),
            FailurePolicy::Ignore => Ok(()),
        };
        let client = match self.client_of(&plugin) {
            Ok(client) => client,
            Err(why) => return unavailable(why),
        };

        let info = match plugin_info(&plugin, &client).await {
            Ok(info) => info,
            Err(why) => return unavailable(why),
        };
        if !info
            .contract_versions
            .iter()
            .any(|version| version == corral_provider_sdk::CONTRACT_VERSION)
        {
            return Err(Refusal::Unavailable(format!(
                "ProviderPlugin {plugin_name} speaks contract {:?}, Corral speaks {}; it is never called",
                info.contract_versions,
                corral_provider_sdk::CONTRACT_VERSION
            )));
        }
        let errors = check_schema(&target, &info, object);
        if !errors.is_empty() {
            return Err(Refusal::Invalid(errors));
        }

        // The plugin's own checks.
        let validates = info
            .capabilities
            .iter()
            .any(|c| c == corral_provider_sdk::capabilities::VALIDATE_CONFIG);
        if !validates {
            // A plugin that answers nothing now is refused all the same, as its status says.
            if !plugin.is_ready() && plugin.status.as_ref().is_some_and(|s| s.info.is_some()) {
                return unavailable("it is not Ready".to_owned());
            }
            return Ok(());
        }
        validate_config(&target, &client, config, unavailable).await
    }

    /// The ProviderPlugin `name` the object names; a field error on `spec.plugin` when there is
    /// none.
    async fn read_plugin(&self, target: &Target, name: &str) -> Result<ProviderPlugin, Refusal> {
        let plugins: Api<ProviderPlugin> = Api::all(self.client.clone());
        match plugins.get_opt(name).await {
            Ok(Some(plugin)) => Ok(plugin),
            Ok(None) => Err(Refusal::Invalid(vec![FieldError::invalid(
                target.field("plugin"),
                name,
                format!("there is no ProviderPlugin {name:?}"),
            )])),
            Err(error) => Err(Refusal::Unavailable(format!(
                "cannot read ProviderPlugin {name}: {error}"
            ))),
        }
    }

    /// The client of the plugin's current spec, bounded by [`CALL_DEADLINE`].
    fn client_of(&self, plugin: &ProviderPlugin) -> Result<Client, String> {
        let name = kube::ResourceExt::name_any(plugin);
        let mut plugins = self.plugins.lock().expect("plugin clients lock");
        if let Some((spec, client)) = plugins.get(&name)
            && *spec == plugin.spec
        {
            return Ok(client.clone());
        }
        let mut config = crate::controllers::plugins::client_config(&plugin.spec);
        config.timeout = config.timeout.min(CALL_DEADLINE);
        let client = Client::new(&config).map_err(|error| error.to_string())?;
        plugins.insert(name, (plugin.spec.clone(), client.clone()));
        Ok(client)
    }
}

/// The field errors of `object` (a Plugin* object of `kind`, as JSON) against the schema of
/// its configuration in the plugin's GetInfo; empty for another kind or without a schema.
pub(crate) fn config_errors(kind: &str, info: &PluginInfo, object: &Value) -> Vec<FieldError> {
    Target::of(kind).map_or_else(Vec::new, |target| check_schema(&target, info, object))
}

/// The plugin's schema and capabilities: the last GetInfo's, or one asked for now; why not
/// when the plugin does not answer.
async fn plugin_info(plugin: &ProviderPlugin, client: &Client) -> Result<PluginInfo, String> {
    match plugin
        .status
        .as_ref()
        .and_then(|status| status.info.clone())
    {
        Some(info) => Ok(info),
        None => match client.get_info(v1::GetInfoRequest {}).await {
            Ok(info) => Ok(crate::controllers::provider_plugin::plugin_info(info)),
            Err(error) => Err(error.to_string()),
        },
    }
}

/// The plugin's ValidateConfig of `config`: its field errors under the target's
/// `spec.config`, or what `unavailable` makes of a failed call.
async fn validate_config(
    target: &Target,
    client: &Client,
    config: Option<&Value>,
    unavailable: impl Fn(String) -> Result<(), Refusal>,
) -> Result<(), Refusal> {
    let request = v1::ValidateConfigRequest {
        kind: target.config_kind as i32,
        config: crate::controllers::plugin_machine::config_struct(config),
    };
    match client.validate_config(request).await {
        Ok(answer) if answer.field_errors.is_empty() => Ok(()),
        Ok(answer) => Err(Refusal::Invalid(
            answer
                .field_errors
                .into_iter()
                .map(|error| {
                    let field = if error.field.is_empty() {
                        target.field("config")
                    } else {
                        format!(
                            "{}.{}",
                            target.field("config"),
                            error.field.trim_start_matches('.')
                        )
                    };
                    FieldError::new(ErrorType::Invalid, field, None, error.message)
                })
                .collect(),
        )),
        Err(error) => match &error.failure {
            // The plugin said what is wrong with it.
            CallFailure::Provider(provider)
                if provider.code == corral_provider_sdk::v1::ErrorCode::InvalidConfig =>
            {
                Err(Refusal::Invalid(vec![FieldError::new(
                    ErrorType::Invalid,
                    target.field("config"),
                    None,
                    provider.message.clone(),
                )]))
            }
            _ => unavailable(error.to_string()),
        },
    }
}

fn check_schema(target: &Target, info: &PluginInfo, object: &Value) -> Vec<FieldError> {
    let config_schema = match target.config_kind {
        ConfigKind::Cluster => info.cluster_config_schema.as_ref(),
        _ => info.machine_config_schema.as_ref(),
    };
    let Some(config_schema) = config_schema else {
        return Vec::new();
    };
    let key = (config_schema.to_string(), target.kind);
    let schema = SCHEMAS
        .lock()
        .expect("schemas lock")
        .entry(key)
        .or_insert_with(|| Arc::new(CompiledSchema::new(&wrap(target, config_schema))))
        .clone();
    corral_apiserver::schema::check(&schema, object)
}

/// A schema of the whole object that holds the plugin's schema at the configuration's place
/// and lets everything else be: so the errors name their full paths, as the API server's own.
fn wrap(target: &Target, config_schema: &Value) -> Value {
    let mut config_schema = config_schema.clone();
    if let Some(map) = config_schema.as_object_mut() {
        map.entry("type").or_insert_with(|| "object".into());
    }
    let mut schema = json!({
        "type": "object",
        "properties": { "config": config_schema },
        "x-kubernetes-preserve-unknown-fields": true,
    });
    for key in target.spec_path.iter().rev() {
        schema = json!({
            "type": "object",
            "properties": { *key: schema },
            "x-kubernetes-preserve-unknown-fields": true,
        });
    }
    schema
}

/// The `Status` of a refusal, as kube-apiserver renders `Invalid` (the group kind, the name,
/// every cause) or a plugin that cannot be asked (503).
fn status(request: &Value, refusal: Refusal) -> Value {
    let kind = request
        .pointer("/kind/kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = request
        .pointer("/object/metadata/name")
        .or_else(|| request.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    match refusal {
        Refusal::Invalid(errors) => {
            let details: Vec<String> = errors.iter().map(FieldError::message).collect();
            let listed = if details.len() == 1 {
                details[0].clone()
            } else {
                format!("[{}]", details.join(", "))
            };
            let causes: Vec<Value> = errors
                .iter()
                .map(|error| {
                    json!({
                        "reason": error.type_.reason(),
                        "message": error.body(),
                        "field": error.field,
                    })
                })
                .collect();
            json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": format!("{kind}.{GROUP} {name:?} is invalid: {listed}"),
                "reason": "Invalid",
                "details": { "name": name, "group": GROUP, "kind": kind, "causes": causes },
                "code": 422,
            })
        }
        Refusal::Unavailable(message) => json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": "ServiceUnavailable",
            "code": 503,
        }),
    }
}
