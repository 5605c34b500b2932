import { describe, expect, it } from "vitest";
import { inputWorkerExpected } from "../../src/supervisor/bootstrap.js";
import type { ServerConfig } from "../../src/supervisor/config.js";
import { loadPolicy } from "../../src/supervisor/policy/load.js";

const now = () => new Date(Date.UTC(2026, 11, 1));
const env = (actions: string) => ({
  DESKTOP_AUTOMATION_ALLOWED_TITLES: "Ruffle - *",
  DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: "C:\\Program Files\\ruffle\\bin\\ruffle.exe",
  DESKTOP_AUTOMATION_ALLOWED_ACTIONS: actions,
});
const sup = (platform: ServerConfig["platform"], e: Record<string, string>) => ({
  config: { platform } as ServerConfig,
  policyState: loadPolicy(e, now),
  clock: () => now().getTime(),
});

describe("the input worker is started ahead only when it will be used", () => {
  it("not for a policy that only observes and inspects, nor without a usable policy", () => {
    expect(sup("fake", env("observe,inspect")).policyState.status).toBe("ok");
    expect(inputWorkerExpected(sup("fake", env("observe,inspect")))).toBe(false);
    expect(inputWorkerExpected(sup("x11", env("observe")))).toBe(false);
    expect(inputWorkerExpected(sup("x11", {}))).toBe(false);
  });

  it("for a policy allowing any capability that drives input, and always on Windows (its consent dialog)", () => {
    for (const a of ["hover", "click", "interact", "key", "text", "close", "drag"])
      expect(inputWorkerExpected(sup("x11", env(`observe,${a}`))), a).toBe(true);
    expect(inputWorkerExpected(sup("win32", env("observe")))).toBe(true);
    expect(inputWorkerExpected(sup("win32", {}))).toBe(true);
  });
});
