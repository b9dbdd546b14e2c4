// Chat: POST /api/agent/run/stream read with fetch + ReadableStream, drawn as it arrives. The
// thread's earlier runs (and a run that was streaming when the page was reloaded) are drawn from
// their event logs, following those still at work.

import {callJson, followRun, streamNdjson} from '../api.js';
import {$, clear, h} from '../dom.js';
import {showError} from '../errors.js';
import {RunView} from '../runview.js';
import {load, promptOf, rememberPrompt, save} from '../store.js';

const HISTORY_RUNS = 10;

export function mountChat() {
  const form = $('#chat-form');
  const threadInput = $('#chat-thread');
  const threadList = $('#chat-threads');
  const contextInput = $('#chat-context-type');
  const supersede = $('#chat-supersede');
  const transcript = $('#chat-transcript');
  const errors = $('#chat-errors');
  const promptInput = $('#chat-prompt');
  const sendButton = $('#chat-send');
  const examples = $('#chat-examples');
  let loads = new AbortController();
  let loadedFor = null;

  /** Keep the newest event in sight: the transcript scrolls (and, on a narrow window where it does
   * not, the page), also when a decided run's resumed answer arrives. */
  function scrollToEnd() {
    transcript.scrollTop = transcript.scrollHeight;
    const last = transcript.lastElementChild;
    if (last && transcript.scrollHeight <= transcript.clientHeight + 1 && !transcript.closest('.view').hidden) {
      last.scrollIntoView({block: 'end'});
    }
  }

  function persist(ev, view) {
    scrollToEnd();
    if (!view.runId) return;
    if (ev.type === 'status' && view.threadId && threadInput.value !== view.threadId) {
      threadInput.value = view.threadId;
      save('thread', view.threadId);
      loadedFor = view.threadId; // what the transcript shows: no reload when the view is shown again
    }
    save('active', view.final ? null : {runId: view.runId, threadId: view.threadId, seq: view.lastSeq});
  }

  async function follow(view, after) {
    try {
      await followRun(view.runId, after, (ev) => view.handle(ev), {signal: loads.signal});
    } catch (err) {
      showError(errors, err, `following ${view.runId}`);
    }
  }

  function newView(options) {
    return new RunView({...options, onEvent: persist, onDecided: (resp, view) => follow(view, view.lastSeq)});
  }

  async function refreshThreads(signal) {
    const {runs} = await callJson('GET', '/api/agent/runs?limit=200', {signal});
    clear(threadList);
    for (const id of [...new Set(runs.map((r) => r.threadId))]) threadList.append(h('option', {value: id}));
    return runs;
  }

  /** Draw the chosen thread's last runs from their event logs (following unfinished ones). */
  async function loadThread() {
    loads.abort();
    loads = new AbortController();
    const {signal} = loads;
    clear(transcript);
    clear(errors);
    const thread = threadInput.value.trim();
    loadedFor = `${thread}`;
    let runs;
    try {
      runs = await refreshThreads(signal);
    } catch (err) {
      showError(errors, err, 'listing runs');
      return;
    }
    if (!thread) return;
    const active = load('active');
    const mine = runs.filter((r) => r.threadId === thread).slice(0, HISTORY_RUNS).reverse();
    if (active && active.threadId === thread && !mine.some((r) => r.runId === active.runId)) {
      mine.push({runId: active.runId, threadId: thread});
    }
    await Promise.all(mine.map((run) => {
      const view = newView({runId: run.runId, threadId: run.threadId, prompt: promptOf(run.runId),
        source: 'event-log'});
      transcript.append(view.el);
      return follow(view, 0);
    }));
  }

  async function send() {
    const prompt = promptInput.value;
    if (!prompt.trim()) {
      promptInput.focus();
      return;
    }
    const body = {prompt};
    const thread = threadInput.value.trim();
    if (thread) body.threadId = thread;
    const contextType = contextInput.value.trim();
    if (contextType) body.contextType = contextType; // only when set: the run request refuses unknown fields
    if (supersede.checked) body.supersede = true;
    clear(errors);
    sendButton.disabled = true;
    const view = newView({prompt, threadId: thread || null});
    transcript.append(view.el);
    let started = false;
    try {
      await streamNdjson('POST', '/api/agent/run/stream', (ev) => {
        if (!started) {
          started = true;
          promptInput.value = '';
        }
        view.handle(ev);
        if (ev.type === 'status' && ev.runId) rememberPrompt(ev.runId, prompt);
      }, {body, signal: loads.signal});
      const stopped = view.lastType === 'result' || (view.lastType === 'error' && view.status === 'failed');
      if (!stopped && view.runId) await follow(view, view.lastSeq); // taken over, or the stream broke
    } catch (err) {
      if (err.name === 'AbortError') return; // another thread or user was chosen: the run goes on server-side
      if (!started) view.el.remove();
      showError(errors, err, started ? `stream of ${view.runId || 'the run'}` : 'run');
      if (started && view.runId) await follow(view, view.lastSeq);
    } finally {
      sendButton.disabled = false;
    }
  }

  // The first screen: examples to click while the transcript is empty (a tool call, an approval, a plan).
  const showExamples = () => { examples.hidden = transcript.childElementCount > 0; };
  new MutationObserver(showExamples).observe(transcript, {childList: true});
  showExamples();
  for (const button of examples.querySelectorAll('button.example')) {
    button.addEventListener('click', () => {
      promptInput.value = button.dataset.prompt;
      send();
    });
  }

  // The values the run request accepts, from the API's own OpenAPI document (suggestions only:
  // anything typed is sent as is and the API answers for it).
  callJson('GET', '/openapi.json', {auth: false}).then((doc) => {
    const field = doc.components.schemas.RunRequest.properties.contextType;
    for (const value of (field && field.enum) || []) $('#context-types').append(h('option', {value}));
  }).catch((err) => showError(errors, err, 'reading /openapi.json'));

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    send();
  });
  promptInput.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  threadInput.addEventListener('change', () => {
    save('thread', threadInput.value.trim() || null);
    loadThread();
  });
  $('#chat-new-thread').addEventListener('click', () => {
    threadInput.value = '';
    save('thread', null);
    loadThread();
    promptInput.focus();
  });

  return {
    show() {
      const active = load('active');
      const thread = (active && active.threadId) || load('thread', '') || '';
      // A run shown paused may have been decided elsewhere (the Approvals view, another tab): draw
      // the thread again from the event logs, which follow it into its resumed answer.
      const paused = transcript.querySelector('.run[data-status="awaiting_confirmation"]');
      if (loadedFor === null || loadedFor !== thread || paused) {
        threadInput.value = thread;
        loadThread();
      } else {
        scrollToEnd(); // hidden, the transcript could not keep its scroll at the newest answer
      }
    },
    userChanged() {
      loadedFor = null;
    },
  };
}
