import { describe, expect, it } from "vitest";
import { isUiError } from "../../src/shared/errors.js";
import { SETTINGS, settingStrictness } from "../../src/shared/settings.js";
import {
  ConfigError,
  checkSetting,
  readSetting,
  readSettingOrDefault,
  readText,
  switchIsOn,
} from "../../src/shared/settingsReader.js";

/** The error a read throws, or null. */
function thrown(read: () => unknown): unknown {
  try {
    read();
    return null;
  } catch (e) {
    return e;
  }
}

describe("the one settings reader", () => {
  it("derives the strictness from the scope unless the table names one", () => {
    expect(settingStrictness(SETTINGS.consentTimeoutMs)).toBe("exit");
    expect(settingStrictness(SETTINGS.maxDiscoveryPerMinute)).toBe("invalid_argument");
    expect(settingStrictness(SETTINGS.maxActionsPerMinute)).toBe("policy_invalid");
    expect(settingStrictness(SETTINGS.atspiCallTimeoutMs)).toBe("default");
    expect(settingStrictness(SETTINGS.policyWatchMs)).toBe("default");
  });

  it("exit: a ConfigError naming the variable; blanks are a bad value, only '' is unset", () => {
    const s = SETTINGS.treeDeadlineMs;
    expect(readSetting({ [s.env]: "" }, s)).toBe(s.default);
    expect(readSetting({ [s.env]: " 250 " }, s)).toBe(250);
    for (const [raw, msg] of [
      ["  ", `${s.env} must be an integer`],
      ["5s", `${s.env} must be an integer`],
      ["49", `${s.env} must be between 50 and 60000`],
      ["99999999999999999999", `${s.env} must be between 50 and 60000`],
    ]) {
      const e = thrown(() => readSetting({ [s.env]: raw }, s));
      expect(e, raw).toBeInstanceOf(ConfigError);
      expect((e as Error).message, raw).toBe(msg);
    }
    const iso = thrown(() => readSetting({ [SETTINGS.isolation.env]: "fork" }, SETTINGS.isolation));
    expect((iso as Error).message).toBe("UIINSPECT_WORKER_ISOLATION must be one of thread, process");
    expect(readSetting({ [SETTINGS.isolation.env]: " Process " }, SETTINGS.isolation)).toBe("process");
  });

  it("invalid_argument: a UiError with the range; blanks are unset", () => {
    const s = SETTINGS.maxInspectionsPerMinute;
    expect(readSetting({ [s.env]: "   " }, s)).toBe(s.default);
    const e = thrown(() => readSetting({ [s.env]: "0" }, s));
    expect(isUiError(e) && e.code).toBe("invalid_argument");
    expect((e as Error).message).toBe(`${s.env} must be an integer between 1 and 100000.`);
  });

  it("policy_invalid: a reason, never a throw from checkSetting", () => {
    expect(
      checkSetting({ [SETTINGS.maxTextCharsPerMinute.env]: "-1" }, SETTINGS.maxTextCharsPerMinute),
    ).toEqual({
      ok: false,
      reason: `${SETTINGS.maxTextCharsPerMinute.env}: must be a positive whole number`,
    });
    const flag = SETTINGS.allowUnrestrictedScreenshots;
    expect(checkSetting({ [flag.env]: "yes" }, flag)).toEqual({
      ok: false,
      reason: `${flag.env}: must be true or false`,
    });
    expect(checkSetting({ [flag.env]: " TRUE " }, flag)).toEqual({ ok: true, value: "true" });
    expect(checkSetting({}, flag)).toEqual({ ok: true, value: null });
  });

  it("default: a bad value gives the default, and so does the lenient read of a strict setting", () => {
    const s = SETTINGS.x11RemapSettleMs;
    expect(readSetting({ [s.env]: "9" }, s)).toBe(s.default);
    expect(readSetting({ [s.env]: "20" }, s)).toBe(20);
    const strict = SETTINGS.consentTimeoutMs;
    expect(readSettingOrDefault({ [strict.env]: "soon" }, strict)).toBe(strict.default);
    expect(readSettingOrDefault({ [strict.env]: "100" }, strict)).toBe(100);
  });

  it("text is given back as written, null when unset or blank", () => {
    const s = SETTINGS.auditFile;
    expect(readText({ [s.env]: " /tmp/a b.jsonl" }, s)).toBe(" /tmp/a b.jsonl");
    expect(readText({ [s.env]: "  " }, s)).toBeNull();
    expect(readText({}, s)).toBeNull();
  });

  it("the unsafe switch is on for exactly '1' and nothing looser", () => {
    const s = SETTINGS.unsafeAllowXtestConsent;
    expect(switchIsOn({ [s.env]: "1" }, s)).toBe(true);
    for (const raw of [" 1", "1 ", "yes", "true", "01", undefined])
      expect(switchIsOn({ [s.env]: raw }, s), String(raw)).toBe(false);
  });
});
