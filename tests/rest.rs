//! An HTTP client for the REST shim (`BERTH_URL`, set by hack/test.sh), and fixtures that make
//! an organization with users of each role. Every response body is kept in a transcript so
//! tests can prove no secret value was ever returned.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use berth_crds::member::{Member, MemberSpec, OrganizationRole};
use berth_crds::organization::{Organization, OrganizationSpec};
use berth_crds::user::{User, UserSpec};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::documented::check_success;
use crate::{eventually, random_suffix};

/// Every response body any test received, for secret scans.
static TRANSCRIPT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// All response bodies received so far in this test process.
pub fn transcript() -> Vec<String> {
    TRANSCRIPT.lock().unwrap().clone()
}

/// The REST API's base URL, ending in `/api`.
pub fn base_url() -> String {
    std::env::var("BERTH_URL").expect("BERTH_URL is not set: run the tests through hack/test.sh")
}

/// A status code and parsed JSON body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
}

impl Reply {
    /// The body, asserting the status was `expected`.
    #[track_caller]
    pub fn expect(self, expected: u16) -> Value {
        assert_eq!(
            self.status, expected,
            "unexpected status; body: {}",
            self.body
        );
        self.body
    }

    /// The body of a 200.
    #[track_caller]
    pub fn ok(self) -> Value {
        self.expect(200)
    }

    /// Asserts an error envelope with `status` and `code`; returns the `error` object.
    #[track_caller]
    pub fn error(self, status: u16, code: &str) -> Value {
        assert_eq!(
            self.status, status,
            "unexpected status; body: {}",
            self.body
        );
        let error = self.body["error"].clone();
        assert_eq!(
            error["code"], code,
            "unexpected error code; body: {}",
            self.body
        );
        for field in ["category", "message", "retriable", "details"] {
            assert!(
                !error[field].is_null(),
                "error envelope lacks {field}: {}",
                self.body
            );
        }
        error
    }
}

/// A caller of the REST API, anonymous or with a bearer token.
#[derive(Clone)]
pub struct Rest {
    http: reqwest::Client,
    base: String,
    pub token: Option<String>,
}

impl Default for Rest {
    fn default() -> Self {
        Self::anonymous()
    }
}

impl Rest {
    pub fn anonymous() -> Self {
        Self {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("http client"),
            base: base_url(),
            token: None,
        }
    }

    pub fn with_token(&self, token: &str) -> Self {
        Self {
            token: Some(token.to_string()),
            ..self.clone()
        }
    }

    /// Signs in with email and password; panics if that fails.
    pub async fn login(email: &str, password: &str) -> Self {
        let anonymous = Self::anonymous();
        let body = anonymous
            .post("/auth/login", json!({"email": email, "password": password}))
            .await
            .ok();
        anonymous.with_token(body["token"].as_str().expect("login returns a token"))
    }

    /// Signs in a user whose User object was just created: until the shim's cache has it the
    /// login is refused, so retry a few times (fewer than the login limiter's 5 failures).
    pub async fn login_new_user(email: &str, password: &str) -> Self {
        let anonymous = Self::anonymous();
        let body = json!({"email": email, "password": password});
        let mut wait = Duration::from_millis(150);
        for _ in 0..3 {
            let reply = anonymous.post("/auth/login", body.clone()).await;
            if reply.status == 200 {
                return anonymous.with_token(reply.body["token"].as_str().expect("a token"));
            }
            tokio::time::sleep(wait).await;
            wait *= 3;
        }
        Self::login(email, password).await
    }

    /// The first administrator (credentials from hack/test.sh).
    pub async fn admin() -> Self {
        let email =
            std::env::var("BERTH_ADMIN_EMAIL").expect("BERTH_ADMIN_EMAIL (hack/test.sh sets it)");
        let password = std::env::var("BERTH_ADMIN_PASSWORD").expect("BERTH_ADMIN_PASSWORD");
        Self::login(&email, &password).await
    }

    /// Sends a request; a success the OpenAPI document does not list for it fails the test.
    pub async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Reply {
        let method_name = method.to_string();
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        self.answer(request, &method_name, path).await
    }

    /// POSTs `bytes` as a file upload (`application/octet-stream`).
    pub async fn upload(&self, path: &str, bytes: Vec<u8>) -> Reply {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("Content-Type", "application/octet-stream")
            .body(bytes);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        self.answer(request, "POST", path).await
    }

    async fn answer(
        &self,
        request: reqwest::RequestBuilder,
        method_name: &str,
        path: &str,
    ) -> Reply {
        let response = request.send().await.expect("the REST shim answers");
        let status = response.status().as_u16();
        if response.status().is_success() {
            check_success(&self.http, &self.base, method_name, path, status).await;
        }
        let text = response.text().await.expect("a response body");
        TRANSCRIPT.lock().unwrap().push(text.clone());
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Reply { status, body }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str, body: Value) -> Reply {
        self.send(reqwest::Method::DELETE, path, Some(body)).await
    }
}

