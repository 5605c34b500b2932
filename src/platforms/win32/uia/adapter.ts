import * as w from "../../../os/win32/ffi.js";
import { windowPid } from "../../../os/win32/identity.js";
import { isUiError, type UiError, uiError } from "../../../shared/errors.js";
import type { Rect } from "../../../shared/geometry.js";
import type {
  A11yHandle,
  A11yNodeFacts,
  A11ySession,
  AccessibilityPort,
  SemanticAction,
  WindowInfo,
} from "../../../shared/platform.js";
import { enumTopLevel, isCloaked } from "../desktop.js";
import {
  ComError,
  check,
  E_NOINTERFACE,
  E_NOTIMPL,
  failed,
  getBstr,
  getInt,
  outPtr,
  queryInterface,
  RPC_E_CHANGED_MODE,
  release,
  UIA_E_ELEMENTNOTAVAILABLE,
  UIA_E_ELEMENTNOTENABLED,
  UIA_E_INVALIDOPERATION,
  UIA_E_TIMEOUT,
  vcall,
} from "./com.js";
import { roleForControlType } from "./roles.js";
import { uiaStates } from "./states.js";
import {
  CLSID,
  IUIAutomationElement as El,
  IID,
  IUIAutomation,
  IUIAutomation2,
  IUIAutomationCacheRequest,
  IUIAutomationElementArray,
  IUIAutomationExpandCollapsePattern,
  IUIAutomationInvokePattern,
  IUIAutomationScrollItemPattern,
  IUIAutomationSelectionItemPattern,
  IUIAutomationTogglePattern,
  IUIAutomationValuePattern,
  PatternId,
  PropertyId,
  TreeScope,
  VT_ARRAY,
  VT_BOOL,
  VT_I4,
} from "./vtables.js";

const COINIT_MULTITHREADED = 0x0;
const CLSCTX_INPROC_SERVER = 0x1;

/** Properties fetched in one round trip per element (and per child batch) through the cache request. */
const CACHED_PROPERTIES = [
  // The element's identity across walks (stable refs), never shown.
  PropertyId.RuntimeId,
  PropertyId.ProcessId,
  PropertyId.ControlType,
  PropertyId.Name,
  PropertyId.AutomationId,
  PropertyId.ClassName,
  PropertyId.BoundingRectangle,
  PropertyId.IsEnabled,
  PropertyId.IsOffscreen,
  PropertyId.HasKeyboardFocus,
  PropertyId.IsPassword,
  PropertyId.IsInvokePatternAvailable,
  PropertyId.IsTogglePatternAvailable,
  PropertyId.IsSelectionItemPatternAvailable,
  PropertyId.IsExpandCollapsePatternAvailable,
  PropertyId.IsValuePatternAvailable,
  PropertyId.IsScrollItemPatternAvailable,
  PropertyId.IsSelectionPatternAvailable,
  // States (docs/roles.md): read in the same round trip, never a value.
  PropertyId.IsKeyboardFocusable,
  PropertyId.ToggleToggleState,
  PropertyId.ExpandCollapseExpandCollapseState,
  PropertyId.SelectionItemIsSelected,
  PropertyId.ValueIsReadOnly,
  PropertyId.WindowIsModal,
  PropertyId.IsRequiredForForm,
  PropertyId.IsDataValidForForm,
] as const;

/** Pattern availability property → the pattern name of the vocabulary (src/shared/roles.ts). */
const PATTERN_FLAGS: ReadonlyArray<[number, string]> = [
  [PropertyId.IsInvokePatternAvailable, "invoke"],
  [PropertyId.IsTogglePatternAvailable, "toggle"],
  [PropertyId.IsSelectionItemPatternAvailable, "selection_item"],
  [PropertyId.IsExpandCollapsePatternAvailable, "expand_collapse"],
  [PropertyId.IsValuePatternAvailable, "value"],
  [PropertyId.IsScrollItemPatternAvailable, "scroll_item"],
  [PropertyId.IsSelectionPatternAvailable, "selection"],
];

/** How deep under a list / combo box select_option looks for the option (combo → list → item). */
const OPTION_DEPTH = 2;

