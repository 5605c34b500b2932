#!/usr/bin/env node
// Every verb loads only its own modules: `manager` and `broker` start without the server stack.
import { createRequire } from "node:module";
import { type CommandLine, parseCommandLine, usage, verbUsage } from "./cli/args.js";

function packageVersion(): string {
  return (createRequire(import.meta.url)("../package.json") as { version: string }).version;
}

/**
 * A reader that closed the pipe (`doctor | head -1`) ends the verb quietly. serve is left out:
 * its stdout is the MCP connection, and its own shutdown handles a client that went away.
 */
function quietOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EPIPE") process.exit(process.exitCode ?? 0);
      throw e;
    });
  }
}

async function run(cl: Extract<CommandLine, { kind: "run" }>): Promise<number> {
  // Flags win over the environment; setting them here reaches the workers and dialogs too.
  Object.assign(process.env, cl.env);
  if (cl.verb !== "serve") quietOnClosedPipe();
  switch (cl.verb) {
    case "serve":
      return (await import("./cli/serve.js")).serve(cl.forwarded);
    case "demo":
      return (await import("./cli/demo.js")).runDemo([]);
    case "doctor":
      return (await import("./cli/doctor.js")).runDoctor({ json: cl.values.json === true });
    case "validate-policy":
    case "validate-profile":
    case "validate-revocations": {
      const file = cl.positionals[0];
      const r =
        cl.verb === "validate-policy"
          ? (await import("./supervisor/policy/validateCli.js")).validatePolicyFile(file)
          : cl.verb === "validate-profile"
            ? (await import("./supervisor/profiles/profile.js")).validateProfileFile(file)
            : (await import("./remote/revocation.js")).validateRevocationFile(file);
      for (const line of r.lines) (r.ok ? process.stdout : process.stderr).write(`${line}\n`);
      return r.ok ? 0 : 1;
    }
    case "manager": {
      const { runManager } = await import("./lease/manager.js");
      return runManager([...cl.positionals, ...cl.forwarded]);
    }
    case "sandbox":
      return (await import("./cli/sandbox.js")).runSandbox(cl.positionals, cl.values);
    case "broker": {
      const { runBroker } = await import("./lease/broker.js");
      return runBroker();
    }
  }
}

async function main(argv: string[]): Promise<number> {
  const cl = parseCommandLine(argv);
  switch (cl.kind) {
    case "version":
      process.stdout.write(`${packageVersion()}\n`);
      return 0;
    case "help":
      quietOnClosedPipe();
      process.stdout.write(cl.text);
      return 0;
    case "usage_error":
      process.stderr.write(`uiinspect-mcp: ${cl.message}\n\n${cl.verb ? verbUsage(cl.verb) : usage()}`);
      return 2;
    case "run":
      return run(cl);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // serve returns only when the connection closed; give stdio a tick to flush.
    process.exitCode = code;
    if (code !== 0 || process.argv[2] !== undefined) setImmediate(() => process.exit(code));
  },
  (e: unknown) => {
    process.stderr.write(`uiinspect-mcp: ${e instanceof Error ? e.message : "failed"}\n`);
    process.exit(2);
  },
);
