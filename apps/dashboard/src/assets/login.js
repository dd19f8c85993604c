// Sign-in page: exchanges a dashboard token for a session cookie (POST /api/v1/session; the cookie is
// HttpOnly, so this script never sees it). `/login#token=<token>` signs in at once: the fragment never
// leaves the browser, and is removed from the address bar and history before anything else.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);

  function fail(text) {
    $('login-error').textContent = text;
    $('login-error').hidden = false;
  }

  async function signIn(token) {
    const res = await fetch('/api/v1/session', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ token }),
    });
    if (res.ok) return location.replace('/');
    const payload = await res.json().catch(() => ({}));
    fail(res.status === 401 ? 'not a dashboard token' : payload.message || `HTTP ${res.status}`);
  }

  async function init() {
    const m = /^#token=(.+)$/.exec(location.hash);
    if (m) history.replaceState(null, '', '/login');
    $('login').addEventListener('submit', (e) => {
      e.preventDefault();
      signIn($('token').value.trim()).catch((err) => fail(err.message));
    });
    if (m) return signIn(decodeURIComponent(m[1])).catch((err) => fail(err.message));
    const s = await fetch('/api/v1/session', { headers: { accept: 'application/json' } }).then((r) => r.json());
    if (s.authenticated) return location.replace('/');
    if (s.mode === 'proxy') $('login-hint').textContent = "Sign in through your organisation's sign-in proxy (open the dashboard's usual address), or paste a dashboard token.";
  }

  document.addEventListener('DOMContentLoaded', () => init().catch((err) => fail(err.message)));
})();
