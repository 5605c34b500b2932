import { describe, expect, it } from "vitest";
import { brokerEnv, inheritedNodeOptions } from "../../src/lease/brokerNodeOptions.js";

/** What a broker started by the manager inherits of the manager's Node options. */
describe("the broker's Node options", () => {
  it("keeps module hooks and source maps, in both value forms", () => {
    expect(
      inheritedNodeOptions([
        "--import",
        "file:///w/loader.mjs",
        "--require=./pnp.cjs",
        "-r",
        "./x.cjs",
        "--enable-source-maps",
        "--conditions=dev",
      ]),
    ).toEqual([
      "--import",
      "file:///w/loader.mjs",
      "--require=./pnp.cjs",
      "-r",
      "./x.cjs",
      "--enable-source-maps",
      "--conditions=dev",
    ]);
  });

  it("drops every inspector and debug option, a separate value included", () => {
    expect(
      inheritedNodeOptions([
        "--inspect",
        "--inspect-brk=9229",
        "--inspect-port",
        "9230",
        "--debug-port",
        "9231",
        "--inspect-wait",
        "--import=./ok.mjs",
      ]),
    ).toEqual(["--import=./ok.mjs"]);
  });

  it("drops options that would change what runs (eval, watch, test) and their values", () => {
    expect(
      inheritedNodeOptions([
        "-e",
        "1",
        "--eval=2",
        "--watch",
        "--test",
        "-p",
        "3",
        "--max-old-space-size",
        "64",
      ]),
    ).toEqual([]);
  });

  it("filters NODE_OPTIONS the same way, and removes it when nothing is left", () => {
    expect(brokerEnv({ A: "1", NODE_OPTIONS: "--inspect=0.0.0.0:9229 --import ./l.mjs" })).toEqual({
      A: "1",
      NODE_OPTIONS: "--import ./l.mjs",
    });
    expect("NODE_OPTIONS" in brokerEnv({ NODE_OPTIONS: "--inspect-brk" })).toBe(false);
    expect(brokerEnv({ B: "2" })).toEqual({ B: "2" });
  });
});
