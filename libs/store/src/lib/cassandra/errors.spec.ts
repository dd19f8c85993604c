import { errors, types } from 'cassandra-driver';
import { FencedError, StoreUnavailableError } from '@defender/contracts';
import { mapCassandraError } from './errors';
import { parseCassandraConsistency } from './options';

/** The driver's base error (abstract in its typings, constructed directly by the driver itself). */
class DriverError extends errors.DriverError {}

/** What cassandra-driver rejects a request with when its connection closes (connection.js). */
function socketClosed(requestNotWritten: boolean): errors.DriverError {
  return Object.assign(new DriverError('Socket was closed'), { isSocketError: true, ...(requestNotWritten ? { requestNotWritten } : {}) });
}

describe('mapCassandraError', () => {
  const codes = types.responseErrorCodes;

  it.each([
    ['no host available', new errors.NoHostAvailableError({}), 'read', false],
    ['client timeout on a write', new errors.OperationTimedOutError('timeout'), 'write', true],
    ['unavailable replicas', new errors.ResponseError(codes.unavailableException, 'Cannot achieve consistency'), 'write', false],
    ['overloaded', new errors.ResponseError(codes.overloaded, 'overloaded'), 'read', false],
    ['write timeout (e.g. the Paxos phase of an LWT)', new errors.ResponseError(codes.writeTimeout, 'CAS timeout'), 'write', true],
    ['read timeout', new errors.ResponseError(codes.readTimeout, 'read timeout'), 'read', false],
    ['connection closed under a sent write (e.g. the commit LWT)', socketClosed(false), 'write', true],
    ['connection closed before the write was sent', socketClosed(true), 'write', false],
    ['connection closed under a read', socketClosed(false), 'read', false],
  ] as const)('%s -> retryable StoreUnavailableError', (_name, err, kind, outcomeUnknown) => {
    const mapped = mapCassandraError(err, 'chamberState.commitRun', kind);
    expect(mapped).toBeInstanceOf(StoreUnavailableError);
    expect(mapped).toMatchObject({ retryable: true, outcomeUnknown, cause: err });
  });

  it('no host available names each host’s reason (e.g. a TLS handshake refused)', () => {
    const err = new errors.NoHostAvailableError({ '10.0.0.7:9042': new Error('unable to verify the first certificate') });
    expect((mapCassandraError(err, 'connect', 'read') as Error).message).toBe('Cassandra: no host available for connect (10.0.0.7:9042: unable to verify the first certificate)');
    expect((mapCassandraError(new errors.NoHostAvailableError({}), 'connect', 'read') as Error).message).toBe('Cassandra: no host available for connect');
  });

  it('passes bugs and the store’s own errors through unchanged', () => {
    const syntax = new errors.ResponseError(codes.syntaxError, 'line 1:0 no viable alternative');
    expect(mapCassandraError(syntax, 'op', 'read')).toBe(syntax);
    const fenced = new FencedError({ toolId: 't', chamberId: 'c' }, 1, 2, null);
    expect(mapCassandraError(fenced, 'op', 'write')).toBe(fenced);
    const driverBug = new DriverError('Index out of range');
    expect(mapCassandraError(driverBug, 'op', 'write')).toBe(driverBug);
  });
});

describe('parseCassandraConsistency', () => {
  it.each([
    ['QUORUM', 'QUORUM'],
    ['local_quorum', 'LOCAL_QUORUM'],
    [' ONE ', 'ONE'],
  ])('%j -> %s', (input, expected) => {
    expect(parseCassandraConsistency(input)).toBe(expected);
  });
  it('names the accepted values for an unknown level', () => {
    expect(() => parseCassandraConsistency('SERIAL')).toThrow(/expected one of QUORUM, LOCAL_QUORUM/);
  });
});
