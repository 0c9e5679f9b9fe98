//! Buckets, totals, top contributors and gaps from rollup rows; the `bucket` parameter.

use super::*;

fn row(
    series: &str,
    resource: Option<&str>,
    bucket_ms: i64,
    metric: &str,
    values: &[f64],
) -> RollupRow {
    RollupRow {
        series: series.into(),
        server: "edge".into(),
        scope: if resource.is_some() {
            "resource"
        } else {
            "server"
        }
        .into(),
        project: resource.map(|_| "shop".into()),
        environment: resource.map(|_| "prod".into()),
        resource: resource.map(str::to_string),
        deployment: None,
        bucket_ms,
        metric: metric.into(),
        count: values.len() as i64,
        total: values.iter().sum(),
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    }
}

#[test]
fn buckets_average_every_series_and_totals_span_the_window() {
    let hour = Tier::Hour.millis();
    let rows = vec![
        row("a", Some("web"), 0, "containerCpuPercent", &[2.0, 4.0]),
        row("b", Some("api"), 0, "containerCpuPercent", &[6.0]),
        row("a", Some("web"), hour, "containerCpuPercent", &[10.0]),
        row("a", Some("web"), hour, "memoryUsedBytes", &[100.0]),
        row("host:edge", None, hour, "load1", &[0.5, 1.5]),
        row("host:edge", None, hour, "hostCpuPercent", &[50.0]),
    ];
    let (series, totals) = series_and_totals(&rows, &[Signal::Cpu], Tier::Hour);
    assert_eq!(series.len(), 1, "memory was not asked for");
    assert_eq!(series[0].signal, Signal::Cpu);
    let points = &series[0].points;
    assert_eq!(points.len(), 2);
    assert_eq!(points[0].from, "1970-01-01T00:00:00Z");
    assert_eq!(points[0].to, "1970-01-01T01:00:00Z");
    assert_eq!(points[0].sample_count, 3);
    assert_eq!(
        points[0].totals.get(Signal::Cpu, "containerCpuPercent"),
        Some(4.0)
    );
    // A host's two samples and a container's one in the second hour.
    assert_eq!(points[1].sample_count, 3);
    assert_eq!(
        points[1].totals.get(Signal::Cpu, "loadAverage1m"),
        Some(1.0)
    );
    let json = berth_api::wire::to_value(&points[1].totals).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"cpu": {"loadAverage1m": 1.0, "containerCpuPercent": 10.0}}),
        "hostCpuPercent has no field on the wire"
    );
    assert_eq!(totals.get(Signal::Cpu, "containerCpuPercent"), Some(5.5));
    assert_eq!(totals.memory, None);
}

#[test]
fn top_contributors_rank_resources_by_cpu_share_then_memory() {
    let rows = vec![
        row("a", Some("web"), 0, "containerCpuPercent", &[0.1]),
        row("b", Some("api"), 0, "containerCpuPercent", &[0.5]),
        row("b", Some("api"), 0, "memoryUsedBytes", &[2048.0]),
        row("host:edge", None, 0, "hostCpuPercent", &[50.0]),
    ];
    let top = top_contributors(&rows);
    let ids: Vec<Option<&str>> = top.iter().map(|c| c.scope.resource_id.as_deref()).collect();
    assert_eq!(ids, [Some("api"), Some("web")]);
    assert_eq!(top[0].scope.kind, Some(ScopeKind::Resource));
    assert_eq!(
        top[0].totals.get(Signal::Memory, "containerUsedBytes"),
        Some(2048.0)
    );
    assert_eq!(top[0].sample_count, 1);
    assert_eq!(top[1].totals.memory, None);
}

#[test]
fn a_bucket_without_samples_in_a_series_is_a_gap() {
    let minute = Tier::Minute.millis();
    let rows = vec![
        row("a", Some("web"), 0, "containerCpuPercent", &[1.0]),
        row("a", Some("web"), 0, "memoryUsedBytes", &[1.0]),
        row("a", Some("web"), minute, "containerCpuPercent", &[1.0]),
        row("a", Some("web"), 4 * minute, "containerCpuPercent", &[1.0]),
    ];
    let warnings = gaps(&rows, Tier::Minute);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].message.contains("2 minute bucket(s)"),
        "{warnings:?}"
    );
}

#[test]
fn the_bucket_is_required_and_bounded_by_the_window() {
    let query = |pairs: &[(&str, &str)]| QueryParams::from_pairs(pairs);
    let from: Timestamp = "2026-11-01T00:00:00Z".parse().unwrap();
    let day: Timestamp = "2026-11-02T00:00:00Z".parse().unwrap();
    let month: Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
    let field = |result: ApiResult<Tier>| result.unwrap_err().body.details["field"].clone();
    assert_eq!(field(parse_bucket(&query(&[]), from, day)), "bucket");
    assert_eq!(
        field(parse_bucket(&query(&[("bucket", "week")]), from, day)),
        "bucket"
    );
    assert_eq!(
        parse_bucket(&query(&[("bucket", "minute")]), from, day).unwrap(),
        Tier::Minute
    );
    assert_eq!(
        field(parse_bucket(&query(&[("bucket", "minute")]), from, month)),
        "bucket"
    );
    assert_eq!(
        parse_bucket(&query(&[("bucket", "hour")]), from, month).unwrap(),
        Tier::Hour
    );
}
