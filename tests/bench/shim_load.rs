//! The load the shim benchmarks share: `requests` GETs from `concurrency` workers on kept-alive
//! or fresh HTTP/1.1 connections, latencies as sorted samples, PASS/FAIL lines. Loopback only.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

/// Prints PASS or FAIL of `ratio` against `goal`; true when met.
pub fn verdict(label: &str, ratio: f64, goal: f64) -> bool {
    let met = ratio <= goal;
    let word = if met { "PASS" } else { "FAIL" };
    println!("{word}: {label} (goal <= {goal}x)");
    met
}

/// `requests` GETs of `path` from `concurrency` workers, each on one kept-alive connection or
/// on a new connection per request.
pub struct Load {
    pub shim: ShimAddress,
    pub token: String,
    pub path: String,
    pub fresh: bool,
    pub concurrency: usize,
    pub requests: usize,
}

impl Load {
    pub async fn run(&self) -> anyhow::Result<Vec<Duration>> {
        let next = Arc::new(AtomicUsize::new(0));
        let workers = (0..self.concurrency).map(|_| self.worker(next.clone()));
        let mut latencies = Vec::new();
        for worker in futures::future::join_all(workers).await {
            latencies.extend(worker?);
        }
        Ok(latencies)
    }

    /// A kept-alive worker connects before its first timed request: its latencies are of
    /// requests on an open connection (the fresh load measures connecting).
    async fn worker(&self, next: Arc<AtomicUsize>) -> anyhow::Result<Vec<Duration>> {
        let mut latencies = Vec::new();
        let mut kept = None;
        if !self.fresh {
            kept = Some(connect(&self.shim).await?);
        }
        while next.fetch_add(1, Ordering::Relaxed) < self.requests {
            let started = Instant::now();
            if self.fresh {
                kept = Some(connect(&self.shim).await?);
            }
            let sender = kept.as_mut().expect("connected");
            get(sender, &self.shim, &self.path, &self.token).await?;
            latencies.push(started.elapsed());
        }
        Ok(latencies)
    }
}

/// Several targets under the same load: `requests` GETs of each, kept-alive and fresh, split
/// over `rounds` after a warm-up of every target. Each round begins with the next target in
/// turn, so no target always runs first after the previous round's burst of fresh connections.
pub struct Rounds {
    pub shim: ShimAddress,
    pub token: String,
    pub concurrency: usize,
    pub requests: usize,
    pub rounds: usize,
}

impl Rounds {
    /// The latencies of each `(name, path)` target, by name and whether connections were fresh.
    pub async fn run<'t>(
        &self,
        targets: &[(&'t str, String)],
    ) -> anyhow::Result<HashMap<(&'t str, bool), Vec<Duration>>> {
        let load = |path: &str, fresh: bool, requests: usize| Load {
            shim: self.shim.clone(),
            token: self.token.clone(),
            path: path.to_string(),
            fresh,
            concurrency: self.concurrency,
            requests,
        };
        for (_, path) in targets {
            load(path, false, self.concurrency * 2).run().await?;
        }
        let rounds = self.rounds.max(1);
        let per_round = self.requests.div_ceil(rounds);
        let mut samples: HashMap<(&str, bool), Vec<Duration>> = HashMap::new();
        for round in 0..rounds {
            for fresh in [false, true] {
                let in_turn = targets.iter().cycle().skip(round).take(targets.len());
                for (name, path) in in_turn {
                    let latencies = load(path, fresh, per_round).run().await?;
                    samples.entry((name, fresh)).or_default().extend(latencies);
                }
            }
        }
        Ok(samples)
    }
}

/// Sorted latencies.
pub struct Sample(pub Vec<Duration>);

impl Sample {
    pub fn of(mut latencies: Vec<Duration>) -> Self {
        latencies.sort();
        Self(latencies)
    }

    /// Seconds at quantile `q`.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        let index = ((self.0.len() as f64 * q).ceil() as usize).saturating_sub(1);
        self.0[index.min(self.0.len() - 1)].as_secs_f64()
    }

    pub fn p50(&self) -> f64 {
        self.quantile(0.50)
    }

    pub fn p99(&self) -> f64 {
        self.quantile(0.99)
    }

    pub fn print(&self, label: &str) {
        println!(
            "{label:<44} {:>8} {:>8.2}ms {:>8.2}ms",
            self.0.len(),
            self.p50() * 1e3,
            self.p99() * 1e3
        );
    }
}

pub fn print_header() {
    println!(
        "{:<44} {:>8} {:>10} {:>10}",
        "target", "requests", "p50", "p99"
    );
}

/// Host, port and base path of the shim's URL.
#[derive(Clone)]
pub struct ShimAddress {
    pub authority: String,
    pub path: String,
}

impl ShimAddress {
    pub fn parse(url: &str) -> anyhow::Result<Self> {
        let rest = url
            .strip_prefix("http://")
            .context("the shim's URL must be http:// on loopback")?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
        ensure!(
            matches!(host, "127.0.0.1" | "localhost" | "[::1]"),
            "benchmarks run against loopback only, not {host}"
        );
        Ok(Self {
            authority: authority.to_string(),
            path: format!("/{}", path.trim_end_matches('/')),
        })
    }
}

pub type Sender = http1::SendRequest<Full<Bytes>>;

/// One HTTP/1.1 connection to the shim (kept alive while the sender lives).
pub async fn connect(address: &ShimAddress) -> anyhow::Result<Sender> {
    let stream = tokio::net::TcpStream::connect(&address.authority).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

/// A GET on `sender`'s connection; the body of a 2xx.
pub async fn get(
    sender: &mut Sender,
    address: &ShimAddress,
    path: &str,
    token: &str,
) -> anyhow::Result<Bytes> {
    sender.ready().await?;
    let request = hyper::Request::get(path)
        .header("host", &address.authority)
        .header("authorization", format!("Bearer {token}"))
        .body(Full::new(Bytes::new()))?;
    let response = sender.send_request(request).await?;
    let status = response.status();
    let bytes = response.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        bail!("GET {path}: HTTP {status}");
    }
    Ok(bytes)
}
