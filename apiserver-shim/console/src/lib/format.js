// Small display helpers shared by the pages.
export function ago(iso) {
  if (!iso) return '—';
  const seconds = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (Number.isNaN(seconds)) return iso;
  if (seconds < 60) return `${Math.max(seconds, 0)} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86400)} d ago`;
}

/** The URL a resource serves at, from its access summary (durable domain first). */
export function resourceUrl(resource) {
  const summary = resource?.accessSummary ?? {};
  for (const key of ['latestDurableDomainRoute', 'latestServerAppliedDomainRoute', 'latestGeneratedAccessRoute']) {
    const url = summary[key]?.url;
    if (url) return url;
  }
  return null;
}

export function tone(status) {
  if (['succeeded', 'ready', 'healthy', 'active', 'running', 'true'].includes(String(status))) return 'good';
  if (['failed', 'unhealthy', 'not-ready', 'canceled', 'revoked', 'false'].includes(String(status))) return 'bad';
  return 'neutral';
}

export function bytes(n) {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(unit ? 1 : 0)} ${units[unit]}`;
}
