import { z } from "zod";

/**
 * Messages between the LeaseClient's Windows pipe link (windowsPipeLink.ts, any thread), its
 * worker (native/windowsPipeLinkWorker.ts) and that worker's reader thread, zod-checked on
 * every side like every worker message. One connection at a time, numbered by `conn`.
 */

export const LeaseScopeSchema = z
  .object({
    platform: z.enum(["linux", "win32"]),
    user: z.string().min(1).max(256),
    session_id: z.string().min(1).max(256),
    instance_session: z.string().max(256),
    hash: z.string().regex(/^[0-9a-f]{32}$/),
    endpoint: z.string().min(1).max(512),
    marker: z.string().min(1).max(512),
    runtime_dir: z.string().max(512).nullable(),
    audit_path: z.string().min(1).max(1024),
  })
  .strict();

const LinkEnvSchema = z
  .object({ LOCALAPPDATA: z.string().optional(), USERPROFILE: z.string().optional() })
  .strict();
const ConnId = z.number().int().min(1);

export const ToPipeLinkSchema = z.discriminatedUnion("t", [
  z
    .object({
      t: z.literal("connect"),
      conn: ConnId,
      /** null: the worker derives the scope from its own token and session. */
      scope: LeaseScopeSchema.nullable(),
      /** Only what windowsAuditPath reads. */
      env: LinkEnvSchema,
      /** Connect deadline (ms); also bounds each write of this connection. */
      timeout_ms: z.number().int().min(1).max(600_000),
    })
    .strict(),
  z.object({ t: z.literal("write"), conn: ConnId, frame: z.instanceof(Uint8Array) }).strict(),
  z.object({ t: z.literal("close"), conn: ConnId }).strict(),
  /** Close any connection (its pipe handle is process-wide: a terminated thread would leak it), then exit. */
  z.object({ t: z.literal("shutdown") }).strict(),
]);
export type ToPipeLink = z.infer<typeof ToPipeLinkSchema>;

export const FromPipeLinkSchema = z.discriminatedUnion("t", [
  z.object({ t: z.literal("ready") }).strict(),
  z.object({ t: z.literal("open"), conn: ConnId, scope: LeaseScopeSchema }).strict(),
  z.object({ t: z.literal("refused"), conn: ConnId, message: z.string().max(200) }).strict(),
  z.object({ t: z.literal("data"), conn: ConnId, chunk: z.instanceof(Uint8Array) }).strict(),
  z.object({ t: z.literal("closed"), conn: ConnId }).strict(),
]);
export type FromPipeLink = z.infer<typeof FromPipeLinkSchema>;

/**
 * The pipe reader thread (native/windowsPipeReaderWorker.ts), started once by the link worker.
 * Its two inputs come only from that parent and are checked by hand there (loading zod in a
 * second thread costs about a second per link under Wine); what it sends back is zod-checked.
 */
export interface PipeReaderWorkerData {
  /** [0] becomes 1 when the link worker closes the connection being read. */
  closing: Int32Array<SharedArrayBuffer>;
}

export interface ToPipeReader {
  t: "read";
  conn: number;
  /** The pipe HANDLE, decimal (handles are process-wide; the link worker owns it). */
  pipe: string;
}

export const FromPipeReaderSchema = z.discriminatedUnion("t", [
  z.object({ t: z.literal("ready") }).strict(),
  z.object({ t: z.literal("data"), conn: ConnId, chunk: z.instanceof(Uint8Array) }).strict(),
  z.object({ t: z.literal("eof"), conn: ConnId }).strict(),
]);
export type FromPipeReader = z.infer<typeof FromPipeReaderSchema>;
