use super::*;

#[test]
fn token_file_reads_kube_apiserver_csv() {
    let file = TokenFile::parse(
        "secret1,alice,uid-1,\"group1,group2\"\nsecret2, bob ,uid-2\n\n,nobody,uid-3\nsecret3,carol,uid-4,ops\n",
        "tokens.csv",
    )
    .unwrap();
    assert_eq!(file.len(), 3);
    let alice = file.user("secret1").unwrap();
    assert_eq!(alice.name, "alice");
    assert_eq!(alice.uid, "uid-1");
    assert_eq!(alice.groups, ["group1", "group2", AUTHENTICATED_GROUP]);
    assert_eq!(
        file.user("secret3").unwrap().groups,
        ["ops", AUTHENTICATED_GROUP]
    );
    assert_eq!(file.user("secret2").unwrap().groups, [AUTHENTICATED_GROUP]);
    assert!(file.user("nope").is_none());
}

#[test]
fn token_file_with_too_few_columns_names_the_line() {
    let error = TokenFile::parse("a,b,c\nonly,two\n", "tokens.csv").unwrap_err();
    assert_eq!(
        error.to_string(),
        "token file tokens.csv must have at least 3 columns (token, user name, user uid), found 2 on line 2"
    );
}

fn request(authorization: Option<&str>) -> http::Request<()> {
    let mut builder = http::Request::builder().uri("/api");
    if let Some(value) = authorization {
        builder = builder.header(http::header::AUTHORIZATION, value);
    }
    builder.body(()).unwrap()
}

#[test]
fn authenticator_takes_tokens_then_anonymous() {
    let tokens = Arc::new(TokenFile::parse("t0k3n,alice,1", "f").unwrap());
    let strict = Authenticator::new(AuthenticationConfig {
        tokens: Some(tokens.clone()),
        anonymous: false,
        ..Default::default()
    });
    assert_eq!(
        strict
            .authenticate(&request(Some("Bearer t0k3n")))
            .unwrap()
            .user()
            .name,
        "alice"
    );
    assert_eq!(
        strict
            .authenticate(&request(Some("Bearer wrong")))
            .unwrap_err()
            .status(),
        StatusCode::UNAUTHORIZED
    );
    assert!(strict.authenticate(&request(None)).is_err());
    let open = Authenticator::new(AuthenticationConfig {
        tokens: Some(tokens),
        anonymous: true,
        ..Default::default()
    });
    assert_eq!(
        open.authenticate(&request(None)).unwrap().user().name,
        ANONYMOUS_USER
    );
    assert_eq!(
        open.authenticate(&request(None)).unwrap().user().groups,
        [UNAUTHENTICATED_GROUP]
    );
    // A wrong token fails even with anonymous requests allowed.
    assert!(open.authenticate(&request(Some("Bearer wrong"))).is_err());
}

#[test]
fn a_client_certificate_comes_first() {
    let authenticator = Authenticator::new(AuthenticationConfig::default());
    let mut with_certificate = request(Some("Bearer wrong"));
    with_certificate
        .extensions_mut()
        .insert(ClientCertificate::User(Arc::new(UserInfo::authenticated(
            "admin",
            "",
            vec![MASTERS_GROUP.into()],
        ))));
    let credential = authenticator.authenticate(&with_certificate).unwrap();
    let user = credential.user();
    assert_eq!(user.name, "admin");
    assert_eq!(user.groups, [MASTERS_GROUP, AUTHENTICATED_GROUP]);
}

impl Credential {
    fn user(&self) -> &UserInfo {
        match self {
            Credential::User(user) => user,
            other => panic!("{other:?}, not a user"),
        }
    }
}

#[test]
fn bootstrap_tokens_are_left_to_their_secret_only_when_enabled() {
    let without = Authenticator::new(AuthenticationConfig::default());
    assert!(
        without
            .authenticate(&request(Some("Bearer abcdef.0123456789abcdef")))
            .is_err()
    );
    let with = Authenticator::new(AuthenticationConfig {
        bootstrap_tokens: true,
        ..Default::default()
    });
    assert!(matches!(
        with.authenticate(&request(Some("Bearer abcdef.0123456789abcdef"))),
        Ok(Credential::BootstrapToken(token)) if token == "abcdef.0123456789abcdef"
    ));
    assert!(
        with.authenticate(&request(Some("Bearer not-a-bootstrap-token")))
            .is_err()
    );
}
