//! Railway's `build` and `deploy` settings, as the environment config and config-as-code both
//! spell them, applied to one resource.

use berth_api::validate::FieldError;
use serde_json::Value;

use crate::adapters::draft::Draft;
use crate::adapters::fields::Obj;

/// The resource a settings block applies to.
pub(crate) struct Target<'a> {
    pub reference: &'a str,
    pub name: &'a str,
    /// A docker-image source is not built: build settings do not apply.
    pub image: bool,
}

/// `build.builder|buildCommand|dockerfilePath`; everything else is a warning.
pub(crate) fn apply_build(
    mut build: Obj,
    target: &Target,
    draft: &mut Draft,
) -> Result<(), FieldError> {
    let builder = build.str("builder")?.map(str::to_ascii_uppercase);
    let command = build.str("buildCommand")?;
    let dockerfile = build.str("dockerfilePath")?;
    if target.image && (builder.is_some() || command.is_some() || dockerfile.is_some()) {
        draft.warn(format!(
            "{}: {} does not apply: service {} deploys a prebuilt image.",
            build.file, build.path, target.name
        ));
        return Ok(());
    }
    let runtime = &mut draft.resource(target.reference).runtime;
    match builder.as_deref() {
        Some("DOCKERFILE") => runtime.strategy = "dockerfile".into(),
        Some(_) | None => runtime.strategy = "auto".into(),
    }
    if let Some(command) = command {
        runtime.build_command = Some(command.to_string());
    }
    if let Some(path) = dockerfile {
        runtime.dockerfile_path = Some(path.to_string());
    }
    if let Some(other) = builder.filter(|builder| builder != "DOCKERFILE") {
        draft.warn(format!(
            "{}: {}.builder {other} is not Berth's builder: service {} is built by Berth's own \
             build (strategy auto) instead.",
            build.file, build.path, target.name
        ));
    }
    build.warn_unread(draft);
    Ok(())
}

/// `deploy.*`: start command and health check path migrate; replicas, cron and pre-deploy
/// commands would change behaviour if dropped (blockers); the rest is a warning.
pub(crate) fn apply_deploy(
    mut deploy: Obj,
    target: &Target,
    draft: &mut Draft,
) -> Result<(), FieldError> {
    if let Some(command) = deploy.str("startCommand")? {
        draft.resource(target.reference).runtime.start_command = Some(command.to_string());
    }
    if let Some(path) = deploy.str("healthcheckPath")? {
        draft.resource(target.reference).runtime.health_check_path = Some(path.to_string());
    }
    if deploy.uint("healthcheckTimeout")?.is_some() {
        draft.warn(format!(
            "{}: {} is not migrated: Berth uses its own health check timing.",
            deploy.file,
            deploy.child("healthcheckTimeout")
        ));
    }
    restart_policy(&mut deploy, draft)?;
    replicas(&mut deploy, target, draft)?;
    if deploy.str("cronSchedule")?.is_some() {
        draft.block(
            "railway_cron_requires_scheduled_task_mapping",
            deploy.at("cronSchedule"),
            format!(
                "Service {} cron schedule requires an explicit ScheduledTask mapping.",
                target.name
            ),
        );
    }
    if deploy
        .get("preDeployCommand")
        .is_some_and(|value| !is_empty(value))
    {
        draft.block(
            "railway_pre_deploy_unsupported",
            deploy.at("preDeployCommand"),
            format!(
                "Service {} runs a pre-deploy command; Berth has no pre-deploy step, so dropping it \
                 would skip it (run it once by hand and remove it from the export).",
                target.name
            ),
        );
    }
    deploy.warn_unread(draft);
    Ok(())
}

/// Berth restarts a container whenever it stops; anything else is a warning.
fn restart_policy(deploy: &mut Obj, draft: &mut Draft) -> Result<(), FieldError> {
    let policy = deploy.str("restartPolicyType")?;
    if policy.is_some_and(|policy| !policy.eq_ignore_ascii_case("ALWAYS")) {
        draft.warn(format!(
            "{}: {} {} is not migrated: Berth always restarts a stopped container.",
            deploy.file,
            deploy.child("restartPolicyType"),
            policy.unwrap_or_default()
        ));
    }
    if deploy.uint("restartPolicyMaxRetries")?.is_some() {
        draft.warn(format!(
            "{}: {} is not migrated: Berth retries without a limit.",
            deploy.file,
            deploy.child("restartPolicyMaxRetries")
        ));
    }
    Ok(())
}

/// `numReplicas` and `multiRegionConfig.<region>.numReplicas`: more than one replica needs a
/// scale profile Berth's bundle cannot express.
fn replicas(deploy: &mut Obj, target: &Target, draft: &mut Draft) -> Result<(), FieldError> {
    if deploy.uint("numReplicas")?.is_some_and(|n| n > 1) {
        draft.block(
            "railway_replicas_require_scale_profile",
            deploy.at("numReplicas"),
            format!(
                "Service {} replicas require the R5 scale profile.",
                target.name
            ),
        );
    }
    let Some(regions) = deploy.obj("multiRegionConfig")? else {
        return Ok(());
    };
    let mut total = 0;
    for (_, mut region) in regions.members()? {
        total += region.uint("numReplicas")?.unwrap_or(1);
        region.warn_unread(draft);
    }
    if total > 1 {
        draft.block(
            "railway_replicas_require_scale_profile",
            deploy.at("multiRegionConfig"),
            format!(
                "Service {} replicas require the R5 scale profile.",
                target.name
            ),
        );
    }
    draft.warn(format!(
        "{}: {} regions are not migrated: Berth runs on the target server.",
        deploy.file,
        deploy.child("multiRegionConfig")
    ));
    Ok(())
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::String(text) => text.trim().is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}
