// The way back for a participant whose browser died (crowdsourcing/router/dialeval_claims.js, docs/security.md): the
// page shows its session's resume code; a page refused because that session is held by another browser offers a
// field for the code, which the router accepts once the other page has been silent long enough.
import React from "react";
import { t } from "./i18n";
import { offerResumeCode, reclaimOffered, resumeCode } from "./transport";

export function ResumeCode() {
  const code = resumeCode();
  if (!code) {
    return null;
  }
  return (
    <p className="dialeval-note dialeval-resume" data-testid="resume-code">
      {t("resume.code")} <b dir="ltr">{code}</b>
    </p>
  );
}

export function ResumeForm() {
  const [code, setCode] = React.useState("");
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
