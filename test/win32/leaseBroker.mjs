// Test-only entry for the Wine lease test: runs the built broker (runBroker). With a scope in
// UIINSPECT_TEST_LEASE_SCOPE (JSON) it uses that one (tests vary the hash so they do not
// collide); without, it derives its own from its token and session, as `uiinspect-mcp broker` does.
//   node.exe --import loader.mjs leaseBroker.mjs <dist url>
const dist = process.argv[2];
const { runBroker } = await import(new URL("lease/broker.js", dist).href);
const scope = process.env.UIINSPECT_TEST_LEASE_SCOPE
  ? JSON.parse(process.env.UIINSPECT_TEST_LEASE_SCOPE)
  : undefined;
runBroker({ scope }).then(
  (code) => process.exit(code),
  () => process.exit(2),
);
