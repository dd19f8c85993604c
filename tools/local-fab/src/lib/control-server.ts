import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import type { LocalFab } from './local-fab';

/** The operations the control endpoint offers (the local fab implements them). */
export type FabControl = Pick<LocalFab, 'processes' | 'addDefender' | 'crashDefender' | 'drainDefender' | 'restartLeader' | 'describe'>;

const MAX_BODY = 16 * 1024;

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new BadRequestError('body too large');
    chunks.push(c as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (!text) return {};
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new BadRequestError('body must be a JSON object');
    return v as Record<string, unknown>;
  } catch (err) {
    if (err instanceof SyntaxError) throw new BadRequestError(`invalid JSON: ${err.message}`);
    throw err;
  }
}

class BadRequestError extends Error {
  override readonly name = 'BadRequestError';
}

function defenderRef(body: Record<string, unknown>): string {
  const d = body['defender'];
  if (typeof d !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(d)) throw new BadRequestError('"defender" must name a defender (defender-N or its pod name)');
  return d;
}

/**
 * The local fab's control endpoint, on 127.0.0.1 only, each request carrying
 * `authorization: Bearer <token>` (the dashboard gets the token; a web page elsewhere cannot send it):
 *
 * | method and path | does |
 * |---|---|
 * | `GET /control/processes` | every process: name, role, pid, alive, URL, exit, stable ID / leadership |
 * | `GET /control/fab` | NATS URL, store, dashboard URL (what defenderctl needs) |
 * | `POST /control/defenders` | starts one more defender |
 * | `POST /control/defenders/crash` `{"defender":"defender-1"}` | SIGKILL |
 * | `POST /control/defenders/drain` `{"defender":"defender-1"}` | SIGTERM: graceful leave, waits for the exit |
 * | `POST /control/controller/restart-leader` `{"mode":"kill"\|"graceful"}` | stops the leader and starts it again |
 */
export class ControlServer {
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(fab: FabControl, token: string, port = 0): Promise<ControlServer> {
    const want = Buffer.from(`Bearer ${token}`);
    const server = createServer((req, res) => {
      void (async () => {
        const given = Buffer.from(req.headers['authorization'] ?? '');
        if (given.length !== want.length || !timingSafeEqual(given, want)) return send(res, 401, { error: 'missing or wrong bearer token' });
        const path = (req.url ?? '/').split('?')[0];
        const route = `${req.method} ${path}`;
        try {
          switch (route) {
            case 'GET /control/processes':
              return send(res, 200, { processes: await fab.processes() });
            case 'GET /control/fab':
              return send(res, 200, fab.describe());
            case 'POST /control/defenders': {
              const p = await fab.addDefender();
              return send(res, 201, { started: p.name });
            }
            case 'POST /control/defenders/crash': {
              const ref = defenderRef(await readJson(req));
              const p = await fab.crashDefender(ref);
              return send(res, 200, { crashed: p.name, defender: ref });
            }
            case 'POST /control/defenders/drain': {
              const ref = defenderRef(await readJson(req));
              const p = await fab.drainDefender(ref);
              return send(res, 200, { drained: p.name, defender: ref, exit: p.exit });
            }
            case 'POST /control/controller/restart-leader': {
              const mode = (await readJson(req))['mode'] ?? 'kill';
              if (mode !== 'kill' && mode !== 'graceful') throw new BadRequestError('"mode" must be kill or graceful');
              return send(res, 200, await fab.restartLeader(mode));
            }
            default:
              return send(res, 404, { error: `no route ${route}` });
          }
        } catch (err) {
          const e = err as Error;
          const status = e.name === 'BadRequestError' ? 400 : e.name === 'NotFoundError' ? 404 : 500;
          return send(res, status, { error: e.message });
        }
      })();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    const addr = server.address();
    if (addr === null || typeof addr === 'string') throw new Error('control server has no TCP address');
    return new ControlServer(server, `http://127.0.0.1:${addr.port}`);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
