// Shared by the browser tests: a real Chromium (Debian's, driven by playwright-core) against
// the real berth-shim the integration suite started. berth-tests' console_browser.rs sets the
// environment: the shim's origin, an owner and a member of a fresh organization, a ready
// server, and where screenshots go.
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';

export const env = (name) => {
  const value = process.env[name];
  assert.ok(value, `${name} is not set: run the browser tests through hack/test.sh`);
  return value;
};

export const origin = () => env('BERTH_CONSOLE_URL');
const shots = () => process.env.BERTH_CONSOLE_SHOTS ?? 'test-output';

export async function launch() {
  return chromium.launch({
    executablePath: process.env.BERTH_CHROMIUM ?? '/usr/lib/chromium/chromium',
    headless: true,
    // Generated host names of deployed apps resolve to this machine, like on a real server.
    args: ['--host-resolver-rules=MAP *.test 127.0.0.1, MAP *.nip.io 127.0.0.1, MAP *.sslip.io 127.0.0.1'],
  });
}

/**
 * A page that fails the test on any script error or console error (a missing favicon too).
 * `clipboard`: grant the clipboard (copy buttons); Chromium grants it to secure origins only
 * (https, or localhost as the suite's shim is), not to a Service's plain-http cluster IP.
 */
export async function newPage(browser, viewport = { width: 1280, height: 800 }, { clipboard = true } = {}) {
  const context = await browser.newContext({ viewport });
  if (clipboard) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: origin() });
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (error) => page.errors.push(String(error)));
  // Chromium logs a failed request without its URL: record the response instead.
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) page.errors.push(message.text());
  });
  page.on('response', (response) => {
    if (response.status() >= 400) page.errors.push(`${response.status()} ${response.request().method()} ${response.url()}`);
  });
  // Chromium aborts a navigation with ERR_NETWORK_CHANGED when a network interface comes or goes
  // on this host (Docker making or removing a bridge for another test's containers): such a
  // navigation is made once more, since the console is not what changed.
  for (const method of ['goto', 'reload']) {
    const navigate = page[method].bind(page);
    page[method] = async (...args) => {
      try {
        return await navigate(...args);
      } catch (error) {
        if (!String(error).includes('ERR_NETWORK_CHANGED')) throw error;
        return navigate(...args);
      }
    };
  }
  return page;
}

/** A scope without a threshold policy: the console asks, and draws no lines. */
export const noPolicyYet = /^404 GET .*\/api\/runtime-monitoring\/thresholds\?/;

/** Errors the page logged, except the ones a test provoked on purpose (`expected`). */
export function assertNoErrors(page, expected = []) {
  const left = page.errors.filter((e) => !expected.some((pattern) => pattern.test(e)));
  page.errors = [];
  assert.deepEqual(left, [], `the page logged errors: ${left.join('\n')}`);
}

export async function shot(page, name) {
  mkdirSync(shots(), { recursive: true });
  await page.screenshot({ path: join(shots(), `${name}.png`), fullPage: true });
}

export async function signIn(page, email, password) {
  await page.goto(`${origin()}/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
}

/** The serialized DOM never holds `secret` (inputs' typed values are not in it either). */
export async function assertNotInDom(page, secret, what) {
  const html = await page.content();
  assert.ok(!html.includes(secret), `${what} is in the page's DOM`);
  const values = await page.evaluate(() => [...document.querySelectorAll('input, textarea')].map((i) => i.value));
  assert.ok(!values.some((v) => v.includes(secret)), `${what} is still in a form field`);
}

/** The REST API as a signed-in user, for fixtures the test does not exercise in the page. */
export async function rest(email, password) {
  const login = await fetch(`${origin()}/api/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  assert.equal(login.status, 200, 'fixture sign-in');
  const { token } = await login.json();
  const call = async (method, path, body) => {
    const response = await fetch(`${origin()}/api${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await response.json().catch(() => null);
    assert.ok(response.ok, `${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  };
  return { get: (p) => call('GET', p), post: (p, b = {}) => call('POST', p, b), del: (p, b = {}) => call('DELETE', p, b) };
}

export const suffix = () => Math.random().toString(36).slice(2, 8);
