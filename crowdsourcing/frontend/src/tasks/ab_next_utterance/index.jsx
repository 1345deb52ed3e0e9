// ChatEval A/B next-utterance test (Lee et al. 2020, 2.1 + Appendix A): a static task. initialTaskData
// holds the question and `shown` items (context, response_a, response_b; A/B order already
// randomised, identical pairs never sent). The worker answers A, B or tie for each and submits
// {answers: {item_id: {choice, duration, provenance}}}. An item with `attention` is an attention check: its
// instruction says which answer to give (crowdsourcing/platform/checks.py).
import React from "react";
import ReactDOM from "react-dom";
import { useMephistoTask } from "mephisto-task";
import { BotText, SubmitOutcome, TaskShell, t, useLanguage, serverText, useSubmitWork, AttentionInstruction } from "../../components";
import { awayBetween } from "../../components/answerRecord";

const OPTIONS = [
  ["a", "ab.a_better"],
  ["b", "ab.b_better"],
  ["tie", "ab.tie"],
];

function Item({ item, index, answer, onChange }) {
  const shownAt = React.useRef(Date.now());
  const label = Object.fromEntries(OPTIONS);
  return (
    <div className="card p-2 mb-3" data-testid="ab-item">
      <div className="text-muted">{t("ab.conversation", { number: index + 1 })}</div>
      {item.attention ? <AttentionInstruction text={t("check.choose", { option: t(label[item.attention.choose]) })} /> : null}
      {item.context.map((turn, i) => (
        <div key={i}>
          <bdi>{turn}</bdi>
        </div>
      ))}
      <div className="mt-2">
        <b>A:</b> <BotText text={item.response_a} testid="response-a" />
      </div>
      <div>
        <b>B:</b> <BotText text={item.response_b} testid="response-b" />
      </div>
      <div className="mt-1">
        {OPTIONS.map(([value, label]) => (
          <label key={value} className="mr-3">
            <input
              type="radio"
              name={"ab-" + item.item_id}
              data-testid={"ab-" + index + "-" + value}
              checked={answer === value}
              onChange={() => onChange(value, (Date.now() - shownAt.current) / 1000)}
            />{" "}
            {t(label)}
          </label>
        ))}
      </div>
    </div>
  );
}

function AbApp() {
  const mephisto = useMephistoTask();
  const { initialTaskData, taskConfig } = mephisto;
  useLanguage(taskConfig);
  const [answers, setAnswers] = React.useState({});
  const [submitted, submit, submitAgain] = useSubmitWork(mephisto);
  const items = (initialTaskData && initialTaskData.shown) || [];
  // every item is on one page: an item's time is from the previous first answer (or the page) to its own
  // first answer; changing an answer later counts as a change (answerRecord.js's record, built here)
  const lastAnswer = React.useRef(Date.now());
  const answer = (item, choice, duration) => {
    const now = Date.now();
    const old = answers[item.item_id];
    const provenance = old
      ? { ...old.provenance, changes: old.provenance.changes + 1 }
      : { seconds: Math.round((now - lastAnswer.current) / 100) / 10, reread: false, changes: 0, ...awayBetween(lastAnswer.current, now) };
    if (!old) lastAnswer.current = now;
    setAnswers({ ...answers, [item.item_id]: { choice, duration, provenance } });
  };
  let body;
  if (submitted) {
    body = <SubmitOutcome outcome={submitted} sentText={t("common.answers_sent")} onRetry={submitAgain} testid="done" />;
  } else if (!initialTaskData) {
    body = <div className="alert alert-secondary">{t("shell.loading")}</div>;
  } else {
    const complete = items.every((item) => answers[item.item_id]);
    body = (
      <div>
        <p>
          <b data-testid="question">{serverText(initialTaskData.question)}</b>
        </p>
        {items.map((item, index) => (
          <Item
            key={item.item_id}
            item={item}
            index={index}
            answer={answers[item.item_id] && answers[item.item_id].choice}
            onChange={(choice, duration) => answer(item, choice, duration)}
          />
        ))}
        <button
          className="btn btn-primary"
          data-testid="submit-ab"
          disabled={!complete}
          onClick={() => submit({ answers })}
        >
          {t("common.submit")}
        </button>
      </div>
    );
  }
  const instructions = (
    <p>{t("ab.instructions")}</p>
  );
  return (
    <TaskShell mephisto={{ ...mephisto, inactiveText: null }} title={t("ab.title")} instructions={instructions}>
      {body}
    </TaskShell>
  );
}

ReactDOM.render(<AbApp />, document.getElementById("app"));
