//! `--store`: where `memory replay` keeps its sessions.

use std::sync::Arc;

use memory_core::{InMemoryStore, Store};
use memory_postgres::PostgresStore;
use memory_sqlite::SqliteStore;

use crate::CliError;

/// Opens the store `spec` names: `memory`, `sqlite:PATH` or `postgres:URL`.
///
/// # Errors
///
/// [`CliError::Usage`] for an unknown form or a store that cannot be
/// opened; the message never repeats a connection string (it may hold a
/// password).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert!(memory_cli::store::open("memory").await.is_ok());
/// let Err(e) = memory_cli::store::open("redis:x").await else { panic!() };
/// assert!(e.to_string().contains("sqlite:PATH"));
/// # });
/// ```
pub async fn open(spec: &str) -> Result<Arc<dyn Store>, CliError> {
    if spec == "memory" {
        return Ok(Arc::new(InMemoryStore::new()));
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        return SqliteStore::open(path)
            .map(|s| Arc::new(s) as Arc<dyn Store>)
            .map_err(|e| CliError::Usage(format!("--store sqlite:{path}: {e}")));
    }
    if let Some(store) = postgres(spec).await? {
        return Ok(Arc::new(store));
    }
    Err(CliError::Usage(format!(
        "--store {spec:?}: expected memory, sqlite:PATH, postgres:URL or postgres://..."
    )))
}

/// [`open`] for a server: a PostgreSQL store opens every pooled
/// connection at start, so the first burst of requests does not queue
/// behind logins.
///
/// # Errors
///
/// As [`open`]; a connection of the pool that cannot be opened.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert!(memory_cli::store::open_for_server("memory").await.is_ok());
/// # });
/// ```
pub async fn open_for_server(spec: &str) -> Result<Arc<dyn Store>, CliError> {
    match postgres(spec).await? {
        Some(store) => {
            store
                .warm()
                .await
                .map_err(|e| CliError::Usage(format!("--store postgres: {e}")))?;
            Ok(Arc::new(store))
        }
        None => open(spec).await,
    }
}

/// The PostgreSQL store `spec` names, if it names one.
async fn postgres(spec: &str) -> Result<Option<PostgresStore>, CliError> {
    let url = if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        spec
    } else if let Some(url) = spec.strip_prefix("postgres:") {
        url
    } else {
        return Ok(None);
    };
    PostgresStore::connect(url)
        .await
        .map(Some)
        .map_err(|e| CliError::Usage(format!("--store postgres: {e}")))
}
