import type { TypeObject } from "koffi";
import * as w from "../../../os/win32/ffi.js";
import { IUnknown } from "./vtables.js";

/**
 * Minimal COM plumbing over koffi: a method is called through the object's vtable with a
 * prototype whose first parameter is `this`. Interface pointers are BigInt (koffi 3).
 */

const protos = new Map<string, TypeObject>();
let protoSeq = 0;

/** `params` is the C parameter list after `this`, e.g. "int id, void *out". */
function proto(params: string): TypeObject {
  let p = protos.get(params);
  if (!p) {
    const list = params ? `void *self, ${params}` : "void *self";
    p = w.koffi.proto(`int __stdcall ComMethod${protoSeq++}(${list})`);
    protos.set(params, p);
  }
  return p;
}

/** Calls vtable slot `index` of `obj`; returns the HRESULT as a signed 32-bit number. */
export function vcall(obj: bigint, index: number, params: string, ...args: unknown[]): number {
  const vtbl = w.koffi.decode(obj, "void *") as bigint;
  const fn = w.koffi.decode(vtbl, index * 8, "void *") as bigint;
  return w.koffi.call(fn, proto(params), obj, ...args) as number;
}

export const S_OK = 0;
export const E_NOTIMPL = 0x80004001 | 0;
export const E_NOINTERFACE = 0x80004002 | 0;
export const REGDB_E_CLASSNOTREG = 0x80040154 | 0;
export const UIA_E_ELEMENTNOTENABLED = 0x80040200 | 0;
export const UIA_E_ELEMENTNOTAVAILABLE = 0x80040201 | 0;
export const UIA_E_TIMEOUT = 0x80131505 | 0;
/** COR_E_INVALIDOPERATION: UIA's "not possible in this state" (Expand on a leaf node). */
export const UIA_E_INVALIDOPERATION = 0x80131509 | 0;
export const RPC_E_CHANGED_MODE = 0x80010106 | 0;

export const failed = (hr: number): boolean => hr < 0;
export const hex = (hr: number): string => `0x${(hr >>> 0).toString(16).padStart(8, "0")}`;

export class ComError extends Error {
  constructor(readonly hr: number) {
    super(`HRESULT ${hex(hr)}`);
  }
}

export function check(hr: number): void {
  if (failed(hr)) throw new ComError(hr);
}

/** Calls a method whose last parameter is an interface out-pointer; returns it (owned by the caller). */
export function outPtr(obj: bigint, index: number, params: string, ...args: unknown[]): bigint {
  const out = Buffer.alloc(8);
  const hr = vcall(obj, index, params ? `${params}, void *out` : "void *out", ...args, out);
  check(hr);
  const p = out.readBigUInt64LE(0);
  if (p === 0n) throw new ComError(E_NOINTERFACE);
  return p;
}

export function addRef(obj: bigint): number {
  return vcall(obj, IUnknown.AddRef, "") >>> 0;
}

export function release(obj: bigint | null | undefined): number {
  if (!obj) return 0;
  return vcall(obj, IUnknown.Release, "") >>> 0;
}

export function queryInterface(obj: bigint, iid: Buffer): bigint | null {
  const out = Buffer.alloc(8);
  const hr = vcall(obj, IUnknown.QueryInterface, "void *iid, void *out", iid, out);
  if (failed(hr)) return null;
  const p = out.readBigUInt64LE(0);
  return p === 0n ? null : p;
}

/** Reads a BSTR out-parameter's string and frees the BSTR. */
export function takeBstr(bstr: bigint): string {
  if (bstr === 0n) return "";
  try {
    const len = w.SysStringLen ? w.SysStringLen(bstr) : 0;
    return len > 0 ? w.koffi.decode.string16(bstr, len) : "";
  } finally {
    w.SysFreeString?.(bstr);
  }
}

/** A BSTR property getter: the string, or null when the provider has none / fails. */
export function getBstr(obj: bigint, index: number): string | null {
  const out = Buffer.alloc(8);
  const hr = vcall(obj, index, "void *out", out);
  const b = out.readBigUInt64LE(0);
  if (failed(hr)) {
    if (b !== 0n) w.SysFreeString?.(b);
    return null;
  }
  return takeBstr(b);
}

/** An int / BOOL property getter. */
export function getInt(obj: bigint, index: number): { hr: number; value: number } {
  const out = Buffer.alloc(4);
  const hr = vcall(obj, index, "void *out", out);
  return { hr, value: out.readInt32LE(0) };
}
