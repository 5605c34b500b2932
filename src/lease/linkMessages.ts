import { z } from "zod";

/**
 * Messages between the LeaseClient (any thread) and the Windows pipe link worker
 * (native/windowsPipeLinkWorker.ts), zod-checked on both sides like every worker message.
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

export const PipeLinkWorkerDataSchema = z
  .object({
    /** null: the worker derives the scope from its own token and session. */
    scope: LeaseScopeSchema.nullable(),
    /** Only what windowsAuditPath reads. */
    env: z.object({ LOCALAPPDATA: z.string().optional(), USERPROFILE: z.string().optional() }).strict(),
    /** Connect deadline (ms); also bounds a single write. */
    timeout_ms: z.number().int().min(1).max(600_000),
  })
  .strict();
export type PipeLinkWorkerData = z.infer<typeof PipeLinkWorkerDataSchema>;

export const ToPipeLinkSchema = z.discriminatedUnion("t", [
  z.object({ t: z.literal("write"), frame: z.instanceof(Uint8Array) }).strict(),
  z.object({ t: z.literal("close") }).strict(),
]);
export type ToPipeLink = z.infer<typeof ToPipeLinkSchema>;

export const FromPipeLinkSchema = z.discriminatedUnion("t", [
  z.object({ t: z.literal("open"), scope: LeaseScopeSchema }).strict(),
  z.object({ t: z.literal("refused"), message: z.string().max(200) }).strict(),
  z.object({ t: z.literal("data"), chunk: z.instanceof(Uint8Array) }).strict(),
  z.object({ t: z.literal("closed") }).strict(),
]);
export type FromPipeLink = z.infer<typeof FromPipeLinkSchema>;
