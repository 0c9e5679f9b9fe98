//! Custom domains and TLS against the real stack (issue 16): a DomainBinding gets a certificate
//! from Pebble (a real ACME server) through the edge proxy, HTTPS serves the app with it, a
//! host name that does not lead to the server fails pre-flight with no order, a CA refusing
//! the order is retried and reported (and a person told once), an imported certificate near
//! its expiry warns a person once, and `issue-or-renew` is idempotent by key.
//!
//! Pebble checks HTTP-01 on port 5002 (hack/lib/pebble.sh), so these tests' servers publish
//! their edge proxy there (HTTPS on 5003) and take turns.

use std::process::Command;
use std::time::Duration;

use berth_crds::certificate::Certificate;
use berth_crds::condition::{ConditionStatus, READY, find};
use berth_crds::domain_binding::DomainBinding;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{TestNamespace, client, eventually, kubectl, random_suffix, stack_env};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::deploy_support::docker_names;
use crate::deployments::{apply, resource_yaml, teardown};
use crate::notifications::{Receiver, hook, webhook_channel};
use crate::servers::support::{create_credential, create_server, stack_key, wait_condition};

/// The edge proxy ports Pebble validates against: one server at a time may publish them.
pub(crate) static PEBBLE_PORTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
pub(crate) const HTTP_PORT: u16 = 5002;
pub(crate) const HTTPS_PORT: u16 = 5003;
const WAIT: Duration = Duration::from_secs(150);

/// A server `local` whose edge proxy publishes 5002/5003, and the sample app `web` on it.
async fn server_with_app(ns: &TestNamespace) {
    pebble_server(ns).await;
    apply(&resource_yaml(ns, "web", "berth/sample-app:1", "/healthz"));
}

/// A server `local` whose edge proxy publishes 5002/5003, Ready.
pub(crate) async fn pebble_server(ns: &TestNamespace) {
    let (private_key, _) = stack_key();
    create_credential(ns, "key", &private_key).await;
    let servers = create_server(
        ns,
        "local",
        "127.0.0.1",
        stack_env("BERTH_SSH_PORT").parse().unwrap(),
        "key",
        json!({ "proxy": { "kind": "caddy", "httpPort": HTTP_PORT, "httpsPort": HTTPS_PORT } }),
    )
    .await;
    wait_condition(&servers, "local", READY, ConditionStatus::True, None, WAIT).await;
}

/// Removes the app, then the server, and waits until its edge proxy no longer holds the ports
/// the next test needs.
pub(crate) async fn release_ports(ns: &TestNamespace) {
    teardown(ns, "web").await;
    let output = kubectl(
        &[
            "delete",
            "server.berth.dev",
            "local",
            "-n",
            &ns.name,
            "--wait=false",
        ],
        None,
    );
    assert!(output.status.success(), "{output:?}");
    let filter = format!("name=berth-edge-proxy.{}.local", ns.name);
    eventually(WAIT, "edge proxy removed", || {
        let filter = filter.clone();
        async move { docker_names(&filter).is_empty().then_some(()) }
    })
    .await;
}

async fn bind(ns: &TestNamespace, name: &str, hostname: &str) {
    let binding: DomainBinding = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "DomainBinding",
        "metadata": { "name": name },
        "spec": { "resourceId": "web", "hostname": hostname },
    }))
    .unwrap();
    ns.api::<DomainBinding>()
        .create(&PostParams::default(), &binding)
        .await
        .expect("create domain binding");
}

/// Waits until `name` has condition `type_` with `status` (and `reason`), returns the object.
async fn wait_certificate(
    api: &Api<Certificate>,
    name: &str,
    type_: &str,
    status: ConditionStatus,
    reason: &str,
) -> Certificate {
    eventually(
        WAIT,
        &format!("certificate {name}: {type_}={status:?} {reason}"),
        || async {
            let certificate = api.get_opt(name).await.ok()??;
            let condition = find(&certificate.status.as_ref()?.conditions, type_)?;
            (condition.status == status && condition.reason == reason).then_some(certificate)
        },
    )
    .await
}

