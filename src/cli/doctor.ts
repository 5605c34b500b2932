import { buildSupervisor } from "../supervisor/bootstrap.js";
import { callTool } from "../supervisor/server.js";

/** `uiinspect-mcp doctor`: health_check for a person. Exit 1 when the server is unusable. */
export async function runDoctor(): Promise<number> {
  let sup: ReturnType<typeof buildSupervisor>;
  try {
    sup = buildSupervisor();
  } catch (e) {
    process.stdout.write(
      `uiinspect-mcp — UNUSABLE: ${e instanceof Error ? e.message : "configuration error"}\n`,
    );
    return 1;
  }
  try {
    const r = await callTool(sup, "health_check", {}, { signal: new AbortController().signal });
    const h = r.structuredContent as {
      status: string;
      platform: string | null;
      policy: {
        source: string;
        status: string;
        code?: string;
        policy_id?: string | null;
        reasons?: string[];
      };
      versions: Record<string, string>;
      platform_facts: Record<string, unknown>;
      workers: Array<{ kind: string; state: string; isolation: string }>;
      lease: { mode: string; active: boolean; reachable: boolean; expires_at: string | null };
      consent_dialog: { mechanism: string; program: string | null; warning?: string };
    };
    const out = (s: string) => process.stdout.write(`${s}\n`);
    out(`uiinspect-mcp ${h.versions.server} — ${h.status.toUpperCase()}`);
    out(`  platform:  ${h.platform ?? "none for this OS"}`);
    for (const [k, v] of Object.entries(h.platform_facts)) out(`    ${k}: ${String(v)}`);
    const p = h.policy;
    out(
      `  policy:    ${p.status === "ok" ? `${p.source} (${p.policy_id ?? "no id"})` : p.status === "none" ? "not configured (only health_check works)" : `${p.source}: ${p.code}`}`,
    );
    for (const r of p.reasons ?? []) out(`    ${r}`);
    out(`  workers:   ${h.workers.map((w) => `${w.kind}=${w.state}/${w.isolation}`).join(", ")}`);
    out(
      `  lease:     ${h.lease.mode}${h.lease.mode === "broker" ? ` (reachable=${h.lease.reachable}, active=${h.lease.active})` : ""}`,
    );
    out(`  consent:   ${h.consent_dialog.mechanism}`);
    if (h.consent_dialog.program) out(`    program: ${h.consent_dialog.program}`);
    if (h.consent_dialog.warning) out(`  !!! ${h.consent_dialog.warning}`);
    out(`  node ${h.versions.node}, MCP SDK ${h.versions.mcp_sdk}`);
    return h.status === "unusable" ? 1 : 0;
  } finally {
    await sup.close();
  }
}
