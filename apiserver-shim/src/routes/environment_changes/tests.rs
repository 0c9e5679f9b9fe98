//! Diffs and promotions of variables between environments.

use super::*;
use berth_crds::variable::VariableExposure;

fn var(key: &str, value: &str) -> PlainVariable {
    PlainVariable {
        key: key.into(),
        value: value.into(),
        exposure: VariableExposure::Runtime,
    }
}

#[test]
fn a_diff_names_each_change_and_masks_secrets_on_both_sides() {
    let staging = [
        var("MODE", "fast"),
        var("API_TOKEN", "new"),
        var("ONLY_STAGING", "1"),
    ];
    let production = [
        var("MODE", "fast"),
        var("API_TOKEN", "old"),
        var("ONLY_PROD", "2"),
    ];
    let diff = variable_diff(&staging, &production);
    let by_key = |k: &str| diff.iter().find(|d| d.key == k).unwrap();
    assert_eq!(by_key("MODE").change, VariableChange::Unchanged);
    assert_eq!(by_key("ONLY_STAGING").change, VariableChange::Removed);
    assert_eq!(by_key("ONLY_PROD").change, VariableChange::Added);
    let token = by_key("API_TOKEN");
    assert_eq!(
        token.change,
        VariableChange::Changed,
        "a masked change still shows"
    );
    assert_eq!(token.left.as_ref().unwrap().value, "****");
    assert_eq!(token.right.as_ref().unwrap().value, "****");
}

#[test]
fn a_promotion_overrides_same_keys_and_keeps_the_targets_others() {
    let merged = promoted(
        &[var("MODE", "fast")],
        &[var("MODE", "slow"), var("KEEP", "1")],
    );
    assert_eq!(merged, vec![var("KEEP", "1"), var("MODE", "fast")]);
}
