// hack/bench.sh console-ui: what the console costs a browser, in Debian's Chromium against a
// release berth-shim. A throwaway organization gets one project with N resources (default
// 1,000); then, each figure with a baseline measured in the same run:
//   - first-load JavaScript on the wire (gzip), against the budget of 80 KB;
//   - the resources page, from navigation until N rows are on screen (goal ≤ 1 s), against the
//     least a page can do to show them: in the same tab, fetch GET /api/resources, build a plain
//     DOM table of the same rows and wait for its paint (goal ≤ 4×);
//   - a filter keystroke until the next paint (median of 20), against one animation frame;
//   - the tab's JS heap with the list shown.
// The organization is deleted at the end.
import { chromium } from 'playwright-core';

const origin = process.env.BERTH_CONSOLE_URL;
const email = process.env.BERTH_ADMIN_EMAIL;
const password = process.env.BERTH_ADMIN_PASSWORD;
const count = Number(process.argv[2] ?? 1000);
if (!origin || !email || !password) throw new Error('BERTH_CONSOLE_URL, BERTH_ADMIN_EMAIL and BERTH_ADMIN_PASSWORD are needed');

const results = [];
function goal(name, value, unit, ok, detail) {
  results.push(`${ok ? 'PASS' : 'FAIL'}: ${name}: ${value}${unit} (${detail})`);
}

async function api(token, method, path, body) {
  const response = await fetch(`${origin}/api${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json().catch(() => null);
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

async function seed() {
  const login = await fetch(`${origin}/api/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email, password }),
  }).then((r) => r.json());
  const token = login.token;
  const slug = `bench-ui-${Math.random().toString(36).slice(2, 8)}`;
  const { id: organizationId } = await api(token, 'POST', '/organizations', { name: 'Console bench', slug });
  await api(token, 'POST', '/organizations/current-context/switch', { organizationId });
  const { id: projectId } = await api(token, 'POST', '/projects', { name: 'Many' });
  const { id: environmentId } = await api(token, 'POST', '/environments', { projectId, name: 'production', kind: 'production' });
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      await api(token, 'POST', '/resources', { projectId, environmentId, name: `app ${String(i).padStart(4, '0')}`, kind: 'application' });
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  console.log(`seeded ${count} resources in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { token, organizationId, projectId };
}

async function measure(browser, { organizationId, projectId }) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(`${origin}/`);
  const firstLoad = await page.evaluate(() =>
    performance
      .getEntriesByType('resource')
      .filter((e) => e.initiatorType === 'script' || e.name.endsWith('.js'))
      .reduce((sum, e) => sum + e.transferSize, 0),
  );
  goal('first-load JavaScript (gzip, on the wire)', (firstLoad / 1024).toFixed(1), ' KB', firstLoad <= 80 * 1024, 'budget 80 KB');

  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  await page.getByLabel('Organization').selectOption(organizationId);
  await page.getByRole('link', { name: 'Many' }).waitFor();

  const listTimes = [];
  const baselineTimes = [];
  for (let round = 0; round < 5; round++) {
    await page.goto(`${origin}/projects/${projectId}`);
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid=resources] tbody tr').length === n, count, { timeout: 30_000 });
    listTimes.push(await page.evaluate(() => performance.now()));
    baselineTimes.push(
      await page.evaluate(async (project) => {
        const { token } = JSON.parse(sessionStorage.getItem('berth.session'));
        const start = performance.now();
        const response = await fetch(`/api/resources?projectId=${project}`, { headers: { Authorization: `Bearer ${token}` } });
        const { items } = await response.json();
        const table = document.createElement('table');
        for (const r of items) {
          const row = table.insertRow();
          for (const value of [r.name, r.environmentId, r.kind, r.lastDeploymentStatus, r.proxyRouteStatus, r.slug, r.createdAt]) {
            row.insertCell().textContent = value ?? '—';
          }
        }
        document.body.append(table);
        await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));
        table.remove();
        return performance.now() - start;
      }, projectId),
    );
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const list = median(listTimes);
  const baseline = median(baselineTimes);
  goal(`resources page usable with ${count} rows (median of 5)`, Math.round(list), ' ms', list <= 1000, 'budget 1,000 ms');
  goal('… against a plain DOM table of the same rows', (list / baseline).toFixed(2), '×', list / baseline <= 4, `baseline ${Math.round(baseline)} ms (fetch, build, paint), goal ≤ 4×`);

  const keystrokes = await page.evaluate(async () => {
    const input = document.querySelector('input[type=search]');
    const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
    const times = [];
    const idle = [];
    for (const text of ['a', 'ap', 'app', 'app 0', 'app 01', 'app 012', 'app 01', 'app 0', 'app', '', 'app 9', 'app 99', 'app 9', '', 'x', '', 'app 00', 'app 0', '', 'app']) {
      await frame();
      let start = performance.now();
      await frame();
      await frame();
      idle.push(performance.now() - start);
      start = performance.now();
      input.value = text;
      input.dispatchEvent(new Event('input', { bubbles: true }));
      await frame();
      await frame();
      times.push(performance.now() - start);
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    return { keystroke: median(times), idle: median(idle) };
  });
  goal('filter keystroke to repaint (median of 20)', keystrokes.keystroke.toFixed(1), ' ms', keystrokes.keystroke <= 100, `budget 100 ms; two idle frames take ${keystrokes.idle.toFixed(1)} ms`);
  const heap = await page.evaluate(() => performance.memory?.usedJSHeapSize ?? 0);
  goal(`JS heap with ${count} resources listed`, (heap / 1048576).toFixed(1), ' MB', heap <= 150 * 1048576, 'budget 150 MB');
  await context.close();
}

const seeded = await seed();
const browser = await chromium.launch({ executablePath: process.env.BERTH_CHROMIUM ?? '/usr/lib/chromium/chromium', headless: true });
try {
  await measure(browser, seeded);
} finally {
  await browser.close();
  await api(seeded.token, 'DELETE', `/organizations/${seeded.organizationId}`, { confirmation: { organizationId: seeded.organizationId } }).catch((e) =>
    console.error(`could not delete the bench organization: ${e.message}`),
  );
}
console.log(results.join('\n'));
process.exitCode = results.some((r) => r.startsWith('FAIL')) ? 1 : 0;
