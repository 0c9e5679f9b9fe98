//! The lists whose entries a command names by id, slug or name (`berth db show orders`), read
//! as the API's own types.

use berth_api::credentials::{CredentialList, CredentialRecord};
use berth_api::dependencies::{DependencyResourceList, DependencyResourceSummary};
use berth_api::environments::{EnvironmentList, EnvironmentRecord};
use berth_api::projects::{ProjectList, ProjectRecord};
use berth_api::resources::{ResourceList, ResourceRecord};
use berth_api::servers::{ServerList, ServerRecord};
use berth_api::storage::{StorageVolumeList, StorageVolumeSummary};
use serde::de::DeserializeOwned;

/// An entry a name can pick: its id, and its slug and name where it has them.
pub trait Named {
    fn id(&self) -> &str;
    fn slug(&self) -> Option<&str> {
        None
    }
    fn name(&self) -> Option<&str> {
        None
    }
}

/// One of an entry's names.
pub type Key<T> = fn(&T) -> Option<&str>;

/// An entry's names in the order a name is matched against them: an exact id wins, then a
/// slug, then a name.
pub fn keys<T: Named>() -> [Key<T>; 3] {
    [|item| Some(item.id()), T::slug, T::name]
}

/// A list answer (`{items: […]}`) whose entries are [`Named`].
pub trait Listing: DeserializeOwned {
    type Item: Named;
    fn into_items(self) -> Vec<Self::Item>;
}

/// `Named` for an entry with an id, a name and, where given, a slug.
macro_rules! named {
    ($item:ty) => {
        impl Named for $item {
            fn id(&self) -> &str {
                &self.id
            }
            fn name(&self) -> Option<&str> {
                Some(&self.name)
            }
        }
    };
    ($item:ty, slug) => {
        impl Named for $item {
            fn id(&self) -> &str {
                &self.id
            }
            fn slug(&self) -> Option<&str> {
                Some(&self.slug)
            }
            fn name(&self) -> Option<&str> {
                Some(&self.name)
            }
        }
    };
}

/// `Listing` for a list whose entries are its `items`.
macro_rules! listing {
    ($list:ty, $item:ty) => {
        impl Listing for $list {
            type Item = $item;
            fn into_items(self) -> Vec<$item> {
                self.items
            }
        }
    };
}

named!(CredentialRecord);
named!(EnvironmentRecord);
named!(ServerRecord);
named!(DependencyResourceSummary, slug);
named!(ProjectRecord, slug);
named!(ResourceRecord, slug);
named!(StorageVolumeSummary, slug);

listing!(CredentialList, CredentialRecord);
listing!(DependencyResourceList, DependencyResourceSummary);
listing!(EnvironmentList, EnvironmentRecord);
listing!(ProjectList, ProjectRecord);
listing!(ResourceList, ResourceRecord);
listing!(ServerList, ServerRecord);
listing!(StorageVolumeList, StorageVolumeSummary);
