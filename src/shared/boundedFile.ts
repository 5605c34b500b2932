import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

/**
 * Reads a whole regular file of at most `maxBytes` bytes. Every file the server parses (policy,
 * coordinate profile, fake scenario) comes through here, so none can make it read more than its
 * cap, block on a FIFO or follow a device.
 */
export type BoundedRead =
  | { ok: true; bytes: Buffer }
  | { ok: false; problem: "cannot_open"; errno: string }
  | { ok: false; problem: "not_a_file" | "too_big" | "cannot_read" | "refused" };

/** `accept` sees the open descriptor before anything is read (e.g. to check where it really leads). */
export function readBoundedFile(
  path: string,
  maxBytes: number,
  accept: (fd: number) => boolean = () => true,
): BoundedRead {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO must not hang the server; it is refused below as not a regular file.
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (e) {
    // The errno name only (ENOENT, EACCES): never the exception's text.
    const code = (e as NodeJS.ErrnoException | null)?.code;
    return {
      ok: false,
      problem: "cannot_open",
      errno: typeof code === "string" && /^E[A-Z0-9]{1,30}$/.test(code) ? code : "EIO",
    };
  }
  try {
    if (!accept(fd)) return { ok: false, problem: "refused" };
    const st = fstatSync(fd);
    if (!st.isFile()) return { ok: false, problem: "not_a_file" };
    if (st.size > maxBytes) return { ok: false, problem: "too_big" };
    // One byte more than allowed, so a file that grew after fstat is still caught.
    const buf = Buffer.alloc(maxBytes + 1);
    let n = 0;
    for (;;) {
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
      if (n === buf.length) return { ok: false, problem: "too_big" };
    }
    return { ok: true, bytes: buf.subarray(0, n) };
  } catch {
    return { ok: false, problem: "cannot_read" };
  } finally {
    closeSync(fd);
  }
}

/** Strict UTF-8 (a leading BOM is dropped), or null. */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
    return text.startsWith("\uFEFF") ? text.slice(1) : text;
  } catch {
    return null;
  }
}
