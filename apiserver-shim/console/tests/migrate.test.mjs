// The platform-migration page as an owner drives it, in a real Chromium against the real stack:
// a small Compose file (the sample app, one plain and one secret-looking variable) is planned
// for the test server, its warnings and variable report reviewed, its digest typed back and its
// secret typed; apply shows the receipts; a reload offers Resume and Status from the tab's copy
// of the plan; verify passes once the app is deployed; cleanup, confirmed by the digest again,
// undoes it. Neither the typed secret nor the file's value ever reaches the DOM or storage.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, origin, launch, newPage, shot, signIn, assertNoErrors, assertNotInDom, suffix } from './support.mjs';

const DEPLOY = 240_000;
const APPLY = 120_000;
const owner = { email: env('BERTH_CONSOLE_OWNER_EMAIL'), password: env('BERTH_CONSOLE_OWNER_PASSWORD') };
const serverId = env('BERTH_CONSOLE_SERVER_ID');
const id = suffix();
const service = `mig${id}`;
const project = `Migrated ${id}`;
const secretValue = `mig-s3cret-${id}`;
const fileValue = `in-the-file-${id}`;
const compose = `services:
  ${service}:
    image: berth/sample-app:1
    ports:
      - "8080:8080"
    environment:
      GREETING: hello-from-${id}
      SESSION_SECRET: ${fileValue}
`;

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

/** What this tab keeps of the migration (sessionStorage). */
const kept = () => page.evaluate(() => sessionStorage.getItem('berth.migration') ?? '');

/** The secret typed at apply and the value in the Compose file are nowhere in the page or its storage. */
async function assertNoSecrets(when) {
  await assertNotInDom(page, secretValue, `the typed secret (${when})`);
  await assertNotInDom(page, fileValue, `the file's secret value (${when})`);
  const storage = await kept();
  assert.ok(!storage.includes(secretValue) && !storage.includes(fileValue), `a secret value is in sessionStorage (${when})`);
}

test('an owner plans a Compose file and reviews the plan', async () => {
  await signIn(page, owner.email, owner.password);
  await page.goto(`${origin()}/migrate/platform`);
  await page.getByRole('heading', { name: 'Migrate from another platform' }).waitFor();
  await page.getByLabel('Platform').selectOption('compose');
  await page.getByLabel('Server').selectOption(serverId);
  await page.getByLabel('Project name').fill(project);
  await page.getByLabel('File 1 name').fill('compose.yaml');
  await page.getByLabel('File 1 content').fill(compose);
  await page.getByText(`berth migrate plan --from compose compose.yaml --server ${serverId}`).waitFor();
  await shot(page, 'migrate-01-source');
  await page.getByRole('button', { name: 'Plan migration' }).click();

  state.digest = (await page.getByTestId('plan-digest').textContent()).trim();
  assert.match(state.digest, /^sha256:[0-9a-f]{64}$/);
  // The secret-looking variable is a warning and a secret reference, the plain one a value.
  await page.getByRole('listitem').filter({ hasText: 'secret-looking SESSION_SECRET' }).waitFor();
  const variables = page.getByRole('table', { name: 'Variables' });
  await variables.getByRole('row').filter({ hasText: 'SESSION_SECRET' }).getByText('secret-ref').waitFor();
  await variables.getByRole('row').filter({ hasText: 'GREETING' }).getByText('value', { exact: true }).waitFor();
  const steps = page.getByRole('table', { name: 'Migration steps' });
  state.steps = await steps.locator('tbody tr').count();
  assert.ok(state.steps >= 5, `the plan has the project, environment, resource, variables and deployment (${state.steps})`);
  await steps.locator(`tr[data-step="deployment:create:${service}"]`).waitFor();
  assert.equal(await page.getByRole('heading', { name: /^Blockers/ }).count(), 0, 'the plan has no blockers');
  // The files (which hold a value) left the page with the form; the tab keeps the plan only.
  assert.ok((await kept()).includes(state.digest), 'the plan is kept in sessionStorage');
  await assertNoSecrets('after planning');
  await shot(page, 'migrate-02-plan');
  assertNoErrors(page);
});

