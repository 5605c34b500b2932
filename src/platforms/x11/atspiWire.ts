import dbus from "dbus-next";
import DBusBuffer from "dbus-next/lib/dbus-buffer.js";
import { marshallMessage } from "dbus-next/lib/marshall-compat.js";
import type { RawMessage } from "dbus-next/lib/message.js";
import { parseSignature, type SignatureTree } from "dbus-next/lib/signature.js";

/**
 * The wire of a peer link, where a walk sends and reads hundreds of small messages.
 *
 * Writing: the bytes of one method call, written directly for the shapes a walk sends (no
 * argument, or a few u / i / s arguments). dbus-next builds every message through its general
 * signature-driven marshaller (a parse of the header signature, a put stream per array, several
 * copies): about 50–60 µs a call, which for a walk of 260 nodes and ~550 calls was most of the
 * walk's own CPU. The header here is what dbus-next writes for the same message (same fields in
 * the same order, little endian; test/a11y/atspi-wire.test.ts compares the bytes), and any other
 * signature is marshalled by dbus-next itself.
 *
 * Reading: messages framed from the socket's chunks, the header fields read directly (only the
 * four kinds a reply carries), and the body read by dbus-next's own reader (DBusBuffer) with its
 * parsed signature kept per signature: dbus-next's stream reader re-parses the signature of every
 * header field and copies each message out of the stream's buffer list.
 */

/** D-Bus object path grammar: "/" or "/" + elements of [A-Za-z0-9_] joined by "/". */
const OBJECT_PATH = /^\/(?:[A-Za-z0-9_]+(?:\/[A-Za-z0-9_]+)*)?$/;
/** Interface and member names of our own calls (constants, checked all the same). */
const NAME = /^[A-Za-z_][A-Za-z0-9_.]{0,254}$/;

const METHOD_CALL = 1;
const FIELD_PATH = 1;
const FIELD_INTERFACE = 2;
const FIELD_MEMBER = 3;
const FIELD_SIGNATURE = 8;

/** Signatures written here; anything else goes through dbus-next. */
const DIRECT = new Set(["", "u", "i", "s", "ss"]);

export function isObjectPath(path: string): boolean {
  return path.length <= 4096 && OBJECT_PATH.test(path);
}

const pad8 = (n: number): number => (n + 7) & ~7;
const pad4 = (n: number): number => (n + 3) & ~3;

/** Size of one string-valued header field (code, variant signature, u32 length, bytes, NUL). */
function stringField(bytes: number): number {
  return 4 + 4 + bytes + 1;
}

/**
 * The message bytes, or throws for a path, name or body that is not valid for its type (the
 * caller treats that as an object that does not exist: the path came from the application).
 */
export interface MethodCall {
  serial: number;
  path: string;
  iface: string;
  member: string;
  /** "" for no arguments. */
  signature: string;
  body: readonly unknown[];
}

