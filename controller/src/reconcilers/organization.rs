//! Organization → its namespace (`org-<name>`), labelled and owned; removed with a finalizer.

use std::collections::BTreeMap;
use std::sync::Arc;

use berth_crds::condition;
use berth_crds::member::Member;
use berth_crds::organization::{Organization, OrganizationStatus, reason};
use berth_crds::{MANAGED_LABEL, ORGANIZATION_LABEL};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};

use super::policy::{RESYNC_AFTER, drain, error_policy};
use crate::cache::Subscription;
use crate::conditions::Stamp;
use crate::context::{Context, FIELD_MANAGER};
use crate::error::{Error, Result};
use crate::reconcilers::event_reason;
use crate::status::StatusWriter;

const KIND: &str = "Organization";
/// Removes the organization's namespace before the Organization itself goes away.
pub const FINALIZER: &str = "berth.dev/organization-namespace";

/// What the Organization controller reacts to.
pub struct Inputs {
    pub organizations: Subscription<Organization>,
    /// Berth's namespaces: a change to one wakes the organization that owns it.
    pub namespaces: Subscription<Namespace>,
    pub members: Subscription<Member>,
}

pub async fn run(
    context: Arc<Context>,
    inputs: Inputs,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let organizations = context.caches.organizations.clone();
    let stream = Controller::for_shared_stream(inputs.organizations, organizations)
        .owns_shared_stream(inputs.namespaces)
        // A member joining or leaving changes the organization's member count.
        .watches_shared_stream(inputs.members, |member| organization_of(&member))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

/// The organization whose namespace `member` lives in.
fn organization_of(member: &Member) -> Option<ObjectRef<Organization>> {
    let namespace = member.namespace()?;
    let name = namespace.strip_prefix(berth_crds::organization::NAMESPACE_PREFIX)?;
    Some(ObjectRef::new(name))
}

async fn reconcile(organization: Arc<Organization>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let api = Api::<Organization>::all(context.client.clone());
    finalizer(&api, FINALIZER, organization, |event| async {
        match event {
            FinalizerEvent::Apply(organization) => apply(&organization, &context).await,
            FinalizerEvent::Cleanup(organization) => cleanup(&organization, &context).await,
        }
    })
    .await
    .or_else(|error| match error {
        // A repeated cleanup raced the first one, which already removed the finalizer and
        // let the Organization go: nothing is left to do.
        kube::runtime::finalizer::Error::RemoveFinalizer(kube::Error::Api(status))
            if status.code == 404 =>
        {
            Ok(Action::await_change())
        }
        error => Err(Error::Finalizer(Box::new(error))),
    })
}

/// The namespace an organization should own, with its labels and owner reference.
pub fn desired_namespace(organization: &Organization) -> Result<Namespace> {
    let name = organization.name_any();
    let labels = BTreeMap::from([
        (MANAGED_LABEL.to_string(), "true".to_string()),
        (ORGANIZATION_LABEL.to_string(), name.clone()),
    ]);
    let owner = organization
        .controller_owner_ref(&())
        .ok_or(Error::MissingObjectKey("metadata.uid"))?;
    Ok(Namespace {
        metadata: ObjectMeta {
            name: Some(Organization::namespace_name(&name)),
            labels: Some(labels),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        ..Default::default()
    })
}

/// Whether `current` (from the cache) already is the namespace `desired` describes: it exists
/// with the labels and the owner the organization gives it.
fn namespace_as_desired(current: Option<&Namespace>, desired: &Namespace) -> bool {
    let Some(current) = current else {
        return false;
    };
    let labels = current.labels();
    let owners = current.owner_references();
    desired
        .labels()
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        && desired
            .owner_references()
            .iter()
            .all(|o| owners.contains(o))
}

async fn apply(organization: &Organization, context: &Context) -> Result<Action> {
    let namespace = desired_namespace(organization)?;
    let namespace_name = namespace.name_any();
    let cached = context
        .caches
        .namespaces
        .get(&ObjectRef::new(&namespace_name));
    if !namespace_as_desired(cached.as_deref(), &namespace) {
        ensure_namespace(organization, &namespace, context).await?;
    }
    // The members cache is filled before the change that woke this reconcile is passed on.
    let member_count = context
        .caches
        .members
        .state()
        .iter()
        .filter(|member| member.namespace().as_deref() == Some(namespace_name.as_str()))
        .filter(|member| member.spec.active)
        .count();
    let status = desired_status(
        organization,
        &namespace_name,
        member_count,
        Timestamp::now(),
    );
    let api = Api::<Organization>::all(context.client.clone());
    let current = organization.status.as_ref();
    StatusWriter::new(&api, organization)
        .apply(current, &status)
        .await?;
    Ok(Action::requeue(RESYNC_AFTER))
}

/// Creates or corrects the organization's namespace; says so on the Organization when it
/// created it. (Read from the API server, not the cache: the cache may not have seen a
/// namespace created moments ago, and the event is said once.)
async fn ensure_namespace(
    organization: &Organization,
    namespace: &Namespace,
    context: &Context,
) -> Result<()> {
    let namespace_name = namespace.name_any();
    let namespaces = Api::<Namespace>::all(context.client.clone());
    let existed = namespaces.get_opt(&namespace_name).await?.is_some();
    namespaces
        .patch(
            &namespace_name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(namespace),
        )
        .await?;
    if !existed {
        let reference = organization.object_ref(&());
        let message = format!("created namespace {namespace_name}");
        let reason = event_reason::NAMESPACE_CREATED;
        context
            .publish_event(&reference, EventType::Normal, reason, message)
            .await;
    }
    Ok(())
}

/// The status `organization` should have once its namespace exists with `member_count` active
/// members.
pub fn desired_status(
    organization: &Organization,
    namespace_name: &str,
    member_count: usize,
    now: Timestamp,
) -> OrganizationStatus {
    let mut status = organization.status.clone().unwrap_or_default();
    status.namespace = Some(namespace_name.to_string());
    status.member_count = i64::try_from(member_count).unwrap_or(i64::MAX);
    status.observed_generation = organization.metadata.generation;
    let stamp = Stamp {
        generation: organization.metadata.generation,
        now,
    };
    let message = format!("namespace {namespace_name} exists");
    condition::merge(
        &mut status.conditions,
        stamp.ready(reason::NAMESPACE_READY, message),
    );
    status
}

async fn cleanup(organization: &Organization, context: &Context) -> Result<Action> {
    let namespace_name = Organization::namespace_name(&organization.name_any());
    let namespaces = Api::<Namespace>::all(context.client.clone());
    // Only delete a namespace this organization owns; never one a user made by hand.
    let owned = namespaces
        .get_opt(&namespace_name)
        .await?
        .is_some_and(|ns| ns.labels().get(ORGANIZATION_LABEL) == Some(&organization.name_any()));
    if owned {
        namespaces
            .delete(&namespace_name, &DeleteParams::background())
            .await?;
        context
            .publish_event(
                &organization.object_ref(&()),
                EventType::Normal,
                event_reason::NAMESPACE_DELETED,
                format!("deleting namespace {namespace_name}"),
            )
            .await;
    }
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::organization::OrganizationSpec;

    fn organization(name: &str) -> Organization {
        let mut organization = Organization::new(
            name,
            OrganizationSpec {
                name: "Acme".into(),
                slug: "acme".into(),
                logo_url: None,
                variables: Vec::new(),
            },
        );
        organization.metadata.uid = Some("uid-1".into());
        organization
    }

    #[test]
    fn namespace_is_prefixed_labelled_and_owned() {
        let namespace = desired_namespace(&organization("acme")).unwrap();
        assert_eq!(namespace.name_any(), "org-acme");
        assert_eq!(namespace.labels().get(ORGANIZATION_LABEL).unwrap(), "acme");
        assert_eq!(namespace.labels().get(MANAGED_LABEL).unwrap(), "true");
        let owner = &namespace.metadata.owner_references.unwrap()[0];
        assert_eq!(owner.kind, "Organization");
        assert_eq!(owner.uid, "uid-1");
    }

    #[test]
    fn a_member_maps_to_the_organization_of_its_namespace() {
        let member = |namespace: &str| {
            let spec = serde_json::from_value(serde_json::json!({
                "userId": "usr-1", "email": "a@example.com", "role": "member",
            }))
            .unwrap();
            let mut member = Member::new("mem-1", spec);
            member.metadata.namespace = Some(namespace.into());
            member
        };
        assert_eq!(
            organization_of(&member("org-acme")),
            Some(ObjectRef::new("acme"))
        );
        assert_eq!(organization_of(&member("default")), None);
    }

    #[test]
    fn an_organization_without_uid_is_refused() {
        let mut organization = organization("acme");
        organization.metadata.uid = None;
        assert!(desired_namespace(&organization).is_err());
    }

    /// An organization whose namespace and status are as they should be, in the caches.
    fn reconciled(feeds: &mut crate::cache::Feeds) -> Organization {
        let mut organization = organization("acme");
        organization.metadata.finalizers = Some(vec![FINALIZER.into()]);
        let earlier = "2026-01-01T08:00:00Z".parse().unwrap();
        organization.status = Some(desired_status(&organization, "org-acme", 0, earlier));
        feeds
            .namespaces
            .put(desired_namespace(&organization).unwrap());
        organization
    }

    #[tokio::test]
    async fn a_reconciled_organization_costs_no_request() {
        let (context, api, mut feeds) = Context::test();
        let organization = reconciled(&mut feeds);
        let script = api.expect_nothing();
        let action = reconcile(Arc::new(organization), context).await.unwrap();
        assert_eq!(action, Action::requeue(RESYNC_AFTER));
        script.finish().await;
    }

    #[tokio::test]
    async fn a_namespace_that_lost_its_owner_is_applied_again() {
        use crate::context::fixtures::Exchange;
        let (context, api, mut feeds) = Context::test();
        let organization = reconciled(&mut feeds);
        let namespace = desired_namespace(&organization).unwrap();
        let mut orphaned = namespace.clone();
        orphaned.metadata.owner_references = None;
        feeds.namespaces.put(orphaned.clone());
        let script = api.serve([
            Exchange::get("/api/v1/namespaces/org-acme").returns(&orphaned),
            Exchange::patch("/api/v1/namespaces/org-acme").returns(&namespace),
        ]);
        let action = reconcile(Arc::new(organization), context).await.unwrap();
        assert_eq!(action, Action::requeue(RESYNC_AFTER));
        let sent = script.finish().await;
        assert_eq!(sent[1].body, serde_json::to_value(&namespace).unwrap());
    }
}
