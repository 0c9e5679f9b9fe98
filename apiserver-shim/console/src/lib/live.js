// Keeps pages fresh without reloads: one follow of the change feed (GET /events/stream) for
// the whole tab, shared by every page and tab that listens (a browser allows few connections
// per host), resumed after the last event seen when it breaks, closed when nobody listens.
import { events } from './api.js';

const listeners = new Set();
let controller = null;

async function follow(signal) {
  let after = '';
  while (!signal.aborted) {
    try {
      const path = after ? `/events/stream?after=${encodeURIComponent(after)}` : '/events/stream';
      for await (const event of events('GET', path, undefined, signal)) {
        const change = event?.change;
        after = change?.eventId ?? event?.eventId ?? after;
        if (change) for (const listener of listeners) listener(change);
      }
    } catch (error) {
      // A dropped connection or a restarted shim: resume shortly; from now on when the point
      // to resume from is no longer known (422).
      if (error?.status === 422) after = '';
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

/** Calls `onChange` for each change until the returned function is called. */
export function watchChanges(onChange) {
  listeners.add(onChange);
  if (!controller) {
    controller = new AbortController();
    follow(controller.signal);
  }
  return () => {
    listeners.delete(onChange);
    if (listeners.size === 0 && controller) {
      controller.abort();
      controller = null;
    }
  };
}

/**
 * Calls `reload` for the changes `wanted` accepts, once `ms` after the last of a burst. The
 * returned function stops it and drops a reload still pending: a page that is gone (a deleted
 * resource's) must not fetch.
 */
export function reloadOnChange(wanted, reload, ms = 300) {
  let timer;
  const stop = watchChanges((change) => {
    if (!wanted(change)) return;
    clearTimeout(timer);
    timer = setTimeout(reload, ms);
  });
  return () => {
    stop();
    clearTimeout(timer);
  };
}

/** Calls `fn` once, `ms` after the last call: a burst of changes makes one refetch. */
export function debounce(fn, ms = 300) {
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
