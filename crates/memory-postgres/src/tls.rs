//! TLS to the server: `sslmode` and `sslrootcert` taken out of the
//! connection string, and the rustls connector they call for.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use memory_core::StoreError;
use percent_encoding::percent_decode_str;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::verify_server_cert_signed_by_trust_anchor;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode as DriverMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// How a connection uses TLS, as libpq's `sslmode` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    /// Never.
    Disable,
    /// When the server offers it, without checking its certificate; in
    /// the clear when it does not (the default).
    Prefer,
    /// Always, without checking the certificate.
    Require,
    /// Always; the certificate must be signed by a trusted root.
    VerifyCa,
    /// Always; the certificate must be signed by a trusted root and name
    /// the host connected to.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<Self, StoreError> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => {
                return Err(StoreError::Backend(format!(
                    "sslmode={other} in the PostgreSQL connection string is not supported: \
                     use disable, prefer, require, verify-ca or verify-full"
                )));
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The TLS settings of a connection string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tls {
    /// The mode, after `sslrootcert` made `require` into `verify-ca` (as
    /// libpq does).
    pub(crate) mode: SslMode,
    /// The file of trusted root certificates (PEM); the system's roots when
    /// `None`.
    pub(crate) root_cert: Option<PathBuf>,
}

/// Connection-string parameters about client certificates, which this
/// store does not support.
const UNSUPPORTED: [&str; 4] = ["sslcert", "sslkey", "sslpassword", "sslcrl"];

/// Takes `sslmode` and `sslrootcert` out of `url` (either form: a
/// `postgres://` URL or `key=value` pairs) and hands back the rest, for the
/// driver, with the settings they make.
///
/// # Errors
///
/// [`StoreError::Backend`] for an `sslmode` other than the five supported,
/// `sslrootcert=system` with a mode that does not verify, or a client
/// certificate parameter. The message names the parameter, never the rest
/// of the string (it may hold a password).
pub(crate) fn split(url: &str) -> Result<(String, Tls), StoreError> {
    let (rest, params) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        split_url(url)?
    } else {
        split_pairs(url)?
    };
    let mut mode = SslMode::Prefer;
    let mut root_cert = None;
    for (key, value) in params {
        match key.as_str() {
            "sslmode" => mode = SslMode::parse(&value)?,
            _ => root_cert = Some(value),
        }
    }
    let root_cert = match root_cert.as_deref() {
        None => None,
        Some("system") => {
            if mode != SslMode::VerifyFull {
                return Err(StoreError::Backend(format!(
                    "sslrootcert=system needs sslmode=verify-full, not {mode}"
                )));
            }
            None
        }
        Some(path) => {
            if mode == SslMode::Require {
                mode = SslMode::VerifyCa;
            }
            Some(PathBuf::from(path))
        }
    };
    Ok((rest, Tls { mode, root_cert }))
}

/// Whether `key` is one of ours; an error for a client certificate key.
fn ours(key: &str) -> Result<bool, StoreError> {
    if UNSUPPORTED.contains(&key) {
        return Err(StoreError::Backend(format!(
            "{key} in the PostgreSQL connection string is not supported: this store does not \
             authenticate with a client certificate"
        )));
    }
    Ok(matches!(key, "sslmode" | "sslrootcert"))
}

/// The parameters of a URL's query: ours out, the others left as written.
/// What cannot be decoded is left for the driver to refuse.
fn split_url(url: &str) -> Result<(String, Vec<(String, String)>), StoreError> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), Vec::new()));
    };
    let mut kept = Vec::new();
    let mut params = Vec::new();
    for part in query.split('&') {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        let decoded = (
            percent_decode_str(key).decode_utf8(),
            percent_decode_str(value).decode_utf8(),
        );
        match decoded {
            (Ok(key), Ok(value)) if ours(&key)? => {
                params.push((key.into_owned(), value.into_owned()));
            }
            _ => kept.push(part),
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, params))
}

