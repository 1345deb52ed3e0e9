// Rating-scale designs (Santhanam & Shaikh 2020, section 4): a static task, one design per launch.
// initialTaskData: design, scale {kind, min, max}, criteria, prior_questions and `shown` items
// (context, reference with its anchor value for magnitude estimation, responses under neutral keys).
// Submits {ratings: {item_id: {criterion: {values: {key: n}} | {best, worst}}}, prior_experience,
// duration, item_durations, item_provenance}. An item with `attention` is an attention check: its questions say
// what to answer (crowdsourcing/platform/checks.py).
import React from "react";
import ReactDOM from "react-dom";
import { useMephistoTask } from "mephisto-task";
import { BotText, SubmitOutcome, TaskShell, t, useLanguage, serverText, useScreenRecord, useSubmitWork, AttentionInstruction } from "../../components";

function ValueInput({ kind, min, max, value, onChange, testid, label }) {
  if (kind === "likert") {
    const points = [];
    for (let v = min; v <= max; v += 1) points.push(v);
    return (
      <span>
        {points.map((v) => (
          <label key={v} className="mr-2">
            <input type="radio" name={testid} data-testid={testid + "-" + v} checked={value === v} onChange={() => onChange(v)} /> {v}
          </label>
        ))}
      </span>
    );
  }
  // The browser lets any number be typed into the field: say at once when it is out of range.
  const wrong = value !== undefined && !inRange(value, min, max);
  return (
    <span className="d-inline-block align-top">
      <input
        type="number"
        min={min}
        max={max}
        className={"form-control d-inline-block" + (wrong ? " is-invalid" : "")}
        style={{ width: 120 }}
        aria-label={label}
        data-testid={testid}
        value={value === undefined ? "" : value}
        onChange={(e) => onChange(e.target.value === "" ? undefined : Number(e.target.value))}
      />
      {wrong ? (
        <span className="invalid-feedback d-block" data-testid={testid + "-error"}>
          {t("scale.out_of_range", { min, max })}
        </span>
      ) : null}
    </span>
  );
}

const inRange = (value, min, max) => typeof value === "number" && value >= min && value <= max;

function ItemForm({ data, item, index, onDone }) {
  const started = React.useRef(Date.now());
  const [answers, setAnswers] = React.useState({});
  const screen = useScreenRecord(); // the item's record (answerRecord.js)
  const { kind, min, max } = data.scale;
  const keys = item.responses.map((r) => r.key);
  // `answer`: which answer of the screen this is (giving it again counts as a change; typed numbers do not)
  const set = (criterion, update, answer = null) => {
    if (answer !== null) screen.changed(criterion + ":" + answer);
    setAnswers({ ...answers, [criterion]: { ...(answers[criterion] || {}), ...update } });
  };
  const instruction = item.attention
    ? "best" in item.attention
      ? t("check.best_worst", { best: item.attention.best, worst: item.attention.worst })
      : t("check.scale_value", { value: item.attention.value })
    : null;
  const valid = (value) => inRange(value, min, max);
  const complete = data.criteria.every(({ name }) => {
    const a = answers[name] || {};
    if (kind === "best_worst") return a.best && a.worst && a.best !== a.worst;
    return keys.every((k) => valid((a.values || {})[k]));
  });
  return (
    <div data-testid="scale-item">
      <p className="text-muted">
        {t("scale.item", { number: index + 1, total: data.shown.length })}
      </p>
      {item.context.map((turn, i) => (
        <div key={i}>
          <bdi>{turn}</bdi>
        </div>
      ))}
      <div className="mt-2">
        <b>{t("scale.reference")}</b> <BotText text={item.reference} testid="reference" />
      </div>
      {data.criteria.map(({ name, question }) => {
        const anchor = item.reference_values[name];
        const a = answers[name] || {};
        return (
          <div key={name} className="card p-2 mt-2" data-testid={"criterion-" + name}>
            {instruction ? <AttentionInstruction text={instruction} /> : <b>{serverText(question)}</b>}
            {anchor !== null && anchor !== undefined ? (
              <div data-testid={"anchor-" + name}>
                {t("scale.anchor", { anchor, min, max })}
              </div>
            ) : null}
            {item.responses.map((r, i) => (
              <div key={r.key} className="mt-1">
                <BotText text={r.text} testid={"response-" + i} />
                {kind === "best_worst" ? (
                  <span>
                    <label className="mr-2">
                      <input type="radio" name={name + "-best"} data-testid={name + "-best-" + i} checked={a.best === r.key} onChange={() => set(name, { best: r.key }, "best")} /> {t("scale.best")}
                    </label>
                    <label>
                      <input type="radio" name={name + "-worst"} data-testid={name + "-worst-" + i} checked={a.worst === r.key} onChange={() => set(name, { worst: r.key }, "worst")} /> {t("scale.worst")}
                    </label>
                  </span>
                ) : (
                  <ValueInput
                    kind={kind}
                    min={min}
                    max={max}
                    testid={name + "-value-" + i}
                    label={t("scale.score_label", { criterion: name, number: i + 1, min, max })}
                    value={(a.values || {})[r.key]}
                    onChange={(v) => set(name, { values: { ...(a.values || {}), [r.key]: v } }, kind === "likert" ? r.key : null)}
                  />
                )}
              </div>
            ))}
          </div>
        );
      })}
      {complete ? null : (
        <p className="text-muted mt-2 mb-0" data-testid="next-hint">
          {kind === "best_worst" ? t("scale.hint_best_worst") : t("scale.hint_values", { min, max })}
        </p>
      )}
      <button className="btn btn-primary mt-2" data-testid="next-item" disabled={!complete} onClick={() => onDone(answers, (Date.now() - started.current) / 1000, screen.take())}>
        {t("common.next")}
      </button>
    </div>
  );
}

