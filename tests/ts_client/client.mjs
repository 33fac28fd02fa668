// A third-party MCP client for the test suite: the official TypeScript SDK's Client against a running
// `memdex serve`, over stdio or Streamable HTTP. It walks every feature memdex offers and prints one JSON
// summary on stdout; tests/test_ts_client.py starts it and asserts the summary.
//
//   node client.mjs stdio COMMAND [ARG...]   spawn the server and talk to it over stdio
//   node client.mjs http URL                 connect to a server already listening at URL (…/mcp);
//                                            $MCP_BEARER_TOKEN, when set, goes in an Authorization header
//
// The workspace is expected to be a copy of examples/workspace. Exit code 0 with the summary, 1 with
// {"error": ...} when something the walk relies on failed outright.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, ...rest] = process.argv.slice(2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function makeTransport() {
  if (mode === "stdio" && rest.length > 0) {
    return new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: { ...process.env }, stderr: "inherit" });
  }
  if (mode === "http" && rest.length === 1) {
    const token = process.env.MCP_BEARER_TOKEN;
    const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
    return new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit });
  }
  throw new Error("usage: node client.mjs stdio COMMAND [ARG...] | node client.mjs http URL");
}

const text = (result) => (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

/** A tool call's outcome: a result (error or not), or the JSON-RPC error it was refused with. */
async function outcome(client, name, args) {
  try {
    const result = await client.callTool({ name, arguments: args });
    return { isError: result.isError === true, text: text(result).slice(0, 300), structured: result.structuredContent ?? null };
  } catch (error) {
    return { rpcError: error.code ?? null, text: String(error.message).slice(0, 300) };
  }
}

/** memory_search until the background index has an answer (the handshake does not wait for the index). */
async function searchUntilFound(client, query, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await client.callTool({ name: "memory_search", arguments: { query } });
    const answer = result.structuredContent;
    if (result.isError || answer.results.length > 0 || Date.now() > deadline) {
      return { isError: result.isError === true, mode: answer?.mode ?? null, paths: (answer?.results ?? []).map((r) => r.path) };
    }
    await sleep(100);
  }
}