/// A throwaway organization with a user per role, made directly as custom resources (the way
/// GitOps would) and removed when dropped.
pub struct TestOrg {
    pub id: String,
    pub namespace: String,
    client: Client,
    users: Vec<String>,
}

/// A user of a [`TestOrg`], signed in.
pub struct TestUser {
    pub user_id: String,
    pub member_id: String,
    pub email: String,
    pub password: String,
    pub rest: Rest,
}

impl TestOrg {
    pub async fn new(client: &Client) -> Self {
        let id = format!("t-{}", random_suffix());
        let organizations: Api<Organization> = Api::all(client.clone());
        let organization = Organization::new(
            &id,
            OrganizationSpec {
                name: format!("Test {id}"),
                slug: id.clone(),
                logo_url: None,
                variables: Vec::new(),
            },
        );
        organizations
            .create(&PostParams::default(), &organization)
            .await
            .expect("create test organization");
        let namespace = eventually(
            Duration::from_secs(30),
            "test organization namespace",
            || async { organizations.get(&id).await.ok()?.status?.namespace },
        )
        .await;
        Self {
            id,
            namespace,
            client: client.clone(),
            users: Vec::new(),
        }
    }

    /// A new user with `role` in this organization, signed in through the REST API.
    pub async fn user(&mut self, role: OrganizationRole) -> TestUser {
        let user = create_user(&self.client, &format!("{:?}", role).to_lowercase()).await;
        self.users.push(user.0.clone());
        let member_id = format!("mem-{}", random_suffix());
        let member = Member::new(
            &member_id,
            MemberSpec {
                user_id: user.0.clone(),
                email: user.1.clone(),
                role,
                active: true,
            },
        );
        Api::<Member>::namespaced(self.client.clone(), &self.namespace)
            .create(&PostParams::default(), &member)
            .await
            .expect("create member");
        // The shim's caches see the user and member shortly after; retry the first calls.
        let rest = Rest::login_new_user(&user.1, &user.2).await;
        eventually(
            Duration::from_secs(10),
            "membership visible to the REST API",
            || async {
                let reply = rest.get("/projects/count").await;
                (reply.status == 200).then_some(())
            },
        )
        .await;
        TestUser {
            user_id: user.0,
            member_id,
            email: user.1,
            password: user.2,
            rest,
        }
    }
}

/// Creates a User with a password Secret (Argon2 hash) in berth-system: (id, email, password).
pub async fn create_user(client: &Client, label: &str) -> (String, String, String) {
    let suffix = random_suffix();
    let user_id = format!("usr-t{suffix}");
    let email = format!("{label}-{suffix}@test.berth.local");
    let password = format!("pw-{}-{}", random_suffix(), random_suffix());
    let secret_name = berth_apiserver_shim::domain::accounts::password_secret_name(&user_id);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(secret_name.clone()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "hash".to_string(),
            ByteString(berth_apiserver_shim::auth::password::hash(&password).into_bytes()),
        )])),
        ..Default::default()
    };
    Api::<Secret>::namespaced(client.clone(), berth_crds::SYSTEM_NAMESPACE)
        .create(&PostParams::default(), &secret)
        .await
        .expect("create password secret");
    let user = User::new(
        &user_id,
        UserSpec {
            email: email.clone(),
            display_name: Some(format!("Test {label}")),
            avatar_url: None,
            password_secret_ref: Some(secret_name),
        },
    );
    Api::<User>::all(client.clone())
        .create(&PostParams::default(), &user)
        .await
        .expect("create user");
    (user_id, email, password)
}

impl Drop for TestOrg {
    fn drop(&mut self) {
        let id = self.id.clone();
        let users = std::mem::take(&mut self.users);
        crate::run_cleanup(move |client| async move {
            let _ = Api::<Organization>::all(client.clone())
                .delete(&id, &DeleteParams::background())
                .await;
            // Sessions of throwaway users would otherwise pile up in berth-system.
            let sessions = Api::<berth_crds::session::Session>::namespaced(
                client.clone(),
                berth_crds::SYSTEM_NAMESPACE,
            );
            if let Ok(list) = sessions.list(&Default::default()).await {
                for session in list
                    .items
                    .iter()
                    .filter(|s| users.contains(&s.spec.user_id))
                {
                    let name = session.metadata.name.clone().unwrap_or_default();
                    let _ = sessions.delete(&name, &DeleteParams::background()).await;
                }
            }
            for user in users {
                let _ = Api::<User>::all(client.clone())
                    .delete(&user, &DeleteParams::background())
                    .await;
                let secret = berth_apiserver_shim::domain::accounts::password_secret_name(&user);
                let _ = Api::<Secret>::namespaced(client.clone(), berth_crds::SYSTEM_NAMESPACE)
                    .delete(&secret, &DeleteParams::background())
                    .await;
            }
        });
    }
}
