// Drives `lazy mcp` with the official TypeScript MCP SDK client, the one
// most MCP hosts embed. Run by e2e's TestTypeScriptSDKClient:
//
//   node mcp-ts-client.cjs CONFIG.json
//
// CONFIG: {sdk, lazy, repo, fast, slow, hang, slowSeconds} drives the
// builder's `lazy mcp`; with mode "agent" and task it drives an agent
// turn's `lazy mcp-proxy` (the token comes in the environment). fast,
// slow and hang are exec-agent command lines. The SDK client validates every
// structuredContent against the tool's outputSchema itself (callTool
// does, once listTools has cached the validators); this script adds the
// checks the SDK does not make and prints one JSON line per finding:
// {"ok": "..."} or {"fail": "..."}; it exits 1 on any failure.
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const req = createRequire(path.join(cfg.sdk, 'package.json'));
const { Client } = req('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = req('@modelcontextprotocol/sdk/client/stdio.js');

let failed = false;
const ok = (msg) => console.log(JSON.stringify({ ok: msg }));
const fail = (msg) => { failed = true; console.log(JSON.stringify({ fail: msg })); };
const check = (cond, msg) => (cond ? ok(msg) : fail(msg));

async function main() {
  const transport = new StdioClientTransport({
    command: cfg.lazy, args: ['-C', cfg.repo, cfg.mode === 'agent' ? 'mcp-proxy' : 'mcp'], env: process.env, stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr.on('data', (b) => { stderr += b.toString(); });
  const client = new Client({ name: 'lazy-ts-e2e', version: '1' });
  await client.connect(transport);

  const instructions = client.getInstructions() || '';
  check(/lazy_create/.test(instructions) && /lazy_wait/.test(instructions) && /lazy_accept/.test(instructions), 'server instructions explain the task loop');

  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  for (const t of tools) {
    const a = t.annotations || {};
    check(t.outputSchema && t.outputSchema.type === 'object', `${t.name} declares an object outputSchema`);
    check(['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'].every((k) => typeof a[k] === 'boolean'), `${t.name} has all four annotations`);
    check(typeof t.description === 'string' && t.description.length > 40, `${t.name} has a description`);
  }
  const listStatus = byName.lazy_list.inputSchema.properties.status;
  check(JSON.stringify(listStatus).includes('"enum"') && JSON.stringify(listStatus).includes('blocked'), 'lazy_list takes a status enum');
  const templates = await client.listResourceTemplates();
  check(templates.resourceTemplates.some((r) => r.uriTemplate === 'lazy://task/{task}'), 'the task resource template is listed');

  // callTool validates structuredContent against the outputSchema and
  // throws when it does not match; an error result is returned as such.
  const called = new Set();
  async function call(name, args, opts) {
    called.add(name);
    const res = await client.callTool({ name, arguments: args }, undefined, opts);
    if (res.isError) throw new Error(`${name}: ${res.content.map((c) => c.text).join('')}`);
    check(res.structuredContent && typeof res.structuredContent === 'object' && !Array.isArray(res.structuredContent), `${name} returns an object`);
    check(res.content.some((c) => c.type === 'text' && c.text.length > 0), `${name} returns readable text`);
    return res.structuredContent;
  }
  async function refused(name, args, want) {
    called.add(name);
    const res = await client.callTool({ name, arguments: args });
    const text = res.content.map((c) => c.text).join('');
    check(res.isError && want.test(text), `${name} refuses with a clear error: ${text}`);
  }

  if (cfg.mode === 'agent') {
    await agent(client, byName, call, refused);
    check(stderr.trim() === '', `nothing leaked to stderr: ${JSON.stringify(stderr.slice(0, 300))}`);
    await client.close();
    return;
  }
  const empty = await call('lazy_list', { status: ['blocked'] });
  check(Array.isArray(empty.tasks) && empty.tasks.length === 0, 'an empty list is []');

  const main = (await call('lazy_create', { title: 'TS client task', goal: 'write a file' })).task;
  await call('lazy_edit', { task: main.slug, title: 'TS client task, edited' });
  await call('lazy_start', { task: main.slug, command: cfg.fast });
  const waited = await call('lazy_wait', { task: main.slug });
  check(waited.task.status === 'blocked' && waited.still_running === false, 'lazy_wait returns the parked task');
  const shown = await call('lazy_show', { task: main.slug });
  check(Array.isArray(shown.comment_list) && Array.isArray(shown.journal) && shown.history.every((h) => /^[0-9a-f]{40}$/.test(h.commit)), 'lazy_show has [] lists and hex history commits');
  const res = await client.readResource({ uri: `lazy://task/${main.slug}` });
  check(JSON.parse(res.contents[0].text).slug === main.slug, 'the task resource reads the task');
  const diff = await call('lazy_diff', { task: main.slug, patch: true });
  check(diff.files.length > 0 && diff.patch.includes('diff --git'), 'lazy_diff has files and a patch');
  const logs = await call('lazy_logs', { task: main.slug, lines: 5 });
  check(Array.isArray(logs.lines), 'lazy_logs has lines');
  await call('lazy_comment', { task: main.slug, text: 'from the TS client' });
  await call('lazy_journal', { task: main.slug, rationale: 'kept it small', decisions: ['one file'], deferrals: [] });
  const asked = await call('lazy_ask', { task: main.slug, question: 'what did you do?' });
  check(asked.status === 'blocked' && asked.answer.length > 0, 'lazy_ask answers');
  await call('lazy_sync', { task: main.slug });
  await call('lazy_wait', { task: main.slug });
  await refused('lazy_resume', { task: main.slug }, /interrupted|resume/i);
  await refused('lazy_submit', { task: main.slug }, /forge|remote|origin/i);
  const sub = (await call('lazy_create', { title: 'TS subtask' })).task;
  await call('lazy_reparent', { task: sub.slug, parent: main.slug });
  await call('lazy_close', { task: sub.slug, reason: 'not needed' });
  const reopened = await call('lazy_reopen', { task: sub.slug });
  check(reopened.task.status === 'backlog', 'lazy_reopen brings a never-started task back to backlog');
  await call('lazy_close', { task: sub.slug, reason: 'closed for good' });
  // approved_files is the spec's name, approve_files its alias: both at
  // once must name the same files.
  await refused('lazy_unblock', { task: main.slug, feedback: 'x', approved_files: ['a.txt'], approve_files: ['b.txt'] }, /approved_files and approve_files/);
  await call('lazy_unblock', { task: main.slug, feedback: 'one more pass', approved_files: [] });
  await call('lazy_wait', { task: main.slug });

  // A turn that hangs: stopped.
  const hung = (await call('lazy_create', { title: 'TS hung task' })).task;
  await call('lazy_start', { task: hung.slug, command: cfg.hang });
  const stopped = await call('lazy_stop', { task: hung.slug, reason: 'taking too long' });
  check(stopped.task.status === 'blocked', 'lazy_stop parks the task');
  const rejected = await call('lazy_reject', { task: hung.slug, reason: 'hung' });
  check(rejected.task.status === 'abandoned' && Array.isArray(rejected.cleanup), 'lazy_reject abandons it');

  // A long turn with progress: the client's 5 s timeout is reset by
  // progress notifications, so a wait of slowSeconds completes.
  const slow = (await call('lazy_create', { title: 'TS slow task' })).task;
  await call('lazy_start', { task: slow.slug, command: cfg.slow });
  const progress = [];
  const t0 = Date.now();
  const long = await call('lazy_wait', { task: slow.slug, timeout_seconds: 120 }, {
    timeout: 5000, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p),
  });
  const took = (Date.now() - t0) / 1000;
  check(long.task.status === 'blocked' && long.still_running === false, `a ${took.toFixed(1)} s wait completes under a 5 s client timeout`);
  check(took >= cfg.slowSeconds - 3, `the wait really waited (${took.toFixed(1)} s)`);
  check(progress.length >= 3, `progress arrived (${progress.length} notifications)`);
  check(progress.some((p) => /working/.test(p.message || '')), `progress carries the status: ${JSON.stringify(progress.map((p) => p.message).slice(0, 3))}`);

  // A client without progress: still_running, then call again.
  const slow2 = (await call('lazy_create', { title: 'TS slow task two' })).task;
  await call('lazy_start', { task: slow2.slug, command: cfg.slow });
  let w = await call('lazy_wait', { task: slow2.slug, timeout_seconds: 2 });
  check(w.still_running === true && /slow-task-two/.test(w.waiting_on) && w.task.status === 'working', `a short wait returns still_running: ${w.waiting_on}`);
  let calls = 1;
  while (w.still_running && calls < 60) {
    w = await call('lazy_wait', { task: slow2.slug, timeout_seconds: 2 });
    calls++;
  }
  check(w.still_running === false && w.task.status === 'blocked' && w.last_turn, `calling again completes (${calls} calls)`);

  const accepted = await call('lazy_accept', { task: main.slug }, {
    onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true,
  });
  check(accepted.task.status === 'complete' && /^[0-9a-f]{40}$/.test(accepted.commit), 'lazy_accept merges');
  check(progress.some((p) => /^accept (step|plan|:)/.test(p.message || '')), `accept narration arrives as progress: ${JSON.stringify(progress.map((p) => p.message).slice(-3))}`);

  const queues = await call('lazy_queue', {});
  check(Array.isArray(queues.queues) && queues.queues.some((q) => q.left.some((l) => l.slug === main.slug && l.outcome === 'landed')), 'lazy_queue says the accept landed');

  const costs = await call('lazy_cost', { by: 'outcome' });
  check(costs.by === 'outcome' && Array.isArray(costs.rows) && costs.rows.some((r) => r.key === 'accepted') && typeof costs.total.cost_usd === 'number', 'lazy_cost reports by outcome');

  // The slow tasks parked after their turns: the inbox lists them, each
  // with the command that answers it.
  const inbox = await call('lazy_inbox', {});
  check(Array.isArray(inbox.items) && inbox.items.some((it) => it.slug === slow.slug && it.kind === 'blocked' && it.command === `lazy accept ${slow.slug}`),
    `lazy_inbox lists a parked task and the command that answers it: ${JSON.stringify(inbox.items.map((it) => [it.slug, it.kind, it.command]))}`);

  for (const t of tools) check(called.has(t.name), `${t.name} was called`);
  check(stderr.trim() === '', `nothing leaked to stderr: ${JSON.stringify(stderr.slice(0, 300))}`);
  await client.close();
}

// agent drives an agent's proxy: its own task, its journal and progress,
// and a subtask whose long turn it waits for with progress relayed from
// the daemon.
async function agent(client, byName, call, refused) {
  check(byName.lazy_update_progress && !byName.lazy_reparent, 'the agent has lazy_update_progress and no lazy_reparent');
  const own = await call('lazy_show', { task: cfg.task });
  check(own.status === 'working' && Array.isArray(own.journal), 'the agent reads its own task');
  const j = await call('lazy_journal', { rationale: 'from the TS agent client', decisions: ['use the proxy'] });
  check(j.entry.actor === 'agent', 'the journal entry is stamped agent');
  await call('lazy_update_progress', { message: 'checking the proxy' });
  const listed = await call('lazy_list', {});
  check(listed.tasks.length === 1 && listed.count === 1, 'the agent lists its own subtree');
  await refused('lazy_accept', { task: cfg.task }, /scope/);
  const child = (await call('lazy_create', { title: 'TS agent child' })).task;
  check(child.parent === own.id, 'the agent creates its own subtask');
  await call('lazy_start', { task: child.slug, command: cfg.slow });
  const progress = [];
  const t0 = Date.now();
  const w = await call('lazy_wait', { task: child.slug, timeout_seconds: 120 }, {
    timeout: 5000, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p),
  });
  const took = (Date.now() - t0) / 1000;
  check(w.task.status === 'blocked' && took >= cfg.slowSeconds - 3, `through the proxy a ${took.toFixed(1)} s wait completes under a 5 s client timeout`);
  check(progress.length >= 3 && progress.some((p) => /working/.test(p.message || '')), `progress is relayed from the daemon (${progress.length}): ${JSON.stringify(progress.map((p) => p.message).slice(0, 3))}`);
  const logs = await call('lazy_logs', { task: child.slug });
  check(logs.lines.some((l) => /slow turn done/.test(l)), 'the agent reads its subtask\'s log');
  await call('lazy_close', { task: child.slug, reason: 'done checking' });
}

main().then(() => process.exit(failed ? 1 : 0), (e) => { fail(String(e && e.stack || e)); process.exit(1); });
