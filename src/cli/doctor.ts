import { pino } from "pino";
import { UiError } from "../shared/errors.js";
import { SETTINGS } from "../shared/settings.js";
import { buildSupervisor, serverVersion } from "../supervisor/bootstrap.js";
import { ConfigError } from "../supervisor/config.js";
import {
  auditCheck,
  busChecks,
  type Check,
  consentDialogCheck,
  displayCheck,
  leaseCheck,
  moduleChecks,
  nodeCheck,
  platformChecks,
  policyChecks,
  runProbe,
  windowCounts,
  windowsSessionCheck,
} from "./doctorChecks.js";

export interface DoctorReport {
  version: string;
  /** usable = no check failed (warnings allowed). */
  status: "usable" | "unusable";
  checks: Check[];
}

const PROBE_DEADLINE_MS = 15_000;

/** Every check, in the order a person fixes them. */
export async function doctorReport(
  env: Record<string, string | undefined> = process.env,
): Promise<DoctorReport> {
  const checks: Check[] = [nodeCheck()];
  let sup: ReturnType<typeof buildSupervisor>;
  try {
    // doctor's output is its report: the server's own log lines (a guardian that cannot start
    // without a display) would come before it as raw JSON; every such fact is a check here.
    sup = buildSupervisor({ env, logger: pino({ level: "silent" }) });
  } catch (e) {
    const known = e instanceof ConfigError || e instanceof UiError;
    checks.push({
      id: "settings",
      status: "fail",
      summary: known ? e.message : "the configuration cannot be read",
      fix: "correct the named variable or flag (uiinspect-mcp serve --help; docs/reference.md)",
    });
    return finish(checks);
  }
  try {
    const config = sup.config;
    checks.push({
      id: "settings",
      status: "ok",
      summary: `isolation ${config.isolation}, log level ${config.logLevel}`,
    });
    checks.push(displayCheck(config, env), windowsSessionCheck(config, env));
    // The probe (D-Bus, native modules) and the capture worker's facts run side by side.
    const probe = runProbe(
      {
        modules: ["koffi"],
        bus: config.platform === "x11",
        callTimeoutMs: Math.min(SETTINGS.atspiCallTimeoutMs.default, 3000),
      },
      PROBE_DEADLINE_MS,
    );
    let facts: Record<string, string | number | boolean | null> | { error: string } = {
      error: "platform_unavailable",
    };
    if (config.platform) {
      try {
        facts = (await sup.workers.capture.call("desktop.health", {}, { deadlineMs: 10_000 })).facts;
      } catch (e) {
        facts = { error: e instanceof UiError ? e.code : "platform_unavailable" };
      }
    }
    const platform = platformChecks(config, facts);
    checks.push(...platform);
    const platformOk = platform.every((c) => c.status !== "fail");
    const probed = await probe;
    checks.push(...busChecks(config, probed));
    checks.push(consentDialogCheck(config, env));
    const counts = await windowCounts(sup, platformOk);
    checks.push(...policyChecks(sup.policyState, env, counts.windows, counts.matching));
    checks.push(auditCheck(config));
    checks.push(await leaseCheck(sup));
    checks.push(...moduleChecks(probed, config.platform));
    return finish(checks.filter((c) => c.status !== "skip" || c.id.startsWith("policy")));
  } finally {
    await sup.close();
  }
}

function finish(checks: Check[]): DoctorReport {
  return {
    version: serverVersion(),
    status: checks.some((c) => c.status === "fail") ? "unusable" : "usable",
    checks,
  };
}

export function formatReport(r: DoctorReport): string {
  const warnings = r.checks.filter((c) => c.status === "warn").length;
  const failures = r.checks.filter((c) => c.status === "fail").length;
  const counts = [failures ? `${failures} failed` : "", warnings ? `${warnings} warnings` : ""].filter(
    Boolean,
  );
  const lines = [
    `uiinspect-mcp ${r.version} doctor: ${r.status.toUpperCase()}${counts.length ? ` (${counts.join(", ")})` : ""}`,
  ];
  const w = Math.max(...r.checks.map((c) => c.id.length));
  for (const c of r.checks) {
    lines.push(`  ${c.status.padEnd(4)}  ${c.id.padEnd(w)}  ${c.summary}`);
    if (c.fix && c.status !== "ok") lines.push(`  ${" ".repeat(4 + 2 + w)}  fix: ${c.fix}`);
  }
  return `${lines.join("\n")}\n`;
}

/** `uiinspect-mcp doctor [--json]`: exit 0 usable, 1 unusable. */
export async function runDoctor(opts: { json: boolean }): Promise<number> {
  const r = await doctorReport();
  process.stdout.write(opts.json ? `${JSON.stringify(r, null, 2)}\n` : formatReport(r));
  return r.status === "usable" ? 0 : 1;
}
