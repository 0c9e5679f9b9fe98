// Issue 42 in the console: the Databases page, in a real Chromium against the real stack. An
// administrator adds a backup target, a bucket of the stack's S3 store (Garage), which the page
// follows until its check says ready; the secret key is never in the page after. A
// managed Redis holding three keys is listed ready with its masked connection; it has no proven
// restore point until "Back up now" takes a backup, which the page follows (no reload) until a
// test restore has proven it: "verified", 3 keys. A key deleted afterwards comes back by a
// restore in place, whose dialog names the database it overwrites and stays disabled until
// that is acknowledged. A backup policy (every 6 h, keep 5) is saved from the page, which shows
// its next run. The Redis's password is never in the page. Named `.flow.mjs`, so
// `node --test tests/` leaves it to its own test (console_browser.rs runs it alone).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { env, origin, launch, newPage, shot, signIn, assertNoErrors, assertNotInDom, rest, suffix } from './support.mjs';

/** A Redis provisioned; a backup dumped, sealed, stored and proven; a restore. */
const READY = 180_000;
const owner = { email: env('BERTH_CONSOLE_OWNER_EMAIL'), password: env('BERTH_CONSOLE_OWNER_PASSWORD') };
const serverId = env('BERTH_CONSOLE_SERVER_ID');
const id = suffix();
const name = `Cache ${id}`;
const bucket = {
  endpoint: env('BERTH_S3_ENDPOINT'),
  bucket: env('BERTH_S3_BUCKET'),
  region: env('BERTH_S3_REGION'),
  accessKeyId: env('BERTH_S3_ACCESS_KEY_ID'),
  secretAccessKey: env('BERTH_S3_SECRET_ACCESS_KEY'),
};

let browser;
let page;
let api;
const state = {};

before(async () => {
  browser = await launch();
  page = await newPage(browser);
  api = await rest(owner.email, owner.password);
});
after(async () => {
  const quietly = (call) => call.catch((error) => console.error(`cleanup: ${error.message}`));
  if (state.dependencyId) await quietly(api.del(`/dependency-resources/${state.dependencyId}`, { deleteDataConfirmation: name }));
  await browser?.close();
});

/** `redis-cli` in the Redis's container, with its password from the container's env. */
function redis(command) {
  const script = `REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli ${command}`;
  return execFileSync('docker', ['exec', state.container, 'sh', '-c', script]).toString().trim();
}

async function until(check, what, timeout) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    const found = await check();
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  assert.fail(`timed out waiting for ${what}`);
}

const backupsTable = () => page.getByRole('table', { name: 'Backups' });

/** The bucket added as a target through the page's form, followed until its check passes. */
async function addBucketTarget() {
  const target = `Bucket ${id}`;
  await page.getByRole('button', { name: 'Add a backup target' }).click();
  const form = page.getByRole('form', { name: 'Add a backup target' });
  await form.getByLabel('Name').fill(target);
  await form.getByLabel('Endpoint').fill(bucket.endpoint);
  await form.getByLabel('Bucket', { exact: true }).fill(bucket.bucket);
  await form.getByLabel('Region').fill(bucket.region);
  await form.getByLabel('Key prefix').fill(`console-${id}`);
  await form.getByLabel('Access key id').fill(bucket.accessKeyId);
  await form.getByLabel('Secret access key').fill(bucket.secretAccessKey);
  await form.getByRole('button', { name: 'Add target' }).click();
  const row = page.getByRole('table', { name: 'Backup targets' }).getByRole('row').filter({ hasText: target });
  await row.getByText('ready', { exact: true }).waitFor({ timeout: 60_000 });
  assert.match(await row.textContent(), new RegExp(`s3://${bucket.bucket}/console-${id} at`));
  await assertNotInDom(page, bucket.secretAccessKey, 'the secret access key');
  await shot(page, 'databases-backup-targets');
}

