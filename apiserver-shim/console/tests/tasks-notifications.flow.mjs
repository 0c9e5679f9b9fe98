// Issue 43 in the console: a resource's Tasks tab and the organization's Notifications page, in
// a real Chromium against the real stack. An app deployed with an environment variable gets a
// task on its Tasks tab (a bad schedule is refused naming the field, and creates nothing); its
// next run is 03:00 in Berlin; "Run now" fails with exit code 3 and its output shows stdout and
// stderr. A webhook channel pointing at a receiver in this process shows its signing secret
// once; its test message arrives signed and the delivery log says delivered; the task's next
// failed run arrives as `scheduled-task-failed` and is logged too. A member sees the channels
// but no administrator action; the owner deletes the channel and the task with a second click.
// The pages follow the change feed: the flow never reloads or clicks Refresh to see a run end or
// a delivery arrive. Named `.flow.mjs`, so `node --test tests/` leaves it
// to its own test (console_browser.rs runs it alone).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createHmac } from 'node:crypto';
import { env, origin, launch, newPage, shot, signIn, assertNoErrors, assertNotInDom, rest, suffix } from './support.mjs';

const DEPLOY = 240_000;
/** A run: a container started on the server, its output read, the container removed. */
const RUN = 90_000;
/** A delivery: berth-controller sends pending deliveries as they come. */
const DELIVERY = 90_000;
const owner = { email: env('BERTH_CONSOLE_OWNER_EMAIL'), password: env('BERTH_CONSOLE_OWNER_PASSWORD') };
const member = { email: env('BERTH_CONSOLE_MEMBER_EMAIL'), password: env('BERTH_CONSOLE_MEMBER_PASSWORD') };
const serverId = env('BERTH_CONSOLE_SERVER_ID');
const id = suffix();
const slug = `tasks${id}`;
const projectName = `Tasks ${id}`;
const greeting = `hello-${id}`;
const command = 'echo $GREETING; echo oops >&2; exit 3';
const schedule = '0 3 * * *';
const channelName = `Ops ${id}`;
// The part of the webhook URL the API never shows again (reads mask it).
const hookPath = `/hooks/${id}-private`;

let browser;
let page;
let api;
let receiver;
/** What the webhook receiver got: method, path, headers, raw body and parsed JSON. */
const received = [];
const state = {};

