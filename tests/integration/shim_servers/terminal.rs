//! Terminal sessions (spec §4.8): limits of spec §8, roles, the single-use WebSocket bound to
//! its creator, a command echoed back, resize, and `relativeDirectory`; Appaloft's lifecycle
//! routes (the list's filters, show, close); a resource's container and a managed database's
//! client.

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg, base_url};
use berth_tests::sshd::{TestSshd, new_client_key};
use berth_tests::{client, eventually, random_suffix};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::{assert_key_never_shown, create_credential, create_server, invalid, wait_reachable};

const READ: Duration = Duration::from_secs(20);
/// How long a terminal is silent before the next line is typed.
const SETTLE: Duration = Duration::from_millis(500);
/// The width a session gets without `initialCols`.
const DEFAULT_COLS: u32 = 80;

/// An open terminal WebSocket and everything it has printed so far.
pub(crate) struct Shell {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    output: String,
    events: Vec<Value>,
    closed: bool,
}

/// Connects to a session's WebSocket with the token as a header or as `?access_token=`; the
/// HTTP status of a refused handshake otherwise.
async fn connect(rest: &Rest, path: &str, token_in_query: bool) -> Result<Shell, u16> {
    let origin = base_url()
        .replacen("http://", "ws://", 1)
        .split("/api")
        .next()
        .unwrap()
        .to_string();
    // Without a token (an anonymous caller) only the path's ticket can open it.
    let token = rest.token.clone();
    let url = match &token {
        Some(token) if token_in_query => format!("{origin}{path}?access_token={token}"),
        _ => format!("{origin}{path}"),
    };
    let mut request = url.into_client_request().unwrap();
    if let Some(token) = token.filter(|_| !token_in_query) {
        request
            .headers_mut()
            .insert("Authorization", format!("Bearer {token}").parse().unwrap());
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => {
            let mut shell = Shell {
                socket,
                output: String::new(),
                events: Vec::new(),
                closed: false,
            };
            shell.wait_event("ready").await;
            Ok(shell)
        }
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            Err(response.status().as_u16())
        }
        Err(error) => panic!("WebSocket connect failed: {error}"),
    }
}

/// Creates a session on `server` (with `extra` request fields) and connects to it.
pub(crate) async fn open_shell(rest: &Rest, server: &str, extra: Value) -> Shell {
    let record = create(rest, server, extra).await.ok();
    connect(rest, record["transport"]["path"].as_str().unwrap(), false)
        .await
        .expect("the WebSocket opens")
}

async fn create(rest: &Rest, server: &str, extra: Value) -> berth_tests::rest::Reply {
    let mut body = json!({"scope": {"kind": "server", "serverId": server}});
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    rest.post("/terminal-sessions", body).await
}

impl Shell {
    /// Reads one frame; false once the socket is closed.
    async fn read(&mut self) -> bool {
        let frame = tokio::time::timeout(READ, self.socket.next())
            .await
            .unwrap_or_else(|_| panic!("no terminal output for {READ:?}; so far: {}", self.output));
        self.take(frame).await
    }

    /// Reads (and answers) what the program writes until it is quiet for [`SETTLE`]: a line
    /// editor asks where the cursor is after each answer, and a line typed before that question
    /// is answered would be read as the answer.
    async fn settle(&mut self) {
        while let Ok(frame) = tokio::time::timeout(SETTLE, self.socket.next()).await {
            if !self.take(frame).await {
                return;
            }
        }
    }

    /// Takes one frame read: output (its cursor queries answered) or an event.
    async fn take(
        &mut self,
        frame: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
    ) -> bool {
        match frame {
            Some(Ok(Message::Binary(bytes))) => {
                let start = self.output.len();
                self.output.push_str(&String::from_utf8_lossy(&bytes));
                self.answer_cursor_queries(start).await;
            }
            Some(Ok(Message::Text(text))) => self.events.push(serde_json::from_str(&text).unwrap()),
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => self.closed = true,
            Some(Ok(_)) => {}
        }
        !self.closed
    }

