// The signed-in session. The token lives in sessionStorage (gone with the tab), never in
// localStorage or a cookie, so another site or a later visitor of this browser cannot use it.
const KEY = 'berth.session';

function load() {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) ?? 'null');
  } catch {
    return null;
  }
}

export const session = $state({ current: load() });

export function signIn(record) {
  session.current = { token: record.token, sessionId: record.sessionId, userId: record.userId };
  sessionStorage.setItem(KEY, JSON.stringify(session.current));
}

export function signOut() {
  session.current = null;
  sessionStorage.removeItem(KEY);
}
