/**
 * UIA control type ids (UIAutomationClient.h / uiautomationclient.idl, 50000–50040) → the
 * common role vocabulary; the table is shared with every backend and docs/roles.md.
 */
export { roleForControlType } from "../../../shared/roles.js";
