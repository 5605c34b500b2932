import { rmSync } from "node:fs";
import { createServer, type Server, Socket } from "node:net";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import dbus from "dbus-next";
import { marshallMessage } from "dbus-next/lib/marshall-compat.js";
import { type RawMessage, unmarshall, unmarshalMessages } from "dbus-next/lib/message.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { PeerLink, PeerTimeout } from "../../src/platforms/x11/atspiPeer.js";
import { encodeMethodCall, MessageReader, WireError } from "../../src/platforms/x11/atspiWire.js";
import { scratchDir } from "../support/scratch.js";

/**
 * The peer link writes method calls itself (atspiWire.ts) and reads replies with dbus-next's
 * reader without its Message objects: the bytes must be dbus-next's, and the bodies handed back
 * the same JS form dbus-next's MessageBus gives.
 */

function dbusNextBytes(
  serial: number,
  path: string,
  iface: string,
  member: string,
  sig: string,
  body: unknown[],
) {
  const m = new dbus.Message({ path, interface: iface, member, signature: sig, body });
  m.serial = serial;
  return marshallMessage(m)[0];
}

describe("AT-SPI method call bytes", () => {
  it("equal dbus-next's for every signature written directly", () => {
    const cases: Array<[string, string, string, string, unknown[]]> = [
      ["/org/a11y/atspi/accessible/root", "org.a11y.atspi.Accessible", "GetChildren", "", []],
      ["/org/a11y/atspi/accessible/12345", "org.a11y.atspi.Component", "GetExtents", "u", [0]],
      ["/a", "org.a11y.atspi.Action", "DoAction", "i", [-3]],
      ["/", "org.a11y.atspi.EditableText", "SetTextContents", "s", ["héllo wörld ✓"]],
      [
        "/org/a11y/atspi/accessible/7",
        "org.freedesktop.DBus.Properties",
        "Get",
        "ss",
        ["org.a11y.atspi.Accessible", "Name"],
      ],
      ["/org/a11y/atspi/cache", "org.a11y.atspi.Cache", "GetItems", "", []],
      ["/x/y_z/0", "a.b", "M", "ss", ["", "abc"]],
      ["/org/a11y/atspi/accessible/9", "org.a11y.atspi.Component", "GetExtents", "u", [0xffffffff]],
    ];
    for (const [i, [path, iface, member, sig, body]] of cases.entries()) {
      const serial = 1 + i * 977;
      expect(
        encodeMethodCall({ serial, path, iface, member, signature: sig, body }),
        `${member}(${sig})`,
      ).toEqual(dbusNextBytes(serial, path, iface, member, sig, body));
    }
  });

  it("hands other signatures to dbus-next", () => {
    const body = ["org.a11y.atspi.Value", "CurrentValue", new dbus.Variant("d", 4.5)];
    expect(
      encodeMethodCall({
        serial: 9,
        path: "/a/b",
        iface: "org.freedesktop.DBus.Properties",
        member: "Set",
        signature: "ssv",
        body,
      }),
    ).toEqual(dbusNextBytes(9, "/a/b", "org.freedesktop.DBus.Properties", "Set", "ssv", body));
  });

  it("refuses a malformed path, name or argument instead of writing it", () => {
    const bad: Array<[string, string, string, unknown[]]> = [
      ["relative", "GetState", "", []],
      ["/trailing/", "GetState", "", []],
      ["/a//b", "GetState", "", []],
      ["/a-b", "GetState", "", []],
      ["/a\u0000b", "GetState", "", []],
      ["/a", "Get State", "", []],
      ["/a", "GetExtents", "u", [-1]],
      ["/a", "GetExtents", "u", [1.5]],
      ["/a", "DoAction", "i", [2 ** 31]],
      ["/a", "Get", "s", ["a\u0000b"]],
      ["/a", "Get", "ss", ["one"]],
    ];
    for (const [path, member, sig, body] of bad) {
      expect(
        () =>
          encodeMethodCall({
            serial: 1,
            path,
            iface: "org.a11y.atspi.Accessible",
            member,
            signature: sig,
            body,
          }),
        path + member,
      ).toThrow();
    }
  });
});

