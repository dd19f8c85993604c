import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiProduces, ApiTags } from '@nestjs/swagger';
import { Controller, Get, NotFoundException, OnModuleInit, Param, Res } from '@nestjs/common';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Reply {
  setHeader(name: string, value: string): unknown;
  send(body: unknown): unknown;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** Where the page's files are: next to the bundle (dist) or the sources (ts-node). */
export function assetsDir(): string {
  const here = join(__dirname, 'assets');
  return existsSync(here) ? here : join(__dirname, '..', '..', 'assets');
}

/** Serves the single-page dashboard (index.html, render.js, app.js, style.css), read once at start. */
@ApiTags('dashboard page')
@Controller()
export class StaticController implements OnModuleInit {
  private readonly files = new Map<string, Buffer>();

  onModuleInit(): void {
    const dir = assetsDir();
    for (const name of ['index.html', 'login.html', 'render.js', 'app.js', 'login.js', 'style.css', 'favicon.svg']) {
      const p = join(dir, name);
      if (existsSync(p)) this.files.set(name, readFileSync(p));
    }
  }

  private send(res: Reply, name: string): void {
    const body = this.files.get(name);
    if (!body) throw new NotFoundException(`${name} not found`);
    const ext = name.slice(name.lastIndexOf('.'));
    res.setHeader('content-type', TYPES[ext] ?? 'application/octet-stream');
    res.setHeader('cache-control', 'no-cache');
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('content-security-policy', "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'");
    res.send(body);
  }

  @ApiOperation({ summary: 'The dashboard (HTML page)' })
  @ApiProduces('text/html')
  @ApiOkResponse({ description: 'index.html.' })
  @Get()
  index(@Res() res: Reply): void {
    this.send(res, 'index.html');
  }

  @ApiOperation({ summary: 'The sign-in page', description: 'Exchanges a dashboard token for a session cookie (POST /api/v1/session); `/login#token=<token>` signs in at once (the local fab prints such a link).' })
  @ApiProduces('text/html')
  @ApiOkResponse({ description: 'login.html.' })
  @Get('login')
  login(@Res() res: Reply): void {
    this.send(res, 'login.html');
  }

  @ApiOperation({ summary: 'A dashboard asset', description: 'render.js, app.js, style.css, favicon.svg.' })
  @ApiParam({ name: 'file', description: 'File name (lowercase letters, digits, dashes; .js, .css, .svg or .html).' })
  @ApiOkResponse({ description: 'The file.' })
  @ApiNotFoundResponse({ description: 'No such asset.' })
  @Get('assets/:file')
  asset(@Param('file') file: string, @Res() res: Reply): void {
    if (!/^[a-z0-9-]+\.(js|css|svg|html)$/.test(file)) throw new NotFoundException();
    this.send(res, file);
  }
}
