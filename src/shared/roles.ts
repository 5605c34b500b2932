import type { SemanticAction } from "./platform.js";

/**
 * The one role vocabulary of inspect_tree / find_elements (docs/roles.md). Platforms map
 * their native roles (UIA control types, AT-SPI roles) onto it; whatever arrives here that
 * is not in it becomes "unknown", so a provider can never put free text in the role field.
 */
export const ROLES = [
  "window",
  "dialog",
  "button",
  "edit",
  "text",
  "label",
  "check_box",
  "radio_button",
  "combo_box",
  "list",
  "list_item",
  "menu",
  "menu_bar",
  "menu_item",
  "tab",
  "tab_item",
  "tree",
  "tree_item",
  "table",
  "header",
  "row",
  "cell",
  "link",
  "image",
  "panel",
  "pane",
  "group",
  "document",
  "toolbar",
  "status_bar",
  "slider",
  "spin_button",
  "scroll_bar",
  "progress_bar",
  "separator",
  "tool_tip",
  "title_bar",
  "calendar",
  "unknown",
] as const;
export type Role = (typeof ROLES)[number];

const ROLE_SET: ReadonlySet<string> = new Set(ROLES);
/** "checkbox" → "check_box", "menuitem" → "menu_item", …: the vocabulary without separators. */
const COMPACT_ROLES: ReadonlyMap<string, Role> = new Map(ROLES.map((r) => [r.replace(/_/g, ""), r]));

/**
 * A platform role → the vocabulary. Case, spaces, hyphens and a missing underscore are
 * forgiven ("Check Box", "check-box", "checkbox" → "check_box"); anything else is "unknown".
 */
export function normalizeRole(raw: string): Role {
  const r = raw
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, "_");
  if (ROLE_SET.has(r)) return r as Role;
  return COMPACT_ROLES.get(r.replace(/_/g, "")) ?? "unknown";
}

/** Semantic patterns an element can expose (what the act op can use). */
export const PATTERNS = [
  "invoke",
  "toggle",
  "selection_item",
  "expand_collapse",
  "value",
  "scroll_item",
  "selection",
] as const;
export type PatternName = (typeof PATTERNS)[number];

const PATTERN_SET: ReadonlySet<string> = new Set(PATTERNS);

/** Keeps the semantic patterns only (deduplicated, in vocabulary order). */
export function normalizePatterns(raw: readonly string[]): PatternName[] {
  const have = new Set(raw.map((p) => p.trim().toLowerCase()).filter((p) => PATTERN_SET.has(p)));
  return PATTERNS.filter((p) => have.has(p));
}

/** The pattern each semantic action needs; there is no other way to perform it. */
export const ACTION_PATTERN: Record<SemanticAction, PatternName> = {
  invoke: "invoke",
  toggle: "toggle",
  select: "selection_item",
  expand: "expand_collapse",
  collapse: "expand_collapse",
  set_value: "value",
  scroll_into_view: "scroll_item",
  select_option: "selection",
};

/**
 * UIA control type id → role (UIA_*ControlTypeId, 50000–50040). Data for the Win32 backend and
 * for docs/roles.md (a test keeps the two in step). A UIA Window whose IsDialog property is
 * true becomes "dialog" there; cells have no control type of their own (see docs/roles.md).
 */
