#!/usr/bin/env node
// Every verb loads only its own modules: `manager` and `broker` start without the server stack.

const USAGE = `usage: uiinspect-mcp [command]

  serve                      run the MCP server on stdio (default)
  serve --http HOST:PORT     authenticated remote mode (mTLS and/or OAuth), see docs/remote.md
  demo                       walk the simulated desktop with a built-in MCP client
  doctor                     print what health_check says, for a person (exit 1 when unusable)
  validate-policy FILE       check a policy file (exit 0 valid, 1 invalid)
  validate-profile FILE      check a coordinate profile (exit 0 valid, 1 invalid)
  manager lease activate --hours N | status | revoke | extend --hours N
  broker                     the unattended-lease broker (started by the manager)
`;

async function main(argv: string[]): Promise<number> {
  const [verb = "serve", ...rest] = argv;
  switch (verb) {
    case "serve":
      return (await import("./cli/serve.js")).serve(rest);
    case "demo":
      return (await import("./cli/demo.js")).runDemo(rest);
    case "doctor":
      return (await import("./cli/doctor.js")).runDoctor();
    case "validate-policy":
    case "validate-profile": {
      const file = rest[0];
      if (!file || rest.length !== 1) {
        process.stderr.write(`usage: uiinspect-mcp ${verb} FILE\n`);
        return 2;
      }
      const r =
        verb === "validate-policy"
          ? (await import("./supervisor/policy/validateCli.js")).validatePolicyFile(file)
          : (await import("./supervisor/profiles/profile.js")).validateProfileFile(file);
      for (const line of r.lines) (r.ok ? process.stdout : process.stderr).write(`${line}\n`);
      return r.ok ? 0 : 1;
    }
    case "manager": {
      const { runManager } = await import("./lease/manager.js");
      return runManager(rest);
    }
    case "broker": {
      const { runBroker } = await import("./lease/broker.js");
      return runBroker();
    }
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(USAGE);
      return 0;
    default:
      process.stderr.write(USAGE);
      return 2;
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