pub(crate) fn curl(args: &[&str]) -> (String, String) {
    let output = Command::new("curl")
        .args(["-s", "--max-time", "10"])
        .args(args)
        .output()
        .expect("curl (tests only)");
    (
        String::from_utf8_lossy(&output.stdout).to_string(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

/// SHA-256 of the leaf certificate served for `hostname` on 5003, read by openssl.
fn served_leaf_sha256(hostname: &str) -> String {
    let script = format!(
        "openssl s_client -connect 127.0.0.1:{HTTPS_PORT} -servername {hostname} </dev/null 2>/dev/null \
         | openssl x509 -outform DER | sha256sum | cut -d' ' -f1"
    );
    let output = Command::new("sh").args(["-c", &script]).output().unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// SHA-256 of the leaf (first certificate) of a PEM chain, read by openssl.
fn leaf_sha256(chain_pem: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new("sh")
        .args([
            "-c",
            "openssl x509 -outform DER | sha256sum | cut -d' ' -f1",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(chain_pem).unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Points `hostname` at `address` in the DNS Pebble resolves with.
pub async fn dns_a_record(hostname: &str, address: &str) {
    let url = format!("{}/add-a", stack_env("BERTH_ACME_DNS_MANAGEMENT_URL"));
    let response = reqwest::Client::new()
        .post(url)
        .json(&json!({ "host": format!("{hostname}."), "addresses": [address] }))
        .send()
        .await
        .expect("pebble-challtestsrv management API");
    assert!(response.status().is_success(), "{response:?}");
}

fn pebble_log_mentions(needle: &str) -> bool {
    let path = format!("{}/logs/pebble.log", stack_env("BERTH_STACK_DIR"));
    std::fs::read_to_string(path).is_ok_and(|log| log.contains(needle))
}

#[tokio::test]
async fn a_binding_gets_a_certificate_from_pebble_and_https_serves_the_app_with_it() {
    let _ports = PEBBLE_PORTS.lock().await;
    let client = client().await;
    let ns = TestNamespace::new(&client, "tls").await;
    server_with_app(&ns).await;
    let hostname = format!("shop-{}.berth.test", random_suffix());
    bind(&ns, "shop", &hostname).await;

    let bindings = ns.api::<DomainBinding>();
    let binding = eventually(WAIT, "domain binding Ready", || async {
        let binding = bindings.get_opt("shop").await.ok()??;
        let ready = find(&binding.status.as_ref()?.conditions, READY)?;
        (ready.status == ConditionStatus::True).then_some(binding)
    })
    .await;
    let status = binding.status.unwrap();
    assert_eq!(
        status.url.as_deref(),
        Some(format!("https://{hostname}:{HTTPS_PORT}/").as_str())
    );

    // A client trusting only Pebble's root reaches the app over HTTPS.
    let root = stack_env("BERTH_ACME_ROOT_CA");
    let resolve = format!("{hostname}:{HTTPS_PORT}:127.0.0.1");
    let (body, error) = curl(&[
        "--fail",
        "--cacert",
        &root,
        "--resolve",
        &resolve,
        &format!("https://{hostname}:{HTTPS_PORT}/"),
    ]);
    assert!(
        body.contains("hello from berth sample-app v1"),
        "HTTPS answer: {body:?} {error}"
    );

    // The served certificate is the one in the Secret, and the key never left it.
    let certificate = ns.api::<Certificate>().get("shop").await.unwrap();
    let certificate_status = certificate.status.clone().unwrap();
    let secret = ns
        .api::<Secret>()
        .get(certificate_status.secret_name.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let chain = &secret.data.as_ref().unwrap()["tls.crt"].0;
    let in_secret = leaf_sha256(chain);
    assert_eq!(served_leaf_sha256(&hostname), in_secret);
    assert_eq!(
        certificate_status.sha256_fingerprint.as_deref(),
        Some(in_secret.as_str())
    );
    let days = certificate_status
        .days_until_expiry
        .expect("days until expiry");
    assert!(
        (0..=1).contains(&days),
        "Pebble's certificates here live minutes: {days}"
    );
    let key = String::from_utf8_lossy(&secret.data.as_ref().unwrap()["tls.key"].0).to_string();
    let key_line = key.lines().nth(1).expect("a PEM key").to_string();
    let described = serde_json::to_string(&certificate).unwrap()
        + &serde_json::to_string(&bindings.get("shop").await.unwrap()).unwrap();
    assert!(
        !described.contains(&key_line),
        "the private key is in a status"
    );

    // Plain HTTP redirects to HTTPS (the default policy); the challenge path is not served.
    let (headers, _) = curl(&[
        "-o",
        "/dev/null",
        "-D",
        "-",
        "-H",
        &format!("Host: {hostname}"),
        &format!("http://127.0.0.1:{HTTP_PORT}/some/page?q=1"),
    ]);
    assert!(headers.starts_with("HTTP/1.1 308"), "{headers}");
    assert!(
        headers.contains(&format!(
            "ocation: https://{hostname}:{HTTPS_PORT}/some/page?q=1"
        )),
        "{headers}"
    );

    release_ports(&ns).await;
}

#[tokio::test]
async fn renewal_comes_before_expiry_and_a_kept_alive_client_loses_no_request() {
    let _ports = PEBBLE_PORTS.lock().await;
    let client = client().await;
    let ns = TestNamespace::new(&client, "tls-renew").await;
    server_with_app(&ns).await;
    let hostname = format!("renew-{}.berth.test", random_suffix());
    bind(&ns, "renew", &hostname).await;
    let certificates = ns.api::<Certificate>();
    let first = wait_certificate(
        &certificates,
        "renew",
        READY,
        ConditionStatus::True,
        "Issued",
    )
    .await
    .status
    .unwrap();
    let bindings = ns.api::<DomainBinding>();
    eventually(WAIT, "domain binding Ready", || async {
        let binding = bindings.get_opt("renew").await.ok()??;
        condition_true(&binding.status?.conditions, READY).then_some(())
    })
    .await;

    // One client, one kept-alive connection, a request every 100 ms through the renewal. Each
    // config reload closes Caddy's idle keep-alive connections; a request written on one just
    // as it closes gets no answer, and the client sends it again on a new connection, as
    // browsers and Go's client do for an idempotent request (hyper does not on its own).
    let root = std::fs::read(stack_env("BERTH_ACME_ROOT_CA")).unwrap();
    let https = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&root).unwrap())
        .resolve(&hostname, ([127, 0, 0, 1], HTTPS_PORT).into())
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let url = format!("https://{hostname}:{HTTPS_PORT}/");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = tokio::spawn({
        let (stop, url) = (stop.clone(), url.clone());
        async move {
            let (mut ok, mut failed) = (0u32, Vec::new());
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match get_as_browsers_do(&https, &url).await {
                    Ok(r) if r.status() == 200 => ok += 1,
                    Ok(r) => failed.push(r.status().to_string()),
                    Err(e) => failed.push(with_sources(&e)),
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (ok, failed)
        }
    });
    let first_sha = first.sha256_fingerprint.clone().unwrap();
    let not_after = first.not_after.clone().unwrap().0;
    let renewed = eventually(
        Duration::from_secs(200),
        "a renewed certificate served",
        || async {
            let status = certificates.get_opt("renew").await.ok()??.status?;
            let sha = status.sha256_fingerprint.clone()?;
            (sha != first_sha && served_leaf_sha256(&hostname) == sha).then_some(status)
        },
    )
    .await;
    let renewed_at = k8s_openapi::jiff::Timestamp::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (ok, failed) = load.await.unwrap();
    assert!(
        renewed_at < not_after,
        "renewed only after the old certificate expired"
    );
    assert!(renewed.not_after.unwrap().0 > not_after);
    assert!(ok > 100, "only {ok} requests answered");
    assert!(
        failed.is_empty(),
        "requests lost during renewal: {failed:?}"
    );
    release_ports(&ns).await;
}

/// GET `url`, sent once more on a new connection when the kept-alive one was closed before
/// any answer came (what a browser does); any other failure is the answer.
async fn get_as_browsers_do(
    client: &reqwest::Client,
    url: &str,
) -> reqwest::Result<reqwest::Response> {
    match client.get(url).send().await {
        Err(e) if closed_before_answer(&with_sources(&e)) => client.get(url).send().await,
        answer => answer,
    }
}

fn closed_before_answer(error: &str) -> bool {
    error.contains("connection closed before message completed")
        || error.contains("Connection reset by peer")
}

/// An error with its causes, so a lost request says whether the connection, TLS or HTTP failed.
fn with_sources(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

fn condition_true(conditions: &[berth_crds::condition::Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == ConditionStatus::True)
}

#[tokio::test]
async fn a_host_name_that_does_not_reach_the_server_fails_preflight_and_places_no_order() {
    let _ports = PEBBLE_PORTS.lock().await;
    let client = client().await;
    let ns = TestNamespace::new(&client, "tls-dns").await;
    server_with_app(&ns).await;
    let hostname = format!("elsewhere-{}.berth.test", random_suffix());
    // TEST-NET-1: an address no machine here has.
    dns_a_record(&hostname, "192.0.2.10").await;
    bind(&ns, "elsewhere", &hostname).await;

    let certificates = ns.api::<Certificate>();
    let failed = wait_certificate(
        &certificates,
        "elsewhere",
        "Failed",
        ConditionStatus::True,
        "PreflightFailed",
    )
    .await;
    let status = failed.status.unwrap();
    let message = &find(&status.conditions, "Failed").unwrap().message;
    assert!(
        message.contains(&format!(
            "{hostname} resolves to 192.0.2.10, not to server local"
        )),
        "{message}"
    );
    assert!(status.next_retry_at.is_some() && status.failed_attempts >= 1);
    let binding = ns.api::<DomainBinding>().get("elsewhere").await.unwrap();
    let verified = find(&binding.status.as_ref().unwrap().conditions, "Verified").unwrap();
    assert_eq!(verified.status, ConditionStatus::False);
    assert_eq!(verified.reason, "ResolvesElsewhere");
    // Pebble logs every name it is asked for; this one never reached it.
    assert!(!pebble_log_mentions(&hostname), "an order reached the CA");
    release_ports(&ns).await;
}

#[tokio::test]
async fn an_order_the_ca_refuses_is_reported_with_its_error_and_retried() {
    let _ports = PEBBLE_PORTS.lock().await;
    let client = client().await;
    let ns = TestNamespace::new(&client, "tls-refused").await;
    server_with_app(&ns).await;
    let hostname = format!(
        "x{}.{}",
        random_suffix(),
        stack_env("BERTH_ACME_REFUSED_DOMAIN")
    );
    let receiver = Receiver::start().await;
    webhook_channel(&ns, "ops", &receiver, &["certificate-failed"]).await;
    bind(&ns, "refused", &hostname).await;

    let certificates = ns.api::<Certificate>();
    wait_certificate(
        &certificates,
        "refused",
        "Failed",
        ConditionStatus::True,
        "OrderFailed",
    )
    .await;
    // Retried with backoff (10 s, then 20 s): a second failure comes on its own.
    let retried = eventually(WAIT, "a second failed attempt", || async {
        let certificate = certificates.get_opt("refused").await.ok()??;
        let status = certificate.status?;
        (status.failed_attempts >= 2).then_some(status)
    })
    .await;
    let message = &find(&retried.conditions, "Failed").unwrap().message;
    assert!(message.contains("the CA refused the order"), "{message}");
    assert!(
        message.contains("rejectedIdentifier"),
        "the CA's own error: {message}"
    );
    assert_eq!(
        find(&retried.conditions, READY).unwrap().status,
        ConditionStatus::False
    );
    // A person heard of it once, not once per retry, with the CA's answer.
    let (_, message) = hook(&receiver, "certificate-failed").await;
    assert_eq!(message["subject"]["kind"], "Certificate", "{message}");
    assert_eq!(message["subject"]["displayName"], hostname.as_str());
    let summary = message["summary"].as_str().unwrap();
    assert!(summary.contains("the CA refused the order"), "{summary}");
    assert_eq!(receiver.hooks("certificate-failed").len(), 1);
    release_ports(&ns).await;
}

/// A key pair for `hostname` issued 80 days ago that expires in 10 days (past its renewal
/// point, two thirds into its life): the certificate PEM and the key PEM.
fn aging_key_pair(hostname: &str) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec![hostname.to_string()]).unwrap();
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::days(80);
    params.not_after = now + time::Duration::days(10);
    let certificate = params.self_signed(&key).unwrap();
    (certificate.pem(), key.serialize_pem())
}

#[tokio::test]
async fn an_imported_certificate_near_expiry_warns_a_person_once() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "tls-import").await;
    let receiver = Receiver::start().await;
    webhook_channel(&ns, "ops", &receiver, &["certificate-expiring"]).await;
    let hostname = format!("old-{}.berth.test", random_suffix());
    let (chain, key) = aging_key_pair(&hostname);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": { "name": "old-tls" },
        "type": "kubernetes.io/tls",
        "stringData": { "tls.crt": chain, "tls.key": key },
    }))
    .unwrap();
    ns.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let certificate: Certificate = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Certificate",
        "metadata": { "name": "old" },
        "spec": { "domainBindingId": "old", "providerKey": "imported" },
    }))
    .unwrap();
    let certificates = ns.api::<Certificate>();
    certificates
        .create(&PostParams::default(), &certificate)
        .await
        .unwrap();
    bind(&ns, "old", &hostname).await;

    wait_certificate(
        &certificates,
        "old",
        READY,
        ConditionStatus::True,
        "ExpiringSoon",
    )
    .await;
    let (_, message) = hook(&receiver, "certificate-expiring").await;
    assert_eq!(message["subject"]["name"], "old", "{message}");
    let summary = message["summary"].as_str().unwrap();
    assert!(
        summary.contains("(9 days)") || summary.contains("(10 days)"),
        "{summary}"
    );
    assert!(
        summary.contains("replace the key pair in Secret old-tls"),
        "{summary}"
    );
    assert!(!summary.contains("PRIVATE KEY"), "{summary}");
    // Looked at again (a change to the object), it does not warn twice.
    certificates
        .patch(
            "old",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(receiver.hooks("certificate-expiring").len(), 1);
}

