//! Vendor files → the neutral bundle.
//! TEMPORARY stub (replaced by the adapters' branch).
pub fn translate(
    source: &berth_api::migrations::VendorSource,
) -> Result<berth_api::migrations::MigrationBundle, berth_api::validate::FieldError> {
    Err(berth_api::validate::FieldError::new(
        "source",
        format!("stub {}", source.provider),
    ))
}
