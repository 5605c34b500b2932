// The port contract (src/shared/platform.ts): one list of cases that every backend must pass,
// run over the fake desktop and X11 by test/contract/ports.test.ts and over Win32 under Wine by
// test/win32/runner.mjs. Plain JavaScript so the Windows node.exe can import it next to dist/.
// Each case gets a context from its backend:
//   platform   the backend's Platform (desktop, capture, input, accessibility)
//   subject    a visible, unobscured top-level window of a known process, inside the screen
//   pointer(expected)  the pointer position read independently of the backend (effects log,
//              xdotool, GetCursorPos); a backend whose injection is asynchronous (Windows) polls
//              briefly for `expected` and returns its last read
//   pointerSlack  pixels a read may differ by (0; 1 on Win32, whose absolute coordinates are
//              normalised to 0..65535 and may round to a neighbour)
//   isWindowInfo(w)  the WindowInfo schema check of that build
//   hasAccessibility  whether this backend has a provider here (Wine has no UIA client)
//   check      { assert(cond, msg), eq(a, b, msg), rejectsWith(promise, code, msg) }

const centre = (r) => ({ x: Math.floor((r[0] + r[2]) / 2), y: Math.floor((r[1] + r[3]) / 2) });

export const PORT_CONTRACT = [
  {
    name: "desktop: every listed window is a valid WindowInfo, in stacking order topmost first",
    async run({ platform, subject, isWindowInfo, check }) {
      const all = await platform.desktop.listWindows();
      check.assert(all.length > 0, "the listing is empty");
      for (const w of all) check.assert(isWindowInfo(w), `window ${w.hwnd} does not match the schema`);
      for (let i = 1; i < all.length; i++)
        check.assert(all[i].z > all[i - 1].z, `z-order not increasing at index ${i}`);
      check.eq(new Set(all.map((w) => w.hwnd)).size, all.length, "hwnds are distinct");
      const me = all.find((w) => w.hwnd === subject.hwnd);
      check.assert(me, "the subject window is listed");
      check.assert(me.instance !== null, "the subject has a resolved process instance");
      check.eq(me.pid, me.instance.pid, "pid and instance pid agree");
    },
  },
  {
    name: "desktop: getWindow names the listed window and instance; an unknown hwnd is null",
    async run({ platform, subject, isWindowInfo, check }) {
      const one = await platform.desktop.getWindow(subject.hwnd);
      check.assert(one && isWindowInfo(one), "getWindow returns a valid WindowInfo");
      check.eq(
        [one.hwnd, one.pid, one.instance],
        [subject.hwnd, subject.pid, subject.instance],
        "same window, same instance",
      );
      const taken = new Set((await platform.desktop.listWindows()).map((w) => w.hwnd));
      let unknown = 987_654_321;
      while (taken.has(String(unknown))) unknown += 1;
      check.eq(await platform.desktop.getWindow(String(unknown)), null, "an hwnd nobody has");
    },
  },
  {
    name: "desktop: isInstanceAlive is true for the subject's instance and false for another start",
    async run({ platform, subject, check }) {
      check.eq(await platform.desktop.isInstanceAlive(subject.instance), true, "the live instance");
      const other = { ...subject.instance, start_time: "2000-01-01T00:00:00.000Z" };
      check.eq(await platform.desktop.isInstanceAlive(other), false, "same pid, another start time");
    },
  },
  {
    name: "desktop: the virtual screen is a non-empty rect that holds the subject's centre",
    async run({ platform, subject, check }) {
      const [l, t, r, b] = await platform.desktop.virtualScreen();
      check.assert(r > l && b > t, "non-empty virtual screen");
      const c = centre(subject.rect);
      check.assert(c.x >= l && c.x < r && c.y >= t && c.y < b, "the subject's centre is on the screen");
    },
  },
  {
    name: "desktop: health is flat facts (strings, numbers, booleans or null)",
    async run({ platform, check }) {
      const h = await platform.desktop.health();
      check.assert(h && typeof h === "object" && !Array.isArray(h), "health is an object");
      for (const [k, v] of Object.entries(h))
        check.assert(
          v === null || ["string", "number", "boolean"].includes(typeof v),
          `health field ${k} is not a flat fact`,
        );
    },
  },
  {
    name: "capture: a rect inside the subject comes back at its exact size and channel count",
    async run({ platform, subject, check }) {
      const c = centre(subject.rect);
      const rect = [c.x - 8, c.y - 6, c.x + 8, c.y + 6];
      const img = await platform.capture.captureScreen(rect);
      check.eq([img.width, img.height], [16, 12], "image size");
      check.assert(img.channels === 3 || img.channels === 4, "3 or 4 channels");
      check.eq(img.data.length, 16 * 12 * img.channels, "data length");
      const one = await platform.capture.captureScreen([c.x, c.y, c.x + 1, c.y + 1]);
      check.eq([one.width, one.height, one.data.length], [1, 1, one.channels], "a 1×1 rect is one pixel");
    },
  },
  {
    name: "input: moveTo lands where asked; a click there is pressed and released in place",
    async run({ platform, subject, pointer, pointerSlack, check }) {
      const c = centre(subject.rect);
      const at = async (p, msg) => {
        const got = await pointer(p);
        check.assert(
          Math.abs(got.x - p.x) <= pointerSlack && Math.abs(got.y - p.y) <= pointerSlack,
          `${msg}: expected ${JSON.stringify(p)}, got ${JSON.stringify(got)}`,
        );
      };
      for (const p of [
        { x: c.x - 5, y: c.y - 3 },
        { x: c.x + 4, y: c.y + 2 },
      ]) {
        await platform.input.moveTo(p.x, p.y);
        await at(p, "pointer position after moveTo");
      }
      await platform.input.buttonDown("left");
      await platform.input.buttonUp("left");
      await at({ x: c.x + 4, y: c.y + 2 }, "a click does not move the pointer");
    },
  },
  {
    name: "accessibility: a session's root has facts and children and is alive, or the port says why",
    async run({ platform, subject, hasAccessibility, check }) {
      let session;
      try {
        session = await platform.accessibility.openSession(subject);
      } catch (e) {
        if (hasAccessibility) throw e;
        // Without a provider here the port fails with a stable code, never a raw exception.
        check.assert(typeof e?.code === "string" && e.code.length > 0, "a failure carries an error code");
        return;
      }
      try {
        const root = await session.root();
        const facts = await session.facts(root);
        check.assert(typeof facts.role === "string" && facts.role.length > 0, "the root has a role");
        check.assert(Array.isArray(facts.patterns), "patterns is a list");
        check.assert(typeof facts.is_password === "boolean", "is_password is a boolean");
        check.assert(Array.isArray(await session.children(root)), "children is a list");
        check.eq(await session.alive(root), true, "the root of a live window is alive");
      } finally {
        await session.dispose();
      }
    },
  },
];
