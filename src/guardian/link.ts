import { connect, type Socket } from "node:net";
import { uiError } from "../shared/errors.js";
import type { HeldEntry, PressLedger } from "../shared/pressLedger.js";
import { encodeEntry } from "./entries.js";
import { readLines } from "./wire.js";

export interface GuardianAddress {
  socket: string;
  token: string;
  /** This worker's lifetime as the guardian knows it (released as a whole when it ends). */
  source: string;
}

const CONNECT_TIMEOUT_MS = 5000;

/**
 * An input worker's link to the guardian. `hold` resolves once the guardian acknowledged the
 * record, so nothing is pressed that the guardian does not know about; once the link is lost
 * (or the guardian released this source), every hold is refused and nothing more is pressed.
 * Releases are fire-and-forget: a release the guardian misses is one it will do again itself.
 */
export class GuardianLink implements PressLedger {
  private readonly waiting: Array<(ok: boolean) => void> = [];
  private lost = false;

  private constructor(private readonly sock: Socket) {
    sock.on("error", () => undefined);
    sock.on("close", () => this.lose());
  }

  static connect(addr: GuardianAddress): Promise<GuardianLink> {
    return new Promise((resolve, reject) => {
      const sock = connect(addr.socket);
      const fail = () => {
        clearTimeout(timer);
        sock.destroy();
        reject(uiError("platform_unavailable", "The input guardian is unavailable."));
      };
      const timer = setTimeout(fail, CONNECT_TIMEOUT_MS);
      sock.once("error", fail);
      let link: GuardianLink | null = null;
      readLines(
        sock,
        (f) => {
          if (link === null) {
            if (f[0] !== "hi") return fail();
            clearTimeout(timer);
            sock.off("error", fail);
            link = new GuardianLink(sock);
            // Never keeps a worker alive on its own.
            sock.unref();
            resolve(link);
            return;
          }
          const answer = link.waiting.shift();
          answer?.(f[0] === "ok");
          if (f[0] !== "ok") link.lose();
        },
        fail,
      );
      sock.write(`hello ${addr.token} ${addr.source}\n`);
    });
  }

  async hold(entries: readonly HeldEntry[]): Promise<void> {
    const answers = entries.map(
      (e) =>
        new Promise<boolean>((resolve) => {
          if (this.lost) return resolve(false);
          this.waiting.push(resolve);
          this.sock.write(`+ ${encodeEntry(e)}\n`);
        }),
    );
    const ok = await Promise.all(answers);
    if (ok.some((x) => !x)) throw uiError("platform_unavailable", "The input guardian is unavailable.");
  }

  release(entries: readonly HeldEntry[]): void {
    if (this.lost) return;
    for (const e of entries) this.sock.write(`- ${encodeEntry(e)}\n`);
  }

  private lose(): void {
    this.lost = true;
    for (const w of this.waiting.splice(0)) w(false);
  }
}