export function encodeMethodCall(call: MethodCall): Buffer {
  const { serial, path, iface, member, signature, body } = call;
  if (!isObjectPath(path)) throw new Error("invalid object path");
  if (!NAME.test(iface) || !NAME.test(member)) throw new Error("invalid name");
  if (!DIRECT.has(signature)) return viaDbusNext(call);
  const strings = checkedArguments(signature, body);

  const pathLen = Buffer.byteLength(path, "latin1");
  const ifaceLen = Buffer.byteLength(iface, "latin1");
  const memberLen = Buffer.byteLength(member, "latin1");
  // Header fields, each an 8-aligned struct (y v); the array's length excludes the padding after
  // its last element.
  let end = 16 + stringField(pathLen);
  end = pad8(end) + stringField(ifaceLen);
  end = pad8(end) + stringField(memberLen);
  if (signature !== "") end = pad8(end) + 4 + 1 + signature.length + 1;
  const fieldsLen = end - 16;
  const bodyStart = pad8(end);
  let bodyLen = 0;
  let si = 0;
  for (const t of signature) {
    bodyLen = pad4(bodyLen);
    bodyLen += t === "s" ? 4 + (strings[si++] as Buffer).length + 1 : 4;
  }

  const buf = Buffer.alloc(bodyStart + bodyLen);
  buf[0] = 0x6c; // 'l': little endian
  buf[1] = METHOD_CALL;
  buf[2] = 0; // flags: a reply is wanted
  buf[3] = 1; // protocol version
  buf.writeUInt32LE(bodyLen, 4);
  buf.writeUInt32LE(serial >>> 0, 8);
  buf.writeUInt32LE(fieldsLen, 12);
  let p = 16;
  const putString = (code: number, type: string, s: string, len: number): void => {
    p = pad8(p);
    buf[p] = code;
    buf[p + 1] = 1;
    buf[p + 2] = type.charCodeAt(0);
    buf[p + 3] = 0;
    buf.writeUInt32LE(len, p + 4);
    buf.write(s, p + 8, len, "latin1");
    p += 8 + len + 1; // the NUL is already 0
  };
  putString(FIELD_PATH, "o", path, pathLen);
  putString(FIELD_INTERFACE, "s", iface, ifaceLen);
  putString(FIELD_MEMBER, "s", member, memberLen);
  if (signature !== "") {
    p = pad8(p);
    buf[p] = FIELD_SIGNATURE;
    buf[p + 1] = 1;
    buf[p + 2] = 0x67; // 'g'
    buf[p + 3] = 0;
    buf[p + 4] = signature.length;
    buf.write(signature, p + 5, signature.length, "latin1");
  }
  writeBody(buf, bodyStart, signature, body, strings);
  return buf;
}

/** The arguments checked against the signature; the strings' UTF-8 bytes, in order. */
function checkedArguments(signature: string, body: readonly unknown[]): Buffer[] {
  if (body.length !== signature.length) throw new Error("body does not match signature");
  const strings: Buffer[] = [];
  for (let i = 0; i < signature.length; i += 1) {
    const v = body[i];
    if (signature[i] === "s") {
      if (typeof v !== "string" || v.includes("\u0000")) throw new Error("invalid string argument");
      strings.push(Buffer.from(v, "utf8"));
    } else if (typeof v !== "number" || !Number.isInteger(v)) {
      throw new Error("invalid integer argument");
    } else if (signature[i] === "u" ? v < 0 || v > 0xffffffff : v < -0x80000000 || v > 0x7fffffff) {
      throw new Error("integer argument out of range");
    }
  }
  return strings;
}

/** The body: each argument 4-aligned from the body's start, strings as length, bytes, NUL. */
function writeBody(
  buf: Buffer,
  bodyStart: number,
  signature: string,
  body: readonly unknown[],
  strings: readonly Buffer[],
): void {
  let p = bodyStart;
  let si = 0;
  for (let i = 0; i < signature.length; i += 1) {
    p = bodyStart + pad4(p - bodyStart);
    if (signature[i] === "s") {
      const s = strings[si++] as Buffer;
      buf.writeUInt32LE(s.length, p);
      s.copy(buf, p + 4);
      p += 4 + s.length + 1;
    } else {
      const v = body[i] as number;
      if (signature[i] === "u") buf.writeUInt32LE(v, p);
      else buf.writeInt32LE(v, p);
      p += 4;
    }
  }
}

function viaDbusNext(call: MethodCall): Buffer {
  const { path, iface, member, signature, body } = call;
  const msg = new dbus.Message({ path, interface: iface, member, signature, body: [...body] });
  msg.serial = call.serial;
  return marshallMessage(msg)[0];
}

/** D-Bus allows 128 MiB; an application's whole cache is a few MiB. More closes the link. */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
const FIELD_REPLY_SERIAL = 5;
const FIELD_ERROR_NAME = 4;
/** Parsed signatures kept (a walk's replies use fewer than ten). */
const MAX_SIGNATURES = 64;

/** Malformed input from the peer: the link closes. */
export class WireError extends Error {}

