// How each answer was made, recorded by the page for every task (docs/data_model.md, "How an answer was made"):
// counts and times only. Per free text (a chat message, a justification, the feedback): characters typed,
// pasted, dropped and deleted, each paste's and drop's size, typed insertions and the median time between them,
// pauses, the time from the first key to sending; per judgment screen: the time on it, whether the
// conversation was read again (scrolled back, or opened), answers changed; for both, how often and how long
// the page was away (another tab or window) meanwhile. Never a key's content beyond the answer itself, never
// the mouse. The server checks what it receives (crowdsourcing/platform/answer_record.py); the instructions
// say what is recorded (RecordingNotice).
import React from "react";
import { readKept, writeKept } from "./pageStore";

const PAUSE_MS = 2000; // a gap between typed insertions this long counts as a pause
const MAX_SIZES = 20; // paste and drop sizes kept per text (the server keeps no more)
const MAX_INTERVALS = 5000; // gaps between typed insertions kept per text: a median's worth, and a kept record stays small

// ------------------------------------------------------------------ the page being away (tabs, windows)
const spans = []; // [start, end] of each time away, in ms; end null while away
let awaySince = null;

function goAway() {
  if (awaySince === null) {
    awaySince = Date.now();
  }
}

function comeBack() {
  if (awaySince !== null) {
    spans.push([awaySince, Date.now()]);
    if (spans.length > 500) spans.shift();
    awaySince = null;
  }
}

if (typeof window !== "undefined") {
  window.addEventListener("blur", goAway);
  window.addEventListener("focus", comeBack);
  document.addEventListener("visibilitychange", () => (document.visibilityState === "hidden" ? goAway() : comeBack()));
}

// Times away that overlap [from, to] (ms): how many, and their seconds within it.
export function awayBetween(from, to) {
  const all = awaySince === null ? spans : [...spans, [awaySince, to]];
  let count = 0;
  let ms = 0;
  for (const [start, end] of all) {
    if (end > from && start < to) {
      count += 1;
      ms += Math.min(end, to) - Math.max(start, from);
    }
  }
  return { away: count, away_seconds: Math.round(ms / 100) / 10 };
}

const seconds = (ms) => Math.round(ms / 100) / 10;

