//! stub
use berth_api::migrations::MigrationBundle;
use berth_api::validate::FieldError;
use super::{Defaults, Files};
pub fn translate(_files: &Files, _defaults: &Defaults) -> Result<MigrationBundle, FieldError> { todo!() }
