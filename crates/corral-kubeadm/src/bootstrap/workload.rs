//! Clients of workload clusters, built from their `<cluster>-kubeconfig` Secrets and kept while
//! the Secret's content stays the same, so that a reconcile does not rebuild a client (and its
//! TLS configuration) each time.

use std::collections::HashMap;
use std::sync::Mutex;

use kube::config::{KubeConfigOptions, Kubeconfig};

/// Clients by cluster (`namespace/name`), with the kubeconfig they were built from.
#[derive(Default)]
pub struct WorkloadClients {
    clients: Mutex<HashMap<String, (Vec<u8>, kube::Client)>>,
}

impl WorkloadClients {
    /// A client for the cluster whose kubeconfig is `kubeconfig`, or why none can be built.
    pub async fn client(
        &self,
        namespace: &str,
        cluster: &str,
        kubeconfig: &[u8],
    ) -> Result<kube::Client, String> {
        let key = format!("{namespace}/{cluster}");
        if let Some((content, client)) = self.clients.lock().expect("not poisoned").get(&key)
            && content == kubeconfig
        {
            return Ok(client.clone());
        }
        let text = std::str::from_utf8(kubeconfig).map_err(|_| "it is not text".to_string())?;
        let parsed =
            Kubeconfig::from_yaml(text).map_err(|error| format!("it does not parse: {error}"))?;
        let config = kube::Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default())
            .await
            .map_err(|error| format!("it is not usable: {error}"))?;
        let client =
            kube::Client::try_from(config).map_err(|error| format!("no client: {error}"))?;
        self.clients
            .lock()
            .expect("not poisoned")
            .insert(key, (kubeconfig.to_vec(), client.clone()));
        Ok(client)
    }
}
