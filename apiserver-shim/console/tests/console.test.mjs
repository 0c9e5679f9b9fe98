// The console as a user drives it, in a real Chromium against the real stack: sign in, create
// a project, an environment and the sample app, watch it deploy (across a reload), open it,
// read its logs, see its charts with the project's threshold lines and the server's disk, find
// it among the server's top contributors, read its last lines after a crash, use its terminal, manage a secret that never reaches the DOM, deploy again,
// roll back, cancel a slow build, show a git source's deployed commit, bind a domain, create a deploy token shown once, delete the
// resource; and a member who sees no administrator actions.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { env, origin, launch, newPage, shot, signIn, assertNoErrors, assertNotInDom, noPolicyYet, rest, suffix } from './support.mjs';

const DEPLOY = 240_000;
const owner = { email: env('BERTH_CONSOLE_OWNER_EMAIL'), password: env('BERTH_CONSOLE_OWNER_PASSWORD') };
const member = { email: env('BERTH_CONSOLE_MEMBER_EMAIL'), password: env('BERTH_CONSOLE_MEMBER_PASSWORD') };
const serverId = env('BERTH_CONSOLE_SERVER_ID');
const slowFolder = env('BERTH_CONSOLE_SLOW_FOLDER');
const git = { url: env('BERTH_CONSOLE_GIT_URL'), sha: env('BERTH_CONSOLE_GIT_SHA') };
const id = suffix();
const greeting = `console-says-hello-${id}`;
const lastWords = `fatal-out-of-cheese-${id}`;
const secretValue = `s3cret-${id}-one`;
const rotatedValue = `s3cret-${id}-two`;

let browser;
let page;
const state = {};

before(async () => {
  browser = await launch();
  page = await newPage(browser);
});
after(async () => {
  await browser?.close();
});

/** The attempt shown on the Deployments tab ended with `status`. */
async function attemptEnded(status, timeout = DEPLOY) {
  await page.locator(`section.attempt[data-status="${status}"]`).waitFor({ timeout });
}

/** `start` begins a new attempt: the page switches to it and follows it to success. */
async function newAttemptSucceeds(start) {
  const before = await page.locator('#attempt code').textContent();
  await start();
  await page.waitForFunction((old) => document.querySelector('#attempt code')?.textContent !== old, before);
  await attemptEnded('succeeded');
}

test('an owner signs in and creates a project and an environment', async () => {
  await signIn(page, owner.email, owner.password);
  // The console's session says what made it, in the spec's words.
  const current = await page.evaluate(async () => {
    const { token } = JSON.parse(sessionStorage.getItem('berth.session'));
    const answer = await fetch('/api/account/sessions', { headers: { Authorization: `Bearer ${token}` } });
    return (await answer.json()).items.find((s) => s.current);
  });
  assert.equal(current?.clientKind, 'web');
  await shot(page, '01-projects');
  await page.getByLabel('Project name').fill(`Console ${id}`);
  await page.getByRole('button', { name: 'Create project' }).click();
  await page.getByRole('heading', { name: `Console ${id}` }).waitFor();
  state.projectUrl = page.url();
  await page.getByLabel('Environment name').fill('production');
  await page.getByRole('button', { name: 'Create environment' }).click();
  await page.locator('.chip', { hasText: 'production' }).waitFor();
  await shot(page, '02-project');
  assertNoErrors(page);
});

