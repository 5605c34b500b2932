import { randomFillSync } from "node:crypto";
import {
  closeSync,
  createWriteStream,
  fchmodSync,
  constants as fsc,
  fstatSync,
  openSync,
  type WriteStream,
} from "node:fs";
import { z } from "zod";
import { ERROR_CODES } from "../shared/errors.js";
import type { Clock } from "./budgets.js";
import { CAPABILITIES } from "./policy/schema.js";

/** 12 lowercase hex from the CSPRNG; shared between a tool result and its audit event. */
/** Error codes that are refusals (outcome "deny"); every other error is outcome "error". */
const DENIALS = new Set([
  "policy_not_configured",
  "policy_conflict",
  "policy_invalid",
  "policy_expired",
  "policy_unreadable",
  "policy_insecure",
  "action_not_allowed",
  "target_not_allowed",
  "consent_required",
  "consent_denied",
  "capability_expansion_denied",
  "confirmation_required",
  "confirmation_invalid",
  "rate_limited",
  "memory_budget_exceeded",
  "lease_revoked",
  "credential_revoked",
]);
export const isDenial = (code: string): boolean => DENIALS.has(code);

/**
 * The key of events that concern no client (a revocation list that failed to load): no
 * ClientIdentity.hash (hex) equals it, so they reach the file and the operator, never a client.
 */
export const SERVER_EVENT_KEY = "server";

/**
 * CSPRNG bytes drawn 6 at a time from a pool filled 512 ids at once: one getrandom call per
 * 512 ids instead of one per call, on the supervisor's thread (as crypto.randomUUID pools).
 * A byte is never handed out twice.
 */
const ID_POOL = Buffer.alloc(6 * 512);
let idOffset = ID_POOL.length;

export function newCorrelationId(): string {
  if (idOffset === ID_POOL.length) {
    randomFillSync(ID_POOL);
    idOffset = 0;
  }
  const id = ID_POOL.toString("hex", idOffset, idOffset + 6);
  idOffset += 6;
  return id;
}

const HEX12 = /^[0-9a-f]{12}$/;
/** Tool and counter names are identifiers we choose, so a narrow pattern keeps free text out. */
const IDENT = /^[a-z][a-z0-9_]{0,63}$/;

/** Every capability, plus the two non-capability classes of tools. */
export const AUDIT_ACTIONS = [...CAPABILITIES, "discovery", "none"] as const;

/**
 * One audit record. Strict: unknown fields are rejected, strings are identifiers, codes or
 * timestamps, and counters are numbers or booleans only, so no title, typed text, value,
 * region name, token or exception text has a field to travel in.
 */
export const AuditEventSchema = z.strictObject({
  time: z.iso.datetime({ offset: true }),
  correlation_id: z.string().regex(HEX12),
  client: z.string().regex(HEX12),
  /** Operator-chosen id from the policy file; bounded and without control characters. */
  policy_id: z
    .string()
    .max(128)
    .regex(/^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$/u)
    .nullable(),
  action: z.enum(AUDIT_ACTIONS),
  tool: z.string().regex(IDENT),
  outcome: z.enum(["allow", "deny", "error"]),
  reason: z.enum([...ERROR_CODES, "ok"]),
  duration_ms: z.number().finite().nonnegative(),
  pid: z.number().int().nonnegative().nullable(),
  process_start: z.iso.datetime({ offset: true }).nullable(),
  counters: z
    .record(z.string().regex(IDENT), z.union([z.number().finite(), z.boolean()]))
    .refine((c) => Object.keys(c).length <= 32, "too many counters"),
});
export type AuditEvent = z.infer<typeof AuditEventSchema>;
export type AuditAction = AuditEvent["action"];
export type AuditReason = AuditEvent["reason"];

const AUDIT_FIELDS: ReadonlySet<string> = new Set(Object.keys(AuditEventSchema.shape));

/** What callers pass: `time` is stamped from the injected clock when absent. */
export type AuditEventInput = Omit<AuditEvent, "time"> & { time?: string };

export type AuditSinkState = "none" | "open" | "failed";

export interface AuditStats {
  recorded: number;
  /** Events rejected by the schema (never stored anywhere). */
  rejected: number;
  /** Valid events that did not reach the file (sink failed or its buffer was full). */
  sinkDropped: number;
  sink: AuditSinkState;
}

