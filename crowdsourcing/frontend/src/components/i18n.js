// The page's own words (instructions, buttons, notes, errors) come from a catalogue per language,
// src/i18n/<language>.json, chosen by the task's `language` (frontend_task_opts.language; the launch checks
// that the catalogue exists). A key missing from a catalogue falls back to English; {name} placeholders are
// filled from `vars`. Right-to-left languages turn the whole page (dir="rtl"); participants' and bots' texts
// keep their own direction everywhere (<bdi>). Hand-written: a dozen lines; i18n libraries bring plural
// engines and loaders that these pages do not need.
import React from "react";

// every src/i18n/<language>.json is bundled: a new language is a file there and a rebuild
const files = require.context("../i18n", false, /\.json$/);
const CATALOGUES = Object.fromEntries(files.keys().map((name) => [name.replace(/^\.\/|\.json$/g, ""), files(name)]));
const en = CATALOGUES.en;
const RIGHT_TO_LEFT = new Set(["ar", "fa", "he", "ur", "yi"]);
let catalogue = en;

// The server's own English texts (its warnings, the protocols' questions), as en.json's "server.*" entries
// write them with {name} for a value the server fills in: a pattern each, to find a text's translation.
const SERVER_TEXTS = Object.keys(en)
  .filter((key) => key.startsWith("server."))
  .map((key) => [key, new RegExp("^" + en[key].replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\?\{(\w+)\\?\}/g, "(?<$1>.+?)") + "$")]);

// Called once per render by a task's app with its task config: sets the catalogue and the page's lang/dir.
export function useLanguage(taskConfig) {
  // chat tasks carry it in frontend_task_opts, static ones in the task config itself
  const opts = (taskConfig && taskConfig.frontend_task_opts) || taskConfig || {};
  const language = opts.language || "en";
  catalogue = CATALOGUES[language] || en;
  React.useEffect(() => {
    document.documentElement.lang = language;
    document.documentElement.dir = RIGHT_TO_LEFT.has(language) ? "rtl" : "ltr";
  }, [language]);
  return language;
}

function lookup(key) {
  return key in catalogue ? catalogue[key] : en[key];
}

function fill(text, vars) {
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
}

export function t(key, vars = {}) {
  const text = lookup(key);
  if (typeof text !== "string") {
    throw new Error(`no text for ${key} in the page's catalogue`);
  }
  return fill(text, vars);
}

// An item list (the instructions) from the catalogue, with the same placeholders.
export function tList(key, vars = {}) {
  return lookup(key).map((item) => fill(item, vars));
}

// A text the server sent in English, in the page's language when the catalogue translates it (else as sent).
export function serverText(text) {
  if (typeof text !== "string" || catalogue === en) {
    return text;
  }
  for (const [key, pattern] of SERVER_TEXTS) {
    const match = pattern.exec(text);
    if (match && typeof catalogue[key] === "string") {
      return fill(catalogue[key], match.groups || {});
    }
  }
  return text;
}
