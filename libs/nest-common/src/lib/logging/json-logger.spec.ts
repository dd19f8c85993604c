import { Writable } from 'node:stream';
import { createAppLogger, NestJsonLogger } from './json-logger';

function capture(): { stream: Writable; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  return {
    stream,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

describe('JSON logging', () => {
  it('writes one JSON object per line with app, level label, ISO time and base fields', () => {
    const out = capture();
    const logger = createAppLogger('defender', 'info', { defenderId: 'defender-4' }, out.stream);
    logger.info({ chamber: 'tool001:chamber1' }, 'assigned');
    logger.debug('hidden below the level');
    const [line] = out.lines();
    expect(out.lines()).toHaveLength(1);
    expect(line).toMatchObject({
      level: 'info',
      app: 'defender',
      defenderId: 'defender-4',
      chamber: 'tool001:chamber1',
      msg: 'assigned',
    });
    expect(new Date(line?.['time'] as string).toISOString()).toBe(line?.['time']);
  });

  it('adapts Nest logger calls: context, objects and errors', () => {
    const out = capture();
    const nest = new NestJsonLogger(createAppLogger('x', 'trace', {}, out.stream));
    nest.log('Mapped {/health/live, GET} route', 'RouterExplorer');
    nest.warn({ msg: 'NATS disconnected', server: 'n1' }, 'NatsConnectionService');
    nest.error('boom', 'Error: boom\n    at somewhere', 'ExceptionHandler');
    nest.verbose('fine detail');
    expect(out.lines()).toEqual([
      expect.objectContaining({ level: 'info', context: 'RouterExplorer', msg: 'Mapped {/health/live, GET} route' }),
      expect.objectContaining({ level: 'warn', context: 'NatsConnectionService', msg: 'NATS disconnected', server: 'n1' }),
      expect.objectContaining({ level: 'error', context: 'ExceptionHandler', msg: 'boom', stack: 'Error: boom\n    at somewhere' }),
      expect.objectContaining({ level: 'trace', msg: 'fine detail' }),
    ]);
  });
});