/// The pairs of a `key=value` string (values quoted with `'`, `\` escaping
/// the next character): ours out, the others left as written. A string
/// that does not parse is left whole for the driver to refuse.
fn split_pairs(text: &str) -> Result<(String, Vec<(String, String)>), StoreError> {
    let whole = || Ok((text.to_owned(), Vec::new()));
    let mut rest = String::new();
    let mut params = Vec::new();
    let mut chars = text.char_indices().peekable();
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, _)) = chars.peek() else {
            break;
        };
        let mut key = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next_if(|(_, c)| *c == '=').is_none() {
            return whole();
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let quoted = chars.next_if(|(_, c)| *c == '\'').is_some();
        let mut value = String::new();
        let mut closed = !quoted;
        while let Some((_, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, escaped)) => value.push(escaped),
                    None => return whole(),
                },
                '\'' if quoted => {
                    closed = true;
                    break;
                }
                c if c.is_whitespace() && !quoted => break,
                c => value.push(c),
            }
        }
        if !closed {
            return whole();
        }
        let end = chars.peek().map_or(text.len(), |&(i, _)| i);
        if ours(&key)? {
            params.push((key, value));
        } else {
            rest.push_str(text[start..end].trim_end());
            rest.push(' ');
        }
    }
    Ok((rest.trim_end().to_owned(), params))
}

impl Tls {
    /// The mode the driver is told: it knows only disable, prefer and
    /// require; the certificate checks are the connector's.
    pub(crate) fn driver_mode(&self) -> DriverMode {
        match self.mode {
            SslMode::Disable => DriverMode::Disable,
            SslMode::Prefer => DriverMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => DriverMode::Require,
        }
    }

    /// The connector for the driver.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] when a verifying mode finds no root
    /// certificate: `sslrootcert` cannot be read or holds none, or the
    /// system has none.
    pub(crate) fn connector(&self) -> Result<MakeRustlsConnect, StoreError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| StoreError::Backend(format!("TLS set-up: {e}")))?;
        let algorithms = provider.signature_verification_algorithms;
        let config = match self.mode {
            SslMode::VerifyFull => builder
                .with_root_certificates(self.roots()?)
                .with_no_client_auth(),
            mode => {
                let roots = match mode {
                    SslMode::VerifyCa => Some(Arc::new(self.roots()?)),
                    _ => None,
                };
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(Verifier { roots, algorithms }))
                    .with_no_client_auth()
            }
        };
        Ok(MakeRustlsConnect::new(config))
    }

    /// The trusted roots: `sslrootcert`'s, or the system's.
    fn roots(&self) -> Result<RootCertStore, StoreError> {
        let mut roots = RootCertStore::empty();
        match &self.root_cert {
            Some(path) => {
                let shown = path.display();
                let certs = CertificateDer::pem_file_iter(path)
                    .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| {
                        StoreError::Backend(format!("cannot read sslrootcert {shown}: {e}"))
                    })?;
                let (added, _) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(StoreError::Backend(format!(
                        "sslrootcert {shown} holds no usable certificate (PEM expected)"
                    )));
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _) = roots.add_parsable_certificates(found.certs);
                if added == 0 {
                    return Err(StoreError::Backend(format!(
                        "sslmode={} found no root certificate on this system; name the \
                         certificate authority's file with sslrootcert=/path/to/ca.crt",
                        self.mode
                    )));
                }
            }
        }
        Ok(roots)
    }
}

/// Checks the server's certificate as the mode says. Without roots
/// (`prefer`, `require`) any certificate is accepted: as in libpq, those
/// modes encrypt but do not authenticate the server. With roots
/// (`verify-ca`) the certificate must chain to one of them; its names are
/// not looked at. Handshake signatures are checked either way, so the peer
/// holds the key of the certificate it sent.
#[derive(Debug)]
struct Verifier {
    roots: Option<Arc<RootCertStore>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls(mode: SslMode, root_cert: Option<&str>) -> Tls {
        Tls {
            mode,
            root_cert: root_cert.map(PathBuf::from),
        }
    }

