// An in-process COM double of the UI Automation client: real vtables whose slots are
// koffi-registered JS callbacks, serving a simulated provider tree. The adapter in
// dist/platforms/win32/uia/adapter.js runs against it unchanged (only the IUIAutomation
// pointer comes from here instead of CoCreateInstance). Every object counts its references,
// so a test can assert that everything the adapter obtained was released.
import koffi from "koffi";

const S_OK = 0;
const E_NOTIMPL = 0x80004001 | 0;
const E_NOINTERFACE = 0x80004002 | 0;
const E_INVALIDARG = 0x80070057 | 0;
const UIA_E_ELEMENTNOTAVAILABLE = 0x80040201 | 0;

const IID = {
  IUnknown: "00000000-0000-0000-c000-000000000046",
  IUIAutomation: "30cbe57d-d9d0-452a-ab13-7ac5ac4825ee",
  IUIAutomation2: "34723aff-0c9d-49d0-9896-7ab52df8cd8a",
  invoke: "fb377fbe-8ea6-46d5-9c73-6499642d3059",
  toggle: "94cf8058-9b8d-4ab9-8bfd-4cd0a33c8c70",
  select: "a8efa66a-0fda-421a-9194-38021f3578ea",
  expandcollapse: "619be086-1f4e-4ee4-bafa-210128738730",
  value: "a94cd8b1-0844-4cd6-9d2d-640537ab39e9",
};
const PATTERN_IDS = {
  10000: "invoke",
  10002: "value",
  10005: "expandcollapse",
  10010: "select",
  10015: "toggle",
};
const AVAIL = { 30031: "invoke", 30041: "toggle", 30036: "select", 30028: "expandcollapse", 30043: "value" };
const ROLE_TO_CT = {
  button: 50000,
  check_box: 50002,
  combo_box: 50003,
  edit: 50004,
  link: 50005,
  image: 50006,
  list_item: 50007,
  list: 50008,
  menu: 50009,
  menu_item: 50011,
  radio_button: 50013,
  tab: 50018,
  tab_item: 50019,
  text: 50020,
  tree: 50023,
  tree_item: 50024,
  group: 50026,
  document: 50030,
  window: 50032,
  pane: 50033,
};

