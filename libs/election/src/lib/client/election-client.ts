import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ElectionCallError } from '../errors';
import { LeaderView } from '../lease';
import {
  CampaignRequestWire,
  ELECTION_PROTO_FILE,
  ElectionRequestWire,
  LeaderStateWire,
  leaderStateFromWire,
  LeaseInfo,
  leaseInfoFromWire,
  LeaseRequestWire,
  LeaseResponseWire,
  PROTO_LOADER_OPTIONS,
  ReleaseResponseWire,
  resolveProtoRoot,
} from '../proto';
import {
  CampaignRequest,
  campaignRequestSchema,
  electionNameSchema,
  LeaseRequest,
  leaseRequestSchema,
  parseRequest,
} from '../validation';

/** TLS towards the agents. Without it the channel is plaintext. */
export interface ElectionClientTls {
  /** PEM CA certificates that sign the agents' certificates; default: Node's root store. */
  rootCerts?: Buffer;
  /** PEM client certificate chain and key, for agents that require mutual TLS. */
  certChain?: Buffer;
  privateKey?: Buffer;
  /** Name to verify in the agent's certificate when it differs from the address's host. */
  serverName?: string;
}

export interface ElectionClientOptions {
  /** Agent addresses (`host:port`, or any gRPC target such as `dns:///agents:9090`); tried in turn. */
  addresses: readonly string[];
  /** Shared token sent as `authorization: Bearer <token>`. */
  authToken?: string;
  tls?: ElectionClientTls;
  /** Deadline of one call on one address, in ms. Default 2000. */
  callTimeoutMs?: number;
  /** Directories searched for the proto before the source tree (a bundle's copied assets). */
  protoRoots?: readonly string[];
  /**
   * This process's lease key, sent with every Campaign, Renew and Release that names none (the
   * agents require one; only a term's own key renews or releases it). Default: 24 random bytes,
   * made once per client, so terms won through this client are this process's alone.
   */
  leaseKey?: string;
}

/** Per call: its deadline on each address and how many addresses to try. */
export interface CallOptions {
  timeoutMs?: number;
  /** Addresses to try before giving up; default all of them. */
  attempts?: number;
}

/** An open Observe stream. */
export interface ObserveHandle {
  cancel(): void;
}

/** gRPC codes after which another attempt (on another agent) can succeed. */
const RETRYABLE = new Set<number>([
  grpc.status.UNAVAILABLE,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.ABORTED,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.INTERNAL,
  grpc.status.UNKNOWN,
  grpc.status.CANCELLED,
]);

type Callback<T> = (err: grpc.ServiceError | null, res?: T) => void;
interface ElectionStub extends grpc.Client {
  Campaign(
    req: CampaignRequestWire,
    md: grpc.Metadata,
    opts: grpc.CallOptions,
    cb: Callback<LeaseResponseWire>,
  ): void;
  Renew(
    req: LeaseRequestWire,
    md: grpc.Metadata,
    opts: grpc.CallOptions,
    cb: Callback<LeaseResponseWire>,
  ): void;
  Release(
    req: LeaseRequestWire,
    md: grpc.Metadata,
    opts: grpc.CallOptions,
    cb: Callback<ReleaseResponseWire>,
  ): void;
  GetLeader(
    req: ElectionRequestWire,
    md: grpc.Metadata,
    opts: grpc.CallOptions,
    cb: Callback<LeaderStateWire>,
  ): void;
  Observe(req: ElectionRequestWire, md: grpc.Metadata): grpc.ClientReadableStream<LeaderStateWire>;
}
type StubCtor = new (
  address: string,
  creds: grpc.ChannelCredentials,
  options?: grpc.ChannelOptions,
) => ElectionStub;

let cachedCtor: { root: string; ctor: StubCtor } | undefined;