test('the sample app is created, its progress shown live and across a reload, to success', async () => {
  await page.getByLabel('Resource name').fill(`web${id}`);
  await page.getByLabel('Docker image').fill('berth/sample-app:1');
  await page.getByLabel('Port').fill('8080');
  // The app stops with exit code 3 (its last words first) once /tmp/crash-now appears.
  await page.getByLabel('Start command').fill(
    `sh -c 'echo ${greeting}; /bin/sample-app & trap "exit 0" TERM; while [ ! -f /tmp/crash-now ]; do sleep 1; done; rm /tmp/crash-now; echo ${lastWords}; exit 3'`,
  );
  await page.getByLabel('Server').selectOption(serverId);
  await page.getByRole('button', { name: 'Create resource' }).click();
  await page.getByRole('progressbar', { name: 'Deployment progress' }).waitFor();
  state.resourceUrl = page.url().replace(/\/deployments.*$/, '');
  // The first lines of the attempt arrive while it runs…
  await page.locator('pre.timeline .line').first().waitFor({ timeout: 30_000 });
  await shot(page, '03-deploying');
  // …and a reload re-attaches to the same attempt, which goes on to succeed.
  await page.reload();
  await attemptEnded('succeeded');
  // The timeline after the reload shows the attempt's lines, read back from its start.
  await page.waitForFunction(() => document.querySelectorAll('pre.timeline .line').length > 3);
  await shot(page, '04-deployed');
  assertNoErrors(page);
});

test('the resource overview shows its URL, which serves the app', async () => {
  await page.goto(`${state.resourceUrl}/overview`);
  const link = page.locator('dl.facts a[target=_blank]');
  await link.waitFor({ timeout: 60_000 });
  state.appUrl = await link.getAttribute('href');
  await page.getByRole('button', { name: 'Check now' }).click();
  await shot(page, '05-overview');
  const app = await browser.newPage();
  const answer = await app.goto(state.appUrl);
  assert.equal(answer.status(), 200, `${state.appUrl} serves the app`);
  await app.close();
  assertNoErrors(page);
});

test("the logs tab shows what the app printed", async () => {
  await page.getByRole('link', { name: 'Logs' }).click();
  await page.getByTestId('logs').getByText(greeting).waitFor({ timeout: 30_000 });
  await page.getByLabel('Search logs').fill('no-such-line');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=logs] .line').length === 0);
  await page.getByLabel('Search logs').fill(greeting);
  await page.getByTestId('logs').getByText(greeting).waitFor();
  await shot(page, '06-logs');
  assertNoErrors(page);
});

test("the monitor tab charts the app's last hour", async () => {
  await page.getByRole('link', { name: 'Monitor' }).click();
  for (const chart of ['CPU', 'Memory', 'Network received', 'Network sent']) {
    await page.getByRole('img', { name: `${chart} over time` }).waitFor({ timeout: 30_000 });
  }
  await shot(page, '06b-monitor');
  assertNoErrors(page, [noPolicyYet]);
});

test("the monitor tab draws the project's threshold lines and the server's disk", async () => {
  const api = await rest(owner.email, owner.password);
  const projectId = state.projectUrl.split('/').pop();
  const rules = [{ signal: 'cpu', metric: 'containerCpuPercent', warning: 50, critical: 80 }];
  const { policy } = await api.post('/runtime-monitoring/thresholds', { scope: { kind: 'project', projectId }, rules, enabled: true });
  await page.reload();
  const cpu = page.locator('figure.chart', { has: page.getByRole('img', { name: 'CPU over time' }) });
  await cpu.getByText('warning at 50.0 % · critical at 80.0 %').waitFor({ timeout: 30_000 });
  assert.deepEqual(await cpu.locator('line.threshold').evaluateAll((lines) => lines.map((l) => l.dataset.level)), ['warning', 'critical']);
  await page.getByRole('img', { name: `Disk used on server ${serverId} over time` }).waitFor();
  await shot(page, '06c-monitor-thresholds');
  await api.del(`/runtime-monitoring/thresholds/${policy.policyId}`);
  assertNoErrors(page, [noPolicyYet]);
});

