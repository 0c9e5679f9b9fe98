//! Working directories, shell quoting, dimensions and the session list.

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
fn pending_and_connected_sessions_are_listed_newest_first() {
    let session = |id: &str, status: &str, created_at: &str| ListedSession {
        session_id: id.into(),
        scope: "server".into(),
        server_id: "srv".into(),
        resource_id: None,
        status: status.into(),
        created_at: created_at.into(),
    };
    let listed = newest_first(
        vec![
            session("trm-2", "pending", "2030-01-01T00:00:02Z"),
            session("trm-0", "pending", "2030-01-01T00:00:00Z"),
        ],
        vec![session("trm-1", "connected", "2030-01-01T00:00:01Z")],
    );
    let ids: Vec<&str> = listed.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(ids, ["trm-2", "trm-1", "trm-0"]);
}
