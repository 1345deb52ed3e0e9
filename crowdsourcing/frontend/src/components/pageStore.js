// What a page keeps for its own address (window.location.search names the participant's study and session) in the
// browser's localStorage, so that a reload, Back or Forward, or the link opened again in a new tab finds it: answers
// typed but not sent yet (useDraft) and that the work was sent (Submit.jsx). Storage may be refused (private mode):
// then the value lives in React state only. Storage may hold anything (another version of the page, another script
// of the site): a kept value is used only when `valid` says it has the expected shape.
import React from "react";

const PREFIX = "dialeval_kept:";

function storageKey(name) {
  return PREFIX + name + window.location.search;
}

// The value kept under `name` for this page address, or undefined (none, unreadable, or not `valid`).
export function readKept(name, valid) {
  try {
    const raw = window.localStorage.getItem(storageKey(name));
    const value = raw === null ? undefined : JSON.parse(raw);
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
      window.localStorage.setItem(storageKey(name), JSON.stringify(value));
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
