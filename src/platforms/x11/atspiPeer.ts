import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { createConnection, type Socket } from "node:net";
import dbus from "dbus-next";
import clientHandshake from "dbus-next/lib/handshake.js";
import { messageToJsFmt } from "dbus-next/lib/marshall-compat.js";
import type { RawMessage } from "dbus-next/lib/message.js";
import { peerCred, socketFd } from "../../os/linux/peerCred.js";
import { encodeMethodCall, MessageReader } from "./atspiWire.js";

/**
 * A peer-to-peer D-Bus link to one application's own AT-SPI server (the address it answers to
 * org.a11y.atspi.Application.GetApplicationBusAddress), as libatspi/pyatspi use it: calls skip
 * the bus daemon's two extra hops. dbus-next's MessageBus always sends Hello, which a peer does
 * not answer, so this speaks method calls itself over a unix socket: dbus-next's handshake and
 * message reader, calls written by atspiWire.ts, replies matched by serial.
 *
 * The address comes from the target application, so it is trusted only as far as the kernel
 * confirms it: a plain `unix:path=` (never tcp, abstract or unixexec — dbus-next's own
 * connection would spawn the program named by a unixexec address), a socket we own, whose listening inode is held open by
 * the application's own process (/proc/net/unix + /proc/PID/fd), and, once connected, a listener
 * the kernel names as that process (SO_PEERCRED). Anything else: the caller uses the bus.
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

/**
 * The inode of the one listening unix socket bound at `path`, from the kernel's table; null
 * when there is none, or more than one. The table names a socket by the path it was bound to,
 * and keeps that name when the file is renamed or removed: two listeners under one path mean
 * the file was moved and another socket bound there, and a connect reaches only the newer.
 */
function listeningInode(path: string): string | null {
  let table: string;
  try {
    table = readFileSync("/proc/net/unix", "latin1");
  } catch {
    return null;
  }
  let found: string | null = null;
  for (const line of table.split("\n")) {
    // Num RefCount Protocol Flags Type St Inode Path
    const f = line.trim().split(/\s+/);
    if (f.length < 8 || f[7] !== path) continue;
    const flags = Number.parseInt(f[3] ?? "", 16);
    if (!Number.isFinite(flags) || (flags & SO_ACCEPTCON) === 0) continue;
    if (found !== null) return null;
    found = f[6] ?? null;
  }
  return found;
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
  /** performance.now() after which the call fails with PeerTimeout. */
  due: number;
}

/** A call the peer did not answer within its timeout. */
export class PeerTimeout extends Error {}

