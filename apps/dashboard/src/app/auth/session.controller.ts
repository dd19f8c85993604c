import { ApiBadRequestResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags, ApiTooManyRequestsResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { BadRequestException, Body, Controller, Delete, Get, HttpCode, HttpException, HttpStatus, Inject, Logger, Post, Req, Res, UnauthorizedException } from '@nestjs/common';
import { DashboardConfig } from '../config';
import { AUTH_POLICY, DASHBOARD_CONFIG, FAILED_AUTH_LIMITER } from '../tokens';
import { AuthPolicy, clearedSessionCookie, sessionCookie, signSession } from './auth';
import { AuthedRequest, requestClient, throttledMessage, throttleWrongCredential } from './auth.middleware';
import { FailedAuthLimiter } from './failed-auth-limiter';

interface Reply {
  setHeader(name: string, value: string): unknown;
}

/**
 * Browser sessions: /login posts a token here and gets an HttpOnly, SameSite=Strict cookie signed
 * with that token (auth.ts), so the page, its fetches and its event stream are authenticated without
 * script access to the credential. API clients send `Authorization: Bearer` instead.
 */
@ApiTags('session')
@Controller('api/v1/session')
export class SessionController {
  private readonly log = new Logger('DashboardAuth');

  constructor(
    @Inject(DASHBOARD_CONFIG) private readonly config: DashboardConfig,
    @Inject(AUTH_POLICY) private readonly policy: AuthPolicy,
    @Inject(FAILED_AUTH_LIMITER) private readonly limiter: FailedAuthLimiter,
  ) {}

  @ApiOperation({ summary: 'Who am I', description: 'The authentication mode and, when the request is authenticated, its role (`viewer` or `operator`), user and session expiry.' })
  @ApiOkResponse({ description: '`{ mode, authenticated, role?, user?, via?, expiresAt? }`.' })
  @Get()
  whoami(@Req() req: AuthedRequest) {
    const p = req.principal;
    if (!p) return { mode: this.policy.mode, authenticated: false };
    return { mode: this.policy.mode, authenticated: true, role: p.role, user: p.user, via: p.via, ...(p.expiresAtMs !== undefined ? { expiresAt: new Date(p.expiresAtMs).toISOString() } : {}) };
  }

  @ApiOperation({ summary: 'Sign in', description: 'Exchanges a bearer token (`{ "token": "..." }`) for a session cookie (HttpOnly, SameSite=Strict, DASHBOARD_SESSION_SECONDS).' })
  @ApiOkResponse({ description: '`{ role, expiresAt }` and the cookie.' })
  @ApiBadRequestResponse({ description: 'No token in the body.' })
  @ApiUnauthorizedResponse({ description: 'Not a configured token.' })
  @ApiTooManyRequestsResponse({ description: 'A wrong token from a client that sent too many (or while all clients did): retry after the Retry-After seconds. A right token is never refused.' })
  @Post()
  @HttpCode(200)
  login(@Body() body: { token?: unknown } | undefined, @Req() req: AuthedRequest, @Res({ passthrough: true }) res: Reply) {
    const token = body?.token;
    if (typeof token !== 'string' || token.length === 0 || token.length > 1024) throw new BadRequestException('send { "token": "<your dashboard token>" }');
    if (this.policy.mode === 'none') return { role: 'operator', mode: 'none' };
    const role = this.policy.tokens.roleOf(token);
    if (!role) {
      // Only a wrong token is throttled: a right one signs in whoever else failed (issue 50).
      const wait = throttleWrongCredential(this.limiter, requestClient(req, this.policy), this.log);
      if (wait > 0) {
        res.setHeader('retry-after', String(wait));
        throw new HttpException(throttledMessage(wait), HttpStatus.TOO_MANY_REQUESTS);
      }
      throw new UnauthorizedException('not a dashboard token');
    }
    const expiresAtMs = Date.now() + this.config.DASHBOARD_SESSION_SECONDS * 1000;
    res.setHeader('set-cookie', sessionCookie(signSession(token, role, expiresAtMs), this.config.DASHBOARD_SESSION_SECONDS, this.config.DASHBOARD_COOKIE_SECURE));
    return { role, expiresAt: new Date(expiresAtMs).toISOString() };
  }

  @ApiOperation({ summary: 'Sign out', description: 'Clears the session cookie in this browser (the cookie is stateless: to end every session of a token, remove the token from the configuration).' })
  @ApiNoContentResponse({ description: 'The cookie is cleared.' })
  @Delete()
  @HttpCode(204)
  logout(@Res({ passthrough: true }) res: Reply): void {
    res.setHeader('set-cookie', clearedSessionCookie(this.config.DASHBOARD_COOKIE_SECURE));
  }
}
