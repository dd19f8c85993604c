/** PEM files for TLS to NATS (NATS_TLS_CA_FILE, NATS_TLS_CERT_FILE, NATS_TLS_KEY_FILE). */
export interface NatsTlsFiles {
  /** CA the servers' certificates must chain to (otherwise the system's CAs). */
  caFile?: string;
  /** Client certificate and key, both or neither: mutual TLS. */
  certFile?: string;
  keyFile?: string;
}

/** The NATS TLS variables of an app's validated config (see commonEnvShape). */
export interface NatsTlsEnv {
  NATS_TLS_CA_FILE?: string;
  NATS_TLS_CERT_FILE?: string;
  NATS_TLS_KEY_FILE?: string;
}

/** The files named by the environment, or undefined when none is set (plaintext unless the server requires TLS). */
export function natsTlsFromEnv(e: NatsTlsEnv): NatsTlsFiles | undefined {
  const files: NatsTlsFiles = {
    ...(e.NATS_TLS_CA_FILE ? { caFile: e.NATS_TLS_CA_FILE } : {}),
    ...(e.NATS_TLS_CERT_FILE ? { certFile: e.NATS_TLS_CERT_FILE } : {}),
    ...(e.NATS_TLS_KEY_FILE ? { keyFile: e.NATS_TLS_KEY_FILE } : {}),
  };
  return Object.keys(files).length > 0 ? files : undefined;
}

/**
 * The client's `tls` option. The NATS client reads the files at every (re)connect, so a renewed
 * certificate mounted from a Secret is used on the next reconnect. With TLS configured the client
 * refuses a server that does not offer TLS; a wrong CA or a refused client certificate fails the
 * handshake (never a fallback to plaintext).
 *
 * @throws Error when a certificate is given without its key (or the reverse).
 */
export function natsClientTls(files: NatsTlsFiles | undefined): { caFile?: string; certFile?: string; keyFile?: string } | undefined {
  if (!files) return undefined;
  if ((files.certFile === undefined) !== (files.keyFile === undefined)) {
    throw new Error(`NATS TLS: a client certificate needs its key (${files.certFile ? 'keyFile' : 'certFile'} is missing)`);
  }
  return { ...files };
}

/** `off`, `server` (the server is verified) or `mutual` (a client certificate is sent too), for logs. */
export function natsTlsMode(files: NatsTlsFiles | undefined): 'off' | 'server' | 'mutual' {
  if (!files) return 'off';
  return files.certFile ? 'mutual' : 'server';
}
