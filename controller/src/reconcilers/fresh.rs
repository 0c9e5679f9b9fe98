//! Re-reading an object whose cached copy may predate our own last write.

use std::fmt::Debug;
use std::sync::Arc;

use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use crate::error::Result;

/// `object` as the API server has it now, when the cached copy may be stale around our
/// finalizer: right after we added it (kube's `finalizer()` would add it again with a JSON-patch
/// `test` that fails with 422), and while the object is being deleted (we may already have
/// removed it, and the object be gone). `None` when the object no longer exists.
pub async fn with_current_finalizers<K>(
    api: &Api<K>,
    object: Arc<K>,
    finalizer: &str,
) -> Result<Option<Arc<K>>>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let has_it = object.finalizers().iter().any(|f| f == finalizer);
    if has_it && object.meta().deletion_timestamp.is_none() {
        return Ok(Some(object));
    }
    Ok(api.get_opt(&object.name_any()).await?.map(Arc::new))
}
