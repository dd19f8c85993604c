/** Picks the lines naming failed tests out of `npm test`'s output (tools/scripts/test-all.ts). */
import { StringDecoder } from 'node:string_decoder';

/** Most lines of failed tests repeated at the end of the run. */
export const MAX_FAILURE_LINES = 60;

/**
 * Jest's lines that name a failed test (`✕ name`, `● suite › name`) or suite (`FAIL path`), with Nx's
 * `project:` prefix. The run's output is long and a CI log is often read from its end: these lines are
 * repeated there, so the failed test is named without searching the whole log.
 */
export function failureLine(line: string): boolean {
  // eslint-disable-next-line no-control-regex
  const plain = line.replace(/\u001b\[[0-9;]*m/g, '');
  return /^\S+: +(?:✕ |● (?!Console)|FAIL )/.test(plain) || /^\S+: .*(?:Test suite failed to run|Jest did not exit)/.test(plain);
}

/**
 * Forwards a child's stream to ours, keeping the lines {@link failureLine} picks. With a `prefix`
 * (a process that Nx does not run, e.g. `chaos: `) every line gets it, as Nx prefixes its tasks'
 * lines, and is written whole; without one the chunks pass unchanged.
 */
export function watchLines(from: NodeJS.ReadableStream, to: NodeJS.WritableStream, failures: string[], prefix = ''): void {
  const decoder = new StringDecoder('utf8'); // a character split between chunks stays whole
  let rest = '';
  from.on('data', (chunk: Buffer) => {
    if (!prefix) to.write(chunk);
    const lines = (rest + decoder.write(chunk)).split('\n');
    rest = lines.pop() ?? '';
    for (const raw of lines) {
      const line = prefix + raw;
      if (prefix) to.write(`${line}\n`);
      if (failureLine(line)) failures.push(line);
    }
  });
  from.on('end', () => {
    const last = rest + decoder.end();
    if (!last) return;
    if (prefix) to.write(`${prefix}${last}\n`);
    if (failureLine(prefix + last)) failures.push(prefix + last);
  });
}
