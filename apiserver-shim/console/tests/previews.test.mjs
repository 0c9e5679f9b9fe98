// A resource's Previews tab as a user drives it, in a real Chromium against the real stack. The
// resource is bound to the stack's git repository (made through the API with the ready server,
// never deployed itself); its webhook secret comes from enabling auto-deploy, as a user gets it.
// Pull request events are delivered to the public webhook endpoint signed with that secret, as
// GitHub signs them: the only way a preview is made. On the tab: no previews, and how they
// start; the default policy, under which a fork's pull request gets nothing; a time to live out
// of range and a host name template with an unknown token refused at their fields; a policy
// saved that lets forks in, one preview at a time, for 24 hours, without databases; a fork's pull request then deploys its head commit and serves at its own URL, a
// second one waits for the quota saying why, both seen by a member on a phone; each is cleaned
// up after a confirmation (one with the keyboard alone), the wait shown; the list is empty again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { env, origin, launch, newPage, shot, signIn, assertNoErrors, rest, suffix } from './support.mjs';

const DEPLOY = 240_000;
/** The answer of a clean-up waits up to 45 s; the list then drops it. */
const CLEANUP = 90_000;
const owner = { email: env('BERTH_CONSOLE_OWNER_EMAIL'), password: env('BERTH_CONSOLE_OWNER_PASSWORD') };
const member = { email: env('BERTH_CONSOLE_MEMBER_EMAIL'), password: env('BERTH_CONSOLE_MEMBER_PASSWORD') };
const serverId = env('BERTH_CONSOLE_SERVER_ID');
const git = { url: env('BERTH_CONSOLE_GIT_URL'), sha: env('BERTH_CONSOLE_GIT_SHA') };
const id = suffix();
const slug = `prev${id}`;
// The repository as a git host names it, and a contributor's fork of it.
const repositoryName = new URL(git.url).pathname.split('/').pop().replace(/\.git$/, '');
const base = `stack/${repositoryName}`;
const fork = `contributor-${id}/${repositoryName}`;
// The saved policy is refused first for a time to live out of range (as the API answers).
const refusedSave = /^4\d\d POST .*\/api\/preview-policies$/;

let browser;
let page;
let api;
const state = {};

before(async () => {
  browser = await launch();
  page = await newPage(browser);
  api = await rest(owner.email, owner.password);
  state.projectId = (await api.post('/projects', { name: `Previews ${id}` })).id;
  const environment = await api.post('/environments', { projectId: state.projectId, name: 'production', kind: 'production' });
  const resource = await api.post('/resources', {
    projectId: state.projectId,
    environmentId: environment.id,
    name: slug,
    slug,
    kind: 'application',
    serverId,
    source: { kind: 'git-public', locator: git.url, gitRef: 'main' },
    networkProfile: { internalPort: 8080 },
    runtimeProfile: { healthCheck: { path: '/', intervalSeconds: 1, retries: 2 } },
    // Production is not deployed: only the previews are.
    firstDeployment: 'on-request',
  });
  state.resourceId = resource.id;
  const autoDeploy = await api.post(`/resources/${resource.id}/auto-deploy`, { mode: 'enable', refs: ['refs/heads/main'] });
  state.secret = autoDeploy.webhookSecret;
  assert.ok(state.secret, 'enabling auto-deploy shows the webhook secret once');
  state.tab = `${origin()}/resources/${resource.id}/previews`;
});

after(async () => {
  await browser?.close();
  if (!state.resourceId) return;
  // Whatever a failed step left: its previews, the resource, the project.
  const left = await api.get(`/preview-environments?resourceId=${state.resourceId}`).catch(() => ({ items: [] }));
  for (const preview of left.items) await api.del(`/preview-environments/${preview.previewEnvironmentId}`).catch(() => {});
  await api.del(`/resources/${state.resourceId}`, { confirmation: { resourceSlug: slug } }).catch(() => {});
  await api.del(`/projects/${state.projectId}`, { confirmation: { projectId: state.projectId } }).catch(() => {});
});

/**
 * Delivers a GitHub `pull_request` event (`action`) of pull request `number`, its head the
 * fork's `main` at the repository's commit, signed with the resource's webhook secret: what
 * the receipt says of this resource's preview.
 */
