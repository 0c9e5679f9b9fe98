//! The samples list's pure parts: its query parameters, gaps and freshness, what a deploy
//! token sees, retention and the wire names.

use super::*;
use berth_crds::monitoring::{PROVIDER_KEY, SampleLabels, ScopeEvidence, Totals};

fn query(pairs: &[(&str, &str)]) -> QueryParams {
    QueryParams::from_pairs(pairs)
}

fn now() -> Timestamp {
    "2030-01-02T00:00:00Z".parse().unwrap()
}

fn parse(pairs: &[(&str, &str)]) -> ApiResult<Parsed> {
    let signals: Vec<String> = pairs
        .iter()
        .filter(|(k, _)| *k == "signals")
        .map(|(_, v)| v.to_string())
        .collect();
    parse_query(&query(pairs), &signals, now())
}

#[test]
fn the_window_defaults_to_the_last_hour_the_limit_to_300_and_signals_to_all() {
    let parsed = parse(&[]).unwrap();
    assert_eq!(parsed.to, now());
    assert_eq!(parsed.from.to_string(), "2030-01-01T23:00:00Z");
    assert_eq!(parsed.limit, 300);
    assert_eq!(parsed.signals, Signal::ALL.to_vec());
    assert_eq!(parsed.scope, Scope::default());
}

#[test]
fn scope_filters_window_signals_and_limit_are_read() {
    let parsed = parse(&[
        ("scope.kind", "resource"),
        ("scope.serverId", "edge"),
        ("scope.projectId", "shop"),
        ("scope.environmentId", "production"),
        ("scope.resourceId", "web"),
        ("scope.deploymentId", "dep-web-1"),
        ("window.from", "2030-01-01T00:00:00Z"),
        ("window.to", "2030-01-01T06:00:00Z"),
        ("signals", "cpu,docker"),
        ("limit", "720"),
    ])
    .unwrap();
    assert_eq!(parsed.scope.kind, Some(ScopeKind::Resource));
    assert_eq!(parsed.scope.server_id.as_deref(), Some("edge"));
    assert_eq!(parsed.scope.deployment_id.as_deref(), Some("dep-web-1"));
    assert_eq!(parsed.from.to_string(), "2030-01-01T00:00:00Z");
    assert_eq!(parsed.to.to_string(), "2030-01-01T06:00:00Z");
    assert_eq!(parsed.signals, [Signal::Cpu, Signal::Docker]);
    assert_eq!(parsed.limit, 720);
    let json = serde_json::to_value(&parsed.scope).unwrap();
    assert_eq!(json["kind"], "resource");
    assert_eq!(json["resourceId"], "web");
}

#[test]
fn signals_may_repeat_and_be_comma_separated() {
    let values = signal_values(Some(
        "signals=cpu%2Cmemory&limit=5&signals=inode&signals=cpu",
    ))
    .unwrap();
    assert_eq!(values, ["cpu,memory", "inode", "cpu"]);
    assert_eq!(
        parse_signals(&values).unwrap(),
        [Signal::Cpu, Signal::Memory, Signal::Inode]
    );
    assert!(signal_values(None).unwrap().is_empty());
    assert_eq!(signal_values(Some("signals=")).unwrap(), [""]);
}