export const UIA_CONTROL_TYPE_ROLES: Readonly<Record<number, { name: string; role: Role }>> = {
  50000: { name: "Button", role: "button" },
  50001: { name: "Calendar", role: "calendar" },
  50002: { name: "CheckBox", role: "check_box" },
  50003: { name: "ComboBox", role: "combo_box" },
  50004: { name: "Edit", role: "edit" },
  50005: { name: "Hyperlink", role: "link" },
  50006: { name: "Image", role: "image" },
  50007: { name: "ListItem", role: "list_item" },
  50008: { name: "List", role: "list" },
  50009: { name: "Menu", role: "menu" },
  50010: { name: "MenuBar", role: "menu_bar" },
  50011: { name: "MenuItem", role: "menu_item" },
  50012: { name: "ProgressBar", role: "progress_bar" },
  50013: { name: "RadioButton", role: "radio_button" },
  50014: { name: "ScrollBar", role: "scroll_bar" },
  50015: { name: "Slider", role: "slider" },
  50016: { name: "Spinner", role: "spin_button" },
  50017: { name: "StatusBar", role: "status_bar" },
  50018: { name: "Tab", role: "tab" },
  50019: { name: "TabItem", role: "tab_item" },
  50020: { name: "Text", role: "text" },
  50021: { name: "ToolBar", role: "toolbar" },
  50022: { name: "ToolTip", role: "tool_tip" },
  50023: { name: "Tree", role: "tree" },
  50024: { name: "TreeItem", role: "tree_item" },
  50025: { name: "Custom", role: "unknown" },
  50026: { name: "Group", role: "group" },
  50027: { name: "Thumb", role: "unknown" },
  50028: { name: "DataGrid", role: "table" },
  50029: { name: "DataItem", role: "row" },
  50030: { name: "Document", role: "document" },
  50031: { name: "SplitButton", role: "button" },
  50032: { name: "Window", role: "window" },
  50033: { name: "Pane", role: "pane" },
  50034: { name: "Header", role: "header" },
  50035: { name: "HeaderItem", role: "header" },
  50036: { name: "Table", role: "table" },
  50037: { name: "TitleBar", role: "title_bar" },
  50038: { name: "Separator", role: "separator" },
  50039: { name: "SemanticZoom", role: "unknown" },
  50040: { name: "AppBar", role: "toolbar" },
};

/**
 * AT-SPI2 role name (as Accessible.GetRoleName returns it) → role. "text" is "edit" when the
 * node has STATE_EDITABLE and "text" otherwise; "password text" is "edit" with is_password.
 */
export const ATSPI_ROLES: Readonly<Record<string, Role>> = {
  frame: "window",
  window: "window",
  dialog: "dialog",
  alert: "dialog",
  "file chooser": "dialog",
  "color chooser": "dialog",
  "font chooser": "dialog",
  button: "button",
  "push button": "button",
  "toggle button": "button",
  "push button menu": "button",
  entry: "edit",
  "password text": "edit",
  text: "edit",
  editbar: "edit",
  static: "text",
  paragraph: "text",
  heading: "text",
  caption: "text",
  label: "label",
  "check box": "check_box",
  "radio button": "radio_button",
  "combo box": "combo_box",
  list: "list",
  "list box": "list",
  "list item": "list_item",
  menu: "menu",
  "popup menu": "menu",
  "menu bar": "menu_bar",
  "menu item": "menu_item",
  "check menu item": "menu_item",
  "radio menu item": "menu_item",
  "tearoff menu item": "menu_item",
  "page tab list": "tab",
  "page tab": "tab_item",
  tree: "tree",
  "tree table": "tree",
  "tree item": "tree_item",
  table: "table",
  "column header": "header",
  "row header": "header",
  "table column header": "header",
  "table row header": "header",
  "table row": "row",
  "table cell": "cell",
  link: "link",
  image: "image",
  icon: "image",
  panel: "panel",
  filler: "panel",
  "scroll pane": "pane",
  "split pane": "pane",
  viewport: "pane",
  "layered pane": "pane",
  "root pane": "pane",
  "glass pane": "pane",
  "internal frame": "pane",
  "desktop frame": "pane",
  "option pane": "pane",
  canvas: "pane",
  "drawing area": "pane",
  grouping: "group",
  section: "group",
  form: "group",
  "document frame": "document",
  "document web": "document",
  "document text": "document",
  "document spreadsheet": "document",
  "document presentation": "document",
  "document email": "document",
  "tool bar": "toolbar",
  "status bar": "status_bar",
  "info bar": "status_bar",
  slider: "slider",
  "spin button": "spin_button",
  "scroll bar": "scroll_bar",
  "progress bar": "progress_bar",
  "level bar": "progress_bar",
  separator: "separator",
  "tool tip": "tool_tip",
  calendar: "calendar",
  unknown: "unknown",
  invalid: "unknown",
};

/**
 * An AT-SPI role name as a vocabulary role. AT-SPI says "text" for both static and editable
 * text: only a node with STATE_EDITABLE is an `edit`.
 */
export function mapAtspiRole(roleName: string, editable: boolean): Role {
  const r = roleName.toLowerCase();
  if (r === "text") return editable ? "edit" : "text";
  return ATSPI_ROLES[r] ?? "unknown";
}

/** A UIA control type id (50000–50040) as a vocabulary role. */
export function roleForControlType(id: number): Role {
  return UIA_CONTROL_TYPE_ROLES[id]?.role ?? "unknown";
}
