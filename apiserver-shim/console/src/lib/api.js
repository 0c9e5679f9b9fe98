// The console's only way to the server: the public REST API under /api, with the session's
// bearer token. Whatever the console does, a script can do with the same calls.
import { session, signOut } from './session.svelte.js';

/**
 * The API's request and answer shapes, generated from /api/openapi.json into api-types.d.ts by
 * `hack/console.sh build` (CI fails when they drift from the shim).
 * @typedef {import('./api-types').components['schemas']} Schemas
 */

/** An answer the API refused, carrying its error envelope. */
export class ApiError extends Error {
  constructor(status, envelope) {
    const error = envelope?.error ?? {};
    super(error.message ?? `request failed with status ${status}`);
    this.status = status;
    this.code = error.code ?? 'unknown';
    this.field = error.details?.field;
    // The rest of the envelope's context, e.g. a refused delete's blockers.
    this.details = error.details ?? {};
    this.retriable = Boolean(error.retriable);
  }
}

function headers(body) {
  const h = { Accept: 'application/json' };
  if (body !== undefined) h['Content-Type'] = 'application/json';
  if (session.current?.token) h.Authorization = `Bearer ${session.current.token}`;
  return h;
}

/** `query` entries that are empty are left out, so forms can pass their fields as they are. */
export function withQuery(path, query = {}) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export async function request(method, path, body, { signal } = {}) {
  const response = await fetch(`/api${path}`, {
    method,
    headers: headers(body),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  return answer(response);
}

async function answer(response) {
  const text = await response.text();
  const json = text ? safeJson(text) : null;
  if (response.ok) return json;
  // A revoked or expired session signs out cleanly instead of failing every later call.
  if (response.status === 401) signOut();
  throw new ApiError(response.status, json);
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return { error: { message: text.slice(0, 200) } };
  }
}

export const api = {
  get: (path, query, options) => request('GET', withQuery(path, query), undefined, options),
  post: (path, body = {}) => request('POST', path, body),
  del: (path, body) => request('DELETE', path, body),
  /** POSTs a file's bytes as they are (`application/octet-stream`), its options in `query`. */
  upload: async (path, file, query) =>
    answer(
      await fetch(`/api${withQuery(path, query)}`, {
        method: 'POST',
        headers: { ...headers(), 'Content-Type': 'application/octet-stream' },
        body: file,
      }),
    ),
};

/**
 * Reads a text/event-stream answer (EventSource cannot send a bearer token): yields each
 * event's parsed `data` until the stream ends or `signal` aborts.
 */
export async function* events(method, path, body, signal) {
  const response = await fetch(`/api${path}`, {
    method,
    headers: { ...headers(body), Accept: 'text/event-stream' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (!response.ok) await answer(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data) yield safeJson(data);
    }
  }
}
