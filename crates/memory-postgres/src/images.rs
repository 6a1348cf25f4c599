//! The `memory_images` table: each distinct image of a tenant's messages
//! once, by the digest of its bytes; rows name them (see
//! [`memory_store_support::images`]).

use std::collections::{BTreeMap, BTreeSet};

use deadpool_postgres::GenericClient;
use memory_core::StoreError;
use memory_store_support::{Key, Row, attach_images, image_digests};

use crate::error::backend;

/// Which of some digests the tenant's table holds.
const HELD: &str = "SELECT digest FROM memory_images WHERE tenant = $1 AND digest = ANY($2)";

/// The bytes of some digests.
const READ: &str = "SELECT digest, data FROM memory_images WHERE tenant = $1 AND digest = ANY($2)";

/// Of a write's images, those the tenant's table lacks, as the arrays the
/// write's `UNNEST` takes: digests and bytes.
#[derive(Default)]
pub(crate) struct Lacking<'i> {
    pub(crate) digests: Vec<&'i str>,
    pub(crate) data: Vec<&'i [u8]>,
}

/// Of the distinct images a write names (by digest), those the tenant's
/// table does not hold yet. An image another writer stores meanwhile is
/// skipped by the write's `ON CONFLICT DO NOTHING`; one held stays held
/// (images are never deleted). No images, no query.
pub(crate) async fn missing<'i>(
    client: &impl GenericClient,
    key: &Key,
    images: &'i BTreeMap<String, Vec<u8>>,
) -> Result<Lacking<'i>, StoreError> {
    if images.is_empty() {
        return Ok(Lacking::default());
    }
    let digests: Vec<&str> = images.keys().map(String::as_str).collect();
    let held: BTreeSet<String> = client
        .query(HELD, &[&key.tenant, &digests])
        .await
        .map_err(backend)?
        .iter()
        .map(|row| row.try_get(0).map_err(backend))
        .collect::<Result<_, _>>()?;
    let (digests, data) = images
        .iter()
        .filter(|(digest, _)| !held.contains(digest.as_str()))
        .map(|(digest, data)| (digest.as_str(), data.as_slice()))
        .unzip();
    Ok(Lacking { digests, data })
}

/// Gives `rows` the bytes of the images they name, read from the
/// tenant's table (images are never changed or deleted, so any read
/// after the rows' finds them).
pub(crate) async fn read_images<'r>(
    client: &impl GenericClient,
    key: &Key,
    rows: impl IntoIterator<Item = &'r mut Row>,
) -> Result<(), StoreError> {
    let mut rows: Vec<&mut Row> = rows.into_iter().collect();
    let wanted: Vec<String> = image_digests(rows.iter().map(|row| &**row))?
        .into_iter()
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let mut fetched = BTreeMap::new();
    for row in client
        .query(READ, &[&key.tenant, &wanted])
        .await
        .map_err(backend)?
    {
        fetched.insert(
            row.try_get::<_, String>(0).map_err(backend)?,
            row.try_get::<_, Vec<u8>>(1).map_err(backend)?,
        );
    }
    attach_images(rows.iter_mut().map(|row| &mut **row), &fetched)
}
