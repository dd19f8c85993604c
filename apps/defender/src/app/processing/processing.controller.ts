import { ApiBadRequestResponse, ApiBearerAuth, ApiCreatedResponse, ApiHeader, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { BadRequestException, Controller, Get, Headers, Inject, Post, ServiceUnavailableException, UnauthorizedException, NotFoundException } from '@nestjs/common';
import { Session } from 'node:inspector/promises';
import { timingSafeEqual } from 'node:crypto';
import { StoreService } from '@defender/nest-common';
import { DefenderConfig } from '../config';
import { DEFENDER_CONFIG } from '../tokens';
import { ProcessingService } from './processing.service';

/**
 * GET /api/v1/cache/stats, the chambers being processed, and token-protected CPU profiling. No heap
 * snapshot over HTTP: a snapshot holds every credential the process knows (NATS, store, this token)
 * and stops the process while it is written (heartbeats too); take one with the process's own signal
 * instead (apps/defender/README.md, "Debugging").
 */
@ApiTags('processing')
@Controller()
export class ProcessingController {
  constructor(
    private readonly processing: ProcessingService,
    private readonly store: StoreService,
    @Inject(DEFENDER_CONFIG) private readonly config: DefenderConfig,
  ) {}

  @ApiOperation({ summary: 'History cache statistics', description: 'Entries, bytes, hits and misses of the defender\'s history cache (chambers\' recent points).' })
  @ApiOkResponse({ description: 'The cache statistics.' })
  @ApiServiceUnavailableResponse({ description: 'The cache is not open yet (the store is not ready).' })
  @Get('api/v1/cache/stats')
  cacheStats() {
    const stats = this.processing.cacheStats();
    if (!stats) throw new ServiceUnavailableException('the history cache is not open yet (store not ready)');
    return stats;
  }

  @ApiOperation({
    summary: 'Chambers being processed',
    description:
      'Per owned chamber: high-water mark (store sequence), epoch, whether a run is in flight, and the notification stream its mark counts in ' +
      '(`stream.status`: `bound`, `unbound`, or `mismatch`: paused because the stream was recreated). `stream`: the notification stream as last checked ' +
      '(missing, and the chambers paused on a mismatch; ADR 0007).',
  })
  @ApiOkResponse({ description: '`{ chambers: [...], stream: { stream, streamId, missing, mismatchedChambers } }`.' })
  @Get('api/v1/chambers')
  chambers() {
    return { chambers: this.processing.workerStates(), stream: this.processing.streamHealth() };
  }

  @ApiOperation({
    summary: 'CPU profile (debug)',
    description:
      'Profiles the next `x-profile-seconds` (default 10, at most 60) of one thread and returns a .cpuprofile: `x-profile-thread: main` ' +
      '(default; evaluation, NATS, HTTP) or `store` (the SQLite store\'s own thread: queries, trace assembly, encoding). ' +
      'Needs DEBUG_TOKEN as a bearer token; 404 when DEBUG_TOKEN is unset.',
  })
  @ApiBearerAuth()
  @ApiHeader({ name: 'x-profile-seconds', required: false, description: 'Seconds to profile, 1-60 (default 10).' })
  @ApiHeader({ name: 'x-profile-thread', required: false, description: '`main` (default) or `store` (the SQLite store thread).' })
  @ApiCreatedResponse({ description: 'The CPU profile (Chrome .cpuprofile JSON).' })
  @ApiBadRequestResponse({ description: 'An unknown thread, or `store` while the store has no thread of its own (Cassandra) or is not open.' })
  @ApiUnauthorizedResponse({ description: 'Missing or wrong bearer token.' })
  @ApiNotFoundResponse({ description: 'Debug endpoints are disabled (DEBUG_TOKEN unset).' })
  /** A CPU profile of one thread over the next `seconds` (default 10, at most 60), as a .cpuprofile. */
  @Post('debug/cpu-profile')
  async cpuProfile(
    @Headers('authorization') auth: string | undefined,
    @Headers('x-profile-seconds') secs: string | undefined,
    @Headers('x-profile-thread') thread: string | undefined,
  ): Promise<unknown> {
    this.authorize(auth);
    const seconds = Math.min(60, Math.max(1, Number(secs ?? 10) || 10));
    const which = thread ?? 'main';
    if (which === 'store') {
      try {
        return await this.store.threadCpuProfile(seconds * 1000);
      } catch (err) {
        throw new BadRequestException(`cannot profile the store thread: ${(err as Error).message}`);
      }
    }
    if (which !== 'main') throw new BadRequestException(`x-profile-thread must be main or store, not ${JSON.stringify(which)}`);
    const session = new Session();
    session.connect();
    try {
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
      await new Promise((r) => setTimeout(r, seconds * 1000));
      const { profile } = await session.post('Profiler.stop');
      return profile;
    } finally {
      session.disconnect();
    }
  }

  private authorize(auth: string | undefined): void {
    const token = this.config.DEBUG_TOKEN;
    if (!token) throw new NotFoundException('debug endpoints are disabled (set DEBUG_TOKEN)');
    const given = Buffer.from(auth?.startsWith('Bearer ') ? auth.slice(7) : '');
    const want = Buffer.from(token);
    if (given.length !== want.length || !timingSafeEqual(given, want)) throw new UnauthorizedException('invalid or missing bearer token');
  }
}
