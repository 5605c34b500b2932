import { pino } from "pino";

/**
 * Diagnostics go to stderr only: stdout carries MCP frames. Log calls pass fixed
 * event names and numeric/boolean fields, never UI content.
 */
export const log = pino(
  { level: process.env.UIINSPECT_LOG_LEVEL ?? "info", base: { svc: "uiinspect-mcp" } },
  pino.destination({ fd: 2, sync: false }),
);

export type Logger = typeof log;
