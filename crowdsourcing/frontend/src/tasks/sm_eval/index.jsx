// SM-Turn + SM-Dialog (Smith et al. 2022, 3.1.4, Figure 4). The world (crowdsourcing/sm_eval/worlds.py)
// sends task_data.phase: annotate (tick the latest partner message) -> chat -> ... -> rate, then
// task_done. The page sends {checked: [...]}, a chat message, or {ratings: {criterion: 1..5}}.
import React from "react";
import ReactDOM from "react-dom";
import {
  useLiveTask,
  useSendOnce,
  TaskShell,
  SubmitPanel,
  MessageInput,
  TurnHistory,
  StreamingReply,
  t,
  usePageOptions,
  serverText,
  useScreenRecord,
  AttentionInstruction,
} from "../../components";

const QUALITIES = ["engaging", "humanlike", "interesting"];

// state.attention: {tick} when this screen is an attention check (crowdsourcing/platform/checks.py)
function Annotate({ state, sendAction, screen }) {
  const [checked, setChecked] = React.useState([]);
  const [pending, sendOnce] = useSendOnce(state);
  const labels = state.labels || {};
  const toggle = (name) => {
    screen.changed(name);
    if (name === "none") {
      setChecked(checked.includes("none") ? [] : ["none"]);
    } else {
      const rest = checked.filter((c) => c !== "none" && c !== name);
      setChecked(checked.includes(name) ? rest : [...rest, name]);
    }
  };
  return (
    <div data-testid="annotate">
      <p>
        {state.attention ? (
          <AttentionInstruction text={t("check.tick", { label: serverText(labels[state.attention.tick] || state.attention.tick) })} />
        ) : (
          t("sm_eval.annotate")
        )}
      </p>
      {[...QUALITIES, "none"].map((name) => (
        <div className="form-check form-check-inline" key={name}>
          <input
            className="form-check-input"
            type="checkbox"
            id={"mark-" + name}
            data-testid={"mark-" + name}
            checked={checked.includes(name)}
            onChange={() => toggle(name)}
          />
          <label className="form-check-label" htmlFor={"mark-" + name}>
            {serverText(labels[name] || name)}
          </label>
        </div>
      ))}
      <div>
        <button
          className="btn btn-primary mt-2"
          data-testid="submit-marks"
          disabled={pending || checked.length === 0}
          onClick={() => sendOnce(() => sendAction({ checked, provenance: screen.take() }))}
        >
          {t("common.continue")}
        </button>
      </div>
    </div>
  );
}

function Rate({ state, sendAction, screen }) {
  const questions = state.questions || [];
  const [ratings, setRatings] = React.useState({});
  const [pending, sendOnce] = useSendOnce(state);
  const scale = [];
  for (let v = state.min || 1; v <= (state.max || 5); v += 1) scale.push(v);
  return (
    <div data-testid="rate">
      <p>{serverText(state.prompt)}</p>
      {questions.map((q) => (
        <div key={q.criterion} className="mb-2" data-testid={"likert-" + q.criterion}>
          <div>{serverText(q.question)}</div>
          {scale.map((v) => (
            <label key={v} className="mr-3">
              <input
                type="radio"
                name={"likert-" + q.criterion}
                data-testid={"likert-" + q.criterion + "-" + v}
                checked={ratings[q.criterion] === v}
                onChange={() => {
                  screen.changed(q.criterion);
                  setRatings({ ...ratings, [q.criterion]: v });
                }}
              />{" "}
              {v}
            </label>
          ))}
        </div>
      ))}
      <button
        className="btn btn-primary"
        data-testid="submit-ratings"
        disabled={pending || questions.some((q) => !ratings[q.criterion])}
        onClick={() => sendOnce(() => sendAction({ ratings, provenance: screen.take() }))}
      >
        {t("sm_eval.finish")}
      </button>
    </div>
  );
}

function SingleModelApp() {
  const live = useLiveTask();
  const { state, sendAction, taskConfig } = live;
  usePageOptions(taskConfig);
  // one judgment screen's record per annotation or rating screen (answerRecord.js), the history's scrolls in it
  const screen = useScreenRecord();
  React.useEffect(screen.restart, [state.phase, state.turn_index]);
  let body;
  if (state.task_done) {
    body = <SubmitPanel mephisto={live} />;
  } else if (state.phase === "annotate") {
    body = <Annotate key={state.turn_index} state={state} sendAction={sendAction} screen={screen} />;
  } else if (state.phase === "chat") {
    body = (
      <MessageInput
        maxLength={state.max_message_chars}
        busy={typeof state.streaming === "string"}
        onSend={(text, record) => sendAction({ action: "message", provenance: record }, text)}
      />
    );
  } else if (state.phase === "rate") {
    body = <Rate state={state} sendAction={sendAction} screen={screen} />;
  } else {
    body = <div className="alert alert-secondary">{t("common.connecting")}</div>;
  }
  const persona = state.persona && state.persona.length ? (
    <div data-testid="persona">
      <p>{t("sm_eval.persona")}</p>
      <ul>
        {state.persona.map((s, i) => (
          <li key={i}>
            <bdi>{s}</bdi>
          </li>
        ))}
      </ul>
    </div>
  ) : null;
  const instructions = (
    <div>
      <p>{t("sm_eval.instructions", { turns: state.num_turns || 6 })}</p>
    </div>
  );
  return (
    <TaskShell mephisto={live} title={t("sm_eval.title")} instructions={instructions}>
      {persona /* with the task, not the folded instructions: a phone shows it too */}
      <div onScrollCapture={screen.onScroll}>
        <TurnHistory history={state.history} />
      </div>
      <StreamingReply streaming={state.streaming} otherName={t("common.partner")} />
      {state.warning ? (
        <div className="alert alert-warning" data-testid="warning">
          {serverText(state.warning)}
        </div>
      ) : null}
      {body}
    </TaskShell>
  );
}

ReactDOM.render(<SingleModelApp />, document.getElementById("app"));
