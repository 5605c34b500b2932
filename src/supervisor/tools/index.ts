import { a11yTools } from "./a11y.js";
import { accessTools } from "./access.js";
import { captureTools } from "./capture.js";
import type { ToolDef } from "./define.js";
import { discoveryTools } from "./discovery.js";
import { inputTools } from "./input.js";
import { metaTools } from "./meta.js";
import { profileTools } from "./profiles.js";

/**
 * The one table of tools. Registration, the authorization chain and audit all follow
 * from these entries; there is no other way to add a tool.
 */
export const TOOLS: readonly ToolDef[] = [
  ...discoveryTools,
  ...accessTools,
  ...captureTools,
  ...profileTools,
  ...inputTools,
  ...a11yTools,
  ...metaTools,
];

export const TOOLS_BY_NAME: ReadonlyMap<string, ToolDef> = new Map(TOOLS.map((t) => [t.name, t]));
