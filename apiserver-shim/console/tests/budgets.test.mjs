// The console's budgets that do not depend on how busy the machine is, checked in CI: the
// JavaScript a first visit downloads, every page at a laptop's 1280×800 and a phone's 390 px
// without horizontal scrolling, and the main flows done with the keyboard alone (reaching a
// resource; making a project, an environment and an app and deploying it), focus visible at
// every stop. The timed budgets (1,000 resources listed ≤ 1 s, a keystroke's repaint) are
// `hack/bench.sh console-ui`'s: a timed assertion on two shared cores would fail at random.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, newPage, signIn, assertNoErrors, noPolicyYet, shot, env, origin, rest, suffix } from './support.mjs';

const FIRST_LOAD_JS_BUDGET = 80 * 1024;
const VIEWPORTS = [
  { name: 'laptop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
];

const owner = { email: env('BERTH_CONSOLE_OWNER_EMAIL'), password: env('BERTH_CONSOLE_OWNER_PASSWORD') };
const serverId = env('BERTH_CONSOLE_SERVER_ID');
// The longest wait for a deployment attempt; sample-app takes seconds on the real stack.
const DEPLOY = 240_000;
let browser;
let api;
const fixture = {};
// What the keyboard-only test makes in the page, removed over REST afterwards.
const made = {};

before(async () => {
  browser = await launch();
  api = await rest(owner.email, owner.password);
  // A project with an environment and a resource that is never deployed: the pages below
  // have something to list without waiting for a build.
  const id = suffix();
  fixture.project = (await api.post('/projects', { name: `Budgets ${id}` })).id;
  fixture.environment = (await api.post('/environments', { projectId: fixture.project, name: 'production', kind: 'production' })).id;
  const resource = await api.post('/resources', {
    projectId: fixture.project,
    environmentId: fixture.environment,
    name: `budget-app-${id}`,
    kind: 'application',
  });
  fixture.resource = resource.id;
  fixture.slug = (await api.get(`/resources/${resource.id}`)).resource.slug;
});

/** Deletes a resource and archives its project, as far as `what` got to make them. */
async function cleanUp(what) {
  if (what.resource) {
    const slug = what.slug ?? (await api.get(`/resources/${what.resource}`)).resource.slug;
    await api.del(`/resources/${what.resource}`, { confirmation: { resourceSlug: slug } });
  }
  if (what.project) await api.del(`/projects/${what.project}`, { confirmation: { projectId: what.project } }).catch(() => {});
}

after(async () => {
  await browser?.close();
  const failures = [];
  for (const what of [made, fixture]) await cleanUp(what).catch((error) => failures.push(error));
  if (failures.length) throw failures[0];
});

/** Every page a person opens from the navigation, the project's and the resource's tabs. */
function pages() {
  const resource = `/resources/${fixture.resource}`;
  return [
    '/projects',
    `/projects/${fixture.project}`,
    `/environments/${fixture.environment}`,
    ...['overview', 'deployments', 'logs', 'monitor', 'configuration', 'domains', 'storage', 'tasks', 'previews', 'settings'].map((tab) => `${resource}/${tab}`),
    '/servers',
    '/databases',
    '/tokens',
    '/members',
    '/activity',
    '/notifications',
    '/policies',
    '/migrate/platform',
    '/account',
  ];
}

/** Bytes of JavaScript the page has fetched so far, as sent on the wire (compressed). */
const scriptBytes = (page) =>
  page.evaluate(() =>
    performance
      .getEntriesByType('resource')
      .filter((entry) => entry.initiatorType === 'script' || entry.name.endsWith('.js'))
      .reduce((sum, entry) => sum + entry.transferSize, 0),
  );

/** How far the page scrolls sideways, and the elements that stick out, for the message. */
const overflow = (page) =>
  page.evaluate(() => {
    const root = document.documentElement;
    const extra = root.scrollWidth - root.clientWidth;
    const sticksOut = (element) => element && element.getBoundingClientRect().right > root.clientWidth + 1;
    // The outermost elements that stick out: their parents still fit.
    const culprits = [...document.querySelectorAll('body *')]
      .filter((element) => sticksOut(element) && !sticksOut(element.parentElement))
      .slice(0, 5)
      .map((element) => `<${element.tagName.toLowerCase()} class="${element.className}"> ${element.textContent.trim().slice(0, 40)}`);
    return { extra, culprits };
  });

test('a first visit downloads at most 80 KB of JavaScript, compressed', async () => {
  const page = await newPage(browser);
  await page.goto(`${origin()}/`);
  // Signed in without a second navigation: it would find the scripts in the cache.
  await page.getByLabel('Email').fill(owner.email);
  await page.getByLabel('Password').fill(owner.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  const bytes = await scriptBytes(page);
  console.log(`first-load JavaScript: ${(bytes / 1024).toFixed(1)} KB on the wire`);
  assert.ok(bytes > 0, 'the page loaded its scripts');
  assert.ok(bytes <= FIRST_LOAD_JS_BUDGET, `sign-in and the project list fetched ${(bytes / 1024).toFixed(1)} KB of JavaScript; budget 80 KB`);
  assertNoErrors(page);
  await page.context().close();
});

for (const viewport of VIEWPORTS) {
  test(`every page fits a ${viewport.width} px wide ${viewport.name} screen without scrolling sideways`, async () => {
    const page = await newPage(browser, { width: viewport.width, height: viewport.height });
    const wide = [];
    // The sign-in page first, as anyone meets it.
    await page.goto(`${origin()}/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    const signInPage = await overflow(page);
    if (signInPage.extra > 0) wide.push(`sign-in: ${signInPage.extra} px too wide; ${signInPage.culprits.join(' | ')}`);
    await signIn(page, owner.email, owner.password);
    for (const path of pages()) {
      await page.goto(`${origin()}${path}`);
      const heading = await page.locator('main h1').first().textContent();
      assert.notEqual(heading, 'Not found', `${path} is a page`);
      // Lists arrive after the heading: wait for their first answers (and a moment for those
      // that show no progress).
      await page.waitForFunction(() => !document.querySelector('[aria-busy=true]'), null, { timeout: 15_000 });
      await page.waitForTimeout(300);
      const { extra, culprits } = await overflow(page);
      if (extra > 0) wide.push(`${path}: ${extra} px too wide; ${culprits.join(' | ')}`);
    }
    await shot(page, `budget-${viewport.name}-account`);
    assert.deepEqual(wide, [], `pages scroll sideways at ${viewport.width} px:\n${wide.join('\n')}`);
    assertNoErrors(page, [noPolicyYet]);
    await page.context().close();
  });
}

/** Presses Tab until `wanted` has the focus (at most `limit` times); every stop's focus is visible. */
async function tabTo(page, wanted, limit = 40) {
  for (let stop = 0; stop < limit; stop++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const element = document.activeElement;
      const style = getComputedStyle(element);
      return {
        text: `${element.getAttribute('aria-label') ?? ''} ${element.labels?.[0]?.textContent ?? ''} ${element.textContent ?? ''}`.trim(),
        tag: element.tagName.toLowerCase(),
        visible: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2,
      };
    });
    assert.ok(focused.tag === 'body' || focused.visible, `the focus on <${focused.tag}> "${focused.text}" is not visible`);
    if (wanted.test(focused.text)) return;
  }
  assert.fail(`${wanted} never took the focus after ${limit} presses of Tab`);
}

test('signing in and reaching a resource work with the keyboard alone, the focus always visible', async () => {
  const page = await newPage(browser);
  await page.goto(`${origin()}/`);
  await page.getByLabel('Email').waitFor();
  await tabTo(page, /Email/);
  await page.keyboard.type(owner.email);
  await tabTo(page, /Password/);
  await page.keyboard.type(owner.password);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Projects' }).waitFor();

  await tabTo(page, /^Budgets /);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: /^Budgets / }).waitFor();
  await tabTo(page, /^budget-app-/, 80);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: /^budget-app-/ }).waitFor();
  await tabTo(page, /^Configuration$/);
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/configuration$/);

  await tabTo(page, /^Servers$/, 80);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Servers' }).waitFor();
  await shot(page, 'budget-keyboard-servers');
  assertNoErrors(page);
  await page.context().close();
});

/** Moves the focused (closed) <select> to the option of `value` with the arrow keys alone. */
async function arrowTo(page, value) {
  const { from, to, options } = await page.evaluate((wanted) => {
    const select = document.activeElement;
    const options = [...(select.options ?? [])].map((option) => option.value);
    return { from: select.selectedIndex, to: options.indexOf(wanted), options };
  }, value);
  assert.ok(to >= 0, `the focused control offers ${value}: ${options.join(', ')}`);
  for (let step = 0; step < Math.abs(to - from); step++) await page.keyboard.press(to > from ? 'ArrowDown' : 'ArrowUp');
  assert.equal(await page.evaluate(() => document.activeElement.value), value, 'the arrow keys chose the option');
}

test('creating a project, an environment and an app and deploying it work with the keyboard alone, the focus always visible', async () => {
  const id = suffix();
  const projectName = `Keyboard ${id}`;
  const appName = `kb-app-${id}`;
  const page = await newPage(browser);
  await page.goto(`${origin()}/`);
  await page.getByLabel('Email').waitFor();
  await tabTo(page, /^Email$/);
  await page.keyboard.type(owner.email);
  await tabTo(page, /^Password$/);
  await page.keyboard.type(owner.password);
  await tabTo(page, /^Sign in$/);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Projects' }).waitFor();

  // A project: its name, then Enter in the field submits the form.
  await tabTo(page, /^Project name$/, 80);
  await page.keyboard.type(projectName);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: projectName }).waitFor();
  made.project = new URL(page.url()).pathname.match(/^\/projects\/([^/]+)$/)?.[1];
  assert.ok(made.project, `the new project's page: ${page.url()}`);

  // An environment (its kind stays the default, production), with Space on the button.
  await tabTo(page, /^Environment name$/, 80);
  await page.keyboard.type('production');
  await tabTo(page, /^Create environment$/);
  await page.keyboard.press('Space');
  await page.locator('.chip', { hasText: 'production' }).waitFor();
  await page.getByRole('heading', { name: 'New resource' }).waitFor();

  // The app: name, image and port typed; the server chosen with the arrow keys.
  await tabTo(page, /^Resource name$/);
  await page.keyboard.type(appName);
  await tabTo(page, /^Docker image$/);
  await page.keyboard.type('berth/sample-app:1');
  await tabTo(page, /^Port$/);
  await page.keyboard.type('8080');
  // The servers arrive after the form: wait for this one's option before choosing it.
  await page.locator(`option[value="${serverId}"]`).waitFor({ state: 'attached' });
  await tabTo(page, /^Server\s/);
  await arrowTo(page, serverId);
  await tabTo(page, /^Create resource$/);
  await page.keyboard.press('Enter');
  // With a server and an image the resource deploys at once; the page opens its Deployments tab.
  await page.waitForURL(/\/resources\/[^/]+\/deployments$/);
  made.resource = new URL(page.url()).pathname.split('/')[2];
  made.slug = (await api.get(`/resources/${made.resource}`)).resource.slug;
  await page.getByRole('heading', { name: appName }).waitFor();
  await page.getByRole('progressbar', { name: 'Deployment progress' }).waitFor({ timeout: 60_000 });
  const first = await page.locator('#attempt code').textContent();

  // Deploy again from the Deployments tab: the tab link first, then its Deploy button.
  await tabTo(page, /^Deployments$/, 80);
  await tabTo(page, /^Deploy$/);
  await page.keyboard.press('Enter');
  // The page switches to the new attempt, which starts: a status, then its first line (or an
  // outcome already).
  await page.waitForFunction((old) => {
    const shown = document.querySelector('#attempt code')?.textContent;
    return shown && shown !== old;
  }, first, { timeout: 60_000 });
  const attempt = await page.locator('#attempt code').textContent();
  await page.locator('#attempt .badge').waitFor();
  await page.waitForFunction(
    () =>
      document.querySelector('section.attempt pre.timeline .line') ||
      ['succeeded', 'failed', 'canceled'].includes(document.querySelector('section.attempt')?.dataset.status),
    null,
    { timeout: DEPLOY },
  );
  const status = await page.locator('section.attempt').getAttribute('data-status');
  assert.ok(!['failed', 'canceled'].includes(status), `the attempt ${attempt} started and did not fail: ${status}`);
  const history = await api.get(`/deployments?resourceId=${made.resource}`);
  assert.ok(history.items.some((d) => d.id === attempt), `${attempt} is an attempt of ${appName}`);
  await shot(page, 'budget-keyboard-deploy');
  assertNoErrors(page);
  await page.context().close();
});