export interface UiaOptions {
  /**
   * Where the IUIAutomation pointer comes from. Default: CoCreateInstance(CUIAutomation8,
   * then CUIAutomation). Tests pass an in-process COM double here; nothing else differs.
   */
  createAutomation?: () => bigint;
  /**
   * The process instance's other shown top-level windows beside `window` (menus #32768, owned
   * dialogs, ComboLBox dropdowns, tooltips), topmost first. Default: EnumWindows, filtered by the
   * owning process (GetWindowThreadProcessId), IsWindowVisible, not IsIconic, not cloaked.
   */
  instanceWindows?: (window: WindowInfo) => number[];
  /** IUIAutomation2 timeouts, so a hung provider cannot hang the worker. */
  connectionTimeoutMs?: number;
  transactionTimeoutMs?: number;
}

/** Maps a failed HRESULT (or anything thrown) to a content-free UiError. */
export function uiaError(e: unknown): UiError {
  if (e instanceof ComError) {
    switch (e.hr) {
      case UIA_E_ELEMENTNOTAVAILABLE:
        return uiError("element_stale");
      case UIA_E_ELEMENTNOTENABLED:
        return uiError("pattern_not_supported", "The element is disabled.");
      case UIA_E_TIMEOUT:
        return uiError("worker_timeout", "The accessibility provider did not answer in time.");
      case E_NOTIMPL:
      case E_NOINTERFACE:
        return uiError("pattern_not_supported");
      case UIA_E_INVALIDOPERATION:
        // E.g. Expand on a leaf node (ExpandCollapseState_LeafNode): the element cannot do it.
        return uiError("pattern_not_supported", "The element cannot do that.");
      default:
        return uiError("platform_unavailable", "A UI Automation call failed.");
    }
  }
  if (isUiError(e)) return e;
  return uiError("platform_unavailable", "A UI Automation call failed.");
}

function createRealAutomation(): bigint {
  if (!w.CoCreateInstance) throw uiError("platform_unavailable", "COM is not available.");
  const out = Buffer.alloc(8);
  const iid = w.guid(IID.IUIAutomation);
  for (const clsid of [CLSID.CUIAutomation8, CLSID.CUIAutomation]) {
    out.fill(0);
    const hr = w.CoCreateInstance(w.guid(clsid), null, CLSCTX_INPROC_SERVER, iid, out);
    const p = out.readBigUInt64LE(0);
    if (!failed(hr) && p !== 0n) return p;
  }
  throw uiError("platform_unavailable", "UI Automation is not available on this system.");
}

/** The default instanceWindows: what win32k knows about the top-level windows. */
export function instanceTopLevels(window: WindowInfo): number[] {
  const main = Number(window.hwnd);
  if (window.pid <= 0) return [];
  return enumTopLevel().filter(
    (h) =>
      h !== main &&
      windowPid(h).pid === window.pid &&
      w.IsWindowVisible(h) !== 0 &&
      w.IsIconic(h) === 0 &&
      !isCloaked(h),
  );
}

interface Node {
  readonly id: number;
  /** IUIAutomationElement with the cache request's properties cached; owned by the session. */
  ptr: bigint;
  /**
   * The node's identity across walks: its UIA RuntimeId (from the cache request) where the
   * provider gives one, else its position from the root (`path:` keys, which follow the node as
   * long as its earlier siblings stay).
   */
  readonly key: string;
  /** Its position from the root ("r/3/0"; a popup root "w<hwnd>"). */
  readonly path: string;
}

/** RuntimeIds are a handful of integers; anything longer is not taken as one. */
const MAX_RUNTIME_ID_INTS = 32;
/** SAFEARRAY (x64): cDims@0 (u16), cbElements@4 (u32), pvData@16, rgsabound[0].cElements@24. */
const SAFEARRAY_DIMS = 0;
const SAFEARRAY_ELEMENT_SIZE = 4;
const SAFEARRAY_DATA = 16;
const SAFEARRAY_COUNT = 24;