#[test]
fn every_bad_parameter_is_a_422_naming_its_field() {
    let long = "a".repeat(254);
    for (pairs, field) in [
        (vec![("scope.kind", "cluster")], "scope.kind"),
        (vec![("scope.serverId", "")], "scope.serverId"),
        (vec![("scope.projectId", long.as_str())], "scope.projectId"),
        (vec![("scope.environmentId", "")], "scope.environmentId"),
        (
            vec![("scope.resourceId", long.as_str())],
            "scope.resourceId",
        ),
        (vec![("scope.deploymentId", "")], "scope.deploymentId"),
        (
            vec![("window.from", "2030-01-01T00:00:00+02:00")],
            "window.from",
        ),
        (vec![("window.to", "yesterday")], "window.to"),
        (vec![("window.to", "2030-01-01T00:00:00")], "window.to"),
        (
            vec![
                ("window.from", "2030-01-02T00:00:00Z"),
                ("window.to", "2030-01-01T00:00:00Z"),
            ],
            "window.from",
        ),
        (vec![("signals", "gpu")], "signals"),
        (vec![("signals", "cpu,")], "signals"),
        (vec![("signals", "")], "signals"),
        (vec![("limit", "0")], "limit"),
        (vec![("limit", "721")], "limit"),
        (vec![("limit", "ten")], "limit"),
        (vec![("scope.server", "edge")], "scope.server"),
        (vec![("window", "1h")], "window"),
    ] {
        let error = parse(&pairs).unwrap_err();
        assert_eq!(error.status, 422, "{pairs:?}");
        assert_eq!(error.body.details["field"], field, "{pairs:?}");
    }
    let error = parse(&[("signals", "cpu,gpu")]).unwrap_err();
    assert_eq!(
        error.body.details["allowed"],
        serde_json::json!(["cpu", "memory", "disk", "inode", "docker", "network"])
    );
    let error = parse(&[("scope.kind", "cluster")]).unwrap_err();
    assert_eq!(
        error.body.details["allowed"],
        serde_json::json!(["server", "project", "environment", "resource", "deployment"])
    );
}

fn at(seconds: i64) -> String {
    Timestamp::from_second(now().as_second() + seconds)
        .unwrap()
        .to_string()
}

fn host(server: &str, seconds: i64) -> MonitoringSample {
    MonitoringSample {
        sample_id: format!("{server}:host:{seconds}"),
        observed_at: at(seconds),
        collected_at: at(seconds),
        scope_evidence: ScopeEvidence {
            scope: Some(ScopeKind::Server),
            server_id: server.into(),
            ..ScopeEvidence::default()
        },
        totals: Totals {
            host_cpu_percent: Some(10.0),
            load1: Some(0.5),
            ..Totals::default()
        },
        freshness: "live".into(),
        partial: false,
        labels: SampleLabels {
            provider_key: PROVIDER_KEY.into(),
            artifact_kind: "host".into(),
            runtime_id: None,
        },
        warnings: Vec::new(),
        source_errors: Vec::new(),
    }
}

fn container(server: &str, runtime: &str, seconds: i64) -> MonitoringSample {
    let mut sample = host(server, seconds);
    sample.sample_id = format!("{server}:{runtime}:{seconds}");
    sample.scope_evidence = ScopeEvidence {
        scope: Some(ScopeKind::Resource),
        server_id: server.into(),
        resource_id: Some("web".into()),
        ..ScopeEvidence::default()
    };
    sample.labels.artifact_kind = "container".into();
    sample.labels.runtime_id = Some(runtime.into());
    sample
}

const INTERVAL: Duration = Duration::from_secs(30);

#[test]
fn a_gap_longer_than_two_and_a_half_intervals_in_a_series_is_one_warning() {
    // Oldest first, as the store answers. Host samples of `edge` every 30 s but for one
    // gap of 90 s; `db` 75 s apart (exactly 2.5 intervals: no gap); container `c1` one
    // gap of 5 min; `c2` replaced `c1` (a new series, however long after `c1` ended).
    let mut samples = vec![
        host("edge", -300),
        container("edge", "c1", -300),
        host("db", -300),
        host("edge", -270),
        host("db", -225),
        host("edge", -180),
        container("edge", "c1", -0),
        container("edge", "c2", 0),
        host("edge", -150),
    ];
    samples.sort_by_key(|s| s.observed_at.clone());
    let warnings = missing_samples(&samples, INTERVAL);
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    let edge = &warnings[0];
    assert_eq!(edge.code, MISSING_SAMPLES);
    assert_eq!(edge.signal, None);
    assert_eq!(edge.scope, Some(Scope::of(ScopeKind::Server, "edge")));
    assert!(edge.message.contains("server edge"), "{}", edge.message);
    assert!(edge.message.contains(&at(-270)), "{}", edge.message);
    assert!(edge.message.contains("for 1m30s"), "{}", edge.message);
    let c1 = &warnings[1];
    assert_eq!(c1.scope, Some(Scope::of(ScopeKind::Resource, "web")));
    assert!(c1.message.contains("container c1"), "{}", c1.message);
    assert!(c1.message.contains(&at(-300)), "{}", c1.message);
    assert!(c1.message.contains("for 5m0s"), "{}", c1.message);

    // Two gaps of one series are two warnings; regular series none.
    let series: Vec<_> = [0, 30, 200, 230, 400].map(|s| host("edge", s)).to_vec();
    assert_eq!(missing_samples(&series, INTERVAL).len(), 2);
    let regular: Vec<_> = (0..10).map(|n| host("edge", n * 30)).collect();
    assert!(missing_samples(&regular, INTERVAL).is_empty());
    assert!(missing_samples(&[], INTERVAL).is_empty());
}

