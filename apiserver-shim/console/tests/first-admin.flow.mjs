// An installation with no administrator yet, as a new user meets it in the browser: the sign-in
// page offers to create the first administrator; with the password left empty one is generated
// and shown once; signing in with it lands in the organization made with it; a second visitor
// is offered the sign-in only. Named `.flow.mjs`: the in-cluster test (in_cluster.rs) runs it
// against the shim's Service, after handing the shim a cluster without a first administrator.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, origin, launch, newPage, shot, assertNoErrors } from './support.mjs';

const email = env('BERTH_CONSOLE_FIRST_ADMIN_EMAIL');
const organization = env('BERTH_CONSOLE_FIRST_ADMIN_ORGANIZATION');
// The Service's plain-http address is no secure origin: no clipboard to grant.
const plainPage = (browser) => newPage(browser, undefined, { clipboard: false });

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test('the first administrator is created, shown its password once and signed in', async () => {
  const page = await plainPage(browser);
  await page.goto(`${origin()}/`);
  await page.getByRole('heading', { name: 'Create the first administrator' }).waitFor();
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Display name').fill('First Admin');
  await page.getByLabel('Organization').fill(organization);
  await shot(page, 'first-admin-form');
  await page.getByRole('button', { name: 'Create administrator' }).click();

  // The generated password, shown this once beside the sign-in form it fills.
  const shown = page.getByTestId('generated-password');
  await shown.waitFor();
  const password = (await shown.textContent()).trim();
  assert.ok(password.length >= 12, `a generated password of ${password.length} characters`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  assert.equal(await page.getByLabel('Email').inputValue(), email);
  await shot(page, 'first-admin-created');

  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  const acting = page.getByLabel('Organization');
  const chosen = await acting.evaluate((select) => select.selectedOptions[0]?.textContent ?? '');
  assert.match(chosen, new RegExp(organization), 'the console acts in the organization made with the administrator');
  assertNoErrors(page);
  await page.context().close();
});

test('a second visitor is offered the sign-in, not a second first administrator', async () => {
  const page = await plainPage(browser);
  await page.goto(`${origin()}/`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  assert.equal(await page.getByRole('heading', { name: 'Create the first administrator' }).count(), 0);
  assert.equal(await page.getByTestId('generated-password').count(), 0, 'the password is shown only to whoever created it');
  assertNoErrors(page);
  await page.context().close();
});