/** The cached RuntimeId (VT_ARRAY | VT_I4) as a key, or null when the provider gives none. */
export function cachedRuntimeKey(el: bigint): string | null {
  const v = Buffer.alloc(24);
  const hr = vcall(el, El.GetCachedPropertyValue, "int id, void *variant", PropertyId.RuntimeId, v);
  try {
    if (failed(hr) || v.readUInt16LE(0) !== (VT_ARRAY | VT_I4)) return null;
    const sa = v.readBigUInt64LE(8);
    if (sa === 0n) return null;
    const dims = w.koffi.decode(sa, SAFEARRAY_DIMS, "uint16_t") as number;
    const size = w.koffi.decode(sa, SAFEARRAY_ELEMENT_SIZE, "uint32_t") as number;
    const count = w.koffi.decode(sa, SAFEARRAY_COUNT, "uint32_t") as number;
    const data = w.koffi.decode(sa, SAFEARRAY_DATA, "void *") as bigint | null;
    if (dims !== 1 || size !== 4 || count === 0 || count > MAX_RUNTIME_ID_INTS || !data) return null;
    const parts: number[] = [];
    for (let i = 0; i < count; i++) parts.push(w.koffi.decode(data, i * 4, "int32_t") as number);
    return `rid:${parts.join(".")}`;
  } finally {
    w.VariantClear?.(v);
  }
}

export class UiaSession implements A11ySession {
  private readonly nodes = new Map<number, Node>();
  private seq = 0;
  private disposed = false;

  constructor(
    private readonly automation: bigint,
    private readonly cacheRequest: bigint,
    private readonly condition: bigint,
    rootPtr: bigint,
    private readonly window: WindowInfo,
    private readonly instanceWindows: (window: WindowInfo) => number[],
  ) {
    this.rootNode = this.adopt(rootPtr, "r");
  }

  private readonly rootNode: Node;

  /** How many element references this session holds (for leak checks). */
  get liveElements(): number {
    return this.nodes.size;
  }

  private adopt(ptr: bigint, path: string): Node {
    let rid: string | null;
    try {
      rid = cachedRuntimeKey(ptr);
    } catch {
      rid = null;
    }
    const n: Node = { id: ++this.seq, ptr, key: rid ?? `path:${path}`, path };
    this.nodes.set(n.id, n);
    return n;
  }

  /** The node's stable identity (RuntimeId, else its path), so it keeps its ref across walks. */
  identity(h: A11yHandle): string | null {
    try {
      return this.node(h).key;
    } catch {
      return null;
    }
  }

  /**
   * Roots of the instance's other shown top-level windows (its menus, dropdowns, tooltips, own
   * dialogs): part of the granted window. A window that closed meanwhile, or whose provider
   * belongs to another process, is left out.
   */
  async popupRoots(): Promise<A11yHandle[]> {
    this.node(this.rootNode);
    const out: A11yHandle[] = [];
    for (const hwnd of this.instanceWindows(this.window)) {
      let el: bigint;
      try {
        el = outPtr(
          this.automation,
          IUIAutomation.ElementFromHandleBuildCache,
          "intptr_t hwnd, void *cache",
          hwnd,
          this.cacheRequest,
        );
      } catch {
        continue;
      }
      const pid = getInt(el, El.get_CachedProcessId);
      if (failed(pid.hr) || pid.value !== this.window.pid) {
        release(el);
        continue;
      }
      out.push({ id: this.adopt(el, `w${hwnd}`).id });
    }
    return out;
  }

  private node(h: A11yHandle): Node {
    if (this.disposed) throw uiError("element_stale");
    const id = h && typeof h === "object" && "id" in h ? (h as { id: unknown }).id : undefined;
    const n = typeof id === "number" ? this.nodes.get(id) : undefined;
    if (!n) throw uiError("element_stale");
    return n;
  }

  async root(): Promise<A11yHandle> {
    this.node(this.rootNode);
    return { id: this.rootNode.id };
  }

  async facts(h: A11yHandle): Promise<A11yNodeFacts> {
    const n = this.node(h);
    try {
      return readCachedFacts(n.ptr);
    } catch (e) {
      throw uiaError(e);
    }
  }

  async children(h: A11yHandle): Promise<A11yHandle[]> {
    const n = this.node(h);
    try {
      return this.childPointers(n.ptr).map((el, i) => ({ id: this.adopt(el, `${n.path}/${i}`).id }));
    } catch (e) {
      throw uiaError(e);
    }
  }

  async act(h: A11yHandle, action: SemanticAction, value?: string): Promise<void> {
    const n = this.node(h);
    if (action === "select_option") return this.selectOption(n.ptr, value ?? "");
    return this.runPattern(n.ptr, action, value);
  }

