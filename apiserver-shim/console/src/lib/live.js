// Keeps a page fresh without reloads: follows the change feed (GET /events/stream) and calls
// `onChange` for each change, reconnecting after a break. Returns a function that stops it.
import { events } from './api.js';

export function watchChanges(onChange) {
  const controller = new AbortController();
  (async () => {
    while (!controller.signal.aborted) {
      try {
        for await (const event of events('GET', '/events/stream', undefined, controller.signal)) {
          if (event?.change) onChange(event.change);
        }
      } catch {
        // A dropped connection or a restarted shim: reconnect shortly.
      }
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  })();
  return () => controller.abort();
}

/** Calls `fn` at most once per `ms`, after the last call (a burst of changes → one refetch). */
export function debounce(fn, ms = 300) {
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