describe("AT-SPI reply reader", () => {
  const replies = [
    returnOf(7, "(iiii)", [[-5, 20, 300, 4000]]),
    returnOf(8, "a(so)", [[[":1.5", "/org/a11y/atspi/accessible/3"]]]),
    returnOf(9, "a(sss)", [[["click", "Press it", "<Alt>c"]]]),
    returnOf(10, "", []),
    returnOf(11, "a((so)(so)(so)iiassusau)", [
      [
        [
          [":1.5", "/p/1"],
          [":1.5", "/org/a11y/atspi/accessible/root"],
          [":1.5", "/p/0"],
          2,
          0,
          ["org.a11y.atspi.Accessible", "org.a11y.atspi.Component"],
          "Naïve ✓",
          43,
          "",
          [256, 0],
        ],
      ],
    ]),
    errorOf(12, "org.freedesktop.DBus.Error.UnknownMethod"),
  ];
  const wire = Buffer.concat(replies);

  it("frames and reads what dbus-next reads, however the bytes are split", () => {
    // dbus-next's whole-message reader (it cannot read a message without a body signature).
    const want = replies.map((r, i) => {
      if (i === 3) return { serial: 110, replySerial: 10, signature: undefined, body: [] };
      const m = unmarshall(r);
      return { serial: m.serial, replySerial: m.replySerial, signature: m.signature, body: m.body };
    });
    for (const step of [1, 3, 16, 100, wire.length]) {
      const got: RawMessage[] = [];
      const reader = new MessageReader((m) => got.push(m));
      for (let o = 0; o < wire.length; o += step) reader.push(wire.subarray(o, o + step));
      expect(
        got.map((m) => ({
          serial: m.serial,
          replySerial: m.replySerial,
          signature: m.signature,
          body: m.body,
        })),
        `chunks of ${step}`,
      ).toEqual(want);
      expect(got[5]?.type).toBe(dbus.MessageType.ERROR);
      expect(got[5]?.errorName).toBe("org.freedesktop.DBus.Error.UnknownMethod");
    }
  });

  it("refuses what is no D-Bus message", () => {
    const bad = (mutate: (b: Buffer) => void, which = 0) => {
      const b = Buffer.from(replies[which]!);
      mutate(b);
      return () => new MessageReader(() => {}).push(b);
    };
    expect(bad((b) => (b[0] = 0x41))).toThrow(WireError); // no endianness mark
    expect(bad((b) => b.writeUInt32LE(0x7fffffff, 4))).toThrow(WireError); // body of 2 GiB
    expect(bad((b) => (b[17] = 3))).toThrow(WireError); // header field with a 3-type signature
    expect(bad((b) => b.writeUInt32LE(0xfff0, 20), 5)).toThrow(WireError); // error name past the header
    // An array (a(so)) claiming more bytes than its message holds.
    expect(bad((b) => b.writeUInt32LE(0x7fff, 16 + ((b.readUInt32LE(12) + 7) & ~7)), 1)).toThrow(WireError);
  });
});

function returnOf(replySerial: number, signature: string, body: unknown[]): Buffer {
  const m = new dbus.Message({
    type: dbus.MessageType.METHOD_RETURN,
    replySerial: replySerial as unknown as string,
    signature,
    body,
  });
  m.serial = 100 + replySerial;
  return marshallMessage(m)[0];
}

function errorOf(replySerial: number, name: string): Buffer {
  const m = new dbus.Message({
    type: dbus.MessageType.ERROR,
    replySerial: replySerial as unknown as string,
    errorName: name,
    signature: "s",
    body: ["gone"],
  });
  m.serial = 100 + replySerial;
  return marshallMessage(m)[0];
}

/** A fake application server: the server half of the handshake, then dbus-next's reader. */
class FakePeer {
  readonly server: Server;
  readonly dir = scratchDir("peer");
  readonly path = join(this.dir, "socket");
  readonly calls: RawMessage[] = [];
  socket: Socket | null = null;

  constructor(private readonly answer: (m: RawMessage, sock: Socket) => void) {
    this.server = createServer((sock) => {
      this.socket = sock;
      let pre = Buffer.alloc(0);
      let begun = false;
      const messages = new PassThrough();
      unmarshalMessages(
        messages,
        (m) => {
          this.calls.push(m);
          this.answer(m, sock);
        },
        {},
      );
      let okSent = false;
      sock.on("data", (chunk: Buffer) => {
        if (begun) {
          messages.write(chunk);
          return;
        }
        pre = Buffer.concat([pre, chunk]);
        if (!okSent && pre.includes("AUTH ") && pre.includes("\r\n")) {
          okSent = true;
          sock.write("OK 0123456789abcdef0123456789abcdef\r\n");
        }
        const at = pre.indexOf("BEGIN\r\n");
        if (at >= 0) {
          begun = true;
          const rest = pre.subarray(at + 7);
          if (rest.length > 0) messages.write(rest);
        }
      });
      sock.on("error", () => {});
    });
  }