    /// Answers each cursor-position query (`ESC[6n`) in the output from `start` as a terminal
    /// (xterm.js in the console) does: a line editor whose pty was still 0×0 when it started
    /// (`redis-cli`'s linenoise, when `docker exec` resized it a moment late) measures the width
    /// by moving the cursor far right (`ESC[999C`) and asking where it ended up, and waits for the
    /// answer.
    async fn answer_cursor_queries(&mut self, start: usize) {
        let mut from = start;
        while let Some(at) = self.output[from..].find("\x1b[6n").map(|at| from + at) {
            let moved_right = self.output[..at]
                .rfind("\x1b[999C")
                .is_some_and(|right| self.output[right..at].find("\x1b[6n").is_none());
            let column = if moved_right { DEFAULT_COLS } else { 1 };
            let answer = format!("\x1b[1;{column}R").into_bytes();
            self.socket
                .send(Message::Binary(answer.into()))
                .await
                .unwrap();
            from = at + 4;
        }
    }

    async fn wait_event(&mut self, kind: &str) -> Value {
        loop {
            if let Some(event) = self.events.iter().find(|e| e["type"] == kind) {
                return event.clone();
            }
            assert!(
                self.read().await,
                "closed before a {kind} message: {:?}",
                self.events
            );
        }
    }

    /// Waits until `expected` appears in the output (a prompt: some clients, like
    /// `redis-cli`, drop what was typed before they started).
    pub(crate) async fn expect(&mut self, expected: &str) {
        while !self.output.contains(expected) {
            assert!(
                self.read().await,
                "closed before {expected:?}: {}",
                self.output
            );
        }
    }

    /// Types `line` and Enter, and waits until `expected` appears in the output.
    pub(crate) async fn run_and_expect(&mut self, line: &str, expected: &str) {
        let start = self.output.len();
        self.socket
            .send(Message::Binary(format!("{line}\r").into_bytes().into()))
            .await
            .unwrap();
        while !self.output[start..].contains(expected) {
            assert!(
                self.read().await,
                "closed before {expected:?}: {}",
                self.output
            );
        }
        self.settle().await;
    }

    async fn resize(&mut self, rows: u32, cols: u32) {
        let message = json!({"type": "resize", "rows": rows, "cols": cols}).to_string();
        self.socket
            .send(Message::Text(message.into()))
            .await
            .unwrap();
    }

    /// Ends the shell; returns the exit message.
    pub(crate) async fn exit(&mut self) -> Value {
        let input = json!({"type": "input", "data": "exit\r"}).to_string();
        self.socket.send(Message::Text(input.into())).await.unwrap();
        let exit = self.wait_event("exit").await;
        while self.read().await {}
        exit
    }
}

