import type { CapabilityLine } from "../../shared/dialogLines.js";
import { uiError } from "../../shared/errors.js";
import type { ProcessInstance } from "../../shared/identity.js";
import { sanitizeLabel, type VerifiedBy } from "../access/clientIdentity.js";
import { interpreterWarning } from "../policy/interpreters.js";
import { CAPABILITIES, CAPABILITY_DESCRIPTIONS, type Capability, isCapability } from "../policy/schema.js";
import type { ConsentDialogContent } from "./prompter.js";

export interface DialogContentInput {
  instance: ProcessInstance;
  capabilities: readonly string[];
  /** The client's self-reported name, or its certificate CN / token subject (ClientIdentity.label). */
  clientLabel: string;
  /** How the identity was proven (remote mode); absent: the label is only self-reported. */
  clientVerified?: VerifiedBy | null;
  /** Latest time a grant from this decision first expires, ms since the epoch. */
  expiresAt: number;
}

/**
 * Shows control characters as visible escapes. A path is an OS fact but can still contain a
 * newline on Linux; escaping keeps a crafted path from forging extra lines in the dialog.
 */
export function escapeForDialog(s: string): string {
  return s.replace(
    /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu,
    (c) => `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}`,
  );
}

/** Capabilities in the fixed display order, unknown names refused (they would have no plain words). */
export function orderCapabilities(caps: readonly string[]): Capability[] {
  const set = new Set<string>(caps);
  for (const c of set)
    if (!isCapability(c)) throw uiError("action_not_allowed", "Unknown capability requested.");
  return CAPABILITIES.filter((c) => set.has(c));
}

/**
 * The consent dialog, built only from OS facts about the process instance plus our own
 * words: never a window title or any other text the target controls. The client label is
 * marked self-reported because any program can claim any name, unless an authenticated
 * transport proved it: then the line says how, with the key or subject fingerprint.
 */
export function buildDialogContent(input: DialogContentInput): ConsentDialogContent {
  const caps = orderCapabilities(input.capabilities);
  if (caps.length === 0) throw uiError("invalid_argument", "No capabilities requested.");
  const lines: CapabilityLine[] = caps.map((c) => ({ name: c, description: CAPABILITY_DESCRIPTIONS[c] }));
  const label = sanitizeLabel(input.clientLabel);
  const exe = escapeForDialog(input.instance.exe_path);
  const start = escapeForDialog(input.instance.start_time);
  const expires = new Date(input.expiresAt).toISOString();
  // Judged on the OS's executable path, never on anything the target says about itself.
  const warning = interpreterWarning(input.instance.exe_path);
  const text = [
    "An MCP client asks to control a program on this desktop.",
    "",
    `Program: ${exe}`,
    ...(warning ? [`WARNING: ${warning}`] : []),
    `Process ID: ${input.instance.pid}`,
    `Process started: ${start}`,
    clientLine(label, input.clientVerified ?? null),
    "",
    "It asks to:",
    ...lines.map((l) => `  - ${l.name}: ${l.description}`),
    "",
    "This applies to this exact process only, until it exits or the server stops.",
    `Access first expires no later than ${expires} and is renewed silently while this decision stands.`,
    "",
    "Deny is the default.",
  ].join("\n");
  return {
    kind: "consent",
    executable_path: exe,
    pid: input.instance.pid,
    process_start: start,
    capabilities: lines,
    client_label: label,
    client_label_self_reported: !input.clientVerified,
    ...(input.clientVerified
      ? {
          client_verified: {
            method: input.clientVerified.method,
            fingerprint: input.clientVerified.fingerprint,
          },
        }
      : {}),
    expires_at: expires,
    default_button: "deny",
    ...(warning ? { interpreter_warning: warning } : {}),
    text,
  };
}

const VERIFIED_BY = { mtls: "client certificate key", oauth: "OAuth token subject" } as const;

function clientLine(label: string, verified: VerifiedBy | null): string {
  if (!verified) return `Client: ${label} (self-reported: any program can claim any name)`;
  // Hex only (checked), so nothing a client chose beyond the sanitized label reaches the text.
  const fp = /^[0-9a-f]{16,}$/.test(verified.fingerprint) ? verified.fingerprint.slice(0, 16) : "invalid";
  return `Client: ${label} (verified: ${VERIFIED_BY[verified.method]} SHA-256 ${fp}…)`;
}
