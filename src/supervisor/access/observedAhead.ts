import { isUiError, uiError } from "../../shared/errors.js";
import { sameInstance } from "../../shared/identity.js";
import type { OpArgs, OpResult, TargetExpectation } from "../../shared/protocol.js";
import type { AheadOp, HeldObservation } from "./callFacts.js";
import type { SessionRecord } from "./sessions.js";
import { sameShownBefore } from "./shownBefore.js";

/**
 * The answer of an observation sent ahead of the call's authorization (ToolDef.observeAhead),
 * for the authorized call: read at most once, and only for exactly the op, session, expectation
 * and walk it went with (a grant that began or changed meanwhile, another session, another
 * instance, other limits: dropped, and the call asks afresh).
 */

const taken = new WeakSet<HeldObservation>();

/** The same window, process instance and windows shown when the grant began. */
export function sameExpectation(a: TargetExpectation, b: TargetExpectation): boolean {
  return (
    a.hwnd === b.hwnd &&
    sameInstance(a.instance, b.instance) &&
    sameShownBefore(a.shown_before ?? [], b.shown_before ?? [])
  );
}

/** Besides the expectation and `ahead`, the walk's arguments (limits, filters, deadline): all plain values. */
function sameLimits(a: Omit<OpArgs<AheadOp>, "ahead">, b: OpArgs<AheadOp>): boolean {
  const skip = (k: string) => k === "target" || k === "ahead";
  const ka = Object.keys(a).filter((k) => !skip(k));
  const kb = Object.keys(b).filter((k) => !skip(k));
  const va = a as Record<string, unknown>;
  const vb = b as Record<string, unknown>;
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(vb, k) && Object.is(va[k], vb[k]));
}

/** The same identity's session on the same instance and window (its tag and key may be new). */
function sameWindowOf(a: SessionRecord, b: SessionRecord): boolean {
  return a.client === b.client && a.instanceKey === b.instanceKey && a.hwnd === b.hwnd;
}

export function aheadFits(
  held: HeldObservation,
  session: SessionRecord,
  op: AheadOp,
  args: OpArgs<AheadOp>,
): boolean {
  return (
    held.op === op &&
    held.session.tag === session.tag &&
    held.session.key === session.key &&
    sameExpectation(held.args.target, args.target) &&
    sameLimits(held.args, args)
  );
}

/**
 * The held answer when it fits; null when there is none, it does not fit, or the worker could
 * not answer it as sent ahead (no open session, a refused check: the authorized call's own
 * request then gets the answer, and the refusal, that it gets). A crashed or hung worker is
 * the call's answer: asking again would only wait for it again.
 */
export async function takeAhead<K extends AheadOp>(
  held: HeldObservation | null,
  session: SessionRecord,
  op: K,
  args: OpArgs<K>,
): Promise<{ answer: OpResult<K> } | null> {
  if (held === null || taken.has(held)) return null;
  taken.add(held);
  if (!aheadFits(held, session, op, args)) {
    // The worker died under the walk sent for this very call on this window: the crash forgot
    // the session's tags, so the call's session is a new record, and asking again would start a
    // restarted worker on the same provider. The crash is the answer, as it is for a fit.
    const lost = held.lost();
    if (lost !== null && sameWindowOf(held.session, session)) throw uiError(lost);
    held.drop();
    return null;
  }
  try {
    // The op is the one it was sent with (aheadFits), so is its answer.
    return { answer: (await held.result) as OpResult<K> };
  } catch (e) {
    if (isUiError(e) && (e.code === "worker_crashed" || e.code === "worker_timeout")) throw e;
    return null;
  }
}
