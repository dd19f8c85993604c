import { processEnv } from './process';

describe('processEnv', () => {
  it("passes the caller's variables over PATH and NODE_ENV=test", () => {
    const env = processEnv({ NATS_URL: 'nats://127.0.0.1:4222', NODE_ENV: 'production' });
    expect(env).toMatchObject({ NATS_URL: 'nats://127.0.0.1:4222', NODE_ENV: 'production' });
    expect(env['PATH']).toBe(process.env['PATH'] ?? '');
  });

  it('leaves out an empty runtime variable (an image setting taken away), but keeps other empty values', () => {
    const image = { MALLOC_MMAP_THRESHOLD_: '131072', NODE_OPTIONS: '--max-old-space-size=192' };
    const env = processEnv({ ...image, LOG_FORMAT: '', ...{ MALLOC_MMAP_THRESHOLD_: '' } });
    expect('MALLOC_MMAP_THRESHOLD_' in env).toBe(false);
    expect(env['NODE_OPTIONS']).toBe('--max-old-space-size=192');
    expect(env['LOG_FORMAT']).toBe('');
    expect('NODE_OPTIONS' in processEnv({ NODE_OPTIONS: '' })).toBe(false);
  });
});
