// What the server tells every chat page beside its language (frontend_task_opts: crowdsourcing/platform/frontend.py
// chat_page_options): the optional questionnaire's questions (SubmitPanel asks them), and the seconds a bot's reply
// may take before the page says it is slow, the patience threshold the launch's speed check and the dashboard warn at
// (platform/speed.py), so that all three agree.
import { useLanguage } from "./i18n";

let slowReplySeconds = null; // null until the task's config has come: no note before then
// the optional questionnaire's questions, each {name, choices} (crowdsourcing/platform/questionnaire.py): [] when off
let questionnaire = [];
let pageLanguage = "en";

// Called once per render by a chat task's app with its task config, in place of useLanguage.
export function usePageOptions(taskConfig) {
  const opts = (taskConfig && taskConfig.frontend_task_opts) || {};
  if (typeof opts.slow_reply_seconds === "number" && opts.slow_reply_seconds > 0) {
    slowReplySeconds = opts.slow_reply_seconds;
  }
  if (Array.isArray(opts.questionnaire)) {
    questionnaire = opts.questionnaire;
  }
  pageLanguage = useLanguage(taskConfig);
  return pageLanguage;
}

export function questionnaireAsked() {
  return questionnaire;
}

export function languageOfPage() {
  return pageLanguage;
}

export function slowReplyAfter() {
  return slowReplySeconds;
}