test("the server page shows the server's last hour and the app among its top contributors", async () => {
  await page.getByRole('link', { name: 'Servers' }).click();
  const usage = page.locator('details', { hasText: 'over the last hour' }).first();
  await usage.locator('summary').click();
  await usage.getByRole('img', { name: 'Disk used over time' }).waitFor({ timeout: 30_000 });
  // Samples reach the minute rollup within a minute or two of the app's start.
  const deadline = Date.now() + 150_000;
  const row = usage.getByRole('table').getByRole('link', { name: `web${id}` });
  while (!(await row.count())) {
    assert.ok(Date.now() < deadline, 'the app is among the top contributors');
    await page.waitForTimeout(5_000);
    await usage.getByRole('button', { name: /^Refresh usage of / }).click();
  }
  await shot(page, '06d-server-usage');
  assertNoErrors(page, [noPolicyYet]);
  await page.goto(`${state.resourceUrl}/overview`);
});

test("a crash of the app leaves its last lines on the logs tab after Docker starts it again", async () => {
  const resourceId = state.resourceUrl.split('/').pop();
  const container = execFileSync('docker', ['ps', '-q', '--filter', `label=berth.dev/resource=${resourceId}`]).toString().trim().split('\n')[0];
  assert.ok(container, 'the app runs in a container');
  execFileSync('docker', ['exec', container, 'touch', '/tmp/crash-now']);
  await page.getByRole('link', { name: 'Logs' }).click();
  const headline = page.getByTestId('crash-headline');
  const deadline = Date.now() + 60_000;
  while (!(await headline.count())) {
    assert.ok(Date.now() < deadline, 'the crash is on the logs tab');
    await page.waitForTimeout(2_000);
    await page.getByRole('button', { name: 'Read again' }).click();
  }
  assert.match(await headline.textContent(), /stopped with exit code 3/);
  await page.getByLabel('Its last lines of output').getByText(lastWords).waitFor();
  await shot(page, '06e-crash');
  assertNoErrors(page);
});

test("the terminal runs a command in the app's container", async () => {
  await page.getByRole('link', { name: 'Terminal' }).click();
  await page.getByRole('button', { name: 'Open terminal' }).click();
  await page.locator('.badge', { hasText: 'connected' }).waitFor({ timeout: 30_000 });
  await page.locator('.xterm-helper-textarea').focus();
  await page.keyboard.type(`echo term-$((6*7))-${id}\n`);
  await page.locator('.xterm-rows', { hasText: `term-42-${id}` }).waitFor({ timeout: 15_000 });
  await shot(page, '07-terminal');
  await page.getByRole('button', { name: 'Disconnect' }).click();
  await page.getByRole('button', { name: 'Reconnect' }).waitFor();
  assertNoErrors(page);
});

test('a secret is set, rotated and deleted and its value never reaches the DOM', async () => {
  await page.getByRole('link', { name: 'Configuration' }).click();
  // The start command the app was created with is there, and saving it again is accepted.
  const start = page.getByLabel('Start command');
  assert.match(await start.inputValue(), new RegExp(greeting));
  await page.getByRole('button', { name: 'Save start command' }).click();
  await page.getByRole('status').getByText('Saved').waitFor();
  await page.getByLabel('Secret key').fill('SESSION_KEY');
  await page.getByLabel('Secret value').fill(secretValue);
  await page.getByRole('button', { name: 'Add secret' }).click();
  await page.getByRole('status').getByText('Secret SESSION_KEY created').waitFor();
  await assertNotInDom(page, secretValue, 'the new secret');
  await page.getByRole('button', { name: 'Rotate secret SESSION_KEY' }).click();
  await page.getByLabel('New value for SESSION_KEY').fill(rotatedValue);
  await page.getByRole('button', { name: 'Save new value' }).click();
  await page.getByRole('status').getByText('Secret SESSION_KEY rotated').waitFor();
  await assertNotInDom(page, rotatedValue, 'the rotated secret');
  await shot(page, '08-configuration');
  await page.getByRole('button', { name: 'Delete secret SESSION_KEY' }).click();
  await page.getByRole('status').getByText('Secret SESSION_KEY deleted').waitFor();
  assert.equal(await page.getByRole('button', { name: 'Delete secret SESSION_KEY' }).count(), 0);
  assertNoErrors(page);
});

