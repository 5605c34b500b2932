// Whether the AT-SPI walk's rule for taking a parent's children from the application's cache
// (src/platforms/x11/atspiCache.ts, ordersChildren) holds on real GTK 3 windows: on one private
// Xvfb desktop, for each window of gtk3-demo's demos (--run=…), some zenity dialogs,
// gtk3-icon-browser and gtk3-demo-application, every parent whose children the rule takes from
// Cache.GetItems is asked GetChildren through the a11y bus daemon, and the two lists compared.
//
//   npm run build && node bench/x11-cache-order.mjs
// Prints one line per window (nodes, cached items, parents the rule orders, how many of those
// differ from GetChildren), a line per difference (paths only: no names or titles), and the
// totals. Any difference means the rule must not take that parent's children.
import { spawn } from "node:child_process";
import { join } from "node:path";
import dbus from "dbus-next";
import { REPO, startDesk, waitFor } from "./lib/x11desk.mjs";

const DEMOS = [
  "assistant",
  "builder",
  "button_box",
  "combobox",
  "dialog",
  "expander",
  "headerbar",
  "iconview",
  "infobar",
  "listbox",
  "menus",
  "modelbutton",
  "panes",
  "pickers",
  "popover",
  "revealer",
  "sidebar",
  "stack",
  "tabs",
  "toolpalette",
  "editable_cells",
  "list_store",
  "tree_store",
  "spinbutton",
  "search_entry",
  "flowbox",
  "css_accordion",
  "entry_completion",
  "sizegroup",
  "textview",
  "shortcuts",
  "font_features",
  "printing",
];
const APPS = [
  ...DEMOS.map((d) => [d, "gtk3-demo", [`--run=${d}`]]),
  ["zenity-file", "zenity", ["--file-selection"]],
  ["zenity-list", "zenity", ["--list", "--column=a", "--column=b", "x", "y", "z", "w"]],
  ["zenity-forms", "zenity", ["--forms", "--add-entry=a", "--add-combo=b", "--combo-values=1|2"]],
  ["zenity-calendar", "zenity", ["--calendar"]],
  ["zenity-color", "zenity", ["--color-selection"]],
  ["icon-browser", "gtk3-icon-browser", []],
  ["demo-application", "gtk3-demo-application", []],
];

const { parseCache } = await import(join(REPO, "dist/platforms/x11/atspiCache.js"));
const { refs } = await import(join(REPO, "dist/platforms/x11/atspiBus.js"));
const desk = await startDesk();
const session = dbus.sessionBus();
const address = await session.call(
  new dbus.Message({
    destination: "org.a11y.Bus",
    path: "/org/a11y/bus",
    interface: "org.a11y.Bus",
    member: "GetAddress",
  }),
);
session.disconnect();
const a11y = dbus.sessionBus({ busAddress: String(address.body[0]) });
const ask = async (bus, path, iface, member) =>
  (await a11y.call(new dbus.Message({ destination: bus, path, interface: iface, member }))).body;
const { createX11Platform } = await import(join(REPO, "dist/platforms/x11/index.js"));
const platform = await createX11Platform({ workerKind: "uia" });
const total = { windows: 0, ordered: 0, differ: 0 };

/** Every parent the cache orders under `root`, against its GetChildren answer. */
async function compare(label, root) {
  const cache = parseCache(await ask(root.bus, "/org/a11y/atspi/cache", "org.a11y.atspi.Cache", "GetItems"));
  const queue = [root.path];
  const seen = new Set();
  let ordered = 0;
  let differ = 0;
  for (let i = 0; i < queue.length && seen.size < 5000; i++) {
    const path = queue[i];
    if (seen.has(path)) continue;
    seen.add(path);
    let kids;
    try {
      kids = refs(await ask(root.bus, path, "org.a11y.atspi.Accessible", "GetChildren"))
        .filter((r) => r.bus === root.bus)
        .map((r) => r.path);
    } catch {
      continue; // gone meanwhile
    }
    queue.push(...kids);
    const cached = cache.ordered.get(path);
    if (cached === undefined) continue;
    ordered += 1;
    if (cached.length !== kids.length || cached.some((c, j) => c.path !== kids[j])) {
      differ += 1;
      console.log(
        `DIFFERS ${label} ${path}: cache ${cached.map((c) => c.path).join(" ")}; GetChildren ${kids.join(" ")}`,
      );
    }
  }
  console.log(
    `${label}: ${seen.size} nodes, ${cache.items.size} cached items, ${ordered} parents ordered by the cache, ${differ} differ`,
  );
  total.windows += 1;
  total.ordered += ordered;
  total.differ += differ;
}

try {
  for (const [label, cmd, args] of APPS) {
    const child = spawn(cmd, args, { env: process.env, stdio: "ignore" });
    try {
      const shown = async () => {
        const all = await platform.desktop.listWindows();
        const mine = all.filter((w) => w.visible && !w.iconic && w.instance?.pid === child.pid);
        return mine.length > 0 ? mine : null;
      };
      const windows = await waitFor(label, shown, 15_000).catch(() => null);
      if (windows === null) {
        console.log(`${label}: no window`);
        continue;
      }
      // Settled: a GTK app builds parts of its tree on first access and after its first frames.
      await new Promise((r) => setTimeout(r, 700));
      for (const win of windows) {
        const s = await platform.accessibility.openSession(win);
        try {
          await compare(label, await s.root());
        } finally {
          await s.dispose();
        }
      }
    } finally {
      child.kill();
      await new Promise((r) => setTimeout(r, 300));
    }
  }
  console.log(JSON.stringify(total));
} finally {
  a11y.disconnect();
  await platform.dispose();
  await desk.stop();
}
