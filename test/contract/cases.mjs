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
//   verify(expected, opts)  that build's workers/verify.js verifyTarget over platform.desktop:
//              the portable checks on a fresh listing, then the port's confirmLive
//   stage      situations built for real by another process, each resolving to its undo:
//              cover(rect) a window of another process over that screen rect, above the subject;
//              foreground() another process's window in front (away from the subject);
//              grab(device) another client holding the "keyboard" or "pointer" grab;
//              minimize() the subject minimized by the window manager (no undo: restoreWindow)
//   settle()   lets the window manager act on what was asked so far (the fake desktop's is the
//              test's own; a real one needs nothing)
//   typed()    the subject's text field as read independently of the backend (the fake: what
//              its effects log delivered to a simple text field)
//   waitFor(fn, ms)  polls fn until it returns a truthy value (or null after ms)
//   closable() another process's window, fresh, that closes when asked politely, with its undo
//   fresh()    a second Platform of the same backend (for the dispose case; the case disposes it)
//   unsupported(reason)  ends a case this backend cannot run, saying why (vitest: a skip with
//              that note; the Wine runner: a fact of its results), never a silent pass

const centre = (r) => ({ x: Math.floor((r[0] + r[2]) / 2), y: Math.floor((r[1] + r[3]) / 2) });
const size = (r) => ({ w: r[2] - r[0], h: r[3] - r[1] });
const expectOf = (w) => ({ hwnd: w.hwnd, instance: w.instance });
/** The subject's centre, window-relative (inside the client area on every backend). */
const middle = (w) => ({ x: Math.floor(size(w.rect).w / 2), y: Math.floor(size(w.rect).h / 2) });

/** Runs fn with a staged situation, undoing it whatever happens. */
async function staged(make, fn) {
  const undo = await make();
  try {
    return await fn();
  } finally {
    await undo();
  }
}