test('the digest is confirmed, the secret typed, and apply shows every receipt', async () => {
  const apply = page.getByRole('button', { name: 'Apply migration' });
  assert.ok(await apply.isDisabled(), 'apply waits for the digest');
  await page.getByLabel('Plan digest confirmation').fill(state.digest.slice(0, -1));
  assert.ok(await apply.isDisabled(), 'a wrong digest does not enable apply');
  await page.getByLabel('Plan digest confirmation').fill(state.digest);
  await page.getByLabel('Value for SESSION_SECRET').fill(secretValue);
  await page.getByText(`SESSION_SECRET=… berth migrate apply migration-task.json --confirm ${state.digest}`).waitFor();
  await apply.click();
  // The typed value is gone from the form as soon as the request leaves.
  await assertNotInDom(page, secretValue, 'the typed secret, right after submit');
  await page.locator('[data-testid=apply-state][data-state=completed]').waitFor({ timeout: APPLY });
  const steps = page.getByRole('table', { name: 'Migration steps' });
  assert.equal(await steps.locator('tr[data-state=done]').count(), state.steps, 'a receipt for every step');
  await steps.locator('tr[data-step="project:create"]').getByText(/projectId=/).waitFor();
  await steps.locator(`tr[data-step="resource:create:${service}"]`).getByText(/resourceId=/).waitFor();
  await page.getByText(/kubectl get bmig mig-/).waitFor();
  await assertNoSecrets('after apply');
  await shot(page, 'migrate-03-applied');
  assertNoErrors(page);
});

test('after a reload the page offers Resume and Status from the kept plan and receipts', async () => {
  await page.reload();
  const notice = page.getByRole('status').filter({ hasText: 'Restored from this tab' });
  await notice.waitFor();
  assert.ok((await notice.textContent()).includes(`${state.steps} of ${state.steps} steps done`), 'the notice counts the kept receipts');
  await page.getByRole('button', { name: 'Show status' }).click();
  await page.locator('[data-testid=status-state][data-state=complete]').waitFor({ timeout: 60_000 });
  await page.getByRole('table', { name: 'Status checks' }).locator('tbody tr').first().waitFor();
  await shot(page, 'migrate-04-restored');
  // Resume sends the kept receipts as priorReceipts: nothing is left, nothing runs twice.
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/api/migrations/apply'), { timeout: APPLY }),
    page.getByRole('button', { name: 'Resume migration' }).click(),
  ]);
  const sent = answer.request().postDataJSON();
  assert.equal(sent.priorReceipts.length, state.steps, 'resume sends the kept receipts');
  assert.equal((await answer.json()).state, 'completed');
  await page.locator('[data-testid=apply-state][data-state=completed]').waitFor();
  assert.equal(await page.getByRole('table', { name: 'Migration steps' }).locator('tr[data-state=done]').count(), state.steps);
  await assertNoSecrets('after resume');
  assertNoErrors(page);
});

test('verify passes once the migrated app is deployed and healthy', async () => {
  const deadline = Date.now() + DEPLOY;
  for (;;) {
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/api/migrations/verify'), { timeout: 60_000 }),
      page.getByRole('button', { name: 'Verify migration' }).click(),
    ]);
    const { state: verdict } = await answer.json();
    await page.locator(`[data-testid=verify-state][data-state="${verdict}"]`).waitFor();
    if (verdict === 'passed') break;
    assert.ok(Date.now() < deadline, `verify is still ${verdict} after ${DEPLOY / 1000} s`);
    await page.waitForTimeout(5000);
  }
  const checks = page.getByRole('table', { name: 'Verification checks' });
  assert.ok((await checks.locator('tbody tr').count()) > 0, 'each check is listed');
  assert.equal(await checks.locator('tr[data-evaluation=attention]').count(), 0, 'no check needs attention');
  await shot(page, 'migrate-05-verified');
  assertNoErrors(page);
});

test('the owner cleans the migration up after typing the digest again', async () => {
  const cleanup = page.getByRole('button', { name: 'Clean up migration' });
  assert.ok(await cleanup.isDisabled(), 'cleanup waits for the digest');
  await page.getByLabel('Confirm data loss').waitFor();
  await page.getByLabel('Cleanup digest confirmation').fill(state.digest);
  await page.getByText(`berth migrate cleanup migration-task.json --confirm ${state.digest}`).waitFor();
  await cleanup.click();
  await page.locator('[data-testid=cleanup-state][data-state=completed]').waitFor({ timeout: APPLY });
  assert.ok((await page.getByRole('list', { name: 'Cleanup actions' }).getByRole('listitem').count()) > 0, 'what was undone is listed');
  await assertNoSecrets('after cleanup');
  await shot(page, 'migrate-06-cleaned');
  assertNoErrors(page);
});
