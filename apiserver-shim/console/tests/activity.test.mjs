// The activity and policies pages as an owner drives them, in a real Chromium against the real
// stack: a resource created through the API appears in the live change feed as it happens
// (and its deletion too), the audit trail says who created it; a threshold policy is saved for
// a project one rule at a time and listed, a retention default is changed; a member sees the
// policies without the administrators' forms.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, origin, launch, newPage, shot, signIn, assertNoErrors, noPolicyYet, rest, suffix } from './support.mjs';

const owner = { email: env('BERTH_CONSOLE_OWNER_EMAIL'), password: env('BERTH_CONSOLE_OWNER_PASSWORD') };
const member = { email: env('BERTH_CONSOLE_MEMBER_EMAIL'), password: env('BERTH_CONSOLE_MEMBER_PASSWORD') };
const id = suffix();
const projectName = `Activity ${id}`;
// Opening a scope without a policy yet asks for it and is answered 404: the page says so.

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
  if (state.projectId) await api.del(`/projects/${state.projectId}`, { confirmation: { projectId: state.projectId } }).catch(() => {});
  await browser?.close();
});

/** Clicks `refresh` until `locator` shows (the audit is written just after the change). */
async function refreshUntil(locator, refresh, tries = 20) {
  for (let i = 0; i < tries; i++) {
    if (await locator.count()) return;
    await refresh.click();
    await page.waitForTimeout(1000);
  }
  await locator.first().waitFor({ timeout: 5_000 });
}

test('a resource created through the API appears in the live feed, then in the audit trail', async () => {
  await signIn(page, owner.email, owner.password);
  // The feed sends what changes after it connected: wait for its answer before changing things.
  const streaming = page.waitForResponse((r) => r.url().includes('/api/events/stream'));
  await page.goto(`${origin()}/activity`);
  await page.getByRole('heading', { name: 'Activity' }).waitFor();
  await streaming;

  const project = await api.post('/projects', { name: projectName });
  state.projectId = project.id;
  const environment = await api.post('/environments', { projectId: project.id, name: 'production', kind: 'production' });
  const resource = await api.post('/resources', {
    projectId: project.id,
    environmentId: environment.id,
    name: `feed${id}`,
    kind: 'application',
  });
  state.resource = resource;

  const feed = page.getByTestId('changes');
  await feed.getByRole('link', { name: resource.id }).first().waitFor({ timeout: 30_000 });
  const row = feed.locator('tr', { hasText: resource.id }).first();
  assert.match(await row.textContent(), /resource/);
  assert.match(await page.getByLabel('Equivalent berth command').first().textContent(), /berth events/);
  await shot(page, 'activity-01-feed');

  const audit = page.getByTestId('audit-events');
  const created = audit.locator('tr', { hasText: resource.id }).filter({ hasText: 'resource.created' });
  await refreshUntil(created, page.getByRole('button', { name: 'Refresh audit events' }));
  assert.match(await created.first().textContent(), new RegExp(owner.email.replace(/[.+]/g, '\\$&')), 'the audit names who created it');

  // Filtering the audit by the object keeps only its events.
  await page.getByLabel('Object id').fill(resource.id);
  await page.getByRole('button', { name: 'Filter audit events' }).click();
  await page.waitForFunction(
    (wanted) => [...document.querySelectorAll('[data-testid=audit-events] tbody tr')].every((r) => r.textContent.includes(wanted)),
    resource.id,
  );
  await audit.locator('tr', { hasText: 'resource.created' }).first().waitFor();
  await shot(page, 'activity-02-audit');
  assertNoErrors(page);
});

test("the resource's deletion appears in the feed, and the kind filter keeps only its kind", async () => {
  const { id: resourceId, slug } = state.resource;
  await api.del(`/resources/${resourceId}`, { confirmation: { resourceSlug: slug } });
  const feed = page.getByTestId('changes');
  await feed.locator('tr', { hasText: resourceId }).filter({ hasText: 'deleted' }).first().waitFor({ timeout: 60_000 });
  // The kind filter keeps the resource's changes and hides the others.
  await page.getByLabel('Show kind').selectOption('server');
  assert.equal(await feed.locator('tr', { hasText: resourceId }).count(), 0);
  await page.getByLabel('Show kind').selectOption('resource');
  await feed.locator('tr', { hasText: resourceId }).first().waitFor();
  assert.match(page.url(), /kind=resource/, 'the filter is in the URL');
  await shot(page, 'activity-03-deleted');
  assertNoErrors(page);
});

