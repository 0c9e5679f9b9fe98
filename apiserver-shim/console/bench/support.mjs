// Shared by the console benches: the stack's first administrator over REST (hack/bench.sh
// sets BERTH_CONSOLE_URL, BERTH_ADMIN_EMAIL and BERTH_ADMIN_PASSWORD), and the goals a bench
// prints (`PASS:`/`FAIL:` lines that hack/bench.sh's summary collects).

export const origin = process.env.BERTH_CONSOLE_URL;
export const email = process.env.BERTH_ADMIN_EMAIL;
export const password = process.env.BERTH_ADMIN_PASSWORD;

const results = [];

/** Records a figure beside its goal. */
export const goal = (name, value, unit, ok, detail) => results.push(`${ok ? 'PASS' : 'FAIL'}: ${name}: ${value}${unit} (${detail})`);

/** Prints the goals and fails the process when one was missed. */
export function report() {
  console.log(results.join('\n'));
  process.exitCode = results.some((r) => r.startsWith('FAIL')) ? 1 : 0;
}

/** Signs the administrator in: the bearer headers, and a JSON call that throws on an error. */
export async function signInOverRest() {
  const login = await fetch(`${origin}/api/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email, password }),
  }).then((r) => r.json());
  const headers = { Authorization: `Bearer ${login.token}`, 'Content-Type': 'application/json' };
  async function api(method, path, body) {
    const response = await fetch(`${origin}/api${path}`, { method, headers, body: body && JSON.stringify(body) });
    const json = await response.json().catch(() => null);
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  }
  return { headers, api };
}

/** The console signed in as the administrator, acting in the quickstart's organization. */
export async function signInToQuickstart(page) {
  await page.goto(`${origin}/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  // A new session acts in the user's default organization: switch to the quickstart's.
  await page.getByLabel('Organization').selectOption('acme');
  await page.getByRole('link', { name: 'Shop' }).waitFor();
}
