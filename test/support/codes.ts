import { isUiError } from "../../src/shared/errors.js";

/** What a call ended with: "ok", its UiError's code, or any other error as text. */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (e) {
    return isUiError(e) ? e.code : String(e);
  }
}
