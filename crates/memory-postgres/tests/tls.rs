//! TLS to a real server: `sslmode` and `sslrootcert` from the connection
//! string. Whether a connection is encrypted is read from the server's
//! `pg_stat_ssl`, found by the connection's `application_name`.
//!
//! Reads `MEMORY_POSTGRES_URL` (a server on 127.0.0.1 with `ssl=on`) and
//! `MEMORY_POSTGRES_CA` (the certificate authority that signed the
//! server's certificate for `localhost` and `127.0.0.1`), both set by
//! `.ci/postgres.sh`; each test skips with a notice when one is unset, and
//! fails when it is unset under CI.

use std::time::{SystemTime, UNIX_EPOCH};

use memory_core::test_util::{Needs, POSTGRES};
use memory_core::{Message, Store, StoredMessage};
use memory_postgres::PostgresStore;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

const CA: Needs = Needs {
    var: "MEMORY_POSTGRES_CA",
    how: "run `source .ci/postgres.sh`: it makes a certificate authority, starts the server \
          with ssl=on and a certificate the authority signed, and sets it to the authority's \
          certificate",
};

/// The server's URL and the authority's certificate file, when both are
/// set.
fn server() -> Option<(String, String)> {
    Some((POSTGRES.value()?, CA.value()?))
}

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}_{}_{nanos}", std::process::id())
}

/// `url` with its host replaced by `host` (the TCP connection still goes
/// to 127.0.0.1, through `hostaddr`) and `params` added to its query.
fn variant(url: &str, host: &str, params: &[(&str, &str)]) -> String {
    assert!(
        url.contains("@127.0.0.1:"),
        "MEMORY_POSTGRES_URL is expected on 127.0.0.1, as .ci/postgres.sh starts it"
    );
    let mut url = url.replacen("@127.0.0.1:", &format!("@{host}:"), 1);
    let mut separator = if url.contains('?') { '&' } else { '?' };
    for (key, value) in [("hostaddr", "127.0.0.1")].iter().chain(params) {
        url.push(separator);
        url.push_str(key);
        url.push('=');
        url.push_str(&utf8_percent_encode(value, NON_ALPHANUMERIC).to_string());
        separator = '&';
    }
    url
}

/// Connects a store through `url` under a name of its own, writes and
/// reads a message through it, and says whether the server sees its
/// connections encrypted (every one of them alike).
async fn encrypted(url: &str, control: &str) -> Result<bool, memory_core::StoreError> {
    let name = unique("tls");
    let store = PostgresStore::connect_with(&format!("{url}&application_name={name}"), 1).await?;
    let tenant = store.with_tenant(&name);
    let v = tenant
        .append("s", vec![StoredMessage::new(Message::user("hi"), 1, false)])
        .await?;
    assert_eq!(tenant.load("s").await?.version, v);

    let (client, connection) = tokio_postgres::connect(control, tokio_postgres::NoTls)
        .await
        .expect("a plain control connection");
    tokio::spawn(connection);
    let rows = client
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = $1",
            &[&name],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "the store's one pooled connection is open");
    Ok(rows[0].get(0))
}

#[tokio::test]
async fn require_encrypts() {
    let Some((url, _)) = server() else { return };
    let require = variant(&url, "127.0.0.1", &[("sslmode", "require")]);
    assert!(encrypted(&require, &url).await.unwrap());
}

#[tokio::test]
async fn prefer_is_the_default_and_encrypts_when_the_server_offers_it() {
    let Some((url, _)) = server() else { return };
    assert!(
        encrypted(&variant(&url, "127.0.0.1", &[]), &url)
            .await
            .unwrap()
    );
    let prefer = variant(&url, "127.0.0.1", &[("sslmode", "prefer")]);
    assert!(encrypted(&prefer, &url).await.unwrap());
}

#[tokio::test]
async fn disable_connects_in_the_clear() {
    let Some((url, _)) = server() else { return };
    let disable = variant(&url, "127.0.0.1", &[("sslmode", "disable")]);
    assert!(!encrypted(&disable, &url).await.unwrap());
}

#[tokio::test]
async fn verify_full_with_the_right_authority_and_host_connects() {
    let Some((url, ca)) = server() else { return };
    for host in ["localhost", "127.0.0.1"] {
        let full = variant(
            &url,
            host,
            &[("sslmode", "verify-full"), ("sslrootcert", &ca)],
        );
        assert!(encrypted(&full, &url).await.unwrap(), "{host}");
    }
}

#[tokio::test]
async fn verify_full_against_a_wrong_host_name_fails_naming_it() {
    let Some((url, ca)) = server() else { return };
    let wrong = variant(
        &url,
        "wrong-host.invalid",
        &[("sslmode", "verify-full"), ("sslrootcert", &ca)],
    );
    let err = encrypted(&wrong, &url).await.unwrap_err().to_string();
    assert!(err.contains("sslmode=verify-full"), "{err}");
    assert!(
        err.contains("certificate not valid for name \"wrong-host.invalid\""),
        "{err}"
    );
    assert!(!err.contains(":pw"), "the password is not shown: {err}");
}

#[tokio::test]
async fn verify_ca_checks_the_authority_but_not_the_name() {
    let Some((url, ca)) = server() else { return };
    let other_name = variant(
        &url,
        "wrong-host.invalid",
        &[("sslmode", "verify-ca"), ("sslrootcert", &ca)],
    );
    assert!(encrypted(&other_name, &url).await.unwrap());
    // `require` with a root certificate is `verify-ca`, as in libpq.
    let require = variant(
        &url,
        "wrong-host.invalid",
        &[("sslmode", "require"), ("sslrootcert", &ca)],
    );
    assert!(encrypted(&require, &url).await.unwrap());
}

#[tokio::test]
async fn a_certificate_from_an_unknown_authority_is_refused() {
    let Some((url, _)) = server() else { return };
    // The system's roots did not sign the test server's certificate.
    for mode in ["verify-full", "verify-ca"] {
        let system = variant(&url, "localhost", &[("sslmode", mode)]);
        match encrypted(&system, &url).await {
            Err(err) => {
                let err = err.to_string();
                assert!(
                    err.contains("UnknownIssuer") || err.contains("no root certificate"),
                    "{mode}: {err}"
                );
            }
            Ok(_) => panic!("{mode} accepted a certificate no system root signed"),
        }
    }
}

#[tokio::test]
async fn a_missing_root_certificate_file_is_named() {
    let Some((url, ca)) = server() else { return };
    let missing = format!("{ca}.missing");
    let full = variant(
        &url,
        "localhost",
        &[("sslmode", "verify-full"), ("sslrootcert", &missing)],
    );
    let err = encrypted(&full, &url).await.unwrap_err().to_string();
    assert!(
        err.contains(&format!("cannot read sslrootcert {missing}")),
        "{err}"
    );
}
