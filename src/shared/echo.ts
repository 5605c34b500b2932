/**
 * Client values quoted back in messages. An error message may say which key or name was wrong,
 * but never at the length the client chose: a 1 MB unknown key must not come back as a 2 MB
 * answer, and a control character must not forge lines in a log viewer or a dialog.
 */

/** How many code points of a client value a message may repeat. */
export const MAX_ECHO_CODE_POINTS = 64;

/**
 * Everything that does not print as itself as a visible `\u` escape (never raw): control,
 * format, private-use, unassigned and lone surrogate code points, separators other than the
 * plain space (a no-break space looks like one), and combining marks (which draw over what
 * stands before them).
 */
export function escapeControls(s: string): string {
  return s.replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Zl}\p{Zp}\p{M}]|(?! )\p{Zs}/gu, (c) => {
    const cp = c.codePointAt(0) ?? 0;
    return cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, "0")}`;
  });
}

/**
 * The first `max` code points of a value, escaped and quoted (JSON style), with "…" outside the
 * quotes when it was cut. Linear in `max`, not in the value's length.
 */
export function quoteClientValue(value: string, max = MAX_ECHO_CODE_POINTS): string {
  let out = "";
  let count = 0;
  let cut = false;
  for (const ch of value) {
    if (count === max) {
      cut = true;
      break;
    }
    out += ch;
    count++;
  }
  return `${escapeControls(JSON.stringify(out))}${cut ? "…" : ""}`;
}
