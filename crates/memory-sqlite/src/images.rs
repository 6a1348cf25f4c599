//! The `images` table: each distinct image of a tenant's messages once, by
//! the digest of its bytes; rows name them (see
//! [`memory_store_support::images`]).

use std::collections::BTreeMap;

use memory_core::StoreError;
use memory_store_support::{Key, Row, attach_images, image_digests};
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::backend;

/// Writes the images `rows` name that the tenant's table does not hold
/// yet, inside the caller's transaction.
pub(crate) fn insert_images(tx: &Connection, key: &Key, rows: &[Row]) -> Result<(), StoreError> {
    if rows.iter().all(|row| row.images.is_empty()) {
        return Ok(());
    }
    let mut known = tx
        .prepare_cached("SELECT 1 FROM images WHERE tenant = ?1 AND digest = ?2")
        .map_err(backend)?;
    let mut insert = tx
        .prepare_cached("INSERT OR IGNORE INTO images (tenant, digest, data) VALUES (?1, ?2, ?3)")
        .map_err(backend)?;
    for blob in rows.iter().flat_map(|row| &row.images) {
        // Checked first, so that an image sent again is not copied again.
        let held = known
            .query_row(params![key.tenant, blob.digest], |_| Ok(()))
            .optional()
            .map_err(backend)?;
        if held.is_none() {
            insert
                .execute(params![key.tenant, blob.digest, blob.data])
                .map_err(backend)?;
        }
    }
    Ok(())
}

/// Gives `rows` the bytes of the images they name, read from the
/// tenant's table inside the caller's transaction.
pub(crate) fn read_images<'r>(
    tx: &Connection,
    key: &Key,
    rows: impl IntoIterator<Item = &'r mut Row>,
) -> Result<(), StoreError> {
    let mut rows: Vec<&mut Row> = rows.into_iter().collect();
    let wanted = image_digests(rows.iter().map(|row| &**row))?;
    if wanted.is_empty() {
        return Ok(());
    }
    let mut select = tx
        .prepare_cached("SELECT data FROM images WHERE tenant = ?1 AND digest = ?2")
        .map_err(backend)?;
    let mut fetched = BTreeMap::new();
    for digest in wanted {
        let data: Option<Vec<u8>> = select
            .query_row(params![key.tenant, digest], |row| row.get(0))
            .optional()
            .map_err(backend)?;
        if let Some(data) = data {
            fetched.insert(digest, data);
        }
    }
    attach_images(rows.iter_mut().map(|row| &mut **row), &fetched)
}
