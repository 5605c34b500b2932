import { appendFileSync, chmodSync, closeSync, fstatSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import type { DenyReason } from "../shared/errors.js";
import type { LeaseCapability } from "./protocol.js";

/**
 * The broker's lifecycle audit: one JSON object per line, appended, never truncated, the
 * file created 0600 (its folder 0700). Events carry codes, numbers and times only: never
 * window titles, element names, values, images or any other UI content.
 */

export type LeaseAuditEventName =
  | "broker_start"
  | "broker_stop"
  | "activate"
  | "activate_denied"
  | "extend"
  | "extend_denied"
  | "revoke"
  | "expire"
  | "validation_denied"
  | "peer_refused"
  | "protocol_error";

export interface LeaseAuditFields {
  hours?: number;
  capabilities?: LeaseCapability[];
  capability?: LeaseCapability;
  expires_at?: string | null;
  reason?: DenyReason | "other_user" | "peer_unknown" | "bad_frame" | "bad_request";
  /** Target process of a refused validation (pid and start time are not UI content). */
  pid?: number;
  process_start?: string;
  /** Connecting process, when known. */
  peer_pid?: number;
  peer_uid?: number;
  code?: number;
  /** Identical validation denials folded into this line since the previous one was written. */
  suppressed?: number;
}

export interface LeaseAuditEvent extends LeaseAuditFields {
  time: string;
  event: LeaseAuditEventName;
  /** 12 hex of the scope hash: which sign-in session, without the uid/SID itself. */
  scope: string;
  broker_pid: number;
}

export interface LeaseAuditSink {
  write(event: LeaseAuditEvent): void;
}

export class JsonlLeaseAudit implements LeaseAuditSink {
  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const fd = openSync(path, "a", 0o600);
    try {
      if (process.platform !== "win32" && (fstatSync(fd).mode & 0o077) !== 0) chmodSync(path, 0o600);
    } finally {
      closeSync(fd);
    }
  }

  write(event: LeaseAuditEvent): void {
    try {
      appendFileSync(this.path, `${JSON.stringify(event)}\n`, { mode: 0o600, flag: "a" });
    } catch {
      // The audit must not take the broker down; the broker keeps failing closed regardless.
    }
  }
}

export class MemoryLeaseAudit implements LeaseAuditSink {
  readonly events: LeaseAuditEvent[] = [];
  write(event: LeaseAuditEvent): void {
    this.events.push(event);
  }
}
