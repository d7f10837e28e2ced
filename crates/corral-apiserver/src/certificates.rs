//! CertificateSigningRequests (`certificates.k8s.io/v1`), as kube-apiserver's strategy serves
//! them: the API server records who asked (`spec.username`, `uid`, `groups` from the requester,
//! whatever the body says) and the spec never changes after creation; `/approval` changes only
//! the Approved/Denied/Failed conditions, `/status` everything else of the status (the issued
//! `certificate`), and a write to the object itself changes neither. Approving and signing are
//! a controller's job (the node agent's, on a workload cluster's control plane machines).
//!
//! Not done: kube's admission checks that an approver may `approve` and a signer `sign` for the
//! request's `signerName` (RBAC on `certificatesigningrequests/approval` and `/status` is all);
//! `spec.extra`.

use serde_json::{Value, json};
use x509_parser::pem::parse_x509_pem;
use x509_parser::prelude::FromDer;

use crate::auth::UserInfo;
use crate::error::Cause;

pub const GROUP: &str = "certificates.k8s.io";

/// The conditions `/approval` owns.
const APPROVAL_CONDITIONS: [&str; 2] = ["Approved", "Denied"];

/// The key usages kube accepts (`certificates.KeyUsage`).
const USAGES: &[&str] = &[
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
];

/// A new request: who asked is the requester, and it has no status yet.
pub fn prepare_create(object: &mut Value, requester: Option<&UserInfo>) {
    let map = object.as_object_mut().expect("objects are JSON objects");
    map.remove("status");
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    if let (Some(spec), Some(user)) = (spec.as_object_mut(), requester) {
        spec.insert("username".into(), json!(user.name));
        if user.uid.is_empty() {
            spec.remove("uid");
        } else {
            spec.insert("uid".into(), json!(user.uid));
        }
        spec.insert("groups".into(), json!(user.groups));
        spec.remove("extra");
    }
}

/// An update: the spec stays as created; through `/approval` only the approval conditions
/// change, through `/status` everything of the status but them.
pub fn prepare_update(subresource: Option<&str>, current: &Value, new: &mut Value) {
    let map = new.as_object_mut().expect("objects are JSON objects");
    match current.get("spec") {
        Some(spec) => map.insert("spec".into(), spec.clone()),
        None => map.remove("spec"),
    };
    let conditions_of = |object: &Value, approval: bool| -> Vec<Value> {
        object
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|condition| {
                let kind = condition["type"].as_str().unwrap_or("");
                APPROVAL_CONDITIONS.contains(&kind) == approval
            })
            .cloned()
            .collect()
    };
    let (kept, changed) = match subresource {
        // The approval conditions from the request, the rest as they were.
        Some("approval") => (conditions_of(current, false), conditions_of(new, true)),
        // The approval conditions as they were, the rest from the request.
        Some("status") => (conditions_of(current, true), conditions_of(new, false)),
        _ => return,
    };
    let mut status = new.get("status").cloned().unwrap_or_else(|| json!({}));
    if subresource == Some("approval") {
        // Only a signer sets the certificate.
        match current.pointer("/status/certificate") {
            Some(certificate) => status["certificate"] = certificate.clone(),
            None => {
                if let Some(status) = status.as_object_mut() {
                    status.remove("certificate");
                }
            }
        }
    }
    let conditions: Vec<Value> = changed.into_iter().chain(kept).collect();
    if let Some(status) = status.as_object_mut() {
        if conditions.is_empty() {
            status.remove("conditions");
        } else {
            status.insert("conditions".into(), Value::Array(conditions));
        }
    }
    new.as_object_mut()
        .expect("objects are JSON objects")
        .insert("status".into(), status);
}

