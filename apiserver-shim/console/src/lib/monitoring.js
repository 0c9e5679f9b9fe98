// Reads of the observation store for the charts: a scope's rollup over the last hour and the
// threshold rules that apply to it, turned into what <Chart> draws.
import { api, ApiError } from './api.js';

const HOUR = 3600_000;

/** `{ kind: 'resource', resourceId }` or `{ kind: 'server', serverId }` as query parameters. */
function scopeQuery(scope) {
  const id = scope.kind === 'server' ? scope.serverId : scope.resourceId;
  return { 'scope.kind': scope.kind, [`scope.${scope.kind}Id`]: id };
}

/** The scope's last hour per minute, with deployment markers (and top contributors when asked). */
export function lastHour(scope, { contributors = false } = {}) {
  const to = new Date();
  const from = new Date(to.getTime() - HOUR);
  return api.get('/runtime-monitoring/rollup', {
    ...scopeQuery(scope),
    'window.from': from.toISOString(),
    'window.to': to.toISOString(),
    bucket: 'minute',
    includeDeploymentMarkers: true,
    ...(contributors ? { includeTopContributors: true } : {}),
  });
}

/** One figure of one signal per bucket: `pick` reads it from the bucket's totals. */
export function series(rollup, signal, pick) {
  const found = rollup?.series?.find((s) => s.signal === signal);
  return (found?.points ?? [])
    .map((p) => ({ at: p.from, value: pick(p.totals ?? {}) }))
    .filter((p) => typeof p.value === 'number');
}

/** The rules of the threshold policy on a project or a server; none when it has no policy. */
export async function thresholdRules(kind, id) {
  if (!id) return [];
  try {
    const shown = await api.get('/runtime-monitoring/thresholds', { 'scope.kind': kind, [`scope.${kind}Id`]: id });
    return shown.policy?.enabled === false ? [] : (shown.policy?.rules ?? []);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return [];
    throw e;
  }
}

/** The warning and critical lines of the rules watching `signal`'s `metric`. */
export function thresholdLines(rules, signal, metric) {
  return rules
    .filter((r) => r.signal === signal && r.metric === metric)
    .flatMap((r) => [
      ...(typeof r.warning === 'number' ? [{ value: r.warning, level: 'warning' }] : []),
      { value: r.critical, level: 'critical' },
    ]);
}
