// A small MCP server on the official TypeScript SDK (the one the reference servers are built
// on), for what they cannot be made to do on demand: change their tool list, crash, hang.
//   add_tool {name}  registers a tool `name` (which answers "I am <name>") and sends
//                    notifications/tools/list_changed before answering
//   echo {text}      answers text
//   crash            exits at once with status 3, answering nothing
//   slow {ms}        answers after ms; writes "started" and, when the client cancels the
//                    request, "cancelled" as lines to $FIXTURE_LOG
// $MCP_SDK_DIR is the SDK's dist/esm directory (under .ci/node/node_modules).
import { pathToFileURL } from "node:url";
import { appendFileSync } from "node:fs";

const sdk = process.env.MCP_SDK_DIR;
const load = (path) => import(pathToFileURL(`${sdk}/${path}`).href);
const { Server } = await load("server/index.js");
const { StdioServerTransport } = await load("server/stdio.js");
const { ListToolsRequestSchema, CallToolRequestSchema } = await load("types.js");

const note = (line) => {
  if (process.env.FIXTURE_LOG) appendFileSync(process.env.FIXTURE_LOG, `${line}\n`);
};
const object = (properties, required) => ({ type: "object", properties, required });
const tools = [
  { name: "add_tool", description: "Adds a tool.", inputSchema: object({ name: { type: "string" } }, ["name"]) },
  { name: "echo", description: "Echoes text.", inputSchema: object({ text: { type: "string" } }, ["text"]) },
  { name: "crash", description: "Exits at once.", inputSchema: object({}, []) },
  { name: "slow", description: "Answers after ms.", inputSchema: object({ ms: { type: "number" } }, ["ms"]) },
];
const text = (t) => ({ content: [{ type: "text", text: t }] });

const server = new Server(
  { name: "troupe-fixture", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } },
);
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const args = request.params.arguments ?? {};
  switch (request.params.name) {
    case "add_tool":
      tools.push({ name: args.name, description: `Added at run time.`, inputSchema: object({}, []) });
      await server.sendToolListChanged();
      return text(`added ${args.name}`);
    case "echo":
      return text(String(args.text));
    case "crash":
      process.exit(3);
    case "slow":
      note("started");
      return await new Promise((resolve) => {
        const timer = setTimeout(() => resolve(text(`slept ${args.ms} ms`)), Number(args.ms));
        extra.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          note("cancelled");
          resolve(text("cancelled"));
        });
      });
    default:
      if (tools.some((t) => t.name === request.params.name)) return text(`I am ${request.params.name}`);
      return { content: [{ type: "text", text: `unknown tool ${request.params.name}` }], isError: true };
  }
});
await server.connect(new StdioServerTransport());
