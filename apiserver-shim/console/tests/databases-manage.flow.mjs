// Issue 41 in the console: a managed PostgreSQL managed from the Databases page, in a real
// Chromium against the real stack. "New database" refuses a bad image naming the field, then
// provisions one that is listed and turns ready with no reload; its detail shows the connection
// masked and copies the Secret reference. An app of the same environment is bound from the
// page (its configuration then has DATABASE_URL, masked); deleting the bound database is
// refused with the binding named and nothing deleted; its credentials are rotated with the
// progress shown to the end; unbound, it is deleted with its data volume once its name is typed.
// Between, a pg_dump -Fc made elsewhere is uploaded from its Backups as a backup, proven by a
// test restore, and the database stays untouched. The database's password is never in the page. Named `.flow.mjs`, so `node --test tests/`
// leaves it to its own test (console_browser.rs runs it alone).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { env, launch, newPage, shot, signIn, assertNoErrors, assertNotInDom, rest, suffix } from './support.mjs';

/** A PostgreSQL provisioned, or deleted with its volume. */
const READY = 180_000;
/** An app deployed, or a rotation through its redeploy and 20 s of serving. */
const DEPLOY = 240_000;
const owner = { email: env('BERTH_CONSOLE_OWNER_EMAIL'), password: env('BERTH_CONSOLE_OWNER_PASSWORD') };
const serverId = env('BERTH_CONSOLE_SERVER_ID');
const id = suffix();
const name = `Orders ${id}`;
const slug = `ordersapp${id}`;
/** The stack's PostgreSQL image, tagged for its registry by console_browser.rs: nothing is pulled. */
const image = '127.0.0.1:5000/berth/postgres:15';

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
  if (state.bound) await quietly(api.del(`/resources/${state.resourceId}/dependency-bindings/DATABASE_URL`, {}));
  if (state.dependencyId) await quietly(api.del(`/dependency-resources/${state.dependencyId}`, { deleteDataConfirmation: name }));
  if (state.resourceId) await quietly(api.del(`/resources/${state.resourceId}`, { confirmation: { resourceSlug: slug } }));
  await browser?.close();
});

async function until(check, what, timeout) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    const found = await check();
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** The app once an attempt after the `count`th has succeeded and serves the declared spec. */
async function redeployed(count, what) {
  return until(async () => {
    const shown = await api.get(`/resources/${state.resourceId}`);
    const deployed = shown.deployedState;
    const done = shown.resource.deploymentCount > count && shown.resource.lastDeploymentStatus === 'succeeded';
    return done && deployed?.upToDate && !deployed.deployingId && shown;
  }, what, DEPLOY);
}
const deploymentCount = async () => (await api.get(`/resources/${state.resourceId}`)).resource.deploymentCount;

const openDatabases = () => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Databases' }).click();
const listed = () => page.getByRole('table', { name: 'Databases' }).getByRole('row').filter({ hasText: name });
const detail = () => page.getByRole('region', { name, exact: true });
const bindingRow = () => detail().getByRole('table', { name: 'Bindings' }).getByRole('row').filter({ hasText: 'DATABASE_URL' });
const deleteDialog = () => detail().getByRole('form', { name: 'Delete database' });
const confirmDelete = () => deleteDialog().getByRole('button', { name: `Delete ${name}`, exact: true });
/** The responses the flow provokes on purpose: a refused image, a refused delete. */
const PROVOKED = [/^422 POST .*\/api\/dependency-resources\/provision$/, /^409 DELETE .*\/api\/dependency-resources\/dep-/];

