//! Shared helpers for the integration tests. They run against the real local stack
//! (`hack/stack.sh up`), found through `KUBECONFIG` and the other variables `hack/stack.sh env`
//! prints; `hack/test.sh` sets them.

pub mod documented;
pub mod rest;
pub mod sshd;

use std::process::{Command, Output};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client};
use rand::Rng;

/// Label on every namespace a test creates, so `hack/test.sh` can sweep leftovers.
pub const TEST_LABEL: &str = "berth.dev/test";

/// A client for the local stack's API server.
pub async fn client() -> Client {
    assert!(
        std::env::var_os("KUBECONFIG").is_some(),
        "KUBECONFIG is not set: run the tests through hack/test.sh, or eval \"$(hack/stack.sh env)\""
    );
    Client::try_default()
        .await
        .expect("a client for the local stack's API server")
}

/// A short random suffix for object names, so tests can run in parallel and repeat.
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..6)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// A namespace owned by one test, deleted when the test ends (pass or fail).
pub struct TestNamespace {
    pub name: String,
    client: Client,
}

impl TestNamespace {
    /// Creates `t-<prefix>-<random>`.
    pub async fn new(client: &Client, prefix: &str) -> Self {
        let name = format!("t-{prefix}-{}", random_suffix());
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some([(TEST_LABEL.to_string(), "true".to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .expect("create test namespace");
        Self {
            name,
            client: client.clone(),
        }
    }

    /// An existing namespace (an organization's), deleted on drop like one made by `new`.
    pub fn adopt(client: &Client, name: &str) -> Self {
        Self {
            name: name.to_string(),
            client: client.clone(),
        }
    }

    /// A typed API handle for this namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.name)
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        let name = self.name.clone();
        run_cleanup(move |client| async move {
            let _ = Api::<Namespace>::all(client)
                .delete(&name, &DeleteParams::background())
                .await;
        });
    }
}

/// Runs async cleanup from `Drop`: on a helper thread with its own runtime and its own client,
/// since the test's client drives its connection from the test's runtime, which `Drop` blocks.
pub fn run_cleanup<F, Fut>(cleanup: F)
where
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let _ = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime for cleanup");
        runtime.block_on(async move {
            if let Ok(client) = Client::try_default().await {
                cleanup(client).await;
            }
        });
    })
    .join();
}

/// Runs `kubectl` (the real one a user runs) with the stack's KUBECONFIG.
pub fn kubectl(args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut command = Command::new("kubectl");
    command
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().expect("kubectl is installed");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write kubectl stdin");
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("kubectl finished")
}

/// Polls `check` every 200 ms until it returns `Some`, or panics with `what` after `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Like [`eventually`], but `check` says why it is not done yet, and the last reason is in the
/// panic message: a timeout then shows what the test last saw.
pub async fn eventually_explained<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = match check().await {
            Ok(value) => return value,
            Err(reason) => reason,
        };
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}; last seen:\n{last}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The repository root (tests read `examples/` and `manifests/` from it).
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repo root")
        .to_path_buf()
}

/// A variable `hack/stack.sh env` exports (`hack/test.sh` sets them all).
pub fn stack_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run the tests through hack/test.sh, or eval \"$(hack/stack.sh env)\"")
    })
}