    #[test]
    fn a_url_loses_the_tls_parameters_and_keeps_the_others() {
        let (rest, found) = split(
            "postgres://u:p@db:5432/x?sslmode=verify-full&application_name=a&sslrootcert=%2Fetc%2Fca%20dir%2Fca.crt",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u:p@db:5432/x?application_name=a");
        assert_eq!(found, tls(SslMode::VerifyFull, Some("/etc/ca dir/ca.crt")));
        let (rest, found) = split("postgresql://db/x?sslmode=disable").unwrap();
        assert_eq!(rest, "postgresql://db/x");
        assert_eq!(found, tls(SslMode::Disable, None));
        let (rest, found) = split("postgres://db/x").unwrap();
        assert_eq!(rest, "postgres://db/x");
        assert_eq!(found, tls(SslMode::Prefer, None));
    }

    #[test]
    fn key_value_pairs_lose_the_tls_parameters_and_keep_the_others() {
        let (rest, found) = split(
            "host=db  sslmode = verify-ca password='a b\\'c' sslrootcert='/a b/ca.crt' user=me",
        )
        .unwrap();
        assert_eq!(rest, "host=db password='a b\\'c' user=me");
        assert_eq!(found, tls(SslMode::VerifyCa, Some("/a b/ca.crt")));
        // What does not parse is left whole, for the driver to refuse.
        let (rest, found) = split("host=db password='open").unwrap();
        assert_eq!(rest, "host=db password='open");
        assert_eq!(found, tls(SslMode::Prefer, None));
    }

    #[test]
    fn a_root_certificate_makes_require_verify_the_authority() {
        let (_, found) = split("postgres://db/x?sslmode=require&sslrootcert=ca.crt").unwrap();
        assert_eq!(found.mode, SslMode::VerifyCa);
        let (_, found) = split("postgres://db/x?sslmode=verify-full&sslrootcert=system").unwrap();
        assert_eq!(found, tls(SslMode::VerifyFull, None));
    }

    #[test]
    fn unsupported_settings_are_named() {
        for (url, named) in [
            ("postgres://u:secret@db/x?sslmode=allow", "sslmode=allow"),
            (
                "postgres://u:secret@db/x?sslmode=verify_full",
                "sslmode=verify_full",
            ),
            ("postgres://u:secret@db/x?sslcert=c.pem", "sslcert"),
            ("host=db password=secret sslkey=k.pem", "sslkey"),
            (
                "postgres://u:secret@db/x?sslmode=require&sslrootcert=system",
                "sslrootcert=system needs sslmode=verify-full",
            ),
        ] {
            let err = split(url).unwrap_err().to_string();
            assert!(err.contains(named), "{url}: {err}");
            assert!(!err.contains("secret"), "{url}: {err}");
        }
    }

    #[test]
    fn the_driver_is_told_to_require_tls_for_every_verifying_mode() {
        for (mode, driver) in [
            (SslMode::Disable, DriverMode::Disable),
            (SslMode::Prefer, DriverMode::Prefer),
            (SslMode::Require, DriverMode::Require),
            (SslMode::VerifyCa, DriverMode::Require),
            (SslMode::VerifyFull, DriverMode::Require),
        ] {
            assert_eq!(tls(mode, None).driver_mode(), driver, "{mode}");
        }
    }

    #[test]
    fn a_root_certificate_file_without_certificates_is_refused() {
        let dir = std::env::temp_dir().join(format!("memory-postgres-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.crt");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = match tls(SslMode::VerifyFull, empty.to_str()).connector() {
            Err(err) => err.to_string(),
            Ok(_) => panic!("a file without certificates was accepted"),
        };
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("holds no usable certificate"), "{err}");
    }
}
