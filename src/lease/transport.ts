/**
 * What the broker needs from a platform's endpoint: verified connections only. A transport
 * checks the peer (same user) before it hands a connection over; refused peers never reach
 * the broker's request handling.
 */

export interface PeerInfo {
  /** The connecting process, when the OS tells (it is not a credential, only for audit). */
  pid: number | null;
}

/**
 * Answers a connection has not read yet, in bytes. Past this the peer is dropped: a client
 * that stops reading must neither stall the broker nor make it buffer without bound.
 */
export const MAX_PENDING_OUTPUT = 256 * 1024;

export interface ConnectionIO {
  write(frame: Buffer): void;
  close(): void;
}

export interface ConnectionHandlers {
  data(chunk: Buffer): void;
  closed(): void;
}

export type AcceptFn = (peer: PeerInfo, io: ConnectionIO) => ConnectionHandlers;

export type RefusalReason = "other_user" | "peer_unknown";

export interface BrokerTransport {
  close(): Promise<void>;
}

/** Holds the per-scope marker (lock / mutex) for the broker's lifetime. */
export interface ScopeMarker {
  release(): void;
}

export class AlreadyRunningError extends Error {
  constructor() {
    super("Another uiinspect lease broker is already running for this user and sign-in session.");
    this.name = "AlreadyRunningError";
  }
}
