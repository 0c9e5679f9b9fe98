//! The `copy` texts of a diagnostic summary: the record as JSON, as Markdown for a support
//! ticket or an issue, and as plain text. Built from the record after masking, so nothing
//! secret can be in them; the masker runs over them once more all the same.

use berth_crds::masking::Masker;
use serde_json::Value;

use berth_api::diagnostics::{Copy, DiagnosticSummary, Tail};

pub fn texts(summary: &DiagnosticSummary, masker: &Masker) -> Copy {
    let json = serde_json::to_string_pretty(&without_copy(summary)).unwrap_or_default();
    let markdown = markdown(summary);
    let plain_text = plain_text(summary);
    Copy {
        json: masker.mask(&json),
        markdown: masker.mask(&markdown),
        plain_text: masker.mask(&plain_text),
    }
}

fn without_copy(summary: &DiagnosticSummary) -> Value {
    let mut value = berth_api::wire::to_value(summary).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.remove("copy");
    }
    value
}

/// The facts a person reads first, as `(label, value)` pairs.
fn facts(summary: &DiagnosticSummary) -> Vec<(&'static str, String)> {
    let context = &summary.context;
    let or_none = |value: Option<&str>| value.unwrap_or("none").to_string();
    let mut facts = vec![
        (
            "Resource",
            format!(
                "{} ({}, {})",
                context.resource_name, summary.focus.resource_id, context.resource_kind
            ),
        ),
        (
            "Project / environment",
            format!("{} / {}", context.project_id, context.environment_id),
        ),
        ("Server", or_none(context.server_id.as_deref())),
        ("Access", summary.access.status.to_string()),
        ("URL", or_none(summary.access.generated_url.as_deref())),
        ("Proxy", summary.proxy.status.to_string()),
    ];
    match &summary.deployment {
        Some(deployment) => {
            facts.push((
                "Deployment",
                format!("{} ({})", deployment.id, deployment.status),
            ));
            if let Some(error) = &deployment.last_error {
                facts.push((
                    "Last error",
                    format!("{} in phase {}: {}", error.code, error.phase, error.message),
                ));
            }
        }
        None => facts.push(("Deployment", "none".into())),
    }
    for error in &summary.source_errors {
        facts.push((
            "Could not read",
            format!("{}: {}", error.source, error.message),
        ));
    }
    facts.push(("Generated", summary.generated_at.clone()));
    facts
}

fn markdown(summary: &DiagnosticSummary) -> String {
    let mut text = format!(
        "## Berth diagnostic summary: {}\n\n",
        summary.focus.resource_id
    );
    for (label, value) in facts(summary) {
        text.push_str(&format!("- **{label}:** {value}\n"));
    }
    for (title, tail) in tails(summary) {
        if tail.lines.is_empty() {
            continue;
        }
        text.push_str(&format!(
            "\n### {title} (last {})\n\n```text\n",
            tail.line_count
        ));
        for line in tail_lines(tail) {
            text.push_str(&line);
            text.push('\n');
        }
        text.push_str("```\n");
    }
    for section in &summary.proxy.sections {
        text.push_str(&format!(
            "\n### {}\n\n```text\n{}\n```\n",
            section.title, section.content
        ));
    }
    text
}

fn plain_text(summary: &DiagnosticSummary) -> String {
    let mut text = format!("Berth diagnostic summary: {}\n", summary.focus.resource_id);
    for (label, value) in facts(summary) {
        text.push_str(&format!("{label}: {value}\n"));
    }
    for (title, tail) in tails(summary) {
        if tail.lines.is_empty() {
            continue;
        }
        text.push_str(&format!("\n{title}:\n"));
        for line in tail_lines(tail) {
            text.push_str(&format!("  {line}\n"));
        }
    }
    text
}

fn tails(summary: &DiagnosticSummary) -> [(&'static str, &Tail); 2] {
    [
        ("Deployment timeline", &summary.deployment_timeline),
        ("Runtime logs", &summary.runtime_logs),
    ]
}

/// One text line per entry: its time, then its message.
fn tail_lines(tail: &Tail) -> impl Iterator<Item = String> + '_ {
    tail.lines.iter().map(|line| {
        let at = line.timestamp.as_deref().unwrap_or_default();
        format!("{at} {}", line.message).trim().to_string()
    })
}
