// Test-only entry for the Wine lease test: runs the built broker (runBroker) with a scope the
// test computed natively. Wine 8's whoami.exe ignores /user and its tasklist.exe prints nothing,
// so endpoint.ts's windowsIdentity() cannot resolve a scope under Wine (it does on Windows).
//   node.exe --import loader.mjs leaseBroker.mjs <dist url>   (scope JSON in UIINSPECT_TEST_LEASE_SCOPE)
const dist = process.argv[2];
const { runBroker } = await import(new URL("lease/broker.js", dist).href);
const scope = JSON.parse(process.env.UIINSPECT_TEST_LEASE_SCOPE ?? "null");
runBroker({ scope }).then(
  (code) => process.exit(code),
  () => process.exit(2),
);
