// What observation costs an agent, in characters of real results, on a private X11 desktop:
// the tools/list JSON under an all-actions policy, one inspect_tree and one find_elements of
// gtk3-widget-factory (text block, structuredContent JSON, median text line), and one typical
// task (list, access, tree, screenshot, click, verify, wait for a change) call by call.
//
//   npm run build && node bench/observation-size.mjs
//   BENCH_CLI=/path/to/other/dist/cli.js node bench/observation-size.mjs   (another build)
//
// Prints one JSON object on stdout. Needs Xvfb, openbox, at-spi2-core, gtk3-widget-factory, xdotool.
import { CLI } from "./lib/mcp.mjs";
import { startDesk } from "./lib/x11desk.mjs";

const cli = process.env.BENCH_CLI ?? CLI;
const ALL = ["observe", "inspect", "hover", "click", "interact", "key", "text", "close", "drag"];

/** Characters of one tool result as the client receives it (images counted apart, in base64 bytes). */
function sizeOf(r) {
  let text = 0;
  let image = 0;
  const lines = [];
  for (const c of r.content ?? []) {
    if (c.type === "text") {
      text += c.text.length;
      lines.push(...c.text.split("\n"));
    } else if (c.type === "image") image += c.data.length;
  }
  const structured = r.structuredContent === undefined ? 0 : JSON.stringify(r.structuredContent).length;
  return { text, structured, total: text + structured, image_base64: image, lines };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.floor(s.length / 2)];
}

async function raw(client, name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent)}`);
  return r;
}

const desk = await startDesk();
try {
  const { win } = await desk.app("gtk3-widget-factory", [], (w) => w.title === "gtk3-widget-factory");
  const w = win.rect[2] - win.rect[0];
  const h = win.rect[3] - win.rect[1];
  const server = await desk.grantedServer(
    win,
    {
      allowed_actions: ALL,
      safe_regions: [{ name: "content", rect: [0, 0, Math.min(w, 800), Math.min(h, 600)] }],
      limits: {
        max_screenshot_pixels_per_minute: 1e12,
        max_png_bytes: 64 * 1024 * 1024,
        max_actions_per_minute: 100000,
      },
    },
    {
      UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "100000",
      UIINSPECT_MAX_INSPECTIONS_PER_MINUTE: "100000",
      UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE: "100000",
    },
    cli,
  );
  const { client } = server;
  const tools = (await client.listTools()).tools;
  const toolsList = JSON.stringify({ tools }).length;
  const names = new Set(tools.map((t) => t.name));

  const hwnd = win.hwnd;
  const tree = await raw(client, "inspect_tree", { hwnd, max_depth: 32, max_nodes: 5000 });
  const treeSize = sizeOf(tree);
  const nodes = tree.structuredContent.node_count;
  const find = await raw(client, "find_elements", { hwnd, role: "button", max_results: 500 });
  const findSize = sizeOf(find);

  // One typical task, call by call.
  const task = {};
  const add = (step, r) => {
    const s = sizeOf(r);
    task[step] = { text: s.text, structured: s.structured, image_base64: s.image_base64 };
  };
  add("list_windows", await raw(client, "list_windows", {}));
  add("get_access_state", await raw(client, "get_access_state", {}));
  add("inspect_tree", tree);
  add("screenshot_window", await raw(client, "screenshot_window", { hwnd, region_name: "content" }));
  const first = await raw(client, "screenshot_window", { hwnd, region_name: "content" });
  const hash = first.structuredContent.hash;
  // A check box of the factory: toggling it changes pixels and a state, and toggles back.
  // The ref from the text line (every build has it there).
  const found = await raw(client, "find_elements", { hwnd, role: "check_box", max_results: 1 });
  const box = { ref: /\[ref=([^\]]+)\]/.exec(found.content[0].text)[1] };
  add("click_element", await raw(client, "click_element", { ref: box.ref }));
  add(
    "find_elements_verify",
    await raw(client, "find_elements", { hwnd, role: "check_box", max_results: 1 }),
  );
  if (names.has("wait_for_visual_change") && typeof hash === "string") {
    add(
      "wait_for_visual_change",
      await raw(client, "wait_for_visual_change", {
        hwnd,
        region_name: "content",
        since: hash,
        timeout_ms: 2000,
      }),
    );
  } else {
    // Without a way to wait for pixels, an agent takes the screenshot again.
    add("screenshot_again", await raw(client, "screenshot_window", { hwnd, region_name: "content" }));
  }
  await raw(client, "click_element", { ref: box.ref });
  const totals = Object.values(task).reduce(
    (a, s) => ({ chars: a.chars + s.text + s.structured, image_base64: a.image_base64 + s.image_base64 }),
    { chars: 0, image_base64: 0 },
  );

  console.log(
    JSON.stringify(
      {
        cli,
        window: { width: w, height: h },
        tools_list: { tools: tools.length, chars: toolsList },
        inspect_tree: {
          nodes,
          text: treeSize.text,
          structured: treeSize.structured,
          total: treeSize.total,
          lines: treeSize.lines.length,
          median_line: median(treeSize.lines.map((l) => l.length)),
        },
        find_elements: {
          results: find.structuredContent.count ?? find.structuredContent.elements?.length,
          text: findSize.text,
          structured: findSize.structured,
          total: findSize.total,
          median_line: median(findSize.lines.map((l) => l.length)),
        },
        task,
        task_totals: totals,
      },
      null,
      2,
    ),
  );
} finally {
  await desk.stop();
}
