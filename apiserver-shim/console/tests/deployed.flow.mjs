// Issue 47 in the console: a resource whose declared spec is not what serves says so on its
// page ("Changes not deployed", the fields, what still serves), live as the change lands; its
// Deploy button starts an attempt of the spec as it is now, and the notice goes once that
// attempt serves. Named `.flow.mjs`, so `node --test tests/` leaves it to its own test
// (console_browser.rs runs it alone).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, origin, launch, newPage, shot, signIn, assertNoErrors, rest, suffix } from './support.mjs';

const DEPLOY = 240_000;
const owner = { email: env('BERTH_CONSOLE_OWNER_EMAIL'), password: env('BERTH_CONSOLE_OWNER_PASSWORD') };
const serverId = env('BERTH_CONSOLE_SERVER_ID');
const id = suffix();
const slug = `pending${id}`;

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
  await browser?.close();
});

/** Polls `check` (async, truthy when done) every second until `timeout`. */
async function until(check, what, timeout = DEPLOY) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    last = await check();
    if (last) return last;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  assert.fail(`timed out waiting for ${what}`);
}

const deployedState = async () => (await api.get(`/resources/${state.resourceId}`)).deployedState;

const notice = () => page.getByRole('status', { name: 'Changes not deployed' });

test('a deployed resource shows no notice; a changed runtime profile shows one, live', async () => {
  const project = await api.post('/projects', { name: `Deployed ${id}` });
  const environment = await api.post('/environments', { projectId: project.id, name: 'production', kind: 'production' });
  const resource = await api.post('/resources', {
    projectId: project.id,
    environmentId: environment.id,
    name: slug,
    slug,
    kind: 'application',
    serverId,
    source: { kind: 'docker-image', locator: 'berth/sample-app:1' },
    networkProfile: { internalPort: 8080 },
    runtimeProfile: { healthCheck: { path: '/', intervalSeconds: 1, retries: 2 } },
  });
  state.resourceId = resource.id;
  const first = await until(async () => {
    const deployed = await deployedState();
    return deployed?.upToDate ? deployed : null;
  }, 'the first attempt to serve the declared spec');
  state.firstDeployment = first.deploymentId;

  await signIn(page, owner.email, owner.password);
  await page.goto(`${origin()}/resources/${state.resourceId}/overview`);
  await page.getByRole('heading', { name: slug }).waitFor();
  assert.equal(await notice().count(), 0, 'no notice while the declared spec serves');

  // Changed as a GitOps tool or another person would: not in this page.
  await api.post(`/resources/${state.resourceId}/runtime-profile`, {
    runtimeProfile: { startCommand: 'echo changed > /www/changed.txt; exec /bin/sample-app' },
  });
  await notice().waitFor({ timeout: 60_000 });
  const text = await notice().textContent();
  assert.match(text, /Changes not deployed:\s*runtimeProfile changed/);
  assert.ok(text.includes(state.firstDeployment), `names what still serves: ${text}`);
  await shot(page, 'deployed-01-changes-not-deployed');
  assertNoErrors(page);
});

test('Deploy starts an attempt of the declared spec, and the notice goes once it serves', async () => {
  await notice().getByRole('button', { name: 'Deploy' }).click();
  await page.waitForURL(/\/deployments\?deployment=/);
  const attempt = new URL(page.url()).searchParams.get('deployment');
  assert.ok(attempt && attempt !== state.firstDeployment, `a new attempt: ${page.url()}`);
  await page.locator('section.attempt[data-status="succeeded"]').waitFor({ timeout: DEPLOY });
  const deployed = await until(async () => {
    const now = await deployedState();
    return now?.upToDate ? now : null;
  }, 'the new attempt to serve the declared spec');
  assert.equal(deployed.deploymentId, attempt);
  assert.deepEqual(deployed.changesNotDeployed ?? [], []);
  await notice().waitFor({ state: 'detached', timeout: 60_000 });
  await shot(page, 'deployed-02-deployed');
  assertNoErrors(page);
  // What the new spec's start command wrote is served: the attempt ran the changed spec.
  const shown = await api.get(`/resources/${state.resourceId}`);
  const url = shown.accessSummary?.latestGeneratedAccessRoute?.url;
  assert.ok(url, `the resource has a URL: ${JSON.stringify(shown.accessSummary)}`);
  const app = await browser.newPage();
  const answer = await app.goto(new URL('/changed.txt', url).href);
  assert.equal(answer.status(), 200, `${url}changed.txt`);
  await app.close();
  await api.del(`/resources/${state.resourceId}`, { confirmation: { resourceSlug: slug } });
});
