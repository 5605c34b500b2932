import type { STATES } from "./states.js";

/**
 * One element of an accessibility tree as the supervisor gets it from the uia worker (checked by
 * A11yNodeSchema in protocol.ts; on the wire as columns, src/shared/packedTree.ts).
 */
export interface A11yNodeOut {
  ref: string;
  role: string;
  name: string | null;
  is_password?: boolean | undefined;
  automation_id: string | null;
  class_name: string | null;
  rect: [number, number, number, number] | null;
  enabled: boolean;
  offscreen: boolean;
  focused: boolean;
  states: (typeof STATES)[number][];
  popup?: boolean | undefined;
  patterns: string[];
  children: A11yNodeOut[];
}