test('a threshold policy is saved for the project one rule at a time and listed', async () => {
  await page.goto(`${origin()}/policies`);
  await page.getByRole('heading', { name: 'Policies', exact: true }).waitFor();
  await page.getByLabel('Threshold scope').selectOption({ label: `Project ${projectName}` });
  await page.getByText('No threshold policy for this scope yet').waitFor();

  await page.getByLabel('Signal').selectOption('cpu');
  await page.getByLabel('Metric').selectOption('containerCpuPercent');
  await page.getByLabel('Warning bound').fill('70');
  await page.getByLabel('Critical bound').fill('90');
  await page.getByRole('button', { name: 'Save rule' }).click();
  await page.getByRole('status').getByText('Rule cpu.containerCpuPercent saved').waitFor();
  const rules = page.getByTestId('threshold-rules');
  await rules.getByRole('cell', { name: 'cpu.containerCpuPercent', exact: true }).waitFor();

  // A second rule is added beside the first, not instead of it.
  await page.getByLabel('Signal').selectOption('memory');
  await page.getByLabel('Metric').selectOption('containerUsedBytes');
  await page.getByLabel('Critical bound').fill(String(2 * 1024 ** 3));
  await page.getByRole('button', { name: 'Save rule' }).click();
  await page.getByRole('status').getByText('Rule memory.containerUsedBytes saved').waitFor();
  await rules.getByRole('cell', { name: 'memory.containerUsedBytes', exact: true }).waitFor();
  assert.equal(await rules.getByRole('cell', { name: 'cpu.containerCpuPercent', exact: true }).count(), 1);
  assert.equal(await rules.locator('tbody tr').count(), 2);

  // The policy survives a reload (the scope is in the URL) and the API holds both rules.
  await page.reload();
  await rules.getByRole('cell', { name: 'memory.containerUsedBytes', exact: true }).waitFor();
  const shown = await api.get(`/runtime-monitoring/thresholds?scope.kind=project&scope.projectId=${state.projectId}`);
  assert.deepEqual(shown.policy.rules.map((r) => `${r.signal}.${r.metric}`).sort(), ['cpu.containerCpuPercent', 'memory.containerUsedBytes']);
  assert.equal(shown.policy.rules.find((r) => r.signal === 'cpu').warning, 70);
  await shot(page, 'policies-01-thresholds');
  assertNoErrors(page, [noPolicyYet]);
});

test("an owner changes the organization's retention of a category", async () => {
  await page.getByLabel('Category').selectOption('audit-rows');
  await page.getByLabel('Retention scope').selectOption('organization');
  await page.getByLabel('Retention days').fill('400');
  await page.getByRole('button', { name: 'Save retention policy' }).click();
  await page.getByRole('status').getByText('Retention of audit-rows (organization) saved').waitFor();
  const row = page.getByTestId('retention').locator('tr', { hasText: 'audit-rows' }).filter({ hasText: 'organization' });
  await row.first().waitFor();
  assert.match(await row.first().textContent(), /400/);
  await shot(page, 'policies-02-retention');
  assertNoErrors(page);
});

test("a member sees the project's policy but no administrator forms", async () => {
  const memberPage = await newPage(browser, { width: 390, height: 844 });
  await signIn(memberPage, member.email, member.password);
  await memberPage.goto(`${origin()}/policies?scope=project:${state.projectId}`);
  await memberPage.getByTestId('threshold-rules').getByRole('cell', { name: 'cpu.containerCpuPercent', exact: true }).waitFor();
  assert.equal(await memberPage.getByRole('button', { name: 'Save rule' }).count(), 0);
  assert.equal(await memberPage.getByRole('button', { name: 'Save retention policy' }).count(), 0);
  await memberPage.getByTestId('retention').waitFor();
  await shot(memberPage, 'policies-03-member-phone');
  assertNoErrors(memberPage);
  await memberPage.context().close();
});
