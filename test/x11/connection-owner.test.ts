import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { XConnection as XConn } from "../../src/platforms/x11/xconn.js";
import { startSession, X11_AVAILABLE, type X11Session } from "./support.js";

/**
 * The connection-owner proof on a real X server, with this test process as the owner: it holds
 * its own X connections alone, so it is proven while the X server's count of its clients stays
 * what the kernel shows; a count that changes between the proof's two asks (a connection made
 * or closed meanwhile, as an exec'd binary connecting during the proof) proves nothing.
 */

describe.skipIf(!X11_AVAILABLE)("x11 connection-owner proof (the X server asked twice)", () => {
  let session: X11Session;
  let x: XConn;

  beforeAll(async () => {
    session = startSession();
    const { XConnection } = await import("../../src/platforms/x11/xconn.js");
    x = XConnection.open();
  }, 60_000);

  afterAll(() => {
    x?.close();
    session?.stop();
  });

  async function prove(counts: () => ReadonlyMap<number, number>): Promise<boolean> {
    const { provenOwners } = await import("../../src/platforms/x11/connectionOwner.js");
    return provenOwners([process.pid], x.displayName, counts).has(process.pid);
  }

  it("a process holding its connections alone, counted the same before and after: proven", async () => {
    expect(await prove(() => x.clientCountsByPid())).toBe(true);
  });

  it("a count that changed between the two asks: not proven, though the first matched the kernel", async () => {
    let asked = 0;
    /** The real counts, the second ask of each proof shifted by `delta` for this process. */
    const shifted = (delta: number) => () => {
      const real = new Map(x.clientCountsByPid());
      asked++;
      if (asked % 2 === 0) real.set(process.pid, (real.get(process.pid) ?? 0) + delta);
      return real;
    };
    // A client attributed to this process appeared during the proof, one it does not hold (the
    // fork-then-exec parent's binary connecting between the count and the scan)…
    expect(await prove(shifted(1))).toBe(false);
    // …or one closed meanwhile.
    expect(await prove(shifted(-1))).toBe(false);
    expect(asked).toBe(4);
  });
});