  /**
   * Selects the descendant (children, then grandchildren) whose name is `name` (case aside) and
   * that has the SelectionItem pattern, through SelectionItem.Select. Names are compared here and
   * never leave the worker.
   */
  private async selectOption(container: bigint, name: string): Promise<void> {
    const want = name.trim().toLowerCase();
    const held: bigint[] = [];
    try {
      let level = [container];
      for (let d = 0; d < OPTION_DEPTH && level.length > 0; d += 1) {
        const next: bigint[] = [];
        for (const parent of level) {
          for (const child of this.childPointers(parent)) {
            held.push(child);
            const f = readCachedFacts(child);
            if (f.patterns.includes("selection_item") && (f.name ?? "").trim().toLowerCase() === want) {
              return await this.runPattern(child, "select");
            }
            next.push(child);
          }
        }
        level = next;
      }
      throw uiError("target_not_found", "No option has that name.");
    } catch (e) {
      throw uiaError(e);
    } finally {
      for (const p of held) release(p);
    }
  }

  /** The children of an element with the cache request applied; the caller releases them. */
  private childPointers(parent: bigint): bigint[] {
    let arr: bigint | null = null;
    const out: bigint[] = [];
    try {
      arr = outPtr(
        parent,
        El.FindAllBuildCache,
        "int scope, void *cond, void *cache",
        TreeScope.Children,
        this.condition,
        this.cacheRequest,
      );
      const len = getInt(arr, IUIAutomationElementArray.get_Length);
      check(len.hr);
      for (let i = 0; i < len.value; i++)
        out.push(outPtr(arr, IUIAutomationElementArray.GetElement, "int index", i));
      return out;
    } catch (e) {
      for (const p of out) release(p);
      throw e;
    } finally {
      release(arr);
    }
  }

  private async runPattern(
    ptr: bigint,
    action: Exclude<SemanticAction, "select_option">,
    value?: string,
  ): Promise<void> {
    const spec = ACTIONS[action];
    let pattern: bigint | null = null;
    try {
      try {
        pattern = outPtr(ptr, El.GetCurrentPatternAs, "int id, void *iid", spec.patternId, w.guid(spec.iid));
      } catch (e) {
        if (e instanceof ComError && e.hr === UIA_E_ELEMENTNOTAVAILABLE) throw e;
        throw uiError("pattern_not_supported");
      }
      if (action === "set_value") {
        if (value === undefined) throw uiError("invalid_argument", "A value is required.");
        if (!w.SysAllocString || !w.SysFreeString) throw uiError("platform_unavailable");
        const bstr = w.SysAllocString(value);
        if (!bstr) throw uiError("platform_unavailable");
        try {
          check(vcall(pattern, spec.method, "void *bstr", bstr));
        } finally {
          w.SysFreeString(bstr);
        }
      } else {
        check(vcall(pattern, spec.method, ""));
      }
    } catch (e) {
      throw uiaError(e);
    } finally {
      release(pattern);
    }
  }

  async alive(h: A11yHandle): Promise<boolean> {
    const n = this.node(h);
    // A fresh cache for the same element: fails with UIA_E_ELEMENTNOTAVAILABLE once it is gone.
    const out = Buffer.alloc(8);
    const hr = vcall(n.ptr, El.BuildUpdatedCache, "void *cache, void *out", this.cacheRequest, out);
    const fresh = out.readBigUInt64LE(0);
    if (failed(hr) || fresh === 0n) {
      if (fresh !== 0n) release(fresh);
      return false;
    }
    release(n.ptr);
    n.ptr = fresh;
    return true;
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    for (const n of this.nodes.values()) release(n.ptr);
    this.nodes.clear();
    release(this.condition);
    release(this.cacheRequest);
    // The IUIAutomation object belongs to the port, not to the session.
    void this.automation;
  }
}

const ACTIONS: Record<
  Exclude<SemanticAction, "select_option">,
  { patternId: number; iid: string; method: number }
