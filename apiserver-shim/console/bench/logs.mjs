// hack/bench.sh console-ui, second part: the live log tail under load. A chatty app (about
// 2,000 lines/s) is deployed on the quickstart's server `local` (hack/dev.sh made it); for
// SECONDS (hack/bench.sh's default 600, ten minutes; 30 when run by hand) the Logs tab follows
// it in Chromium while, as the baseline, node reads the same event stream with nothing to
// render. Goals: the tab paints ≥ 1,000 lines/s and ≥ 0.9× what
// the bare stream delivers, no long task over 100 ms, ≤ 2,000 lines in the page, JS heap ≤ 150 MB.
import { chromium } from 'playwright-core';
import { origin, goal, report, signInOverRest, signInToQuickstart } from './support.mjs';

const seconds = Number(process.argv[2] ?? 30);
const { headers, api } = await signInOverRest();

await api('POST', '/organizations/current-context/switch', { organizationId: 'acme' });
const slug = `chatty${Math.random().toString(36).slice(2, 7)}`;
const chatter = 'while :; do seq 1 100; usleep 50000; done & exec /bin/sample-app';
const { id } = await api('POST', '/resources', {
  projectId: 'shop',
  environmentId: 'shop-production',
  serverId: 'local',
  name: slug,
  kind: 'application',
  source: { kind: 'docker-image', locator: 'berth/sample-app:1' },
  networkProfile: { internalPort: 8080 },
  runtimeProfile: { startCommand: `sh -c '${chatter}'` },
});

async function deployed() {
  for (let i = 0; i < 240; i++) {
    const { items } = await api('GET', `/deployments?resourceId=${id}&limit=1`);
    if (items[0]?.status === 'succeeded') return;
    if (['failed', 'canceled'].includes(items[0]?.status)) throw new Error(`the chatty app's deployment ${items[0].status}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error('the chatty app did not deploy within 240 s');
}

/** The baseline: lines the bare event stream delivers in `seconds`, nothing rendered. */
async function bareStream() {
  const controller = new AbortController();
  const response = await fetch(`${origin}/api/resources/${id}/runtime-logs?follow=true&tailLines=1`, {
    headers: { ...headers, Accept: 'text/event-stream' },
    signal: controller.signal,
  });
  const reader = response.body.getReader();
  let lines = 0;
  const stop = Date.now() + seconds * 1000;
  setTimeout(() => controller.abort(), seconds * 1000);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || Date.now() > stop) break;
      lines += Buffer.from(value).toString().split('\n\n').length - 1;
    }
  } catch {
    // aborted at the end of the window
  }
  return lines / seconds;
}

async function browserTail(browser) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.addInitScript(() => {
    window.__longest = 0;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) window.__longest = Math.max(window.__longest, entry.duration);
    }).observe({ type: 'longtask', buffered: true });
  });
  await signInToQuickstart(page);
  await page.goto(`${origin}/resources/${id}/logs`);
  const received = () => page.locator('[data-testid=logs]').getAttribute('data-received').then(Number);
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=logs]')?.dataset.received) > 0, null, { timeout: 30_000 });
  await page.evaluate(() => (window.__longest = 0));
  const start = await received();
  const started = Date.now();
  await page.waitForTimeout(seconds * 1000);
  const rate = ((await received()) - start) / ((Date.now() - started) / 1000);
  const longest = await page.evaluate(() => window.__longest);
  const inPage = await page.locator('[data-testid=logs] .line').count();
  const heap = await page.evaluate(() => performance.memory?.usedJSHeapSize ?? 0);
  await page.close();
  return { rate, longest, inPage, heap };
}

const browser = await chromium.launch({ executablePath: process.env.BERTH_CHROMIUM ?? '/usr/lib/chromium/chromium', headless: true });
try {
  await deployed();
  const baseline = await bareStream();
  const tab = await browserTail(browser);
  goal(`log tail painted in the tab (${seconds} s)`, Math.round(tab.rate), ' lines/s', tab.rate >= 1000, 'goal ≥ 1,000 lines/s');
  goal('… against the bare event stream', (tab.rate / baseline).toFixed(2), '×', tab.rate / baseline >= 0.9, `baseline ${Math.round(baseline)} lines/s read by node, goal ≥ 0.9×`);
  goal('longest task while tailing', Math.round(tab.longest), ' ms', tab.longest <= 100, 'goal ≤ 100 ms, no frame frozen');
  goal('log lines in the page', tab.inPage, '', tab.inPage <= 2000, 'goal ≤ 2,000 (10,000 kept in memory)');
  goal('JS heap after the tail', (tab.heap / 1048576).toFixed(1), ' MB', tab.heap <= 150 * 1048576, 'budget 150 MB');
} finally {
  await browser.close();
  await api('DELETE', `/resources/${id}`, { confirmation: { resourceSlug: slug } }).catch((e) => console.error(`could not delete ${slug}: ${e.message}`));
}
report();