function guidString(ptr) {
  const b = Buffer.from(koffi.view(ptr, 16));
  const h = (o, n) =>
    b
      .readUIntLE(o, n)
      .toString(16)
      .padStart(n * 2, "0");
  const tail = [...b.subarray(8)].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h(0, 4)}-${h(4, 2)}-${h(6, 2)}-${tail.slice(0, 4)}-${tail.slice(4)}`;
}

let P = null;
function protos() {
  P ??= {
    qi: koffi.proto("int __stdcall DblQI(void *self, void *riid, void *out)"),
    ref: koffi.proto("uint32_t __stdcall DblRef(void *self)"),
    stub: koffi.proto("int __stdcall DblStub(void *self)"),
    out: koffi.proto("int __stdcall DblOut(void *self, void *out)"),
    int: koffi.proto("int __stdcall DblInt(void *self, int v)"),
    uint: koffi.proto("int __stdcall DblUint(void *self, uint32_t v)"),
    fromHandleBC: koffi.proto(
      "int __stdcall DblFromHandleBC(void *self, intptr_t hwnd, void *cache, void *out)",
    ),
    findAllBC: koffi.proto(
      "int __stdcall DblFindAllBC(void *self, int scope, void *cond, void *cache, void *out)",
    ),
    updatedCache: koffi.proto("int __stdcall DblUpdated(void *self, void *cache, void *out)"),
    propValue: koffi.proto("int __stdcall DblProp(void *self, int id, void *variant)"),
    patternAs: koffi.proto("int __stdcall DblPatternAs(void *self, int id, void *riid, void *out)"),
    intOut: koffi.proto("int __stdcall DblIntOut(void *self, int i, void *out)"),
    ptrArg: koffi.proto("int __stdcall DblPtrArg(void *self, void *p)"),
  };
  return P;
}

// `windows`: more top-level windows the double serves (ElementFromHandle): hwnd → { tree, pid? }.
export function createComDouble({ hwnd, pid, tree, windows = new Map() }) {
  const oleaut = koffi.load("oleaut32.dll");
  const SysAllocString = oleaut.func("void * __stdcall SysAllocString(const char16_t *s)");
  const SafeArrayCreateVector = oleaut.func(
    "void * __stdcall SafeArrayCreateVector(uint16_t vt, int lb, uint32_t n)",
  );
  protos();
  const objects = new Map(); // address (string) → { iface, refs, state }
  const registered = [];
  const allocations = [];
  const actions = [];
  const stats = { created: 0, calls: 0, timeouts: {} };

  const reg = (fn, proto) => {
    const p = koffi.register((...a) => {
      stats.calls++;
      return fn(...a);
    }, koffi.pointer(proto));
    registered.push(p);
    return p;
  };
  const obj = (self) => objects.get(String(self));
  const writePtr = (out, p) => koffi.encode(out, "void *", p);
  const writeInt = (out, v) => koffi.encode(out, "int32_t", v);

  /** Builds a vtable of `size` slots; unlisted slots answer E_NOTIMPL. */
  function vtable(size, slots, iids) {
    const stub = reg(() => E_NOTIMPL, P.stub);
    const table = koffi.alloc("void *", size);
    allocations.push(table);
    const qi = reg((self, riid, out) => {
      const want = guidString(riid);
      if (want === IID.IUnknown || iids.includes(want)) {
        obj(self).refs++;
        writePtr(out, self);
        return S_OK;
      }
      writePtr(out, null);
      return E_NOINTERFACE;
    }, P.qi);
    const addRef = reg((self) => ++obj(self).refs, P.ref);
    const release = reg((self) => {
      const o = obj(self);
      o.refs--;
      if (o.refs < 0) o.overReleased = true;
      if (o.refs === 0 && o.onFinalRelease) {
        const f = o.onFinalRelease;
        o.onFinalRelease = undefined;
        f();
      }
      return Math.max(0, o.refs);
    }, P.ref);
    const all = [qi, addRef, release];
    for (let i = 3; i < size; i++) all.push(slots[i] ?? stub);
    for (const [i, p] of all.entries()) koffi.encode(table, i * 8, "void *", p);
    return table;
  }

  function make(iface, table, state) {
    const mem = koffi.alloc("void *", 1);
    allocations.push(mem);
    koffi.encode(mem, 0, "void *", table);
    objects.set(String(mem), { iface, refs: 1, state });
    stats.created++;
    return mem;
  }

  // Simulated provider tree ---------------------------------------------------------------
  let seq = 0;
  const index = (n, parent) => {
    n.uid = ++seq;
    n.parent = parent;
    n.removed = false;
    n.state = { toggled: false, expanded: false, selected: false, value: null };
    for (const c of n.children ?? []) index(c, n);
  };
  index(tree, null);
  for (const wnd of windows.values()) {
    index(wnd.tree, null);
    const mark = (n) => {
      n.pid ??= wnd.pid;
      for (const c of n.children ?? []) mark(c);
    };
    mark(wnd.tree);
  }
  const live = (n) => n && !n.removed && (n.parent === null || live(n.parent));

  // Element ---------------------------------------------------------------------------------
  const el = {};
  const elementSlots = [];
  const getter = (fn) =>
    reg((self, out) => {
      const n = obj(self).state.node;
      if (!live(n)) return UIA_E_ELEMENTNOTAVAILABLE;
      return fn(n, out);
    }, P.out);
  const bstrGetter = (key) =>
    getter((n, out) => {
      const v = n[key];
      writePtr(out, v ? SysAllocString(v) : null);
      return S_OK;
    });
  const boolGetter = (fn) =>
    getter((n, out) => {
      writeInt(out, fn(n) ? 1 : 0);
      return S_OK;
    });
  elementSlots[8] = reg((self, scope, _cond, _cache, out) => {
    const n = obj(self).state.node;
    if (!live(n)) return UIA_E_ELEMENTNOTAVAILABLE;
    if (scope !== 2) return E_INVALIDARG; // the adapter asks for TreeScope_Children only
    const kids = (n.children ?? []).filter((c) => !c.removed);
    writePtr(out, makeArray(kids.map((k) => makeElement(k))));
    return S_OK;
  }, P.findAllBC);
  elementSlots[9] = reg((self, _cache, out) => {
    const n = obj(self).state.node;
    if (!live(n)) {
      writePtr(out, null);
      return UIA_E_ELEMENTNOTAVAILABLE;
    }
    writePtr(out, makeElement(n));
    return S_OK;
  }, P.updatedCache);
  // State properties (as UIA answers them for an element with the pattern): VT_I4 or VT_BOOL.
  const STATE_PROPS = {
    30086: (n) => (n.patterns ?? []).includes("toggle") && { vt: 3, v: n.state.toggled ? 1 : 0 },
    30070: (n) => (n.patterns ?? []).includes("expandcollapse") && { vt: 3, v: n.state.expanded ? 1 : 0 },
    30079: (n) => (n.patterns ?? []).includes("select") && { vt: 11, v: n.state.selected },
    30009: (n) => n.focusable !== undefined && { vt: 11, v: n.focusable },
    30025: (n) => n.required !== undefined && { vt: 11, v: n.required },
  };
  elementSlots[12] = reg((self, id, variant) => {
    const n = obj(self).state.node;
    if (!live(n)) return UIA_E_ELEMENTNOTAVAILABLE;
    if (id === 30000) {
      // RuntimeId: VT_ARRAY | VT_I4 in a real SAFEARRAY (the adapter's VariantClear frees it).
      // A node with runtime_id: null has none (VT_EMPTY), like providers that give none.
      const rid = n.runtime_id === undefined ? [7, n.pid ?? pid, n.uid] : n.runtime_id;
      if (rid === null) {
        koffi.encode(variant, 0, "uint16_t", 0);
        return S_OK;
      }
      const sa = SafeArrayCreateVector(3, 0, rid.length);
      const data = koffi.decode(sa, 16, "void *");
      for (const [i, v] of rid.entries()) koffi.encode(data, i * 4, "int32_t", v);
      koffi.encode(variant, 0, "uint16_t", 0x2003);
      koffi.encode(variant, 8, "void *", sa);
      return S_OK;
    }
    const stateProp = STATE_PROPS[id]?.(n);
    if (stateProp) {
      koffi.encode(variant, 0, "uint16_t", stateProp.vt);
      if (stateProp.vt === 3) koffi.encode(variant, 8, "int32_t", stateProp.v);
      else koffi.encode(variant, 8, "int16_t", stateProp.v ? -1 : 0);
      return S_OK;
    }
    const p = AVAIL[id];
    if (!p) {
      koffi.encode(variant, 0, "uint16_t", 0); // VT_EMPTY: not supported
      return id in STATE_PROPS || id >= 30000 ? S_OK : E_INVALIDARG;
    }
    koffi.encode(variant, 0, "uint16_t", 11); // VT_BOOL
    koffi.encode(variant, 8, "int16_t", (n.patterns ?? []).includes(p) ? -1 : 0);
    return S_OK;
  }, P.propValue);
  elementSlots[14] = reg((self, id, riid, out) => {
    const n = obj(self).state.node;
    writePtr(out, null);
    if (!live(n)) return UIA_E_ELEMENTNOTAVAILABLE;
    const p = PATTERN_IDS[id];
    if (!p || !(n.patterns ?? []).includes(p) || guidString(riid) !== IID[p]) return S_OK; // null = unsupported
    writePtr(out, makePattern(p, n));
    return S_OK;
  }, P.patternAs);
  elementSlots[52] = getter((n, out) => {
    writeInt(out, n.pid ?? pid);
    return S_OK;
  });
  elementSlots[53] = getter((n, out) => {
    writeInt(out, ROLE_TO_CT[n.role] ?? 50025);
    return S_OK;
  });
  elementSlots[55] = bstrGetter("name");
  elementSlots[58] = boolGetter((n) => n.focused);
  elementSlots[60] = boolGetter((n) => n.enabled !== false);
  elementSlots[61] = bstrGetter("automation_id");
  elementSlots[62] = bstrGetter("class_name");
  elementSlots[67] = boolGetter((n) => n.is_password);
  elementSlots[70] = boolGetter((n) => n.offscreen);
  elementSlots[75] = getter((n, out) => {
    const r = n.rect ?? [0, 0, 0, 0];
    for (const [i, v] of r.entries()) koffi.encode(out, i * 4, "int32_t", v);
    return S_OK;
  });
  el.table = vtable(85, elementSlots, ["d22108aa-8ac5-49a5-837b-37bbb3d7591e"]);
  function makeElement(node) {
    return make("IUIAutomationElement", el.table, { node });
  }

  // Element array ---------------------------------------------------------------------------
  const arraySlots = [];
  arraySlots[3] = reg((self, out) => {
    writeInt(out, obj(self).state.items.length);
    return S_OK;
  }, P.out);
  arraySlots[4] = reg((self, i, out) => {
    const items = obj(self).state.items;
    if (i < 0 || i >= items.length) return E_INVALIDARG;
    obj(items[i]).refs++;
    writePtr(out, items[i]);
    return S_OK;
  }, P.intOut);
  const arrayTable = vtable(5, arraySlots, ["14314595-b4bc-4055-95f2-58f2e42c9855"]);
  function makeArray(items) {
    const a = make("IUIAutomationElementArray", arrayTable, { items });
    // The array holds the elements; releasing the array releases them (as UIA does).
    objects.get(String(a)).onFinalRelease = () => {
      for (const it of items) obj(it).refs--;
    };
    return a;
  }

  // Patterns ---------------------------------------------------------------------------------
  const act = (name, fn) =>
    reg((self) => {
      const { node } = obj(self).state;
      if (!live(node)) return UIA_E_ELEMENTNOTAVAILABLE;
      fn?.(node);
      actions.push({ action: name, automation_id: node.automation_id ?? null });
      return S_OK;
    }, P.stub);
  const patternTables = {
    invoke: vtable(4, { 3: act("invoke") }, [IID.invoke]),
    toggle: vtable(
      6,
      {
        3: act("toggle", (n) => {
          n.state.toggled = !n.state.toggled;
        }),
      },
      [IID.toggle],
    ),
    select: vtable(
      10,
      {
        3: act("select", (n) => {
          n.state.selected = true;
        }),
      },
      [IID.select],
    ),
    expandcollapse: vtable(
      7,
      {
        3: act("expand", (n) => {
          n.state.expanded = true;
        }),
        4: act("collapse", (n) => {
          n.state.expanded = false;
        }),
      },
      [IID.expandcollapse],
    ),
    value: vtable(
      8,
      {
        3: reg((self, bstr) => {
          const { node } = obj(self).state;
          if (!live(node)) return UIA_E_ELEMENTNOTAVAILABLE;
          node.state.value = bstr ? koffi.decode.string16(bstr) : "";
          actions.push({ action: "set_value", automation_id: node.automation_id ?? null });
          return S_OK;
        }, P.ptrArg),
      },
      [IID.value],
    ),
  };
  function makePattern(p, node) {
    return make(`pattern:${p}`, patternTables[p], { node });
  }

  // Cache request and condition ---------------------------------------------------------------
  const cacheSlots = [];
  cacheSlots[3] = reg((self, id) => {
    obj(self).state.props.push(id);
    return S_OK;
  }, P.int);
  cacheSlots[7] = reg(() => S_OK, P.int);
  const cacheTable = vtable(12, cacheSlots, ["b32a92b5-bc25-4078-9c08-d7ee95c48e03"]);
  const condTable = vtable(3, [], ["352ffba8-0973-437c-a61f-f64cafd81df9"]);

  // IUIAutomation(2) ------------------------------------------------------------------------
  const autoSlots = [];
  autoSlots[10] = reg((_self, h, _cache, out) => {
    const served = Number(h) === Number(hwnd) ? tree : windows.get(Number(h))?.tree;
    if (!served || !live(served)) {
      writePtr(out, null);
      return E_INVALIDARG;
    }
    writePtr(out, makeElement(served));
    return S_OK;
  }, P.fromHandleBC);
  autoSlots[18] = reg((_self, out) => {
    writePtr(out, make("IUIAutomationCondition", condTable, {}));
    return S_OK;
  }, P.out);
  autoSlots[20] = reg((_self, out) => {
    writePtr(out, make("IUIAutomationCacheRequest", cacheTable, { props: [] }));
    return S_OK;
  }, P.out);
  autoSlots[21] = autoSlots[18];
  autoSlots[61] = reg((_s, ms) => {
    stats.timeouts.connection = ms;
    return S_OK;
  }, P.uint);
  autoSlots[63] = reg((_s, ms) => {
    stats.timeouts.transaction = ms;
    return S_OK;
  }, P.uint);
  const autoTable = vtable(64, autoSlots, [IID.IUIAutomation, IID.IUIAutomation2]);
  const automation = make("IUIAutomation", autoTable, {});

  return {
    automation,
    actions,
    stats,
    find(pred, n = tree) {
      if (pred(n)) return n;
      for (const c of n.children ?? []) {
        const f = this.find(pred, c);
        if (f) return f;
      }
      return null;
    },
    /** Objects whose reference count is not zero (the automation object excluded unless asked). */
    leaks({ includeAutomation = false } = {}) {
      const out = [];
      for (const [addr, o] of objects) {
        if (!includeAutomation && addr === String(automation)) continue;
        if (o.refs !== 0 || o.overReleased)
          out.push({ iface: o.iface, refs: o.refs, over: !!o.overReleased });
      }
      return out;
    },
    refsOfAutomation: () => objects.get(String(automation)).refs,
    objectCount: () => objects.size,
    dispose() {
      for (const p of registered) koffi.unregister(p);
      registered.length = 0;
      for (const a of allocations) koffi.free(a);
      allocations.length = 0;
    },
  };
}
