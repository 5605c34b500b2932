/**
 * The dialog's text layout, pure so it is tested in process: lines wrap at word boundaries
 * (spaces), a word longer than a line (a long path) breaks after its last '/' (or '\', '-', '_',
 * '.', ',') that fits, else at the width; nothing is ever cut. Continuation lines of an indented
 * line ("  - click: ...") keep its indentation plus two columns, so lists stay readable. Widths
 * are in code points (the dialog draws a monospace font).
 */

export const DEFAULT_COLUMNS = 100;
const BREAK_AFTER = new Set(["/", "\\", "-", "_", ".", ","]);

/** Splits one over-long word into pieces of at most `width` code points. */
function breakWord(word: string[], width: number): string[][] {
  const out: string[][] = [];
  let rest = word;
  while (rest.length > width) {
    let cut = width;
    for (let i = width; i > Math.floor(width / 3); i--) {
      if (BREAK_AFTER.has(rest[i - 1] ?? "")) {
        cut = i;
        break;
      }
    }
    out.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  out.push(rest);
  return out;
}

export function wrapLines(text: string, columns = DEFAULT_COLUMNS): string[] {
  const width = Math.max(8, Math.floor(columns));
  const out: string[] = [];
  for (const line of text.split("\n")) {
    const cps = Array.from(line);
    if (cps.length <= width) {
      out.push(line);
      continue;
    }
    const indentLen = cps.findIndex((c) => c !== " ");
    const indent = indentLen > 0 && indentLen < width / 2 ? " ".repeat(indentLen) : "";
    const hang = Array.from(`${indent}${indent.length > 0 ? "  " : ""}`);
    const words = line.slice(indent.length).split(" ");
    let cur: string[] = Array.from(indent);
    let fresh = true; // nothing but indentation on `cur` yet
    const flush = () => {
      out.push(cur.join(""));
      cur = [...hang];
      fresh = true;
    };
    for (const w of words) {
      const word = Array.from(w);
      const sep = fresh ? 0 : 1;
      if (cur.length + sep + word.length <= width) {
        if (!fresh) cur.push(" ");
        cur.push(...word);
        fresh = false;
        continue;
      }
      if (!fresh) flush();
      const room = width - cur.length;
      if (word.length <= room) {
        cur.push(...word);
        fresh = false;
        continue;
      }
      const pieces = breakWord(word, room);
      pieces.forEach((piece, i) => {
        if (i > 0) flush();
        cur.push(...piece);
        fresh = false;
      });
    }
    out.push(cur.join(""));
  }
  return out;
}

export const WAIT_TEXT = "Wait: Allow is disabled for a moment. Rest the pointer on this window.";
export const ARMED_TEXT = "Click Allow to approve. Keys can move the focus and deny, never approve.";
export const KEYBOARD_TEXT = "Allow needs a click with the pointer; keys can only deny.";

/** The status line under the text: whether Allow takes a click yet, and why a key did nothing. */
export function statusLine(armed: boolean, keyboardRefused: boolean): string {
  if (!armed) return WAIT_TEXT;
  return keyboardRefused ? KEYBOARD_TEXT : ARMED_TEXT;
}
