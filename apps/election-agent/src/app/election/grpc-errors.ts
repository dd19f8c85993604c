import { Logger } from '@nestjs/common';
import { RpcException } from '@nestjs/microservices';
import { status } from '@grpc/grpc-js';
import {
  ContentionError,
  CorruptLeaseRecordError,
  InvalidRequestError,
  LeaseStoreUnavailableError,
} from '@defender/election';

const logger = new Logger('ElectionGrpc');

/** The gRPC status for a library error (the one place they are mapped). */
export function grpcStatusOf(err: unknown): { code: status; message: string } {
  if (err instanceof RpcException) return err.getError() as { code: status; message: string };
  if (err instanceof InvalidRequestError) return { code: status.INVALID_ARGUMENT, message: err.message };
  if (err instanceof LeaseStoreUnavailableError) return { code: status.UNAVAILABLE, message: err.message };
  if (err instanceof ContentionError) return { code: status.ABORTED, message: err.message };
  if (err instanceof CorruptLeaseRecordError) return { code: status.INTERNAL, message: err.message };
  logger.error({
    msg: 'unexpected error in election.v1 call',
    err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err),
  });
  return { code: status.INTERNAL, message: 'internal error' };
}

export function toRpcException(err: unknown): RpcException {
  return err instanceof RpcException ? err : new RpcException(grpcStatusOf(err));
}
