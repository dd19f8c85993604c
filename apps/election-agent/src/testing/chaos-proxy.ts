import { createServer, connect, Server, Socket } from 'node:net';

/**
 * What the proxy does to traffic: `pass`; `reset` (close every connection, refuse new ones);
 * `blackhole` (accept, but drop every byte both ways: a partition the client only notices by
 * deadlines); `drop-responses` (requests reach the agent and take effect, answers are lost).
 * Connections that lost bytes are closed when the mode returns to `pass` (their HTTP/2 framing is broken).
 */
export type ProxyMode = 'pass' | 'reset' | 'blackhole' | 'drop-responses';

interface Pair {
  client: Socket;
  upstream: Socket;
  tainted: boolean;
}

/** A TCP proxy in front of one agent, for injecting connection faults between a client and it. */
export class ChaosProxy {
  private mode: ProxyMode = 'pass';
  private readonly pairs = new Set<Pair>();
  private readonly server: Server;
  private boundPort = 0;

  private constructor(
    private readonly targetPort: number,
    private readonly targetHost: string,
  ) {
    this.server = createServer((client) => this.accept(client));
  }

  static async start(targetPort: number, targetHost = '127.0.0.1'): Promise<ChaosProxy> {
    const proxy = new ChaosProxy(targetPort, targetHost);
    await new Promise<void>((resolve, reject) => {
      proxy.server.once('error', reject);
      proxy.server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = proxy.server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no port');
    proxy.boundPort = address.port;
    return proxy;
  }

  get port(): number {
    return this.boundPort;
  }

  get current(): ProxyMode {
    return this.mode;
  }

  setMode(mode: ProxyMode): void {
    this.mode = mode;
    for (const p of [...this.pairs]) {
      if (mode === 'reset' || (mode === 'pass' && p.tainted)) this.drop(p);
    }
  }

  async close(): Promise<void> {
    this.setMode('reset');
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    if (this.mode === 'reset') {
      client.destroy();
      return;
    }
    const pair: Pair = { client, upstream: connect(this.targetPort, this.targetHost), tainted: false };
    this.pairs.add(pair);
    client.on('data', (d: Buffer) => {
      if (this.mode === 'pass' || this.mode === 'drop-responses') pair.upstream.write(d);
      else pair.tainted = true;
    });
    pair.upstream.on('data', (d: Buffer) => {
      if (this.mode === 'pass') pair.client.write(d);
      else pair.tainted = true;
    });
    for (const s of [client, pair.upstream]) {
      s.on('error', () => this.drop(pair));
      s.on('close', () => this.drop(pair));
    }
  }

  private drop(p: Pair): void {
    p.client.destroy();
    p.upstream.destroy();
    this.pairs.delete(p);
  }
}
