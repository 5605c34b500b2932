import { type ChildProcess, spawnSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";
import {
  A11yReader,
  answerPicker,
  SESSION_HOOK_MS,
  startApp,
  startSession,
  stopApps,
  WAYLAND_AVAILABLE,
  WAYLAND_REQUIRED,
  type WaylandSession,
  waitFor,
} from "./support.js";

/**
 * The built server over stdio on headless GNOME (Wayland, no X server): the platform is chosen
 * from WAYLAND_DISPLAY alone; windows are listed; consent passes our dialog (zenity's box, on the
 * accessibility bus only under the unsafe test setting, answered here there) and the portal's
 * picker (answered through AT-SPI as any program could; test/wayland/consent.test.ts); trees
 * and semantic actions work, the shared window's screenshot comes from its stream, keys are
 * refused. Effects are read back
 * through the test's own AT-SPI connection.
 */

const ST_CHECKED = 4;
const runs = WAYLAND_AVAILABLE && (WAYLAND_REQUIRED || existsSync(CLI));

interface Listed {
  hwnd: string;
  title: string;
  pid: number;
}
interface Element {
  ref: string;
  role: string;
  name: string | null;
  patterns: string[];
  states?: string[];
}

describe.skipIf(!runs)("wayland end to end (built CLI over stdio)", () => {
  let session: WaylandSession;
  let reader: A11yReader;
  const apps: ChildProcess[] = [];
  let factory: ChildProcess;
  let exe: string;
  const servers: McpHarness[] = [];

  const start = async (extra: Record<string, string> = {}) => {
    const h = await McpHarness.start({
      ...LOOSE_BUDGETS,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "*",
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: exe,
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe,inspect,interact,click,key,text",
      DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: "true",
      ...extra,
    });
    servers.push(h);
    return h;
  };

  async function factoryWindow(h: McpHarness): Promise<Listed> {
    return waitFor("the factory in list_windows", async () => {
      const r = await h.ok("list_windows");
      return ((r.windows as Listed[]) ?? []).find((w) => w.pid === factory.pid) ?? null;
    });
  }

  beforeAll(async () => {
    session = await startSession();
    factory = startApp("gtk3-widget-factory", [], apps);
    exe = realpathSync("/usr/bin/gtk3-widget-factory");
    reader = await A11yReader.open();
  }, SESSION_HOOK_MS);

  afterAll(async () => {
    for (const h of servers) await h.close().catch(() => {});
    reader?.close();
    stopApps(apps);
    session?.stop();
  });

  it("chooses the wayland backend from WAYLAND_DISPLAY and lists the GTK window; no grant before consent", async () => {
    expect(process.env.DISPLAY).toBeUndefined();
    const h = await start();
    const health = await h.ok("health_check");
    expect(JSON.stringify(health)).toContain("wayland");
    const w = await factoryWindow(h);
    expect((await h.call("inspect_tree", { detail: "full", hwnd: w.hwnd })).code).toBe("consent_required");
  });

  it("attack: another program's window that claims the target's title is not the target", async () => {
    const h = await start();
    const real = await factoryWindow(h);
    // zenity names its window after the title it is given: the same title as the factory's.
    const spoof = startApp("zenity", ["--info", "--title=gtk3-widget-factory", "--text=spoof"], apps);
    await waitFor("the spoof on the a11y bus", async () =>
      (await reader.apps()).some((a) => a.pid === spoof.pid) ? true : null,
    );
    const r = await h.ok("list_windows");
    const listed = (r.windows as Listed[]).filter((w) => w.title === "gtk3-widget-factory");
    // Only the window of the allowed executable, tied to its process by the bus daemon.
    expect(listed.map((w) => w.hwnd)).toEqual([real.hwnd]);
    spoof.kill("SIGKILL");
  });

  it("doctor says what works here, the two consent gates and the same-user limit", () => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env))
      if (v !== undefined && !k.startsWith("UIINSPECT_")) env[k] = v;
    const r = spawnSync(process.execPath, [CLI, "doctor"], {
      env: {
        ...env,
        DESKTOP_AUTOMATION_ALLOWED_TITLES: "*",
        DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: exe,
        DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "inspect",
      },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.stdout).toMatch(/ok\s+platform\s+wayland, display wayland-0/);
    expect(r.stdout).toMatch(/ok\s+consent_dialog\s+two gates/);
    expect(r.stdout).toMatch(/warn\s+wayland_limit/);
  });

  it("under the unsafe test setting: consent through zenity's box and the portal's picker, then trees, a toggle and the shared window's pixels; keys refused", async () => {
    // The factory's check buttons lie deep in its tree: a breadth-first walk over AT-SPI can pass
    // the default 5 s deadline on a loaded machine and end (truncated) before them.
    const h = await start({ UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT: "1", UIINSPECT_TREE_DEADLINE_MS: "60000" });
    const w = await factoryWindow(h);
    const pending = h.call("request_access", { hwnd: w.hwnd });
    await waitFor("the consent box's Allow button", () => reader.pressButton("zenity", "Allow"), 30_000);
    await answerPicker(reader, { windowApp: "gtk3-widget-factory", monitor: true, allowInput: true });
    expect((await pending).structured.decision).toBe("approved");

    const tree = await h.ok("inspect_tree", { detail: "full", hwnd: w.hwnd, max_depth: 12, max_nodes: 2000 });
    const treeText = JSON.stringify(tree);
    expect(treeText.length, treeText.slice(0, 600)).toBeGreaterThan(0);
    expect(treeText).toContain("check_box");
    // The outline walks without the rects nobody is shown, and says what the full tree says.
    const limits = { hwnd: w.hwnd, max_depth: 12, max_nodes: 2000 };
    const outline = await h.call("inspect_tree", limits);
    const full = await h.call("inspect_tree", { ...limits, detail: "full" });
    expect(outline.content[0]?.text).toBe(full.content[0]?.text);
    const found = (
      await h.ok("find_elements", {
        detail: "full",
        hwnd: w.hwnd,
        role: "check_box",
        name_contains: "checkbutton",
      })
    ).elements as Element[];
    // The factory's second column of check buttons is insensitive.
    const enabled = found.filter((e) => !(e.states ?? []).includes("disabled"));
    expect(enabled.length).toBeGreaterThan(0);
    expect(enabled.length).toBeLessThan(found.length);
    const c = enabled[0] as Element;

    // The same check button on the test's own connection.
    const app = (await reader.apps()).find((a) => a.pid === factory.pid);
    expect(app).toBeDefined();
    const checks: Array<{ bus: string; path: string }> = [];
    for (const n of await reader.nodes(app?.bus ?? "", app?.path ?? "", 5000)) {
      if (n.role !== "check box") continue;
      const [v] = (await reader.call(n.bus, n.path, "org.freedesktop.DBus.Properties", "Get", "ss", [
        "org.a11y.atspi.Accessible",
        "Name",
      ])) as [{ value: string }];
      if (v.value === "checkbutton") checks.push(n);
    }
    const checked = async () =>
      Promise.all(
        checks.map(async (n) => {
          const [st] = (await reader.call(n.bus, n.path, "org.a11y.atspi.Accessible", "GetState")) as [
            number[],
          ];
          return (((st[0] ?? 0) >>> ST_CHECKED) & 1) === 1;
        }),
      );
    const before = await checked();
    const r = await h.call("toggle_element", { ref: c.ref });
    expect(r.isError).toBe(false);
    const after = await waitFor("one check button flipped", async () => {
      const now = await checked();
      return now.some((v, i) => v !== before[i]) ? now : null;
    });
    expect(after.filter((v, i) => v !== before[i]).length).toBe(1);

    // The window the person shared in the portal's dialog: its pixels come from its window stream.
    const shot = await h.call("screenshot_window", { hwnd: w.hwnd });
    expect(shot.isError).toBe(false);
    expect(shot.content.some((x) => x.type === "image")).toBe(true);
    const key = await h.call("send_key", { hwnd: w.hwnd, key: "space" });
    expect(key.isError).toBe(true);
    expect(["not_foreground", "platform_unavailable"]).toContain(key.code);

    // The find above ran on the session the tree had opened: its walk was sent beside the listing.
    const events = (await h.ok("get_audit_events", { limit: 50 })).events as Array<Record<string, unknown>>;
    expect(events.find((e) => e.tool === "find_elements")?.counters).toMatchObject({ ahead: true });
    // The process killed: the walk sent ahead meets an app gone from the bus, the listing no
    // window; the call is refused and nothing of the tree leaves.
    // Waited for on the test's own connection: a list_windows of the server's would end the
    // exited instance's session first, and then nothing would go ahead.
    factory.kill("SIGKILL");
    await waitFor("the factory gone from the a11y bus", async () =>
      (await reader.apps()).some((a) => a.pid === factory.pid) ? null : true,
    );
    const gone = await h.call("inspect_tree", { detail: "full", hwnd: w.hwnd });
    expect(["target_gone", "target_not_found"], JSON.stringify(gone)).toContain(gone.code);
    expect(JSON.stringify(gone)).not.toContain("checkbutton");
    const last = (await h.ok("get_audit_events", { limit: 50 })).events as Array<Record<string, unknown>>;
    expect(last.find((e) => e.tool === "inspect_tree")?.counters).toMatchObject({ ahead_sent: true });
  });
});