#[test]
fn a_deploy_token_sees_only_the_samples_its_scope_covers() {
    use crate::auth::Principal;
    use berth_crds::deploy_token::DeployTokenScope;
    let token = |scope: DeployTokenScope| Caller {
        principal: Principal::DeployToken {
            token_id: "tok-1".into(),
            scope,
        },
        organization: None,
    };
    let (edge, web) = (host("edge", 0), container("edge", "c1", 0));
    let mut unattributed = container("edge", "c2", 0);
    unattributed.scope_evidence.resource_id = None;
    let unlimited = token(DeployTokenScope::default());
    assert!(visible(&unlimited, &edge) && visible(&unlimited, &web));
    assert!(visible(&unlimited, &unattributed));
    let web_only = token(DeployTokenScope {
        resource_ids: vec!["web".into()],
        ..DeployTokenScope::default()
    });
    assert!(visible(&web_only, &web) && visible(&web_only, &edge));
    assert!(!visible(&web_only, &unattributed));
    let api_only = token(DeployTokenScope {
        resource_ids: vec!["api".into()],
        deployment_target_ids: vec!["db".into()],
        ..DeployTokenScope::default()
    });
    assert!(!visible(&api_only, &web) && !visible(&api_only, &edge));
}

#[test]
fn freshness_is_live_within_two_intervals_then_stale_and_unknown_without_samples() {
    assert_eq!(freshness(&[], now(), INTERVAL), "unknown");
    let recent = [host("edge", -120), host("edge", -59)];
    assert_eq!(freshness(&recent, now(), INTERVAL), "live");
    let old = [host("edge", -61)];
    assert_eq!(freshness(&old, now(), INTERVAL), "stale");
}

#[test]
fn retention_spans_the_policys_days_before_now_or_all_when_nothing_deletes() {
    let week = retention(Some(7), now());
    assert_eq!(week.raw_retention_hours, 168);
    assert_eq!(week.retained_from, "2029-12-26T00:00:00Z");
    assert_eq!(week.retained_to, "2030-01-02T00:00:00Z");
    let kept = retention(None, now());
    assert_eq!(kept.retained_from, "1970-01-01T00:00:00Z");
    assert_eq!(kept.raw_retention_hours, 525_984);
}

#[test]
fn the_list_serializes_with_the_spec_field_names() {
    let list = SamplesList {
        schema_version: SAMPLES_SCHEMA_VERSION.into(),
        scope: Scope::default(),
        from: at(-3600),
        to: at(0),
        generated_at: at(0),
        freshness: UNKNOWN.into(),
        partial: true,
        retention: retention(Some(1), now()),
        samples: Vec::new(),
        warnings: Vec::new(),
        source_errors: vec![SourceError {
            source: STORE_SOURCE.into(),
            code: STORE_UNAVAILABLE.into(),
            message: "down".into(),
            retriable: true,
        }],
    };
    let json = serde_json::to_value(&list).unwrap();
    assert_eq!(json["schemaVersion"], "runtime-monitoring.samples.list/v1");
    for field in [
        "scope",
        "from",
        "to",
        "generatedAt",
        "freshness",
        "partial",
        "retention",
        "samples",
        "warnings",
        "sourceErrors",
    ] {
        assert!(json.get(field).is_some(), "{field} missing: {json}");
    }
    assert_eq!(json["retention"]["rawRetentionHours"], 24);
    assert_eq!(json["sourceErrors"][0]["source"], "monitoring-store");
    assert_eq!(json["sourceErrors"][0]["retriable"], true);
    assert_eq!(json["scope"]["kind"], serde_json::Value::Null);
}
