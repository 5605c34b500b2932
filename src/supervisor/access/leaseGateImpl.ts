import { LeaseClient } from "../../lease/client.js";
import { LEASE_CAPABILITIES, type LeaseCapability } from "../../lease/protocol.js";
import { uiError } from "../../shared/errors.js";
import type { ProcessInstance } from "../../shared/identity.js";
import type { LeaseGate } from "./leaseGate.js";

const isLeaseCapability = (c: string): c is LeaseCapability =>
  (LEASE_CAPABILITIES as readonly string[]).includes(c);

/** UIINSPECT_LEASE=broker: a capability outside what a lease can carry is never granted by it. */
export function createLeaseGate(env: Record<string, string | undefined>): LeaseGate {
  const client = new LeaseClient({ env });
  // Windows: the pipe link's worker starts now, not inside the first tool call's deadline.
  client.prepare();
  return {
    validate: async (capability: string, instance: ProcessInstance) => {
      if (!isLeaseCapability(capability))
        throw uiError("consent_required", "The unattended lease does not cover this capability.");
      await client.validate(capability, instance);
    },
    capabilities: () => [...LEASE_CAPABILITIES],
    status: async () => {
      const s = await client.status();
      return { active: s.active, expires_at: s.expires_at, reachable: s.reachable };
    },
  };
}