/** A webhook receiver on loopback that records every request and answers 200. */
function startReceiver() {
  return new Promise((resolve) => {
    const server = createServer((request, response) => {
      const chunks = [];
      request.on('data', (chunk) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks);
        let json = null;
        try {
          json = JSON.parse(body.toString('utf8'));
        } catch {
          // Recorded as it came.
        }
        received.push({ method: request.method, path: request.url, headers: request.headers, body, json });
        response.writeHead(200, { 'Content-Type': 'text/plain' });
        response.end('ok');
      });
    });
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

before(async () => {
  browser = await launch();
  page = await newPage(browser);
  api = await rest(owner.email, owner.password);
  receiver = await startReceiver();
  state.hookUrl = `http://127.0.0.1:${receiver.address().port}${hookPath}`;
});
after(async () => {
  // What the flow made goes even when a step failed (the harness asserts no resource is left);
  // what the page already deleted answers 404, which is fine here.
  const quietly = (call) => call.catch((error) => console.error(`cleanup: ${error.message}`));
  if (state.taskId) await quietly(api.del(`/scheduled-tasks/${state.taskId}`));
  if (state.channelId) await quietly(api.del(`/notification-channels/${state.channelId}`));
  if (state.resourceId) await quietly(api.del(`/resources/${state.resourceId}`, { confirmation: { resourceSlug: slug } }));
  await browser?.close();
  if (receiver) {
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  }
});

/** Polls `check` (async, truthy when done) every second until `timeout`. */
async function until(check, what, timeout) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    last = await check();
    if (last) return last;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/**
 * Waits until `locator` shows, within `timeout`, with no click: the pages follow the change
 * feed, so a run that ends or a delivery that arrives shows by itself.
 */
async function shows(locator, what, timeout) {
  try {
    await locator.first().waitFor({ timeout });
  } catch (error) {
    if (error.name === 'TimeoutError') assert.fail(`timed out waiting for ${what}`);
    throw error;
  }
  return locator.first();
}

const tasksTable = () => page.getByRole('table', { name: 'Scheduled tasks' });
const taskRow = () => tasksTable().getByRole('row').filter({ hasText: schedule });
const runRow = (runId) => page.getByRole('table', { name: 'Task runs' }).getByRole('row').filter({ hasText: runId });
const cell = (name) => page.getByRole('cell', { name, exact: true });
const channelRow = (on = page) => on.getByRole('table', { name: 'Notification channels' }).getByRole('row').filter({ hasText: channelName });
const deliveryRows = (on = page) => on.getByRole('table', { name: 'Notification deliveries' }).getByRole('row');

/** Fills the New task form and submits it. */
async function submitTask(scheduleText) {
  const form = page.getByRole('form', { name: 'New scheduled task' });
  await form.getByLabel('Schedule').fill(scheduleText);
  await form.getByLabel('Time zone').fill('Europe/Berlin');
  await form.getByLabel('Command to run').fill(command);
  await form.getByLabel('Retry limit').fill('0');
  await form.getByRole('button', { name: 'Create task' }).click();
}

/** Clicks Run now on the task; returns the run's id as the page's notice names it. */
async function runNow() {
  await taskRow().getByRole('button', { name: 'Run now' }).click();
  const notice = page.getByRole('status').filter({ hasText: 'of task' });
  await notice.waitFor();
  const [, runId] = (await notice.textContent()).match(/Run (\S+) of task/) ?? [];
  assert.ok(runId, `the notice names the run: ${await notice.textContent()}`);
  return runId;
}

/** Waits until run `runId` failed; asserts its exit code and trigger. */
async function waitFailed(runId) {
  await shows(runRow(runId).filter({ has: cell('failed') }), `run ${runId} to fail`, RUN);
  const cells = runRow(runId).getByRole('cell');
  assert.equal((await cells.nth(2).textContent()).trim(), 'manual', 'trigger');
  assert.equal((await cells.nth(3).textContent()).trim(), '3', 'exit code');
  assert.match(await cells.nth(7).textContent(), /exited with code 3/, 'why it failed');
}

/** The webhook request of `event`, once the receiver got it, checked for its signature. */
async function hook(event, match = () => true) {
  const request = await until(() => received.find((r) => r.json?.event === event && match(r.json)), `a ${event} webhook`, DELIVERY);
  assert.equal(request.method, 'POST');
  assert.equal(request.path, hookPath);
  const signature = request.headers['x-berth-signature-256'];
  assert.ok(signature, `the ${event} webhook is signed: ${JSON.stringify(request.headers)}`);
  assert.equal(signature, `sha256=${createHmac('sha256', state.secret).update(request.body).digest('hex')}`, 'signed with the secret shown once');
  assert.equal(request.json.channelId, state.channelId);
  return request;
}

test('a task is created on the Tasks tab and listed with its next run; a bad schedule creates nothing', async () => {
  const project = await api.post('/projects', { name: projectName });
  state.projectId = project.id;
  const environment = await api.post('/environments', { projectId: project.id, name: 'production', kind: 'production' });
  // Inherited by the resource, so by every run of its tasks.
  await api.post(`/environments/${environment.id}/variables`, { key: 'GREETING', value: greeting });
  const resource = await api.post('/resources', {
    projectId: project.id,
    environmentId: environment.id,
    name: slug,
    slug,
    kind: 'application',
    serverId,
    source: { kind: 'docker-image', locator: 'berth/sample-app:1' },
    networkProfile: { internalPort: 8080 },
    runtimeProfile: { healthCheck: { path: '/', intervalSeconds: 1, retries: 2 } },
  });
  state.resourceId = resource.id;
  // A run needs a deployed version of the resource to run with.
  await until(async () => {
    const { items } = await api.get(`/deployments?resourceId=${resource.id}`);
    return items.some((d) => d.status === 'succeeded');
  }, 'a succeeded deployment', DEPLOY);

  await signIn(page, owner.email, owner.password);
  await page.goto(`${origin()}/resources/${state.resourceId}/tasks`);
  await page.getByRole('heading', { name: slug }).waitFor();
  assert.equal(await page.getByRole('link', { name: 'Tasks', exact: true }).getAttribute('aria-current'), 'page');
  await tasksTable().getByText('No scheduled task yet.').waitFor();
  assert.match(await page.getByLabel('Equivalent berth command').first().textContent(), new RegExp(`berth tasks list --resource ${slug}`));

  await submitTask(schedule);
  await page.getByRole('status').filter({ hasText: /Task tsk-\S+ created/ }).waitFor();
  const { items } = await api.get(`/scheduled-tasks?resourceId=${state.resourceId}`);
  assert.equal(items.length, 1, JSON.stringify(items));
  const [task] = items;
  state.taskId = task.taskId;
  assert.deepEqual(
    [task.schedule, task.timezone, task.commandIntent, task.retryLimit, task.status],
    [schedule, 'Europe/Berlin', command, 0, 'enabled'],
  );
  const row = taskRow();
  assert.match(await row.textContent(), /Europe\/Berlin/);
  assert.ok((await row.textContent()).includes(command), 'the command is listed');
  // The controller computes the next run once it has seen the task.
  const next = await shows(taskRow().locator('time'), "the task's next run", 60_000);
  const at = new Date(await next.getAttribute('datetime'));
  assert.ok(at.getTime() > Date.now(), `the next run is ahead: ${at.toISOString()}`);
  const berlin = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  assert.equal(berlin.format(at), '03:00', `read in Europe/Berlin: ${at.toISOString()}`);
  assert.match(await taskRow().textContent(), /never/, 'no run yet');
  await shot(page, 'tasks-01-created');
  assertNoErrors(page);

  await submitTask('61 * * * *');
  const refusal = page.getByRole('alert');
  await refusal.waitFor();
  const text = await refusal.textContent();
  assert.match(text, /Field:\s*schedule/, text);
  assert.match(text, /61 \* \* \* \*/, text);
  assert.equal((await api.get(`/scheduled-tasks?resourceId=${state.resourceId}`)).items.length, 1, 'nothing was created');
  assert.equal(await tasksTable().getByRole('row').count(), 2, 'the header and the one task');
  await shot(page, 'tasks-02-bad-schedule');
  assertNoErrors(page, [/^422 POST .*\/api\/scheduled-tasks$/]);
});

test("Run now fails with exit code 3, and the run's output shows the variable and stderr", async () => {
  const runId = await runNow();
  state.firstRun = runId;
  await page.getByRole('heading', { name: `Runs of ${state.taskId}` }).waitFor();
  await waitFailed(runId);
  // The task's latest run too (a change of the run re-read the tasks).
  await shows(taskRow().filter({ hasText: /failed\s*exit 3/ }), 'the task to list its latest run', 30_000);
  await shot(page, 'tasks-03-run-failed');

  await runRow(runId).getByRole('button', { name: `Logs of ${runId}` }).click();
  await page.getByRole('heading', { name: `Output of ${runId}` }).waitFor();
  const output = page.getByLabel('Run output');
  await output.getByText(greeting).first().waitFor();
  const lines = await output.textContent();
  assert.match(lines, new RegExp(`^${greeting}\\s*$`, 'm'), `stdout as printed: ${lines}`);
  assert.match(lines, /^! oops\s*$/m, `stderr marked: ${lines}`);
  assert.match(await page.getByLabel('Equivalent berth command').last().textContent(), new RegExp(`berth tasks logs ${runId}`));
  await shot(page, 'tasks-04-run-output');
  assertNoErrors(page);
});

test('a webhook channel shows its signing secret once, and its test arrives signed and is logged delivered', async () => {
  await page.getByRole('link', { name: 'Notifications', exact: true }).click();
  await page.getByRole('heading', { name: 'Notifications', level: 1 }).waitFor();
  await page.getByRole('table', { name: 'Notification channels' }).waitFor();
  assert.match(await page.getByLabel('Equivalent berth command').first().textContent(), /berth notify channels/);

  const form = page.getByRole('form', { name: 'New webhook channel' });
  await form.getByLabel('Channel name').fill(channelName);
  await form.getByLabel('Webhook URL').fill(state.hookUrl);
  await form.getByLabel('scheduled-task-failed').check();
  // A select's label text holds its options too: matched by substring.
  await form.getByLabel('Project').selectOption({ label: projectName });
  await form.getByRole('button', { name: 'Add channel' }).click();
  const secretNotice = page.getByRole('status', { name: 'Signing secret' });
  await secretNotice.waitFor();
  state.secret = (await secretNotice.getByTestId('signing-secret').textContent()).trim();
  assert.match(state.secret, /^[0-9a-f]{64}$/);
  const channel = (await api.get('/notification-channels')).items.find((c) => c.name === channelName);
  assert.ok(channel, 'the channel exists');
  state.channelId = channel.id;
  assert.ok(channel.events.includes('scheduled-task-failed'), JSON.stringify(channel.events));
  assert.equal(channel.projectId, state.projectId);

  const row = channelRow();
  await row.waitFor();
  const listed = await row.textContent();
  assert.match(listed, /webhook/);
  assert.ok(listed.includes(`http://127.0.0.1:${receiver.address().port}/****`), `the target is masked: ${listed}`);
  assert.match(listed, /scheduled-task-failed/);
  assert.ok(listed.includes(projectName), `the project is named: ${listed}`);
  await assertNotInDom(page, hookPath, "the webhook URL's path");
  await shot(page, 'notify-01-secret-once');
  assertNoErrors(page);

  // Shown once: gone after leaving the page and coming back.
  await page.getByRole('link', { name: 'Projects', exact: true }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  await page.getByRole('link', { name: 'Notifications', exact: true }).click();
  await channelRow().waitFor();
  assert.equal(await page.getByRole('status', { name: 'Signing secret' }).count(), 0);
  await assertNotInDom(page, state.secret, 'the signing secret');

  await channelRow().getByRole('button', { name: `Test channel ${channelName}` }).click();
  await page.getByRole('status').filter({ hasText: `Test message to ${channelName} queued` }).waitFor();
  const delivered = deliveryRows().filter({ has: cell('test') }).filter({ has: cell('delivered') });
  await shows(delivered, 'the test delivery to be delivered', DELIVERY);
  const request = await hook('test');
  assert.equal(request.json.subject.name, state.channelId, JSON.stringify(request.json));
  // The channel's last delivery too (a change of the delivery re-read the channels).
  await shows(channelRow().filter({ hasText: 'delivered' }), "the channel's last delivery", 30_000);
  assert.match(await delivered.first().textContent(), new RegExp(channelName));
  await shot(page, 'notify-02-test-delivered');
  assertNoErrors(page);
});

test("the task's next failed run reaches the channel as scheduled-task-failed and is logged", async () => {
  await page.goto(`${origin()}/resources/${state.resourceId}/tasks`);
  await taskRow().waitFor();
  const runId = await runNow();
  assert.notEqual(runId, state.firstRun);
  await waitFailed(runId);
  await shot(page, 'tasks-05-second-run-failed');

  const request = await hook('scheduled-task-failed', (body) => body.subject?.name === runId);
  assert.equal(request.json.subject.kind, 'ScheduledTaskRun');
  assert.equal(request.json.projectId, state.projectId);
  assert.match(request.json.summary, /exited with code 3/, JSON.stringify(request.json));
  assert.ok(!received.some((r) => r.json?.subject?.name === state.firstRun), 'the run before the channel was not sent');

  await page.getByRole('link', { name: 'Notifications', exact: true }).click();
  await page.getByRole('heading', { name: 'Notifications', level: 1 }).waitFor();
  const logged = deliveryRows().filter({ has: cell('scheduled-task-failed') }).filter({ hasText: runId });
  await shows(logged.filter({ has: cell('delivered') }), 'the scheduled-task-failed delivery to be logged delivered', DELIVERY);
  assert.match(await logged.first().textContent(), /exited with code 3/);
  await shot(page, 'notify-03-task-failure-delivered');
  assertNoErrors(page);
});

test('a member sees the channels and deliveries but no way to add, test or delete a channel', async () => {
  const memberPage = await newPage(browser);
  await signIn(memberPage, member.email, member.password);
  await memberPage.goto(`${origin()}/notifications`);
  await memberPage.getByRole('heading', { name: 'Notifications', level: 1 }).waitFor();
  await channelRow(memberPage).waitFor();
  await memberPage.getByText("Channels are added, tested and deleted by the organization's administrators.").waitFor();
  await deliveryRows(memberPage).filter({ hasText: 'scheduled-task-failed' }).first().waitFor();
  assert.equal(await memberPage.getByRole('form', { name: 'New webhook channel' }).count(), 0);
  for (const name of ['Add channel', `Test channel ${channelName}`, `Delete channel ${channelName}`]) {
    assert.equal(await memberPage.getByRole('button', { name }).count(), 0, `no ${name} button`);
  }
  await shot(memberPage, 'notify-04-member');
  assertNoErrors(memberPage);
  await memberPage.context().close();
});

test('the channel and the task are deleted after a second click', async () => {
  await channelRow().getByRole('button', { name: `Delete channel ${channelName}` }).click();
  await channelRow().getByRole('button', { name: `Keep ${channelName}` }).click();
  assert.ok((await api.get('/notification-channels')).items.some((c) => c.id === state.channelId), 'one click deletes nothing');
  await channelRow().getByRole('button', { name: `Delete channel ${channelName}` }).click();
  await channelRow().getByRole('button', { name: `Confirm delete ${channelName}` }).click();
  await page.getByRole('status').filter({ hasText: `Channel ${channelName} deleted` }).waitFor();
  assert.equal(await channelRow().count(), 0);
  assert.ok(!(await api.get('/notification-channels')).items.some((c) => c.id === state.channelId));
  state.channelId = null;
  await shot(page, 'notify-05-channel-deleted');
  assertNoErrors(page);

  await page.goto(`${origin()}/resources/${state.resourceId}/tasks`);
  await taskRow().getByRole('button', { name: `Delete task ${state.taskId}` }).click();
  await taskRow().getByRole('button', { name: `Keep ${state.taskId}` }).click();
  assert.equal((await api.get(`/scheduled-tasks?resourceId=${state.resourceId}`)).items.length, 1, 'one click deletes nothing');
  await taskRow().getByRole('button', { name: `Delete task ${state.taskId}` }).click();
  await taskRow().getByRole('button', { name: `Confirm delete ${state.taskId}` }).click();
  await page.getByRole('status').filter({ hasText: `Task ${state.taskId} deleted` }).waitFor();
  await tasksTable().getByText('No scheduled task yet.').waitFor();
  assert.equal((await api.get(`/scheduled-tasks?resourceId=${state.resourceId}`)).items.length, 0);
  state.taskId = null;
  await shot(page, 'tasks-06-deleted');
  assertNoErrors(page);
});
