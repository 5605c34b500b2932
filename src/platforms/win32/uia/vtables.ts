/**
 * UI Automation client vtable indices (x64, counted from 0; IUnknown QueryInterface 0,
 * AddRef 1, Release 2). Source: the Windows SDK header UIAutomationClient.h, whose
 * interface order is reproduced by Wine's include/uiautomationclient.idl
 * (wine-mirror/wine); every index below was counted from that idl's method order and
 * cross-checked against the Win32 metadata projection of the SDK (IUIAutomation2 58–63).
 * Measured under Wine 10: the methods Wine implements answer at these indices
 * (/work/shared/reference/uia-vtables.md).
 */
export const IUnknown = { QueryInterface: 0, AddRef: 1, Release: 2 } as const;

export const IUIAutomation = {
  CompareElements: 3,
  GetRootElement: 5,
  ElementFromHandle: 6,
  ElementFromHandleBuildCache: 10,
  CreateTreeWalker: 13,
  get_ControlViewWalker: 14,
  get_RawViewCondition: 17,
  get_ControlViewCondition: 18,
  CreateCacheRequest: 20,
  CreateTrueCondition: 21,
} as const;

/** IUIAutomation2 : IUIAutomation (IUIAutomation ends at ElementFromIAccessibleBuildCache 57). */
export const IUIAutomation2 = {
  get_AutoSetFocus: 58,
  put_AutoSetFocus: 59,
  get_ConnectionTimeout: 60,
  put_ConnectionTimeout: 61,
  get_TransactionTimeout: 62,
  put_TransactionTimeout: 63,
} as const;

export const IUIAutomationCacheRequest = {
  AddProperty: 3,
  AddPattern: 4,
  Clone: 5,
  get_TreeScope: 6,
  put_TreeScope: 7,
  get_TreeFilter: 8,
  put_TreeFilter: 9,
  get_AutomationElementMode: 10,
  put_AutomationElementMode: 11,
} as const;

export const IUIAutomationElement = {
  SetFocus: 3,
  GetRuntimeId: 4,
  FindFirst: 5,
  FindAll: 6,
  FindFirstBuildCache: 7,
  FindAllBuildCache: 8,
  BuildUpdatedCache: 9,
  GetCurrentPropertyValue: 10,
  GetCurrentPropertyValueEx: 11,
  GetCachedPropertyValue: 12,
  GetCachedPropertyValueEx: 13,
  GetCurrentPatternAs: 14,
  GetCachedPatternAs: 15,
  GetCurrentPattern: 16,
  GetCachedPattern: 17,
  GetCachedParent: 18,
  GetCachedChildren: 19,
  // Current* property getters 20–51, Cached* 52–83, in the same order.
  get_CurrentProcessId: 20,
  get_CurrentControlType: 21,
  get_CurrentName: 23,
  get_CurrentBoundingRectangle: 43,
  get_CachedProcessId: 52,
  get_CachedControlType: 53,
  get_CachedName: 55,
  get_CachedHasKeyboardFocus: 58,
  get_CachedIsEnabled: 60,
  get_CachedAutomationId: 61,
  get_CachedClassName: 62,
  get_CachedIsPassword: 67,
  get_CachedIsOffscreen: 70,
  get_CachedBoundingRectangle: 75,
  GetClickablePoint: 84,
} as const;

export const IUIAutomationElementArray = { get_Length: 3, GetElement: 4 } as const;

export const IUIAutomationInvokePattern = { Invoke: 3 } as const;
export const IUIAutomationTogglePattern = { Toggle: 3 } as const;
export const IUIAutomationSelectionItemPattern = { Select: 3 } as const;
export const IUIAutomationExpandCollapsePattern = { Expand: 3, Collapse: 4 } as const;
export const IUIAutomationScrollItemPattern = { ScrollIntoView: 3 } as const;
/** SetValue only; get_CurrentValue (4) is never called: values are not read. */
export const IUIAutomationValuePattern = { SetValue: 3 } as const;

export const CLSID = {
  CUIAutomation8: "e22ad333-b25f-460c-83d0-0581107395c9",
  CUIAutomation: "ff48dba4-60ef-4201-aa87-54103eef594e",
} as const;

export const IID = {
  IUnknown: "00000000-0000-0000-c000-000000000046",
  IUIAutomation: "30cbe57d-d9d0-452a-ab13-7ac5ac4825ee",
  IUIAutomation2: "34723aff-0c9d-49d0-9896-7ab52df8cd8a",
  IUIAutomationElement: "d22108aa-8ac5-49a5-837b-37bbb3d7591e",
  IUIAutomationInvokePattern: "fb377fbe-8ea6-46d5-9c73-6499642d3059",
  IUIAutomationTogglePattern: "94cf8058-9b8d-4ab9-8bfd-4cd0a33c8c70",
  IUIAutomationSelectionItemPattern: "a8efa66a-0fda-421a-9194-38021f3578ea",
  IUIAutomationExpandCollapsePattern: "619be086-1f4e-4ee4-bafa-210128738730",
  IUIAutomationValuePattern: "a94cd8b1-0844-4cd6-9d2d-640537ab39e9",
  IUIAutomationScrollItemPattern: "b488300f-d015-4f19-9c29-bb595e3645ef",
} as const;

/** Property, pattern and scope ids from the same idl. */
export const PropertyId = {
  RuntimeId: 30000,
  BoundingRectangle: 30001,
  ProcessId: 30002,
  ControlType: 30003,
  Name: 30005,
  HasKeyboardFocus: 30008,
  IsKeyboardFocusable: 30009,
  IsEnabled: 30010,
  AutomationId: 30011,
  ClassName: 30012,
  IsPassword: 30019,
  IsOffscreen: 30022,
  IsRequiredForForm: 30025,
  IsExpandCollapsePatternAvailable: 30028,
  IsInvokePatternAvailable: 30031,
  IsScrollItemPatternAvailable: 30035,
  IsSelectionItemPatternAvailable: 30036,
  IsSelectionPatternAvailable: 30037,
  IsTogglePatternAvailable: 30041,
  IsValuePatternAvailable: 30043,
  ValueIsReadOnly: 30046,
  ExpandCollapseExpandCollapseState: 30070,
  WindowIsModal: 30077,
  SelectionItemIsSelected: 30079,
  ToggleToggleState: 30086,
  IsDataValidForForm: 30103,
} as const;

export const PatternId = {
  Invoke: 10000,
  Value: 10002,
  ExpandCollapse: 10005,
  SelectionItem: 10010,
  Toggle: 10015,
  ScrollItem: 10017,
} as const;

export const TreeScope = { Element: 1, Children: 2, Descendants: 4, Subtree: 7 } as const;

export const VT_EMPTY = 0;
export const VT_I4 = 3;
export const VT_BSTR = 8;
export const VT_BOOL = 11;
export const VT_ARRAY = 0x2000;