export interface AuditLogOptions {
  capacity?: number;
  filePath?: string | null;
  clock: Clock;
  /**
   * Called with an errno-style code (e.g. "EACCES") when the sink fails; never with paths or
   * messages, so the supervisor can log it to stderr safely.
   */
  onSinkError?: (code: string) => void;
  /**
   * Called when an event is dropped by the schema, with the names of the offending top-level
   * fields only (schema names, or "unknown_field"): never values or counter names.
   */
  onReject?: (fields: string[]) => void;
}

/** Buffered file bytes beyond which events are dropped from the file instead of piling up in memory. */
const MAX_SINK_BUFFER_BYTES = 8 * 1024 * 1024;

/**
 * In-memory ring of the newest events plus an optional append-only JSONL file.
 *
 * File decisions: opened once with O_APPEND|O_CREAT (never O_TRUNC) and mode 0600, refusing
 * symlinks (O_NOFOLLOW) and anything but a regular file owned by this user. An existing file
 * with broader permissions is tightened to 0600 rather than refused, so history is kept and
 * the operator is not locked out by an over-permissive umask; if the chmod fails the sink is
 * refused. Any sink failure leaves the ring working, marks the sink "failed" (health_check
 * is then degraded, and the chain refuses every act on a window with audit_unavailable until
 * available() reopens the file) and never throws into the caller.
 * On Windows POSIX modes do not apply; the file inherits the directory's ACL.
 */
export class AuditLog {
  private readonly capacity: number;
  /** Each event with the full client key it was recorded for (never written to the file). */
  private readonly ring: ({ ev: AuditEvent; key: string } | undefined)[];
  private next = 0;
  private count = 0;
  private readonly clock: Clock;
  private stream: WriteStream | null = null;
  private sinkState: AuditSinkState = "none";
  private readonly onSinkError: ((code: string) => void) | undefined;
  private readonly onReject: ((fields: string[]) => void) | undefined;
  private recordedCount = 0;
  private rejectedCount = 0;
  private sinkDroppedCount = 0;
  private readonly filePath: string | null;
  private lastErrorCode = "EIO";
  private lastOpenAt = Number.NEGATIVE_INFINITY;

  constructor(opts: AuditLogOptions) {
    const cap = opts.capacity ?? 1000;
    if (!Number.isInteger(cap) || cap < 1 || cap > 1_000_000)
      throw new RangeError("audit capacity 1..1000000");
    this.capacity = cap;
    this.ring = new Array<{ ev: AuditEvent; key: string } | undefined>(cap);
    this.clock = opts.clock;
    this.onSinkError = opts.onSinkError;
    this.onReject = opts.onReject;
    this.filePath = opts.filePath || null;
    if (this.filePath) this.openSink(this.filePath);
  }

  /**
   * Whether events reach the configured file. A failed sink is opened again (at most once a
   * second), so effects resume by themselves once the operator fixed the file or its folder.
   * True when no file is configured.
   */
  available(): boolean {
    if (this.sinkState !== "failed" || this.filePath === null) return true;
    const now = this.clock();
    if (now - this.lastOpenAt >= 1000) this.openSink(this.filePath);
    return this.sinkState !== "failed";
  }

  /** The errno-style code of the last sink failure (e.g. "EACCES"): no path, no message. */
  get lastError(): string {
    return this.lastErrorCode;
  }

  get sink(): AuditSinkState {
    return this.sinkState;
  }

  stats(): AuditStats {
    return {
      recorded: this.recordedCount,
      rejected: this.rejectedCount,
      sinkDropped: this.sinkDroppedCount,
      sink: this.sinkState,
    };
  }

