//! Working directories, shell quoting, dimensions and how a session is listed.

use super::*;

#[test]
fn directories_stay_below_home() {
    assert_eq!(
        relative_directory("a/./b/").unwrap().as_deref(),
        Some("a/b")
    );
    assert_eq!(relative_directory(".").unwrap(), None);
    for bad in [
        "/etc",
        "~root",
        "a/../../x",
        "..",
        "a\nb",
        "",
        &"a".repeat(513),
    ] {
        let error = relative_directory(bad).unwrap_err();
        assert_eq!(error.body.details["field"], "relativeDirectory", "{bad:?}");
    }
    assert!(relative_directory(&"a".repeat(512)).is_ok());
}

#[test]
fn the_directory_is_quoted_for_the_shell() {
    assert_eq!(
        shell_command("it's $(here)"),
        r#"cd -- "$HOME"/'it'\''s $(here)' && exec "${SHELL:-/bin/sh}" -l"#
    );
}

#[test]
fn dimensions_follow_spec_limits() {
    assert_eq!(dimension("initialRows", None, ROWS, 24).unwrap(), 24);
    assert!(dimension("initialRows", Some(9), ROWS, 24).is_err());
    assert!(dimension("initialRows", Some(121), ROWS, 24).is_err());
    assert_eq!(dimension("initialCols", Some(320), COLS, 80).unwrap(), 320);
}

#[test]
fn a_listed_session_reads_as_appaloft_s_summary_without_the_ticket() {
    let record = TerminalSessionRecord {
        session_id: "trm-1".into(),
        scope: "server".into(),
        server_id: "srv-1".into(),
        resource_id: None,
        deployment_id: None,
        dependency_resource_id: None,
        container_id: None,
        transport: Transport {
            kind: "websocket".into(),
            path: "/api/terminal-sessions/trm-1/ws?ticket=btt_secret".into(),
        },
        provider_key: "generic-ssh".into(),
        working_directory: Some("~/work".into()),
        created_at: "2030-01-01T00:00:00Z".into(),
        expires_at: "2030-01-01T00:01:00Z".into(),
    };
    let listed = listed(&record, "/api/terminal-sessions/trm-1/ws".into());
    let list = SessionList {
        schema_version: LIST_SCHEMA.into(),
        items: vec![listed],
    };
    assert_eq!(
        serde_json::to_value(&list).unwrap(),
        serde_json::json!({
            "schemaVersion": "terminal-sessions.list/v1",
            "items": [{
                "sessionId": "trm-1",
                "scope": "server",
                "serverId": "srv-1",
                "transport": {"kind": "websocket", "path": "/api/terminal-sessions/trm-1/ws"},
                "providerKey": "generic-ssh",
                "workingDirectory": "~/work",
                "status": "active",
                "createdAt": "2030-01-01T00:00:00Z",
            }],
        })
    );
}
