//! The records of the interface specification's §2 tables (and the §4 answers that wrap them),
//! written as a strict client reads them. One line per field: `name:type` is listed without `?`
//! and must be present; `name?:type` is optional; `name~:type` is listed without `?` but a
//! record leaves it out where no value can exist, each for the reason [`super::absent`] names
//! (Appaloft 1.10.5, the system the spec was written from, marks each of these `.optional()`).
//! Types: `string`, `number`, `integer`, `boolean`, `any`, `map` (string to any JSON),
//! `map<T>`, `T[]`, `=a|b|c` (a value set: the spec's, closed with Appaloft's where the spec
//! only shows a sample), or a record named here. No field is ever `null`.

/// `(record, fields)`.
pub const RECORDS: &[(&str, &str)] = &[
    // §2.1 shared shapes
    (
        "LoginMethod",
        "key:=local-password, configured:boolean, enabled:boolean, reason~:string",
    ),
    (
        "Actor",
        "kind~:string, id~:string, userId~:string, email~:string",
    ),
    ("Quantity", "value:number, unit:string"),
    (
        "Permissions",
        "canInviteMembers:boolean, canListMembers:boolean, canManageDeployTokens:boolean, \
         canRemoveMembers:boolean, canTransferOwnership:boolean, canUpdateMemberRoles:boolean",
    ),
    (
        "ResourceMetrics",
        "cpu?:CpuMetrics, memory?:MemoryMetrics, disk?:DiskMetrics, inode?:InodeMetrics, \
         docker?:DockerMetrics, network?:NetworkMetrics",
    ),
    (
        "CpuMetrics",
        "logicalCores?:number, loadAverage1m?:number, loadAverage5m?:number, \
         loadAverage15m?:number, containerCpuPercent?:number",
    ),
    (
        "MemoryMetrics",
        "totalBytes?:number, usedBytes?:number, availableBytes?:number, \
         containerUsedBytes?:number",
    ),
    (
        "DiskMetrics",
        "totalBytes?:number, usedBytes?:number, availableBytes?:number, attributedBytes?:number",
    ),
    (
        "InodeMetrics",
        "total?:number, used?:number, available?:number",
    ),
    (
        "DockerMetrics",
        "imageBytes?:number, buildCacheBytes?:number, containerWritableBytes?:number",
    ),
    ("NetworkMetrics", "rxBytes?:number, txBytes?:number"),
    // `kind` and, for each kind, its id (checked by the validator); the filter form adds the
    // other ids.
    (
        "Scope",
        "kind:=server|project|environment|resource|deployment, serverId?:string, \
         projectId?:string, environmentId?:string, resourceId?:string, deploymentId?:string",
    ),
    // §2.2 bootstrap and decisions
    (
        "BootstrapStatus",
        "bootstrapRequired:boolean, firstAdminConfigured:boolean, \
         organizationConfigured:boolean, loginMethods:LoginMethod[], firstAdminEmail?:string, \
         loginUrl?:string, organizationId?:string, organizationSlug?:string, \
         nextSteps?:string[]",
    ),
    (
        "CapabilityDecision",
        "operationKey:string, allowed:boolean, mode:=unrestricted|constrained|denied, \
         hint?:string, reason?:string, details?:map",
    ),
    (
        "Entitlement",
        "capabilityKey:string, entitled:boolean, status:=entitled|not_entitled|unknown, \
         mode:=restricted|unrestricted|unknown, hint?:string, reason?:string, source?:string, \
         details?:map",
    ),
    (
        "UsageIntentRecord",
        "schemaVersion:=usage-intent.record/v1, id:string, idempotencyKey:string, \
         capabilityKey:string, status:=accepted|duplicate|rejected|unknown_capability, \
         reason?:string, source:string, tenantId?:string, accountId?:string, \
         organizationId?:string, actor?:Actor, resourceRefs?:map<string>, quantity?:Quantity, \
         occurredAt?:string, recordedAt:string, attributes?:map, details?:map",
    ),
    (
        "UsageIntentResult",
        "idempotencyKey:string, capabilityKey:string, accepted:boolean, duplicate:boolean, \
         status:=accepted|duplicate|rejected|unknown_capability, reason?:string, \
         source:string, record?:UsageIntentRecord, details?:map",
    ),
    (
        "OverlayRecord",
        "schemaVersion:=deployment-overlay.decision/v1, id:string, operationKey:string, \
         decision:=enabled|skipped|rejected|unknown, reason?:string, source:string, \
         tenantId?:string, accountId?:string, organizationId?:string, actor?:Actor, \
         resourceRefs?:map<string>, capabilityKey?:string, decidedAt:string, attributes?:map, \
         details?:map",
    ),
    (
        "OverlayResult",
        "operationKey:string, decision:=enabled|skipped|rejected|unknown, allowed:boolean, \
         reason?:string, source:string, record?:OverlayRecord, details?:map",
    ),
    (
        "RouteSurfaceRecord",
        "schemaVersion:=route-surface.decision/v1, id:string, operationKey:string, \
         decision:=enabled|skipped|rejected|unknown, reason?:string, source:string, \
         tenantId?:string, accountId?:string, organizationId?:string, actor?:Actor, \
         resourceRefs?:map<string>, capabilityKey?:string, decidedAt:string, attributes?:map, \
         details?:map, surfaceKind:string",
    ),
    (
        "RouteSurfaceResult",
        "operationKey:string, decision:=enabled|skipped|rejected|unknown, allowed:boolean, \
         reason?:string, source:string, surfaceKind:string, record?:RouteSurfaceRecord, \
         details?:map",
    ),
    // §2.2 deploy tokens
    (
        "TokenScope",
        "deploymentTargetIds:string[], environmentIds:string[], projectIds:string[], \
         repositoryFullNames:string[], resourceIds:string[], \
         workflowCommands:=source-link-deploy|server-config-deploy|preview-cleanup[]",
    ),
    (
        "DeployToken",
        "tokenId:string, organizationId:string, displayName:string, status:=active|revoked, \
         secretSuffix:string, scope:TokenScope, createdAt:string, expiresAt?:string, \
         lastUsedAt?:string, rotatedAt?:string, revokedAt?:string",
    ),
    (
        "DeployTokenCreated",
        "tokenId:string, token:string, organizationId:string, displayName:string, \
         secretSuffix:string, scopes:TokenScope, createdAt:string, expiresAt?:string",
    ),
    // §2.2 account and organizations
    (
        "AccountProfile",
        "userId:string, email:string, displayName?:string, avatarUrl?:string, \
         emailVerified:boolean, createdAt:string, updatedAt:string",
    ),
    (
        "Session",
        "sessionId:string, userId:string, clientKind:=web|cli|unknown, displayName?:string, \
         createdAt:string, expiresAt:string, ipAddress?:string, userAgent?:string, \
         current:boolean, lastActiveAt?:string",
    ),
    (
        "ContextUser",
        "userId:string, email:string, displayName~:string, avatarUrl~:string",
    ),
    (
        "OrganizationSummary",
        "organizationId:string, name:string, slug:string, role:=owner|admin|member",
    ),
    (
        "OrganizationContext",
        "user:ContextUser, currentOrganization:OrganizationSummary, \
         organizations:OrganizationSummary[], loginMethods:LoginMethod[], \
         permissions:Permissions",
    ),
    (
        "OrganizationProfile",
        "organizationId:string, name:string, slug:string, role:=owner|admin|member, \
         permissions:Permissions, logoUrl?:string, createdAt:string, updatedAt:string",
    ),
    (
        "Member",
        "memberId:string, userId:string, role:=owner|admin|member, joinedAt:string, \
         avatarUrl?:string, displayName?:string, email:string, status:=active|deactivated",
    ),
    (
        "Inviter",
        "userId:string, displayName~:string, email~:string",
    ),
    (
        "Invitation",
        "invitationId:string, organizationId:string, email:string, role:=owner|admin|member, \
         status:=accepted|expired|pending|revoked, createdAt:string, expiresAt:string, \
         inviter:Inviter",
    ),
    // §2.2 projects, environments, credentials
    (
        "Project",
        "id:string, organizationId:string, name:string, slug:string, description?:string, \
         lifecycleStatus:=active|archived, archivedAt?:string, archiveReason?:string, \
         displayOrder:integer, createdAt:string",
    ),
    (
        "MaskedVariable",
        "key:string, value:string, scope:string, exposure:=build-time|runtime, \
         isSecret:boolean, kind:string",
    ),
    (
        "Environment",
        "id:string, projectId:string, name:string, \
         kind:=local|development|test|staging|production|preview|custom, \
         parentEnvironmentId?:string, lifecycleStatus:=active|locked|archived, \
         lockedAt?:string, lockReason?:string, archivedAt?:string, archiveReason?:string, \
         createdAt:string, maskedVariables:MaskedVariable[]",
    ),
    (
        "SshCredential",
        "id:string, name:string, kind:=ssh-private-key, username?:string, \
         publicKeyConfigured:boolean, privateKeyConfigured:boolean, createdAt:string, \
         rotatedAt?:string",
    ),
    (
        "CredentialUsageServer",
        "serverId:string, serverName:string, lifecycleStatus:=active|inactive, \
         providerKey:string, host:string, username~:string",
    ),
    (
        "CredentialUsage",
        "totalServers:integer, activeServers:integer, inactiveServers:integer, \
         servers:CredentialUsageServer[]",
    ),
    (
        "RetentionPolicy",
        "schemaVersion:=retention-defaults.policy/v1, id:string, scope:=organization|system, \
         organizationId?:string, \
         category:=audit-rows|domain-event-streams|process-attempts|provider-job-logs|resource-runtime-log-archives|runtime-monitoring-samples, \
         retentionDays:integer, dryRunSchedulingEnabled:boolean, \
         destructiveSchedulingEnabled:boolean, enabled:boolean, updatedAt:string, \
         updatedByActorId:string, updatedByActorKind:=deploy-token|system|user",
    ),
    // §2.2 monitoring
    (
        "ThresholdRule",
        "ruleId:string, signal:=cpu|memory|disk|inode|docker|network, \
         metric:=containerCpuPercent|loadAverage1m|containerUsedBytes|usedBytes|attributedBytes|used|imageBytes|buildCacheBytes|containerWritableBytes|rxBytes|txBytes, \
         warning~:number, critical:number, comparator:string",
    ),
    (
        "ThresholdPolicy",
        "schemaVersion:=runtime-monitoring-thresholds.policy/v1, policyId:string, scope:Scope, \
         rules:ThresholdRule[], enabled:boolean, updatedAt:string, updatedByActorId:string, \
         updatedByActorKind:=deploy-token|system|user",
    ),
    (
        "ThresholdCrossing",
        "ruleId:string, signal:=cpu|memory|disk|inode|docker|network, metric:string, \
         severity:=warning|critical, observedValue:number, boundary:number",
    ),
    (
        "ThresholdEvaluation",
        "state:=ok|warning|critical|stale|unknown, evaluatedAt~:string, \
         sourceSampleId~:string, crossed:ThresholdCrossing[], \
         nextActions:=inspect-runtime-usage|open-runtime-monitoring|inspect-capacity|review-runtime-logs|review-deployment-events|configure-thresholds[], \
         sourceErrors:MonitoringSourceError[]",
    ),
    (
        "ScopeEvidence",
        "scope:Scope, serverId~:string, projectId~:string, environmentId~:string, \
         resourceId~:string, deploymentId~:string",
    ),
    (
        "SampleLabels",
        "providerKey~:string, artifactKind~:ArtifactKind, runtimeId~:string",
    ),
    (
        "MonitoringWarning",
        "code:=missing-samples|partial-window|stale-samples|missing-metric-source|outside-retention, \
         message:string, signal?:=cpu|memory|disk|inode|docker|network, scope?:Scope",
    ),
    (
        "MonitoringSourceError",
        "source:=monitoring-store|collector|read-model|unknown, code:string, message:string, \
         retriable:boolean",
    ),
    (
        "MonitoringSample",
        "sampleId:string, observedAt:string, collectedAt:string, scopeEvidence:ScopeEvidence, \
         totals:ResourceMetrics, freshness:Freshness, partial:boolean, labels:SampleLabels, \
         warnings:MonitoringWarning[], sourceErrors:MonitoringSourceError[]",
    ),
    ("Freshness", "=live|recent-sample|stale|unknown"),
    (
        "Retention",
        "rawRetentionHours:number, retainedFrom:string, retainedTo:string",
    ),
    (
        "RollupPoint",
        "from:string, to:string, sampleCount:number, totals:ResourceMetrics",
    ),
    (
        "RollupSeries",
        "signal:=cpu|memory|disk|inode|docker|network, points:RollupPoint[]",
    ),
    (
        "TopContributor",
        "scope:Scope, totals:ResourceMetrics, sampleCount:number",
    ),
    (
        "DeploymentMarker",
        "deploymentId:string, resourceId:string, environmentId:string, observedAt:string, \
         status:DeploymentStatus, label:string, correlation:=time",
    ),
    (
        "DeploymentStatus",
        "=created|planning|planned|running|cancel-requested|succeeded|failed|canceled|rolled-back",
    ),
    (
        "UsageGroup",
        "scope:Scope, ownership:Ownership, totals:ResourceMetrics, \
         currentDeploymentId~:string, currentRuntimeId~:string, artifactCount~:number, \
         warnings:UsageWarning[]",
    ),
    (
        "Ownership",
        "=attributed|partially-attributed|unattributed|unknown",
    ),
    (
        "ArtifactKind",
        "=active-runtime|rollback-candidate|source-workspace|docker-image|docker-build-cache|appaloft-state-root|volume|unknown",
    ),
    (
        "RuntimeArtifact",
        "kind:ArtifactKind, ownership:Ownership, serverId~:string, projectId~:string, \
         environmentId~:string, resourceId~:string, deploymentId~:string, \
         destinationId~:string, runtimeId~:string, bytes~:number, inodeCount~:number, \
         observedAt~:string, evidence:Evidence[], reclaimable:=yes|no|unknown, \
         reclaimBlockedReason?:string, warnings:UsageWarning[]",
    ),
    (
        "Evidence",
        "source:=label|deployment-snapshot|runtime-identity|workspace-metadata|read-model, \
         key:string",
    ),
    (
        "UsageWarning",
        "code:=partial-diagnostic|unsupported-provider|docker-unavailable|timeout|ownership-unproven|missing-metric-source|stale-observation, \
         message:string, scope?:Scope, \
         resource~:=cpu|memory|disk|inode|docker|network|ownership",
    ),
    (
        "UsageSourceError",
        "source:=runtime-target|docker|read-model|capacity|workspace|unknown, code:string, \
         message:string, retriable:boolean",
    ),
    (
        "RuntimeUsageSnapshot",
        "schemaVersion:=runtime-usage.inspect/v1, scope:Scope, generatedAt:string, \
         observedAt~:string, freshness:Freshness, partial:boolean, totals:ResourceMetrics, \
         byProject:UsageGroup[], byEnvironment:UsageGroup[], byResource:UsageGroup[], \
         byDeployment:UsageGroup[], artifacts:RuntimeArtifact[], warnings:UsageWarning[], \
         sourceErrors:UsageSourceError[]",
    ),
    // §2.2 resources and their configuration
    (
        "Service",
        "name:string, kind:=web|api|worker|database|cache|service",
    ),
    (
        "NetworkProfile",
        "internalPort:integer, upstreamProtocol:=http|tcp, \
         exposureMode:=none|reverse-proxy|direct-port, targetServiceName?:string, \
         hostPort?:integer",
    ),
    (
        "AccessProfile",
        "generatedAccessMode:=inherit|disabled, pathPrefix:string",
    ),
    (
        "PlannedRoute",
        "url:string, hostname:string, scheme:=http|https, providerKey?:string, \
         pathPrefix:string, proxyKind:=none|traefik|caddy, targetPort:integer",
    ),
    (
        "AppliedRoute",
        "url:string, hostname:string, scheme:=http|https, providerKey?:string, \
         deploymentId:string, deploymentStatus:DeploymentStatus, pathPrefix:string, \
         proxyKind:=none|traefik|caddy, targetPort?:integer, updatedAt:string",
    ),
    (
        "AccessSummary",
        "plannedGeneratedAccessRoute~:PlannedRoute, latestGeneratedAccessRoute~:AppliedRoute, \
         latestDurableDomainRoute~:AppliedRoute, latestServerAppliedDomainRoute~:AppliedRoute, \
         proxyRouteStatus?:ProxyRouteStatus",
    ),
    ("ProxyRouteStatus", "=unknown|ready|not-ready|failed"),
    (
        "Resource",
        "id:string, projectId:string, environmentId:string, destinationId?:string, \
         name:string, slug:string, \
         kind:=application|service|database|cache|compose-stack|worker|static-site|external, \
         description?:string, createdAt:string, services:Service[], \
         networkProfile?:NetworkProfile, accessProfile?:AccessProfile, \
         deploymentCount:number, lastDeploymentId?:string, \
         lastDeploymentStatus?:DeploymentStatus, accessSummary?:AccessSummary, \
         proxyRouteStatus?:ProxyRouteStatus, lastRouteRealizationDeploymentId?:string",
    ),
    (
        "SecretEntry",
        "resourceId:string, key:string, value:string, scope:=resource, \
         exposure:=build-time|runtime, isSecret:boolean, kind:=secret|plain-config, \
         updatedAt:string",
    ),
    (
        "ConfigEntry",
        "key:string, value:string, scope:string, exposure:=build-time|runtime, \
         isSecret:boolean, kind:string, updatedAt?:string",
    ),
    (
        "ConfigOverride",
        "key:string, exposure:=build-time|runtime, selectedScope:string, \
         overriddenScopes:string[]",
    ),
    (
        "EffectiveConfig",
        "schemaVersion:=resources.effective-config/v1, resourceId:string, \
         environmentId:string, ownedEntries:ConfigEntry[], effectiveEntries:ConfigEntry[], \
         overrides:ConfigOverride[], precedence:string[], generatedAt:string",
    ),
    (
        "ImportedEntry",
        "key:string, value:string, exposure:=build-time|runtime, kind:=plain-config|secret, \
         isSecret:boolean, action:=created|replaced, sourceLine:integer",
    ),
    (
        "DuplicateOverride",
        "key:string, exposure:=build-time|runtime, firstLine:integer, lastLine:integer, \
         rule:=last-wins",
    ),
    (
        "ExistingOverride",
        "key:string, exposure:=build-time|runtime, previousScope:=resource, \
         rule:=resource-entry-replaced",
    ),
    (
        "ImportResult",
        "resourceId:string, importedEntries:ImportedEntry[], \
         duplicateOverrides:DuplicateOverride[], existingOverrides:ExistingOverride[]",
    ),
    (
        "AutoDeployResult",
        "resourceId:string, status:=enabled|disabled|blocked, \
         triggerKind~:=git-push|generic-signed-webhook, refs~:string[], \
         eventKinds~:=push|tag[], sourceBindingFingerprint~:string, \
         blockedReason~:=source-binding-changed",
    ),
    // §2.2 observation records
    (
        "DiagnosticFocus",
        "resourceId:string, requestedDeploymentId~:string, deploymentId~:string",
    ),
    ("Window", "from:string, to:string"),
    (
        "DiagnosticContext",
        "projectId:string, environmentId:string, resourceName:string, resourceSlug:string, \
         resourceKind:=application|service|database|cache|compose-stack|worker|static-site|external, \
         destinationId~:string, serverId~:string, \
         runtimeStrategy~:=docker-container|docker-compose-stack|host-process|helm-release, \
         buildStrategy~:=dockerfile|compose-deploy|buildpack|static-artifact|prebuilt-image|workspace-commands|helm-package, \
         packagingMode~:=split-deploy|all-in-one-docker|compose-bundle|host-process-runtime|optional-future-binary|helm-chart, \
         targetKind~:=single-server|orchestrator-cluster, targetProviderKey~:string, \
         services:Service[], networkProfile~:NetworkProfile, observationWindow~:Window",
    ),
    (
        "DeploymentError",
        "timestamp:string, phase:=detect|plan|package|deploy|verify|rollback, message:string",
    ),
    (
        "DiagnosticDeployment",
        "id:string, status:DeploymentStatus, lifecyclePhase:DeploymentStatus, \
         runtimePlanId:string, sourceKind:string, sourceDisplayName:string, \
         serverId~:string, destinationId~:string, createdAt:string, startedAt~:string, \
         finishedAt~:string, timelineCount:number, lastError~:DeploymentError",
    ),
    (
        "SectionStatus",
        "=available|empty|not-configured|not-requested|unavailable|failed|unknown",
    ),
    (
        "DiagnosticAccess",
        "status:SectionStatus, generatedUrl~:string, durableUrl~:string, \
         serverAppliedUrl~:string, plannedUrl~:string, latestAccessFailure~:AccessFailure, \
         selectedRoute~:RouteIntentStatus, routeIntentStatuses~:RouteIntentStatus[], \
         proxyRouteStatus~:ProxyRouteStatus, lastRouteRealizationDeploymentId~:string, \
         reasonCode~:string, phase~:string",
    ),
    (
        "ProxySection",
        "id:string, title:string, format:=docker-labels|file|command|yaml|json|text, \
         redacted:boolean, source:=provider-rendered|snapshot|diagnostic",
    ),
    (
        "TlsRoute",
        "hostname:string, pathPrefix:string, tlsMode:=auto|disabled, scheme:=http|https, \
         automation:=disabled|provider-local|appaloft, \
         certificateSource:=none|provider-local|appaloft-managed|appaloft-imported, \
         platformCertificateManaged:boolean, message:string",
    ),
    ("ProxyWarning", "code:string, message:string, details~:map"),
    (
        "DiagnosticProxy",
        "status:SectionStatus, providerKey~:string, proxyRouteStatus~:ProxyRouteStatus, \
         configurationIncluded:boolean, \
         configurationStatus~:=not-configured|planned|applied|stale|failed, \
         configurationGeneratedAt~:string, routeCount~:number, sectionCount~:number, \
         sections~:ProxySection[], tlsRoutes~:TlsRoute[], warnings~:ProxyWarning[], \
         reasonCode~:string, phase~:string",
    ),
    (
        "LogLine",
        "timestamp:string, source:=platform|application, \
         phase:=detect|plan|package|deploy|verify|rollback, level:=debug|info|warn|error, \
         stream?:=stdout|stderr, serviceName?:string, message:string, masked:boolean",
    ),
    // Runtime log tails carry no phase or level: the runtime has none (Appaloft: optional).
    (
        "RuntimeTailLine",
        "timestamp~:string, source:=platform|application, \
         phase~:=detect|plan|package|deploy|verify|rollback, level~:=debug|info|warn|error, \
         stream?:=stdout|stderr, serviceName?:string, message:string, masked:boolean",
    ),
    (
        "TimelineTail",
        "status:SectionStatus, tailLimit:number, lineCount:number, lines:LogLine[], \
         reasonCode~:string, phase~:string",
    ),
    (
        "RuntimeLogTail",
        "status:SectionStatus, tailLimit:number, lineCount:number, lines:RuntimeTailLine[], \
         reasonCode~:string, phase~:string",
    ),
    (
        "DiagnosticSystem",
        "entrypoint:=cli|http|mcp|rpc|system, requestId:string, locale:string, \
         readinessStatus~:=ready|degraded, databaseDriver~:string, databaseMode~:string",
    ),
    (
        "DiagnosticSourceError",
        "source:=deployment|access|proxy|deployment-timeline|runtime-logs|system|copy, \
         code:string, category:string, phase:string, retryable:boolean, \
         relatedEntityId~:string, relatedState~:string, message~:string",
    ),
    (
        "Redaction",
        "policy:=deployment-environment-secrets, masked:boolean, maskedValueCount:number",
    ),
    ("Copy", "json:string, markdown~:string, plainText~:string"),
    (
        "DiagnosticSummary",
        "schemaVersion:=resources.diagnostic-summary/v1, generatedAt:string, \
         focus:DiagnosticFocus, context:DiagnosticContext, deployment~:DiagnosticDeployment, \
         access:DiagnosticAccess, proxy:DiagnosticProxy, deploymentTimeline:TimelineTail, \
         runtimeLogs:RuntimeLogTail, system:DiagnosticSystem, \
         sourceErrors:DiagnosticSourceError[], redaction:Redaction, copy:Copy",
    ),
    (
        "AccessFailureAffected",
        "url~:string, hostname~:string, path~:string, method~:string",
    ),
    (
        "AccessFailureRoute",
        "host~:string, pathPrefix~:string, resourceId~:string, deploymentId~:string, \
         domainBindingId~:string, serverId~:string, destinationId~:string, \
         providerKey~:string, routeId~:string, diagnosticId~:string, \
         routeSource~:=generated-default|durable-domain|server-applied|deployment-snapshot, \
         routeStatus~:string",
    ),
    (
        "AccessFailure",
        "schemaVersion:=resource-access-failure/v1, requestId:string, generatedAt:string, \
         code:=resource_access_route_not_found|resource_access_proxy_unavailable|resource_access_route_unavailable|resource_access_upstream_unavailable|resource_access_upstream_connect_failed|resource_access_upstream_timeout|resource_access_upstream_reset|resource_access_upstream_tls_failed|resource_access_edge_error|resource_access_unknown, \
         category:=infra|integration|timeout|not-found|async-processing, \
         phase:=edge-request-routing|proxy-route-observation|upstream-connection|upstream-response|proxy-route-realization|public-route-verification|diagnostic-page-render, \
         httpStatus:integer, retriable:boolean, ownerHint:=platform|resource|operator-config|unknown, \
         nextAction:NextAction, affected~:AccessFailureAffected, route~:AccessFailureRoute, \
         causeCode~:string, correlationId~:string, causationId~:string",
    ),
    (
        "NextAction",
        "=check-health|inspect-runtime-logs|inspect-deployment-timeline|inspect-proxy-preview|diagnostic-summary|verify-domain|fix-dns|repair-proxy|manual-review",
    ),
    (
        "RelatedIds",
        "resourceId~:string, deploymentId~:string, domainBindingId~:string, serverId~:string, \
         destinationId~:string, routeId~:string",
    ),
    (
        "LookupFilters",
        "resourceId~:string, hostname~:string, path~:string",
    ),
    (
        "AccessFailureLookup",
        "schemaVersion:=resources.access-failure-evidence.lookup/v1, requestId:string, \
         generatedAt:string, filters~:LookupFilters, status:=found, \
         matchedSource:=short-retention-evidence-read-model, evidence:AccessFailure, \
         relatedIds~:RelatedIds, nextAction:NextAction, capturedAt:string, expiresAt:string",
    ),
    (
        "RouteIntent",
        "host:string, pathPrefix:string, protocol:=http|https, routeBehavior:=serve|redirect, \
         redirectTo~:string, redirectStatus~:integer",
    ),
    (
        "RouteContext",
        "resourceId:string, deploymentId~:string, serverId~:string, destinationId~:string, \
         runtimeTargetKind~:string",
    ),
    (
        "RouteProxy",
        "intent:=not-required|required|unknown, \
         applied:=not-configured|planned|applied|ready|not-ready|stale|failed|unknown, \
         providerKey~:string",
    ),
    (
        "RouteObservation",
        "source:=resource-access-summary|proxy-preview|resource-health|runtime-logs|access-failure-diagnostic|deployment-snapshot, \
         observedAt~:string, requestId~:string, deploymentId~:string",
    ),
    (
        "CopySafeSummary",
        "status:=available|unavailable|not-ready|failed|stale|unknown, code~:string, \
         phase~:string, message:string",
    ),
    (
        "RouteIntentStatus",
        "schemaVersion:=route-intent-status/v1, routeId:string, diagnosticId:string, \
         source:=generated-default-access|durable-domain-binding|server-applied-route|deployment-snapshot-route, \
         intent:RouteIntent, context:RouteContext, proxy:RouteProxy, \
         domainVerification:=not-applicable|pending|verified|failed|unknown, \
         tls:=not-applicable|disabled|pending|active|missing|expired|failed|unknown, \
         runtimeHealth:HealthOverall, latestObservation~:RouteObservation, \
         blockingReason~:=runtime_not_ready|health_check_failing|proxy_route_missing|proxy_route_stale|domain_not_verified|certificate_missing|certificate_expired_or_not_active|dns_points_elsewhere|server_applied_route_unavailable|observation_unavailable, \
         recommendedAction:=none|wait|check-health|inspect-logs|inspect-proxy-preview|diagnostic-summary|verify-domain|fix-dns|provide-certificate|repair-proxy|manual-review, \
         copySafeSummary:CopySafeSummary",
    ),
    (
        "HealthOverall",
        "=healthy|degraded|unhealthy|starting|stopped|not-deployed|unknown",
    ),
    (
        "RuntimeLifecycle",
        "=not-deployed|starting|running|restarting|degraded|stopped|exited|unknown",
    ),
    ("RuntimeHealth", "=healthy|unhealthy|unknown|not-configured"),
    (
        "AccessStatus",
        "=ready|not-ready|failed|unknown|not-configured",
    ),
    ("PolicyStatus", "=configured|not-configured|unsupported"),
    (
        "HealthDeployment",
        "id:string, status:DeploymentStatus, createdAt:string, startedAt~:string, \
         finishedAt~:string, serverId~:string, destinationId~:string, \
         lastError~:DeploymentError",
    ),
    (
        "HealthRuntime",
        "lifecycle:RuntimeLifecycle, health:RuntimeHealth, observedAt~:string, \
         runtimeKind~:=docker-container|docker-compose-stack|host-process|helm-release, \
         reasonCode~:string, message~:string",
    ),
    (
        "RuntimeControlPhase",
        "phase:string, status:string, errorCode~:string",
    ),
    (
        "LatestRuntimeControl",
        "runtimeControlAttemptId:string, operation:=stop|start|restart, \
         status:=accepted|running|succeeded|failed|blocked, startedAt:string, \
         completedAt~:string, \
         runtimeState:=starting|running|restarting|stopping|stopped|unknown, \
         blockedReason~:string, errorCode~:string, phases~:RuntimeControlPhase[]",
    ),
    (
        "HealthPolicy",
        "status:PolicyStatus, enabled:boolean, type~:=http|command, path~:string, \
         port~:number, expectedStatusCode~:number, intervalSeconds~:number, \
         timeoutSeconds~:number, retries~:number, startPeriodSeconds~:number, \
         reasonCode~:string",
    ),
    (
        "PublicAccess",
        "status:AccessStatus, url~:string, \
         kind~:=durable-domain|static-artifact|server-applied-domain|generated-latest|generated-planned, \
         reasonCode~:string, phase~:string, routeIntentStatus~:RouteIntentStatus, \
         latestAccessFailure~:AccessFailure",
    ),
    (
        "HealthProxy",
        "status:AccessStatus, providerKey~:string, lastRouteRealizationDeploymentId~:string, \
         reasonCode~:string",
    ),
    (
        "HealthCheck",
        "name:string, target:=runtime|container|command|public-access|proxy-route, \
         status:=passed|failed|skipped|unknown, observedAt:string, durationMs~:number, \
         statusCode~:number, exitCode~:number, message~:string, reasonCode~:string, \
         phase~:string, retriable~:boolean, metadata~:map<string>",
    ),
    (
        "HealthSourceError",
        "source:=deployment|runtime|health-policy|health-check|proxy|public-access|domain-binding|runtime-control, \
         code:string, category:string, phase:string, retriable:boolean, \
         relatedEntityId~:string, relatedState~:string, message:string",
    ),
    (
        "ResourceHealth",
        "schemaVersion:=resources.health/v1, resourceId:string, generatedAt:string, \
         observedAt~:string, overall:HealthOverall, latestDeployment~:HealthDeployment, \
         runtime:HealthRuntime, latestRuntimeControl~:LatestRuntimeControl, \
         healthPolicy:HealthPolicy, publicAccess:PublicAccess, proxy:HealthProxy, \
         checks:HealthCheck[], sourceErrors:HealthSourceError[]",
    ),
    (
        "HealthObservation",
        "observationId:string, observedAt:string, overall:HealthOverall, \
         runtimeLifecycle:RuntimeLifecycle, runtimeHealth:RuntimeHealth, \
         publicAccessStatus:AccessStatus, proxyStatus:AccessStatus, \
         healthPolicyStatus:PolicyStatus, latestDeploymentId~:string, \
         summary:ResourceHealth",
    ),
    (
        "HealthHistory",
        "schemaVersion:=resources.health-history/v1, resourceId:string, from:string, \
         to:string, generatedAt:string, observations:HealthObservation[], \
         sourceErrors?:HealthSourceError[]",
    ),
    (
        "RuntimeLogLine",
        "resourceId:string, deploymentId?:string, serviceName?:string, runtimeKind?:string, \
         runtimeInstanceId?:string, stream?:=stdout|stderr, timestamp?:string, \
         sequence?:number, cursor?:string, message:string, masked:boolean",
    ),
    (
        "TerminalSession",
        "sessionId:string, scope:=server|resource, serverId:string, resourceId?:string, \
         deploymentId?:string, transport:TerminalTransport, providerKey:string, \
         workingDirectory?:string, createdAt:string",
    ),
    ("TerminalTransport", "kind:=websocket, path:string"),
    (
        "TerminalSessionSummary",
        "sessionId:string, scope:=server|resource, serverId:string, resourceId?:string, \
         deploymentId?:string, transport:TerminalTransport, providerKey:string, \
         workingDirectory?:string, status:=active|closing, createdAt:string",
    ),
    ("CertificateIssue", "certificateId:string, attemptId:string"),
    ("ProgressStep", "current:number, total:number, label:string"),
    (
        "ProgressEvent",
        "timestamp:string, source:=platform|application, \
         phase:=detect|plan|package|deploy|verify|rollback, level:=debug|info|warn|error, \
         message:string, deploymentId?:string, status?:=running|succeeded|failed, \
         step?:ProgressStep, stream?:=stdout|stderr",
    ),
    // §4 answers that wrap the records
    ("Id", "id:string"),
    ("Count", "count:integer"),
    ("CapabilityAnswer", "capabilities:CapabilityDecision[]"),
    ("EntitlementAnswer", "entitlements:Entitlement[]"),
    ("UsageIntentList", "records:UsageIntentRecord[]"),
    ("UsageIntentAnswer", "result:UsageIntentResult"),
    ("OverlayList", "records:OverlayRecord[]"),
    ("OverlayAnswer", "result:OverlayResult"),
    ("RouteSurfaceList", "records:RouteSurfaceRecord[]"),
    ("RouteSurfaceAnswer", "result:RouteSurfaceResult"),
    ("TokenList", "items:DeployToken[]"),
    (
        "TokenRotated",
        "tokenId:string, token:string, rotatedAt:string, scopes:TokenScope",
    ),
    ("TokenRevoked", "tokenId:string, revokedAt:string"),
    ("SessionList", "items:Session[], nextCursor?:string"),
    ("SessionRevoked", "sessionId:string, revokedAt:string"),
    (
        "TerminalSessionList",
        "schemaVersion:=terminal-sessions.list/v1, items:TerminalSessionSummary[]",
    ),
    (
        "TerminalSessionDetail",
        "schemaVersion:=terminal-sessions.show/v1, item:TerminalSessionSummary",
    ),
    (
        "TerminalSessionClosed",
        "sessionId:string, closed:boolean, status:=closed",
    ),
    ("AccountDeleted", "userId:string, deletedAt:string"),
    (
        "OrganizationDeleted",
        "organizationId:string, deletedAt:string",
    ),
    ("MemberList", "items:Member[], nextCursor?:string"),
    ("InvitationList", "items:Invitation[], nextCursor?:string"),
    (
        "MemberRemoved",
        "memberId:string, organizationId:string, removedAt:string",
    ),
    (
        "OwnershipTransferred",
        "fromMember:Member, toMember:Member, transferredAt:string",
    ),
    (
        "ProjectList",
        "items:Project[], total:integer, limit:integer, offset:integer",
    ),
    ("EnvironmentList", "items:Environment[]"),
    (
        "SamplesList",
        "schemaVersion:=runtime-monitoring.samples.list/v1, scope:Scope, from:string, \
         to:string, generatedAt:string, freshness:Freshness, partial:boolean, \
         retention:Retention, samples:MonitoringSample[], warnings:MonitoringWarning[], \
         sourceErrors:MonitoringSourceError[]",
    ),
    (
        "Rollup",
        "schemaVersion:=runtime-monitoring.rollup/v1, scope:Scope, from:string, to:string, \
         bucket:=minute|five-minute|hour, generatedAt:string, freshness:Freshness, \
         partial:boolean, retention:Retention, series:RollupSeries[], \
         totals:ResourceMetrics, topContributors:TopContributor[], \
         deploymentMarkers:DeploymentMarker[], warnings:MonitoringWarning[], \
         sourceErrors:MonitoringSourceError[]",
    ),
    (
        "ThresholdsShow",
        "schemaVersion:=runtime-monitoring-thresholds.show/v1, scope:Scope, \
         generatedAt:string, policy:ThresholdPolicy, evaluation:ThresholdEvaluation",
    ),
    ("ThresholdsSet", "policy:ThresholdPolicy"),
    (
        "RetentionList",
        "schemaVersion:=retention-defaults.list/v1, items:RetentionPolicy[]",
    ),
    (
        "RetentionShow",
        "schemaVersion:=retention-defaults.show/v1, policy:RetentionPolicy",
    ),
    ("CredentialList", "items:SshCredential[]"),
    (
        "CredentialShow",
        "schemaVersion:=credentials.show/v1, credential:SshCredential, \
         usage?:CredentialUsage, generatedAt:string",
    ),
    (
        "RotatedCredentialSummary",
        "id:string, kind:=ssh-private-key, usernameConfigured:boolean, \
         publicKeyConfigured:boolean, privateKeyConfigured:boolean, rotatedAt:string",
    ),
    (
        "CredentialRotated",
        "schemaVersion:=credentials.rotate-ssh/v1, credential:RotatedCredentialSummary, \
         affectedUsage:CredentialUsage",
    ),
    ("ResourceList", "items:Resource[]"),
    (
        "SecretList",
        "schemaVersion:=resources.secrets.list/v1, resourceId:string, items:SecretEntry[], \
         generatedAt:string",
    ),
    (
        "SecretShow",
        "schemaVersion:=resources.secrets.show/v1, secret:SecretEntry, generatedAt:string",
    ),
    (
        "SecretChanged",
        "resourceId:string, key:string, exposure:=build-time|runtime",
    ),
    (
        "RuntimeLogs",
        "resourceId:string, deploymentId?:string, logs:RuntimeLogLine[]",
    ),
];