/** The subject back in front and listed so (after a case that moved the foreground). */
async function subjectInFront({ platform, subject, settle, waitFor, check }) {
  await platform.desktop.activateWindow(subject.hwnd);
  await settle();
  const w = await waitFor(async () => {
    const now = await platform.desktop.getWindow(subject.hwnd);
    return now?.foreground && !now.iconic ? now : null;
  }, 10000);
  check.assert(w, "the subject is in front again");
  return w;
}

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
  {
    name: "desktop: targetAndCovers (where the port has it) lists the target and only windows above it",
    async run(ctx) {
      const { platform, subject, check } = ctx;
      if (!platform.desktop.targetAndCovers)
        ctx.unsupported("no targetAndCovers: a repeated check lists the whole desktop again");
      const { w, h } = size(subject.rect);
      const some = await platform.desktop.targetAndCovers(subject.hwnd, [0, 0, w, h]);
      const me = some.find((x) => x.hwnd === subject.hwnd);
      check.assert(me, "the target is in the partial listing");
      check.eq(me.rect, subject.rect, "at the listed place");
      for (const x of some)
        if (x !== me) check.assert(x.z < me.z, `window ${x.hwnd} is not above the target`);
      check.eq(await platform.desktop.targetAndCovers("987654321", [0, 0, 1, 1]), [], "an unknown hwnd");
    },
  },
  {
    name: "desktop: popupsOf and unlistedOwnWindows (where the port has them) answer lists",
    async run(ctx) {
      const { platform, subject, check } = ctx;
      if (!platform.desktop.popupsOf && !platform.desktop.unlistedOwnWindows)
        ctx.unsupported(
          "neither popupsOf nor unlistedOwnWindows: the listing carries every window of the process",
        );
      if (platform.desktop.popupsOf)
        check.eq(await platform.desktop.popupsOf(subject, []), [], "no candidates, no popups");
      if (platform.desktop.unlistedOwnWindows) {
        const rects = await platform.desktop.unlistedOwnWindows(subject);
        check.assert(Array.isArray(rects), "a list of rects");
        for (const r of rects) check.assert(Array.isArray(r) && r.length === 4, "each a rect");
      }
    },
  },
  {
    name: "desktop: confirmLive (where the port has it) passes an uncovered point of the subject in front, with its proof",
    async run(ctx) {
      const { platform, check } = ctx;
      const subject = await subjectInFront(ctx);
      if (!platform.desktop.confirmLive)
        ctx.unsupported("no confirmLive: the portable checks over the listing are all there is");
      const c = centre(subject.rect);
      const ask = { points: [c], region: null, focus: true, grabs: { keyboard: true, pointer: true } };
      // A window manager may hold a grab for a moment while it activates the subject (seen once
      // under load on X11): that refusal is right, so the case asks again until the grab is gone.
      const proof = await ctx.waitFor(
        () =>
          platform.desktop.confirmLive(subject, ask).catch((e) => {
            if (e?.code === "input_grabbed") return null;
            throw e;
          }),
        5000,
      );
      check.assert(proof && Array.isArray(proof.points), "a proof with a list of points");
      check.assert(proof.points.length === 0 || proof.points.length === 1, "at most one proof per point");
      for (const p of proof.points) check.eq([p.x, p.y], [c.x, c.y], "the proof is of the point asked");
    },
  },
  {
    name: "refusal out_of_bounds: a point or region past the subject's edge",
    async run(ctx) {
      const { subject, verify, check } = ctx;
      await subjectInFront(ctx);
      const { w, h } = size(subject.rect);
      const target = expectOf(subject);
      await verify(target, { points: [middle(subject)] });
      await check.rejectsWith(
        verify(target, { points: [{ x: w + 3, y: Math.floor(h / 2) }] }),
        "out_of_bounds",
        "right of the window",
      );
      await check.rejectsWith(
        verify(target, { points: [{ x: 5, y: -4 }] }),
        "out_of_bounds",
        "above the window",
      );
      await check.rejectsWith(
        verify(target, { region: [w - 5, 0, w + 5, 10] }),
        "out_of_bounds",
        "a region across the edge",
      );
      await check.rejectsWith(
        verify(target, { requireForeground: true, points: [{ x: w + 40, y: h + 40 }] }),
        "out_of_bounds",
        "for input too",
      );
    },
  },
  {
    name: "refusal occluded: another process's window over a point or region of the subject",
    async run(ctx) {
      const { platform, subject, stage, verify, check } = ctx;
      await subjectInFront(ctx);
      const c = centre(subject.rect);
      const rel = { x: c.x - subject.rect[0], y: c.y - subject.rect[1] };
      const target = expectOf(subject);
      await verify(target, { points: [rel], region: [rel.x - 10, rel.y - 10, rel.x + 10, rel.y + 10] });
      const before = await platform.desktop.listWindows();
      await staged(
        () => stage.cover([c.x - 30, c.y - 30, c.x + 30, c.y + 30]),
        async () => {
          await check.rejectsWith(verify(target, { points: [rel] }), "occluded", "a covered point");
          await check.rejectsWith(
            verify(target, { requireForeground: true, points: [rel] }),
            "occluded",
            "a covered point for input",
          );
          await check.rejectsWith(
            verify(target, { region: [rel.x - 5, rel.y - 5, rel.x + 5, rel.y + 5] }),
            "occluded",
            "a covered region",
          );
          // A point away from the cover (whatever size the system gave it) is still the subject's.
          const { w, h } = size(subject.rect);
          await verify(target, { points: [{ x: Math.floor(w / 4), y: Math.floor((3 * h) / 4) }] });
          // Where the port asks the display server itself, a stale listing does not let it through.
          if (platform.desktop.confirmLive)
            await check.rejectsWith(
              verify(target, { points: [rel], windows: before }),
              "occluded",
              "covered, judged against a listing from before the cover",
            );
        },
      );
    },
  },
  {
    name: "refusal not_foreground: another process's window in front refuses input, not observation",
    async run(ctx) {
      const { platform, subject, stage, verify, check, waitFor, settle } = ctx;
      await subjectInFront(ctx);
      const target = expectOf(subject);
      await verify(target, { requireForeground: true });
      const before = await platform.desktop.listWindows();
      await staged(
        () => stage.foreground(),
        async () => {
          await settle();
          const lost = await waitFor(
            async () => !(await platform.desktop.getWindow(subject.hwnd))?.foreground,
            10000,
          );
          check.assert(lost, "the subject is no longer listed in front");
          await check.rejectsWith(
            verify(target, { requireForeground: true }),
            "not_foreground",
            "input needs the front",
          );
          await verify(target, { points: [middle(subject)] });
          if (platform.desktop.confirmLive)
            await check.rejectsWith(
              verify(target, { requireForeground: true, windows: before }),
              "not_foreground",
              "judged against a listing from before, the display server still says no",
            );
        },
      );
      await subjectInFront(ctx);
      await verify(target, { requireForeground: true });
    },
  },
  {
    name: "refusal input_grabbed: another client holding the keyboard or the pointer",
    async run(ctx) {
      const { subject, stage, verify, check } = ctx;
      await subjectInFront(ctx);
      const target = expectOf(subject);
      const rel = middle(subject);
      const keys = { requireForeground: true, grabs: { keyboard: true } };
      const clicks = { requireForeground: true, points: [rel], grabs: { keyboard: true, pointer: true } };
      await verify(target, keys);
      await verify(target, clicks);
      await staged(
        () => stage.grab("keyboard"),
        async () => {
          await check.rejectsWith(
            verify(target, keys),
            "input_grabbed",
            "a key under another's keyboard grab",
          );
        },
      );
      await staged(
        () => stage.grab("pointer"),
        async () => {
          await check.rejectsWith(
            verify(target, clicks),
            "input_grabbed",
            "a click under another's pointer grab",
          );
        },
      );
      await verify(target, clicks);
    },
  },
  {
    name: "input: typed text and keys reach the subject in front; wheel leaves the pointer in place",
    async run(ctx) {
      const { platform, subject, pointer, pointerSlack, typed, waitFor, check } = ctx;
      await subjectInFront(ctx);
      const c = centre(subject.rect);
      await platform.input.moveTo(c.x, c.y);
      await platform.input.wheel(1);
      await platform.input.wheel(-1);
      const got = await pointer(c);
      check.assert(
        Math.abs(got.x - c.x) <= pointerSlack && Math.abs(got.y - c.y) <= pointerSlack,
        "the wheel does not move the pointer",
      );
      const start = await typed();
      await platform.input.typeText(subject.hwnd, "uix", "sendinput");
      check.assert(await waitFor(async () => (await typed()) === `${start}uix`, 5000), "the text arrived");
      await platform.input.keyDown("backspace");
      await platform.input.keyUp("backspace");
      await platform.input.keyDown("z");
      await platform.input.keyUp("z");
      check.assert(await waitFor(async () => (await typed()) === `${start}uiz`, 5000), "the keys arrived");
      let checks = 0;
      await platform.input.typeText(subject.hwnd, "ab", "sendinput", async () => {
        checks += 1;
        return null;
      });
      check.eq(checks, 2, "the check before each character ran once a character");
      check.assert(
        await waitFor(async () => (await typed()) === `${start}uizab`, 5000),
        "checked text arrived",
      );
    },
  },
  {
    name: "capture: into a caller's frame, the image is written there with the frame's stride",
    async run({ platform, subject, check }) {
      const c = centre(subject.rect);
      const plain = await platform.capture.captureScreen([c.x - 4, c.y - 4, c.x + 4, c.y + 4]);
      const stride = 8 * 3 + 16;
      const into = { width: 8, height: 8, stride, data: new Uint8Array(stride * 8) };
      const img = await platform.capture.captureScreen([c.x - 4, c.y - 4, c.x + 4, c.y + 4], into);
      check.eq([img.width, img.height], [8, 8], "image size");
      const rowOf = (i, y) => {
        const s = i.stride ?? i.width * i.channels;
        const out = [];
        for (let x = 0; x < 8; x++) for (let k = 0; k < 3; k++) out.push(i.data[y * s + x * i.channels + k]);
        return out;
      };
      // The same pixels either way (the subject does not change between the two reads).
      for (const y of [0, 7]) check.eq(rowOf(img, y), rowOf(plain, y), `row ${y} matches the plain capture`);
    },
  },
  {
    name: "desktop: restoreWindow un-minimizes a minimized subject; activateWindow brings it to the front",
    async run(ctx) {
      const { platform, subject, stage, settle, waitFor, check } = ctx;
      await subjectInFront(ctx);
      await stage.minimize();
      await settle();
      check.assert(
        await waitFor(async () => (await platform.desktop.getWindow(subject.hwnd))?.iconic, 10000),
        "the subject is listed minimized",
      );
      await platform.desktop.restoreWindow(subject.hwnd);
      await settle();
      const back = await waitFor(async () => {
        const w = await platform.desktop.getWindow(subject.hwnd);
        return w && !w.iconic ? w : null;
      }, 10000);
      check.assert(back, "restored");
      check.eq(back.instance, subject.instance, "the same instance");
      await subjectInFront(ctx);
    },
  },
  {
    name: "accessibility: act with a pattern the node lacks is pattern_not_supported; set_value on an editable node writes it",
    async run(ctx) {
      const { platform, subject, hasAccessibility, typed, waitFor, check } = ctx;
      if (!hasAccessibility) ctx.unsupported("no accessibility provider serves this window here");
      const session = await platform.accessibility.openSession(subject);
      try {
        const root = await session.root();
        const nodes = [];
        const visit = async (n, depth) => {
          nodes.push({ n, f: await session.facts(n) });
          if (depth < 8) for (const k of await session.children(n)) await visit(k, depth + 1);
        };
        await visit(root, 0);
        const rootFacts = nodes[0].f;
        if (!rootFacts.patterns.includes("toggle"))
          await check.rejectsWith(session.act(root, "toggle"), "pattern_not_supported", "toggle on the root");
        if (session.identity) {
          const id = session.identity(root);
          check.assert(id === null || typeof id === "string", "identity is a string or null");
        }
        if (session.popupRoots)
          check.assert(Array.isArray(await session.popupRoots()), "popupRoots is a list");
        if (session.walkSource) {
          const src = await session.walkSource(root, { maxNodes: 50, maxDepth: 4 });
          check.eq((await src.facts(root)).role, rootFacts.role, "the walk source sees the same root");
          src.release?.();
        }
        const edit = nodes.find(({ f }) => f.patterns.includes("value") && !f.is_password && f.enabled);
        check.assert(edit, "an editable node");
        await session.act(edit.n, "set_value", "contract");
        check.assert(
          await waitFor(async () => (await typed()) === "contract", 5000),
          "the value was written",
        );
      } finally {
        await session.dispose();
      }
    },
  },
  {
    name: "desktop: shownTopLevels (where the port has it) names the subject among its process's shown windows",
    async run(ctx) {
      const { platform, subject, check } = ctx;
      if (!platform.desktop.shownTopLevels)
        ctx.unsupported(
          "no shownTopLevels: without popupsOf every shown window of the instance is the target's",
        );
      await subjectInFront(ctx);
      const ids = await platform.desktop.shownTopLevels(subject.pid);
      check.assert(Array.isArray(ids) && ids.every((id) => typeof id === "string"), "a list of native ids");
      check.assert(ids.includes(subject.hwnd), "the subject, shown, is among them");
      check.eq(await platform.desktop.shownTopLevels(2 ** 22 + 17), [], "a pid with no windows has none");
    },
  },
  {
    name: "desktop: closeWindow asks another process's window politely to close; the subject stays",
    async run(ctx) {
      const { platform, subject, closable, settle, waitFor, check } = ctx;
      const { window, undo } = await closable();
      try {
        check.assert(window.hwnd !== subject.hwnd && window.pid !== subject.pid, "another process's window");
        await platform.desktop.closeWindow(window.hwnd);
        await settle();
        check.assert(
          await waitFor(async () => (await platform.desktop.getWindow(window.hwnd)) === null, 10000),
          "the window closed on the request",
        );
        check.assert(await platform.desktop.getWindow(subject.hwnd), "the subject is still listed");
      } finally {
        await undo();
      }
    },
  },
  {
    name: "dialog: consent (where the dialog is native code in the worker) shows a window that is never a target; an abort closes it as cancelled",
    async run(ctx) {
      const { platform, check, waitFor } = ctx;
      if (!platform.dialog)
        ctx.unsupported("no DialogPort: the consent dialog here is not native code in a worker");
      const before = new Set((await platform.desktop.listWindows()).map((w) => w.hwnd));
      const abort = new AbortController();
      const answer = platform.dialog.consent("Port contract: a dialog that is aborted.", abort.signal);
      answer.catch(() => {});
      const shown = await waitFor(async () => {
        const all = await platform.desktop.listWindows();
        return all.find((w) => w.visible && !before.has(w.hwnd)) ?? null;
      }, 10000);
      check.assert(shown, "a dialog window appeared");
      check.eq(shown.instance, null, "our own dialog has no targetable instance");
      await check.rejectsWith(platform.desktop.closeWindow(shown.hwnd), "target_not_allowed", "closing it");
      abort.abort();
      await check.rejectsWith(answer, "cancelled", "the abort");
      check.assert(
        await waitFor(async () => (await platform.desktop.getWindow(shown.hwnd)) === null, 10000),
        "the dialog closed after the abort",
      );
    },
  },
  {
    name: "platform: dispose is once (a second call does nothing); a port used after it works or says platform_unavailable",
    async run({ fresh, subject, check }) {
      const other = await fresh();
      check.assert(await other.desktop.getWindow(subject.hwnd), "the fresh platform sees the subject");
      const c = centre(subject.rect);
      await other.capture.captureScreen([c.x, c.y, c.x + 2, c.y + 2]);
      await other.dispose();
      await other.dispose();
      const after = await other.capture.captureScreen([c.x, c.y, c.x + 2, c.y + 2]).then(
        (img) => img,
        (e) => e,
      );
      if (after instanceof Error || after?.code)
        check.eq(after.code, "platform_unavailable", "a released capture port refuses with its code");
      else check.eq([after.width, after.height], [2, 2], "a port that holds nothing still answers");
    },
  },
];
