import { createConnection, createServer, Server, Socket } from 'node:net';
import { freePort, waitFor } from './ports';
import { startTcpProxy, TcpProxy } from './tcp-proxy';

/** A real TCP server that records what each connection sent and lets the test answer. */
interface Target {
  readonly port: number;
  readonly conns: { socket: Socket; received: string }[];
  close(): Promise<void>;
}

async function startTarget(): Promise<Target> {
  const conns: Target['conns'] = [];
  const server: Server = createServer((socket) => {
    const conn = { socket, received: '' };
    conns.push(conn);
    socket.on('data', (d) => (conn.received += d.toString()));
    socket.on('error', () => undefined); // the proxy's cuts reach the target as resets
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    conns,
    close: () => {
      for (const c of conns) c.socket.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

interface Client {
  readonly socket: Socket;
  received: string;
  closed: boolean;
}

async function connectClient(port: number): Promise<Client> {
  const socket = createConnection({ host: '127.0.0.1', port });
  const client: Client = { socket, received: '', closed: false };
  socket.on('data', (d) => (client.received += d.toString()));
  socket.on('error', () => undefined); // a reset is what cut() is for; the test reads `closed`
  socket.on('close', () => (client.closed = true));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return client;
}

const until = (what: string, cond: () => boolean) => waitFor(what, async () => cond(), 20_000, 10);

describe('startTcpProxy (real sockets)', () => {
  let target: Target;
  let proxy: TcpProxy;

  beforeEach(async () => {
    target = await startTarget();
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: target.port } });
  });

  afterEach(async () => {
    await proxy.close();
    await target.close();
  });

  it('forwards bytes both ways and counts them', async () => {
    const c = await connectClient(proxy.port);
    c.socket.write('hello');
    await until('the target to receive hello', () => target.conns[0]?.received === 'hello');
    target.conns[0]!.socket.write('world!');
    await until('the client to receive world!', () => c.received === 'world!');
    expect(proxy.stats()).toMatchObject({ mode: 'open', accepted: 1, open: 1, bytesUp: 5, bytesDown: 6, droppedUp: 0, droppedDown: 0 });
  });

  it('cut() ends open connections, resets new ones without reaching the target, heal() lets them through', async () => {
    const c = await connectClient(proxy.port);
    c.socket.write('a');
    await until('the target to see the connection', () => target.conns[0]?.received === 'a');

    proxy.cut();
    await until('the client connection to close', () => c.closed);
    await until('the target side to close', () => target.conns[0]!.socket.destroyed || target.conns[0]!.socket.readableEnded);

    const refused = createConnection({ host: '127.0.0.1', port: proxy.port });
    refused.on('error', () => undefined);
    await new Promise<void>((r) => refused.once('close', () => r()));
    expect(proxy.stats()).toMatchObject({ mode: 'cut', refused: 1, open: 0, accepted: 1 });
    expect(target.conns).toHaveLength(1);

    proxy.heal();
    const again = await connectClient(proxy.port);
    again.socket.write('b');
    await until('the target to receive b on a new connection', () => target.conns[1]?.received === 'b');
    expect(proxy.stats().mode).toBe('open');
  });

  it('blackhole() keeps the connection open and drops bytes both ways; heal() ends the connection that lost them', async () => {
    const c = await connectClient(proxy.port);
    c.socket.write('x');
    await until('the target to receive x', () => target.conns[0]?.received === 'x');

    proxy.blackhole();
    c.socket.write('lost-up');
    await until('the proxy to drop 7 bytes up', () => proxy.stats().droppedUp === 7);
    target.conns[0]!.socket.write('lost-down!');
    await until('the proxy to drop 10 bytes down', () => proxy.stats().droppedDown === 10);
    expect(target.conns[0]!.received).toBe('x');
    expect(c.received).toBe('');
    expect(c.closed).toBe(false);

    // A connection made during the blackhole is accepted but never reaches the target.
    const late = await connectClient(proxy.port);
    late.socket.write('late');
    await until('the proxy to drop the late bytes', () => proxy.stats().droppedUp === 11);
    expect(target.conns).toHaveLength(1);
    expect(proxy.stats().open).toBe(2);

    proxy.heal();
    await until('both broken connections to close', () => c.closed && late.closed);
    const fresh = await connectClient(proxy.port);
    fresh.socket.write('ok');
    await until('the target to receive ok', () => target.conns[1]?.received === 'ok');
  });

  it('heal() keeps a connection that lost nothing', async () => {
    const c = await connectClient(proxy.port);
    proxy.blackhole();
    proxy.heal();
    c.socket.write('still');
    await until('the target to receive still', () => target.conns[0]?.received === 'still');
    expect(c.closed).toBe(false);
  });

  it('blackholeResponses() forwards requests and drops the answers', async () => {
    const c = await connectClient(proxy.port);
    proxy.blackholeResponses();
    c.socket.write('request');
    await until('the target to receive the request', () => target.conns[0]?.received === 'request');
    target.conns[0]!.socket.write('answer');
    await until('the proxy to drop the answer', () => proxy.stats().droppedDown === 6);
    expect(c.received).toBe('');
    expect(proxy.stats()).toMatchObject({ mode: 'blackholeResponses', bytesUp: 7, droppedUp: 0 });

    proxy.heal();
    await until('the connection that lost the answer to close', () => c.closed);
  });

  it('ends the client connection when the target refuses', async () => {
    const deadPort = await freePort();
    const toNowhere = await startTcpProxy({ target: { host: '127.0.0.1', port: deadPort } });
    try {
      const c = await connectClient(toNowhere.port);
      await until('the client connection to close', () => c.closed);
      expect(toNowhere.stats().open).toBe(0);
    } finally {
      await toNowhere.close();
    }
  });

  it('listens on the port asked for, and close() frees it', async () => {
    const port = await freePort();
    const fixed = await startTcpProxy({ target: { host: '127.0.0.1', port: target.port }, listenPort: port });
    expect(fixed.port).toBe(port);
    const c = await connectClient(port);
    await fixed.close();
    await until('the client connection to close', () => c.closed);
    const reuse = await startTcpProxy({ target: { host: '127.0.0.1', port: target.port }, listenPort: port });
    expect(reuse.port).toBe(port);
    await reuse.close();
  });

  it('passes a large transfer through intact (backpressure)', async () => {
    const c = await connectClient(proxy.port);
    const big = 'z'.repeat(4 * 1024 * 1024);
    c.socket.write(big);
    await until('the target to receive 4 MiB', () => target.conns[0]?.received.length === big.length);
    expect(target.conns[0]!.received === big).toBe(true);
    expect(proxy.stats().bytesUp).toBe(big.length);
  });
});
