import { join } from 'node:path';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { loadMalloc, MallocTrimmer, NATIVE_FILE, sourceBuildPath } from '@defender/malloc';
import type { DefenderConfig } from '../config';
import { DefenderMetricsObserver } from '../metrics/defender-metrics-observer';
import { DEFENDER_CONFIG } from '../tokens';

/**
 * The defender's native memory control (libs/malloc): returns the C heap's free pages to the kernel
 * every `MALLOC_TRIM_INTERVAL_SECONDS` (0: never). Freed blocks between live ones stay resident in
 * glibc's heap on their own. Without the addon (not built) the defender runs untrimmed and says so;
 * without glibc, too.
 */
@Injectable()
export class MallocTrimService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(MallocTrimService.name);
  private trimmer: MallocTrimmer | undefined;

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
        msg: 'native memory addon unavailable: the C heap keeps freed memory resident',
        err: (err as Error).message,
      });
      return;
    }
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
  }
}
