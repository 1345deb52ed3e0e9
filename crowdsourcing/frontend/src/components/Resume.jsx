// The way back for a participant whose browser died (crowdsourcing/router/dialeval_claims.js, docs/security.md): the
// page shows its session's resume code until its work is sent; a page refused because that session is held by
// another browser offers a field for the code, which the router accepts once the other page has been silent long
// enough. Given sooner, the code is kept and the page asks again by itself when the router said it may (ReclaimWait).
import React from "react";
import { t } from "./i18n";
import { useWorkSent } from "./Submit";
import { offerResumeCode, reclaimOffered, reclaimWait, resumeCode, triedCode } from "./transport";

export function ResumeCode() {
  const code = resumeCode();
  const sent = useWorkSent(); // nothing left to come back to
  if (!code || sent) {
    return null;
  }
  return (
    <p className="dialeval-note dialeval-resume" data-testid="resume-code">
      {t("resume.code")} <b dir="ltr">{code}</b>
    </p>
  );
}

export function ResumeForm() {
  const [code, setCode] = React.useState(() => triedCode() || ""); // a wrong one is shown to be checked
  if (!reclaimOffered()) {
    return null;
  }
  const send = (event) => {
    event.preventDefault();
    if (code.trim()) {
      offerResumeCode(code.trim());
    }
  };
  return (
    <form className="dialeval-resume-form" data-testid="resume-form" onSubmit={send}>
      <p>{t("resume.ask")}</p>
      <div className="dialeval-input-row">
        <input
          id="resume-code"
          className="form-control"
          aria-label={t("resume.label")}
          placeholder={t("resume.label")}
          autoComplete="off"
          dir="ltr"
          value={code}
          onChange={(e) => setCode(e.target.value)}
        />
        <button type="submit" className="btn btn-primary" data-testid="resume-button" disabled={!code.trim()}>
          {t("resume.button")}
        </button>
      </div>
    </form>
  );
}

// m:ss, which needs no plural in any language
function clock(seconds) {
  return Math.floor(seconds / 60) + ":" + String(seconds % 60).padStart(2, "0");
}

// The router takes this page's request only once the first page has been silent long enough: the page says so, keeps
// the code, and loads again by itself a second after the time the router named (the code goes with it).
export function ReclaimWait() {
  const { seconds, code } = reclaimWait();
  const [until] = React.useState(() => Date.now() + (seconds + 1) * 1000);
  const [left, setLeft] = React.useState(seconds + 1);
  React.useEffect(() => {
    if (left <= 0) {
      window.location.reload();
      return undefined;
    }
    const timer = window.setTimeout(() => setLeft(Math.max(0, Math.ceil((until - Date.now()) / 1000))), 1000);
    return () => window.clearTimeout(timer);
  }, [left]);
  return (
    <div className="alert alert-warning" data-testid="reclaim-wait">
      <p role="status">
        {code ? t("resume.waiting", { code }) : t("resume.waiting_no_code")}
      </p>
      <p className="mb-0">
        {t("resume.next_try")} <b dir="ltr" data-testid="reclaim-countdown">{clock(left)}</b>
      </p>
    </div>
  );
}
