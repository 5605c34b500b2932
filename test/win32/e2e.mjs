// End to end under Wine: the built server (dist/cli.js serve, platform win32 from the OS) is
// spawned with the Windows node.exe over Windows pipes and driven with the MCP SDK client:
// list → request_access (the trusted dialog, approved by a SendInput click) → screenshot with a
// mask, compared with an independent BitBlt → click + send_text verified by WM_GETTEXT →
// close_window; inspect_tree fails cleanly (no UIA client on Wine 8).

import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";

/**
 * A stdio client transport that spawns the server WITHOUT windowsHide. The SDK's
 * StdioClientTransport passes windowsHide: true on Windows (CREATE_NO_WINDOW); under Wine 8 the
 * console-less node.exe then aborts in libuv ("Assertion failed: process_title", measured).
 * Real Windows is unaffected; this is only how the Wine test starts the server.
 */
export class WineStdioTransport {
  constructor({ command, args, env, cwd }) {
    this.params = { command, args, env, cwd };
    this.buf = new ReadBuffer();
    this.stderrText = "";
  }
  async start() {
    const { command, args, env, cwd } = this.params;
    this.child = spawn(command, args, { env, cwd, stdio: ["pipe", "pipe", "pipe"], windowsHide: false });
    this.child.stderr.on("data", (d) => {
      this.stderrText = (this.stderrText + d.toString()).slice(-4000);
    });
    this.child.stdout.on("data", (chunk) => {
      this.buf.append(chunk);
      for (;;) {
        let m;
        try {
          m = this.buf.readMessage();
        } catch (e) {
          this.onerror?.(e);
          continue;
        }
        if (m === null) break;
        this.onmessage?.(m);
      }
    });
    this.child.on("close", () => this.onclose?.());
    await new Promise((resolve, reject) => {
      this.child.once("spawn", resolve);
      this.child.once("error", reject);
    });
  }
  async send(message) {
    this.child.stdin.write(serializeMessage(message));
  }
  async close() {
    this.child?.stdin.end();
    await new Promise((r) => setTimeout(r, 500));
    this.child?.kill();
  }
}

const root = fileURLToPath(new URL("../../", import.meta.url));

/** `dist/cli.js serve` under the Windows node.exe (with the test loader), over stdio. */
export function serveTransport(dist, env) {
  return new WineStdioTransport({
    command: process.execPath,
    args: [
      "--import",
      pathToFileURL(join(root, "test", "win32", "loader.mjs")).href,
      fileURLToPath(new URL("cli.js", dist)),
      "serve",
    ],
    cwd: root,
    env,
  });
}

