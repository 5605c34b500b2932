import { z } from "zod";
import type { DialogReport } from "../../../shared/consentReport.js";
import { announceDialog } from "./presence.js";
import { ConsentWindow } from "./window.js";

/**
 * Entry of the trusted dialog's child process (started by showTrustedDialog with node's own
 * absolute path and this file's absolute path: nothing is looked up on PATH). It reads one JSON
 * request line on stdin, shows the window, writes a `{report}` line whenever what it ignored
 * changes, and one `{answer, report}` line at the end on stdout. stdin
 * closing (the parent went away) or SIGTERM closes the window: a denial.
 */

const RequestSchema = z
  .object({
    title: z.string().min(1).max(200),
    text: z.string().min(1).max(20_000),
    timeout_ms: z.number().int().min(100).max(3_600_000),
    allow_injected: z.boolean(),
  })
  .strict();

function readRequestLine(): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const onData = (d: Buffer) => {
      buf += d.toString("utf8");
      const nl = buf.indexOf("\n");
      if (nl >= 0) {
        process.stdin.off("data", onData);
        resolve(buf.slice(0, nl));
      }
    };
    process.stdin.on("data", onData);
    process.stdin.once("end", () => reject(new Error("no request")));
  });
}

async function main(): Promise<void> {
  const req = RequestSchema.parse(JSON.parse(await readRequestLine()));
  const stop = new AbortController();
  process.stdin.once("end", () => stop.abort());
  process.stdin.once("close", () => stop.abort());
  process.stdin.resume();
  process.once("SIGTERM", () => stop.abort());
  const unannounce = announceDialog(process.env);
  process.once("exit", unannounce);
  let answer: string;
  let report: DialogReport;
  try {
    // What the dialog ignores reaches the parent as it happens, so a timeout can say why.
    const w = new ConsentWindow({
      title: req.title,
      text: req.text,
      timeoutMs: req.timeout_ms,
      allowInjected: req.allow_injected,
      onReport: (r) => process.stdout.write(`${JSON.stringify({ report: r })}\n`),
    });
    answer = await w.run(stop.signal);
    report = w.report();
  } finally {
    unannounce();
  }
  process.stdout.write(`${JSON.stringify({ answer, report })}\n`);
}

main().then(
  () => process.exit(0),
  () => {
    process.stdout.write(`${JSON.stringify({ error: "dialog_failed" })}\n`);
    process.exit(2);
  },
);