> = {
  invoke: {
    patternId: PatternId.Invoke,
    iid: IID.IUIAutomationInvokePattern,
    method: IUIAutomationInvokePattern.Invoke,
  },
  toggle: {
    patternId: PatternId.Toggle,
    iid: IID.IUIAutomationTogglePattern,
    method: IUIAutomationTogglePattern.Toggle,
  },
  select: {
    patternId: PatternId.SelectionItem,
    iid: IID.IUIAutomationSelectionItemPattern,
    method: IUIAutomationSelectionItemPattern.Select,
  },
  expand: {
    patternId: PatternId.ExpandCollapse,
    iid: IID.IUIAutomationExpandCollapsePattern,
    method: IUIAutomationExpandCollapsePattern.Expand,
  },
  collapse: {
    patternId: PatternId.ExpandCollapse,
    iid: IID.IUIAutomationExpandCollapsePattern,
    method: IUIAutomationExpandCollapsePattern.Collapse,
  },
  set_value: {
    patternId: PatternId.Value,
    iid: IID.IUIAutomationValuePattern,
    method: IUIAutomationValuePattern.SetValue,
  },
  scroll_into_view: {
    patternId: PatternId.ScrollItem,
    iid: IID.IUIAutomationScrollItemPattern,
    method: IUIAutomationScrollItemPattern.ScrollIntoView,
  },
};

function cachedBool(el: bigint, index: number): boolean {
  const r = getInt(el, index);
  if (r.hr === UIA_E_ELEMENTNOTAVAILABLE) throw new ComError(r.hr);
  return !failed(r.hr) && r.value !== 0;
}

/** A VT_BOOL or VT_I4 cached property through a VARIANT (cleared after reading); null when absent. */
function cachedVariant(el: bigint, propertyId: number): boolean | number | null {
  const v = Buffer.alloc(24);
  const hr = vcall(el, El.GetCachedPropertyValue, "int id, void *variant", propertyId, v);
  try {
    if (failed(hr)) return null;
    const vt = v.readUInt16LE(0);
    if (vt === VT_BOOL) return v.readInt16LE(8) !== 0;
    if (vt === VT_I4) return v.readInt32LE(8);
    return null;
  } finally {
    w.VariantClear?.(v);
  }
}

function cachedVariantBool(el: bigint, propertyId: number): boolean {
  return cachedVariant(el, propertyId) === true;
}

function asBool(v: boolean | number | null): boolean | null {
  return typeof v === "boolean" ? v : null;
}

function asInt(v: boolean | number | null): number | null {
  return typeof v === "number" ? v : null;
}

export function readCachedFacts(el: bigint): A11yNodeFacts {
  const ct = getInt(el, El.get_CachedControlType);
  if (ct.hr === UIA_E_ELEMENTNOTAVAILABLE) throw new ComError(ct.hr);
  const rectBuf = Buffer.alloc(16);
  const rhr = vcall(el, El.get_CachedBoundingRectangle, "void *rect", rectBuf);
  let rect: Rect | null = null;
  if (!failed(rhr)) {
    const r = w.readRect(rectBuf);
    if (r[2] > r[0] && r[3] > r[1]) rect = r;
  }
  const patterns: string[] = [];
  for (const [prop, pattern] of PATTERN_FLAGS) if (cachedVariantBool(el, prop)) patterns.push(pattern);
  const states = uiaStates({
    isKeyboardFocusable: asBool(cachedVariant(el, PropertyId.IsKeyboardFocusable)),
    toggleState: patterns.includes("toggle") ? asInt(cachedVariant(el, PropertyId.ToggleToggleState)) : null,
    expandCollapseState: patterns.includes("expand_collapse")
      ? asInt(cachedVariant(el, PropertyId.ExpandCollapseExpandCollapseState))
      : null,
    selectionItemIsSelected: patterns.includes("selection_item")
      ? asBool(cachedVariant(el, PropertyId.SelectionItemIsSelected))
      : null,
    isValuePatternAvailable: patterns.includes("value"),
    valueIsReadOnly: patterns.includes("value")
      ? asBool(cachedVariant(el, PropertyId.ValueIsReadOnly))
      : null,
    windowIsModal: asBool(cachedVariant(el, PropertyId.WindowIsModal)),
    isRequiredForForm: asBool(cachedVariant(el, PropertyId.IsRequiredForForm)),
    isDataValidForForm: asBool(cachedVariant(el, PropertyId.IsDataValidForForm)),
  });
  const name = getBstr(el, El.get_CachedName);
  const automationId = getBstr(el, El.get_CachedAutomationId);
  const className = getBstr(el, El.get_CachedClassName);
  return {
    role: failed(ct.hr) ? "unknown" : roleForControlType(ct.value),
    name: name === null || name === "" ? null : name,
    automation_id: automationId === null || automationId === "" ? null : automationId,
    class_name: className === null || className === "" ? null : className,
    rect,
    enabled: cachedBool(el, El.get_CachedIsEnabled),
    offscreen: cachedBool(el, El.get_CachedIsOffscreen),
    focused: cachedBool(el, El.get_CachedHasKeyboardFocus),
    is_password: cachedBool(el, El.get_CachedIsPassword),
    patterns,
    states,
  };
}

