import { join } from 'node:path';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { loadMalloc, MallocTrimmer, NATIVE_FILE, sourceBuildPath } from '@defender/malloc';
import { setArrayBufferDetacher } from '@defender/store';
import type { DefenderConfig } from '../config';
import { DefenderMetricsObserver } from '../metrics/defender-metrics-observer';
import { DEFENDER_CONFIG } from '../tokens';

/**
 * The defender's native memory controls (libs/malloc):
 * - returns the C heap's free pages to the kernel every `MALLOC_TRIM_INTERVAL_SECONDS` (0: never).
 *   Trace buffers are freed between live blocks, and glibc keeps such memory resident on its own;
 * - lets the store free the buffers it is done with (trace arrays, chunk copies) at once, by
 *   detaching them, instead of at V8's next full collection (`setArrayBufferDetacher`).
 * Without the addon (not built) the defender runs with neither and says so; without glibc, untrimmed.
 */
@Injectable()
export class MallocTrimService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(MallocTrimService.name);
  private trimmer: MallocTrimmer | undefined;
  private detacherSet = false;

  constructor(
    @Inject(DEFENDER_CONFIG) private readonly config: DefenderConfig,
    private readonly metrics: DefenderMetricsObserver,
  ) {}

  onApplicationBootstrap(): void {
    // The bundle ships the addon beside main.js; running from source, it is in the lib's build dir.
    const paths = [join(__dirname, NATIVE_FILE), sourceBuildPath()];
    let malloc;
    try {
      malloc = loadMalloc(paths);
    } catch (err) {
      this.logger.warn({
        msg: 'native memory addon unavailable: the C heap keeps freed memory resident, and trace buffers wait for the garbage collector',
        err: (err as Error).message,
      });
      return;
    }
    setArrayBufferDetacher(malloc.detach);
    this.detacherSet = true;
    const seconds = this.config.MALLOC_TRIM_INTERVAL_SECONDS;
    if (seconds === 0) return;
    if (!malloc.supported) {
      this.logger.warn({ msg: 'malloc_trim unsupported by this C library: the C heap is not trimmed' });
      return;
    }
    this.trimmer = new MallocTrimmer(malloc, { intervalSeconds: seconds, onTrim: (r) => this.metrics.mallocTrimmed(r) });
    this.trimmer.start();
    this.logger.log({ msg: 'trimming the C heap', intervalSeconds: seconds });
  }

  onApplicationShutdown(): void {
    this.trimmer?.stop();
    if (this.detacherSet) setArrayBufferDetacher(undefined);
  }
}
