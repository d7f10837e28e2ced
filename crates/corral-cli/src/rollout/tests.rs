use super::*;

fn deployment(
    generation: i64,
    observed: i64,
    desired: i64,
    replicas: i64,
    up_to_date: i64,
    available: i64,
) -> Value {
    json!({
        "metadata": {"generation": generation},
        "spec": {"replicas": desired},
        "status": {"observedGeneration": observed, "replicas": replicas,
                   "upToDateReplicas": up_to_date, "availableReplicas": available},
    })
}

#[test]
fn status_reads_like_kubectl_rollout_status() {
    let cases = [
        (
            deployment(2, 1, 3, 3, 3, 3),
            "Waiting for machinedeployment spec update to be observed...",
            false,
        ),
        (
            deployment(2, 2, 3, 4, 1, 3),
            "Waiting for machinedeployment \"md\" rollout to finish: 1 out of 3 new replicas have been updated...",
            false,
        ),
        (
            deployment(2, 2, 3, 4, 3, 3),
            "Waiting for machinedeployment \"md\" rollout to finish: 1 old replicas are pending termination...",
            false,
        ),
        (
            deployment(2, 2, 3, 3, 3, 2),
            "Waiting for machinedeployment \"md\" rollout to finish: 2 of 3 updated replicas are available...",
            false,
        ),
        (
            deployment(2, 2, 3, 3, 3, 3),
            "machinedeployment \"md\" successfully rolled out",
            true,
        ),
    ];
    for (object, message, done) in cases {
        assert_eq!(
            rollout_status(Kind::MachineDeployment, "md", &object),
            (message.to_string(), done)
        );
    }
}