test('a PostgreSQL provisioned from "New database" is listed and becomes ready with no reload', async () => {
  const project = await api.post('/projects', { name: `Managed ${id}` });
  const environment = await api.post('/environments', { projectId: project.id, name: 'production', kind: 'production' });
  state.projectId = project.id;
  state.environmentId = environment.id;

  await signIn(page, owner.email, owner.password);
  await openDatabases();
  await page.getByRole('button', { name: 'New database' }).click();
  const form = page.getByRole('form', { name: 'New database' });
  await form.getByLabel('Kind').selectOption('postgres');
  await form.getByLabel('Project').selectOption(project.id);
  // The project's environments are read when it is chosen.
  await form.getByLabel('Environment').selectOption(environment.id);
  await form.getByLabel('Server').selectOption(serverId);
  await form.getByLabel('Database name').fill(name);
  await form.getByLabel('Description').fill('The shop\'s orders');

  // A refusal is shown next to the form, naming the field; nothing is created.
  await form.getByLabel('Image').fill('postgres 15');
  await form.getByRole('button', { name: 'Create database' }).click();
  const refusal = page.getByRole('region', { name: 'New database' }).getByRole('alert');
  await refusal.waitFor();
  assert.match(await refusal.textContent(), /Field:\s*image/);
  await shot(page, 'databases-manage-00-refused');
  const provisioned = async () => (await api.get(`/dependency-resources?projectId=${project.id}`)).items;
  assert.deepEqual(await provisioned(), [], 'a refused provision creates nothing');

  await form.getByLabel('Image').fill(image);
  await page.evaluate(() => (window.notReloaded = true));
  await form.getByRole('button', { name: 'Create database' }).click();
  await page.getByRole('status').filter({ hasText: new RegExp(`Provisioning ${name}|${name} is ready`) }).waitFor();
  await listed().waitFor();
  state.dependencyId = (await provisioned()).find((d) => d.name === name)?.id;
  assert.ok(state.dependencyId, 'the database is provisioned');
  // Followed by the page until ready: no reload, no Refresh.
  await listed().getByText('ready', { exact: true }).waitFor({ timeout: READY });
  await page.getByRole('status').filter({ hasText: `${name} is ready.` }).waitFor();
  assert.equal(await page.evaluate(() => window.notReloaded), true, 'the page was not reloaded');
  assert.match(await listed().textContent(), /postgres:\/\/berth:\*\*\*\*@/, 'the connection is masked');

  const { dependencyResource: shown } = await api.get(`/dependency-resources/${state.dependencyId}`);
  state.container = shown.connection.host;
  state.volume = shown.providerRealization?.volume;
  state.password = execFileSync('docker', ['exec', state.container, 'sh', '-c', 'echo "$POSTGRES_PASSWORD"']).toString().trim();
  assert.ok(state.password.length >= 16, 'the PostgreSQL has a generated password');

  // Its detail (the page opened it): masked connection, and the Secret that holds the URL.
  await detail().getByTestId('masked-connection').filter({ hasText: ':****@' }).waitFor();
  const secretRef = `${state.dependencyId}-connection`;
  assert.equal(await detail().getByTestId('secret-ref').textContent(), secretRef);
  const copy = detail().getByRole('button', { name: 'Copy Secret reference' });
  await copy.click();
  await copy.filter({ hasText: 'Copied' }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secretRef);
  // The authority its TLS certificate verifies against, downloaded: a certificate, no key.
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    detail().getByRole('button', { name: 'Download CA certificate' }).click(),
  ]);
  const pem = readFileSync(await download.path()).toString();
  assert.match(pem, /^-----BEGIN CERTIFICATE-----/);
  assert.doesNotMatch(pem, /PRIVATE KEY/);
  await shot(page, 'databases-manage-01-ready');
  await assertNotInDom(page, state.password, "the PostgreSQL's password");
  assertNoErrors(page, PROVOKED);
});

