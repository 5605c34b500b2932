/**
 * UIA control type ids (UIAutomationClient.h / uiautomationclient.idl, 50000–50040) → the
 * common lowercase role vocabulary of inspect_tree (src/workers/uia/roles.ts).
 */
const CONTROL_TYPE_ROLES: Readonly<Record<number, string>> = {
  50000: "button",
  50001: "calendar",
  50002: "check_box",
  50003: "combo_box",
  50004: "edit",
  50005: "link",
  50006: "image",
  50007: "list_item",
  50008: "list",
  50009: "menu",
  50010: "menu_bar",
  50011: "menu_item",
  50012: "progress_bar",
  50013: "radio_button",
  50014: "scroll_bar",
  50015: "slider",
  50016: "spin_button",
  50017: "status_bar",
  50018: "tab",
  50019: "tab_item",
  50020: "text",
  50021: "toolbar",
  50022: "tool_tip",
  50023: "tree",
  50024: "tree_item",
  50025: "unknown", // Custom
  50026: "group",
  50027: "unknown", // Thumb
  50028: "table", // DataGrid
  50029: "row", // DataItem
  50030: "document",
  50031: "button", // SplitButton
  50032: "window",
  50033: "pane",
  50034: "header",
  50035: "header", // HeaderItem
  50036: "table",
  50037: "title_bar",
  50038: "separator",
  50039: "unknown", // SemanticZoom
  50040: "toolbar", // AppBar
};

export function roleForControlType(id: number): string {
  return CONTROL_TYPE_ROLES[id] ?? "unknown";
}
