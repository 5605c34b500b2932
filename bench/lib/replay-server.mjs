// An MCP stdio server that answers each tools/call with a result recorded from the real server
// (bench/x11-floor.mjs records them): what the SDK's stdio transport costs for the very same
// bytes, both ends and the pipe, with none of the server's own work. That cost is part of every
// MCP call, so it is the floor's missing half when an MCP call is compared with an in-process
// floor. Argument: a JSON file { key: CallToolResult }, the key being the tool's name, plus
// ":full" when the call's `detail` is "full".
import { readFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";

const results = JSON.parse(readFileSync(process.argv[2], "utf8"));
const server = new Server({ name: "uiinspect-replay", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(CallToolRequestSchema, (req) => {
  const key = `${req.params.name}${req.params.arguments?.detail === "full" ? ":full" : ""}`;
  const r = results[key];
  if (!r) throw new McpError(-32602, `nothing recorded for ${key}`);
  return r;
});
await server.connect(new StdioServerTransport());