#[tokio::test]
async fn issue_or_renew_with_one_idempotency_key_twice_starts_one_attempt() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(berth_crds::member::OrganizationRole::Member).await;
    let ns = TestNamespace::adopt(&client, &org.namespace);
    // A binding whose certificate Berth would try in vain: nothing routes it, which is fine
    // here; only the requests are counted.
    let binding: DomainBinding = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "DomainBinding",
        "metadata": { "name": "api" },
        "spec": { "resourceId": "missing", "hostname": "api.berth.test", "tlsMode": "manual" },
    }))
    .unwrap();
    ns.api::<DomainBinding>()
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();

    let rest: &Rest = &member.rest;
    let body = json!({ "domainBindingId": "api", "reason": "renew", "idempotencyKey": "k-1" });
    let first = rest
        .post("/certificates/issue-or-renew", body.clone())
        .await
        .ok();
    let second = rest.post("/certificates/issue-or-renew", body).await.ok();
    assert_eq!(first["certificateId"], "api");
    assert_eq!(first, second, "one key, one attempt");
    let other = rest
        .post(
            "/certificates/issue-or-renew",
            json!({ "domainBindingId": "api", "idempotencyKey": "k-2" }),
        )
        .await
        .ok();
    assert_ne!(other["attemptId"], first["attemptId"]);
    let shown = rest.get("/certificates/api").await.ok();
    assert_eq!(shown["domainBindingId"], "api");
    let listed = rest.get("/domain-bindings").await.ok();
    assert_eq!(listed["items"][0]["hostname"], "api.berth.test");

    // Bad input names its field.
    let error = rest
        .post(
            "/certificates/issue-or-renew",
            json!({ "domainBindingId": "" }),
        )
        .await
        .error(422, "validation_error");
    assert_eq!(error["details"]["field"], "domainBindingId");
    let error = rest
        .post(
            "/certificates/issue-or-renew",
            json!({ "domainBindingId": "api", "challengeType": "dns-01" }),
        )
        .await
        .error(422, "validation_error");
    assert_eq!(error["details"]["field"], "challengeType");
    rest.post(
        "/certificates/issue-or-renew",
        json!({ "domainBindingId": "nope" }),
    )
    .await
    .error(404, "not_found");
}
