// Deployment attempt states, as GET /deployments reports them.
export const RUNNING = ['created', 'planning', 'planned', 'running', 'cancel-requested'];

export const isRunning = (deployment) => RUNNING.includes(deployment?.status);

/**
 * Follows an attempt's timeline from after `after` (its last sequence seen): calls `onEntry`
 * per entry and resolves with the final status. A broken stream resumes where it stopped, so a
 * reload, a hidden tab or a restarted shim loses no line.
 */
export async function followTimeline(events, id, { after = 0, onEntry, signal }) {
  let last = after;
  for (let attempt = 0; attempt < 30 && !signal.aborted; attempt++) {
    try {
      for await (const event of events('GET', `/deployments/${id}/timeline/stream?after=${last}`, undefined, signal)) {
        if (event?.kind === 'entry') {
          last = event.entry.sequence;
          onEntry(event.entry);
        } else if (event?.kind === 'closed') {
          return event.status ?? 'ended';
        }
      }
    } catch (error) {
      if (signal.aborted || error.status) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  return null;
}

/**
 * The last crash recorded in an attempt's timeline, oldest entry first: berth-controller writes
 * each crash's evidence (how the container ended, failed health checks, its last lines of
 * output, what happened next) as entries of the step labelled `Runtime`, sharing one timestamp.
 * Empty when the serving container never stopped on its own.
 */
export function lastCrash(entries) {
  const runtime = entries.filter((e) => e.step?.label === 'Runtime');
  const at = runtime.at(-1)?.timestamp;
  return at === undefined ? [] : runtime.filter((e) => e.timestamp === at);
}
