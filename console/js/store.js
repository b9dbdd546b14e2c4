// What the console keeps in localStorage, per dev user: the chosen thread, the run being
// followed (its id and last seq, so a reload replays its event log from there) and the prompts
// sent from this browser (the event log holds the agent's side only).

import {currentUser} from './api.js';

function key(name) {
  return `console.${currentUser()}.${name}`;
}

export function load(name, fallback = null) {
  try {
    const raw = localStorage.getItem(key(name));
    return raw === null ? fallback : JSON.parse(raw);
  } catch {
    return fallback;
  }
}

export function save(name, value) {
  if (value === null || value === undefined) localStorage.removeItem(key(name));
  else localStorage.setItem(key(name), JSON.stringify(value));
}

const MAX_PROMPTS = 100;

export function rememberPrompt(runId, prompt) {
  const prompts = load('prompts', {});
  prompts[runId] = prompt;
  const ids = Object.keys(prompts);
  for (const old of ids.slice(0, Math.max(0, ids.length - MAX_PROMPTS))) delete prompts[old];
  save('prompts', prompts);
}

export function promptOf(runId) {
  return load('prompts', {})[runId] || null;
}
