import type { ElementState } from "../../shared/states.js";

/**
 * AT-SPI2 state set (Accessible.GetState: two 32-bit words, AtspiStateType bit numbers) → the
 * state vocabulary (docs/roles.md, "States"). Enabled, focused and offscreen travel as the facts'
 * own booleans; this maps the rest. Only bits the toolkit sets are read: nothing here is a value.
 */
export const ATSPI_STATE = {
  BUSY: 3,
  CHECKED: 4,
  COLLAPSED: 5,
  DEFUNCT: 6,
  EDITABLE: 7,
  ENABLED: 8,
  EXPANDABLE: 9,
  EXPANDED: 10,
  FOCUSABLE: 11,
  FOCUSED: 12,
  MODAL: 16,
  SELECTABLE: 22,
  SELECTED: 23,
  SENSITIVE: 24,
  SHOWING: 25,
  VERTICAL: 29,
  VISIBLE: 30,
  INDETERMINATE: 32,
  REQUIRED: 33,
  INVALID_ENTRY: 36,
  CHECKABLE: 41,
  READ_ONLY: 43,
} as const;

export function hasAtspiState(words: readonly number[], bit: number): boolean {
  const word = words[bit >> 5] ?? 0;
  return ((word >>> (bit & 31)) & 1) === 1;
}

/**
 * Roles whose INDETERMINATE bit means "mixed" (a check box in its third state). GTK also sets
 * INDETERMINATE on progress bars that pulse, which is not a check state.
 */
const CHECK_ROLES: ReadonlySet<string> = new Set([
  "check box",
  "check menu item",
  "toggle button",
  "radio button",
  "radio menu item",
  "table cell",
  "tree item",
  "list item",
]);

/** The vocabulary states of one AT-SPI node (role name lower-case, as GetRoleName says it). */
export function atspiStates(words: readonly number[], roleName: string): ElementState[] {
  const has = (bit: number) => hasAtspiState(words, bit);
  const out: ElementState[] = [];
  if (has(ATSPI_STATE.FOCUSABLE)) out.push("focusable");
  if (has(ATSPI_STATE.INDETERMINATE) && CHECK_ROLES.has(roleName)) out.push("mixed");
  else if (has(ATSPI_STATE.CHECKED)) out.push("checked");
  if (has(ATSPI_STATE.SELECTED)) out.push("selected");
  if (has(ATSPI_STATE.EXPANDED)) out.push("expanded");
  else if (has(ATSPI_STATE.COLLAPSED) || has(ATSPI_STATE.EXPANDABLE)) out.push("collapsed");
  if (has(ATSPI_STATE.READ_ONLY)) out.push("readonly");
  else if (has(ATSPI_STATE.EDITABLE)) out.push("editable");
  if (has(ATSPI_STATE.MODAL)) out.push("modal");
  if (has(ATSPI_STATE.BUSY)) out.push("busy");
  if (has(ATSPI_STATE.REQUIRED)) out.push("required");
  if (has(ATSPI_STATE.INVALID_ENTRY)) out.push("invalid");
  return out;
}