async function main() {
  const summary = { transport: mode };
  const client = new Client({ name: "memdex-ts-client-test", version: "1.0.0" });
  const updates = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
    updates.push(notification.params.uri);
  });

  await client.connect(makeTransport());
  const capabilities = client.getServerCapabilities() ?? {};
  summary.server = client.getServerVersion()?.name ?? null;
  summary.capabilities = {
    tools: "tools" in capabilities,
    prompts: "prompts" in capabilities,
    resources: "resources" in capabilities,
    subscribe: capabilities.resources?.subscribe === true,
  };
  summary.hasInstructions = (client.getInstructions() ?? "").length > 0;

  summary.tools = (await client.listTools()).tools.map((t) => t.name).sort();

  summary.search = await searchUntilFound(client, "PostgreSQL billing service");
  const got = await client.callTool({ name: "memory_get", arguments: { path: "MEMORY.md", from: 1, lines: 1 } });
  summary.get = { isError: got.isError === true, text: got.structuredContent?.text ?? null, to: got.structuredContent?.to ?? null };

  const prompts = await client.listPrompts();
  summary.prompts = prompts.prompts.map((p) => p.name).sort();
  const consolidate = await client.getPrompt({ name: "memory_consolidate", arguments: {} });
  const consolidateText = consolidate.messages.map((m) => (m.content.type === "text" ? m.content.text : "")).join("\n");
  summary.consolidatePrompt = {
    mentionsEdit: consolidateText.includes("memory_edit"),
    hasMemoryHash: /## MEMORY\.md \(hash [0-9a-f]{16}, /.test(consolidateText),
    logs: (consolidateText.match(/^## memory\/\d{4}-\d{2}-\d{2}\.md$/gm) ?? []).length,
  };
  const flush = await client.getPrompt({ name: "memory_flush", arguments: { date: "2026-11-21", timezone: "UTC" } });
  const flushText = flush.messages.map((m) => (m.content.type === "text" ? m.content.text : "")).join("\n");
  summary.flushPrompt = {
    messages: flush.messages.length,
    roles: flush.messages.map((m) => m.role),
    mentionsNoReply: flushText.includes("NO_REPLY"),
    mentionsDailyLog: flushText.includes("memory/2026-11-21.md"),
  };

  const listed = await client.listResources();
  summary.resources = listed.resources.map((r) => r.uri).sort();
  const read = await client.readResource({ uri: "memory://MEMORY.md" });
  summary.readMemory = { mimeType: read.contents[0]?.mimeType ?? null, firstLine: (read.contents[0]?.text ?? "").split("\n")[0] };
  const status = await client.readResource({ uri: "memory://status" });
  summary.readStatus = { mimeType: status.contents[0]?.mimeType ?? null, files: JSON.parse(status.contents[0].text).files };
  try {
    await client.readResource({ uri: "memory://no/such/file.md" });
    summary.readMissing = { rpcError: null };
  } catch (error) {
    summary.readMissing = { rpcError: error.code ?? null };
  }

  // resources/subscribe, an append to the subscribed file, the update notification; then unsubscribe.
  const token = `TSCLIENT-${process.pid}`;
  summary.token = token;
  await client.subscribeResource({ uri: "memory://MEMORY.md" });
  const appended = await client.callTool({
    name: "memory_append",
    arguments: { text: `- The TypeScript client wrote ${token}.`, target: "long_term" },
  });
  summary.append = { isError: appended.isError === true, path: appended.structuredContent?.path ?? null };
  const deadline = Date.now() + 10000;
  while (!updates.includes("memory://MEMORY.md") && Date.now() < deadline) await sleep(50);
  summary.updatedWhileSubscribed = updates.filter((u) => u === "memory://MEMORY.md").length;
  summary.appendFound = (await searchUntilFound(client, token, 10000)).paths[0] ?? null;

  // memory_edit: read the hash, replace the appended line (subscribers hear of it), then a stale hash is refused.
  const beforeEdit = updates.filter((u) => u === "memory://MEMORY.md").length;
  const current = await client.callTool({ name: "memory_get", arguments: { path: "MEMORY.md" } });
  const hash = current.structuredContent?.hash ?? null;
  const edited = await client.callTool({
    name: "memory_edit",
    arguments: { path: "MEMORY.md", oldText: `- The TypeScript client wrote ${token}.`, newText: `- The TypeScript client corrected ${token}.`, expectedHash: hash },
  });
  const editDeadline = Date.now() + 10000;
  while (updates.filter((u) => u === "memory://MEMORY.md").length === beforeEdit && Date.now() < editDeadline) await sleep(50);
  const stale = await outcome(client, "memory_edit", { path: "MEMORY.md", oldText: "# Memory", newText: "# Notes", expectedHash: hash });
  summary.edit = {
    isError: edited.isError === true,
    hashChanged: typeof hash === "string" && hash.length === 16 && edited.structuredContent?.hash !== hash,
    historyId: typeof edited.structuredContent?.id === "string",
    pending: edited.structuredContent?.pending ?? null,
    updated: updates.filter((u) => u === "memory://MEMORY.md").length > beforeEdit,
    found: (await searchUntilFound(client, `corrected ${token}`, 10000)).paths[0] ?? null,
    staleRefused: stale.isError === true && stale.text.includes("changed since you read it"),
  };
  summary.editId = edited.structuredContent?.id ?? null;
  const tools = (await client.listTools()).tools;
  const annotations = tools.find((t) => t.name === "memory_edit")?.annotations ?? {};
  summary.editAnnotations = { destructive: annotations.destructiveHint, idempotent: annotations.idempotentHint, readOnly: annotations.readOnlyHint };

  await client.unsubscribeResource({ uri: "memory://MEMORY.md" });
  const before = updates.filter((u) => u === "memory://MEMORY.md").length;
  await client.callTool({ name: "memory_append", arguments: { text: `- A second note, ${token}-2.`, target: "long_term" } });
  await sleep(1500);
  summary.updatedAfterUnsubscribe = updates.filter((u) => u === "memory://MEMORY.md").length - before;

  // Bad arguments: each an error answer, none a crash.
  summary.badArguments = {
    searchWithoutQuery: await outcome(client, "memory_search", {}),
    searchTooManyResults: await outcome(client, "memory_search", { query: "billing", maxResults: 999 }),
    getOutsideWorkspace: await outcome(client, "memory_get", { path: "../outside.md" }),
    getNotMarkdown: await outcome(client, "memory_get", { path: "notes.txt" }),
    appendBadTarget: await outcome(client, "memory_append", { text: "x", target: "elsewhere" }),
    editNotFound: await outcome(client, "memory_edit", { path: "MEMORY.md", oldText: "no such text anywhere" }),
    editDailyLog: await outcome(client, "memory_edit", { path: "memory/2026-11-18.md", oldText: "#" }),
    unknownTool: await outcome(client, "memory_delete", { path: "MEMORY.md" }),
  };
  summary.aliveAfterErrors = (await client.listTools()).tools.length === summary.tools.length;

  await client.close();
  return summary;
}

main().then(
  (summary) => {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    process.exit(0);
  },
  (error) => {
    process.stdout.write(`${JSON.stringify({ error: String(error?.stack ?? error) })}\n`);
    process.exit(1);
  },
);
