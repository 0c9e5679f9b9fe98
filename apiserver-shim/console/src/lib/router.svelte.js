// A small history router: the path and query live in the URL, so filters, tabs and pages
// survive a reload and can be shared as links.
export const route = $state({ path: location.pathname, query: new URLSearchParams(location.search) });

function sync() {
  route.path = location.pathname;
  route.query = new URLSearchParams(location.search);
}

export function navigate(href, { replace = false } = {}) {
  if (href === location.pathname + location.search) return;
  history[replace ? 'replaceState' : 'pushState'](null, '', href);
  sync();
  window.scrollTo(0, 0);
}

/** Changes one query parameter in place (no new history entry): filters and sort orders. */
export function setQuery(key, value) {
  const params = new URLSearchParams(location.search);
  if (value) params.set(key, value);
  else params.delete(key);
  const text = params.toString();
  history.replaceState(null, '', location.pathname + (text ? `?${text}` : ''));
  sync();
}

/** Matches `pattern` ("/resources/:id/:tab?") against `path`: the named parts, or null. */
export function match(pattern, path) {
  const want = pattern.split('/').filter(Boolean);
  const have = path.split('/').filter(Boolean);
  const params = {};
  for (let i = 0; i < want.length; i++) {
    const part = want[i];
    const optional = part.endsWith('?');
    const name = part.replace(/^:/, '').replace(/\?$/, '');
    if (have[i] === undefined) {
      if (optional) continue;
      return null;
    }
    if (part.startsWith(':')) params[name] = decodeURIComponent(have[i]);
    else if (part !== have[i]) return null;
  }
  return have.length <= want.length ? params : null;
}

export function startRouter() {
  window.addEventListener('popstate', sync);
  // In-app links navigate without a page load.
  document.addEventListener('click', (event) => {
    const link = event.target.closest?.('a[href^="/"]');
    if (!link || link.target || event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    if (link.hasAttribute('download')) return;
    event.preventDefault();
    navigate(link.getAttribute('href'));
  });
}