#[tokio::test]
async fn terminal_session_runs_a_command_resizes_and_is_single_use() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let other_admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let mut other_org = TestOrg::new(&client).await;
    let outsider = other_org.user(OrganizationRole::Owner).await.rest;
    let keys = std::env::temp_dir().join(format!("berth-terminal-keys-{}", random_suffix()));
    let (key, public, _) = new_client_key(&keys, "terminal");
    // A private sshd: its sessions' HOME is a directory of its own, removed afterwards.
    let sshd = TestSshd::start(&[&public]);
    let credential = create_credential(&admin, &key).await;
    let server = create_server(&admin, &credential, sshd.port).await;
    wait_reachable(&admin, &server).await;

    // Spec §8 limits and the other refusals.
    let cases = [
        (json!({"relativeDirectory": ""}), "relativeDirectory"),
        (
            json!({"relativeDirectory": "a".repeat(513)}),
            "relativeDirectory",
        ),
        (json!({"relativeDirectory": "/etc"}), "relativeDirectory"),
        (
            json!({"relativeDirectory": "work/../.."}),
            "relativeDirectory",
        ),
        (json!({"initialRows": 9}), "initialRows"),
        (json!({"initialRows": 121}), "initialRows"),
        (json!({"initialCols": 19}), "initialCols"),
        (json!({"initialCols": 321}), "initialCols"),
        (json!({"initialCols": "wide"}), "initialCols"),
    ];
    for (extra, field) in cases {
        invalid(create(&admin, &server, extra).await, field);
    }
    invalid(
        admin
            .post(
                "/terminal-sessions",
                json!({"scope": {"kind": "resource", "serverId": server}}),
            )
            .await,
        "scope.resourceId",
    );
    Rest::anonymous()
        .post(
            "/terminal-sessions",
            json!({"scope": {"kind": "server", "serverId": server}}),
        )
        .await
        .error(401, "unauthenticated");
    create(&member, &server, json!({}))
        .await
        .error(403, "forbidden");
    create(&outsider, &server, json!({}))
        .await
        .error(404, "not_found");
    create(&admin, "srv-missing", json!({}))
        .await
        .error(404, "not_found");

    // The edge values are accepted.
    let record = create(
        &admin,
        &server,
        json!({"initialRows": 120, "initialCols": 320, "relativeDirectory": "a".repeat(512)}),
    )
    .await
    .ok();
    assert_eq!(record["scope"], "server");

    let record = create(
        &admin,
        &server,
        json!({"initialRows": 10, "initialCols": 20}),
    )
    .await
    .ok();
    assert_eq!(record["serverId"], server.as_str());
    assert_eq!(record["providerKey"], "generic-ssh");
    assert_eq!(record["transport"]["kind"], "websocket");
    let with_ticket = record["transport"]["path"].as_str().unwrap().to_string();
    let session = record["sessionId"].as_str().unwrap();
    let path = format!("/api/terminal-sessions/{session}/ws");
    assert!(
        with_ticket.starts_with(&format!("{path}?ticket=btt_")),
        "{with_ticket}"
    );
    // Listed for its creator only, as Appaloft's client reads it: `active` while it waits for
    // its WebSocket, with its transport (never its ticket) and provider.
    let listed = admin.get("/terminal-sessions").await.ok();
    assert_eq!(
        listed["schemaVersion"], "terminal-sessions.list/v1",
        "{listed}"
    );
    let item = &listed["items"][0];
    assert_eq!(item["sessionId"], session, "{listed}");
    assert_eq!(item["status"], "active", "{listed}");
    assert_eq!(item["scope"], "server");
    assert_eq!(item["serverId"], server.as_str());
    assert_eq!(item["providerKey"], "generic-ssh");
    assert_eq!(item["transport"]["kind"], "websocket");
    assert_eq!(item["transport"]["path"], path.as_str(), "{listed}");
    assert_eq!(item["createdAt"], record["createdAt"]);
    assert!(!listed.to_string().contains("btt_"), "{listed}");
    let theirs = other_admin.get("/terminal-sessions").await.ok();
    assert_eq!(
        theirs["items"].as_array().map(Vec::len),
        Some(0),
        "{theirs}"
    );
    // Only its creator or its ticket may connect, and a refusal does not use the session up.
    let anonymous = Rest::anonymous();
    assert_eq!(connect(&other_admin, &path, false).await.err(), Some(404));
    assert_eq!(connect(&outsider, &path, true).await.err(), Some(404));
    let forged = format!("{path}?ticket=btt_forged");
    assert_eq!(connect(&anonymous, &forged, false).await.err(), Some(404));
    // The ticket alone opens it: no token in the URL.
    let mut shell = connect(&anonymous, &with_ticket, false)
        .await
        .expect("the ticket connects");
    assert_eq!(
        connect(&admin, &path, false).await.err(),
        Some(404),
        "single use"
    );
    assert_eq!(
        connect(&anonymous, &with_ticket, false).await.err(),
        Some(404),
        "single use"
    );
    // Connected, it stays `active` (Appaloft has no separate connected state).
    let listed = admin.get("/terminal-sessions").await.ok();
    assert_eq!(listed["items"][0]["sessionId"], session, "{listed}");
    assert_eq!(listed["items"][0]["status"], "active", "{listed}");

    let ready = shell.events[0].clone();
    assert_eq!(
        (ready["rows"].clone(), ready["cols"].clone()),
        (json!(10), json!(20))
    );
    shell.run_and_expect("stty size", "10 20").await;
    let n: u32 = rand::random_range(1000..9000);
    shell
        .run_and_expect(
            &format!("echo hello-$(({n}+1))"),
            &format!("hello-{}", n + 1),
        )
        .await;
    shell.resize(40, 100).await;
    shell.run_and_expect("stty size", "40 100").await;
    // A bad control message is refused with an error message; the session goes on.
    shell.socket.send(Message::Text("ls".into())).await.unwrap();
    shell.wait_event("error").await;
    shell
        .run_and_expect(
            "mkdir -p \"$HOME/work/app\" && echo made-$((1+1))",
            "made-2",
        )
        .await;
    assert_eq!(shell.exit().await["exitStatus"], 0);
    // Once the shell has exited the session is `closing` only while its socket is being closed
    // (too brief to catch here), then no longer listed.
    eventually(READ, "the ended session unlisted", || async {
        let listed = admin.get("/terminal-sessions").await.ok();
        let items = listed["items"].as_array()?;
        (!items.iter().any(|item| item["sessionId"] == session)).then_some(())
    })
    .await;

    // relativeDirectory is below the login user's home.
    let mut shell = open_shell(&admin, &server, json!({"relativeDirectory": "work/app"})).await;
    // The prompt may show the directory too; only the command's output says `in-5`.
    shell
        .run_and_expect("case $(pwd) in */work/app) echo in-$((2+3));; esac", "in-5")
        .await;
    shell.exit().await;
    let record = create(&admin, &server, json!({"relativeDirectory": "work/./app/"}))
        .await
        .ok();
    assert_eq!(record["workingDirectory"], "~/work/app");
    // A directory that does not exist ends the shell at once with a failure.
    let mut shell = open_shell(&admin, &server, json!({"relativeDirectory": "missing"})).await;
    let exit = shell.wait_event("exit").await;
    assert_ne!(exit["exitStatus"], 0, "{exit}");

    lifecycle(&admin, &other_admin, &outsider, &server).await;

    drop(sshd);
    std::fs::remove_dir_all(&keys).ok();
    assert_key_never_shown(&key);
}