test('a redeploy succeeds and a rollback serves the first attempt again', async () => {
  await page.getByRole('link', { name: 'Deployments' }).click();
  await newAttemptSucceeds(() => page.locator('div.row').getByRole('button', { name: 'Deploy', exact: true }).click());
  await newAttemptSucceeds(async () => {
    await page.getByRole('button', { name: 'Roll back to this' }).first().click();
    await page.getByRole('button', { name: 'Confirm roll back' }).click();
  });
  // The history lists the first deploy, the redeploy and the rollback.
  await page.waitForFunction(() => document.querySelectorAll('table tbody tr').length >= 3);
  await shot(page, '09-rolled-back');
  assertNoErrors(page);
});

/** Creates an application of `source` over REST in the flow's project and environment. */
async function createApplication(name, source, extra = {}) {
  const api = await rest(owner.email, owner.password);
  const project = state.projectUrl.split('/').pop();
  const environments = await api.get(`/environments?projectId=${project}`);
  return api.post('/resources', {
    projectId: project,
    environmentId: environments.items[0].id,
    name,
    kind: 'application',
    serverId,
    source,
    networkProfile: { internalPort: 8080 },
    ...extra,
  });
}

test('a slow build is cancelled from its deployment page', async () => {
  const created = await createApplication(`slow${id}`, { kind: 'local-folder', locator: slowFolder });
  state.slow = created.id;
  await page.goto(`${origin()}/resources/${created.id}/deployments`);
  await page.getByRole('button', { name: 'Cancel deployment' }).click({ timeout: 60_000 });
  await page.getByRole('button', { name: 'Confirm cancel' }).click();
  await attemptEnded('canceled', 60_000);
  await shot(page, '10-canceled');
  assertNoErrors(page);
});

test("a resource's network and access profiles are edited on its Configuration tab", async () => {
  await page.goto(`${origin()}/resources/${state.slow}/configuration`);
  await page.getByLabel('Port it listens on').fill('8081');
  await page.getByLabel('Exposure').selectOption('reverse-proxy');
  await page.getByRole('button', { name: 'Save network profile' }).click();
  await page.getByRole('status').filter({ hasText: 'Network profile saved' }).waitFor();
  await page.getByLabel('Generated address').selectOption('disabled');
  await page.getByLabel('Path prefix').fill('/shop');
  await page.getByRole('button', { name: 'Save access profile' }).click();
  await page.getByRole('status').filter({ hasText: 'Access profile saved' }).waitFor();
  await shot(page, '10b-profiles');
  // Stored on the resource, and what the page shows after a reload.
  const { networkProfile, accessProfile } = await (await rest(owner.email, owner.password)).get(`/resources/${state.slow}`);
  assert.equal(networkProfile.internalPort, 8081);
  assert.deepEqual([accessProfile.generatedAccessMode, accessProfile.pathPrefix], ['disabled', '/shop']);
  await page.reload();
  assert.equal(await page.getByLabel('Port it listens on').inputValue(), '8081');
  assert.equal(await page.getByLabel('Path prefix').inputValue(), '/shop');
  assertNoErrors(page);
});

test("a git source's deployed commit is on its overview and in its history", async () => {
  const created = await createApplication(
    `git${id}`,
    { kind: 'git-public', locator: git.url, gitRef: 'main' },
    { runtimeProfile: { healthCheck: { path: '/', intervalSeconds: 1, retries: 2 } } },
  );
  state.git = created.id;
  const commit = new RegExp(`${git.sha.slice(0, 7)}\\s+Console revision\\s+\\(Ada Tester\\)`);
  await page.goto(`${origin()}/resources/${created.id}/deployments`);
  await attemptEnded('succeeded');
  const attempt = page.locator('table tbody tr').first();
  await attempt.getByText('Console revision').waitFor();
  assert.match(await attempt.textContent(), commit);
  await page.goto(`${origin()}/resources/${created.id}/overview`);
  const deployed = page.locator('dt', { hasText: 'Deployed commit' }).locator('xpath=following-sibling::dd[1]');
  await deployed.waitFor();
  assert.match(await deployed.textContent(), commit);
  await shot(page, '10b-deployed-commit');
  assertNoErrors(page);
});

