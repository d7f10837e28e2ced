//! What the API server refuses of a ProviderPlugin at create: a scheme that is not a transport,
//! and plain `http://` or `grpc://` off loopback without `insecure: true`; each a 422 naming
//! the field.

use corral_infra_plugin::api::ProviderPlugin;
use corral_testenv::TestEnv;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

async fn create(api: &Api<ProviderPlugin>, name: &str, spec: Value) -> Result<(), String> {
    let plugin: ProviderPlugin = serde_json::from_value(json!({
        "apiVersion": "corral.dev/v1alpha1", "kind": "ProviderPlugin",
        "metadata": { "name": name }, "spec": spec,
    }))
    .unwrap();
    match api.create(&PostParams::default(), &plugin).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{status:?}");
            Err(status.message)
        }
        Err(error) => panic!("{error}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_endpoints_off_loopback_are_refused_unless_insecure() {
    let env = TestEnv::start().await;
    let crds: Vec<Value> = corral_infra_plugin::crds()
        .into_iter()
        .map(|crd| serde_json::to_value(crd).unwrap())
        .collect();
    env.install_crds(&crds).await;
    let api: Api<ProviderPlugin> = Api::all(env.client.clone());

    for (name, endpoint) in [
        ("loopback-http", "http://127.0.0.1:9000"),
        ("loopback-grpc", "grpc://[::1]:9001"),
        ("localhost", "http://localhost:9000/prefix"),
        ("tls-http", "https://pool.example:443"),
        ("tls-grpc", "grpcs://10.1.2.3:9001"),
    ] {
        create(&api, name, json!({ "endpoint": endpoint }))
            .await
            .unwrap_or_else(|message| panic!("{endpoint} refused: {message}"));
    }
    let message = create(&api, "plain", json!({ "endpoint": "http://10.1.2.3:9000" }))
        .await
        .unwrap_err();
    assert!(
        message
            .contains("spec.endpoint: plain http:// or grpc:// is allowed only to a loopback host"),
        "{message}"
    );
    create(
        &api,
        "plain-grpc",
        json!({ "endpoint": "grpc://pool.example:9001" }),
    )
    .await
    .unwrap_err();
    create(
        &api,
        "insecure",
        json!({ "endpoint": "http://10.1.2.3:9000", "insecure": true }),
    )
    .await
    .unwrap();
    let message = create(&api, "ftp", json!({ "endpoint": "ftp://127.0.0.1:21" }))
        .await
        .unwrap_err();
    assert!(message.contains("spec.endpoint"), "{message}");
    let message = create(
        &api,
        "slow",
        json!({ "endpoint": "http://127.0.0.1:1", "timeoutSeconds": 0 }),
    )
    .await
    .unwrap_err();
    assert!(message.contains("spec.timeoutSeconds"), "{message}");
}
