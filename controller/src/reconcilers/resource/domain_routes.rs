//! The domain routes of a Resource's access summary (spec §2.2 `latestDurableDomainRoute`,
//! `latestServerAppliedDomainRoute`), from its DomainBindings' status. Pure.

use berth_crds::condition::{self, READY, wire_time};
use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::domain_binding::{DomainBinding, condition_type};
use berth_crds::resource::{AccessScheme, AppliedAccessRoute};
use berth_crds::server::ProxyKind;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

/// `(durable, server-applied)`: the newest binding with a URL, and the newest whose route the
/// edge proxy applied. `https` once TLS is active (the binding's URL says so). None before a
/// deployment serves the resource: a route names the deployment that realizes it.
pub fn domain_routes<'a>(
    bindings: impl IntoIterator<Item = &'a DomainBinding>,
    serving: Option<&Deployment>,
    target_port: i64,
) -> (Option<AppliedAccessRoute>, Option<AppliedAccessRoute>) {
    let Some(serving) = serving else {
        return (None, None);
    };
    let mut routed: Vec<(&DomainBinding, AppliedAccessRoute, bool)> = bindings
        .into_iter()
        .filter_map(|binding| {
            let status = binding.status.as_ref()?;
            let url = status.url.clone()?;
            let applied = condition::is_true(&status.conditions, condition_type::ROUTE_APPLIED);
            let changed = condition::find(&status.conditions, READY)
                .map(|c| c.last_transition_time.clone())
                .or_else(|| binding.metadata.creation_timestamp.clone())
                .unwrap_or(Time(Timestamp::UNIX_EPOCH));
            let route = AppliedAccessRoute {
                scheme: if url.starts_with("https://") {
                    AccessScheme::Https
                } else {
                    AccessScheme::Http
                },
                url,
                hostname: binding.spec.hostname.clone(),
                provider_key: Some("caddy".into()),
                deployment_id: serving.name_any(),
                deployment_status: DeploymentState::Succeeded,
                path_prefix: binding.spec.path_prefix.clone(),
                proxy_kind: ProxyKind::Caddy,
                target_port: Some(target_port),
                updated_at: wire_time(&changed),
            };
            Some((binding, route, applied))
        })
        .collect();
    // Newest last (the fixed-width times sort as text); ties by name, so the choice is stable.
    routed
        .sort_by(|a, b| (&a.1.updated_at, a.0.name_any()).cmp(&(&b.1.updated_at, b.0.name_any())));
    let durable = routed.last().map(|(_, route, _)| route.clone());
    let applied = routed
        .iter()
        .rev()
        .find(|(_, _, applied)| *applied)
        .map(|(_, route, _)| route.clone());
    (durable, applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::condition::{Condition, ConditionStatus};
    use berth_crds::domain_binding::DomainBindingStatus;

    fn binding(name: &str, url: &str, applied: bool, at: i64) -> DomainBinding {
        let mut binding: DomainBinding = serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "DomainBinding",
            "metadata": { "name": name },
            "spec": { "resourceId": "web", "hostname": format!("{name}.example") },
        }))
        .unwrap();
        let now = Timestamp::from_second(1_800_000_000 + at).unwrap();
        let state = if applied {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        };
        binding.status = Some(DomainBindingStatus {
            url: Some(url.into()),
            conditions: vec![
                Condition::new(condition_type::ROUTE_APPLIED, state, "x", "", None, now),
                Condition::new(READY, state, "x", "", None, now),
            ],
            ..Default::default()
        });
        binding
    }

    #[test]
    fn the_newest_binding_is_durable_and_the_newest_applied_one_is_server_applied() {
        let shop = binding("shop", "https://shop.example/", true, 0);
        let blog = binding("blog", "http://blog.example/", false, 10);
        let serving: Deployment = serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Deployment",
            "metadata": { "name": "dep-web-1" },
            "spec": { "resourceId": "web", "serverId": "local", "environmentId": "env",
                      "projectId": "prj", "trigger": "x" },
        }))
        .unwrap();
        let (durable, applied) = domain_routes([&shop, &blog], Some(&serving), 8080);
        let durable = durable.unwrap();
        assert_eq!(durable.hostname, "blog.example");
        assert_eq!(durable.scheme, AccessScheme::Http);
        let applied = applied.unwrap();
        assert_eq!(applied.url, "https://shop.example/");
        assert_eq!(applied.scheme, AccessScheme::Https);
        assert_eq!(durable.deployment_id, "dep-web-1");
        assert_eq!(domain_routes([], Some(&serving), 8080), (None, None));
        assert_eq!(domain_routes([&shop], None, 8080), (None, None));
    }
}
