use super::Signal::{Cpu, Docker, Memory, Network};
use super::*;
use crate::wire;

fn host() -> Totals {
    Totals {
        logical_cores: Some(4.0),
        host_cpu_percent: Some(12.0),
        memory_total_bytes: Some(100.0),
        memory_available_bytes: Some(60.0),
        memory_used_bytes: Some(40.0),
        load1: Some(0.5),
        disk_total_bytes: Some(1000.0),
        disk_used_bytes: Some(250.0),
        inodes_total: Some(10.0),
        inodes_used: Some(4.0),
        docker_image_bytes: Some(7.0),
        ..Totals::default()
    }
}

#[test]
fn a_host_sample_nests_as_resource_metrics_with_what_is_derived() {
    let json = wire::to_value(&ResourceMetrics::of_sample(&host(), true)).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "cpu": {"logicalCores": 4.0, "loadAverage1m": 0.5},
            "memory": {"totalBytes": 100.0, "usedBytes": 40.0, "availableBytes": 60.0},
            "disk": {"totalBytes": 1000.0, "usedBytes": 250.0, "availableBytes": 750.0},
            "inode": {"total": 10.0, "used": 4.0, "available": 6.0},
            "docker": {"imageBytes": 7.0},
        })
    );
}

#[test]
fn a_container_sample_says_container_and_signals_keep_their_groups() {
    let container = Totals {
        container_cpu_percent: Some(2.5),
        container_cpu_cores: Some(0.1),
        memory_used_bytes: Some(1024.0),
        network_rx_bytes: Some(10.0),
        container_writable_bytes: Some(3.0),
        ..Totals::default()
    };
    let metrics = ResourceMetrics::of_sample(&container, false);
    assert_eq!(metrics.get(Cpu, "containerCpuPercent"), Some(2.5));
    assert_eq!(metrics.get(Memory, "containerUsedBytes"), Some(1024.0));
    assert_eq!(metrics.get(Memory, "usedBytes"), None);
    assert_eq!(metrics.get(Docker, "containerWritableBytes"), Some(3.0));
    let json = wire::to_value(&metrics.only(&[Cpu, Network])).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"cpu": {"containerCpuPercent": 2.5}, "network": {"rxBytes": 10.0}})
    );
}

#[test]
fn every_stored_figure_is_named_once_and_lands_on_a_field_of_its_group() {
    for stored in &STORED_METRICS {
        assert_eq!(
            STORED_METRICS
                .iter()
                .filter(|m| m.name == stored.name)
                .count(),
            1
        );
        for (signal, name) in [stored.host, stored.container].into_iter().flatten() {
            assert!(fields(signal).contains(&name), "{}", stored.name);
            let mut metrics = ResourceMetrics::default();
            metrics.set(signal, name, 1.0);
            assert_eq!(metrics.get(signal, name), Some(1.0), "{name}");
        }
    }
    for (signal, name) in RULE_METRICS {
        assert!(fields(signal).contains(&name), "{name}");
    }
    let mut metrics = ResourceMetrics::default();
    metrics.set(Cpu, "gpuPercent", 1.0);
    assert_eq!(metrics, ResourceMetrics::default(), "no empty group");
    assert_eq!(
        wire_metric("memoryUsedBytes", true),
        Some((Memory, "usedBytes"))
    );
    assert_eq!(wire_metric("hostCpuPercent", true), None);
    assert_eq!(Signal::parse("docker"), Some(Docker));
    assert_eq!(Signal::parse("docker-storage"), None);
}
