import { runBroker } from "./broker.js";

/** Entry of the detached broker process (`node dist/lease/brokerMain.js`); the CLI's `broker` verb does the same. */
runBroker().then(
  (code) => process.exit(code),
  () => process.exit(2),
);
