import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { parentPort } from "node:worker_threads";
import dbus from "dbus-next";
import { withTimeout } from "../shared/timeout.js";

/**
 * doctor's probes that load modules the supervisor thread must not (native addons) or that can
 * hang (a D-Bus connect to a dead address), run in this worker thread; doctor terminates it
 * after its deadline. Results are codes and booleans only: never a bus address or raw error text.
 */

export interface ModuleProbe {
  name: string;
  ok: boolean;
  version: string | null;
  /** An error code (ERR_DLOPEN_FAILED, MODULE_NOT_FOUND, …), never the message. */
  code: string | null;
}

export interface BusProbe {
  /** "env" = DBUS_SESSION_BUS_ADDRESS, "none" = unset (dbus-next then tries its fallbacks). */
  address_source: "env" | "none";
  session_bus: boolean;
  session_error: string | null;
  atspi_bus: boolean;
  atspi_error: string | null;
  /** org.a11y.Status IsEnabled: whether apps are told to expose accessibility. */
  atspi_enabled: boolean | null;
}

export interface ProbeResult {
  modules: ModuleProbe[];
  bus: BusProbe | null;
}

export interface ProbeRequest {
  modules: string[];
  bus: boolean;
  callTimeoutMs: number;
}

function errorCode(e: unknown): string {
  if (e instanceof dbus.DBusError) return e.type;
  if (e && typeof e === "object" && "code" in e && typeof e.code === "string") return e.code;
  return e instanceof Error ? e.name : "error";
}

async function probeModule(name: string): Promise<ModuleProbe> {
  const require = createRequire(import.meta.url);
  try {
    await import(name);
    return { name, ok: true, version: packageVersion(require.resolve(name), name), code: null };
  } catch (e) {
    return { name, ok: false, version: null, code: errorCode(e) };
  }
}

/** The version in the package.json above an entry point (an exports map may hide package.json). */
function packageVersion(entry: string, name: string): string | null {
  for (let dir = dirname(entry); dirname(dir) !== dir; dir = dirname(dir)) {
    const p = join(dir, "package.json");
    if (!existsSync(p)) continue;
    try {
      const pkg = JSON.parse(readFileSync(p, "utf8")) as { name?: string; version?: string };
      if (pkg.name === name) return pkg.version ?? null;
    } catch {
      return null;
    }
  }
  return null;
}

const timedOut = () => Object.assign(new Error("timeout"), { code: "ETIMEDOUT" });

/** A bus whose connection errors reject the first call instead of being thrown as events. */
function openBus(open: () => dbus.MessageBus): { bus: dbus.MessageBus; failed: Promise<never> } {
  const bus = open();
  const failed = new Promise<never>((_, reject) => {
    bus.on("error", reject);
  });
  failed.catch(() => undefined);
  return { bus, failed };
}

async function call(
  bus: { bus: dbus.MessageBus; failed: Promise<never> },
  msg: ConstructorParameters<typeof dbus.Message>[0],
  ms: number,
): Promise<unknown[]> {
  const reply = await withTimeout(
    Promise.race([bus.bus.call(new dbus.Message(msg)), bus.failed]),
    ms,
    timedOut,
  );
  return reply?.body ?? [];
}

/** The bus daemon's own GetId: answers iff the connection works. */
function ping(bus: ReturnType<typeof openBus>, ms: number): Promise<unknown[]> {
  return call(
    bus,
    {
      destination: "org.freedesktop.DBus",
      path: "/org/freedesktop/DBus",
      interface: "org.freedesktop.DBus",
      member: "GetId",
    },
    ms,
  );
}

async function probeBus(ms: number): Promise<BusProbe> {
  const out: BusProbe = {
    address_source: process.env.DBUS_SESSION_BUS_ADDRESS?.trim() ? "env" : "none",
    session_bus: false,
    session_error: null,
    atspi_bus: false,
    atspi_error: null,
    atspi_enabled: null,
  };
  let session: ReturnType<typeof openBus> | null = null;
  let a11y: ReturnType<typeof openBus> | null = null;
  try {
    try {
      session = openBus(() => dbus.sessionBus());
      await ping(session, ms);
      out.session_bus = true;
    } catch (e) {
      out.session_error = errorCode(e);
      return out;
    }
    let address: string;
    try {
      const body = await call(
        session,
        {
          destination: "org.a11y.Bus",
          path: "/org/a11y/bus",
          interface: "org.a11y.Bus",
          member: "GetAddress",
        },
        ms,
      );
      address = String(body[0] ?? "");
      const enabled = await call(
        session,
        {
          destination: "org.a11y.Bus",
          path: "/org/a11y/bus",
          interface: "org.freedesktop.DBus.Properties",
          member: "Get",
          signature: "ss",
          body: ["org.a11y.Status", "IsEnabled"],
        },
        ms,
      ).catch(() => null);
      const v = enabled?.[0];
      const value = v instanceof dbus.Variant ? v.value : v;
      out.atspi_enabled = typeof value === "boolean" ? value : null;
    } catch (e) {
      out.atspi_error = errorCode(e);
      return out;
    }
    try {
      a11y = openBus(() => dbus.sessionBus({ busAddress: address }));
      await ping(a11y, ms);
      out.atspi_bus = true;
    } catch (e) {
      out.atspi_error = errorCode(e);
    }
    return out;
  } finally {
    for (const b of [a11y, session]) {
      try {
        b?.bus.disconnect();
      } catch {
        // Never connected.
      }
    }
  }
}

async function main(req: ProbeRequest): Promise<ProbeResult> {
  const modules: ModuleProbe[] = [];
  for (const m of req.modules) modules.push(await probeModule(m));
  return { modules, bus: req.bus ? await probeBus(req.callTimeoutMs) : null };
}

parentPort?.once("message", (req: ProbeRequest) => {
  main(req).then(
    (r) => parentPort?.postMessage(r),
    () => parentPort?.postMessage({ modules: [], bus: null } satisfies ProbeResult),
  );
});