/// The ids the list answers for `query`.
async fn listed_ids(rest: &Rest, query: &str) -> Vec<String> {
    let listed = rest.get(&format!("/terminal-sessions{query}")).await.ok();
    assert_eq!(
        listed["schemaVersion"], "terminal-sessions.list/v1",
        "{listed}"
    );
    let items = listed["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"));
    items
        .iter()
        .map(|item| item["sessionId"].as_str().unwrap().to_string())
        .collect()
}

/// A 400 `validation_error` naming `field`, as Appaloft answers bad input.
fn refused(reply: berth_tests::rest::Reply, field: &str) -> Value {
    let error = reply.error(400, "validation_error");
    assert_eq!(error["details"]["field"], field, "{error}");
    error
}

/// Appaloft's lifecycle routes: `GET /terminal-sessions` narrowed by its filters, `GET
/// /terminal-sessions/{sessionId}` and `POST /terminal-sessions/{sessionId}/close`, for a
/// session waiting for its WebSocket and a connected one; to anyone but its creator a session
/// does not exist.
async fn lifecycle(admin: &Rest, other_admin: &Rest, outsider: &Rest, server: &str) {
    let first = create(admin, server, json!({})).await.ok();
    let second = create(admin, server, json!({})).await.ok();
    let (first_id, second_id) = (
        first["sessionId"].as_str().unwrap().to_string(),
        second["sessionId"].as_str().unwrap().to_string(),
    );
    let both = |ids: &[String]| ids.contains(&first_id) && ids.contains(&second_id);
    let neither = |ids: &[String]| !ids.contains(&first_id) && !ids.contains(&second_id);

    // The filters narrow the list as Appaloft's do; each given one must match.
    assert!(both(&listed_ids(admin, "").await));
    assert!(both(&listed_ids(admin, "?scope=server").await));
    assert!(both(
        &listed_ids(admin, &format!("?serverId={server}")).await
    ));
    assert!(both(
        &listed_ids(admin, &format!("?scope=server&serverId={server}&limit=200")).await
    ));
    for query in [
        "?scope=resource".to_string(),
        "?scope=dependency".to_string(),
        "?scope=sandbox".to_string(),
        "?serverId=srv-none".to_string(),
        "?resourceId=res-none".to_string(),
        "?deploymentId=dep-none".to_string(),
        "?sandboxId=sbx-none".to_string(),
        format!("?scope=resource&serverId={server}"),
    ] {
        let ids = listed_ids(admin, &query).await;
        assert!(neither(&ids), "{query}: {ids:?}");
    }
    // Newest first: a limit of one keeps the session created last.
    assert_eq!(listed_ids(admin, "?limit=1").await, [second_id.as_str()]);
    let error = refused(admin.get("/terminal-sessions?scope=pod").await, "scope");
    assert_eq!(
        error["details"]["allowed"],
        json!(["server", "resource", "dependency", "sandbox"]),
        "{error}"
    );
    for (query, field) in [
        ("?scope=", "scope"),
        ("?serverId=", "serverId"),
        ("?resourceId=%20", "resourceId"),
        ("?limit=0", "limit"),
        ("?limit=201", "limit"),
        ("?limit=ten", "limit"),
        ("?limit=1.5", "limit"),
        ("?status=active", "status"),
    ] {
        refused(
            admin.get(&format!("/terminal-sessions{query}")).await,
            field,
        );
    }
    // Another user, in this organization or another, has no sessions of the admin's.
    assert!(neither(&listed_ids(other_admin, "").await));
    assert!(neither(&listed_ids(outsider, "").await));

    // Show: the one session, as the list shows it (its ticket never).
    let shown = admin
        .get(&format!("/terminal-sessions/{first_id}"))
        .await
        .ok();
    assert_eq!(
        shown["schemaVersion"], "terminal-sessions.show/v1",
        "{shown}"
    );
    let item = &shown["item"];
    assert_eq!(item["sessionId"], first_id.as_str(), "{shown}");
    assert_eq!(item["status"], "active", "{shown}");
    assert_eq!(item["scope"], "server");
    assert_eq!(item["serverId"], server);
    assert_eq!(item["createdAt"], first["createdAt"]);
    let path = format!("/api/terminal-sessions/{first_id}/ws");
    assert_eq!(item["transport"]["path"], path.as_str(), "{shown}");
    assert!(!shown.to_string().contains("btt_"), "{shown}");
    for stranger in [other_admin, outsider] {
        for id in [&first_id, &second_id] {
            stranger
                .get(&format!("/terminal-sessions/{id}"))
                .await
                .error(404, "not_found");
            stranger
                .post(&format!("/terminal-sessions/{id}/close"), json!({}))
                .await
                .error(404, "not_found");
        }
    }
    admin
        .get("/terminal-sessions/trm-none")
        .await
        .error(404, "not_found");
    admin
        .post("/terminal-sessions/trm-none/close", json!({}))
        .await
        .error(404, "not_found");
    Rest::anonymous()
        .get(&format!("/terminal-sessions/{first_id}"))
        .await
        .error(401, "unauthenticated");
    Rest::anonymous()
        .post(&format!("/terminal-sessions/{first_id}/close"), json!({}))
        .await
        .error(401, "unauthenticated");
    let close_first = format!("/terminal-sessions/{first_id}/close");
    refused(
        admin
            .post(&close_first, json!({"sessionId": second_id}))
            .await,
        "sessionId",
    );
    refused(
        admin.post(&close_first, json!({"reason": "x"})).await,
        "reason",
    );

    // Closing a session that waits for its WebSocket: its ticket no longer opens it, and a
    // second close (here without a body) answers the same.
    let close_second = format!("/terminal-sessions/{second_id}/close");
    let closed = admin.post(&close_second, json!({})).await.ok();
    assert_eq!(
        closed,
        json!({"sessionId": second_id, "closed": true, "status": "closed"})
    );
    let again = admin.send(reqwest::Method::POST, &close_second, None).await;
    assert_eq!(again.ok(), closed);
    let ticket_path = second["transport"]["path"].as_str().unwrap();
    assert_eq!(
        connect(&Rest::anonymous(), ticket_path, false).await.err(),
        Some(404),
        "a closed session's ticket"
    );
    admin
        .get(&format!("/terminal-sessions/{second_id}"))
        .await
        .error(404, "not_found");
    assert!(!listed_ids(admin, "").await.contains(&second_id));

    // Closing a connected session ends its shell and its WebSocket.
    let ticket_path = first["transport"]["path"].as_str().unwrap();
    let mut shell = connect(&Rest::anonymous(), ticket_path, false)
        .await
        .expect("the ticket connects");
    shell.run_and_expect("echo open-$((3+4))", "open-7").await;
    let shown = admin
        .get(&format!("/terminal-sessions/{first_id}"))
        .await
        .ok();
    assert_eq!(shown["item"]["status"], "active", "{shown}");
    // A stranger's close changed nothing.
    for stranger in [other_admin, outsider] {
        stranger
            .post(&close_first, json!({}))
            .await
            .error(404, "not_found");
    }
    shell.run_and_expect("echo still-$((4+4))", "still-8").await;
    let closed = admin.post(&close_first, json!({})).await.ok();
    assert_eq!(
        closed,
        json!({"sessionId": first_id, "closed": true, "status": "closed"})
    );
    while shell.read().await {}
    assert!(
        shell
            .events
            .iter()
            .any(|e| e["type"] == "error" && e["message"] == "the terminal session was closed"),
        "{:?}",
        shell.events
    );
    assert_eq!(admin.post(&close_first, json!({})).await.ok(), closed);
    eventually(READ, "the closed session unlisted", || async {
        (!listed_ids(admin, "").await.contains(&first_id)).then_some(())
    })
    .await;
    admin
        .get(&format!("/terminal-sessions/{first_id}"))
        .await
        .error(404, "not_found");
    assert_eq!(
        connect(admin, &path, false).await.err(),
        Some(404),
        "a closed session stays closed"
    );
}