async function pullRequest(number, action = 'opened') {
  const payload = {
    action,
    number,
    pull_request: {
      number,
      state: action === 'closed' ? 'closed' : 'open',
      head: { ref: 'main', sha: git.sha, repo: { full_name: fork, clone_url: git.url } },
      base: { ref: 'main', repo: { full_name: base, clone_url: git.url } },
    },
    repository: { full_name: base, clone_url: git.url, default_branch: 'main' },
  };
  const body = JSON.stringify(payload);
  const response = await fetch(`${origin()}/api/webhooks/github`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-GitHub-Event': 'pull_request',
      'X-GitHub-Delivery': `console-${id}-${number}-${action}-${suffix()}`,
      'X-Hub-Signature-256': `sha256=${createHmac('sha256', state.secret).update(body).digest('hex')}`,
    },
    body,
  });
  const receipt = await response.json();
  assert.equal(response.status, 202, JSON.stringify(receipt));
  const entry = receipt.previews?.find((p) => p.resourceId === state.resourceId);
  assert.ok(entry, `the receipt names the resource's preview: ${JSON.stringify(receipt)}`);
  return entry;
}

/** The card of pull request `number` in the list. */
const card = (number, on = page) =>
  on.getByRole('list', { name: 'Previews of pull requests' }).getByRole('listitem').filter({ has: on.getByRole('heading', { name: `PR #${number}`, exact: true }) });

/** The value shown for `term` in a card's facts. */
const fact = (item, term) => item.locator('dt', { hasText: term }).locator('xpath=following-sibling::dd[1]');

const policyForm = () => page.getByRole('form', { name: 'Preview policy' });
const scope = () => ({ kind: 'resource', projectId: state.projectId, resourceId: state.resourceId });

test('a resource without previews says how they start, and shows the default policy', async () => {
  await signIn(page, owner.email, owner.password);
  await page.goto(`${origin()}/resources/${state.resourceId}/settings`);
  await page.getByRole('link', { name: 'Previews', exact: true }).click();
  await page.waitForURL(/\/previews$/);
  await page.getByRole('heading', { name: 'Previews', exact: true }).waitFor();
  const empty = page.getByTestId('previews-empty');
  await empty.getByRole('heading', { name: 'No previews yet' }).waitFor();
  const text = await empty.textContent();
  assert.ok(text.includes(git.url), `names the bound repository: ${text}`);
  assert.ok(text.includes(`${origin()}/api/webhooks/github`), `names where the webhook delivers: ${text}`);
  assert.match(text, /pull request events/);
  assert.equal(
    await empty.getByRole('link', { name: 'Configuration → Auto-deploy' }).getAttribute('href'),
    `/resources/${state.resourceId}/configuration`,
    'links to where the webhook secret is shown',
  );
  // The defaults, said to be the defaults.
  await page.getByTestId('preview-policy-source').getByText('Defaults', { exact: true }).waitFor();
  assert.equal(await page.getByLabel('Previews for pull requests from the repository itself').isChecked(), true);
  assert.equal(await page.getByLabel('Pull requests from forks').inputValue(), 'disabled');
  assert.equal(await page.getByLabel("Previews get the resource's secrets").isChecked(), true);
  assert.equal(await page.getByLabel('Max active previews').inputValue(), '');
  assert.equal(await page.getByLabel('Time to live (hours)').inputValue(), '');
  assert.match(await page.getByLabel('Equivalent berth command').first().textContent(), new RegExp(`berth previews list --resource ${slug}`));
  await shot(page, 'previews-01-empty');

  // Under the defaults a fork's pull request gets no preview, and the list stays empty.
  const ignored = await pullRequest(40);
  assert.deepEqual([ignored.action, ignored.reason], ['ignored', 'preview-fork-disabled']);
  const listed = page.waitForResponse((r) => r.url().includes('/api/preview-environments?') && r.request().method() === 'GET');
  await page.getByRole('button', { name: 'Refresh' }).click();
  assert.equal((await listed).status(), 200);
  await empty.waitFor();
  assertNoErrors(page);
});

