import type { Env, LeaseScope } from "./endpoint.js";

/** What a lease client needs of a connection to its broker (a Unix socket, or the Windows pipe link). */

export interface LinkHandlers {
  data(chunk: Buffer): void;
  /** Called once, when the link ends for any reason after it was opened. */
  closed(): void;
}

export interface LeaseLink {
  write(frame: Buffer): void;
  destroy(): void;
}

export interface OpenLinkOptions {
  /** null: this process's own scope. */
  scope: LeaseScope | null;
  env: Env;
  timeoutMs: number;
}

/** Opens links for one LeaseClient; may keep state (a worker) between connections. */
export interface LinkOpener {
  open(opts: OpenLinkOptions, handlers: LinkHandlers): Promise<{ link: LeaseLink; scope: LeaseScope }>;
  /** Starts whatever the first open needs (Windows: the link worker), without connecting. */
  prepare(): void;
  /** Resolves once every connection it opened is closed. */
  dispose(): Promise<void>;
}