test('a domain is bound and unbound', async () => {
  await page.goto(`${state.resourceUrl}/domains`);
  await page.getByLabel('Domain name').fill(`shop-${id}.test`);
  await page.getByLabel('TLS').selectOption('disabled');
  await page.getByRole('button', { name: 'Bind domain' }).click();
  await page.getByRole('cell', { name: `shop-${id}.test` }).waitFor();
  await shot(page, '11-domains');
  await page.getByRole('button', { name: 'Unbind' }).click();
  await page.getByRole('button', { name: `Confirm unbind shop-${id}.test` }).click();
  await page.getByText('No custom domain').waitFor({ timeout: 30_000 });
  assertNoErrors(page);
});

test('a volume is created, attached, detached and deleted', async () => {
  await page.goto(`${state.resourceUrl}/storage`);
  await page.getByLabel('New volume name').fill(`data-${id}`);
  await page.getByRole('button', { name: 'Create volume' }).click();
  await page.getByRole('status').getByText(`Volume data-${id} created`).waitFor();
  await page.getByLabel('Path in the container').fill('/srv/data');
  await page.getByRole('button', { name: 'Attach volume' }).click();
  await page.getByRole('status').getByText('Attached at /srv/data').waitFor();
  await page.getByRole('cell', { name: '/srv/data', exact: true }).first().waitFor();
  await shot(page, '11b-storage');
  await page.getByRole('button', { name: `Detach data-${id}` }).click();
  await page.getByRole('status').getByText('Detached from /srv/data').waitFor();
  await page.getByRole('button', { name: `Delete volume data-${id}` }).click();
  await page.getByRole('button', { name: `Confirm delete data-${id}` }).click();
  await page.getByRole('status').getByText(`Volume data-${id} deleted`).waitFor();
  assertNoErrors(page);
});

