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
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        return PostgresStore::connect(spec)
            .await
            .map(|s| Arc::new(s) as Arc<dyn Store>)
            .map_err(|e| CliError::Usage(format!("--store postgres://...: {e}")));
    }
    if let Some(url) = spec.strip_prefix("postgres:") {
        return PostgresStore::connect(url)
            .await
            .map(|s| Arc::new(s) as Arc<dyn Store>)
            .map_err(|e| CliError::Usage(format!("--store postgres:...: {e}")));
    }
    Err(CliError::Usage(format!(
        "--store {spec:?}: expected memory, sqlite:PATH, postgres:URL or postgres://..."
    )))
}