/** Reply signatures whose raw body differs from dbus-next's JS form (variants, dictionaries). */
const NEEDS_JS_FORM = /[v{]/;

export class PeerLink {
  private readonly stream: Socket;
  private readonly waiters = new Map<number, Waiter>();
  /**
   * One timer for all calls in flight, due at the earliest call's deadline: a walk makes
   * hundreds of calls, and a timer each was a Timeout object, a closure and two list
   * operations per call for a deadline that almost never comes.
   */
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweepAt = Number.POSITIVE_INFINITY;
  private serial = 1;
  private closedFlag = false;
  private readonly outbox: Buffer[] = [];
  private readonly onClose: () => void;

  private constructor(stream: Socket, onClose: () => void) {
    this.stream = stream;
    this.onClose = onClose;
    stream.on("error", () => this.close());
    stream.on("end", () => this.close());
    stream.on("close", () => this.close());
    // Framed and read by atspiWire's reader (dbus-next's body reader, without its per-message
    // Message object, a validation of every name and a copy of every body into another form).
    // Malformed input from the application closes the link.
    const reader = new MessageReader((msg) => this.receive(msg));
    stream.on("data", (chunk: Buffer) => {
      if (this.closedFlag) return;
      try {
        reader.push(chunk);
      } catch {
        this.close();
      }
    });
  }

  /**
   * Connects and authenticates; rejects when the peer does not complete the handshake in `ms`,
   * or when the kernel says the socket's listener is not process `pid` (SO_PEERCRED, read before
   * a byte is written: the path was checked before the connect, and could have been swapped since).
   */
  static open(path: string, pid: number, ms: number, onClose: () => void): Promise<PeerLink> {
    return new Promise((resolve, reject) => {
      let done = false;
      const stream = createConnection({ path });
      const timer = setTimeout(() => fail(new Error("peer handshake timed out")), ms);
      const fail = (e: Error) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        stream.destroy();
        reject(e);
      };
      stream.once("error", (e: unknown) => fail(e instanceof Error ? e : new Error("peer failed")));
      stream.once("close", () => fail(new Error("peer closed")));
      stream.once("connect", () => {
        if (peerCred(socketFd(stream))?.pid !== pid) {
          fail(new Error("peer is another process"));
          return;
        }
        clientHandshake(stream, {}, (error) => {
          if (done) return;
          if (error) {
            fail(new Error("peer refused the handshake"));
            return;
          }
          done = true;
          clearTimeout(timer);
          stream.removeAllListeners("error");
          stream.removeAllListeners("close");
          resolve(new PeerLink(stream, onClose));
        });
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
    const serial = this.serial;
    this.serial = this.serial >= 0xffffffff ? 1 : this.serial + 1;
    let bytes: Buffer;
    try {
      bytes = encodeMethodCall({ serial, path, iface, member, signature: signature ?? "", body: body ?? [] });
    } catch {
      // A path the application handed us that is no object path: no such object.
      return Promise.resolve({ ok: false, errorName: "org.freedesktop.DBus.Error.UnknownObject" });
    }
    return new Promise<PeerReply>((resolve, reject) => {
      const due = performance.now() + ms;
      this.waiters.set(serial, { resolve, reject, due });
      if (due < this.sweepAt) this.armSweep(due);
      this.outbox.push(bytes);
      if (this.outbox.length === 1) process.nextTick(this.flush);
    });
  }

  private armSweep(at: number): void {
    if (this.sweepTimer !== undefined) clearTimeout(this.sweepTimer);
    this.sweepAt = at;
    this.sweepTimer = setTimeout(this.sweep, Math.max(0, at - performance.now()));
  }

  /** Fails the calls past their deadline and waits for the next one due. */
  private readonly sweep = (): void => {
    this.sweepTimer = undefined;
    this.sweepAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    for (const [serial, w] of this.waiters) {
      if (w.due <= now) {
        this.waiters.delete(serial);
        w.reject(new PeerTimeout());
      } else if (w.due < next) next = w.due;
    }
    if (next !== Number.POSITIVE_INFINITY && !this.closedFlag) this.armSweep(next);
  };

  /** The calls of one tick leave in one buffer and one write (a walk issues many at once). */
  private readonly flush = (): void => {
    const out = this.outbox.length === 1 ? (this.outbox[0] as Buffer) : Buffer.concat(this.outbox);
    this.outbox.length = 0;
    if (this.closedFlag) return;
    try {
      this.stream.write(out);
    } catch {
      this.close();
    }
  };

  private receive(msg: RawMessage): void {
    const serial = Number(msg.replySerial);
    const w = this.waiters.get(serial);
    if (w === undefined) return;
    this.waiters.delete(serial);
    if (msg.type === dbus.MessageType.ERROR) {
      w.resolve({ ok: false, errorName: typeof msg.errorName === "string" ? msg.errorName : "" });
      return;
    }
    if (msg.signature !== undefined && NEEDS_JS_FORM.test(msg.signature)) {
      try {
        messageToJsFmt(msg);
      } catch {
        w.resolve({ ok: false, errorName: "" });
        return;
      }
    }
    w.resolve({ ok: true, body: msg.body ?? [] });
  }

  close(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    if (this.sweepTimer !== undefined) clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
    for (const w of this.waiters.values()) w.reject(new Error("peer closed"));
    this.waiters.clear();
    this.stream.destroy();
    this.onClose();
  }
}
