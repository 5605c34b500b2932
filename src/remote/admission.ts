import type { Socket } from "node:net";
import type { RemoteOptions } from "./options.js";

/** Why a request was not admitted: the 429 message a client gets. */
export type AdmissionRefusal = { ok: false; message: string };

/**
 * Fair admission. A request counts as in flight only once its body has arrived (a slow body
 * holds a connection, not a slot) and until it is answered (a long wait holds a slot all that
 * time); each identity has a share of the global cap, so no identity can take the slots of
 * the others however slow or long its requests are. Connections are counted per identity too,
 * from the first request that proved who is on them.
 */
export class Admission {
  private total = 0;
  private readonly inflight = new Map<string, number>();
  private readonly connections = new Map<string, number>();
  private readonly socketOwner = new WeakMap<Socket, string>();

  constructor(
    private readonly options: Pick<
      RemoteOptions,
      "maxInFlight" | "maxInFlightPerIdentity" | "maxConnectionsPerIdentity"
    >,
  ) {}

  /**
   * Binds a connection to the identity its first authenticated request proved; refuses when
   * that identity already holds its share of connections. A connection stays its first
   * identity's until it closes.
   */
  bindConnection(sock: Socket, identity: string): AdmissionRefusal | { ok: true } {
    if (this.socketOwner.has(sock)) return { ok: true };
    const held = this.connections.get(identity) ?? 0;
    if (held >= this.options.maxConnectionsPerIdentity)
      return { ok: false, message: "This identity has as many connections open as one identity may have." };
    this.socketOwner.set(sock, identity);
    this.connections.set(identity, held + 1);
    sock.once("close", () => {
      const n = (this.connections.get(identity) ?? 1) - 1;
      if (n <= 0) this.connections.delete(identity);
      else this.connections.set(identity, n);
    });
    return { ok: true };
  }

  /** Admits one request whose body has arrived; `release` ends its slot (call it once, when answered). */
  admit(identity: string): AdmissionRefusal | { ok: true; release: () => void } {
    const own = this.inflight.get(identity) ?? 0;
    if (own >= this.options.maxInFlightPerIdentity)
      return { ok: false, message: "This identity has as many requests in flight as one identity may have." };
    if (this.total >= this.options.maxInFlight) return { ok: false, message: "Too many requests in flight." };
    this.total++;
    this.inflight.set(identity, own + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.total--;
      const n = (this.inflight.get(identity) ?? 1) - 1;
      if (n <= 0) this.inflight.delete(identity);
      else this.inflight.set(identity, n);
    };
    return { ok: true, release };
  }

  /** For tests and the bench: what is counted now. */
  counts(identity?: string): { total: number; identity: number; connections: number } {
    return {
      total: this.total,
      identity: identity ? (this.inflight.get(identity) ?? 0) : 0,
      connections: identity ? (this.connections.get(identity) ?? 0) : 0,
    };
  }
}