  listen(): Promise<void> {
    return new Promise((resolve) => this.server.listen(this.path, resolve));
  }

  close(): void {
    this.socket?.destroy();
    this.server.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function reply(to: RawMessage, signature: string, body: unknown[]): Buffer {
  const m = new dbus.Message({
    type: dbus.MessageType.METHOD_RETURN,
    // dbus-next types it as a string; its marshaller writes a u32 and needs the number.
    replySerial: to.serial as unknown as string,
    signature,
    body,
  });
  m.serial = 1000 + to.serial;
  return marshallMessage(m)[0];
}

function errorReply(to: RawMessage, name: string): Buffer {
  const m = new dbus.Message({
    type: dbus.MessageType.ERROR,
    // dbus-next types it as a string; its marshaller writes a u32 and needs the number.
    replySerial: to.serial as unknown as string,
    errorName: name,
    signature: "s",
    body: ["gone"],
  });
  m.serial = 2000 + to.serial;
  return marshallMessage(m)[0];
}

describe("AT-SPI peer link", () => {
  let peer: FakePeer | null = null;
  afterEach(() => {
    peer?.close();
    peer = null;
  });

  it("answers in dbus-next's JS form, errors by name, many calls in one write", async () => {
    peer = new FakePeer((m, sock) => {
      if (m.member === "GetChildren")
        sock.write(
          reply(m, "a(so)", [
            [
              [":1.5", "/org/a11y/atspi/accessible/3"],
              [":1.5", "/org/a11y/atspi/accessible/4"],
            ],
          ]),
        );
      else if (m.member === "GetExtents") sock.write(reply(m, "(iiii)", [[10, 20, 30, 40]]));
      else if (m.member === "Get") sock.write(reply(m, "v", [new dbus.Variant("s", "OK button")]));
      else if (m.member === "GetState") sock.write(reply(m, "au", [[1 << 8, 3]]));
      else sock.write(errorReply(m, "org.freedesktop.DBus.Error.UnknownObject"));
    });
    await peer.listen();
    let closed = 0;
    const link = await PeerLink.open(peer.path, process.pid, 3000, () => {
      closed += 1;
    });
    const writes = vi.spyOn(Socket.prototype, "write");
    const all = Promise.all([
      link.call(
        "/org/a11y/atspi/accessible/2",
        "org.a11y.atspi.Accessible",
        "GetChildren",
        undefined,
        undefined,
        3000,
      ),
      link.call("/org/a11y/atspi/accessible/2", "org.a11y.atspi.Component", "GetExtents", "u", [0], 3000),
      link.call(
        "/org/a11y/atspi/accessible/2",
        "org.freedesktop.DBus.Properties",
        "Get",
        "ss",
        ["org.a11y.atspi.Accessible", "Name"],
        3000,
      ),
      link.call(
        "/org/a11y/atspi/accessible/2",
        "org.a11y.atspi.Accessible",
        "GetState",
        undefined,
        undefined,
        3000,
      ),
      link.call(
        "/org/a11y/atspi/accessible/2",
        "org.a11y.atspi.Accessible",
        "GetRoleName",
        undefined,
        undefined,
        3000,
      ),
    ]);
    // The five calls of one tick leave in one write (before any reply can arrive).
    await new Promise((r) => setImmediate(r));
    expect(writes).toHaveBeenCalledTimes(1);
    writes.mockRestore();
    const [kids, ext, name, states, gone] = await all;
    expect(kids).toEqual({
      ok: true,
      body: [
        [
          [":1.5", "/org/a11y/atspi/accessible/3"],
          [":1.5", "/org/a11y/atspi/accessible/4"],
        ],
      ],
    });
    expect(ext).toEqual({ ok: true, body: [[10, 20, 30, 40]] });
    expect(name.ok && name.body[0] instanceof dbus.Variant && name.body[0].value).toBe("OK button");
    expect(states).toEqual({ ok: true, body: [[256, 3]] });
    expect(gone).toEqual({ ok: false, errorName: "org.freedesktop.DBus.Error.UnknownObject" });
    expect(peer.calls.map((c) => c.member)).toEqual([
      "GetChildren",
      "GetExtents",
      "Get",
      "GetState",
      "GetRoleName",
    ]);
    expect(peer.calls[2]?.body).toEqual(["org.a11y.atspi.Accessible", "Name"]);
    // A path that is no object path is answered as a missing object, without a write.
    expect(
      await link.call("/bad path", "org.a11y.atspi.Accessible", "GetState", undefined, undefined, 3000),
    ).toEqual({
      ok: false,
      errorName: "org.freedesktop.DBus.Error.UnknownObject",
    });
    expect(peer.calls).toHaveLength(5);
    link.close();
    expect(closed).toBe(1);
    expect(link.closed).toBe(true);
  });

  it("times out a call the peer never answers", async () => {
    peer = new FakePeer(() => {});
    await peer.listen();
    const link = await PeerLink.open(peer.path, process.pid, 3000, () => {});
    await expect(
      link.call("/a", "org.a11y.atspi.Accessible", "GetState", undefined, undefined, 150),
    ).rejects.toBeInstanceOf(PeerTimeout);
    link.close();
  });

  it("times out each call at its own deadline, whatever the order they were made in", async () => {
    peer = new FakePeer((m, sock) => {
      if (m.member === "GetExtents") sock.write(reply(m, "(iiii)", [[1, 2, 3, 4]]));
    });
    await peer.listen();
    const link = await PeerLink.open(peer.path, process.pid, 3000, () => {});
    const settled: string[] = [];
    const track = (name: string, p: Promise<unknown>) =>
      p.then(
        () => settled.push(`${name} ok`),
        (e: unknown) => settled.push(`${name} ${e instanceof PeerTimeout ? "timeout" : "error"}`),
      );
    const long = track(
      "long",
      link.call("/a", "org.a11y.atspi.Accessible", "GetState", undefined, undefined, 600),
    );
    const short = track(
      "short",
      link.call("/b", "org.a11y.atspi.Accessible", "GetState", undefined, undefined, 80),
    );
    const answered = track(
      "answered",
      link.call("/c", "org.a11y.atspi.Component", "GetExtents", "u", [0], 80),
    );
    await Promise.all([short, answered]);
    expect(settled.sort()).toEqual(["answered ok", "short timeout"]);
    await long;
    expect(settled).toContain("long timeout");
    // A call after the others timed out still gets its own deadline.
    await expect(
      link.call("/d", "org.a11y.atspi.Accessible", "GetState", undefined, undefined, 50),
    ).rejects.toBeInstanceOf(PeerTimeout);
    link.close();
  });

  it("closes (never throws) when the application writes a malformed message", async () => {
    peer = new FakePeer((m, sock) => {
      const good = reply(m, "(iiii)", [[1, 2, 3, 4]]);
      // The body claims a signature its bytes cannot hold: an array far longer than the message.
      const bad = reply(m, "as", [["x"]]);
      bad.writeUInt32LE(0x7fffffff, bad.length - 10);
      sock.write(m.member === "GetExtents" ? good : bad);
    });
    await peer.listen();
    let closed = 0;
    const link = await PeerLink.open(peer.path, process.pid, 3000, () => {
      closed += 1;
    });
    expect(await link.call("/a", "org.a11y.atspi.Component", "GetExtents", "u", [0], 3000)).toEqual({
      ok: true,
      body: [[1, 2, 3, 4]],
    });
    const pending = link.call("/a", "org.a11y.atspi.Accessible", "GetInterfaces", undefined, undefined, 3000);
    await expect(pending).rejects.toThrow("peer closed");
    expect(closed).toBe(1);
    await expect(
      link.call("/a", "org.a11y.atspi.Accessible", "GetState", undefined, undefined, 3000),
    ).rejects.toThrow("peer closed");
  });

  it("refuses a server that never completes the handshake", async () => {
    const dir = scratchDir("peer");
    const silent = createServer(() => {});
    await new Promise<void>((r) => silent.listen(join(dir, "s"), r));
    try {
      await expect(PeerLink.open(join(dir, "s"), process.pid, 200, () => {})).rejects.toThrow();
    } finally {
      silent.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a listener the kernel names as another process, before writing a byte to it", async () => {
    const dir = scratchDir("peer");
    let received = 0;
    let accepted = 0;
    const impostor = createServer((sock) => {
      accepted += 1;
      sock.on("data", (d: Buffer) => {
        received += d.length;
      });
    });
    await new Promise<void>((r) => impostor.listen(join(dir, "s"), r));
    try {
      // The listener is this process; the link is asked for its parent's.
      await expect(PeerLink.open(join(dir, "s"), process.ppid, 3000, () => {})).rejects.toThrow(
        "peer is another process",
      );
      await new Promise((r) => setTimeout(r, 100));
      expect(accepted).toBe(1);
      expect(received).toBe(0);
    } finally {
      impostor.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
