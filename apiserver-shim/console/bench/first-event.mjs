// hack/bench.sh console-ui, third part: how soon a deployment shows its first event. An app is
// deployed on the quickstart's server `local` (hack/dev.sh made it); then ROUNDS times (default
// 5), alternating:
//   - in Chromium, the Deployments tab's Deploy button is pressed and the time until the new
//     attempt's first timeline line is on screen is taken;
//   - the baseline, the least any client can do: node posts the same redeploy and reads the
//     attempt's timeline stream until its first entry arrives, nothing rendered.
// Goal: the console shows the first event ≤ 1 s after the bare stream could have had it (the
// medians' difference), i.e. what the console adds — its list reload, its stream, its paint.
import { chromium } from 'playwright-core';
import { origin, goal, report, signInOverRest, signInToQuickstart } from './support.mjs';

const rounds = Number(process.argv[2] ?? 5);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const { headers, api } = await signInOverRest();

await api('POST', '/organizations/current-context/switch', { organizationId: 'acme' });
const slug = `first${Math.random().toString(36).slice(2, 7)}`;
const { id } = await api('POST', '/resources', {
  projectId: 'shop',
  environmentId: 'shop-production',
  serverId: 'local',
  name: slug,
  kind: 'application',
  source: { kind: 'docker-image', locator: 'berth/sample-app:1' },
  networkProfile: { internalPort: 8080 },
});

/** Waits until the resource's newest attempt has ended; returns its status. */
async function settled() {
  for (let i = 0; i < 240; i++) {
    const { items } = await api('GET', `/deployments?resourceId=${id}&limit=1`);
    if (items[0] && !['created', 'planning', 'planned', 'running', 'cancel-requested'].includes(items[0].status)) return items[0].status;
    await sleep(500);
  }
  throw new Error(`${slug}'s deployment did not end within 120 s`);
}

/** The baseline: POST the redeploy, follow the new attempt's timeline, stop at its first entry. */
async function bareFirstEvent() {
  const started = Date.now();
  const attempt = await api('POST', `/resources/${id}/redeploy`, { confirmation: { resourceId: id } });
  const controller = new AbortController();
  const response = await fetch(`${origin}/api/deployments/${attempt.id}/timeline/stream?after=0`, {
    headers: { ...headers, Accept: 'text/event-stream' },
    signal: controller.signal,
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the timeline of ${attempt.id} ended without an entry`);
      buffer += value;
      if (buffer.includes('"kind":"entry"')) return Date.now() - started;
    }
  } finally {
    controller.abort();
  }
}

/** The console: press Deploy on the Deployments tab, wait for the new attempt's first line. */
async function consoleFirstEvent(page) {
  const shownBefore = await page.locator('#attempt code').textContent();
  const started = Date.now();
  await page.getByRole('button', { name: 'Deploy', exact: true }).click();
  // The tab selects the new attempt and clears the old one's lines: its first line is then on
  // screen once any line is.
  await page.waitForFunction(
    (before) => document.querySelector('#attempt code')?.textContent !== before && document.querySelector('pre.timeline span.line') !== null,
    shownBefore,
    { timeout: 30_000, polling: 'raf' },
  );
  return Date.now() - started;
}

const browser = await chromium.launch({ executablePath: process.env.BERTH_CHROMIUM ?? '/usr/lib/chromium/chromium', headless: true });
try {
  if ((await settled()) !== 'succeeded') throw new Error(`${slug}'s first deployment did not succeed`);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await signInToQuickstart(page);
  await page.goto(`${origin}/resources/${id}/deployments`);
  await page.locator('pre.timeline span.line').first().waitFor({ timeout: 30_000 });

  const onScreen = [];
  const bare = [];
  for (let round = 0; round < rounds; round++) {
    bare.push(await bareFirstEvent());
    await settled();
    onScreen.push(await consoleFirstEvent(page));
    await settled();
  }
  const shown = median(onScreen);
  const baseline = median(bare);
  console.log(`Deploy → first event: console ${onScreen.join(', ')} ms; bare stream ${bare.join(', ')} ms`);
  goal(`first deployment event on screen after Deploy (median of ${rounds})`, shown, ' ms', true, `baseline: POST + bare timeline stream ${baseline} ms`);
  goal('… after the bare stream had it', shown - baseline, ' ms', shown - baseline <= 1000, 'goal ≤ 1,000 ms');
} finally {
  await browser.close();
  await api('DELETE', `/resources/${id}`, { confirmation: { resourceSlug: slug } }).catch((e) => console.error(`could not delete ${slug}: ${e.message}`));
}
report();
