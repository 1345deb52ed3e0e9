// What a page keeps for its own address (window.location.search names the participant's study and session) in the
// browser's localStorage, so that a reload, Back or Forward, or the link opened again in a new tab finds it: answers
// typed but not sent yet (useDraft) and that the work was sent (Submit.jsx). Storage may be refused (private mode):
// then the value lives in React state only. Storage may hold anything (another version of the page, another script
// of the site): a kept value is used only when `valid` says it has the expected shape. A study's page may be left on a
// shared computer: what it kept (a participant's unsent answers, keyed by their ids) is forgotten after KEEP_MS, and
// every page forgets whatever any study's pages kept longer ago when it loads.
import React from "react";

const PREFIX = "dialeval_kept:";
const KEEP_MS = 24 * 60 * 60 * 1000; // longer than any session of a study: a day

function storageKey(name) {
  return PREFIX + name + window.location.search;
}

// The value of a stored entry ({value, at}) while it is fresh, else undefined.
function fresh(raw) {
  const entry = raw === null ? null : JSON.parse(raw);
  const recent = entry !== null && typeof entry === "object" && typeof entry.at === "number" && "value" in entry;
  return recent && Date.now() - entry.at < KEEP_MS ? entry.value : undefined;
}

function forgetStale() {
  try {
    const storage = window.localStorage;
    for (const key of Object.keys(storage)) {
      if (!key.startsWith(PREFIX)) continue;
      let value;
      try {
        value = fresh(storage.getItem(key));
      } catch (error) {
        value = undefined; // not JSON: not ours to keep either
      }
      if (value === undefined) storage.removeItem(key);
    }
  } catch (error) {
    // storage refused: nothing was kept
  }
}

if (typeof window !== "undefined") forgetStale();

// The value kept under `name` for this page address, or undefined (none, stale, unreadable, or not `valid`).
export function readKept(name, valid) {
  try {
    const value = fresh(window.localStorage.getItem(storageKey(name)));
    return value !== undefined && valid(value) ? value : undefined;
  } catch (error) {
    return undefined; // storage refused, or not JSON
  }
}

// Keeps `value` under `name` for this page address; undefined forgets it.
export function writeKept(name, value) {
  try {
    if (value === undefined) {
      window.localStorage.removeItem(storageKey(name));
    } else {
      window.localStorage.setItem(storageKey(name), JSON.stringify({ value, at: Date.now() }));
    }
  } catch (error) {
    // storage refused or full: the value lives as long as the page
  }
}

// React state that outlives the page: [value, setValue, forget]. `name` says which answer (with its conversation's
// slot where a page asks it again per conversation); call forget() once the answer was sent.
export function useDraft(name, initial, valid) {
  const [value, setValue] = React.useState(() => {
    const kept = readKept(name, valid);
    return kept === undefined ? initial : kept;
  });
  const change = (next) => {
    setValue(next);
    writeKept(name, next);
  };
  const forget = () => writeKept(name, undefined);
  return [value, change, forget];
}

// The shapes the pages' drafts take.
export const isText = (value) => typeof value === "string";
export const isPercent = (value) => typeof value === "number" && value >= 0 && value <= 100;
