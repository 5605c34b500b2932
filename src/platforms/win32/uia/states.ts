import type { ElementState } from "../../../shared/states.js";

/**
 * UIA cached properties → the state vocabulary (docs/roles.md, "States"). A property the
 * provider does not answer is null and says nothing. IsEnabled, HasKeyboardFocus and IsOffscreen
 * travel as the facts' own booleans. UIA has no busy state (ItemStatus is free text and is
 * never read).
 */
export interface UiaStateProperties {
  isKeyboardFocusable: boolean | null;
  /** ToggleState: 0 off, 1 on, 2 indeterminate (only with the Toggle pattern). */
  toggleState: number | null;
  /** ExpandCollapseState: 0 collapsed, 1 expanded, 2 partially expanded, 3 leaf node. */
  expandCollapseState: number | null;
  selectionItemIsSelected: boolean | null;
  isValuePatternAvailable: boolean;
  valueIsReadOnly: boolean | null;
  windowIsModal: boolean | null;
  isRequiredForForm: boolean | null;
  /** Default true; only an explicit false means invalid. */
  isDataValidForForm: boolean | null;
}

export function uiaStates(p: UiaStateProperties): ElementState[] {
  const out: ElementState[] = [];
  if (p.isKeyboardFocusable === true) out.push("focusable");
  if (p.toggleState === 1) out.push("checked");
  else if (p.toggleState === 2) out.push("mixed");
  if (p.selectionItemIsSelected === true) out.push("selected");
  if (p.expandCollapseState === 1 || p.expandCollapseState === 2) out.push("expanded");
  else if (p.expandCollapseState === 0) out.push("collapsed");
  if (p.isValuePatternAvailable) out.push(p.valueIsReadOnly === true ? "readonly" : "editable");
  if (p.windowIsModal === true) out.push("modal");
  if (p.isRequiredForForm === true) out.push("required");
  if (p.isDataValidForForm === false) out.push("invalid");
  return out;
}