/// kube's validation of a request: a PEM `CERTIFICATE REQUEST` whose signature verifies, a
/// qualified `signerName`, known and unique `usages`, and not both approved and denied.
pub fn validate(object: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut invalid = |field: &str, reason: &str, message: String| {
        causes.push(Cause {
            reason: reason.into(),
            message,
            field: field.into(),
        })
    };
    let spec = &object["spec"];
    match spec["request"].as_str() {
        None | Some("") => invalid(
            "spec.request",
            "FieldValueRequired",
            "Required value".into(),
        ),
        Some(encoded) => {
            if let Err(reason) = parse_request(encoded) {
                invalid(
                    "spec.request",
                    "FieldValueInvalid",
                    format!("Invalid value: []byte{{...}}: {reason}"),
                );
            }
        }
    }
    match spec["signerName"].as_str() {
        None | Some("") => invalid(
            "spec.signerName",
            "FieldValueRequired",
            "Required value".into(),
        ),
        Some(signer) => {
            let qualified = signer
                .split_once('/')
                .is_some_and(|(domain, path)| domain.contains('.') && !path.is_empty());
            if !qualified {
                invalid(
                    "spec.signerName",
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: {signer:?}: must be a fully qualified domain and path of the form 'example.com/signer-name'"
                    ),
                );
            }
        }
    }
    match spec["usages"].as_array() {
        None => invalid("spec.usages", "FieldValueRequired", "Required value".into()),
        Some(usages) => {
            if usages.is_empty() {
                invalid("spec.usages", "FieldValueRequired", "Required value".into());
            }
            let mut seen = std::collections::HashSet::new();
            for (index, usage) in usages.iter().enumerate() {
                let usage = usage.as_str().unwrap_or("");
                if !USAGES.contains(&usage) {
                    invalid(
                        &format!("spec.usages[{index}]"),
                        "FieldValueNotSupported",
                        format!("Unsupported value: {usage:?}"),
                    );
                } else if !seen.insert(usage) {
                    invalid(
                        &format!("spec.usages[{index}]"),
                        "FieldValueDuplicate",
                        format!("Duplicate value: {usage:?}"),
                    );
                }
            }
        }
    }
    let types: Vec<&str> = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|condition| condition["type"].as_str())
        .collect();
    if types.contains(&"Approved") && types.contains(&"Denied") {
        invalid(
            "status.conditions",
            "FieldValueInvalid",
            "Invalid value: Approved and Denied conditions are mutually exclusive".into(),
        );
    }
    causes
}

/// The DER of a base64-encoded PEM certificate request, after checking its signature.
fn parse_request(encoded: &str) -> Result<(), String> {
    use base64::Engine;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| "not base64-encoded".to_string())?;
    let (_, pem) =
        parse_x509_pem(&pem).map_err(|_| "PEM block type must be CERTIFICATE REQUEST")?;
    if pem.label != "CERTIFICATE REQUEST" {
        return Err("PEM block type must be CERTIFICATE REQUEST".into());
    }
    let (_, request) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
            .map_err(|error| format!("not a certificate request: {error}"))?;
    request
        .verify_signature()
        .map_err(|_| "the request's signature does not verify".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(kind: &str) -> Value {
        json!({"type": kind, "status": "True", "reason": "R"})
    }

    #[test]
    fn approval_changes_only_the_approval_conditions_and_status_only_the_rest() {
        let current = json!({
            "spec": {"username": "system:bootstrap:abcdef", "request": "x"},
            "status": {"conditions": [condition("Failed")]}
        });
        let mut approved = json!({
            "spec": {"username": "mallory"},
            "status": {"certificate": "forged", "conditions": [condition("Approved")]}
        });
        prepare_update(Some("approval"), &current, &mut approved);
        assert_eq!(approved["spec"]["username"], "system:bootstrap:abcdef");
        assert!(approved["status"].get("certificate").is_none());
        let types: Vec<_> = approved["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].clone())
            .collect();
        assert_eq!(types, [json!("Approved"), json!("Failed")]);

        let mut signed = json!({
            "spec": {},
            "status": {"certificate": "cert", "conditions": []}
        });
        prepare_update(Some("status"), &approved, &mut signed);
        assert_eq!(signed["status"]["certificate"], "cert");
        let types: Vec<_> = signed["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].clone())
            .collect();
        assert_eq!(types, [json!("Approved")]);
    }

    #[test]
    fn a_request_that_is_not_a_csr_is_refused_naming_the_field() {
        let causes = validate(&json!({"spec": {
            "request": "bm90IGEgcmVxdWVzdA==",
            "signerName": "kubelet",
            "usages": ["client auth", "client auth", "flying"]
        }}));
        let fields: Vec<_> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.request",
                "spec.signerName",
                "spec.usages[1]",
                "spec.usages[2]"
            ]
        );
    }
}
