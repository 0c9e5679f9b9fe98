// The Environment page as a user drives it, in a real Chromium against the real stack: a project
// with a staging and a production environment (made through the API), then, on staging's page:
// its facts and masked variables, a variable set and deleted, a rename, a lock that stops
// changes and its unlock, a clone, a promotion into production whose diff is read before the
// Promote button exists, and the archive confirmed by a second click; and a member who sees no
// administrator actions.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, origin, launch, newPage, shot, signIn, assertNoErrors, assertNotInDom, rest, suffix } from './support.mjs';

const owner = { email: env('BERTH_CONSOLE_OWNER_EMAIL'), password: env('BERTH_CONSOLE_OWNER_PASSWORD') };
const member = { email: env('BERTH_CONSOLE_MEMBER_EMAIL'), password: env('BERTH_CONSOLE_MEMBER_PASSWORD') };
const id = suffix();
// A plain value under a secret-looking key: the API answers `****` for it, everywhere.
const tokenValue = `tok-${id}-never-shown`;

let browser;
let page;
let api;
const state = {};

before(async () => {
  browser = await launch();
  page = await newPage(browser);
  api = await rest(owner.email, owner.password);
  state.projectId = (await api.post('/projects', { name: `Environments ${id}` })).id;
  const create = async (name, kind) => (await api.post('/environments', { projectId: state.projectId, name, kind })).id;
  state.staging = await create('staging', 'staging');
  state.production = await create('production', 'production');
  const set = (environment, key, value) => api.post(`/environments/${environment}/variables`, { key, value });
  // The diff of staging against production then has one key of each change.
  await set(state.staging, 'LOG_LEVEL', 'debug');
  await set(state.staging, 'API_TOKEN', tokenValue);
  await set(state.staging, 'SHARED', 'same');
  await set(state.production, 'LOG_LEVEL', 'warn');
  await set(state.production, 'ONLY_PROD', 'kept');
  await set(state.production, 'SHARED', 'same');
  state.stagingUrl = `${origin()}/environments/${state.staging}`;
});
after(async () => {
  await browser?.close();
});

/** The row of `key` in the variables table. */
const variableRow = (key) => page.getByRole('table', { name: 'Environment variables' }).getByRole('row').filter({ hasText: key });

test('the page shows the environment, its masked variables and the way back to its project', async () => {
  await signIn(page, owner.email, owner.password);
  await page.goto(state.stagingUrl);
  await page.getByRole('heading', { name: 'staging', exact: true }).waitFor();
  const facts = page.locator('dl.facts');
  await facts.getByText(state.staging).waitFor();
  assert.match(await facts.textContent(), /Kindstaging.*Lifecycleactive.*Lockedno/s);
  assert.match(await variableRow('LOG_LEVEL').textContent(), /debug/);
  assert.match(await variableRow('API_TOKEN').textContent(), /\*\*\*\*/);
  await assertNotInDom(page, tokenValue, 'the secret-looking value');
  assert.equal(await page.getByRole('link', { name: '← Project' }).getAttribute('href'), `/projects/${state.projectId}`);
  assert.match(await page.getByLabel('Equivalent berth command').first().textContent(), new RegExp(`berth environments show ${state.staging}`));
  await shot(page, 'env-01-shown');
  assertNoErrors(page);
});

test('a variable is set, its value cleared from the form, and deleted', async () => {
  await page.getByLabel('Variable key').fill('FEATURE_FLAG');
  await page.getByLabel('Variable value').fill('on');
  await page.getByRole('button', { name: 'Set variable' }).click();
  await page.getByRole('status').getByText('Variable FEATURE_FLAG set').waitFor();
  assert.match(await variableRow('FEATURE_FLAG').textContent(), /on/);
  assert.equal(await page.getByLabel('Variable value').inputValue(), '');
  await shot(page, 'env-02-variable-set');
  await page.getByRole('button', { name: 'Delete variable FEATURE_FLAG (runtime)' }).click();
  await page.getByRole('status').getByText('Variable FEATURE_FLAG deleted').waitFor();
  assert.equal(await variableRow('FEATURE_FLAG').count(), 0);
  assertNoErrors(page);
});

test('the environment is renamed', async () => {
  state.name = `staging-${id}`;
  await page.getByLabel('Rename to').fill(state.name);
  await page.getByRole('button', { name: 'Rename', exact: true }).click();
  await page.getByRole('heading', { name: state.name }).waitFor();
  await page.getByRole('status').getByText(`Renamed to ${state.name}`).waitFor();
  const record = await api.get(`/environments/${state.staging}`);
  assert.equal(record.name, state.name);
  await shot(page, 'env-03-renamed');
  assertNoErrors(page);
});

