import type { IncomingMessage } from "node:http";

export type BodyRead =
  | { ok: true; body: unknown }
  | { ok: false; reason: "too_large" | "timeout" | "not_json" | "aborted" };

/**
 * Reads a JSON request body of at most `maxBytes`, within `deadlineMs` of its headers. A body
 * that is late, too large or cut off is not waited for further: the caller answers (408/413)
 * and closes the connection, so a slow sender holds a connection for the deadline at most.
 */
export function readJsonBody(req: IncomingMessage, maxBytes: number, deadlineMs: number): Promise<BodyRead> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (Number.isFinite(declared) && declared > maxBytes)
    return Promise.resolve({ ok: false, reason: "too_large" });
  return new Promise<BodyRead>((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (r: BodyRead) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onError);
      if (!r.ok) req.pause();
      resolve(r);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) finish({ ok: false, reason: "too_large" });
      else chunks.push(chunk);
    };
    const onEnd = () => {
      try {
        finish({ ok: true, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown });
      } catch {
        finish({ ok: false, reason: "not_json" });
      }
    };
    const onError = () => finish({ ok: false, reason: "aborted" });
    const timer = setTimeout(() => finish({ ok: false, reason: "timeout" }), deadlineMs);
    timer.unref();
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", onError);
    req.once("aborted", onError);
  });
}
