import { describe, expect, it } from "vitest";
import { GrantStore } from "../../src/supervisor/access/grants.js";

const instance = {
  pid: 42,
  start_time: "2026-12-01T00:00:00.000Z",
  exe_path: "/usr/bin/app",
  session: ":1:1000",
};

describe("the windows shown when a grant began", () => {
  it("a live grant replaced or renewed keeps its list; a grant begun after expiry takes the new one", () => {
    let now = 0;
    const store = new GrantStore(() => now, 1000);
    const first = store.put({
      client: "c",
      instance,
      hwnd: "7",
      capabilities: ["observe"],
      shownBefore: ["9"],
    });
    expect(first.shownBefore).toEqual(["9"]);
    now = 500;
    const replaced = store.put({
      client: "c",
      instance,
      hwnd: "7",
      capabilities: ["click"],
      shownBefore: ["9", "11"],
    });
    expect(replaced.shownBefore).toEqual(["9"]);
    expect(store.renew("c", first.instanceKey)?.shownBefore).toEqual(["9"]);
    now = 5000;
    expect(store.get("c", first.instanceKey)).toBeUndefined();
    const again = store.put({
      client: "c",
      instance,
      hwnd: "7",
      capabilities: ["observe"],
      shownBefore: ["11"],
    });
    expect(again.shownBefore).toEqual(["11"]);
  });

  it("a grant on another window of the instance takes its own list", () => {
    const store = new GrantStore(() => 0, 1000);
    store.put({ client: "c", instance, hwnd: "7", capabilities: ["observe"], shownBefore: ["9"] });
    const other = store.put({
      client: "c",
      instance,
      hwnd: "8",
      capabilities: ["observe"],
      shownBefore: ["7"],
    });
    expect(other.shownBefore).toEqual(["7"]);
  });
});
