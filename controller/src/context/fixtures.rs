//! What reconciler unit tests run on (after kube-rs/controller-rs `src/fixtures.rs`): a
//! [`Context`] whose client talks to a scripted API server, caches the test fills by hand, and a
//! stand-in server that notices any SSH connection a reconcile attempts. Tests only.

use std::sync::Arc;
use std::time::Duration;

use berth_crds::server::{Server, ServerSpec};
use berth_crds::ssh_credential::SshCredential;
use berth_observations::ObservationWriter;
use berth_remote::ServerId;
use berth_source::SourceCache;
use http::{Request, Response};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::client::Body;
use serde_json::json;
use tokio::net::TcpListener;

pub use super::api_server::{ApiServer, Exchange, Script, Sent};
use super::{AcmeSettings, Context};
use crate::cache::{Caches, Feeds};
use crate::metrics::Metrics;
use crate::observer::{MonitoringSettings, Observers};

/// The SSH key of the stand-in server's credential (a throwaway key of the unit tests).
const UNIT_TEST_KEY: &str = include_str!("../../remote/src/testdata/unit_test_key");

impl Context {
    /// A context on a scripted API server ([`ApiServer::serve`] before reconciling: until
    /// then a request waits), with empty caches (fill them through the returned [`Feeds`],
    /// `feeds.projects.put(project)`), no server observers, an observation store that keeps
    /// nothing, and an ACME CA that does not resolve.
    pub fn test() -> (Arc<Self>, ApiServer, Feeds) {
        let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let client = Client::new(service, "default");
        let (caches, feeds) = Caches::new();
        // Nobody is woken in a unit test: the receivers are dropped, and wake-ups with them.
        let (observers, _wakes) = Observers::new(MonitoringSettings {
            interval: Duration::from_secs(30),
        });
        let acme = AcmeSettings {
            directory_url: "https://acme.invalid/directory".into(),
            ..AcmeSettings::default()
        };
        // Never written: no test deploys a git source.
        let sources = SourceCache::new(std::env::temp_dir().join("berth-unit-tests-no-sources"));
        let context = Context::new(
            client,
            Metrics::default(),
            ObservationWriter::default(),
            caches,
            observers,
            crate::context::Integrations {
                acme,
                sources,
                notices: crate::notices::Notices::default(),
                volume_helper_image: "busybox:1.37".into(),
                migrations: crate::migration_steps::Shim::new(None, "berth-system".into()),
            },
        );
        (context, ApiServer::new(handle), feeds)
    }
}

/// A server in the caches (with its SshCredential and key Secret) whose address is a listener
/// of the test's: any SSH connection a reconcile attempts arrives here, so "no connection" is
/// observed, not assumed from a credential that happened to be missing.
pub struct StandInServer {
    listener: TcpListener,
    pub id: ServerId,
}

impl StandInServer {
    /// Server `name` in `namespace`, with a Caddy edge proxy on ports 8080/8443.
    pub async fn start(feeds: &mut Feeds, namespace: &str, name: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a local port");
        let port = listener.local_addr().expect("an address").port();
        let mut server = Server::new(name, server_spec(port));
        server.metadata.namespace = Some(namespace.into());
        feeds.servers.put(server);
        feeds.credentials.put(credential(namespace));
        feeds.secrets.put(key_secret(namespace));
        let id = ServerId {
            namespace: namespace.into(),
            name: name.into(),
        };
        Self { listener, id }
    }

    /// Whether anything connected within `wait` (the connection is dropped at once).
    pub async fn dialled_within(&self, wait: Duration) -> bool {
        tokio::time::timeout(wait, self.listener.accept())
            .await
            .is_ok_and(|accepted| accepted.is_ok())
    }

    /// Fails the test if a reconcile reached for this server's SSH: a connection in the pool,
    /// one ever opened, or a dial the listener saw.
    pub async fn assert_untouched(&self, context: &Context) {
        assert_eq!(context.servers.connections_opened(), 0, "an SSH connection");
        assert!(context.servers.current(&self.id).await.is_none());
        assert!(
            !self.dialled_within(Duration::from_millis(50)).await,
            "the reconcile dialled the server"
        );
    }
}

fn server_spec(port: u16) -> ServerSpec {
    serde_json::from_value(json!({
        "host": "127.0.0.1", "port": port, "username": "root", "credentialId": "key",
        "proxy": { "kind": "caddy", "httpPort": 8080, "httpsPort": 8443 },
    }))
    .expect("a server spec")
}

fn credential(namespace: &str) -> SshCredential {
    let mut credential: SshCredential = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "SshCredential",
        "metadata": { "name": "key" },
        "spec": { "name": "key", "privateKeySecretRef": { "name": "key-ssh" } },
    }))
    .expect("a credential");
    credential.metadata.namespace = Some(namespace.into());
    credential
}

fn key_secret(namespace: &str) -> Secret {
    let mut secret = Secret {
        data: Some(
            [(
                "privateKey".to_string(),
                ByteString(UNIT_TEST_KEY.as_bytes().to_vec()),
            )]
            .into(),
        ),
        ..Default::default()
    };
    secret.metadata.name = Some("key-ssh".into());
    secret.metadata.namespace = Some(namespace.into());
    secret
}

mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_the_script_did_not_list_fails_the_test() {
        use berth_crds::project::Project;
        let (context, api, _feeds) = Context::test();
        let script = api.serve([Exchange::get(
            "/apis/berth.dev/v1alpha1/namespaces/a/projects/p",
        )]);
        let projects = kube::Api::<Project>::namespaced(context.client.clone(), "a");
        assert!(projects.get_opt("p").await.unwrap().is_none());
        let refused = projects.get("q").await.unwrap_err();
        assert!(
            refused.to_string().contains("did not expect GET"),
            "{refused}"
        );
        let finished = tokio::spawn(script.finish()).await;
        let message = *finished
            .unwrap_err()
            .into_panic()
            .downcast::<String>()
            .unwrap();
        assert!(message.contains("GET /apis/berth.dev/v1alpha1/namespaces/a/projects/q"));
    }
}
