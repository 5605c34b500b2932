/**
 * The one state vocabulary of inspect_tree / find_elements (docs/roles.md, "States"). Platforms
 * map what they know (AT-SPI state bits, UIA properties, the fake scenario) onto it; anything
 * else is dropped, so a provider can never put free text into `states`. States describe an
 * element, never its value: there is no state that carries text or a number.
 */
export const STATES = [
  "enabled",
  "disabled",
  "focusable",
  "focused",
  "checked",
  "mixed",
  "selected",
  "expanded",
  "collapsed",
  "editable",
  "readonly",
  "offscreen",
  "modal",
  "busy",
  "required",
  "invalid",
] as const;
export type ElementState = (typeof STATES)[number];

const STATE_SET: ReadonlySet<string> = new Set(STATES);

export function isElementState(s: string): s is ElementState {
  return STATE_SET.has(s);
}

/** Pairs of which at most one may hold; the first of a conflicting pair wins. */
const EXCLUSIVE: ReadonlyArray<[ElementState, ElementState]> = [
  ["disabled", "enabled"],
  ["mixed", "checked"],
  ["expanded", "collapsed"],
  ["readonly", "editable"],
];

/**
 * Raw states → the vocabulary: unknown names dropped, duplicates removed, exclusive pairs
 * settled, in vocabulary order (so a state set compares equal as an array).
 */
export function normalizeStates(raw: Iterable<string>): ElementState[] {
  const have = new Set<string>();
  for (const s of raw) {
    const t = s.trim().toLowerCase();
    if (STATE_SET.has(t)) have.add(t);
  }
  for (const [win, lose] of EXCLUSIVE) if (have.has(win)) have.delete(lose);
  return STATES.filter((s) => have.has(s));
}

/** The states implied by the three facts every provider reports, merged with its own. */
export function statesOf(facts: {
  enabled: boolean;
  focused: boolean;
  offscreen: boolean;
  states?: readonly string[] | undefined;
}): ElementState[] {
  const raw: string[] = [...(facts.states ?? [])];
  raw.push(facts.enabled ? "enabled" : "disabled");
  if (facts.focused) raw.push("focused");
  if (facts.offscreen) raw.push("offscreen");
  // "disabled" wins over "enabled" in normalizeStates: a disabled element is never reported enabled.
  return normalizeStates(raw);
}