export function registerE2e({ dist, test, assert, eq, waitFor, sleep, h }) {
  test("e2e (MCP over stdio, win32 server): list → access → screenshot → click/type → close", async () => {
    const n = await h.startNotepad();
    const policyPath = join(tmpdir(), `uiinspect-wine-policy-${process.pid}.json`);
    writeFileSync(
      policyPath,
      JSON.stringify({
        schema_version: 1,
        policy_id: "wine-e2e",
        expires_at: "2099-01-01T00:00:00Z",
        application: { executable_path: "C:\\windows\\system32\\notepad.exe", title_patterns: ["*Notepad*"] },
        allowed_actions: ["observe", "click", "key", "text", "close", "inspect"],
        safe_regions: [
          { name: "top_left", rect: [0, 0, 300, 200] },
          { name: "bench", rect: [0, 0, 800, 600] },
        ],
        screenshot_masks: [{ rect: [0, 0, 40, 20] }],
      }),
    );
    const transport = serveTransport(dist, {
      ...process.env,
      UIINSPECT_PLATFORM: "",
      DESKTOP_AUTOMATION_POLICY_FILE: policyPath,
      UIINSPECT_CONSENT_TIMEOUT_MS: "20000",
      // The dialog is answered with SendInput below: injected input may answer it (unsafe, tests only).
      UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT: "1",
      UIINSPECT_LOG_LEVEL: process.env.UIINSPECT_E2E_LOG_LEVEL ?? "warn",
    });
    const serverErr = () => transport.stderrText;
    const client = new Client({ name: "wine-e2e", version: "1.0.0" });
    try {
      await client.connect(transport);
    } catch (e) {
      throw new Error(`connect failed: ${e?.message}\nserver stderr: ${serverErr()}`);
    }
    const call = async (name, args = {}) => {
      const r = await client.callTool({ name, arguments: args });
      if (r.isError)
        throw Object.assign(new Error(`${name}: ${JSON.stringify(r.structuredContent?.error)}`), {
          code: r.structuredContent?.error?.code,
        });
      return r;
    };
    try {
      const health = (await call("health_check")).structuredContent;
      h.facts.e2e_health_platform = health.platform ?? null;
      const list = (await call("list_windows")).structuredContent.windows;
      const w = list.find((x) => x.hwnd === String(n.hwnd));
      assert(w, `notepad listed by the server (got ${list.length} windows)`);
      assert(/notepad\.exe$/i.test(w.process_path), "process path");
      eq(w.pid, n.child.pid, "pid");
      // The trusted dialog: approve it by clicking its Approve button through SendInput.
      const access = client.callTool({ name: "request_access", arguments: { hwnd: w.hwnd } });
      const dlg = await h.findDialog();
      assert(dlg, "consent dialog shown by the server");
      // The dialog may still be settling (activation, first paint): click until it answers.
      let settled = false;
      access.then(
        () => (settled = true),
        () => (settled = true),
      );
      const askedAt = Date.now();
      for (let i = 0; i < 5 && !settled; i++) {
        h.facts.e2e_consent_attempts = i + 1;
        h.foreground(dlg);
        await sleep(300);
        try {
          await h.clickButton(dlg, /approve/i);
        } catch (e) {
          // A repeat may find the dialog already gone (answered, the reply still on its way).
          if (i === 0) throw e;
        }
        await waitFor(() => settled, 2000);
      }
      const acc = await access;
      h.facts.e2e_consent_ms = Date.now() - askedAt;
      assert(!acc.isError, `request_access: ${JSON.stringify(acc.structuredContent)}`);
      eq(acc.structuredContent.decision, "approved", "decision");
      // Screenshot with a mask, compared with an independent BitBlt of the same screen region.
      const shot = await call("screenshot_window", { hwnd: w.hwnd, region_name: "top_left" });
      const img = shot.content.find((c) => c.type === "image");
      assert(img, "image content");
      const meta = shot._meta ?? shot.structuredContent?._meta ?? {};
      const off = meta.window_offset ?? shot.structuredContent?.window_offset;
      const size = meta.image_size ?? shot.structuredContent?.image_size;
      assert(off && size, `offset/size in _meta: ${JSON.stringify(meta)}`);
      const sharp = (await import("sharp")).default;
      const { data, info } = await sharp(Buffer.from(img.data, "base64"))
        .raw()
        .toBuffer({ resolveWithObject: true });
      const [iw, ih] = Array.isArray(size) ? size : [size.width, size.height];
      eq([info.width, info.height], [iw, ih], "png size");
      // window_offset is window-relative: image pixel (u, v) is window pixel (u + ox, v + oy).
      const wr = h.windowRect(n.hwnd);
      const sx0 = wr[0] + off[0];
      const sy0 = wr[1] + off[1];
      const ref = h.independentCapture([sx0, sy0, sx0 + iw, sy0 + ih]);
      let diff = 0;
      let masked = 0;
      let maskArea = 0;
      for (let y = 0; y < ih; y++)
        for (let x = 0; x < iw; x++) {
          const i = (y * iw + x) * info.channels;
          const j = (y * iw + x) * 4;
          const sx = off[0] + x;
          const sy = off[1] + y;
          if (sx >= 0 && sy >= 0 && sx < 40 && sy < 20) {
            maskArea++;
            if (data[i] === 0 && data[i + 1] === 0 && data[i + 2] === 0) masked++;
            continue;
          }
          if (data[i] !== ref[j + 2] || data[i + 1] !== ref[j + 1] || data[i + 2] !== ref[j]) diff++;
        }
      h.facts.e2e_screenshot = { size: [iw, ih], offset: off, diff, masked, maskArea, window: wr };
      assert(maskArea > 0 && masked === maskArea, `mask painted black: ${masked} of ${maskArea}`);
      assert(diff <= iw * ih * 0.005, `screenshot differs from an independent BitBlt: ${diff} pixels`);
      // Click into the edit control, then type (text is protected: confirmation token first).
      const er = h.windowRect(n.edit);
      const cx = Math.floor((er[0] + er[2]) / 2) - wr[0];
      const cy = Math.floor((er[1] + er[3]) / 2) - wr[1];
      await call("click_window", { hwnd: w.hwnd, x: cx, y: cy });
      const tok = (await call("request_confirmation", { action_class: "text", hwnd: w.hwnd }))
        .structuredContent.token_id;
      await call("send_text", { hwnd: w.hwnd, text: "über MCP ✓", confirmation_token: tok });
      const got = await waitFor(() => (h.getText(n.edit) === "über MCP ✓" ? true : null), 5000);
      assert(got, `typed text, got ${JSON.stringify(h.getText(n.edit))}`);
      await call("send_key", { hwnd: w.hwnd, key: "backspace" });
      assert(await waitFor(() => h.getText(n.edit) === "über MCP ", 3000), "backspace");
      // inspect_tree: no UIA client on Wine 8 → a clean error, the server keeps working.
      if (/^8\./.test(h.facts.wine)) {
        const r = await client.callTool({
          name: "inspect_tree",
          arguments: { detail: "full", hwnd: w.hwnd },
        });
        eq(r.isError && r.structuredContent?.error?.code, "platform_unavailable", "inspect_tree on Wine 8");
      }
      // close_window: protected, and notepad would ask to save: clear the modified flag first.
      // Figures (no assertion on time): 800×600 screenshots through the whole server — chain,
      // capture worker (BitBlt + GetDIBits + verification), masks, sharp PNG, MCP framing.
      const before = h.windowRect(n.hwnd);
      // At the screen's origin: the 800×600 region of a 900×700 window must lie on the visible
      // screen (1280×800 here), or the capture is out_of_bounds.
      h.place(n.hwnd, 0, 0, 900, 700);
      const bench = {
        hwnd: w.hwnd,
        region_name: "bench",
        crop_left: 0,
        crop_top: 0,
        crop_right: 0,
        crop_bottom: 0,
      };
      for (let i = 0; i < 2; i++) await call("screenshot_window", bench);
      const shots = [];
      for (let i = 0; i < 15; i++) {
        const t0 = performance.now();
        const r = await call("screenshot_window", bench);
        shots.push(performance.now() - t0);
        if (i === 0)
          h.bench.mcp_screenshot_800x600_size = r.structuredContent.width * r.structuredContent.height;
      }
      shots.sort((a, b) => a - b);
      h.bench.mcp_screenshot_800x600_ms = {
        p50: +shots[Math.floor(shots.length / 2)].toFixed(1),
        max: +shots.at(-1).toFixed(1),
      };
      // Notepad remembers its size at close (registry): put it back, or every later notepad in
      // this prefix opens at 900×700 and the capture test's region shows only blank edit area.
      h.place(n.hwnd, before[0], before[1], before[2] - before[0], before[3] - before[1]);
      h.clearModified(n.edit);
      const ctok = (await call("request_confirmation", { action_class: "close", hwnd: w.hwnd }))
        .structuredContent.token_id;
      await call("close_window", { hwnd: w.hwnd, confirmation_token: ctok });
      assert(await waitFor(() => !h.isWindow(n.hwnd), 5000), "closed");
      const events = (await call("get_audit_events", { limit: 20 })).structuredContent.events;
      h.facts.e2e_audit = events.map((e) => `${e.tool}:${e.outcome}`).slice(0, 8);
    } catch (e) {
      e.message += `\nserver stderr (tail): ${serverErr().slice(-1500)}`;
      throw e;
    } finally {
      await client.close().catch(() => {});
      await sleep(200);
      if (h.isWindow(n.hwnd)) await h.closeNotepad(n);
    }
  }, 90000);
}
