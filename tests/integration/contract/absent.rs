//! Why each `name~:type` field of [`super::records`] may be missing: one reason per
//! `Record.field`, naming when no value exists. The spec lists these fields without `?`;
//! Appaloft 1.10.5's zod records (`packages/contracts/src/index.ts`; the actor's in
//! `packages/application/src/operations/usage-intents/usage-intent.schema.ts`) mark every one
//! `.optional()`. A reason ending "Berth always sends it" names a field Berth never leaves out
//! today, one that could become required. [`super::schema::Spec::new`] refuses a `~` field
//! without a reason and a reason for a field that is not `~`.

/// `("Record.field", when no value exists)`, in the order of [`super::records::RECORDS`].
pub const ABSENT_WHEN: &[(&str, &str)] = &[
    // §2.1 shared shapes
    (
        "LoginMethod.reason",
        "Appaloft .optional(): set for a method that is off; Berth always sends it",
    ),
    (
        "Actor.kind",
        "Appaloft .optional(): an actor of no known kind; Berth always sends it",
    ),
    (
        "Actor.id",
        "a record written by hand (kubectl) without one; Berth's own writes name the caller",
    ),
    ("Actor.userId", "a deploy token acts: no user behind it"),
    ("Actor.email", "a deploy token acts: no user behind it"),
    // §2.2 account and organizations
    ("ContextUser.displayName", "the user set no display name"),
    ("ContextUser.avatarUrl", "the user set no avatar"),
    (
        "Inviter.displayName",
        "the inviting user set no display name",
    ),
    ("Inviter.email", "the inviting user no longer exists"),
    (
        "CredentialUsageServer.username",
        "Appaloft .optional(): a server with no login name of its own; Berth always sends it \
         (a server's username defaults to root)",
    ),
    // §2.2 monitoring
    (
        "ThresholdRule.warning",
        "the rule sets only a critical bound",
    ),
    (
        "ThresholdEvaluation.evaluatedAt",
        "the policy was not yet held against a sample",
    ),
    (
        "ThresholdEvaluation.sourceSampleId",
        "the policy was not yet held against a sample",
    ),
    (
        "ScopeEvidence.serverId",
        "Appaloft .optional(): a sample of no server; Berth always sends it",
    ),
    (
        "ScopeEvidence.projectId",
        "a host sample, or a container no project's labels claim",
    ),
    (
        "ScopeEvidence.environmentId",
        "a host sample, or a container no environment's labels claim",
    ),
    (
        "ScopeEvidence.resourceId",
        "a host sample, or a container no resource's labels claim",
    ),
    (
        "ScopeEvidence.deploymentId",
        "a host sample, or a container no deployment's labels claim",
    ),
    (
        "SampleLabels.providerKey",
        "Appaloft .optional(): a sample of no provider; Berth always sends it (docker)",
    ),
    (
        "SampleLabels.artifactKind",
        "a host sample: it measured no artifact",
    ),
    ("SampleLabels.runtimeId", "a host sample: no container"),
    (
        "UsageGroup.currentDeploymentId",
        "the newest container counted carries no deployment label",
    ),
    (
        "UsageGroup.currentRuntimeId",
        "the newest container counted has no container id",
    ),
    (
        "UsageGroup.artifactCount",
        "Appaloft .optional(): a group not counted; Berth always sends it",
    ),
    (
        "RuntimeArtifact.serverId",
        "Appaloft .optional(): an artifact of no server; Berth always sends it",
    ),
    (
        "RuntimeArtifact.projectId",
        "an image, volume or build cache no project owns",
    ),
    (
        "RuntimeArtifact.environmentId",
        "an image, volume or build cache no environment owns",
    ),
    (
        "RuntimeArtifact.resourceId",
        "an image, volume or build cache no resource owns",
    ),
    (
        "RuntimeArtifact.deploymentId",
        "an artifact no deployment owns (a shared image, a volume, the build cache)",
    ),
    (
        "RuntimeArtifact.destinationId",
        "Appaloft .optional(): Berth attributes artifacts to no destination, so never sends it",
    ),
    ("RuntimeArtifact.runtimeId", "the build cache: it has no id"),
    (
        "RuntimeArtifact.bytes",
        "a size not measured: a container's writable layer is read every 10th tick",
    ),
    (
        "RuntimeArtifact.inodeCount",
        "inodes not measured: Docker reports none per artifact",
    ),
    (
        "RuntimeArtifact.observedAt",
        "Appaloft .optional(): an artifact never observed; Berth always sends it",
    ),
    (
        "UsageWarning.resource",
        "Appaloft .optional(): a warning about no one measurement; Berth always sends it \
         (its one warning says inodes are not measured)",
    ),
    (
        "RuntimeUsageSnapshot.observedAt",
        "no measurement in the scope yet",
    ),
    // §2.2 resources and their configuration
    (
        "AccessSummary.plannedGeneratedAccessRoute",
        "no generated route: no server, generated access disabled or no port",
    ),
    (
        "AccessSummary.latestGeneratedAccessRoute",
        "before a deployment serves the generated route",
    ),
    (
        "AccessSummary.latestDurableDomainRoute",
        "no domain bound with a URL, or before the first deployment",
    ),
    (
        "AccessSummary.latestServerAppliedDomainRoute",
        "no domain route applied on the edge proxy yet",
    ),
    (
        "AutoDeployResult.triggerKind",
        "Appaloft .optional(): no policy; Berth always sends it (git-push by default)",
    ),
    (
        "AutoDeployResult.refs",
        "Appaloft .optional(): no policy; Berth always sends it",
    ),
    (
        "AutoDeployResult.eventKinds",
        "Appaloft .optional(): no policy; Berth always sends it",
    ),
    (
        "AutoDeployResult.sourceBindingFingerprint",
        "auto-deploy never enabled for a source, or a policy written by hand without one",
    ),
    (
        "AutoDeployResult.blockedReason",
        "the policy is not blocked",
    ),
    // §2.2 observation records
    (
        "DiagnosticFocus.requestedDeploymentId",
        "the query named no deployment",
    ),
    (
        "DiagnosticFocus.deploymentId",
        "before the first deployment",
    ),
    (
        "DiagnosticContext.destinationId",
        "the resource names no destination",
    ),
    ("DiagnosticContext.serverId", "the resource names no server"),
    (
        "DiagnosticContext.runtimeStrategy",
        "Appaloft .optional(): not yet planned; Berth always sends it (docker-container)",
    ),
    (
        "DiagnosticContext.buildStrategy",
        "Appaloft .optional(): not yet planned; Berth always sends it",
    ),
    (
        "DiagnosticContext.packagingMode",
        "Appaloft .optional(): not yet planned; Berth always sends it (split-deploy)",
    ),
    (
        "DiagnosticContext.targetKind",
        "Appaloft .optional(): no target; Berth always sends it (single-server)",
    ),
    (
        "DiagnosticContext.targetProviderKey",
        "Appaloft .optional(): no target; Berth always sends it (ssh-docker)",
    ),
    (
        "DiagnosticContext.networkProfile",
        "the resource has no network profile",
    ),
    (
        "DiagnosticContext.observationWindow",
        "the query named no observation window",
    ),
    (
        "DiagnosticDeployment.serverId",
        "Appaloft .optional(): a deployment without a target; Berth always sends it",
    ),
    (
        "DiagnosticDeployment.destinationId",
        "the deployment names no destination",
    ),
    (
        "DiagnosticDeployment.startedAt",
        "the attempt has not started",
    ),
    (
        "DiagnosticDeployment.finishedAt",
        "the attempt has not finished",
    ),
    ("DiagnosticDeployment.lastError", "the attempt has no error"),
    (
        "DiagnosticAccess.generatedUrl",
        "before a deployment serves the generated route",
    ),
    ("DiagnosticAccess.durableUrl", "no domain bound with a URL"),
    (
        "DiagnosticAccess.serverAppliedUrl",
        "no domain route applied on the edge proxy",
    ),
    ("DiagnosticAccess.plannedUrl", "no generated route planned"),
    (
        "DiagnosticAccess.latestAccessFailure",
        "no unexpired access-failure evidence",
    ),
    (
        "DiagnosticAccess.selectedRoute",
        "no route: nothing deployed with a generated route",
    ),
    (
        "DiagnosticAccess.routeIntentStatuses",
        "Appaloft .optional(): not read; Berth always sends it (maybe empty)",
    ),
    (
        "DiagnosticAccess.proxyRouteStatus",
        "the controller has not judged the route yet",
    ),
    (
        "DiagnosticAccess.lastRouteRealizationDeploymentId",
        "no deployment has realized the route yet",
    ),
    ("DiagnosticAccess.reasonCode", "the access is available"),
    (
        "DiagnosticAccess.phase",
        "the access is available, or there is no route",
    ),
    (
        "ProxyWarning.details",
        "Appaloft .optional(): a warning with nothing to add; Berth always sends it",
    ),
    (
        "DiagnosticProxy.providerKey",
        "no edge proxy: a direct-port route, or no route yet",
    ),
    (
        "DiagnosticProxy.proxyRouteStatus",
        "the controller has not judged the route yet",
    ),
    (
        "DiagnosticProxy.configurationStatus",
        "the configuration was not asked for, or could not be read",
    ),
    (
        "DiagnosticProxy.configurationGeneratedAt",
        "the configuration was not asked for, not read, or the server has no proxy",
    ),
    (
        "DiagnosticProxy.routeCount",
        "Appaloft .optional(): configuration not read; Berth always sends it (0 then)",
    ),
    (
        "DiagnosticProxy.sectionCount",
        "Appaloft .optional(): configuration not read; Berth always sends it (0 then)",
    ),
    (
        "DiagnosticProxy.sections",
        "Appaloft .optional(): configuration not read; Berth always sends it (empty then)",
    ),
    (
        "DiagnosticProxy.tlsRoutes",
        "Appaloft .optional(): no route; Berth always sends it (empty then)",
    ),
    (
        "DiagnosticProxy.warnings",
        "Appaloft .optional(): nothing to warn about; Berth always sends it (empty then)",
    ),
    (
        "DiagnosticProxy.reasonCode",
        "the proxy serves the route and its configuration was read",
    ),
    (
        "DiagnosticProxy.phase",
        "the proxy serves the route and its configuration was read",
    ),
    (
        "RuntimeTailLine.timestamp",
        "Docker put no timestamp before the line and none came earlier in the output",
    ),
    (
        "RuntimeTailLine.phase",
        "a line the runtime wrote: no deployment phase",
    ),
    (
        "RuntimeTailLine.level",
        "a line the runtime wrote: no log level",
    ),
    (
        "TimelineTail.reasonCode",
        "the timeline was read, or not asked for",
    ),
    (
        "TimelineTail.phase",
        "the timeline was read, or not asked for",
    ),
    (
        "RuntimeLogTail.reasonCode",
        "the runtime logs were read, or not asked for",
    ),
    (
        "RuntimeLogTail.phase",
        "the runtime logs were read, or not asked for",
    ),
    (
        "DiagnosticSystem.readinessStatus",
        "Appaloft .optional(): readiness not checked; Berth always sends it",
    ),
    (
        "DiagnosticSystem.databaseDriver",
        "Appaloft .optional(): no database; Berth always sends it (the observation store's)",
    ),
    (
        "DiagnosticSystem.databaseMode",
        "Appaloft .optional(): no database; Berth always sends it",
    ),
    (
        "DiagnosticSourceError.relatedEntityId",
        "the failed read concerned no one object",
    ),
    (
        "DiagnosticSourceError.relatedState",
        "Appaloft .optional(): Berth records no state with a failed read, so never sends it",
    ),
    (
        "DiagnosticSourceError.message",
        "Appaloft .optional(): an error with no message; Berth always sends it",
    ),
    (
        "Copy.markdown",
        "Appaloft .optional(): JSON only asked for; Berth always sends it",
    ),
    (
        "Copy.plainText",
        "Appaloft .optional(): JSON only asked for; Berth always sends it",
    ),
    (
        "DiagnosticSummary.deployment",
        "before the first deployment",
    ),
    (
        "AccessFailureAffected.url",
        "Appaloft .optional(): a request not seen; Berth always sends it",
    ),
    (
        "AccessFailureAffected.hostname",
        "Appaloft .optional(): a request not seen; Berth always sends it",
    ),
    (
        "AccessFailureAffected.path",
        "Appaloft .optional(): a request not seen; Berth always sends it",
    ),
    (
        "AccessFailureAffected.method",
        "Appaloft .optional(): a request not seen; Berth always sends it",
    ),
    (
        "AccessFailureRoute.host",
        "Appaloft .optional(): no route known; Berth sends it whenever it sends a route",
    ),
    (
        "AccessFailureRoute.pathPrefix",
        "the resource is gone, or its server plans no route for it",
    ),
    (
        "AccessFailureRoute.resourceId",
        "Appaloft .optional(): no resource matched; Berth sends it whenever it sends a route",
    ),
    (
        "AccessFailureRoute.deploymentId",
        "no deployment runs the resource or realized its route",
    ),
    (
        "AccessFailureRoute.domainBindingId",
        "a generated route: no domain binding (Berth records only those, so never sends it)",
    ),
    (
        "AccessFailureRoute.serverId",
        "Appaloft .optional(): no server known; Berth sends it whenever it sends a route",
    ),
    (
        "AccessFailureRoute.destinationId",
        "the resource is gone or names no destination",
    ),
    (
        "AccessFailureRoute.providerKey",
        "Appaloft .optional(): no proxy known; Berth sends it whenever it sends a route (caddy)",
    ),
    (
        "AccessFailureRoute.routeId",
        "the resource is gone, or its server plans no route for it",
    ),
    (
        "AccessFailureRoute.diagnosticId",
        "Appaloft .optional(): Berth keeps no route diagnostic with the evidence, so never \
         sends it",
    ),
    (
        "AccessFailureRoute.routeSource",
        "Appaloft .optional(): no route known; Berth sends it whenever it sends a route",
    ),
    (
        "AccessFailureRoute.routeStatus",
        "the resource is gone or its route was not yet judged",
    ),
    (
        "AccessFailure.affected",
        "Appaloft .optional(): a request not seen; Berth always sends it",
    ),
    (
        "AccessFailure.route",
        "the request's host matched no resource (route not found)",
    ),
    (
        "AccessFailure.causeCode",
        "Appaloft .optional(): no cause known; Berth always sends it (the edge names the cause \
         of each failure it records)",
    ),
    (
        "AccessFailure.correlationId",
        "Appaloft .optional(): nothing to correlate; Berth always sends it (the request id)",
    ),
    (
        "AccessFailure.causationId",
        "Appaloft .optional(): a request is caused by no earlier event, so Berth never sends it",
    ),
    (
        "RelatedIds.resourceId",
        "the request's host matched no resource",
    ),
    (
        "RelatedIds.deploymentId",
        "no route, or no deployment runs the resource",
    ),
    (
        "RelatedIds.domainBindingId",
        "a generated route: no domain binding (so Berth never sends it today)",
    ),
    (
        "RelatedIds.serverId",
        "Appaloft .optional(): no server known; Berth always sends it",
    ),
    (
        "RelatedIds.destinationId",
        "no route, or the resource names no destination",
    ),
    (
        "RelatedIds.routeId",
        "no route, or its server plans none for the resource",
    ),
    ("LookupFilters.resourceId", "the query named no resource"),
    ("LookupFilters.hostname", "the query named no hostname"),
    ("LookupFilters.path", "the query named no path"),
    (
        "AccessFailureLookup.filters",
        "Appaloft .optional(): no filter given; Berth always sends it (maybe empty)",
    ),
    (
        "AccessFailureLookup.relatedIds",
        "Appaloft .optional(): nothing related; Berth always sends it",
    ),
    (
        "RouteIntent.redirectTo",
        "the route serves, not redirects (Berth's generated routes never redirect)",
    ),
    (
        "RouteIntent.redirectStatus",
        "the route serves, not redirects (Berth's generated routes never redirect)",
    ),
    (
        "RouteContext.deploymentId",
        "Appaloft .optional(): a route not yet deployed; Berth always sends it",
    ),
    ("RouteContext.serverId", "the resource names no server"),
    (
        "RouteContext.destinationId",
        "the resource names no destination",
    ),
    (
        "RouteContext.runtimeTargetKind",
        "Appaloft .optional(): no target; Berth always sends it (single-server)",
    ),
    (
        "RouteProxy.providerKey",
        "a direct-port route: no edge proxy",
    ),
    (
        "RouteObservation.observedAt",
        "Appaloft .optional(): never observed; Berth always sends it",
    ),
    (
        "RouteObservation.requestId",
        "an observation of the route's state, not of a request (Berth never sends it)",
    ),
    (
        "RouteObservation.deploymentId",
        "Appaloft .optional(): no deployment; Berth always sends it",
    ),
    ("CopySafeSummary.code", "the route is not blocked"),
    ("CopySafeSummary.phase", "the route is not blocked"),
    (
        "RouteIntentStatus.latestObservation",
        "Appaloft .optional(): never observed; Berth always sends it",
    ),
    (
        "RouteIntentStatus.blockingReason",
        "the route is not blocked",
    ),
    ("HealthDeployment.startedAt", "the attempt has not started"),
    (
        "HealthDeployment.finishedAt",
        "the attempt has not finished",
    ),
    (
        "HealthDeployment.serverId",
        "Appaloft .optional(): a deployment without a target; Berth always sends it",
    ),
    (
        "HealthDeployment.destinationId",
        "the deployment names no destination",
    ),
    ("HealthDeployment.lastError", "the attempt has no error"),
    (
        "HealthRuntime.observedAt",
        "the controller has not reported the runtime yet",
    ),
    (
        "HealthRuntime.runtimeKind",
        "Appaloft .optional(): nothing deployed; Berth always sends it (docker-container)",
    ),
    (
        "HealthRuntime.reasonCode",
        "the runtime's state needs no explaining (e.g. running)",
    ),
    (
        "HealthRuntime.message",
        "Appaloft .optional(): nothing to say; Berth always sends it",
    ),
    ("RuntimeControlPhase.errorCode", "the phase did not fail"),
    (
        "LatestRuntimeControl.completedAt",
        "the attempt has not completed",
    ),
    (
        "LatestRuntimeControl.blockedReason",
        "the attempt was not blocked",
    ),
    ("LatestRuntimeControl.errorCode", "the attempt did not fail"),
    (
        "LatestRuntimeControl.phases",
        "Appaloft .optional(): no phase run; Berth always sends it (maybe empty)",
    ),
    ("HealthPolicy.type", "no health check configured"),
    (
        "HealthPolicy.path",
        "no health check configured, or a command check",
    ),
    (
        "HealthPolicy.port",
        "no health check configured, or the check names no port (the resource's own then)",
    ),
    (
        "HealthPolicy.expectedStatusCode",
        "no health check configured, or a command check",
    ),
    ("HealthPolicy.intervalSeconds", "no health check configured"),
    ("HealthPolicy.timeoutSeconds", "no health check configured"),
    ("HealthPolicy.retries", "no health check configured"),
    (
        "HealthPolicy.startPeriodSeconds",
        "no health check configured",
    ),
    ("HealthPolicy.reasonCode", "a health check is configured"),
    (
        "PublicAccess.url",
        "no route applied yet: no server, generated access disabled, or nothing deployed",
    ),
    ("PublicAccess.kind", "no route applied yet"),
    ("PublicAccess.reasonCode", "the route is ready"),
    ("PublicAccess.phase", "the route is ready, or there is none"),
    ("PublicAccess.routeIntentStatus", "no route applied yet"),
    (
        "PublicAccess.latestAccessFailure",
        "no unexpired access-failure evidence",
    ),
    (
        "HealthProxy.providerKey",
        "no edge proxy: a direct-port route, or no route yet",
    ),
    (
        "HealthProxy.lastRouteRealizationDeploymentId",
        "no deployment has realized the route yet",
    ),
    ("HealthProxy.reasonCode", "the proxy serves the route"),
    (
        "HealthCheck.durationMs",
        "a check not timed: read from the controller's observation, not probed",
    ),
    (
        "HealthCheck.statusCode",
        "a check that made no HTTP request, or got no answer",
    ),
    (
        "HealthCheck.exitCode",
        "no container exit to report: a public-access check, a running container",
    ),
    (
        "HealthCheck.message",
        "Appaloft .optional(): nothing to say; Berth always sends it",
    ),
    (
        "HealthCheck.reasonCode",
        "the check passed, or the runtime's state needs no explaining",
    ),
    (
        "HealthCheck.phase",
        "Appaloft .optional(): a check of no phase; Berth always sends it",
    ),
    (
        "HealthCheck.retriable",
        "Appaloft .optional(): the check passed; Berth always sends it",
    ),
    (
        "HealthCheck.metadata",
        "Appaloft .optional(): nothing to add; Berth always sends it",
    ),
    (
        "HealthSourceError.relatedEntityId",
        "Appaloft .optional(): Berth's health record names no object with a failed read, so \
         never sends it",
    ),
    (
        "HealthSourceError.relatedState",
        "Appaloft .optional(): Berth's health record names no state with a failed read, so \
         never sends it",
    ),
    (
        "ResourceHealth.observedAt",
        "the controller has not observed the runtime yet",
    ),
    (
        "ResourceHealth.latestDeployment",
        "before the first deployment",
    ),
    (
        "ResourceHealth.latestRuntimeControl",
        "never stopped, started or restarted",
    ),
    (
        "HealthObservation.latestDeploymentId",
        "recorded before the first deployment",
    ),
];
