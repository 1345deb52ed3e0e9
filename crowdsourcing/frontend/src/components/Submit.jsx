// The final submission of a unit's work, for every task (the live tasks' SubmitPanel, the static tasks' last answer).
// mephisto-task 2.0.4's handleSubmit drops the answer to POST /submit_task, so a page could not tell work the server
// took from work that never arrived. useSubmitWork posts it with mephisto-task's postCompleteTask (which, once the
// server took it, hands over to the provider: Prolific's way back included) and says what came of it: "sent";
// "already_sent" (the router's 409: this unit was submitted before, by this page before a reload or by another); or
// "not_sent" (no answer, or any other refusal: the person may press again). A submission the server took is kept
// for the page address and agent (pageStore.js), so a reload says it was sent instead of offering the button again.
// Onboarding stays on mephisto-task's handleSubmit: its answer is the unit's agent, which only handleSubmit takes.
import React from "react";
import { postCompleteTask } from "mephisto-task";
import { t } from "./i18n";
import { readKept, writeKept } from "./pageStore";

const sentListeners = new Set();
let workSent = false; // this page's work went: the resume code has nothing left to bring back (Resume.jsx)

function markSent() {
  if (!workSent) {
    workSent = true;
    sentListeners.forEach((listener) => listener(true));
  }
}

// Whether this page's work was sent (re-renders when it is).
export function useWorkSent() {
  const [sent, setSent] = React.useState(workSent);
  React.useEffect(() => {
    sentListeners.add(setSent);
    return () => sentListeners.delete(setSent);
  }, []);
  return sent;
}

function outcomeOf(error) {
  if (!(error && error.isAxiosError)) {
    return "sent"; // the server took it; the provider's hand-over after it failed
  }
  const answer = error.response;
  const refused = answer && answer.status === 409 && answer.data && answer.data.reason === "already submitted";
  return refused ? "already_sent" : "not_sent";
}

// The address a Prolific participant goes back to (the Prolific provider's wrap_crowd_source.js sets it), else null.
function prolificReturn() {
  const given = typeof window !== "undefined" && window.DIALEVAL_PROLIFIC ? window.DIALEVAL_PROLIFIC.completionUrl : null;
  return typeof given === "string" && /^https?:\/\//.test(given) ? given : null;
}

// [outcome, submit(data), again()]: outcome null (not sent yet), "sending", "sent", "already_sent" or "not_sent";
// again() sends the last data once more.
export function useSubmitWork(mephisto) {
  const { agentId } = mephisto;
  const kept = `sent:${agentId}`;
  const [outcome, setOutcome] = React.useState(null);
  const last = React.useRef(null);
  const shown = outcome || (agentId && readKept(kept, (value) => value === true) ? "already_sent" : null);
  React.useEffect(() => {
    if (shown === "sent" || shown === "already_sent") {
      writeKept(kept, true);
      markSent();
    }
  }, [shown]);
  const submit = (data) => {
    last.current = data;
    setOutcome("sending");
    postCompleteTask(agentId, data).then(() => "sent", outcomeOf).then(setOutcome);
  };
  return [shown, submit, () => submit(last.current)];
}

// What came of a submission, in the study's language: `sentText` once the server took it. A static task's last
// screen (`onRetry`) is this alone: it says so in a box, shows that it is sending, and a submission that failed offers
// its own button to send the answers again (the live tasks' SubmitPanel has its button already).
export function SubmitOutcome({ outcome, sentText, onRetry, testid = "after-submit" }) {
  if (outcome === "sent" || outcome === "already_sent") {
    // sent before (and the provider's hand-over with it): on Prolific the way back is a link, in case that page
    // never reached Prolific (a tab closed before the redirect), where the submission is recorded
    const back = outcome === "already_sent" ? prolificReturn() : null;
    return (
      <p role="status" data-testid={testid} className={onRetry ? "alert alert-success" : "mb-0"}>
        {outcome === "sent" ? sentText : t(back ? "submit.already_sent_prolific" : "submit.already_sent")}
        {back ? (
          <>
            {" "}
            <a href={back} data-testid="back-to-prolific">{t("submit.back_to_prolific")}</a>
          </>
        ) : null}
      </p>
    );
  }
  if (outcome === "not_sent") {
    return (
      <div className="alert alert-danger dialeval-not-sent" role="alert" data-testid="not-sent">
        <p className={onRetry ? undefined : "mb-0"}>{t("submit.not_sent")}</p>
        {onRetry ? (
          <button className="btn btn-success" data-testid="send-again" onClick={onRetry}>
            {t("submit.button")}
          </button>
        ) : null}
      </div>
    );
  }
  if (outcome === "sending" && onRetry) {
    return (
      <p role="status" className="dialeval-note" data-testid="sending">
        {t("submit.sending")}
      </p>
    );
  }
  return null;
}