function median(values) {
  if (!values.length) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// ------------------------------------------------------------------ a free text
function freshText() {
  return { since: Date.now(), first: null, lastKey: null, typed: 0, pasted: 0, dropped: 0, deleted: 0, pastes: [], drops: [], intervals: [], before: null };
}

// A kept record (pageStore.js) has the fields freshText makes, of their types: else the page starts afresh.
function isTextRecord(value) {
  const fresh = freshText();
  return value !== null && typeof value === "object" && Object.keys(fresh).every((key) =>
    Array.isArray(fresh[key]) ? Array.isArray(value[key]) && value[key].every((n) => typeof n === "number")
      : key in value && (value[key] === null || typeof value[key] === "number" || typeof value[key] === "object"));
}

// The record of one text box: attach `ref` to an <input> or <textarea>; `take()` returns the record of the text
// written since the last take (or since the box appeared) and starts a new one. `keep`: the name of the box's draft
// (useDraft) when its text outlives a reload: the record is kept with it, so that a text brought back by a reload is
// still accounted for (typed or pasted before it), not a text the page never saw written.
export function useTextRecord(keep = null) {
  const state = React.useRef(null);
  if (state.current === null) {
    const kept = keep === null ? undefined : readKept(keep + ":record", isTextRecord);
    state.current = kept === undefined ? freshText() : { ...kept, before: null };
  }
  const save = () => keep !== null && writeKept(keep + ":record", state.current);
  const element = React.useRef(null);
  const listeners = React.useRef(null);
  const ref = React.useCallback((node) => {
    if (element.current && listeners.current) {
      for (const [name, handler] of listeners.current) element.current.removeEventListener(name, handler);
    }
    element.current = node;
    if (!node) return;
    const beforeinput = () => {
      // what the insertion replaces (a selection) is not new text
      state.current.before = { length: node.value.length, selected: Math.abs((node.selectionEnd || 0) - (node.selectionStart || 0)) };
    };
    const input = (event) => {
      const s = state.current;
      const now = Date.now();
      const before = s.before || { length: node.value.length, selected: 0 };
      s.before = null;
      const inserted = Math.max(0, node.value.length - (before.length - before.selected));
      const removed = Math.max(0, before.length - node.value.length + inserted);
      s.deleted += removed;
      if (s.first === null && inserted > 0) s.first = now;
      const kind = event.inputType || "insertText";
      if (kind === "insertFromPaste" || kind === "insertFromPasteAsQuotation") {
        s.pasted += inserted;
        if (s.pastes.length < MAX_SIZES) s.pastes.push(inserted);
      } else if (kind === "insertFromDrop") {
        s.dropped += inserted;
        if (s.drops.length < MAX_SIZES) s.drops.push(inserted);
      } else if (inserted > 0) {
        s.typed += inserted;
        if (s.lastKey !== null && s.intervals.length < MAX_INTERVALS) s.intervals.push(now - s.lastKey);
        s.lastKey = now;
      }
      save();
    };
    listeners.current = [
      ["beforeinput", beforeinput],
      ["input", input],
    ];
    for (const [name, handler] of listeners.current) node.addEventListener(name, handler);
  }, []);
  const take = React.useCallback(() => {
    const s = state.current;
    const now = Date.now();
    state.current = freshText();
    if (keep !== null) writeKept(keep + ":record", undefined);
    const pauses = s.intervals.filter((ms) => ms >= PAUSE_MS);
    const record = {
      typed: s.typed,
      pasted: s.pasted,
      dropped: s.dropped,
      deleted: s.deleted,
      pastes: s.pastes,
      drops: s.drops,
      keys: s.intervals.length + (s.lastKey !== null ? 1 : 0),
      compose_seconds: s.first === null ? 0 : seconds(now - s.first),
      pauses: pauses.length,
      longest_pause: pauses.length ? seconds(Math.max(...pauses)) : 0,
      ...awayBetween(s.since, now),
    };
    const interval = median(s.intervals);
    if (interval !== undefined) record.key_interval_ms = Math.round(interval);
    return record;
  }, [keep]);
  return { ref, take };
}

// ------------------------------------------------------------------ a judgment screen
// The record of one judgment screen, from when the component mounts (or `restart()`): `take()` returns
// {seconds, reread, changes, away, away_seconds}. Wrap the conversation shown with
// <div onScrollCapture={screen.onScroll}> (a scroll back up counts as rereading); `reread()` marks it
// otherwise (a folded conversation opened); `changed()` counts an answer changed after it was given.
export function useScreenRecord() {
  const state = React.useRef({ since: Date.now(), reread: false, changes: 0, answered: new Set(), tops: new WeakMap() });
  const onScroll = React.useCallback((event) => {
    const s = state.current;
    const target = event.target;
    const top = target && typeof target.scrollTop === "number" ? target.scrollTop : 0;
    const previous = s.tops.has(target) ? s.tops.get(target) : top;
    if (top < previous - 20) s.reread = true; // programmatic scrolls go down, to the newest message
    s.tops.set(target, top);
  }, []);
  const reread = React.useCallback(() => {
    state.current.reread = true;
  }, []);
  // `key`: which answer of the screen was given; giving one again counts as a change
  const changed = React.useCallback((key = "") => {
    const s = state.current;
    if (s.answered.has(key)) s.changes += 1;
    s.answered.add(key);
  }, []);
  const take = React.useCallback(() => {
    const s = state.current;
    const now = Date.now();
    return { seconds: seconds(now - s.since), reread: s.reread, changes: s.changes, ...awayBetween(s.since, now) };
  }, []);
  const restart = React.useCallback(() => {
    state.current = { since: Date.now(), reread: false, changes: 0, answered: new Set(), tops: new WeakMap() };
  }, []);
  return { onScroll, reread, changed, take, restart };
}