  /**
   * Stores a valid event; an invalid one is dropped and counted (never partially stored).
   * `clientKey` is the full key of the client it concerns (a ClientIdentity.hash): reads for a
   * client match on it, not on the event's short `client` id, which many keys share. Required:
   * an event recorded without it would be missing from that client's get_audit_events. An event
   * about no client (the server's own) passes SERVER_EVENT_KEY.
   */
  record(e: AuditEventInput, clientKey: string): void {
    const candidate: unknown =
      e !== null && typeof e === "object" && e.time === undefined
        ? { ...e, time: new Date(this.clock()).toISOString() }
        : e;
    const parsed = AuditEventSchema.safeParse(candidate);
    if (!parsed.success) {
      this.rejectedCount++;
      if (this.onReject) {
        const fields = new Set<string>();
        for (const issue of parsed.error.issues) {
          const top = issue.path[0];
          fields.add(typeof top === "string" && AUDIT_FIELDS.has(top) ? top : "unknown_field");
        }
        try {
          this.onReject([...fields].sort());
        } catch {
          // a failing listener must not turn an audit write into a crash
        }
      }
      return;
    }
    const ev = parsed.data;
    Object.freeze(ev.counters);
    Object.freeze(ev);
    this.ring[this.next] = { ev, key: clientKey };
    this.next = (this.next + 1) % this.capacity;
    if (this.count < this.capacity) this.count++;
    this.recordedCount++;
    this.writeSink(ev);
  }

  /**
   * Newest first, at most `limit` (clamped to 0..capacity). With `clientKey`, only the events
   * recorded for exactly that key (the ring is shared by every client).
   */
  recent(limit = 20, clientKey?: string): AuditEvent[] {
    const n = Math.max(0, Math.min(Math.floor(Number.isFinite(limit) ? limit : 0), this.count));
    const out: AuditEvent[] = [];
    for (let i = 1; i <= this.count && out.length < n; i++) {
      const slot = this.ring[(this.next - i + this.capacity) % this.capacity];
      if (slot && (clientKey === undefined || slot.key === clientKey)) out.push(slot.ev);
    }
    return out;
  }

  /** Flushes and closes the file (server shutdown). */
  close(): Promise<void> {
    const s = this.stream;
    this.stream = null;
    if (!s) return Promise.resolve();
    return new Promise((resolve) => {
      s.end(() => resolve());
      s.once("error", () => resolve());
    });
  }

  private openSink(path: string): void {
    this.lastOpenAt = this.clock();
    let fd: number | undefined;
    try {
      const nofollow = fsc.O_NOFOLLOW ?? 0;
      fd = openSync(path, fsc.O_WRONLY | fsc.O_APPEND | fsc.O_CREAT | nofollow, 0o600);
      const st = fstatSync(fd);
      if (!st.isFile()) throw Object.assign(new Error("not a regular file"), { code: "ENOTFILE" });
      if (process.platform !== "win32") {
        const uid = process.getuid?.();
        if (uid !== undefined && st.uid !== uid)
          throw Object.assign(new Error("owned by another user"), { code: "EOWNER" });
        if ((st.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
      }
      const stream = createWriteStream(path, { fd, flags: "a", autoClose: true });
      fd = undefined; // the stream owns it now
      stream.on("error", (err: NodeJS.ErrnoException) => this.sinkFailed(err));
      this.stream = stream;
      this.sinkState = "open";
    } catch (err) {
      if (fd !== undefined) {
        try {
          closeSync(fd);
        } catch {
          // already closed or invalid: nothing more to release
        }
      }
      this.sinkFailed(err);
    }
  }

  private writeSink(ev: AuditEvent): void {
    if (this.sinkState !== "open" || !this.stream) {
      if (this.sinkState === "failed") this.sinkDroppedCount++;
      return;
    }
    if (this.stream.writableLength > MAX_SINK_BUFFER_BYTES) {
      this.sinkDroppedCount++;
      return;
    }
    this.stream.write(`${JSON.stringify(ev)}\n`);
  }

  private sinkFailed(err: unknown): void {
    this.sinkState = "failed";
    const s = this.stream;
    this.stream = null;
    if (s) s.destroy();
    const code =
      err !== null && typeof err === "object" && "code" in err && typeof err.code === "string"
        ? err.code
        : "EIO";
    // Only a short errno-like code leaves this module; paths and messages stay here.
    const safe = /^[A-Z0-9_]{1,32}$/.test(code) ? code : "EIO";
    this.lastErrorCode = safe;
    try {
      this.onSinkError?.(safe);
    } catch {
      // a failing listener must not turn an audit write into a crash
    }
  }
}