#[tokio::test]
async fn a_resource_terminal_opens_a_shell_in_the_apps_serving_container() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, _) = crate::deploy_support::ready_server(&admin).await;
    let source = json!({"kind": "docker-image", "locator": "berth/sample-app:1"});
    let (id, _) =
        crate::shim_deployment_attempts::deployed(&admin, &server, source, "/healthz").await;
    let scope = json!({"scope": {"kind": "resource", "resourceId": id}});

    // Administrators only; the scope's fields are checked.
    member
        .post("/terminal-sessions", scope.clone())
        .await
        .error(403, "forbidden");
    for (body, field) in [
        (json!({"scope": {"kind": "resource"}}), "scope.resourceId"),
        (
            json!({"scope": {"kind": "pod", "resourceId": id}}),
            "scope.kind",
        ),
        (
            json!({"scope": {"kind": "resource", "resourceId": id}, "relativeDirectory": "x"}),
            "relativeDirectory",
        ),
    ] {
        let refused = admin.post("/terminal-sessions", body).await.expect(422);
        assert_eq!(refused["error"]["details"]["field"], field, "{refused}");
    }
    admin
        .post(
            "/terminal-sessions",
            json!({"scope": {"kind": "resource", "resourceId": "res-none"}}),
        )
        .await
        .error(404, "not_found");

    // The shell runs in the serving container: its host name is the container's short id.
    let record = admin.post("/terminal-sessions", scope).await.ok();
    assert_eq!(record["scope"], "resource");
    assert_eq!(record["resourceId"], id.as_str());
    let container = record["containerId"]
        .as_str()
        .expect("containerId")
        .to_string();
    // Appaloft's deploymentId: the deployment whose container it is; the list's resource
    // filters find the session by it.
    let deployment = record["deploymentId"]
        .as_str()
        .unwrap_or_else(|| panic!("deploymentId in {record}"))
        .to_string();
    let session = record["sessionId"].as_str().unwrap().to_string();
    for query in [
        "?scope=resource".to_string(),
        format!("?resourceId={id}"),
        format!("?scope=resource&resourceId={id}&deploymentId={deployment}"),
    ] {
        assert_eq!(
            listed_ids(&admin, &query).await,
            [session.as_str()],
            "{query}"
        );
    }
    for query in [
        "?scope=server".to_string(),
        "?deploymentId=dep-other".to_string(),
        format!("?resourceId={id}&serverId=srv-other"),
    ] {
        assert!(listed_ids(&admin, &query).await.is_empty(), "{query}");
    }
    let path = record["transport"]["path"].as_str().unwrap();
    let mut shell = connect(&admin, path, false)
        .await
        .expect("the WebSocket opens");
    shell
        .run_and_expect(
            "echo \"in=$(hostname)-$((6*7))\"",
            &format!("in={}-42", &container[..12]),
        )
        .await;
    let exit = shell.exit().await;
    assert_eq!(exit["exitStatus"], 0, "{exit}");

    let slug = admin.get(&format!("/resources/{id}")).await.ok()["resource"]["slug"]
        .as_str()
        .unwrap()
        .to_string();
    crate::deploy_support::delete_resource(&admin, &id, &slug).await;
    crate::deploy_support::remove_server(&admin, &server).await;
}

