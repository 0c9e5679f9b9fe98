//! The limits of spec §8 and the field bounds Berth adds to them: defined once in
//! `berth-vocabulary` (which the REST wire types share) and re-exported here for the CRD
//! schemas.

pub use berth_vocabulary::limits::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn organization_namespaces_stay_dns_labels() {
        let prefix = crate::organization::NAMESPACE_PREFIX;
        assert!(prefix.len() + ORGANIZATION_SLUG_MAX <= DNS_LABEL_MAX);
    }
}
