// The official AG-UI client against POST /api/agent/agui (tests/integration/test_agui_client.py):
// a run that stops on an approval (an interrupt), then the same agent resumes it (approved).
// Usage: node interrupt_resume.mjs <endpoint URL> <bearer token> <prompt>; prints one JSON line.
import { HttpAgent } from '@ag-ui/client';

const [url, token, prompt] = process.argv.slice(2);
const agent = new HttpAgent({
  url,
  headers: { Authorization: `Bearer ${token}` },
  threadId: 'thread-node',
  initialMessages: [{ id: 'user-1', role: 'user', content: prompt }],
});
const seen = [];
const subscriber = { onEvent: ({ event }) => { seen.push(event.type); } };
const first = await agent.runAgent({ runId: 'node-run-1' }, subscriber);
const interrupts = agent.pendingInterrupts.map((i) => ({ ...i }));
const firstEvents = seen.splice(0);
if (interrupts.length !== 1) throw new Error(`expected one interrupt, got ${JSON.stringify(interrupts)}`);
const second = await agent.runAgent(
  { runId: 'node-run-2', resume: [{ interruptId: interrupts[0].id, status: 'resolved' }] }, subscriber);
console.log(JSON.stringify({
  interrupts,
  firstEvents,
  secondEvents: seen,
  firstResult: first.result ?? null,
  secondResult: second.result ?? null,
  pendingAfter: agent.pendingInterrupts,
  messages: agent.messages,
}));