test('a database is backed up from its page, the backup proven, and restored in place', async () => {
  const project = await api.post('/projects', { name: `Data ${id}` });
  const environment = await api.post('/environments', { projectId: project.id, name: 'production', kind: 'production' });
  const { id: dependencyId } = await api.post('/dependency-resources/provision', {
    kind: 'redis',
    projectId: project.id,
    environmentId: environment.id,
    serverId,
    name,
    image: '127.0.0.1:5000/berth/redis:7',
  });
  state.dependencyId = dependencyId;
  const shown = await until(async () => {
    const { dependencyResource } = await api.get(`/dependency-resources/${dependencyId}`);
    return dependencyResource.lifecycleStatus === 'ready' && dependencyResource;
  }, 'the Redis ready', READY);
  state.container = shown.connection.host;
  for (const key of ['a', 'b', 'c']) redis(`SET ${key} ${key}`);
  const password = execFileSync('docker', ['exec', state.container, 'sh', '-c', 'echo "$REDIS_PASSWORD"']).toString().trim();
  assert.ok(password?.length >= 16, 'the Redis has a password');

  await signIn(page, owner.email, owner.password);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Databases' }).click();
  await addBucketTarget();
  const row = page.getByRole('table', { name: 'Databases' }).getByRole('row').filter({ hasText: name });
  await row.getByText('ready').waitFor();
  assert.match(await row.textContent(), /redis:\/\/:\*\*\*\*@/, 'the connection is masked');
  await row.getByRole('button', { name: `Backups of ${name}` }).click();
  await page.getByRole('heading', { name: `Backups of ${name}` }).waitFor();
  await page.getByTestId('restore-point').filter({ hasText: 'No proven restore point yet' }).waitFor();

  await page.getByRole('form', { name: 'Back up now' }).getByRole('button', { name: 'Back up now' }).click();
  await page.getByRole('status').filter({ hasText: /Backup \S+ of .* started/ }).waitFor();
  // Followed by the page until proven: no reload, no Refresh.
  const verified = backupsTable().getByRole('row').filter({ hasText: 'verified' });
  await verified.waitFor({ timeout: READY });
  assert.match(await verified.textContent(), /3 keys/);
  await page.getByTestId('restore-point').filter({ hasText: '3 keys' }).waitFor();
  const policy = page.getByRole('form', { name: 'Backup policy' });
  await policy.getByLabel('Every (hours)').fill('6');
  await policy.getByLabel('Keep the newest').fill('5');
  await policy.getByRole('button', { name: 'Save policy' }).click();
  await page.getByRole('status').filter({ hasText: 'every 6 h, the newest 5 kept' }).waitFor();
  await page.getByTestId('backup-policy').filter({ hasText: /every 6 h[\s\S]*next backup/ }).waitFor({ timeout: 30_000 });
  const { items: policies } = await api.get(`/dependency-resources/backup-policies?dependencyResourceId=${dependencyId}`);
  assert.equal(policies.length, 1);
  assert.equal(policies[0].keepLast, 5);
  await shot(page, 'databases-backups');

  redis('DEL c');
  assert.equal(redis('DBSIZE'), '2');
  await verified.getByRole('button', { name: /^Restore / }).click();
  const dialog = page.getByRole('form', { name: 'Restore backup' });
  assert.match(await page.getByTestId('overwritten').textContent(), new RegExp(`${name}[\\s\\S]*3 keys`));
  const replace = dialog.getByRole('button', { name: `Replace ${name}'s data` });
  assert.ok(await replace.isDisabled(), 'nothing is overwritten before it is acknowledged');
  await dialog.getByLabel(`I understand ${name}'s data is replaced`).check();
  await replace.click();
  await page.getByRole('status').filter({ hasText: `into ${name}` }).waitFor();
  await verified.getByText('completed').waitFor({ timeout: READY });
  assert.equal(redis('DBSIZE'), '3', 'the deleted key is back');
  await shot(page, 'databases-restored');
  await assertNotInDom(page, password, "the Redis's password");
  assertNoErrors(page);
});
