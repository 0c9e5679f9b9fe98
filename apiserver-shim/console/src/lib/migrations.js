// Platform migration (POST /migrations/plan|apply|status|verify|cleanup) helpers for the
// migration page. The plan and its receipts are kept in sessionStorage, like the CLI's task
// file, so a reload can resume; export files and secret values never are.

/**
 * @typedef {import('./api.js').Schemas} Schemas
 * @typedef {{ organizationId: string, provider: string, plan: Schemas['MigrationPlan'],
 *   receipts: Schemas['Receipt'][], applied: boolean, migrationName?: string,
 *   lastApply?: { state: string, failure: object | null, resume: object } | null }} StoredMigration
 */

const KEY = 'berth.migration';

export const PLATFORMS = [
  { value: 'railway', label: 'Railway', hint: 'the output of railway environment config --json, and railway.json or railway.toml per service' },
  { value: 'heroku', label: 'Heroku', hint: 'app.json, Procfile, the output of heroku config --shell (or --json) and heroku domains --json' },
  { value: 'compose', label: 'Compose file', hint: 'compose.yaml / docker-compose.yml and the env files it names' },
];

/** The migration kept for `organizationId`, or null (none, unreadable, another organization). */
export function loadStored(organizationId) {
  try {
    const stored = JSON.parse(sessionStorage.getItem(KEY) ?? 'null');
    return stored?.plan && stored.organizationId === organizationId ? stored : null;
  } catch {
    return null;
  }
}

/**
 * Keeps the plan, its receipts and the last apply's outcome (its failure names a step and a
 * code, never a value): never files, never secret values.
 * @param {StoredMigration} migration
 */
export function saveStored({ organizationId, provider, plan, receipts, applied, migrationName, lastApply }) {
  const record = { organizationId, provider, plan, receipts, applied, migrationName, lastApply };
  sessionStorage.setItem(KEY, JSON.stringify(record));
}

export function clearStored() {
  sessionStorage.removeItem(KEY);
}

/** The `env://NAME` names the plan's step inputs reference (`{"$secretRef": …}`), in order. */
export function secretRefs(plan) {
  const found = [];
  const walk = (value) => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (!value || typeof value !== 'object') return;
    const keys = Object.keys(value);
    if (keys.length === 1 && typeof value.$secretRef === 'string') {
      if (!found.includes(value.$secretRef)) found.push(value.$secretRef);
      return;
    }
    Object.values(value).forEach(walk);
  };
  for (const step of plan?.steps ?? []) walk(step.input);
  return {
    env: found.filter((r) => r.startsWith('env://')).map((r) => r.slice('env://'.length)),
    k8s: found.filter((r) => r.startsWith('k8s://')),
  };
}

/** An environment's kind from its name, as `berth migrate plan --environment` derives it. */
export function environmentKind(name) {
  const lower = name.toLowerCase();
  if (['local', 'development', 'test', 'staging', 'production', 'preview'].includes(lower)) return lower;
  return lower === 'prod' ? 'production' : 'custom';
}

/** A migration verdict or state as the tone `Badge` paints (good, bad, neutral). */
export function verdict(state) {
  if (['passed', 'completed', 'complete', 'ready', 'created', 'reused'].includes(state)) return 'succeeded';
  if (['attention', 'blocked', 'failed', 'absent'].includes(state)) return 'failed';
  return state;
}

/** A receipt's output or an evidence summary as `name=value` pairs. */
export function pairs(map) {
  return Object.entries(map ?? {})
    .map(([key, value]) => `${key}=${value}`)
    .join(' ');
}

/** Quotes an argument for a shell command line when it needs it. */
export function shellWord(text) {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}