test('an app of the environment is bound from the page and gets DATABASE_URL, masked', async () => {
  const resource = await api.post('/resources', {
    projectId: state.projectId,
    environmentId: state.environmentId,
    name: slug,
    slug,
    kind: 'application',
    serverId,
    source: { kind: 'docker-image', locator: 'berth/sample-app:1' },
    networkProfile: { internalPort: 8080 },
    runtimeProfile: { healthCheck: { path: '/', intervalSeconds: 1, retries: 2 } },
  });
  state.resourceId = resource.id;
  await redeployed(0, 'the app deployed');
  // Auto-deploy on: a binding (and a rotated login) reaches it by a redeploy of its own.
  await api.post(`/resources/${state.resourceId}/auto-deploy`, { mode: 'enable' });

  // The app appears in the bind form live (the change feed), already on DATABASE_URL.
  const bind = detail().getByRole('form', { name: 'Bind to an app' });
  await bind.getByLabel('App').selectOption(state.resourceId);
  assert.equal(await bind.getByLabel('As variable').inputValue(), 'DATABASE_URL');
  const before = await deploymentCount();
  await bind.getByRole('button', { name: 'Bind', exact: true }).click();
  state.bound = true;
  const said = detail().getByRole('status', { name: 'Binding changed' });
  await said.waitFor();
  assert.match(await said.textContent(), new RegExp(`bound to ${slug} as DATABASE_URL[\\s\\S]*redeploys`));
  await bindingRow().waitFor();
  assert.ok((await bindingRow().textContent()).includes(slug), 'the binding names the app');
  await shot(page, 'databases-manage-02-bound');
  await redeployed(before, 'the app redeployed with DATABASE_URL');

  await bindingRow().getByRole('link', { name: slug }).click();
  const effective = page.getByRole('region', { name: 'Effective configuration' });
  const entry = effective.getByRole('row').filter({ hasText: 'DATABASE_URL' });
  await entry.waitFor();
  assert.match(await entry.textContent(), /DATABASE_URL\s*\*\*\*\*/, 'the URL is masked');
  await shot(page, 'databases-manage-03-app-configuration');
  await assertNotInDom(page, state.password, "the PostgreSQL's password");
  assertNoErrors(page);
});

test('deleting the bound database is refused, naming the binding, and deletes nothing', async () => {
  await openDatabases();
  await listed().getByRole('link', { name }).click();
  await detail().getByRole('button', { name: `Delete ${name}…` }).click();
  await confirmDelete().click();
  const blocked = deleteDialog().getByRole('alert', { name: 'Delete blocked' });
  await blocked.waitFor();
  const text = await blocked.textContent();
  assert.ok(text.includes(slug) && text.includes('DATABASE_URL'), `the blocker names the binding: ${text}`);
  await shot(page, 'databases-manage-04-delete-blocked');
  const { dependencyResource } = await api.get(`/dependency-resources/${state.dependencyId}`);
  assert.equal(dependencyResource.lifecycleStatus, 'ready', 'nothing was deleted');
  assert.ok((await listed().textContent()).includes('ready'));
  await deleteDialog().getByRole('button', { name: 'Cancel' }).click();
  assertNoErrors(page, PROVOKED);
});

test('rotating the credentials shows the progress until the old login is revoked', async () => {
  const progress = detail().getByRole('status', { name: 'Credential rotation' });
  await detail().getByRole('button', { name: 'Rotate credentials' }).click();
  await progress.waitFor();
  assert.match(await progress.textContent(), /Rotating/);
  await shot(page, 'databases-manage-05-rotating');
  // The bound app redeploys on the new login and serves with it; then the old one goes.
  await progress.filter({ hasText: 'Credentials rotated' }).waitFor({ timeout: DEPLOY });
  assert.match(await detail().getByTestId('masked-connection').textContent(), /postgres:\/\/berth_r1:\*\*\*\*@/);
  const { dependencyResource } = await api.get(`/dependency-resources/${state.dependencyId}`);
  assert.equal(dependencyResource.credentials?.user, 'berth_r1');
  assert.equal(dependencyResource.credentials?.revoking, undefined, 'the previous login is revoked');
  await shot(page, 'databases-manage-06-rotated');
  await assertNotInDom(page, state.password, "the PostgreSQL's password");
  assertNoErrors(page);
});

