import type { ProcessInstance } from "../../shared/identity.js";

/**
 * The server's view of the unattended lease (UIINSPECT_LEASE=broker): every grant,
 * attach, inspection and action asks the broker again; failures are broker_unavailable
 * or lease_revoked and fail closed.
 */
export interface LeaseGate {
  validate(capability: string, instance: ProcessInstance): Promise<void>;
  /** Capabilities a lease can carry (intersected with the policy by the caller). */
  capabilities(): string[];
  status(): Promise<{ active: boolean; expires_at: string | null; reachable: boolean }>;
}
