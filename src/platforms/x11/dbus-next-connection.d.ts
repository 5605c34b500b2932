// dbus-next's internal pieces used for peer-to-peer links (atspiPeer.ts, atspiWire.ts), where
// there is no bus daemon to say Hello to: the client handshake, its body reader and signature
// parser, and the converters between its marshaller's form of a body and the JS form its
// MessageBus hands out.
declare module "dbus-next/lib/handshake.js" {
  import type { Duplex } from "node:stream";

  export default function clientHandshake(
    stream: Duplex,
    opts: Record<string, unknown>,
    cb: (error: unknown, guid?: string) => void,
  ): void;
}

declare module "dbus-next/lib/message.js" {
  import type { Readable } from "node:stream";

  /** One message as read off the wire: header fields by name, the body in marshaller form. */
  export interface RawMessage {
    serial: number;
    type: number;
    flags: number;
    path?: string;
    interface?: string;
    member?: string;
    replySerial?: number;
    errorName?: string;
    signature?: string;
    body?: unknown[];
  }
  /** One whole message's bytes → the message (what the stream reader hands out). */
  export function unmarshall(buf: Buffer): RawMessage;
  export function unmarshalMessages(
    stream: Readable,
    onMessage: (msg: RawMessage) => void,
    opts: Record<string, unknown>,
  ): void;
}

declare module "dbus-next/lib/marshall-compat.js" {
  import type { Message } from "dbus-next";
  import type { RawMessage } from "dbus-next/lib/message.js";

  /** The body converted in place to the JS form (Variant objects, dictionaries as objects). */
  export function messageToJsFmt(msg: RawMessage): RawMessage;
  /** A message's bytes and the file descriptors it carries. */
  export function marshallMessage(msg: Message): [Buffer, number[]];
}

declare module "dbus-next/lib/signature.js" {
  export interface SignatureTree {
    type: string;
    child: SignatureTree[];
  }
  export function parseSignature(signature: string): SignatureTree[];
}

declare module "dbus-next/lib/dbus-buffer.js" {
  import type { SignatureTree } from "dbus-next/lib/signature.js";

  /** dbus-next's body reader over one buffer (alignment relative to its start + startPos). */
  export default class DBusBuffer {
    constructor(
      buffer: Buffer,
      startPos: number,
      endian: number,
      fds: undefined,
      options: { ayBuffer: boolean },
    );
    readStruct(tree: SignatureTree[]): unknown[];
  }
}