/** A backup target of the organization that is ready: the stack's bucket, added when none is. */
async function readyTarget() {
  const ready = async () => (await api.get('/backup-targets')).items.some((t) => t.ready);
  if (await ready()) return;
  const s3 = {
    endpoint: env('BERTH_S3_ENDPOINT'),
    bucket: env('BERTH_S3_BUCKET'),
    region: env('BERTH_S3_REGION'),
    accessKeyId: env('BERTH_S3_ACCESS_KEY_ID'),
    secretAccessKey: env('BERTH_S3_SECRET_ACCESS_KEY'),
    pathStyle: true,
  };
  await api.post('/backup-targets', { name: `Bucket ${id}`, kind: 's3', s3 });
  await until(ready, 'a backup target ready', READY);
}

test('a pg_dump -Fc made elsewhere is uploaded from the page and proven; the database is untouched', async () => {
  await readyTarget();
  const psql = (sql) => execFileSync('docker', ['exec', state.container, 'psql', '-U', 'berth', '-d', 'app', '-tAc', sql]).toString().trim();
  psql('create table notes (id int); insert into notes values (1), (2), (3)');
  const archive = execFileSync('docker', ['exec', state.container, 'pg_dump', '-Fc', '-U', 'berth', '-d', 'app', '-t', 'notes']);
  psql('drop table notes');
  const file = join(tmpdir(), `notes-${id}.dump`);
  writeFileSync(file, archive);
  await page.reload();
  const upload = page.getByRole('form', { name: 'Upload a dump' });
  await upload.getByLabel(/A dump made elsewhere/).setInputFiles(file);
  await upload.getByRole('button', { name: 'Upload as a backup' }).click();
  await page.getByRole('status').filter({ hasText: `notes-${id}.dump uploaded as backup` }).waitFor();
  const proven = page.getByRole('table', { name: 'Backups' }).getByRole('row').filter({ hasText: 'verified' });
  await proven.waitFor({ timeout: READY });
  assert.match(await proven.textContent(), /1 tables, 3 rows/);
  assert.equal(psql("select count(*) from pg_tables where tablename = 'notes'"), '0', 'untouched until restored');
  await shot(page, 'databases-manage-06b-dump-uploaded');
  rmSync(file);
  assertNoErrors(page);
});

test('unbound, the database is deleted with its data volume once its name is typed', async () => {
  const before = await deploymentCount();
  await bindingRow().getByRole('button', { name: `Unbind DATABASE_URL from ${slug}` }).click();
  await detail().getByRole('status', { name: 'Binding changed' }).filter({ hasText: 'no longer binds' }).waitFor();
  await bindingRow().waitFor({ state: 'detached' });
  state.bound = false;
  await shot(page, 'databases-manage-07-unbound');
  // The app redeploys without it, leaving the database's network before it is removed.
  await redeployed(before, 'the app redeployed without DATABASE_URL');

  await detail().getByRole('button', { name: `Delete ${name}…` }).click();
  await deleteDialog().getByLabel('Also delete the data volume').check();
  assert.ok(await confirmDelete().isDisabled(), 'the data goes only once the name is typed');
  await deleteDialog().getByLabel(`Type ${name} to delete its data for good`).fill(name);
  await shot(page, 'databases-manage-08-delete-dialog');
  await confirmDelete().click();
  await page.getByRole('status').filter({ hasText: new RegExp(`Deleting ${name}|${name} is deleted`) }).waitFor();
  await listed().waitFor({ state: 'detached', timeout: READY });
  await page.getByRole('status').filter({ hasText: `${name} is deleted with its container, network and data volume` }).waitFor();
  state.dependencyId = null;
  await shot(page, 'databases-manage-09-deleted');
  if (state.volume) {
    const inspected = spawnSync('docker', ['volume', 'inspect', state.volume], { encoding: 'utf8' });
    assert.match(inspected.stderr, /no such volume/i, `the data volume ${state.volume} is deleted`);
  }
  await assertNotInDom(page, state.password, "the PostgreSQL's password");
  assertNoErrors(page);
  await api.del(`/resources/${state.resourceId}`, { confirmation: { resourceSlug: slug } });
  state.resourceId = null;
});