test('the policy form refuses a time to live out of range at its field, then saves', async () => {
  const ttl = page.getByLabel('Time to live (hours)');
  await page.getByLabel('Pull requests from forks').selectOption('without-secrets');
  await page.getByLabel('Max active previews').fill('1');
  await ttl.fill('9000');
  await policyForm().getByRole('button', { name: 'Save preview policy' }).click();
  const refusal = page.locator('#pp-ttl-error');
  await refusal.waitFor();
  assert.equal(await refusal.getAttribute('role'), 'alert');
  assert.match(await refusal.textContent(), /previewTtlHours must be from 1 to 8760/);
  assert.equal(await ttl.getAttribute('aria-invalid'), 'true');
  assert.match(await ttl.getAttribute('aria-describedby'), /pp-ttl-error/);
  assert.ok(await ttl.evaluate((input) => input === document.activeElement), 'the refused field has the focus');
  assert.equal((await api.post('/preview-policies/show', { scope: scope() })).policy.source, 'default', 'nothing was saved');
  await shot(page, 'previews-02-refused');

  // Then a host name template with a token Berth does not know, refused at its own field.
  await ttl.fill('24');
  const template = page.getByLabel('Host name template');
  await template.fill('pr-{number}.preview.example.com');
  await policyForm().getByRole('button', { name: 'Save preview policy' }).click();
  const templateRefusal = page.locator('#pp-domain-error');
  await templateRefusal.waitFor();
  assert.match(await templateRefusal.textContent(), /previewDomainTemplate gives no host name/);
  assert.ok(await template.evaluate((input) => input === document.activeElement), 'the refused template has the focus');
  assert.equal((await api.post('/preview-policies/show', { scope: scope() })).policy.source, 'default', 'nothing was saved');

  await template.fill('');
  await page.getByLabel('Databases').selectOption('none');
  await policyForm().getByRole('button', { name: 'Save preview policy' }).click();
  await page.getByRole('status').getByText('Preview policy saved for this resource').waitFor();
  await page.getByTestId('preview-policy-source').getByText('Configured for this resource', { exact: true }).waitFor();
  assert.equal(await page.locator('#pp-ttl-error, #pp-domain-error').count(), 0, 'the refusals are gone');
  const { policy } = await api.post('/preview-policies/show', { scope: scope() });
  assert.equal(policy.source, 'configured');
  assert.deepEqual(
    [policy.settings.forkPreviews, policy.settings.maxActivePreviews, policy.settings.previewTtlHours, policy.settings.sameRepositoryPreviews],
    ['without-secrets', 1, 24, true],
  );
  assert.deepEqual(
    [policy.settings.previewDomainTemplate, policy.settings.previewTlsMode, policy.settings.previewDatabases],
    [undefined, 'disabled', 'none'],
  );
  // What the form shows after a reload is what was stored.
  await page.reload();
  await page.getByTestId('preview-policy-source').getByText('Configured for this resource', { exact: true }).waitFor();
  assert.equal(await page.getByLabel('Pull requests from forks').inputValue(), 'without-secrets');
  assert.equal(await page.getByLabel('Max active previews').inputValue(), '1');
  assert.equal(await page.getByLabel('Time to live (hours)').inputValue(), '24');
  assert.equal(await page.getByLabel('Databases').inputValue(), 'none');
  assert.equal(await page.getByLabel('Host name template').inputValue(), '');
  await shot(page, 'previews-03-policy-saved');
  assertNoErrors(page, [refusedSave]);
});

test("a fork's pull request deploys its head commit, which serves at the preview's own URL", async () => {
  const created = await pullRequest(41);
  assert.equal(created.action, 'created', JSON.stringify(created));
  state.first = created.previewEnvironmentId;
  // The tab reads the list again by itself (previews are not on the change feed).
  const item = card(41);
  await item.waitFor({ timeout: 30_000 });
  await item.getByText('fork', { exact: true }).waitFor();
  await item.getByText('without secrets', { exact: true }).waitFor();
  assert.match(await fact(item, 'Branch').textContent(), new RegExp(`main\\s+of ${fork.replace('/', '\\/')}\\s+→\\s+main`));
  assert.equal((await fact(item, 'Commit').textContent()).trim(), git.sha.slice(0, 7));
  assert.match(await fact(item, 'Opened').textContent(), /s ago|min ago/);
  await shot(page, 'previews-04-deploying');

  // Deploying, then ready: the URL becomes a link, and it serves the pull request's commit.
  await item.getByText('Ready', { exact: true }).waitFor({ timeout: DEPLOY });
  const link = fact(item, 'URL').getByRole('link');
  await link.waitFor();
  const url = await link.getAttribute('href');
  assert.equal(await link.getAttribute('target'), '_blank');
  assert.match(await fact(item, 'Expires').textContent(), /in 2[34] h/);
  await shot(page, 'previews-05-ready');
  const app = await browser.newPage();
  const answer = await app.goto(url);
  assert.equal(answer.status(), 200, `${url} serves the preview`);
  assert.match(await app.textContent('body'), /console git revision/);
  await app.close();
  assertNoErrors(page);
});

