// The optional questionnaire before the final submit (crowdsourcing/platform/questionnaire.py): what is asked and
// why, that every question may be skipped and the answers are kept apart from the task's; nothing is answered,
// and nothing sent, without the consent box ticked. Countries and languages are named by the browser in the
// page's language (Intl.DisplayNames: 249 countries and 183 languages need no catalogue entries).
import React from "react";
import { t } from "./i18n";
import { languageOfPage } from "./pageOptions";

const PREFER_NOT = "prefer_not_to_say";
const NAMED_BY_BROWSER = { country: "region", language: "language" };

function labelled(name, choices, language) {
  const kind = NAMED_BY_BROWSER[name];
  if (!kind) {
    return choices.map((code) => [code, t(`questionnaire.${name}.${code}`)]);
  }
  let names = null;
  try {
    names = new Intl.DisplayNames([language, "en"], { type: kind });
  } catch (error) {
    names = null; // a browser without it: the codes themselves
  }
  return choices
    .map((code) => [code, (names && names.of(code)) || code])
    .sort((a, b) => a[1].localeCompare(b[1], language));
}

// `value`: {consent, answers: {question: code}}; `onChange` gets the next value.
export function Questionnaire({ questions, value, onChange }) {
  const language = languageOfPage();
  const options = React.useMemo(
    () => Object.fromEntries(questions.map(({ name, choices }) => [name, labelled(name, choices, language)])),
    [questions, language]
  );
  const { consent, answers } = value;
  return (
    <section className="dialeval-questionnaire" data-testid="questionnaire" aria-labelledby="questionnaire-title">
      <h2 className="h5" id="questionnaire-title">{t("questionnaire.title")}</h2>
      <p>{t("questionnaire.why")}</p>
      <div className="form-check mb-3">
        <input
          className="form-check-input"
          type="checkbox"
          id="questionnaire-consent"
          data-testid="questionnaire-consent"
          checked={consent}
          onChange={(event) => onChange({ consent: event.target.checked, answers })}
        />
        <label className="form-check-label" htmlFor="questionnaire-consent">{t("questionnaire.consent")}</label>
      </div>
      {questions.map(({ name }) => (
        <div className="form-group" key={name}>
          <label htmlFor={"questionnaire-" + name}>{t("questionnaire." + name)}</label>
          <select
            id={"questionnaire-" + name}
            className="form-control"
            data-testid={"questionnaire-" + name}
            disabled={!consent}
            value={answers[name] || ""}
            onChange={(event) => onChange({ consent, answers: { ...answers, [name]: event.target.value } })}
          >
            <option value="">{t("questionnaire.unanswered")}</option>
            <option value={PREFER_NOT}>{t("questionnaire.prefer_not")}</option>
            {options[name].map(([code, label]) => (
              <option key={code} value={code}>{label}</option>
            ))}
          </select>
        </div>
      ))}
    </section>
  );
}

// What the final submit carries: the answers given only with consent (a question left unanswered is left out).
export function questionnaireSubmission(questions, { consent, answers }) {
  if (!consent) {
    return { consent: false };
  }
  const given = questions.map(({ name }) => name).filter((name) => answers[name]);
  return { consent: true, answers: Object.fromEntries(given.map((name) => [name, answers[name]])) };
}
