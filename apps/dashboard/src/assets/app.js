// Defender dashboard: plain browser JavaScript, no build step. Live data arrives by server-sent
// events (/api/v1/events: `cluster` every refresh, `alarm` per alarm or hold); chamber views are
// fetched from /api/v1/chambers/<tool:chamber> and refreshed while open.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  // Markup of charts, monitors and alarm lines (assets/render.js, loaded first).
  const render = window.DefenderRender;
  const { esc, fmt, time } = render;
  const state = {
    cluster: null,
    alarms: [],
    alarmTotal: 0,
    chambers: [],
    chamberKey: null,
    chamberTimer: null,
    chamberLoading: false,
    // Every indicator of the chamber (`?all=1`), not only those charted by default; the charts' filter.
    chamberAll: false,
    indicatorFilter: '',
    lastChamber: null,
    // GET /api/v1/session: { mode, authenticated, role, user, via }; the buttons need the operator role.
    session: null,
  };
  const isOperator = () => !!state.session && state.session.role === 'operator';
  // Signed out, or the session expired: the login page (it comes back here after signing in).
  function toLogin() {
    location.assign('/login');
  }

  // ---------------------------------------------------------------------------------------------
  // helpers
  // ---------------------------------------------------------------------------------------------
  function compact(n) {
    if (n === null || n === undefined) return '—';
    if (n >= 1e9) return (n / 1e9).toFixed(1) + 'G';
    if (n >= 1e6) return (n / 1e6).toFixed(1) + 'M';
    if (n >= 1e3) return (n / 1e3).toFixed(n >= 1e4 ? 0 : 1) + 'K';
    return String(Math.round(n));
  }
  function pct(x) {
    return x === null || x === undefined ? '—' : (x * 100).toFixed(1) + '%';
  }
  let toastTimer = null;
  function toast(text, error) {
    const t = $('toast');
    t.textContent = text;
    t.className = 'toast' + (error ? ' error' : '');
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => (t.hidden = true), error ? 8000 : 4000);
  }
  // The page's CSP forbids inline style attributes; bar geometry goes through the CSSOM.
  function applyGeometry(root) {
    for (const el of root.querySelectorAll('[data-width]')) el.style.width = el.dataset.width + '%';
    for (const el of root.querySelectorAll('[data-left]')) el.style.left = el.dataset.left + '%';
  }
  async function getJson(url) {
    const res = await fetch(url, { headers: { accept: 'application/json' } });
    if (res.status === 401) toLogin();
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
    return res.json();
  }
  async function action(path, body) {
    const res = await fetch('/api/v1/local-fab/' + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-dashboard-action': '1' },
      body: JSON.stringify(body || {}),
    });
    const payload = await res.json().catch(() => ({}));
    if (res.status === 401) toLogin();
    if (!res.ok) throw new Error(payload.message || payload.error || `HTTP ${res.status}`);
    return payload;
  }

  // ---------------------------------------------------------------------------------------------
  // routing: #/ (cluster), #/chambers, #/chamber/<key>, #/alarms
  // ---------------------------------------------------------------------------------------------
  function route() {
    const h = location.hash || '#/';
    let view = 'cluster';
    if (h.startsWith('#/chamber/')) {
      view = 'chambers';
      openChamber(decodeURIComponent(h.slice('#/chamber/'.length)));
    } else if (h.startsWith('#/chambers')) {
      view = 'chambers';
      openChamber(null);
    } else if (h.startsWith('#/alarms')) view = 'alarms';
    for (const v of ['cluster', 'chambers', 'alarms']) $('view-' + v).hidden = v !== view;
    for (const a of document.querySelectorAll('.tabs a')) a.classList.toggle('active', a.dataset.tab === view);
    if (view === 'chambers') loadChamberList();
  }

  // ---------------------------------------------------------------------------------------------
  // cluster view
  // ---------------------------------------------------------------------------------------------
  function renderTop(c) {
    const m = c.map;
    const leader = c.leader && c.leader.valid ? c.leader.holder : 'none';
    const alive = c.defenders.filter((d) => d.alive).length;
    const st = render.clusterStateFact(c);
    const facts = [
      ['leader', esc(leader), 'leader'],
      ['map version', m ? 'v' + m.version : '—', 'map-version'],
      ['trigger', m ? esc(m.trigger) : '—', 'map-trigger'],
      [st.label, esc(st.value), 'cluster-state', st.title],
      ['defenders alive', `${alive}/${c.defenders.length}`, 'defenders-alive'],
      ['chambers', m ? compact(m.chamberCount) : '—', 'chamber-count'],
    ];
    $('top-facts').innerHTML = facts.map(([k, v, id, title]) => `<div class="fact"${title ? ` title="${esc(title)}"` : ''}><b data-testid="${id}">${v}</b><span>${esc(k)}</span></div>`).join('') +
      (c.problems.length ? `<div class="problems" data-testid="problems">${c.problems.map(esc).join('<br>')}</div>` : '') +
      // What happened and is over (a recreated stream whose chambers re-based): history, not a problem.
      ((c.notes || []).length ? `<div class="notes muted" data-testid="notes">${c.notes.map(esc).join('<br>')}</div>` : '');
    $('subtitle').textContent = c.localFab ? 'local fab' : 'cluster';
    $('fab-actions').hidden = !c.localFab || !isOperator();
  }

  function renderDefenders(c) {
    const maxW = Math.max(1, ...c.defenders.map((d) => d.weight), (c.map?.statistics.avgWeightPerDefender || 0) * 1.2);
    const avg = c.map?.statistics.avgWeightPerDefender || 0;
    const unit = render.mapWeightUnit(c);
    const rows = c.defenders.map((d) => {
      const w = (d.weight / maxW) * 100;
      const a = (avg / maxW) * 100;
      const over = d.weightVsAvg !== null && d.weightVsAvg > 1.05;
      const crash = c.localFab && d.alive && isOperator()
        ? `<button type="button" class="danger" data-crash="${esc(d.defenderId)}" data-testid="crash-${esc(d.defenderId)}">Crash</button>`
        : '';
      return `<tr class="${d.alive ? '' : 'dead'}" data-testid="defender-row" data-defender-id="${esc(d.defenderId)}" data-alive="${d.alive}" data-chambers="${d.chambers}">
        <td><b>${esc(d.defenderId)}</b><br><span class="muted">${esc(d.podName || '')}</span></td>
        <td><span class="badge ${esc(d.state)}">${esc(d.state)}</span></td>
        <td>${d.chambers}${d.load && d.load.chambers !== d.chambers ? ` <span class="muted">(runs ${d.load.chambers})</span>` : ''}</td>
        <td><div class="weight"><div class="bar" title="${esc(render.weightName(unit))}: ${esc(render.weightText(d.weight, unit))}"><div class="fill ${over ? 'over' : ''}" data-width="${w.toFixed(1)}"></div>${avg ? `<div class="avg" data-left="${a.toFixed(1)}" title="average"></div>` : ''}</div><span class="ratio">${d.weightVsAvg === null ? '—' : d.weightVsAvg.toFixed(2) + '×'}</span></div></td>
        <td>${d.lastSeenSeconds === null ? '—' : d.lastSeenSeconds.toFixed(1) + ' s ago'}<br><span class="muted">map v${d.mapVersionSeen ?? '—'}</span></td>
        <td>${d.load ? compact(d.load.processedTotal) : '—'}${d.load && d.load.inflight ? ` <span class="muted">(${d.load.inflight} busy)</span>` : ''}</td>
        <td>${crash}</td></tr>`;
    });
    $('defenders').innerHTML = rows.join('') || '<tr><td colspan="7" class="muted">no defenders yet</td></tr>';
    applyGeometry($('defenders'));
  }

  function renderMap(c) {
    const m = c.map;
    if (!m) {
      $('map').innerHTML = '<p class="muted">no map published yet (the controller batches joins during the cold-start window)</p>';
      return;
    }
    const s = m.statistics;
    const unit = render.mapWeightUnit(c);
    $('map').innerHTML = `<dl class="kv">
      <dt>version</dt><dd data-testid="map-version-detail">v${m.version} <span class="muted">(token ${esc(m.fencingToken)})</span></dd>
      <dt>published</dt><dd>${time(m.timestamp)} by ${esc(m.controllerId)}</dd>
      <dt>trigger</dt><dd>${esc(m.trigger)}</dd>
      <dt>state when published</dt><dd>${esc(m.state)} · ${esc(m.lifecycleState)}</dd>
      <dt>defenders</dt><dd>${m.defenderCount}</dd>
      <dt>chambers</dt><dd>${m.chamberCount.toLocaleString('en-US')}</dd>
      <dt>${esc(render.weightName(unit))} per defender</dt><dd data-testid="map-weight">min ${esc(render.weightText(s.minWeightPerDefender, unit))} · avg ${esc(render.weightText(s.avgWeightPerDefender, unit))} · max ${esc(render.weightText(s.maxWeightPerDefender, unit))} (max/avg ${s.avgWeightPerDefender ? (s.maxWeightPerDefender / s.avgWeightPerDefender).toFixed(3) : '—'})</dd>
      <dt>last change</dt><dd>${s.chambersMoved} chambers, ${pct(s.movedWeightFraction)} of the weight (floor ${pct(s.floorFraction)}) in ${fmt(s.calculationDurationMs, 3)} ms</dd>
    </dl>`;
  }

  function renderControllers(c) {
    const leader = c.leader;
    const parts = [];
    parts.push(`<dl class="kv"><dt>leader (election)</dt><dd>${leader ? `${esc(leader.holder)} <span class="badge ${leader.valid ? 'leader' : 'MISSING'}">${leader.valid ? 'lease held' : 'lease expired'}</span> <span class="muted">epoch ${esc(leader.epoch)}, until ${time(leader.leaseExpiresAt)}</span>` : '<span class="muted">no record</span>'}</dd></dl>`);
    if (c.controllers.length === 0) parts.push('<p class="muted">CONTROLLER_URLS not set: trigger state comes from the map only.</p>');
    for (const k of c.controllers) {
      if (!k.reachable) {
        parts.push(`<p><b>${esc(k.url)}</b> <span class="badge MISSING">unreachable</span> <span class="muted">${esc(k.error || '')}</span></p>`);
        continue;
      }
      const pending = k.pendingTrigger
        ? `waiting: <b>${esc(k.pendingTrigger.trigger)}</b> until ${time(k.pendingTrigger.deadline)}`
        : esc(k.lastDecision || (k.isLeader ? 'idle' : 'standby'));
      parts.push(`<p data-testid="controller"><b>${esc(k.controllerId)}</b> ${k.isLeader ? '<span class="badge leader">leader</span>' : '<span class="badge">standby</span>'}<br>
        <span class="muted">state</span> ${esc(k.clusterState || '—')} · <span class="muted">lifecycle</span> ${esc(k.lifecycle || '—')} · <span class="muted">active</span> ${k.activeDefenders ?? '—'}<br>
        <span class="muted">trigger</span> <span data-testid="trigger-state">${pending}</span></p>`);
    }
    $('controllers').innerHTML = parts.join('');
  }

  function renderHistory(c) {
    $('history').innerHTML = c.history.map((h) => {
      const moves = h.moves.slice(0, 4).map((m) => `${esc(m.chamber)} ${esc(m.from || '∅')}→${esc(m.to || '∅')}`).join(', ');
      return `<tr data-version="${h.version}"><td>v${h.version}</td><td>${time(h.timestamp)}</td><td>${esc(h.trigger)}</td><td>${h.defenderCount}</td>
        <td>${h.chambersMoved}</td><td>${pct(h.movedWeightFraction)} <span class="muted">(${pct(h.floorFraction)})</span></td><td>${h.maxOverAvg ? h.maxOverAvg.toFixed(3) : '—'}</td>
        <td class="moves">${moves}${h.movesTotal > 4 ? ` … +${h.movesTotal - 4}` : ''}</td></tr>`;
    }).join('') || '<tr><td colspan="8" class="muted">no map yet</td></tr>';
  }

  function renderCluster() {
    const c = state.cluster;
    if (!c) return;
    renderTop(c);
    renderDefenders(c);
    renderMap(c);
    renderControllers(c);
    renderHistory(c);
  }

  // ---------------------------------------------------------------------------------------------
  // alarms
  // ---------------------------------------------------------------------------------------------
  function renderAlarms(freshSeq) {
    $('alarm-count').textContent = String(state.alarmTotal);
    $('feed').innerHTML = state.alarms.slice(0, 200).map((a) => render.alarmRow(a, a.seq === freshSeq)).join('') || '<tr><td colspan="8" class="muted">no alarms yet</td></tr>';
    $('feed-mini').innerHTML = state.alarms.slice(0, 12).map((a) => render.miniRow(a, a.seq === freshSeq)).join('') || '<li class="muted">no alarms yet</li>';
  }
  function onAlarm(a) {
    if (state.alarms.some((x) => x.seq === a.seq)) return;
    state.alarms.unshift(a);
    if (state.alarms.length > 500) state.alarms.pop();
    state.alarmTotal++;
    renderAlarms(a.seq);
    if (state.chamberKey === a.chamber) scheduleChamberRefresh(300);
  }

  // ---------------------------------------------------------------------------------------------
  // chambers
  // ---------------------------------------------------------------------------------------------
  async function loadChamberList() {
    try {
      const { chambers } = await getJson('/api/v1/chambers');
      state.chambers = chambers;
      renderChamberList();
    } catch (err) {
      toast(`chambers: ${err.message}`, true);
    }
  }
  function renderChamberList() {
    const q = $('chamber-filter').value.trim().toLowerCase();
    const list = state.chambers.filter((c) => !q || c.key.toLowerCase().includes(q) || (c.owner || '').toLowerCase().includes(q));
    $('chamber-list').innerHTML = list.slice(0, 500).map((c) =>
      `<li><a href="#/chamber/${encodeURIComponent(c.key)}" class="${c.key === state.chamberKey ? 'active' : ''}" data-chamber="${esc(c.key)}">
        <span>${esc(c.key)} <span class="muted">${esc(c.owner || '')}</span></span>${c.recentAlarms ? `<span class="n">${c.recentAlarms}</span>` : ''}</a></li>`,
    ).join('') || '<li class="muted">no chambers</li>';
  }
  function openChamber(key) {
    if (state.chamberKey === key && key !== null) return;
    state.chamberKey = key;
    state.chamberAll = false;
    state.indicatorFilter = '';
    $('indicator-filter').value = '';
    $('btn-all-indicators').textContent = 'show every indicator';
    $('chamber-tools').hidden = !key;
    clearTimeout(state.chamberTimer);
    if (!key) {
      $('chamber').innerHTML = '<p class="muted">Pick a chamber: its U-charts (centre line, control limits, violations), its chamber monitor (T², SPE) and alarms appear here.</p>';
      return;
    }
    $('chamber').innerHTML = `<p class="muted">loading ${esc(key)} …</p>`;
    loadChamber();
  }
  function scheduleChamberRefresh(ms) {
    clearTimeout(state.chamberTimer);
    state.chamberTimer = setTimeout(loadChamber, ms);
  }
  async function loadChamber() {
    const key = state.chamberKey;
    if (!key || state.chamberLoading) return;
    state.chamberLoading = true;
    try {
      const d = await getJson('/api/v1/chambers/' + encodeURIComponent(key) + (state.chamberAll ? '?all=1' : ''));
      if (state.chamberKey === key) renderChamber(d);
    } catch (err) {
      if (state.chamberKey === key) $('chamber').innerHTML = `<p class="problems">${esc(err.message)}</p>`;
    } finally {
      state.chamberLoading = false;
      if (state.chamberKey === key && !$('view-chambers').hidden) scheduleChamberRefresh(3000);
    }
    renderChamberList();
  }

  const RUN_ALARMS_SHOWN = 5;

  /** Whether a chart matches the indicator filter (every word, in its key, SVID, statistic or meaning). */
  function chartMatches(ch) {
    const words = state.indicatorFilter.toLowerCase().split(/\s+/).filter(Boolean);
    const text = [ch.indicatorKey, ch.svid, ch.indicator, ch.meaning].filter(Boolean).join(' ').toLowerCase();
    return words.every((w) => text.includes(w));
  }

  function renderChamber(d) {
    state.lastChamber = d;
    const shown = d.charts.filter(chartMatches);
    const charts = shown.map((ch) => {
      const lim = ch.limits;
      const m = ch.monitor;
      const sub = lim
        ? `limits v${lim.version}: CL ${fmt(lim.center)} · UCL ${fmt(lim.ucl)} · LCL ${fmt(lim.lcl)} · σ ${fmt(lim.sigma)} <span class="muted">(Phase I ${lim.baselineRuns} runs${lim.excludedRuns ? `, ${lim.excludedRuns} excluded` : ''})</span>`
        : m
          ? `${esc(ch.meaning || '')} <span class="muted">(chamber monitor: judged within the recipe's model)</span>`
          : `Phase I: ${ch.points.length} runs collected, no limits yet`;
      const title = m ? `${esc(m.svid)} · ${esc(m.statistic)} in ${esc(m.window)}` : `${esc(ch.svid || ch.indicator)} · ${esc(ch.indicator)}`;
      return `<div class="chart" data-testid="chart"><h3${ch.meaning ? ` title="${esc(ch.meaning)}"` : ''}>${title} ${ch.violations ? `<span class="hold">${ch.violations} violation${ch.violations > 1 ? 's' : ''}</span>` : ''}</h3>
        <div class="sub">${esc(ch.recipe)} · ${sub}</div>${render.chartSvg(ch, d.events)}</div>`;
    });
    const monitors = d.monitors.map((m) => render.monitorCard(m, d.events));
    const runAlarms = d.alarms.filter((a) => a.run).slice(0, RUN_ALARMS_SHOWN).map(render.runAlarmCard);
    const alarms = d.alarms.map(render.chamberAlarmRow);
    const meta = d.metadata;
    const hidden = [
      shown.length < d.charts.length ? `<span data-testid="filtered-charts">${d.charts.length - shown.length} of ${d.charts.length} charts hidden by the filter.</span>` : '',
      d.hiddenConstantCharts ? `${d.hiddenConstantCharts} constant charts (setpoints and states: no variation, no limits) not shown.` : '',
      d.hiddenMonitoredCharts ? `${d.hiddenMonitoredCharts} more indicators of the chamber monitor not shown (judged together on its T² and SPE charts; those violated last are shown; "show every indicator" above charts them all).` : '',
    ].filter(Boolean);
    $('chamber').innerHTML = `<div class="chamber-head" data-testid="chamber-head" data-chamber="${esc(d.key)}">
        <h2>${esc(d.key)}</h2>
        <span><span class="muted">owner</span> <b data-testid="chamber-owner">${esc(d.owner || '—')}</b>${d.lastMovedAt ? ` <span class="muted">since ${time(d.lastMovedAt)}</span>` : ''}</span>
        <span><span class="muted">samples per run</span> ${meta ? `${compact(meta.weight)} <span class="muted">(${meta.svidCount} SVIDs × ${meta.collectionFreqHz} Hz × ${meta.contextDurationSeconds} s)</span>` : '—'}</span>
        <span><span class="muted">runs applied</span> ${d.state ? `up to seq ${d.state.highWaterMark} <span class="muted">(epoch ${d.state.ownerEpoch}, ${esc(d.state.ownerId)})</span>` : '—'}</span>
        ${render.memoryFact(d.memory)}
        ${d.state && d.state.stream && d.state.stream.status === 'mismatch' ? `<span class="hold" data-testid="chamber-stream-mismatch">PAUSED: the notification stream was recreated; its owner re-bases the chamber onto it</span>` : ''}
        ${d.hold ? `<span class="hold" data-testid="chamber-hold">ON HOLD: ${esc(d.hold.reason)}</span>` : ''}
      </div>
      ${monitors.length ? `<div class="monitors">${monitors.join('')}</div>` : ''}
      ${runAlarms.length ? `<div class="card run-alarms"><h2>Run alarms of the chamber monitor <small class="muted">what drove each: the indicators' share of T² / SPE</small></h2>${runAlarms.join('')}</div>` : ''}
      <div class="charts">${charts.join('') || (monitors.length ? '' : '<p class="muted">no U-chart points yet</p>')}</div>
      ${hidden.map((t) => `<p class="muted">${t}</p>`).join('')}
      <div class="card"><h2>Alarms of ${esc(d.key)}</h2><table class="alarms"><thead><tr><th>time</th><th>run</th><th>rule</th><th>indicator</th><th>value</th><th>limits</th><th>action</th></tr></thead>
      <tbody data-testid="chamber-alarms">${alarms.join('') || '<tr><td colspan="7" class="muted">none</td></tr>'}</tbody></table></div>`;
    applyGeometry($('chamber'));
  }

  // ---------------------------------------------------------------------------------------------
  // live updates
  // ---------------------------------------------------------------------------------------------
  function connect() {
    const es = new EventSource('/api/v1/events');
    es.addEventListener('open', () => {
      $('conn').textContent = 'live';
      $('conn').className = 'conn live';
    });
    es.addEventListener('error', () => {
      $('conn').textContent = 'reconnecting…';
      $('conn').className = 'conn down';
      // EventSource hides the status: ask whether the session is still valid (it ends the stream when it expires).
      getJson('/api/v1/session').then((s) => {
        if (!s.authenticated) toLogin();
      }, () => undefined);
    });
    es.addEventListener('cluster', (e) => {
      state.cluster = JSON.parse(e.data);
      renderCluster();
    });
    es.addEventListener('alarm', (e) => onAlarm(JSON.parse(e.data)));
  }

  function renderWho() {
    const s = state.session;
    if (!s || s.mode === 'none') return;
    $('who').innerHTML = `<span data-testid="role">${esc(s.role)}</span>${s.user && s.user !== 'token' ? ` · ${esc(s.user)}` : ''}` +
      (s.via === 'session' ? ' · <button type="button" id="btn-logout" class="link">sign out</button>' : '');
    const out = $('btn-logout');
    if (out) {
      out.addEventListener('click', async () => {
        await fetch('/api/v1/session', { method: 'DELETE' });
        toLogin();
      });
    }
  }

  async function init() {
    try {
      state.session = await getJson('/api/v1/session');
    } catch (err) {
      toast(`session: ${err.message}`, true);
    }
    if (state.session && !state.session.authenticated) return toLogin();
    renderWho();
    $('chamber-filter').addEventListener('input', renderChamberList);
    $('indicator-filter').addEventListener('input', () => {
      state.indicatorFilter = $('indicator-filter').value;
      if (state.lastChamber && state.lastChamber.key === state.chamberKey) renderChamber(state.lastChamber);
    });
    $('btn-all-indicators').addEventListener('click', () => {
      state.chamberAll = !state.chamberAll;
      $('btn-all-indicators').textContent = state.chamberAll ? 'show the default charts' : 'show every indicator';
      clearTimeout(state.chamberTimer);
      loadChamber();
    });
    $('defenders').addEventListener('click', async (e) => {
      const btn = e.target.closest('button[data-crash]');
      if (!btn) return;
      btn.disabled = true;
      try {
        const r = await action('defenders/crash', { defender: btn.dataset.crash });
        toast(`${r.defender} (${r.crashed}) killed with SIGKILL — watch its heartbeat go stale and its chambers move`);
      } catch (err) {
        toast(`crash failed: ${err.message}`, true);
        btn.disabled = false;
      }
    });
    $('btn-add').addEventListener('click', async (e) => {
      e.target.disabled = true;
      toast('starting a defender …');
      try {
        const r = await action('defenders');
        toast(`${r.started} started — the controller rebalances after the scale window`);
      } catch (err) {
        toast(`add failed: ${err.message}`, true);
      } finally {
        e.target.disabled = false;
      }
    });
    $('btn-restart-leader').addEventListener('click', async (e) => {
      e.target.disabled = true;
      toast('restarting the controller leader …');
      try {
        const r = await action('controller/restart-leader', { mode: 'kill' });
        toast(`${r.stopped} killed, ${r.started} started — it leads once the old lease expires (a new term, a higher epoch)`);
      } catch (err) {
        toast(`restart failed: ${err.message}`, true);
      } finally {
        e.target.disabled = false;
      }
    });
    window.addEventListener('hashchange', route);
    route();
    try {
      const { alarms, counts } = await getJson('/api/v1/alarms?limit=300');
      state.alarms = alarms;
      state.alarmTotal = counts.alarms + counts.holds;
      renderAlarms();
    } catch (err) {
      toast(`alarms: ${err.message}`, true);
    }
    connect();
  }

  document.addEventListener('DOMContentLoaded', init);
})();
