// A scripted MCP client built on the TypeScript SDK (v1 `@modelcontextprotocol/sdk` or v2
// `@modelcontextprotocol/client`), so the tests can see Boxwright exactly as TS-based hosts do.
//
//   node mcp_client.cjs --sdk v1|v2 (--http URL [--header 'Name: value']... | --stdio CMD ARG...)
//
// Reads a plan (a JSON array of steps) on stdin and prints one JSON line per step:
//   {"op": "tools"}                          -> tools/list
//   {"op": "call", "name": N, "args": {...}} -> tools/call (v1 validates structuredContent here)
//   {"op": "prompt", "name": N}              -> prompts/get
//   {"op": "resource", "uri": U}             -> resources/read
//   {"op": "capabilities"}                   -> what initialize advertised
// Each line is {"ok": true, "result": ...} or {"ok": false, "error": {"name", "message", "code"}}.
// A transport that dies mid-plan shows as errors on the remaining steps and "closed": true at the end.
// Modules are found through NODE_PATH (set by the tests to the installed clients).
"use strict";

function parseArgs(argv) {
  const opts = { sdk: "v1", headers: {}, http: null, stdio: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--sdk") opts.sdk = argv[++i];
    else if (a === "--http") opts.http = argv[++i];
    else if (a === "--header") {
      const h = argv[++i];
      const at = h.indexOf(":");
      opts.headers[h.slice(0, at).trim()] = h.slice(at + 1).trim();
    } else if (a === "--stdio") {
      opts.stdio = argv.slice(i + 1);
      break;
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!opts.http === !opts.stdio) throw new Error("give exactly one of --http URL or --stdio CMD ...");
  return opts;
}

function load(sdk) {
  if (sdk === "v1") {
    return {
      Client: require("@modelcontextprotocol/sdk/client/index.js").Client,
      Stdio: require("@modelcontextprotocol/sdk/client/stdio.js").StdioClientTransport,
      Http: require("@modelcontextprotocol/sdk/client/streamableHttp.js").StreamableHTTPClientTransport,
    };
  }
  if (sdk === "v2") {
    const client = require("@modelcontextprotocol/client");
    return {
      Client: client.Client,
      Stdio: require("@modelcontextprotocol/client/stdio").StdioClientTransport,
      Http: client.StreamableHTTPClientTransport,
    };
  }
  throw new Error(`unknown sdk ${sdk}`);
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

function describe(err) {
  return { name: err && err.name, message: String((err && err.message) || err), code: err && err.code };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const plan = await readStdin();
  const { Client, Stdio, Http } = load(opts.sdk);
  const transport = opts.http
    ? new Http(new URL(opts.http), { requestInit: { headers: opts.headers } })
    : new Stdio({ command: opts.stdio[0], args: opts.stdio.slice(1), env: process.env, stderr: "inherit" });
  let closed = false;
  transport.onclose = () => {
    closed = true;
  };
  const client = new Client({ name: `boxwright-compat-${opts.sdk}`, version: "1.0.0" });
  client.onclose = () => {
    closed = true;
  };
  await client.connect(transport);
  for (const step of plan) {
    const timeout = { timeout: step.timeoutMs || 60_000 };
    let line;
    try {
      let result;
      if (step.op === "tools") result = await client.listTools(undefined, timeout);
      else if (step.op === "call") result = await client.callTool({ name: step.name, arguments: step.args || {} }, undefined, timeout);
      else if (step.op === "prompt") result = await client.getPrompt({ name: step.name, arguments: {} }, timeout);
      else if (step.op === "resource") result = await client.readResource({ uri: step.uri }, timeout);
      else if (step.op === "capabilities") result = client.getServerCapabilities();
      else throw new Error(`unknown op ${step.op}`);
      line = { ok: true, result };
    } catch (err) {
      line = { ok: false, error: describe(err) };
    }
    process.stdout.write(JSON.stringify(line) + "\n");
  }
  process.stdout.write(JSON.stringify({ closed }) + "\n");
  await client.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`mcp_client failed: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  },
);
