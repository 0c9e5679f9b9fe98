// Organizations from the console, both people's sides: the owner creates one (and acts in it at
// once), invites the member and sends the invitation's link; the member opens the link, accepts
// and acts in it; the owner hands the ownership over and becomes an admin; the new owner deletes
// it by typing its slug, and it leaves both people's organization menus.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, newPage, signIn, assertNoErrors, shot, env, rest, suffix } from './support.mjs';

const owner = { email: env('BERTH_CONSOLE_OWNER_EMAIL'), password: env('BERTH_CONSOLE_OWNER_PASSWORD') };
const member = { email: env('BERTH_CONSOLE_MEMBER_EMAIL'), password: env('BERTH_CONSOLE_MEMBER_PASSWORD') };
const id = suffix();
const name = `Orgs ${id}`;
const slug = `orgs-${id}`;
let browser;
let ownerPage;
let memberPage;
const state = {};

before(async () => {
  browser = await launch();
  ownerPage = await newPage(browser);
  memberPage = await newPage(browser, { width: 390, height: 844 });
});

after(async () => {
  await browser?.close();
  // Whoever owns it when a step failed deletes what is left.
  if (state.organizationId && !state.deleted) {
    for (const who of [member, owner]) {
      const api = await rest(who.email, who.password);
      const gone = await api
        .del(`/organizations/${state.organizationId}`, { confirmation: { organizationId: state.organizationId } })
        .then(() => true, () => false);
      if (gone) break;
    }
  }
});

const organizationMenu = (page) => page.getByLabel('Organization', { exact: true });

test('an organization created in the console is the one it acts in', async () => {
  await signIn(ownerPage, owner.email, owner.password);
  await ownerPage.getByRole('link', { name: 'Account' }).click();
  await ownerPage.getByLabel('Organization name').fill(name);
  await ownerPage.getByLabel('Slug (optional)').fill(slug);
  await ownerPage.getByRole('button', { name: 'Create organization' }).click();
  await ownerPage.getByRole('heading', { name: 'Projects' }).waitFor();
  const selected = await organizationMenu(ownerPage).evaluate((select) => select.selectedOptions[0].textContent);
  assert.equal(selected, `${name} (owner)`);
  state.organizationId = await organizationMenu(ownerPage).inputValue();
  assertNoErrors(ownerPage);
});

test('the invited member accepts from the link the owner sends', async () => {
  await ownerPage.getByRole('link', { name: 'Members' }).click();
  await ownerPage.getByRole('heading', { name: `Members of ${name}` }).waitFor();
  await ownerPage.getByLabel('Email to invite').fill(member.email);
  await ownerPage.getByRole('button', { name: 'Invite' }).click();
  const link = await ownerPage.getByTestId('invitation-link').textContent();
  assert.match(link, /\/invitations\/[\w-]+$/);
  await shot(ownerPage, 'organization-invitation-link');

  await signIn(memberPage, member.email, member.password);
  await memberPage.goto(link);
  await memberPage.getByRole('button', { name: 'Accept the invitation' }).click();
  await memberPage.getByRole('heading', { name: 'Projects' }).waitFor();
  assert.equal(await organizationMenu(memberPage).inputValue(), state.organizationId);
  // A link used twice says why it no longer works.
  await memberPage.goto(link);
  await memberPage.getByRole('button', { name: 'Accept the invitation' }).click();
  await memberPage.getByText('the invitation was already accepted').waitFor();
  await shot(memberPage, 'organization-invitation-accepted-phone');
  assertNoErrors(memberPage, [/^409 POST .*\/accept$/]);
});

test('the owner hands the ownership to the member and becomes an admin', async () => {
  await ownerPage.reload();
  await ownerPage.getByRole('heading', { name: `Members of ${name}` }).waitFor();
  await ownerPage.getByLabel('New owner').selectOption({ label: `${member.email} (member)` });
  await ownerPage.getByRole('button', { name: 'Transfer ownership' }).click();
  await ownerPage.getByText('You are admin here.').waitFor();
  assert.equal(await ownerPage.getByRole('button', { name: 'Delete organization' }).count(), 0, 'an admin is not offered the deletion');
  assertNoErrors(ownerPage);
});

test('the new owner deletes the organization by typing its slug', async () => {
  await memberPage.getByRole('link', { name: 'Members' }).click();
  await memberPage.getByText('You are owner here.').waitFor();
  const remove = memberPage.getByRole('button', { name: 'Delete organization' });
  assert.ok(await remove.isDisabled(), 'the deletion waits for the slug');
  await memberPage.getByLabel('Organization slug').fill(slug);
  await remove.click();
  await memberPage.getByRole('heading', { name: 'Projects' }).waitFor();
  state.deleted = true;
  const left = await organizationMenu(memberPage).evaluate((select) => [...select.options].map((o) => o.value));
  assert.ok(!left.includes(state.organizationId), 'the member no longer sees it');
  await ownerPage.reload();
  await ownerPage.getByRole('heading').first().waitFor();
  const ownersLeft = await organizationMenu(ownerPage).evaluate((select) => [...select.options].map((o) => o.value));
  assert.ok(!ownersLeft.includes(state.organizationId), 'the former owner no longer sees it');
  assertNoErrors(memberPage);
});
