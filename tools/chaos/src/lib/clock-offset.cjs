'use strict';
/**
 * TEST ONLY (tools/chaos): lets the harness step one child process's wall clock, as an NTP step
 * would, without touching the host's clock. Loaded with `NODE_OPTIONS=--require <this file>` into
 * the processes the chaos cluster starts; never part of an app bundle or image.
 *
 * `CHAOS_CLOCK_OFFSET_FILE` names a file holding an offset in ms (`30000`, `-30000`; none: 0).
 * `Date.now()`, `new Date()` and `Date()` read the real time plus the offset; the file is read
 * every 50 ms and each new value steps the clock at once. `Date` is replaced at startup, before the
 * app runs, so that a `Date.now` reference the app keeps (an injected clock) steps too. The
 * monotonic clocks (`performance.now()`, `process.hrtime`) and timers are untouched, as they are
 * by a real step. Each new offset is acknowledged with one JSON line on stdout
 * (`"msg":"chaos: wall clock offset applied"`), which the harness waits for.
 */
const fs = require('node:fs');

const file = process.env['CHAOS_CLOCK_OFFSET_FILE'];
if (file) {
  const RealDate = Date;
  const realNow = () => RealDate.now();
  let offset = 0;
  globalThis.Date = new Proxy(RealDate, {
    construct: (target, args, newTarget) => Reflect.construct(target, args.length === 0 ? [realNow() + offset] : args, newTarget),
    apply: () => new RealDate(realNow() + offset).toString(),
    get: (target, prop, receiver) => (prop === 'now' ? () => realNow() + offset : Reflect.get(target, prop, receiver)),
  });

  const poll = () => {
    let text;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      if (err && err.code === 'ENOENT') return;
      throw err;
    }
    const next = Number(text.trim());
    if (!Number.isFinite(next) || next === offset) return;
    offset = next;
    process.stdout.write(JSON.stringify({ level: 'info', msg: 'chaos: wall clock offset applied', offsetMs: offset, pid: process.pid }) + '\n');
  };

  poll();
  setInterval(poll, 50).unref();
}