test('a second pull request waits for the quota, saying why; a member sees both on a phone', async () => {
  const created = await pullRequest(42);
  assert.equal(created.action, 'created', JSON.stringify(created));
  const item = card(42);
  await item.getByText('Waiting for quota', { exact: true }).waitFor({ timeout: 60_000 });
  assert.match(await item.textContent(), /maxActivePreviews/);
  assert.equal(await fact(item, 'URL').getByRole('link').count(), 0, 'no link before it serves');
  await shot(page, 'previews-06-waiting');
  assertNoErrors(page);

  const phone = await newPage(browser, { width: 390, height: 844 });
  await signIn(phone, member.email, member.password);
  await phone.goto(state.tab);
  await card(41, phone).getByText('Ready', { exact: true }).waitFor();
  await card(42, phone).getByText('Waiting for quota', { exact: true }).waitFor();
  await phone.waitForFunction(() => !document.querySelector('[aria-busy=true]'));
  const extra = await phone.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.equal(extra, 0, 'the tab fits a 390 px wide screen');
  assert.equal(await card(41, phone).getByRole('button', { name: 'Clean up PR #41…' }).count(), 1, 'a member may clean up');
  await shot(phone, 'previews-07-member-phone');
  assertNoErrors(phone);
  await phone.context().close();
});

test('a clean-up is confirmed first, with the keyboard too, shows its wait, and empties the list', async () => {
  // The waiting one, with the keyboard alone: the confirmation takes the focus on "Keep".
  const waiting = card(42);
  await waiting.getByRole('button', { name: 'Clean up PR #42…' }).focus();
  await page.keyboard.press('Enter');
  const keep = waiting.getByRole('button', { name: 'Keep preview' });
  await keep.waitFor();
  assert.ok(await keep.evaluate((button) => button === document.activeElement), 'the confirmation has the focus');
  await page.keyboard.press('Enter');
  const again = waiting.getByRole('button', { name: 'Clean up PR #42…' });
  await again.waitFor();
  assert.ok(await again.evaluate((button) => button === document.activeElement), 'keeping gives the focus back to "Clean up"');
  assert.equal((await api.get(`/preview-environments?resourceId=${state.resourceId}`)).items.length, 2, 'keeping removes nothing');
  await page.keyboard.press('Enter');
  await keep.waitFor();
  await page.keyboard.press('Shift+Tab');
  const progress42 = waiting.getByRole('progressbar', { name: 'Cleaning up PR #42' }).waitFor();
  await page.keyboard.press('Enter');
  await progress42;
  await page.getByRole('status').getByText(/The preview of PR #42 (is cleaned up|was already gone|is still being removed)/).waitFor({ timeout: CLEANUP });
  await waiting.waitFor({ state: 'detached', timeout: CLEANUP });

  // The serving one: its containers and route go while the wait is shown.
  const serving = card(41);
  await serving.getByRole('button', { name: 'Clean up PR #41…' }).click();
  const group = serving.getByRole('group', { name: 'Confirm clean-up of PR #41' });
  assert.match((await group.textContent()).replace(/\s+/g, ' '), /pull request stays open/);
  // Watched from before the click: the wait lasts as long as the removal does.
  const progress41 = serving.getByRole('progressbar', { name: 'Cleaning up PR #41' }).waitFor();
  const said = serving.getByRole('status').filter({ hasText: /Cleaning up PR #41: removing its containers, route/ }).waitFor();
  await group.getByRole('button', { name: 'Clean up PR #41', exact: true }).click();
  await Promise.all([progress41, said]);
  await shot(page, 'previews-08-cleaning');
  const outcome = page.getByRole('status').getByText(/The preview of PR #41 (is cleaned up|is still being removed)/);
  await outcome.waitFor({ timeout: CLEANUP });
  await serving.waitFor({ state: 'detached', timeout: CLEANUP });
  await page.getByTestId('previews-empty').waitFor();
  assert.deepEqual((await api.get(`/preview-environments?resourceId=${state.resourceId}`)).items, []);
  await shot(page, 'previews-09-cleaned');
  assertNoErrors(page);
});