test('a locked environment takes no changes until it is unlocked', async () => {
  await page.getByLabel('Lock reason').fill('release freeze');
  await page.getByRole('button', { name: 'Lock environment' }).click();
  await page.getByRole('status').getByText('Environment locked').waitFor();
  await page.getByText('Locked: release freeze').waitFor();
  assert.ok(await page.getByRole('button', { name: 'Set variable' }).isDisabled(), 'no variable can be set while locked');
  assert.ok(await page.getByRole('button', { name: 'Rename', exact: true }).isDisabled(), 'no rename while locked');
  assert.equal((await api.get(`/environments/${state.staging}`)).lockReason, 'release freeze');
  await shot(page, 'env-04-locked');
  await page.getByRole('button', { name: 'Unlock environment' }).click();
  await page.getByRole('status').getByText('Environment unlocked').waitFor();
  await page.getByRole('button', { name: 'Lock environment' }).waitFor();
  assert.ok(await page.getByRole('button', { name: 'Set variable' }).isEnabled(), 'variables can be set again');
  await shot(page, 'env-05-unlocked');
  assertNoErrors(page);
});

test('a clone is a new environment with the same variables', async () => {
  const name = `copy-${id}`;
  await page.getByLabel('Clone name').fill(name);
  await page.getByLabel('Clone kind').selectOption('preview');
  await page.getByRole('button', { name: 'Clone environment' }).click();
  await page.getByRole('status').getByText(`Cloned into ${name}`).waitFor();
  await page.getByRole('link', { name: `open ${name}` }).click();
  await page.getByRole('heading', { name }).waitFor();
  assert.match(await variableRow('LOG_LEVEL').textContent(), /debug/);
  assert.match(await page.locator('dl.facts').textContent(), /Kindpreview/);
  await shot(page, 'env-06-clone');
  await page.goto(state.stagingUrl);
  await page.getByRole('heading', { name: state.name }).waitFor();
  assertNoErrors(page);
});

test('a promotion shows the diff first, then copies the variables into production', async () => {
  await page.getByLabel('Promote into').selectOption(state.production);
  assert.equal(await page.getByRole('button', { name: 'Promote into' }).count(), 0, 'no Promote button before the diff');
  await page.getByRole('button', { name: 'Show diff' }).click();
  const diff = page.getByTestId('promote-diff');
  await diff.waitFor();
  const change = async (key) => diff.getByRole('row').filter({ hasText: key }).getAttribute('data-change');
  assert.equal(await change('API_TOKEN'), 'removed');
  assert.equal(await change('LOG_LEVEL'), 'changed');
  assert.equal(await change('ONLY_PROD'), 'added');
  assert.equal(await change('SHARED'), 'unchanged');
  await assertNotInDom(page, tokenValue, 'the secret-looking value in the diff');
  await shot(page, 'env-07-diff');
  await page.getByRole('button', { name: 'Promote into production' }).click();
  await page.getByRole('status').getByText(`Promoted ${state.name} into production`).waitFor();
  assert.equal(await diff.count(), 0, 'the diff is gone once promoted');
  const production = await api.get(`/environments/${state.production}`);
  const value = (key) => production.maskedVariables.find((v) => v.key === key)?.value;
  assert.equal(value('LOG_LEVEL'), 'debug', 'same keys are overwritten');
  assert.equal(value('ONLY_PROD'), 'kept', "the target's other keys stay");
  assert.equal(value('API_TOKEN'), '****', 'new keys are copied in');
  await shot(page, 'env-08-promoted');
  assertNoErrors(page);
});

test("a member's page offers no lock and no archive", async () => {
  const memberPage = await newPage(browser, { width: 390, height: 844 });
  await signIn(memberPage, member.email, member.password);
  await memberPage.goto(`${origin()}/environments/${state.production}`);
  await memberPage.getByRole('heading', { name: 'production', exact: true }).waitFor();
  await memberPage.getByText('Only administrators of this organization archive environments.').waitFor();
  assert.equal(await memberPage.getByRole('button', { name: 'Lock environment' }).count(), 0);
  assert.equal(await memberPage.getByRole('button', { name: 'Archive environment' }).count(), 0);
  await shot(memberPage, 'env-09-member-phone');
  assertNoErrors(memberPage);
  await memberPage.context().close();
});

test('the environment is archived after a second click', async () => {
  await page.getByLabel('Archive reason').fill('replaced by the clone');
  await page.getByRole('button', { name: 'Archive environment' }).click();
  await page.getByRole('button', { name: 'Keep environment' }).click();
  assert.equal((await api.get(`/environments/${state.staging}`)).lifecycleStatus, 'active', 'one click archives nothing');
  await page.getByRole('button', { name: 'Archive environment' }).click();
  await page.getByRole('button', { name: 'Confirm archive' }).click();
  await page.getByRole('status').getByText('Environment archived').waitFor();
  await page.getByText('replaced by the clone').first().waitFor();
  assert.ok(await page.getByRole('button', { name: 'Set variable' }).isDisabled(), 'an archived environment takes no changes');
  assert.equal((await api.get(`/environments/${state.staging}`)).lifecycleStatus, 'archived');
  await shot(page, 'env-10-archived');
  assertNoErrors(page);
});
