import { createInterface } from "node:readline";
import type { Readable } from "node:stream";

/**
 * The guardian's line protocol (ASCII, one message per line; entries as in entries.ts).
 *
 * worker → guardian (socket): `hello TOKEN SOURCE` (answered `hi`), `+ ENTRY` (answered `ok`, or
 *   `no` once the source was released), `- ENTRY` (not answered).
 * supervisor → guardian (stdin): `x SOURCE` (release that source; answered `x SOURCE` on stdout),
 *   `a` (release everything; answered `a`). End of stdin: release everything and exit.
 * guardian → supervisor (stdout): `ready` once it listens, then the answers above.
 */

export const SOURCE_PATTERN = /^[a-z0-9][a-z0-9.-]{0,39}$/;
export const TOKEN_PATTERN = /^[0-9a-f]{32}$/;
/** Lines longer than this are not ours: the connection is dropped. */
export const MAX_LINE = 256;

export const ENV = {
  socket: "UIINSPECT_GUARDIAN_SOCKET",
  token: "UIINSPECT_GUARDIAN_TOKEN",
  platform: "UIINSPECT_GUARDIAN_PLATFORM",
} as const;

/** Calls `onLine` for each line of `input` (split on spaces); stops at an over-long line. */
export function readLines(input: Readable, onLine: (fields: string[]) => void, onTooLong: () => void): void {
  const rl = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  // readline re-emits its input's errors: unhandled, a worker that died with an answer still
  // unread (ECONNRESET on the guardian's read) would crash the guardian and leave its remaps in
  // place. The stream's own error/close listeners decide what a broken input means.
  rl.on("error", () => undefined);
  rl.on("line", (line) => {
    if (line.length > MAX_LINE) {
      onTooLong();
      rl.close();
      return;
    }
    onLine(line.split(" ").filter((f) => f !== ""));
  });
}
