import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import dbus from "dbus-next";
import createConnection from "dbus-next/lib/connection.js";

/**
 * A peer-to-peer D-Bus link to one application's own AT-SPI server (the address it answers to
 * org.a11y.atspi.Application.GetApplicationBusAddress), as libatspi/pyatspi use it: calls skip
 * the bus daemon's two extra hops. dbus-next's MessageBus always sends Hello, which a peer does
 * not answer, so this speaks method calls over dbus-next's bare connection (auth + framing) and
 * matches replies by serial itself.
 *
 * The address comes from the target application, so it is trusted only as far as the kernel
 * confirms it: a plain `unix:path=` (never tcp, abstract or unixexec — dbus-next would spawn the
 * program named by a unixexec address), a socket we own, whose listening inode is held open by
 * the application's own process (/proc/net/unix + /proc/PID/fd). Anything else: the caller uses
 * the bus.
 */

/** A reply body, or the error name a peer answered with. */
export type PeerReply = { ok: true; body: unknown[] } | { ok: false; errorName: string };

const SAFE_PATH = /^\/[A-Za-z0-9/._+-]{1,200}$/;
/** __SO_ACCEPTCON in /proc/net/unix's Flags column: a listening socket. */
const SO_ACCEPTCON = 0x10000;

/** The socket path of a `unix:path=` address, or null for any other (or unsafe) address. */
export function unixPathOf(address: string): string | null {
  if (address.includes(";")) return null;
  const m = /^unix:(.*)$/.exec(address);
  if (!m) return null;
  let path: string | null = null;
  for (const part of (m[1] ?? "").split(",")) {
    const eq = part.indexOf("=");
    if (eq <= 0) return null;
    const key = part.slice(0, eq);
    let value: string;
    try {
      value = decodeURIComponent(part.slice(eq + 1));
    } catch {
      return null;
    }
    if (key === "path") path = value;
    else if (key !== "guid") return null;
  }
  if (path === null || !SAFE_PATH.test(path) || path.split("/").includes("..")) return null;
  return path;
}

/** The inode of the listening unix socket bound at `path`, from the kernel's table. */
function listeningInode(path: string): string | null {
  let table: string;
  try {
    table = readFileSync("/proc/net/unix", "latin1");
  } catch {
    return null;
  }
  for (const line of table.split("\n")) {
    // Num RefCount Protocol Flags Type St Inode Path
    const f = line.trim().split(/\s+/);
    if (f.length < 8 || f[7] !== path) continue;
    const flags = Number.parseInt(f[3] ?? "", 16);
    if (Number.isFinite(flags) && (flags & SO_ACCEPTCON) !== 0) return f[6] ?? null;
  }
  return null;
}

/** Whether process `pid` holds the socket inode open (it is the one listening there). */
function holdsSocket(pid: number, inode: string): boolean {
  const want = `socket:[${inode}]`;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === want) return true;
    } catch {
      // An fd closed meanwhile.
    }
  }
  return false;
}

/** The socket path to connect to when the kernel confirms `pid` serves it, else null. */
export function verifiedPeerPath(address: string, pid: number): string | null {
  const path = unixPathOf(address);
  if (path === null) return null;
  try {
    const st = lstatSync(path);
    if (!st.isSocket() || st.uid !== process.getuid?.()) return null;
  } catch {
    return null;
  }
  const inode = listeningInode(path);
  if (inode === null || !holdsSocket(pid, inode)) return null;
  return path;
}

interface Waiter {
  resolve: (r: PeerReply) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/** A call the peer did not answer within its timeout. */
export class PeerTimeout extends Error {}

export class PeerLink {
  private readonly conn: ReturnType<typeof createConnection>;
  private readonly waiters = new Map<number, Waiter>();
  private serial = 1;
  private closedFlag = false;
  private corked = false;
  private readonly onClose: () => void;

  private constructor(conn: ReturnType<typeof createConnection>, onClose: () => void) {
    this.conn = conn;
    this.onClose = onClose;
    conn.on("message", (msg: dbus.Message) => this.receive(msg));
    conn.on("error", () => this.close());
    conn.on("end", () => this.close());
  }

  /** Connects and authenticates; rejects when the peer does not complete the handshake in `ms`. */
  static open(path: string, ms: number, onClose: () => void): Promise<PeerLink> {
    return new Promise((resolve, reject) => {
      let conn: ReturnType<typeof createConnection>;
      try {
        conn = createConnection({ busAddress: `unix:path=${path}` });
      } catch (e) {
        reject(e instanceof Error ? e : new Error("peer connection failed"));
        return;
      }
      let done = false;
      const timer = setTimeout(() => fail(new Error("peer handshake timed out")), ms);
      const fail = (e: Error) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        try {
          conn.end();
        } catch {
          // Already closed.
        }
        reject(e);
      };
      conn.once("error", (e: unknown) => fail(e instanceof Error ? e : new Error("peer failed")));
      conn.once("connect", () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(new PeerLink(conn, onClose));
      });
    });
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** One method call; a reply later than `ms` is dropped and the call rejects with PeerTimeout. */
  call(
    path: string,
    iface: string,
    member: string,
    signature: string | undefined,
    body: unknown[] | undefined,
    ms: number,
  ): Promise<PeerReply> {
    if (this.closedFlag) return Promise.reject(new Error("peer closed"));
    const serial = this.serial++;
    const msg = new dbus.Message({ path, interface: iface, member, signature, body: body ?? [] });
    msg.serial = serial;
    return new Promise<PeerReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(serial);
        reject(new PeerTimeout());
      }, ms);
      this.waiters.set(serial, { resolve, reject, timer });
      try {
        this.batch();
        this.conn.message(msg);
      } catch {
        this.close();
      }
    });
  }

  /** The calls of one tick leave in one write (a walk issues a window of them at once). */
  private batch(): void {
    const stream = this.conn.stream;
    if (this.corked || typeof stream?.cork !== "function") return;
    this.corked = true;
    stream.cork();
    process.nextTick(() => {
      this.corked = false;
      stream.uncork?.();
    });
  }

  private receive(msg: dbus.Message): void {
    const serial = Number(msg.replySerial);
    const w = this.waiters.get(serial);
    if (w === undefined) return;
    this.waiters.delete(serial);
    clearTimeout(w.timer);
    if (msg.type === dbus.MessageType.ERROR) w.resolve({ ok: false, errorName: msg.errorName ?? "" });
    else w.resolve({ ok: true, body: msg.body ?? [] });
  }

  close(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    for (const w of this.waiters.values()) {
      clearTimeout(w.timer);
      w.reject(new Error("peer closed"));
    }
    this.waiters.clear();
    try {
      this.conn.end();
    } catch {
      // Already closed.
    }
    this.onClose();
  }
}