export class MessageReader {
  /** Bytes not yet framed, and how many are needed before framing is tried again. */
  private chunks: Buffer[] = [];
  private held = 0;
  private need = 16;
  private readonly trees = new Map<string, SignatureTree[]>();

  constructor(private readonly onMessage: (msg: RawMessage) => void) {}

  /** Feeds one chunk; every complete message so far is handed on. Throws WireError. */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.held += chunk.length;
    // A large reply arrives in many chunks: joined once, when it is all there.
    if (this.held < this.need) return;
    const buf = this.chunks.length === 1 ? chunk : Buffer.concat(this.chunks, this.held);
    this.chunks = [];
    this.held = 0;
    this.need = 16;
    let at = 0;
    while (buf.length - at >= 16) {
      const le = buf[at] === 0x6c;
      if (!le && buf[at] !== 0x42) throw new WireError("bad endianness");
      const bodyLen = le ? buf.readUInt32LE(at + 4) : buf.readUInt32BE(at + 4);
      const fieldsLen = le ? buf.readUInt32LE(at + 12) : buf.readUInt32BE(at + 12);
      const total = 16 + pad8(fieldsLen) + bodyLen;
      if (total > MAX_MESSAGE_BYTES) throw new WireError("message too large");
      if (buf.length - at < total) {
        this.need = total;
        break;
      }
      this.onMessage(this.parse(buf.subarray(at, at + total), le, fieldsLen, bodyLen));
      at += total;
    }
    if (at < buf.length) {
      // Copied, so a partial message does not keep the socket's whole chunk alive.
      const rest = Buffer.from(buf.subarray(at));
      this.chunks.push(rest);
      this.held = rest.length;
    }
  }

  private parse(m: Buffer, le: boolean, fieldsLen: number, bodyLen: number): RawMessage {
    const u32 = (o: number): number => (le ? m.readUInt32LE(o) : m.readUInt32BE(o));
    const msg: RawMessage = { type: m[1] ?? 0, flags: m[2] ?? 0, serial: u32(8) };
    const end = 16 + fieldsLen;
    let p = 16;
    while (p < end) {
      p = pad8(p);
      const code = m[p] ?? 0;
      const sigLen = m[p + 1] ?? 0;
      if (sigLen !== 1) throw new WireError("bad header field");
      const type = String.fromCharCode(m[p + 2] ?? 0);
      p += 4;
      let value: string | number;
      if (type === "s" || type === "o") {
        p = pad4(p);
        const len = u32(p);
        if (p + 4 + len >= m.length) throw new WireError("bad header string");
        value = m.toString("utf8", p + 4, p + 4 + len);
        p += 4 + len + 1;
      } else if (type === "g") {
        const len = m[p] ?? 0;
        value = m.toString("latin1", p + 1, p + 1 + len);
        p += 1 + len + 1;
      } else if (type === "u") {
        p = pad4(p);
        value = u32(p);
        p += 4;
      } else throw new WireError("bad header field type");
      if (p > end) throw new WireError("header field past the header");
      if (code === FIELD_REPLY_SERIAL && typeof value === "number") msg.replySerial = value;
      else if (code === FIELD_ERROR_NAME && typeof value === "string") msg.errorName = value;
      else if (code === FIELD_SIGNATURE && typeof value === "string") msg.signature = value;
    }
    const bodyStart = 16 + pad8(fieldsLen);
    if (bodyLen > 0 && msg.signature) {
      const reader = new DBusBuffer(m.subarray(bodyStart), 0, le ? 0x6c : 0x42, undefined, {
        ayBuffer: true,
      });
      try {
        msg.body = reader.readStruct(this.tree(msg.signature));
      } catch {
        throw new WireError("bad body");
      }
    } else msg.body = [];
    return msg;
  }

  private tree(signature: string): SignatureTree[] {
    let t = this.trees.get(signature);
    if (t === undefined) {
      t = parseSignature(signature);
      if (this.trees.size >= MAX_SIGNATURES) this.trees.clear();
      this.trees.set(signature, t);
    }
    return t;
  }
}
