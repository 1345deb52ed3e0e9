// What the participant reads about the integrity of the work: what the page records (every task, beside its
// instructions) and the attention checks (an instruction that replaces a judgment's question, in the screen's
// own answer format: crowdsourcing/platform/checks.py says why they are written so). Gold items look like any
// other judgment, so nothing here shows them.
import React from "react";
import { t } from "./i18n";

// `taskConfig`: Mephisto's task config (chat tasks: its frontend_task_opts); `attention` there says the task has
// attention checks.
export function RecordingNotice({ taskConfig }) {
  const opts = (taskConfig && taskConfig.frontend_task_opts) || taskConfig || {};
  return (
    <p className="small text-muted dialeval-recording" data-testid="recording-notice">
      {t("record.notice")}
      {opts.attention ? " " + t("record.checks") : null}
    </p>
  );
}

// An attention check's instruction, where the judgment's question would be.
export function AttentionInstruction({ text }) {
  return (
    <b className="dialeval-attention" data-testid="attention-instruction">
      {text}
    </b>
  );
}