/**
 * The UIA3 accessibility port. COM is initialized once on the calling worker thread
 * (multithreaded apartment: the worker has no message loop); one IUIAutomation object
 * serves every session of that worker and is released by dispose().
 */
export class UiaAccessibility implements AccessibilityPort {
  private automation: bigint | null = null;
  private comInitialized = false;
  private sessions = new Set<UiaSession>();
  /** Whether IUIAutomation2 timeouts were applied (CUIAutomation8 present). */
  timeoutsApplied = false;

  constructor(private readonly opts: UiaOptions = {}) {}

  private ensureAutomation(): bigint {
    if (this.automation) return this.automation;
    if (!this.opts.createAutomation) {
      if (!w.CoInitializeEx) throw uiError("platform_unavailable", "COM is not available.");
      const hr = w.CoInitializeEx(null, COINIT_MULTITHREADED);
      // S_OK / S_FALSE: ours to balance; RPC_E_CHANGED_MODE: the thread already has an apartment.
      if (!failed(hr)) this.comInitialized = true;
      else if (hr !== RPC_E_CHANGED_MODE)
        throw uiError("platform_unavailable", "COM could not be initialized.");
    }
    const automation = this.opts.createAutomation ? this.opts.createAutomation() : createRealAutomation();
    this.automation = automation;
    const a2 = queryInterface(automation, w.guid(IID.IUIAutomation2));
    if (a2) {
      try {
        const c = vcall(
          a2,
          IUIAutomation2.put_ConnectionTimeout,
          "uint32_t ms",
          this.opts.connectionTimeoutMs ?? 2000,
        );
        const t = vcall(
          a2,
          IUIAutomation2.put_TransactionTimeout,
          "uint32_t ms",
          this.opts.transactionTimeoutMs ?? 5000,
        );
        this.timeoutsApplied = !failed(c) && !failed(t);
      } finally {
        release(a2);
      }
    }
    return automation;
  }

  async openSession(window: WindowInfo): Promise<A11ySession> {
    if (!window.instance) throw uiError("target_not_allowed");
    const automation = this.ensureAutomation();
    let cache: bigint | null = null;
    let cond: bigint | null = null;
    let root: bigint | null = null;
    try {
      cache = outPtr(automation, IUIAutomation.CreateCacheRequest, "");
      for (const p of CACHED_PROPERTIES)
        check(vcall(cache, IUIAutomationCacheRequest.AddProperty, "int id", p));
      try {
        cond = outPtr(automation, IUIAutomation.get_ControlViewCondition, "");
      } catch {
        cond = outPtr(automation, IUIAutomation.CreateTrueCondition, "");
      }
      root = outPtr(
        automation,
        IUIAutomation.ElementFromHandleBuildCache,
        "intptr_t hwnd, void *cache",
        Number(window.hwnd),
        cache,
      );
      const pid = getInt(root, El.get_CachedProcessId);
      if (failed(pid.hr) || pid.value !== window.pid) throw uiError("target_changed");
      const s = new UiaSession(
        automation,
        cache,
        cond,
        root,
        window,
        this.opts.instanceWindows ?? instanceTopLevels,
      );
      this.sessions.add(s);
      const origDispose = s.dispose.bind(s);
      s.dispose = async () => {
        this.sessions.delete(s);
        await origDispose();
      };
      return s;
    } catch (e) {
      release(root);
      release(cond);
      release(cache);
      throw uiaError(e);
    }
  }

  async dispose(): Promise<void> {
    for (const s of [...this.sessions]) await s.dispose();
    release(this.automation);
    this.automation = null;
    if (this.comInitialized) w.CoUninitialize?.();
    this.comInitialized = false;
  }
}
