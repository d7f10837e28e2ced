//! The user of a verified client certificate, as kube-apiserver's
//! `CommonNameUserConversion`: the subject's CN is the user, each O a group.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;

use super::{ClientCertificate, UserInfo};

/// What the end-entity certificate of a verified chain says; `None` without a certificate.
pub(crate) fn client_certificate(
    chain: Option<&[CertificateDer<'_>]>,
) -> Option<ClientCertificate> {
    let leaf = chain?.first()?;
    Some(match user_of(leaf) {
        Some(user) => ClientCertificate::User(Arc::new(user)),
        None => ClientCertificate::Unusable,
    })
}

fn user_of(certificate: &CertificateDer<'_>) -> Option<UserInfo> {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate.as_ref()).ok()?;
    let subject = parsed.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .filter(|cn| !cn.is_empty())?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect();
    Some(UserInfo::authenticated(name, "", groups))
}
