import { describe, expect, it } from "vitest";
import { platformChecks } from "../../src/cli/doctorChecks.js";
import type { ServerConfig } from "../../src/supervisor/config.js";
import { describeConsentDialog } from "../../src/supervisor/consent/dialogInfo.js";

describe("doctor on X11 says what X11 cannot stop", () => {
  const facts = {
    display: ":9",
    screen_width: 1280,
    screen_height: 800,
    ewmh: true,
    xtest: true,
    xshm: true,
  };

  it("warns in one line, naming forged device input, pixels and the Wayland backend", () => {
    const checks = platformChecks({ platform: "x11" } as unknown as ServerConfig, facts);
    const limit = checks.find((c) => c.id === "x11_limit");
    expect(limit?.status).toBe("warn");
    expect(limit?.summary).not.toContain("\n");
    expect(limit?.summary).toMatch(/forging hardware-looking input .*XTest device events.* pixels/);
    expect(limit?.summary).toContain("not malware already running as you");
    expect(limit?.fix).toContain("docs/wayland.md");
  });

  it("is not said on other platforms", () => {
    const checks = platformChecks({ platform: "fake" } as unknown as ServerConfig, facts);
    expect(checks.find((c) => c.id === "x11_limit")).toBeUndefined();
  });
});

describe("doctor and health_check on Wayland say the mechanism and what GNOME cannot stop", () => {
  it("warns with wayland_limit in one line: any program of the user drives mutter's APIs and can answer both dialogs", () => {
    const checks = platformChecks({ platform: "wayland" } as unknown as ServerConfig, {
      wayland_display: "wayland-0",
    });
    const limit = checks.find((c) => c.id === "wayland_limit");
    expect(limit?.status).toBe("warn");
    expect(limit?.summary).not.toContain("\n");
    expect(limit?.summary).toMatch(/RemoteDesktop .*ScreenCast .*both consent dialogs/);
    expect(limit?.summary).toContain("not malware already running as you");
    expect(checks.find((c) => c.id === "x11_limit")).toBeUndefined();
  });

  it("describes two gates, the checked program and the limit; the unsafe setting is loud", () => {
    const safe = describeConsentDialog("wayland", {});
    expect(safe.mechanism).toMatch(/^two gates: zenity's question box \(kept off the accessibility bus/);
    expect(safe.mechanism).toContain("portal dialog");
    expect(safe.program).toBe("/usr/bin/zenity");
    expect(safe.limit).toContain("not malware already running as you");
    expect(safe.warning).toBeUndefined();
    const unsafe = describeConsentDialog("wayland", { UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT: "1" });
    expect(unsafe.unsafe_allow_xtest_consent).toBe(true);
    expect(unsafe.warning).toMatch(/^UNSAFE: .*accessibility bus/);
  });
});
