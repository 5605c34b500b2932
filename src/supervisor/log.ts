import { pino } from "pino";
import { SETTINGS } from "../shared/settings.js";
import { readSettingOrDefault } from "../shared/settingsReader.js";

/**
 * Diagnostics go to stderr only: stdout carries MCP frames. Log calls pass fixed
 * event names and numeric/boolean fields, never UI content.
 */
export const log = pino(
  // Lenient here (a typo must not crash the import); loadConfig rejects a bad level with a clear error.
  { level: readSettingOrDefault(process.env, SETTINGS.logLevel), base: { svc: "uiinspect-mcp" } },
  pino.destination({ fd: 2, sync: false }),
);

export type Logger = typeof log;