function PriorQuestions({ questions, onDone }) {
  const [values, setValues] = React.useState({});
  const names = Object.keys(questions);
  return (
    <div data-testid="prior-questions">
      {names.map((name) => (
        <div key={name}>
          {serverText(questions[name])}{" "}
          {[
            [true, "yes"],
            [false, "no"],
          ].map(([v, answer]) => (
            <label key={answer} className="mr-2">
              <input type="radio" name={name} data-testid={name + "-" + answer} checked={values[name] === v} onChange={() => setValues({ ...values, [name]: v })} /> {t("common." + answer)}
            </label>
          ))}
        </div>
      ))}
      <button className="btn btn-primary mt-2" data-testid="submit-scales" disabled={names.some((n) => values[n] === undefined)} onClick={() => onDone(values)}>
        {t("common.submit")}
      </button>
    </div>
  );
}

function ScaleApp() {
  const mephisto = useMephistoTask();
  const { initialTaskData: data, taskConfig } = mephisto;
  useLanguage(taskConfig);
  const started = React.useRef(Date.now());
  const [ratings, setRatings] = React.useState({});
  const [durations, setDurations] = React.useState({});
  const [records, setRecords] = React.useState({});
  const [submitted, submit, submitAgain] = useSubmitWork(mephisto);
  let body;
  if (submitted) {
    body = <SubmitOutcome outcome={submitted} sentText={t("common.ratings_sent")} onRetry={submitAgain} testid="done" />;
  } else if (!data) {
    body = <div className="alert alert-secondary">{t("shell.loading")}</div>;
  } else {
    const index = Object.keys(ratings).length;
    body =
      index < data.shown.length ? (
        <ItemForm
          key={index}
          data={data}
          item={data.shown[index]}
          index={index}
          onDone={(answers, seconds, record) => {
            const id = data.shown[index].item_id;
            setDurations({ ...durations, [id]: seconds });
            setRecords({ ...records, [id]: record });
            setRatings({ ...ratings, [id]: answers });
          }}
        />
      ) : (
        <PriorQuestions
          questions={data.prior_questions}
          onDone={(prior) =>
            submit({
              ratings,
              prior_experience: prior,
              duration: (Date.now() - started.current) / 1000,
              item_durations: durations,
              item_provenance: records,
            })
          }
        />
      );
  }
  const instructions = (
    <div>
      <p>{t("scale.instructions_1")}</p>
      <p>{t("scale.instructions_2")}</p>
    </div>
  );
  return (
    <TaskShell mephisto={{ ...mephisto, inactiveText: null }} title={t("scale.title")} instructions={instructions}>
      {body}
    </TaskShell>
  );
}

ReactDOM.render(<ScaleApp />, document.getElementById("app"));
