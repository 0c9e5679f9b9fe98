// Who is signed in and which organization they act in (GET /organizations/current-context).
// Roles decide which actions the console offers; the API enforces them either way.
import { api } from './api.js';

export const context = $state({ current: null });

const RANK = { viewer: 0, member: 1, admin: 2, owner: 3 };

export async function loadContext() {
  context.current = await api.get('/organizations/current-context');
  return context.current;
}

export function clearContext() {
  context.current = null;
}

/** Whether the caller's role in the current organization is at least `role`. */
export function can(role) {
  const mine = context.current?.currentOrganization?.role ?? 'viewer';
  return (RANK[mine] ?? 0) >= RANK[role];
}
