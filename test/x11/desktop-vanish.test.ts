import { describe, expect, it } from "vitest";
import { X11Desktop } from "../../src/platforms/x11/desktop.js";
import {
  ATOM_NAMES,
  type Pending,
  type PropertyValue,
  type XConnection,
} from "../../src/platforms/x11/xconn.js";
import { uiError } from "../../src/shared/errors.js";

/**
 * The listing requests a window's properties first and its owner (X-Resource PID, /proc) after. A
 * window torn down with its client must never look like an instance-less window (which a call
 * would report as target_not_allowed): killed between the two reads (CI caught this once in
 * test/x11/races.test.ts), it is left out; outliving its exited process, it stays listed (it still
 * covers what is under it) flagged owner_exited. Forced on a stub connection: no X server needed.
 */

const XID = 0x1e00007;
/** The stub has no real X connection to prove ownership of: every X-Resource PID counts. */
const PROVE_ALL = { proveOwners: (pids: readonly number[]) => new Set(pids) };

function cardinal32(values: number[]): PropertyValue {
  const bytes = Buffer.alloc(values.length * 4);
  for (const [i, v] of values.entries()) bytes.writeUInt32LE(v, i * 4);
  return { type: 6, format: 32, bytes };
}

function ok<T>(v: T): Pending<T> {
  return { resolve: () => v };
}

/**
 * A connection with one client window; `owner` answers the X-Resource PID query. The window
 * vanishes (existsAfterOwner false) once that query was made: every later reply of it fails.
 */
function stubConnection(opts: { owner: () => number | null; existsAfterOwner: boolean }): XConnection {
  const atoms = Object.fromEntries(ATOM_NAMES.map((n, i) => [n, 300 + i])) as Record<string, number>;
  let ownerAsked = false;
  const stub = {
    atoms,
    root: 1,
    displayName: ":99",
    hasXRes: true,
    getProperty(win: number, atom: number): Pending<PropertyValue | null> {
      if (win === 1 && (atom === atoms._NET_CLIENT_LIST_STACKING || atom === atoms._NET_CLIENT_LIST))
        return ok(cardinal32([XID]));
      if (win === XID && atom === atoms._NET_WM_NAME)
        return ok({ type: atoms.UTF8_STRING, format: 8, bytes: Buffer.from("stub window") });
      return ok(null);
    },
    getMapState(): Pending<{ mapState: number; overrideRedirect: boolean }> {
      return {
        resolve: () => {
          if (ownerAsked && !opts.existsAfterOwner) throw uiError("target_gone");
          return { mapState: 2, overrideRedirect: false };
        },
      };
    },
    getGeometry: () => ok({ x: 0, y: 0, width: 200, height: 100, border: 0 }),
    queryTree: (win: number) => ok(win === 1 ? { parent: 0, children: [XID] } : { parent: 1, children: [] }),
    inputFocus: () => ok(0),
    // The listing sends its batch before the X-Resource round trip; the stub answers at once.
    flush: () => {},
    clientCountsByPid: () => new Map<number, number>(),
    translateToRoot: () => ok({ x: 10, y: 20 }),
    // One X-Resource answer for every listed window, asked before the replies are judged.
    clientPids(wins: readonly number[]): Map<number, number> {
      ownerAsked = true;
      const pid = opts.owner();
      return new Map(pid === null ? [] : wins.map((w) => [w, pid] as const));
    },
    // Asked in the batch, answered when its reply is read (after the flush).
    askClientPids(wins: readonly number[]): Pending<Map<number, number>> {
      return { resolve: () => stub.clientPids(wins) };
    },
  };
  return stub as unknown as XConnection;
}

describe("x11 window listing when the owner vanishes between the replies and the PID", () => {
  it("lists the window with its instance while the owner lives (control)", async () => {
    const d = new X11Desktop(stubConnection({ owner: () => process.pid, existsAfterOwner: true }), PROVE_ALL);
    const [w] = await d.listWindows();
    expect(w?.hwnd).toBe(String(XID));
    expect(w?.instance?.pid).toBe(process.pid);
  });

  it("keeps a live window whose owner is unknown (a remote client), without an instance", async () => {
    const d = new X11Desktop(stubConnection({ owner: () => null, existsAfterOwner: true }), PROVE_ALL);
    const all = await d.listWindows();
    expect(all).toHaveLength(1);
    expect(all[0]?.instance).toBeNull();
  });

  it("leaves out a window destroyed together with its client after its properties were read", async () => {
    const d = new X11Desktop(stubConnection({ owner: () => null, existsAfterOwner: false }), PROVE_ALL);
    expect(await d.listWindows()).toEqual([]);
    expect(await d.getWindow(String(XID))).toBeNull();
  });

  it("keeps a window that outlives its exited process listed (it still covers others), flagged owner_exited", async () => {
    // A PID no process has (above pid_max), as after the client's exit and reaping.
    const d = new X11Desktop(
      stubConnection({ owner: () => 0x3fffffff + 1, existsAfterOwner: true }),
      PROVE_ALL,
    );
    const all = await d.listWindows();
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ hwnd: String(XID), instance: null, owner_exited: true });
  });

  it("does not flag a live owner it may not look at, nor an unknown one", async () => {
    // PID 1 exists; whether /proc lets us read its exe or not, it has not exited.
    const init = await new X11Desktop(
      stubConnection({ owner: () => 1, existsAfterOwner: true }),
      PROVE_ALL,
    ).listWindows();
    expect(init[0]?.owner_exited).toBeUndefined();
    const remote = await new X11Desktop(
      stubConnection({ owner: () => null, existsAfterOwner: true }),
      PROVE_ALL,
    ).listWindows();
    expect(remote[0]?.owner_exited).toBeUndefined();
  });

  it("leaves it out too when the PID was read but the process had already exited", async () => {
    // A PID no process has (above pid_max): /proc knows nothing, as after the client's exit.
    const d = new X11Desktop(
      stubConnection({ owner: () => 0x3fffffff + 1, existsAfterOwner: false }),
      PROVE_ALL,
    );
    expect(await d.listWindows()).toEqual([]);
  });
});
