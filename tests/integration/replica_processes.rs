//! The processes of the replica tests: a second berth-shim and a standby berth-controller,
//! started as hack/lib/berth.sh starts the running ones, each with a log of its own.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use berth_tests::{eventually, random_suffix};
use serde_json::Value;

/// A second berth-shim process, killed when dropped.
pub(crate) struct SecondShim {
    child: Child,
    /// `http://<address>`
    pub(crate) origin: String,
    log: PathBuf,
}

impl SecondShim {
    /// Starts berth-shim as hack/lib/berth.sh starts the running one (its ServiceAccount's
    /// kubeconfig, the environment hack/test.sh exported: data directory, store, intervals) on
    /// a free port of its own; [`ready`](Self::ready) waits for it.
    pub(crate) fn spawn() -> Self {
        let bin_dir = std::env::var("BERTH_BIN_DIR").expect("BERTH_BIN_DIR (hack/test.sh sets it)");
        let controller_kubeconfig = PathBuf::from(
            std::env::var("BERTH_CONTROLLER_KUBECONFIG")
                .expect("BERTH_CONTROLLER_KUBECONFIG (hack/test.sh sets it)"),
        );
        // hack/lib/berth.sh writes each process's kubeconfig into the stack directory.
        let kubeconfig = controller_kubeconfig.with_file_name("berth-shim.kubeconfig");
        assert!(kubeconfig.exists(), "{} is missing", kubeconfig.display());
        let shim_log = PathBuf::from(
            std::env::var("BERTH_SHIM_LOG").expect("BERTH_SHIM_LOG (hack/test.sh sets it)"),
        );
        let log = shim_log.with_file_name(format!("test-shim-replica-{}.log", random_suffix()));
        let output = std::fs::File::create(&log).expect("the second shim's log");
        let address = free_address();
        let child = Command::new(format!("{bin_dir}/berth-shim"))
            .args(["--listen", &address])
            .stdin(Stdio::null())
            .env("KUBECONFIG", &kubeconfig)
            .env_remove("BERTH_PUBLIC_URL")
            .stdout(output.try_clone().unwrap())
            .stderr(output)
            .spawn()
            .expect("start a second berth-shim");
        Self {
            child,
            origin: format!("http://{address}"),
            log,
        }
    }

    /// Waits until its caches are filled and it serves.
    pub(crate) async fn ready(&mut self) {
        let readyz = format!("{}/readyz", self.origin);
        eventually(Duration::from_secs(90), "the second shim's /readyz", || {
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                panic!("the second shim exited ({status}): {log}");
            }
            let readyz = readyz.clone();
            async move {
                let response = reqwest::get(&readyz).await.ok()?;
                response.status().is_success().then_some(())
            }
        })
        .await;
    }

    /// A REST caller of this replica (a [`Rest`] knows the running one only).
    pub(crate) async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request =
            reqwest::Client::new().request(method, format!("{}/api{path}", self.origin));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("the second shim answers");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for SecondShim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A failed test keeps the log beside the running shim's, for its cause.
        if !std::thread::panicking() {
            std::fs::remove_file(&self.log).ok();
        }
    }
}

/// A second berth-controller, on standby while the running one leads, pointed at the second
/// shim; killed when dropped.
pub(crate) struct StandbyController {
    child: Child,
    log: PathBuf,
}

impl StandbyController {
    pub(crate) fn spawn(shim: &SecondShim) -> Self {
        let bin_dir = std::env::var("BERTH_BIN_DIR").expect("BERTH_BIN_DIR (hack/test.sh sets it)");
        let kubeconfig = std::env::var("BERTH_CONTROLLER_KUBECONFIG")
            .expect("BERTH_CONTROLLER_KUBECONFIG (hack/test.sh sets it)");
        let log = shim
            .log
            .with_file_name(format!("test-controller-{}.log", random_suffix()));
        let output = std::fs::File::create(&log).expect("the second controller's log");
        let child = Command::new(format!("{bin_dir}/berth-controller"))
            .args([
                "run",
                "--listen",
                &free_address(),
                "--identity",
                "replicas-standby",
            ])
            .env("KUBECONFIG", kubeconfig)
            .env("BERTH_SHIM_URL", &shim.origin)
            .stdin(Stdio::null())
            .stdout(output.try_clone().unwrap())
            .stderr(output)
            .spawn()
            .expect("start a second berth-controller");
        Self { child, log }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for StandbyController {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            std::fs::remove_file(&self.log).ok();
        }
    }
}

/// A local address no one listens on now.
pub(crate) fn free_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().unwrap().to_string()
}