test("a volume's files are backed up from the Storage page, proven, kept by a policy and restored into a new volume", async () => {
  const api = await rest(owner.email, owner.password);
  const projectId = state.projectUrl.split('/').pop();
  const environments = await api.get(`/environments?projectId=${projectId}`);
  const folder = `/tmp/berth-console-volume-${id}`;
  mkdirSync(`${folder}/img`, { recursive: true });
  for (const [path, text] of [['img/a', 'one'], ['img/b', 'two'], ['c', 'three']]) writeFileSync(`${folder}/${path}`, text);
  const target = `Shelf ${id}`;
  await api.post('/backup-targets', { name: target, kind: 'server-directory', serverId, path: `/tmp/berth-console-backups-${id}` });
  for (let tries = 0; !(await api.get('/backup-targets')).items.some((t) => t.name === target && t.ready); tries++) {
    assert.ok(tries < 60, `backup target ${target} ready`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  const name = `files-${id}`;
  const volume = await api.post('/storage-volumes', { projectId, environmentId: environments.items[0].id, name, kind: 'bind-mount', sourcePath: folder });

  await page.goto(`${state.resourceUrl}/storage`);
  await page.getByRole('button', { name: `Backups of ${name}` }).click();
  await page.getByRole('heading', { name: `Backups of ${name}` }).waitFor();
  await page.getByTestId('volume-restore-point').filter({ hasText: 'No proven restore point yet' }).waitFor();
  const now = page.getByRole('form', { name: 'Back up this volume now' });
  await now.getByLabel('Target').selectOption({ label: target });
  await now.getByRole('button', { name: 'Back up now' }).click();
  await page.getByRole('status').filter({ hasText: /Backup \S+ of .* started/ }).waitFor();
  // Followed by the page until proven: no reload.
  const verified = page.getByRole('table', { name: 'Volume backups' }).getByRole('row').filter({ hasText: 'verified' });
  await verified.waitFor({ timeout: 120_000 });
  assert.match(await verified.textContent(), /3 files/);
  await page.getByTestId('volume-restore-point').filter({ hasText: '3 files' }).waitFor();

  const policy = page.getByRole('form', { name: 'Backup policy' });
  await policy.getByLabel('Every (hours)').fill('12');
  await policy.getByLabel('Keep the newest').fill('3');
  await policy.getByRole('button', { name: 'Save policy' }).click();
  await page.getByRole('status').filter({ hasText: 'every 12 h, the newest 3 kept' }).waitFor();
  await page.getByTestId('backup-policy').filter({ hasText: /every 12 h[\s\S]*next backup/ }).waitFor({ timeout: 30_000 });
  const { items } = await api.get(`/storage-volumes/backup-policies?storageVolumeId=${volume.id}`);
  assert.equal(items[0].keepLast, 3);
  await shot(page, '11c-volume-backups');

  await verified.getByRole('button', { name: /^Restore / }).click();
  const dialog = page.getByRole('form', { name: 'Restore volume backup' });
  await dialog.getByLabel('New volume name').fill(`${name} copy`);
  assert.match(await page.getByTestId('volume-restored-into').textContent(), /3 files/);
  await dialog.getByRole('button', { name: `Restore into ${name} copy` }).click();
  await verified.getByText('completed').waitFor({ timeout: 120_000 });
  await page.getByRole('cell', { name: `${name} copy`, exact: true }).waitFor();
  assertNoErrors(page);
});

test('a deploy token secret is shown once and gone after leaving the page', async () => {
  await page.getByRole('link', { name: 'Deploy tokens' }).click();
  await page.getByLabel('Token name').fill(`ci-${id}`);
  await page.getByRole('button', { name: 'Create token' }).click();
  const token = await page.getByTestId('token-secret').textContent();
  assert.match(token, /^bdt_/, 'the new secret is shown');
  await shot(page, '12-token');
  await page.getByRole('link', { name: 'Projects' }).click();
  await page.getByRole('link', { name: 'Deploy tokens' }).click();
  await page.getByRole('cell', { name: `ci-${id}` }).waitFor();
  await assertNotInDom(page, token, 'the deploy token secret');
  assertNoErrors(page);
});

test("a member's console offers no administrator actions", async () => {
  const memberPage = await newPage(browser, { width: 390, height: 844 });
  await signIn(memberPage, member.email, member.password);
  await memberPage.goto(`${state.resourceUrl}/settings`);
  await memberPage.getByText('Only administrators of this organization delete resources.').waitFor();
  assert.equal(await memberPage.getByRole('button', { name: 'Delete resource' }).count(), 0);
  await memberPage.getByRole('link', { name: 'Terminal' }).click();
  await memberPage.getByText('Terminals are for administrators').waitFor();
  await memberPage.getByRole('link', { name: 'Deploy tokens' }).click();
  await memberPage.getByText('managed by the organization').waitFor();
  await shot(memberPage, '13-member-phone');
  assertNoErrors(memberPage);
  await memberPage.context().close();
});

test('the resource is deleted after typing its slug', async () => {
  const others = [state.slow, state.git].map((resource) => `${origin()}/resources/${resource}`);
  for (const resource of [state.resourceUrl, ...others]) {
    await page.goto(`${resource}/settings`);
    const slug = await page.locator('.danger-zone p code').textContent();
    await page.getByLabel('Resource slug').fill(slug);
    await page.getByRole('button', { name: 'Delete resource' }).click();
    await page.getByRole('heading', { name: 'Resources' }).waitFor();
  }
  await shot(page, '14-deleted');
  assertNoErrors(page);
});
