// Defender dashboard: the page's HTML and SVG as pure functions (API JSON in, markup out), no DOM.
// Plain browser JavaScript, no build step: the page loads it before app.js, which reads
// window.DefenderRender; the dashboard's tests run this same file and assert on the markup.
'use strict';

(function () {
  // ---------------------------------------------------------------------------------------------
  // formatting
  // ---------------------------------------------------------------------------------------------
  function esc(v) {
    return String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  }
  function fmt(x, digits = 4) {
    if (x === null || x === undefined || !Number.isFinite(x)) return '—';
    const a = Math.abs(x);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return x.toExponential(2);
    return Number(x.toPrecision(digits)).toLocaleString('en-US', { maximumFractionDigits: 6 });
  }
  function time(iso) {
    if (!iso) return '—';
    const d = new Date(iso);
    return d.toLocaleTimeString('en-GB', { hour12: false });
  }
  function share(x) {
    return x === null || x === undefined ? '' : (x * 100).toFixed(x >= 0.1 ? 0 : 1) + '%';
  }
  const RULE_TEXT = { T2: 'T²', SPE: 'SPE', MEWMA: 'MEWMA' };
  const ruleText = (r) => RULE_TEXT[r] || r;

  // ---------------------------------------------------------------------------------------------
  // charts (SVG)
  // ---------------------------------------------------------------------------------------------
  const W = 520;
  const H = 190;
  const L = 52;
  const R = 46;
  const T = 10;
  const B = 22;

  /** The value range of a chart with 8 % padding (a flat series gets a small range around it). */
  function span(values) {
    let lo = Math.min(...values);
    let hi = Math.max(...values);
    if (!Number.isFinite(lo) || !Number.isFinite(hi)) {
      lo = 0;
      hi = 1;
    }
    if (hi - lo < 1e-12) {
      hi += Math.abs(hi) * 0.01 + 1e-6;
      lo -= Math.abs(lo) * 0.01 + 1e-6;
    }
    const pad = (hi - lo) * 0.08;
    return { lo: lo - pad, hi: hi + pad, pad };
  }

  /**
   * The y-axis's ticks from `lo` to `hi`: round values (1, 2 or 5 x 10^k apart), about `count` of them,
   * every one inside the range, so that the axis reads at a glance (not only its ends).
   */
  function yTicks(lo, hi, count = 5) {
    if (!Number.isFinite(lo) || !Number.isFinite(hi) || !(hi > lo)) return [];
    const raw = (hi - lo) / Math.max(1, count);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((k) => k * mag).find((st) => st >= raw * (1 - 1e-9));
    const out = [];
    for (let i = Math.ceil(lo / step - 1e-9); i * step <= hi + step * 1e-9; i++) out.push(Number((i * step).toPrecision(12)));
    return out;
  }
  /** Grid lines and labels of `yTicks(lo, hi)` on a chart whose value `v` is drawn at `y(v)`. */
  function yAxis(lo, hi, y) {
    return yTicks(lo, hi).map((t) => {
      const at = y(t).toFixed(1);
      return `<line class="ytick" x1="${L}" x2="${W - R}" y1="${at}" y2="${at}"></line><text class="axis" x="${L - 4}" y="${(y(t) + 3).toFixed(1)}" text-anchor="end" data-tick="${t}">${esc(fmt(t))}</text>`;
    });
  }

  const EVENT_WORDS = { pm: 'PM', clean: 'clean', 'part-change': 'part change', seasoning: 'seasoning', 'recipe-change': 'recipe change', 'long-idle': 'long idle', note: 'note' };

  /**
   * A marker for each equipment event (`ChamberDetail.events`) between the chart's runs, at the store
   * sequence it came in: drawn between the last run before it and the first after it.
   */
  function eventMarks(pts, events, x) {
    if (!events || events.length === 0 || pts.length === 0) return [];
    const first = pts[0].sequence;
    const last = pts[pts.length - 1].sequence;
    return events
      .filter((e) => e.sequence > first && e.sequence < last)
      .map((e) => {
        const i = pts.findIndex((p) => p.sequence > e.sequence);
        const at = ((x(i - 1) + x(i)) / 2).toFixed(1);
        const what = `${EVENT_WORDS[e.kind] || e.kind} ${e.at ? time(e.at) : ''}${e.note ? `: ${e.note}` : ''}${e.author ? ` (${e.author})` : ''}`;
        return `<line class="event" x1="${at}" x2="${at}" y1="${T}" y2="${H - B}" data-testid="event-marker" data-kind="${esc(e.kind)}" data-sequence="${e.sequence}"><title>${esc(what)}</title></line>` +
          `<text class="lbl ev" x="${at}" y="${T + 8}" text-anchor="middle">${esc((EVENT_WORDS[e.kind] || e.kind).slice(0, 5))}</text>`;
      });
  }

  /** The U-chart of one indicator (`ChartView` of /api/v1/chambers/<key>), with the chamber's equipment events. */
  function chartSvg(ch, events) {
    const pts = ch.points;
    const lim = ch.limits;
    const vals = pts.map((p) => p.value);
    const extra = lim ? [lim.center, lim.ucl, lim.lcl].filter((x) => x !== null && Number.isFinite(x)) : [];
    const { lo, hi } = span([...vals, ...extra]);
    const n = Math.max(1, pts.length - 1);
    const x = (i) => L + ((W - L - R) * i) / n;
    const y = (v) => T + (H - T - B) * (1 - (v - lo) / (hi - lo));
    const parts = yAxis(lo, hi, y);
    // Phase I: points judged without limits.
    const firstLimited = pts.findIndex((p) => p.limitsVersion !== null);
    const phase1End = firstLimited < 0 ? (lim ? -1 : pts.length - 1) : firstLimited - 1;
    if (phase1End >= 0) parts.push(`<rect class="phase1" x="${L}" y="${T}" width="${Math.max(2, x(phase1End) - L)}" height="${H - T - B}"><title>Phase I: collecting the baseline</title></rect>`);
    const hline = (v, cls, label) => {
      if (v === null || !Number.isFinite(v)) return;
      parts.push(`<line class="${cls}" x1="${L}" x2="${W - R}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" data-value="${v}"></line>`);
      if (label) parts.push(`<text class="lbl ${cls === 'center' ? 'c' : 'l'}" x="${W - R + 3}" y="${(y(v) + 3).toFixed(1)}">${label}</text>`);
    };
    if (lim) {
      if (lim.sigma && lim.chartType === 'individuals') {
        for (const k of [-2, -1, 1, 2]) hline(lim.center + k * lim.sigma, 'zone');
      }
      hline(lim.ucl, 'ucl', 'UCL');
      hline(lim.center, 'center', 'CL');
      hline(lim.lcl, 'lcl', 'LCL');
    }
    parts.push(...eventMarks(pts, events, x));
    if (pts.length > 1) parts.push(`<polyline class="series" points="${pts.map((p, i) => `${x(i).toFixed(1)},${y(p.value).toFixed(1)}`).join(' ')}"></polyline>`);
    pts.forEach((p, i) => {
      const title = `run ${p.runId} (seq ${p.sequence})\n${fmt(p.value, 6)}${p.rules.length ? '\nrules: ' + p.rules.join(', ') : ''}`;
      parts.push(`<circle class="pt${p.violation ? ' viol' : ''}" cx="${x(i).toFixed(1)}" cy="${y(p.value).toFixed(1)}" r="${p.violation ? 3.6 : 1.8}"${p.violation ? ' data-testid="violation"' : ''}><title>${esc(title)}</title></circle>`);
    });
    parts.push(`<text class="axis" x="${L}" y="${H - 6}">${esc(pts[0]?.runId || '')}</text>`);
    parts.push(`<text class="axis" x="${W - R}" y="${H - 6}" text-anchor="end">${esc(pts[pts.length - 1]?.runId || '')}</text>`);
    return `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="U-chart ${esc(ch.indicatorKey)}" data-testid="uchart" data-indicator="${esc(ch.indicatorKey)}" data-has-limits="${lim ? 'true' : 'false'}">${parts.join('')}</svg>`;
  }

  const MONITOR_STATS = {
    T2: { field: 't2', name: 'Hotelling T²' },
    SPE: { field: 'spe', name: 'SPE (squared prediction error)' },
    MEWMA: { field: 'mewma', name: 'MEWMA' },
  };
  /** Above this many times its limit a point is drawn at the top edge (its value in the tooltip). */
  const CLIP_OVER_LIMIT = 4;

  /**
   * One chart of a recipe's chamber monitor (`MonitorView`): `stat` `T2`, `SPE` or `MEWMA` of each run
   * (none in Phase I, shaded), the model's limit (UCL), the points whose rule fired, each alarmed run
   * as a band, and a mark where a model was frozen.
   */
  function monitorSvg(m, stat, events) {
    const { field, name } = MONITOR_STATS[stat];
    const pts = m.points;
    const limit = m.limits ? m.limits[field] : null;
    const vals = pts.map((p) => p[field]).filter((v) => v !== null && Number.isFinite(v));
    const lo = 0;
    let top = Math.max(0, ...vals, limit ?? 0);
    if (limit !== null && limit > 0) top = Math.min(top, limit * CLIP_OVER_LIMIT);
    if (top <= 0) top = 1;
    const hi = top * 1.08;
    const n = Math.max(1, pts.length - 1);
    const x = (i) => L + ((W - L - R) * i) / n;
    const y = (v) => T + (H - T - B) * (1 - (Math.min(v, top) - lo) / (hi - lo));
    const band = Math.max(2, (W - L - R) / Math.max(1, pts.length) * 0.8);
    const parts = yAxis(lo, top, y);
    const firstJudged = pts.findIndex((p) => p.limitsVersion !== null);
    const phase1End = firstJudged < 0 ? pts.length - 1 : firstJudged - 1;
    const fitted = pts.some((p) => p.phaseOne);
    if (phase1End >= 0) parts.push(`<rect class="phase1" x="${L}" y="${T}" width="${Math.max(2, x(phase1End) - L)}" height="${H - T - B}"><title>Phase I: collecting the baseline${fitted ? ` (its runs' ${esc(name)} in the model's fit, hollow)` : ` (no ${esc(name)} yet)`}</title></rect>`);
    pts.forEach((p, i) => {
      if (!p.runAlarmed) return;
      const why = p.rules.length ? p.rules.map(ruleText).join(', ') : 'another indicator';
      parts.push(`<rect class="alarmed${p.runHold ? ' hold' : ''}" x="${(x(i) - band / 2).toFixed(1)}" y="${T}" width="${band.toFixed(1)}" height="${H - T - B}" data-testid="alarmed-run" data-run="${esc(p.runId)}"><title>${esc(`run ${p.runId} (seq ${p.sequence}) alarmed${p.runHold ? ', chamber on hold' : ''}: ${why}`)}</title></rect>`);
    });
    parts.push(...eventMarks(pts, events, x));
    pts.forEach((p, i) => {
      if (p.newLimits) parts.push(`<line class="model" x1="${x(i).toFixed(1)}" x2="${x(i).toFixed(1)}" y1="${T}" y2="${H - B}"><title>model v${esc(p.limitsVersion)} frozen with run ${esc(p.runId)}</title></line>`);
    });
    if (limit !== null && Number.isFinite(limit)) {
      parts.push(`<line class="ucl" x1="${L}" x2="${W - R}" y1="${y(limit).toFixed(1)}" y2="${y(limit).toFixed(1)}" data-value="${limit}"></line>`);
      parts.push(`<text class="lbl l" x="${W - R + 3}" y="${(y(limit) + 3).toFixed(1)}">UCL</text>`);
    }
    // The series breaks where a run has no value (Phase I, a run without the model's PCA part).
    let run = [];
    const flush = () => {
      if (run.length > 1) parts.push(`<polyline class="series" points="${run.join(' ')}"></polyline>`);
      run = [];
    };
    pts.forEach((p, i) => {
      const v = p[field];
      if (v === null || !Number.isFinite(v)) return flush();
      run.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`);
    });
    flush();
    pts.forEach((p, i) => {
      const v = p[field];
      if (v === null || !Number.isFinite(v)) return;
      const viol = !p.phaseOne && p.rules.includes(stat);
      const clipped = v > top;
      const title = p.phaseOne
        ? `run ${p.runId} (seq ${p.sequence}), Phase I: the model was learnt from it\n${name} ${fmt(v, 6)} in the fit (in sample, not judged)`
        : `run ${p.runId} (seq ${p.sequence})\n${name} ${fmt(v, 6)}${limit !== null ? ` (limit ${fmt(limit, 6)})` : ''}${p.rules.length ? '\nrules: ' + p.rules.map(ruleText).join(', ') : ''}`;
      parts.push(`<circle class="pt${viol ? ' viol' : ''}${clipped ? ' clipped' : ''}${p.phaseOne ? ' p1' : ''}" cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="${viol ? 3.6 : 1.8}" data-run="${esc(p.runId)}" data-value="${v}"${viol ? ' data-testid="monitor-violation"' : ''}${p.phaseOne ? ' data-phase-one="true"' : ''}><title>${esc(title)}</title></circle>`);
    });
    parts.push(`<text class="axis" x="${L}" y="${H - 6}">${esc(pts[0]?.runId || '')}</text>`);
    parts.push(`<text class="axis" x="${W - R}" y="${H - 6}" text-anchor="end">${esc(pts[pts.length - 1]?.runId || '')}</text>`);
    return `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(name)} of ${esc(m.recipe)}" data-testid="monitor-chart" data-stat="${stat}" data-recipe="${esc(m.recipe)}" data-limit="${limit ?? ''}">${parts.join('')}</svg>`;
  }

  /** A recipe's chamber monitor: what its model is, and its T² and SPE (and MEWMA) charts, with the chamber's equipment events. */
  function monitorCard(m, events) {
    const lim = m.limits;
    const judged = m.points.filter((p) => p.limitsVersion !== null).length;
    let sub;
    if (lim) {
      const nc = Object.entries(lim.notCharted).map(([why, k]) => `${k} ${esc(why)}`).join(', ');
      const pca = lim.t2 !== null
        ? `T² ≤ ${fmt(lim.t2)} · SPE ≤ ${fmt(lim.spe)}${lim.mewma !== null ? ` · MEWMA ≤ ${fmt(lim.mewma)}` : ''} · ${lim.components ?? '—'} components (${lim.explainedVariance === null ? '—' : Math.round(lim.explainedVariance * 100) + '%'} of the variance)`
        : 'no PCA model (univariate limits only)';
      sub = `model v${lim.version}: ${pca} · ${lim.charted} indicators charted${nc ? `, not charted: ${nc}` : ''} <span class="muted">(Phase I ${lim.baselineRuns} runs${lim.excludedRuns ? `, ${lim.excludedRuns} excluded` : ''})</span>`;
    } else {
      sub = `Phase I: ${m.points.length} runs collected, no model yet`;
    }
    if (m.rebaseline) sub += ` <span class="hold">re-baselining (v${esc(m.rebaseline.version)}, ${esc(m.rebaseline.reason)}): a new Phase I runs</span>`;
    const stats = ['T2', 'SPE'];
    if ((lim && lim.mewma !== null) || m.points.some((p) => p.mewma !== null)) stats.push('MEWMA');
    const charts = stats.map((s) => `<figure><figcaption>${esc(MONITOR_STATS[s].name)}</figcaption>${monitorSvg(m, s, events)}</figure>`).join('');
    return `<div class="chart monitor" data-testid="monitor" data-recipe="${esc(m.recipe)}" data-alarmed-runs="${m.alarmedRuns}">
        <h3>${esc(m.recipe)} · chamber monitor ${m.alarmedRuns ? `<span class="hold">${m.alarmedRuns} alarmed run${m.alarmedRuns > 1 ? 's' : ''}</span>` : ''} <span class="muted">${judged} of ${m.points.length} runs judged</span></h3>
        <div class="sub">${sub}</div><div class="monitor-charts">${charts}</div></div>`;
  }

  /** One contributor as a bar of its share (width set from data-width: the page's CSP forbids inline styles). */
  function contributionBar(c) {
    const w = Math.max(0, Math.min(1, c.share ?? 0)) * 100;
    return `<div class="contrib" data-testid="contribution" data-indicator="${esc(c.indicatorKey)}" data-share="${c.share ?? ''}">
      <span class="name" title="${esc(c.meaning ? `${c.meaning} (${c.indicatorKey})` : c.indicatorKey)}">${esc(c.label)}</span><div class="bar"><div class="fill" data-width="${w.toFixed(1)}"></div></div><span class="ratio">${share(c.share)}</span></div>`;
  }

  /** What one violation of a run-level alarm says, in a line. */
  function violationText(v) {
    switch (v.rule) {
      case 'T2':
      case 'SPE':
      case 'MEWMA':
        return `<b>${ruleText(v.rule)}</b> ${fmt(v.value)} &gt; ${fmt(v.limit)}`;
      case 'LIMIT':
        return `<b>LIMIT</b> ${esc(v.label)} ${fmt(v.value)} outside [${fmt(v.lcl)}, ${fmt(v.ucl)}]`;
      case 'RESIDUAL':
        return `<b>RESIDUAL</b> ${esc(v.label)}: ${fmt(v.value)} residual sds (limit ${fmt(v.limit)})`;
      case 'CONSTANT':
        return `<b>CONSTANT</b> ${esc(v.label)} ${fmt(v.value)}, was constant at ${fmt(v.center)}`;
      default:
        return `<b>${esc(v.rule)}</b> ${esc(v.label)} ${fmt(v.value)}`;
    }
  }

  const UNIVARIATE_SHOWN = 6;

  /**
   * A run-level alarm of the chamber monitor (an alarm of /api/v1/chambers/<key> with `run`): the rules
   * that fired, and per T² / SPE / MEWMA violation its top contributors as bars of their share; the
   * univariate violations (LIMIT, RESIDUAL, CONSTANT) as lines.
   */
  function runAlarmCard(a) {
    const r = a.run;
    const model = r.violations.filter((v) => v.contributions.length > 0 || RULE_TEXT[v.rule]);
    const single = r.violations.filter((v) => !model.includes(v));
    const blocks = model.map((v) => `<div class="violation" data-rule="${esc(v.rule)}"><div>${violationText(v)}</div>${v.contributions.map(contributionBar).join('')}</div>`);
    if (single.length) {
      const lines = single.slice(0, UNIVARIATE_SHOWN).map((v) => `<li data-rule="${esc(v.rule)}">${violationText(v)}</li>`).join('');
      const more = single.length > UNIVARIATE_SHOWN ? `<li class="muted">… ${single.length - UNIVARIATE_SHOWN} more</li>` : '';
      blocks.push(`<ul class="violation univariate">${lines}${more}</ul>`);
    }
    return `<div class="run-alarm" data-testid="run-alarm" data-run="${esc(a.runId)}">
      <h3><span class="rule">${esc(r.rules.map(ruleText).join(' + '))}</span> run ${esc(a.runId)} <span class="muted">seq ${esc(a.sequence)} · ${esc(a.recipe || '')}${r.modelVersion !== null ? ` · model v${r.modelVersion}` : ''} · ${time(a.raisedAt)} · ${esc(a.action)}</span></h3>
      ${blocks.join('')}</div>`;
  }

  // ---------------------------------------------------------------------------------------------
  // alarms
  // ---------------------------------------------------------------------------------------------
  /** The top contributors of a run-level alarm in a line: `P mean in Main 62% · F std in Ramp 20%`. */
  function contributorsText(r) {
    const names = r.top.map((c) => `${esc(c.label)}${c.share !== null ? ' ' + share(c.share) : ''}`).join(' · ');
    // The violations the line does not name: the top contributors are those of one T² / SPE / MEWMA
    // violation, or (without one) the univariate violations themselves.
    const named = r.top.length > 0 && r.top[0].share !== null ? 1 : r.top.length;
    const rest = r.violations.length - named;
    return `${names || '—'}${rest > 0 ? ` <span class="muted">(+${rest} violation${rest > 1 ? 's' : ''})</span>` : ''}`;
  }
  /** The monitor's statistics of a run-level alarm: values and limits (T², SPE). */
  function runValues(r) {
    const v = [];
    const l = [];
    // A limit is known from the violation it fired (the alarm does not carry the others).
    if (r.t2 !== null) v.push(`T² ${fmt(r.t2)}`);
    if (r.t2Limit !== null) l.push(`T² ≤ ${fmt(r.t2Limit)}`);
    if (r.spe !== null) v.push(`SPE ${fmt(r.spe)}`);
    if (r.speLimit !== null) l.push(`SPE ≤ ${fmt(r.speLimit)}`);
    return { values: v.join('<br>'), limits: l.join('<br>') };
  }

  /**
   * One line of the alarm feed (a `FeedItem` of /api/v1/alarms): a hold, an alarm of one indicator,
   * or one run-level alarm of the chamber monitor (rules, run, top contributors) however many
   * violations it lists.
   */
  function alarmRow(a, fresh) {
    const chamberLink = `<a href="#/chamber/${encodeURIComponent(a.chamber)}">${esc(a.chamber)}</a>`;
    if (a.kind === 'alarm' && a.run) {
      const { values, limits } = runValues(a.run);
      return `<tr class="alarm run${fresh ? ' new' : ''}" data-testid="run-alarm-line" data-run="${esc(a.runId || '')}" title="${esc(a.message)}"><td>${time(a.at)}</td><td>${chamberLink}</td><td>${esc(a.runId || '')}</td>
      <td><span class="rule">RUN</span> ${esc(a.run.rules.map(ruleText).join('+'))}</td><td class="contributors">${contributorsText(a.run)}</td>
      <td class="stats">${values}</td><td class="stats">${limits}</td><td>${esc(a.action || '')}</td></tr>`;
    }
    const limits = a.kind === 'alarm' ? `${fmt(a.lcl)} … ${fmt(a.ucl)}` : '';
    return `<tr class="${a.kind}${fresh ? ' new' : ''}"><td>${time(a.at)}</td><td>${chamberLink}</td><td>${esc(a.runId || '')}</td>
      <td>${esc(a.kind === 'hold' ? 'HOLD' : a.ruleId || '')}</td><td>${esc(a.kind === 'hold' ? a.message : (a.svid || '') + ' · ' + (a.statistic || ''))}</td>
      <td>${a.kind === 'alarm' ? fmt(a.value) : ''}</td><td>${limits}</td><td>${esc(a.action || '')}</td></tr>`;
  }
  /** One line of the cluster page's latest alarms. */
  function miniRow(a, fresh) {
    const what = a.kind === 'hold'
      ? esc(a.message)
      : a.run
        ? `${esc(a.run.rules.map(ruleText).join('+'))}: ${contributorsText(a.run)}`
        : esc(`${a.svid || ''} ${a.statistic || ''} = ${fmt(a.value)} (limits ${fmt(a.lcl)} … ${fmt(a.ucl)})`);
    return `<li class="${a.kind}${fresh ? ' new' : ''}">${time(a.at)} <a href="#/chamber/${encodeURIComponent(a.chamber)}">${esc(a.chamber)}</a>
      <span class="rule">${esc(a.kind === 'hold' ? 'HOLD' : a.ruleId)}</span> ${what} <span class="muted">${esc(a.runId || '')}</span></li>`;
  }
  /** One row of a chamber's alarm table (a stored alarm of /api/v1/chambers/<key>). */
  function chamberAlarmRow(a) {
    if (a.run) {
      const { values, limits } = runValues(a.run);
      return `<tr class="run" data-testid="run-alarm-line" data-run="${esc(a.runId)}"><td>${time(a.raisedAt)}</td><td>${esc(a.runId)}</td><td><span class="rule">RUN</span> ${esc(a.run.rules.map(ruleText).join('+'))}</td><td class="contributors">${contributorsText(a.run)}</td><td class="stats">${values}</td><td class="stats">${limits}</td><td>${esc(a.action)}</td></tr>`;
    }
    return `<tr><td>${time(a.raisedAt)}</td><td>${esc(a.runId)}</td><td>${esc(a.ruleId)}</td><td>${esc(a.svid || '')} · ${esc(a.statistic || '')}</td><td>${fmt(a.value)}</td><td>${fmt(a.lcl)} … ${fmt(a.ucl)}</td><td>${esc(a.action)}</td></tr>`;
  }

  // ---------------------------------------------------------------------------------------------
  // cluster labels: one unit per figure, the controller's state as it reports it
  // ---------------------------------------------------------------------------------------------
  function compactNumber(n) {
    if (n === null || n === undefined || !Number.isFinite(n)) return '—';
    if (n >= 1e9) return (n / 1e9).toFixed(1) + 'G';
    if (n >= 1e6) return (n / 1e6).toFixed(1) + 'M';
    if (n >= 1e3) return (n / 1e3).toFixed(n >= 1e4 ? 0 : 1) + 'K';
    return String(Math.round(n));
  }
  /** The leading controller as the dashboard reached it; null when none reachable leads. */
  function leadingController(c) {
    return (c.controllers || []).find((k) => k.reachable && k.isLeader) || null;
  }
  /**
   * The header's cluster state: the leading controller's state as it reports it now (the map's
   * `state` is the one it was published in: REBALANCING or EMERGENCY long after the controller is
   * STABLE again); without a reachable leader, the map's, labelled as the map's.
   */
  function clusterStateFact(c) {
    const k = leadingController(c);
    if (k && k.clusterState) return { value: k.clusterState, label: 'cluster state', title: `as the leading controller ${k.controllerId || ''} reports it now` };
    if (c.map) return { value: c.map.state, label: `state of map v${c.map.version}`, title: 'no leading controller reachable (CONTROLLER_URLS): the state the map was published in' };
    return { value: '—', label: 'cluster state', title: '' };
  }
  /** What the map's weights are: the leading (else any reachable) controller's `balanceBy`, or null when none says. */
  function mapWeightUnit(c) {
    const k = leadingController(c) || (c.controllers || []).find((x) => x.reachable && x.balanceBy);
    return k && k.balanceBy ? k.balanceBy : null;
  }
  /**
   * A weight of the map with its unit: `83.7 CPU s/h` when the controller balances by load (the
   * weight is expected CPU µs per hour, ADR 0008), `3.8M samples/run` when by samples, and no unit
   * claimed when no controller says which.
   */
  function weightText(value, unit) {
    if (value === null || value === undefined || !Number.isFinite(value)) return '—';
    if (unit === 'load') return `${fmt(value / 1e6, 3)} CPU s/h`;
    if (unit === 'samples') return `${compactNumber(value)} samples/run`;
    return `${compactNumber(value)} (map weight)`;
  }
  /**
   * What the chamber remembers of its newest judged runs (the detail's `memory`): one mark per run,
   * oldest first, filled where it alarmed; the escalation rules ("3 alarmed runs within 5") count these.
   */
  function memoryFact(memory) {
    if (!memory) return '';
    const runs = memory.recentAlarms.slice(-20);
    const marks = runs.map((a) => (a ? '●' : '○')).join('');
    const alarmed = memory.recentAlarms.slice(-5).filter(Boolean).length;
    const span = memory.fromFirstRun ? 'every judged run so far' : `the newest ${memory.recentAlarms.length} judged runs`;
    return `<span data-testid="chamber-memory" data-alarmed-recent="${alarmed}" title="${esc(`the chamber remembers ${span}; ● alarmed, ○ not, oldest first (memory of run ${memory.runId}, sequence ${memory.sequence})`)}"><span class="muted">newest runs</span> <span class="run-marks">${marks || '—'}</span> <span class="muted">(${alarmed} of the last ${Math.min(5, memory.recentAlarms.length)} alarmed)</span></span>`;
  }
  /** The name of the map's weight figure. */
  function weightName(unit) {
    return unit === 'load' ? 'expected load' : unit === 'samples' ? 'samples per run' : 'map weight';
  }

  window.DefenderRender = { esc, fmt, time, yTicks, chartSvg, monitorSvg, monitorCard, runAlarmCard, alarmRow, miniRow, chamberAlarmRow, clusterStateFact, mapWeightUnit, weightText, weightName, memoryFact };
})();
