//! Crash evidence: when the serving container stops — before drift repair starts it again, or
//! after Docker's restart policy already did — what it left (exit code, the OOM flag, Docker's
//! failed health checks, its last lines of output, secret values masked) goes into the
//! attempt's timeline, so "why did my app stop" still has an answer after the restart. The
//! deployment timeline endpoints and the diagnostic summary show it.

use std::time::Duration;

use berth_crds::deployment::{DeploymentPhase, DeploymentStep};
use berth_crds::masking::Masker;
use berth_crds::progress::{Level, OutputStream, ProgressEvent, Source, StreamStatus, TOTAL_STEPS};
use berth_observations::TimelineKey;
use k8s_openapi::jiff::Timestamp;

use crate::context::Context;
use crate::observer::Death;
use crate::reconcilers::deployment::plan::Plan;
use crate::reconcilers::deployment::server_target::{StopFacts, Target};

/// Lines of output kept from a stopped container.
const TAIL_LINES: usize = 20;
/// The most the evidence may delay the repair.
const GATHER_WITHIN: Duration = Duration::from_secs(10);

/// Records why the serving container of attempt `deployment` stopped, before it is started again.
pub async fn record(context: &Context, target: &Target, plan: &Plan, key: &TimelineKey) {
    let gathered = tokio::time::timeout(GATHER_WITHIN, async {
        let facts = target.stop_facts(&plan.container_name).await;
        let tail = target.log_tail(&plan.container_name, TAIL_LINES).await;
        (facts, tail)
    })
    .await;
    let (facts, tail) = match gathered {
        Ok((Ok(Some(facts)), tail)) => (facts, tail.unwrap_or_default()),
        Ok((Ok(None), _)) => return,
        Ok((Err(error), _)) => {
            tracing::warn!(%error, container = %plan.container_name, "could not inspect a stopped container");
            return;
        }
        Err(_) => {
            tracing::warn!(container = %plan.container_name, "no crash evidence in time");
            return;
        }
    };
    let repair = "drift repair starts the container again";
    store(context, plan, key, &facts, &tail, repair);
}

/// Records why the serving container stopped when Docker's restart policy has started it again
/// already: the observer saw the stop (`death`); its output before the restart is the end of
/// its log, read now.
pub async fn record_restarted(
    context: &Context,
    target: &Target,
    plan: &Plan,
    key: &TimelineKey,
    death: &Death,
) {
    let tail = tokio::time::timeout(
        GATHER_WITHIN,
        target.log_tail(&plan.container_name, TAIL_LINES),
    )
    .await
    .ok()
    .and_then(Result::ok)
    .unwrap_or_default();
    let facts = StopFacts {
        exit_code: death.exit_code,
        oom_killed: death.oom_killed,
        finished_at: None,
        health_log: Vec::new(),
    };
    let restarted = "Docker's restart policy started the container again";
    store(context, plan, key, &facts, &tail, restarted);
    let code = death.exit_code.map_or_else(
        || "an unknown code".to_string(),
        |code| format!("code {code}"),
    );
    let killed = if death.oom_killed {
        " (killed: out of memory)"
    } else {
        ""
    };
    context.notify_about_resource(
        &key.namespace,
        &key.resource,
        berth_crds::notification::NotificationEvent::CrashLoop,
        crate::notices::subject("Resource", &key.resource, None),
        format!("its container exited with {code}{killed}; {restarted}"),
    );
}

fn store(
    context: &Context,
    plan: &Plan,
    key: &TimelineKey,
    facts: &StopFacts,
    tail: &[(OutputStream, String)],
    then: &str,
) {
    let masker = Masker::new(plan.secret_values.iter().chain(plan.build_args.values()));
    let now = format!("{:.3}", Timestamp::now());
    for event in evidence(&key.deployment, facts, tail, &masker, &now, then) {
        context.observations.record(key, event);
    }
}

/// The timeline entries telling how the container ended, then its last output.
pub fn evidence(
    deployment: &str,
    facts: &StopFacts,
    tail: &[(OutputStream, String)],
    masker: &Masker,
    now: &str,
    then: &str,
) -> Vec<ProgressEvent> {
    let template = ProgressEvent {
        timestamp: now.to_string(),
        source: Source::Platform,
        phase: DeploymentPhase::Verify,
        level: Level::Error,
        message: String::new(),
        deployment_id: deployment.to_string(),
        status: StreamStatus::Succeeded,
        step: DeploymentStep {
            current: TOTAL_STEPS,
            total: TOTAL_STEPS,
            label: "Runtime".into(),
        },
        stream: None,
    };
    let platform = |level, message: String| ProgressEvent {
        level,
        message,
        ..template.clone()
    };
    let mut events = vec![platform(Level::Error, headline(facts, tail.len()))];
    events.extend(facts.health_log.iter().map(|(code, output)| {
        let code = code.map_or("?".to_string(), |c| c.to_string());
        platform(
            Level::Warn,
            format!(
                "health check failed (exit {code}): {}",
                masker.mask(output.trim())
            ),
        )
    }));
    events.extend(tail.iter().map(|(stream, line)| ProgressEvent {
        source: Source::Application,
        level: Level::Info,
        message: masker.mask(line),
        stream: Some(*stream),
        ..template.clone()
    }));
    events.push(platform(Level::Info, then.to_string()));
    events
}

fn headline(facts: &StopFacts, lines: usize) -> String {
    let code = facts
        .exit_code
        .map_or("an unknown exit code".to_string(), |c| {
            format!("exit code {c}")
        });
    let oom = if facts.oom_killed {
        " (killed for lack of memory)"
    } else {
        ""
    };
    let when = facts
        .finished_at
        .as_deref()
        .map_or(String::new(), |at| format!(" at {at}"));
    let output = match lines {
        0 => "; it wrote no output".to_string(),
        n => format!("; its last {n} lines of output follow"),
    };
    format!("the serving container stopped with {code}{oom}{when}{output}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_evidence_names_the_exit_and_masks_the_output() {
        let facts = StopFacts {
            exit_code: Some(137),
            oom_killed: true,
            finished_at: Some("2026-11-23T10:00:00Z".into()),
            health_log: vec![(Some(1), "curl: token s3cr3t-x refused\n".into())],
        };
        let tail = vec![
            (OutputStream::Stdout, "token is s3cr3t-x".to_string()),
            (OutputStream::Stderr, "out of memory".to_string()),
        ];
        let masker = Masker::new(["s3cr3t-x"]);
        let events = evidence("dep-web-1", &facts, &tail, &masker, "now", "restarted");
        assert_eq!(events.len(), 5);
        assert!(
            events[0].message.contains("exit code 137"),
            "{:?}",
            events[0]
        );
        assert!(events[0].message.contains("lack of memory"));
        assert!(events[0].message.contains("last 2 lines"));
        assert_eq!(
            events[1].message,
            "health check failed (exit 1): curl: token **** refused"
        );
        assert_eq!(events[2].message, "token is ****");
        assert_eq!(events[2].source, Source::Application);
        assert_eq!(events[3].stream, Some(OutputStream::Stderr));
        assert!(events.iter().all(|e| !e.message.contains("s3cr3t")));
        assert!(events.iter().all(|e| e.deployment_id == "dep-web-1"));
    }
}
