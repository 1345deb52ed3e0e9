// Page layout shared by every task: the task first, the instructions beside it (folded under it on a
// phone), and the loading / blocked / ended / submit screens every Mephisto task needs.
import React from "react";
import { serverText, t } from "./i18n";
import { RecordingNotice } from "./Checks";
import { ReclaimWait, ResumeCode, ResumeForm } from "./Resume";
import { reclaimWait } from "./transport";
import { Questionnaire, questionnaireSubmission } from "./Questionnaire";
import { questionnaireAsked } from "./pageOptions";
import { SubmitOutcome, useSubmitWork } from "./Submit";

export function TaskShell({ mephisto, title, instructions, children }) {
  const { isLoading, isPreview, blockedReason, blockedExplanation, inactiveText } = mephisto;
  // open beside the task on a wide screen; folded under it on a phone, where the task comes first
  const [wide] = React.useState(() => typeof window === "undefined" || window.innerWidth >= 992);
  let body;
  if (blockedReason) {
    // the router's refusals are catalogued server texts (translated); a task's own explanation is an element
    const why = blockedExplanation || blockedReason;
    // asked for the way back too soon: one message, the page's own, in place of the router's "try again in N seconds"
    body = reclaimWait() ? (
      <ReclaimWait />
    ) : (
      <div>
        <div className="alert alert-danger" data-testid="blocked">{typeof why === "string" ? serverText(why) : why}</div>
        <ResumeForm />
      </div>
    );
  } else if (isPreview) {
    body = <div className="alert alert-info">{t("shell.preview")}</div>;
  } else if (isLoading) {
    body = <div className="alert alert-secondary">{t("shell.loading")}</div>;
  } else if (inactiveText) {
    body = <div className="alert alert-warning" data-testid="inactive">{inactiveText}</div>;
  } else {
    body = children;
  }
  return (
    <div className="container-fluid dialeval-task">
      <h1 className="h4">{title}</h1>
      <div className="row">
        <main className="col-lg-8 dialeval-main">{body}</main>
        <aside className="col-lg-4 dialeval-instructions" aria-label={t("shell.instructions")}>
          <details open={wide}>
            <summary>{t("shell.instructions")}</summary>
            {instructions}
            <RecordingNotice taskConfig={mephisto.taskConfig} />
          </details>
        </aside>
      </div>
      {blockedReason || inactiveText ? null : <ResumeCode />}
    </div>
  );
}

// A button that submits an onboarding to Mephisto once: it stays disabled after the click (Mephisto then moves the
// worker on, which takes a moment), so a second click cannot submit twice.
export function SubmitOnceButton({ onSubmit, testid, label, pendingLabel }) {
  const [submitted, setSubmitted] = React.useState(false);
  return (
    <button
      className="btn btn-success"
      data-testid={testid}
      disabled={submitted}
      onClick={() => {
        setSubmitted(true);
        onSubmit();
      }}
    >
      {submitted ? pendingLabel : label}
    </button>
  );
}

// The last screen: the optional questionnaire when the task asks it (sent with the submit, apart from the task's
// own record), what to press, then what came of it (Submit.jsx): sent, sent before, or not sent with the button to
// press again. On Prolific (PROLIFIC_PID in the address) the provider's wrapper takes the participant back to
// Prolific with the completion code once the server took the work.
export function SubmitPanel({ mephisto, data = {} }) {
  const [outcome, submit] = useSubmitWork(mephisto);
  const done = outcome === "sent" || outcome === "already_sent";
  const questions = questionnaireAsked();
  const [about, setAbout] = React.useState({ consent: false, answers: {} });
  const onProlific = typeof window !== "undefined" && /[?&]PROLIFIC_PID=/.test(window.location.search);
  return (
    <div className="dialeval-submit dialeval-done" data-testid="submit-panel">
      <p>
        {/* once sent, the box no longer asks for the press */}
        <b>{t("submit.complete")}</b> {done ? null : t("submit.press")}
      </p>
      {questions.length > 0 && !done ? <Questionnaire questions={questions} value={about} onChange={setAbout} /> : null}
      {done ? null : (
        <button
          className="btn btn-success"
          data-testid="submit-hit"
          disabled={outcome === "sending"}
          onClick={() => submit(questions.length > 0 ? { ...data, questionnaire: questionnaireSubmission(questions, about) } : data)}
        >
          {outcome === "sending" ? t("submit.pending") : t("submit.button")}
        </button>
      )}
      <SubmitOutcome outcome={outcome} sentText={t(onProlific ? "submit.sent_prolific" : "submit.sent")} />
    </div>
  );
}
