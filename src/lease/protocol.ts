import { z } from "zod";
import { DenyReasonSchema, type UiError, uiError } from "../shared/errors.js";
import { ProcessInstanceSchema } from "../shared/identity.js";

/**
 * The lease broker's wire protocol: every message is a 4-byte big-endian length followed by
 * that many bytes of UTF-8 JSON. Requests and responses carry the protocol version `v`;
 * a peer speaking another version is refused. No message is larger than MAX_MESSAGE_BYTES;
 * a bigger announced length closes the connection.
 */

export const LEASE_PROTOCOL_VERSION = 1;
export const MAX_MESSAGE_BYTES = 64 * 1024;

/** The only lease durations a person can choose (docs/spec.md §5). */
export const LEASE_HOURS = [1, 2, 5, 8, 12, 24] as const;
export type LeaseHours = (typeof LEASE_HOURS)[number];

/** What an unattended lease can cover; the server still intersects with its policy. */
export const LEASE_CAPABILITIES = ["inspect", "interact", "key", "observe", "click"] as const;
export const LeaseCapabilitySchema = z.enum(LEASE_CAPABILITIES);
export type LeaseCapability = z.infer<typeof LeaseCapabilitySchema>;

export const LEASE_CAPABILITY_WORDS: Record<LeaseCapability, string> = {
  inspect: "read the accessibility tree of windows (names, roles, positions; never field values)",
  interact: "use buttons, lists, check boxes and fields through accessibility actions",
  key: "press allow-listed keys (arrows, Enter, Esc, Tab, letters, digits, F-keys)",
  observe: "take screenshots of allowed windows",
  click: "click and scroll inside allowed windows",
};

export function isLeaseHours(n: number): n is LeaseHours {
  return (LEASE_HOURS as readonly number[]).includes(n);
}

export const LeaseHoursSchema = z
  .number()
  .int()
  .refine((n) => isLeaseHours(n), { message: "hours must be one of 1, 2, 5, 8, 12, 24" });

/** Longest a request may ask the broker to work on it (an activation waits for a person). */
export const MAX_REQUEST_TIMEOUT_MS = 10 * 60 * 1000;

const RequestBase = {
  v: z.literal(LEASE_PROTOCOL_VERSION),
  /** Caller-chosen correlation id, echoed in the response. */
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
  /** The request's deadline, relative to its arrival at the broker. */
  timeout_ms: z.number().int().min(1).max(MAX_REQUEST_TIMEOUT_MS),
};

export const LeaseRequestSchema = z.discriminatedUnion("op", [
  z
    .object({
      ...RequestBase,
      op: z.literal("validate"),
      capability: LeaseCapabilitySchema,
      instance: ProcessInstanceSchema,
    })
    .strict(),
  z.object({ ...RequestBase, op: z.literal("status") }).strict(),
  z.object({ ...RequestBase, op: z.literal("revoke") }).strict(),
  z
    .object({
      ...RequestBase,
      op: z.literal("activate"),
      hours: LeaseHoursSchema,
      capabilities: z.array(LeaseCapabilitySchema).min(1).max(LEASE_CAPABILITIES.length),
    })
    .strict(),
  z.object({ ...RequestBase, op: z.literal("extend"), hours: LeaseHoursSchema }).strict(),
]);
export type LeaseRequest = z.infer<typeof LeaseRequestSchema>;
export type LeaseOp = LeaseRequest["op"];

/** What `status` (and activate/extend) report: facts only, never a credential. */
export const LeaseStatusSchema = z
  .object({
    active: z.boolean(),
    /** RFC 3339, null without an active lease. */
    expires_at: z.string().nullable(),
    capabilities: z.array(LeaseCapabilitySchema),
    /** RFC 3339: when the broker started. */
    broker_started_at: z.string(),
    broker_pid: z.number().int().nonnegative(),
  })
  .strict();
export type LeaseStatus = z.infer<typeof LeaseStatusSchema>;

export const ValidateResultSchema = z.object({ decision: z.literal("ok"), expires_at: z.string() }).strict();
export const RevokeResultSchema = z.object({ revoked: z.boolean() }).strict();

export const LeaseErrorSchema = z.object({ code: DenyReasonSchema, message: z.string().max(500) }).strict();

export const LeaseResponseSchema = z.discriminatedUnion("ok", [
  z
    .object({
      v: z.literal(LEASE_PROTOCOL_VERSION),
      id: z.string(),
      ok: z.literal(true),
      result: z.unknown(),
    })
    .strict(),
  z
    .object({
      v: z.literal(LEASE_PROTOCOL_VERSION),
      id: z.string(),
      ok: z.literal(false),
      error: LeaseErrorSchema,
    })
    .strict(),
]);
export type LeaseResponse = z.infer<typeof LeaseResponseSchema>;

export function okResponse(id: string, result: unknown): LeaseResponse {
  return { v: LEASE_PROTOCOL_VERSION, id, ok: true, result };
}

export function errorResponse(id: string, e: UiError): LeaseResponse {
  return { v: LEASE_PROTOCOL_VERSION, id, ok: false, error: { code: e.code, message: e.message } };
}

/** One frame: 4-byte big-endian length + UTF-8 JSON. */
export function encodeFrame(message: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(message), "utf8");
  if (body.length > MAX_MESSAGE_BYTES) throw uiError("invalid_argument", "A lease message is too large.");
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length, 0);
  return Buffer.concat([head, body]);
}

/**
 * Incremental frame decoder. `push` returns every complete message parsed as JSON
 * (unknown: the caller validates with zod) and throws a UiError on an oversized frame
 * or bytes that are not JSON; after a throw the connection must be closed.
 */
export class FrameDecoder {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): unknown[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: unknown[] = [];
    for (;;) {
      if (this.buf.length < 4) break;
      const len = this.buf.readUInt32BE(0);
      if (len > MAX_MESSAGE_BYTES) throw uiError("invalid_argument", "A lease message is too large.");
      if (this.buf.length < 4 + len) break;
      const body = this.buf.subarray(4, 4 + len);
      this.buf = this.buf.subarray(4 + len);
      try {
        out.push(JSON.parse(body.toString("utf8")));
      } catch {
        throw uiError("invalid_argument", "A lease message is not valid JSON.");
      }
    }
    return out;
  }

  /** Bytes received but not yet a whole frame. */
  get pending(): number {
    return this.buf.length;
  }
}