function stubConstructor(roots: readonly string[]): StubCtor {
  const root = resolveProtoRoot(roots);
  if (cachedCtor?.root === root) return cachedCtor.ctor;
  const def = protoLoader.loadSync(join(root, ELECTION_PROTO_FILE), {
    ...PROTO_LOADER_OPTIONS,
    includeDirs: [root],
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { election: { v1: { Election: StubCtor } } };
  cachedCtor = { root, ctor: pkg.election.v1.Election };
  return cachedCtor.ctor;
}

/**
 * The election.v1 API over gRPC with failover: calls go to one agent until it fails with a
 * retryable status, then to the next address. Requests are validated before they are sent.
 * Holds no election state; see {@link LeaderElection} for the campaign loop.
 */
export class ElectionClient {
  private readonly stubs: { address: string; stub: ElectionStub }[];
  private current = 0;
  private readonly timeoutMs: number;
  private readonly leaseKey: string;

  constructor(private readonly opts: ElectionClientOptions) {
    if (opts.addresses.length === 0) throw new Error('ElectionClient needs at least one agent address');
    this.leaseKey = opts.leaseKey ?? randomBytes(24).toString('base64url');
    const Ctor = stubConstructor(opts.protoRoots ?? []);
    const creds = opts.tls
      ? grpc.credentials.createSsl(
          opts.tls.rootCerts ?? null,
          opts.tls.privateKey ?? null,
          opts.tls.certChain ?? null,
        )
      : grpc.credentials.createInsecure();
    const channelOptions: grpc.ChannelOptions = {
      // Reconnect to a restarted agent quickly; calls fail fast meanwhile and move to the next address.
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 2000,
      ...(opts.tls?.serverName
        ? {
            'grpc.ssl_target_name_override': opts.tls.serverName,
            'grpc.default_authority': opts.tls.serverName,
          }
        : {}),
    };
    this.stubs = opts.addresses.map((address) => ({
      address,
      stub: new Ctor(address, creds, channelOptions),
    }));
    this.timeoutMs = opts.callTimeoutMs ?? 2000;
  }

  /** The address calls go to now. */
  currentAddress(): string {
    return this.stub(this.current).address;
  }

  /** Campaign for `req.election`. @throws InvalidRequestError, ElectionCallError */
  async campaign(req: CampaignRequest, call: CallOptions = {}): Promise<LeaseInfo> {
    const r = parseRequest(campaignRequestSchema, req);
    const wire = await this.unary<CampaignRequestWire, LeaseResponseWire>(
      'Campaign',
      { election: r.election, candidate: r.candidate, ttl_ms: r.ttlMs, ...(r.minToken ? { min_token: r.minToken } : {}), lease_key: r.leaseKey ?? this.leaseKey },
      call,
    );
    return leaseInfoFromWire(wire);
  }

  /** Renew the term (`candidate`, `fencingToken`). @throws InvalidRequestError, ElectionCallError */
  async renew(req: LeaseRequest, call: CallOptions = {}): Promise<LeaseInfo> {
    const r = parseRequest(leaseRequestSchema, req);
    const wire = await this.unary<LeaseRequestWire, LeaseResponseWire>(
      'Renew',
      { election: r.election, candidate: r.candidate, fencing_token: r.fencingToken, lease_key: r.leaseKey ?? this.leaseKey },
      call,
    );
    return leaseInfoFromWire(wire);
  }

  /** Release the term. @throws InvalidRequestError, ElectionCallError */
  async release(
    req: LeaseRequest,
    call: CallOptions = {},
  ): Promise<{ released: boolean; leader: LeaderView }> {
    const r = parseRequest(leaseRequestSchema, req);
    const wire = await this.unary<LeaseRequestWire, ReleaseResponseWire>(
      'Release',
      { election: r.election, candidate: r.candidate, fencing_token: r.fencingToken, lease_key: r.leaseKey ?? this.leaseKey },
      call,
    );
    return { released: wire.released, leader: leaderStateFromWire(wire.leader) };
  }

  /** @throws InvalidRequestError, ElectionCallError */
  async getLeader(election: string, call: CallOptions = {}): Promise<LeaderView> {
    const name = parseRequest(electionNameSchema, election, { '': 'election' });
    return leaderStateFromWire(
      await this.unary<ElectionRequestWire, LeaderStateWire>('GetLeader', { election: name }, call),
    );
  }

  /**
   * Opens an Observe stream on the current agent. `onEnd` is called once when the stream ends
   * for any reason other than {@link ObserveHandle.cancel} (the caller reopens it; a failed
   * stream also moves the client to the next address).
   */
  observe(
    election: string,
    handlers: { onState(view: LeaderView): void; onEnd(err?: ElectionCallError): void },
  ): ObserveHandle {
    const name = parseRequest(electionNameSchema, election, { '': 'election' });
    const index = this.current;
    const { address, stub } = this.stub(index);
    const stream = stub.Observe({ election: name }, this.metadata());
    let cancelled = false;
    let ended = false;
    const end = (err?: ElectionCallError): void => {
      if (ended || cancelled) return;
      ended = true;
      if (err?.retryable) this.rotateFrom(index);
      handlers.onEnd(err);
    };
    stream.on('data', (w: LeaderStateWire) => {
      if (!cancelled) handlers.onState(leaderStateFromWire(w));
    });
    stream.on('error', (e: grpc.ServiceError) => end(this.callError('Observe', address, e)));
    stream.on('end', () => end());
    return {
      cancel: () => {
        cancelled = true;
        stream.cancel();
      },
    };
  }

  close(): void {
    for (const { stub } of this.stubs) stub.close();
  }

  private async unary<Req, Res>(
    method: 'Campaign' | 'Renew' | 'Release' | 'GetLeader',
    req: Req,
    call: CallOptions,
  ): Promise<Res> {
    const attempts = Math.max(1, Math.min(call.attempts ?? this.stubs.length, this.stubs.length));
    const timeoutMs = call.timeoutMs ?? this.timeoutMs;
    let last = new ElectionCallError(`${method}: no attempt made`, grpc.status.UNAVAILABLE, true);
    for (let i = 0; i < attempts; i++) {
      const index = this.current;
      const { address, stub } = this.stub(index);
      try {
        return await new Promise<Res>((resolve, reject) => {
          const fn = stub[method] as unknown as (
            r: Req,
            md: grpc.Metadata,
            o: grpc.CallOptions,
            cb: Callback<Res>,
          ) => void;
          fn.call(
            stub,
            req,
            this.metadata(),
            { deadline: Date.now() + Math.max(1, timeoutMs) },
            (err, res) => (err ? reject(err) : resolve(res as Res)),
          );
        });
      } catch (err) {
        last = this.callError(method, address, err as grpc.ServiceError);
        if (!last.retryable) throw last;
        this.rotateFrom(index);
      }
    }
    throw last;
  }

  private stub(index: number): { address: string; stub: ElectionStub } {
    const s = this.stubs[index % this.stubs.length];
    if (s === undefined) throw new Error(`no agent address at index ${index}`);
    return s;
  }

  private rotateFrom(index: number): void {
    // Only the first failure on an address moves the pointer (concurrent calls fail together).
    if (this.current === index) this.current = (index + 1) % this.stubs.length;
  }

  private metadata(): grpc.Metadata {
    const md = new grpc.Metadata();
    if (this.opts.authToken) md.set('authorization', `Bearer ${this.opts.authToken}`);
    return md;
  }

  private callError(method: string, address: string, err: grpc.ServiceError): ElectionCallError {
    const code = typeof err.code === 'number' ? err.code : grpc.status.UNKNOWN;
    return new ElectionCallError(
      `${method} on ${address}: ${grpc.status[code] ?? code}: ${err.details || err.message}`,
      code,
      RETRYABLE.has(code),
      {
        cause: err,
      },
    );
  }
}
