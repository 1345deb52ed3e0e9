// Page layout shared by every task: instructions on the left, the task on the right, and the
// loading / blocked / ended / submit screens every Mephisto task needs.
import React from "react";

export function TaskShell({ mephisto, title, instructions, children }) {
  const { isLoading, isPreview, blockedReason, blockedExplanation, inactiveText } = mephisto;
  let body;
  if (blockedReason) {
    body = <div className="alert alert-danger">{blockedExplanation || blockedReason}</div>;
  } else if (isPreview) {
    body = <div className="alert alert-info">Accept the task to begin.</div>;
  } else if (isLoading) {
    body = <div className="alert alert-secondary">Loading...</div>;
  } else if (inactiveText) {
    body = <div className="alert alert-warning" data-testid="inactive">{inactiveText}</div>;
  } else {
    body = children;
  }
  return (
    <div className="container-fluid dialeval-task">
      <div className="row">
        <div className="col-md-4 dialeval-instructions">
          <h4>{title}</h4>
          {instructions}
        </div>
        <div className="col-md-8 dialeval-main">{body}</div>
      </div>
    </div>
  );
}

// A button that submits to Mephisto once: it stays disabled after the click (Mephisto then moves the
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

export function SubmitPanel({ handleSubmit, data = {} }) {
  return (
    <div className="dialeval-submit">
      <p>Thank you! Your work is complete.</p>
      <SubmitOnceButton onSubmit={() => handleSubmit(data)} testid="submit-hit" label="Submit HIT" pendingLabel="Submitted" />
    </div>
  );
}