/// Berth's `dependency` scope: a managed database's own client in its container, logged in —
/// `psql` answers a query, `redis-cli` a PING — without its password in the session record.
#[tokio::test]
async fn a_database_terminal_opens_its_client_logged_in() {
    let s = crate::shim_dependency_resources::setup().await;
    let pg = s.provision("postgres", "Ledger").await;
    let cache = s.provision("redis", "Sessions").await;
    let scope = |id: &str| json!({"scope": {"kind": "dependency", "dependencyResourceId": id}});
    let refused = s
        .admin
        .post(
            "/terminal-sessions",
            json!({"scope": {"kind": "dependency"}}),
        )
        .await
        .expect(422);
    assert_eq!(
        refused["error"]["details"]["field"], "scope.dependencyResourceId",
        "{refused}"
    );
    s.member
        .post("/terminal-sessions", scope(&pg))
        .await
        .error(403, "forbidden");
    s.wait_ready(&pg).await;
    s.wait_ready(&cache).await;

    let record = s.admin.post("/terminal-sessions", scope(&pg)).await.ok();
    assert_eq!(record["scope"], "dependency");
    assert_eq!(record["dependencyResourceId"], pg.as_str());
    assert_eq!(record["containerId"], s.container(&pg).as_str());
    let path = record["transport"]["path"].as_str().unwrap();
    let mut psql = connect(&s.admin, path, false)
        .await
        .expect("the WebSocket opens");
    psql.expect("app=#").await;
    psql.run_and_expect("select 6*7 as answer;", "42").await;

    let record = s.admin.post("/terminal-sessions", scope(&cache)).await.ok();
    let password = s.password(&cache).await;
    assert!(!record.to_string().contains(&password), "{record}");
    let path = record["transport"]["path"].as_str().unwrap();
    let mut redis = connect(&s.admin, path, false)
        .await
        .expect("the WebSocket opens");
    redis.expect("6379>").await;
    redis.run_and_expect("PING", "PONG").await;
    redis.run_and_expect("SET greeting hello", "OK").await;
}
