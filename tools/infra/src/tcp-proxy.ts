import { createConnection, createServer, Server, Socket } from 'node:net';

/** Where a {@link TcpProxy} forwards its connections. */
export interface TcpProxyTarget {
  readonly host: string;
  readonly port: number;
}

export interface TcpProxyOptions {
  readonly target: TcpProxyTarget;
  /** Port to listen on (127.0.0.1); a free one when omitted. */
  readonly listenPort?: number;
}

/**
 * What the proxy does with traffic now:
 * - `open`: forwards both ways;
 * - `cut`: every connection was destroyed, new ones are reset on accept (a host that went away);
 * - `blackhole`: connections stay open, bytes both ways are dropped, new connections are accepted
 *   but never reach the target (a partition: nothing arrives, nothing fails);
 * - `blackholeResponses`: client -> server is forwarded, server -> client is dropped (a request that
 *   reaches the server whose answer never comes back).
 */
export type TcpProxyMode = 'open' | 'cut' | 'blackhole' | 'blackholeResponses';

/** Counters since the proxy started. Bytes "up" go client -> target, "down" target -> client. */
export interface TcpProxyStats {
  readonly mode: TcpProxyMode;
  /** Connections accepted and paired with a target connection. */
  readonly accepted: number;
  /** Connections reset on accept while cut. */
  readonly refused: number;
  /** Connections open now (client side). */
  readonly open: number;
  readonly bytesUp: number;
  readonly bytesDown: number;
  readonly droppedUp: number;
  readonly droppedDown: number;
}

/**
 * A TCP proxy on 127.0.0.1 for fault injection: point a client at `port` instead of the server,
 * then cut, blackhole or heal the link while both processes keep running.
 */
export interface TcpProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number;
  readonly host: string;
  /** Destroys every connection (both sides) and resets new ones until {@link heal}. */
  cut(): void;
  /** Keeps connections open but silently drops bytes both ways until {@link heal}. */
  blackhole(): void;
  /** Forwards client -> target but drops target -> client until {@link heal}. */
  blackholeResponses(): void;
  /**
   * Forwards again. A connection that lost bytes while blackholed is ended here (its byte stream is
   * no longer whole, as after a TCP timeout) and so is one accepted during a blackhole without a
   * target; the client reconnects through the healed proxy. Connections that lost nothing go on.
   */
  heal(): void;
  /** Stops listening and destroys every connection. */
  close(): Promise<void>;
  stats(): TcpProxyStats;
}

interface Link {
  readonly client: Socket;
  /** Absent for a connection accepted during a blackhole. */
  readonly upstream: Socket | undefined;
  lostBytes: boolean;
}

/** Starts a {@link TcpProxy} forwarding to `target`; resolves once it listens. */
export async function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxy> {
  const { target } = options;
  const links = new Set<Link>();
  let mode: TcpProxyMode = 'open';
  const counts = { accepted: 0, refused: 0, bytesUp: 0, bytesDown: 0, droppedUp: 0, droppedDown: 0 };

  const end = (link: Link): void => {
    links.delete(link);
    link.client.destroy();
    link.upstream?.destroy();
  };

  const relay = (link: Link, from: Socket, to: Socket, direction: 'up' | 'down'): void => {
    from.on('data', (chunk: Buffer) => {
      const dropping = mode === 'blackhole' || (mode === 'blackholeResponses' && direction === 'down');
      if (dropping) {
        link.lostBytes = true;
        if (direction === 'up') counts.droppedUp += chunk.length;
        else counts.droppedDown += chunk.length;
        return;
      }
      if (direction === 'up') counts.bytesUp += chunk.length;
      else counts.bytesDown += chunk.length;
      // Backpressure: a slow reader pauses the writer instead of buffering without bound.
      if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => from.resume());
      }
    });
  };

  const server: Server = createServer((client) => {
    if (mode === 'cut') {
      counts.refused += 1;
      client.on('error', () => undefined); // the peer may see the reset first; nothing to report here
      client.resetAndDestroy();
      return;
    }
    if (mode === 'blackhole') {
      // Accepted but never forwarded: like SYNs into a partition, the client learns nothing.
      const link: Link = { client, upstream: undefined, lostBytes: true };
      links.add(link);
      client.on('data', (chunk: Buffer) => {
        counts.droppedUp += chunk.length;
      });
      client.on('error', () => end(link));
      client.on('close', () => end(link));
      return;
    }
    counts.accepted += 1;
    const upstream = createConnection({ host: target.host, port: target.port });
    const link: Link = { client, upstream, lostBytes: false };
    links.add(link);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    relay(link, client, upstream, 'up');
    relay(link, upstream, client, 'down');
    // Either side failing or closing ends the pair: errors are the faults this proxy exists to make.
    for (const s of [client, upstream]) {
      s.on('error', () => end(link));
      s.on('close', () => end(link));
    }
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.listenPort ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') {
    server.close();
    throw new Error('tcp proxy: could not read the bound port');
  }

  return {
    port: address.port,
    host: '127.0.0.1',
    cut() {
      mode = 'cut';
      for (const link of [...links]) {
        link.client.resetAndDestroy();
        end(link);
      }
    },
    blackhole() {
      mode = 'blackhole';
    },
    blackholeResponses() {
      mode = 'blackholeResponses';
    },
    heal() {
      mode = 'open';
      for (const link of [...links]) if (link.lostBytes) end(link);
    },
    close() {
      mode = 'cut';
      for (const link of [...links]) end(link);
      return new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
    stats() {
      return { mode, open: links.size, ...counts };
    },
  };
}
