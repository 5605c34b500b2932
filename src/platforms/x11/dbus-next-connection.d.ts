// dbus-next's bare connection (authentication and message framing, no Hello): used for
// peer-to-peer links, where there is no bus daemon to say Hello to.
declare module "dbus-next/lib/connection.js" {
  import type { EventEmitter } from "node:events";
  import type { Message } from "dbus-next";

  interface BareConnection extends EventEmitter {
    message(msg: Message): void;
    end(): void;
    /** The socket; messages are written to it one by one. */
    stream: { cork?: () => void; uncork?: () => void };
  }
  export default function createConnection(opts: { busAddress: string }): BareConnection;
}
