// PW-Dialog / ACUTE-Eval (Smith et al. 2022, 3.1.3; Li et al. 2019): a static task. initialTaskData
// holds the question and `shown` pairs of conversations (left/right already randomised, evaluated
// speaker marked); the worker picks the better speaker of each pair and says why; the answers are
// submitted once: {answers: [{pair_id, choice, justification, duration}]}. Onboarding uses the same page,
// one try per page load (its data says which try of how many; platform/onboarding_tries.py).
import React from "react";
import ReactDOM from "react-dom";
import { useMephistoTask } from "mephisto-task";
import {
  BotText,
  ScreenedOut,
  SubmitOutcome,
  TaskShell,
  t,
  useLanguage,
  serverText,
  useScreenRecord,
  useSubmitWork,
  useTextRecord,
  AttentionInstruction,
} from "../../components";

function Conversation({ turns, label, testid }) {
  return (
    <div className="col-md-6" data-testid={testid}>
      <h6>{label}</h6>
      <div className="dialeval-chat-log">
        {turns.map((turn, idx) => (
          <div key={idx} className={turn.evaluated ? "dialeval-msg-other font-weight-bold" : "dialeval-msg-self text-muted"}>
            {turn.evaluated ? label : t("common.partner")}: {turn.evaluated ? <BotText text={turn.text} /> : <bdi>{turn.text}</bdi>}
          </div>
        ))}
      </div>
    </div>
  );
}

// pair.attention: {choose: side} when the pair is an attention check (crowdsourcing/platform/checks.py)
function PairView({ pair, question, index, total, onAnswer }) {
  const [choice, setChoice] = React.useState(null);
  const [why, setWhy] = React.useState("");
  const started = React.useRef(Date.now());
  const screen = useScreenRecord(); // the judgment's record, the justification's nested in it (answerRecord.js)
  const reason = useTextRecord();
  return (
    <div data-testid="pair">
      <p>
        {t("acute.pair", { number: index + 1, total })}{" "}
        {pair.attention ? (
          <AttentionInstruction text={t("check.choose", { option: t("acute.speaker", { number: pair.attention.choose === "left" ? 1 : 2 }) })} />
        ) : (
          <b data-testid="question">{serverText(question)}</b>
        )}
      </p>
      <div className="row" onScrollCapture={screen.onScroll}>
        <Conversation turns={pair.left} label={t("acute.speaker", { number: 1 })} testid="conversation-left" />
        <Conversation turns={pair.right} label={t("acute.speaker", { number: 2 })} testid="conversation-right" />
      </div>
      {[
        ["left", 1],
        ["right", 2],
      ].map(([side, number]) => (
        <label key={side} className="mr-3">
          <input
            type="radio"
            name="acute-choice"
            data-testid={"choose-" + side}
            checked={choice === side}
            onChange={() => {
              screen.changed();
              setChoice(side);
            }}
          />{" "}
          {t("acute.speaker", { number })}
        </label>
      ))}
      <input
        className="form-control"
        placeholder={t("acute.explain")}
        aria-label={t("acute.explain")}
        data-testid="justification"
        ref={reason.ref}
        value={why}
        onChange={(e) => setWhy(e.target.value)}
      />
      <button
        className="btn btn-primary mt-2"
        data-testid="next-pair"
        disabled={!choice || !why.trim()}
        onClick={() =>
          onAnswer({
            pair_id: pair.pair_id,
            choice,
            justification: why.trim(),
            duration: (Date.now() - started.current) / 1000,
            provenance: { ...screen.take(), justification: reason.take() },
          })
        }
      >
        {t(index + 1 < total ? "acute.next" : "common.submit")}
      </button>
    </div>
  );
}

// What the page says when Mephisto turns the worker away after an onboarding try (`tried`: the try's
// {try, max_tries} from its onboarding data): another try while tries remain (a reload registers again and
// the server sends the next try), else the participant is screened out and asked to return the study,
// as Prolific's comprehension-check policy wants (docs/crowdsourcing.md, "Checks and Prolific's policy").
function OnboardingOutcome({ tried }) {
  if (tried.try < tried.max_tries) {
    return (
      <div data-testid="retry-onboarding">
        <p>{tried.max_tries - tried.try === 1 ? t("acute.retry_one") : t("acute.retry_many", { left: tried.max_tries - tried.try })}</p>
        <button className="btn btn-primary" data-testid="try-again" onClick={() => window.location.reload()}>
          {t("acute.try_again")}
        </button>
      </div>
    );
  }
  return <ScreenedOut lead={t("acute.failed")} />;
}

function AcuteApp() {
  const mephisto = useMephistoTask();
  const { initialTaskData, handleSubmit, taskConfig } = mephisto;
  useLanguage(taskConfig);
  const [answers, setAnswers] = React.useState([]);
  const [submitted, setSubmitted] = React.useState(false); // the onboarding (mephisto-task's handleSubmit)
  const [sent, submit, submitAgain] = useSubmitWork(mephisto); // the unit's answers
  const [tried, setTried] = React.useState(null); // the onboarding try last submitted
  // after onboarding is submitted the same page receives the unit's data: start afresh
  React.useEffect(() => {
    setAnswers([]);
    setSubmitted(false);
  }, [initialTaskData]);
  const shown = (initialTaskData && initialTaskData.shown) || [];
  let body;
  if (sent) {
    body = <SubmitOutcome outcome={sent} sentText={t("common.answers_sent")} onRetry={submitAgain} testid="done" />;
  } else if (submitted) {
    body = <div className="alert alert-success" data-testid="done">{t("common.answers_sent")}</div>;
  } else if (!initialTaskData) {
    body = <div className="alert alert-secondary">{t("shell.loading")}</div>;
  } else {
    const index = answers.length;
    body = (
      <PairView
        key={index}
        pair={shown[index]}
        question={initialTaskData.question}
        index={index}
        total={shown.length}
        onAnswer={(answer) => {
          const all = [...answers, answer];
          if (all.length === shown.length && !mephisto.isOnboarding) {
            submit({ answers: all });
          } else if (all.length === shown.length) {
            setSubmitted(true);
            if (initialTaskData.max_tries) {
              setTried({ try: initialTaskData.try, max_tries: initialTaskData.max_tries });
            }
            handleSubmit({ answers: all });
          } else {
            setAnswers(all);
          }
        }}
      />
    );
  }
  // with the task, not the folded instructions: a phone shows it too
  const practice =
    initialTaskData && initialTaskData.onboarding && !submitted && !sent ? (
      <p className="dialeval-note" data-testid="practice">
        {t("acute.practice")}
        {initialTaskData.max_tries > 1 ? " " + t("acute.practice_try", { try: initialTaskData.try, tries: initialTaskData.max_tries }) : ""}
      </p>
    ) : null;
  const instructions = <p>{t("acute.instructions")}</p>;
  return (
    <TaskShell
      mephisto={{ ...mephisto, inactiveText: null, ...(mephisto.blockedReason && tried ? { blockedExplanation: <OnboardingOutcome tried={tried} /> } : {}) }}
      title={t("acute.title")}
      instructions={instructions}
    >
      {practice}
      {body}
    </TaskShell>
  );
}

ReactDOM.render(<AcuteApp />, document.getElementById("app"));
