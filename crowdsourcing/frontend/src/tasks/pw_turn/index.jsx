// PW-Turn (Smith et al. 2022, 3.1.2 + Appendix A). The world (crowdsourcing/pw_turn/worlds.py) sends
// task_data.phase: onboarding -> onboarding_done, then chat <-> choose until task_done. The page shows
// the dialogue, the two candidate replies (left/right already randomised by the world), and sends
// {action: "choose", choice, justification} or a chat message back.
import React from "react";
import ReactDOM from "react-dom";
import {
  useLiveTask,
  useSendOnce,
  TaskShell,
  SubmitPanel,
  SubmitOnceButton,
  MessageInput,
  TurnHistory,
  StreamingReply,
  ScreenedOut,
  t,
  usePageOptions,
  serverText,
  BotText,
  useScreenRecord,
  useTextRecord,
  AttentionInstruction,
} from "../../components";

const NUMBERS = { left: 1, right: 2 };
const optionName = (side) => t("pw_turn.option", { number: NUMBERS[side] });

// One candidate: its radio button beside its name and text (the whole card is the label).
function Option({ side, text, chosen, onChoose }) {
  return (
    <label className={"dialeval-option card p-2 mb-2" + (chosen ? " border-primary" : "")} data-testid={"option-" + side}>
      <span className="dialeval-option-head">
        <input type="radio" name="pw-choice" checked={chosen} onChange={onChoose} data-testid={"choose-" + side} /> <b>{optionName(side)}</b>
      </span>
      <BotText text={text} testid={"text-" + side} />
    </label>
  );
}

// state.attention: {choose: side} when this turn is an attention check (crowdsourcing/platform/checks.py); `screen`:
// the judgment's record (answerRecord.js), the justification's own nested in it
function ChoosePanel({ state, sendAction, screen }) {
  const [choice, setChoice] = React.useState(null);
  const [why, setWhy] = React.useState("");
  const [pending, sendOnce] = useSendOnce(state);
  const reason = useTextRecord();
  const pick = (side) => {
    screen.changed();
    setChoice(side);
  };
  return (
    <div data-testid="choose-panel">
      <p>
        {t("pw_turn.turn", { turn: state.turn, turns: state.num_turns })}{" "}
        {state.attention ? (
          <AttentionInstruction text={t("check.choose", { option: optionName(state.attention.choose) })} />
        ) : (
          <b data-testid="question">{serverText(state.question)}</b>
        )}
      </p>
      <Option side="left" text={state.left} chosen={choice === "left"} onChoose={() => pick("left")} />
      <Option side="right" text={state.right} chosen={choice === "right"} onChoose={() => pick("right")} />
      <label htmlFor="justification">{t("pw_turn.why")}</label>
      <input id="justification" ref={reason.ref} className="form-control" data-testid="justification" value={why} onChange={(e) => setWhy(e.target.value)} />
      <button
        className="btn btn-primary mt-2"
        data-testid="submit-choice"
        disabled={pending || !choice || !why.trim()}
        onClick={() => sendOnce(() => sendAction({ action: "choose", choice, justification: why.trim(), provenance: { ...screen.take(), justification: reason.take() } }))}
      >
        {t("pw_turn.choose")}
      </button>
    </div>
  );
}

function Onboarding({ state, sendAction }) {
  const pairs = state.pairs || [];
  const [choices, setChoices] = React.useState(pairs.map(() => null));
  const [pending, sendOnce] = useSendOnce(state);
  return (
    <div data-testid="onboarding">
      <p>
        {t("pw_turn.practice", { try: state.try, tries: state.max_tries })}{" "}
        {t(state.try < state.max_tries ? "pw_turn.practice_again" : "pw_turn.practice_last")}
      </p>
      {pairs.map((pair, idx) => (
        <div key={state.try + "-" + idx} className="mb-3" data-testid="onboarding-pair">
          <div>
            <b>{t("common.you")}:</b> <bdi>{pair.human}</bdi>
          </div>
          {["left", "right"].map((side) => (
            <label key={side} className="dialeval-option card p-2 mb-1">
              <span className="dialeval-option-head">
                <input
                  type="radio"
                  name={"onb-" + idx}
                  data-testid={"onboarding-" + idx + "-" + side}
                  checked={choices[idx] === side}
                  onChange={() => setChoices(choices.map((c, i) => (i === idx ? side : c)))}
                />{" "}
                <b>{optionName(side)}</b>
              </span>
              <BotText text={pair[side]} testid={"onboarding-" + idx + "-" + side + "-text"} />
            </label>
          ))}
        </div>
      ))}
      <button
        className="btn btn-primary"
        data-testid="submit-onboarding"
        disabled={pending || choices.some((c) => c === null)}
        onClick={() => sendOnce(() => sendAction({ action: "onboarding", choices }))}
      >
        {t(pending ? "pw_turn.checking" : "pw_turn.check")}
      </button>
    </div>
  );
}

function PairwiseTurnApp() {
  const live = useLiveTask();
  const { state, sendAction, handleSubmit, taskConfig } = live;
  usePageOptions(taskConfig);
  const screen = useScreenRecord(); // the choice screen's record (answerRecord.js); the history's scrolls in it
  React.useEffect(screen.restart, [state.phase, state.turn]);
  const warning = state.warning ? (
    <div className="alert alert-warning" data-testid="warning">
      {serverText(state.warning)}
    </div>
  ) : null;
  // Mephisto turns a worker who failed every try away once they continue: they read why, not its default
  const failed = state.phase === "onboarding_done" && !state.passed;
  const screenedOut = failed && live.blockedReason ? { ...live, blockedExplanation: <ScreenedOut lead={t("pw_turn.failed")} /> } : live;
  let body;
  if (state.phase === "onboarding_done") {
    body = (
      <div data-testid="onboarding-done">
        {state.passed ? <p>{t("pw_turn.passed")}</p> : <ScreenedOut lead={t("pw_turn.failed")} />}
        <SubmitOnceButton onSubmit={() => handleSubmit({ passed: state.passed })} testid="finish-onboarding" label={t("common.continue")} pendingLabel={t("common.please_wait")} />
      </div>
    );
  } else if (state.task_done) {
    body = <SubmitPanel mephisto={live} />;
  } else if (state.phase === "onboarding") {
    body = <Onboarding key={state.try} state={state} sendAction={sendAction} />;
  } else if (state.phase === "choose") {
    body = <ChoosePanel key={state.turn + "-" + (state.history || []).length} state={state} sendAction={sendAction} screen={screen} />;
  } else if (state.phase === "chat") {
    const streaming = typeof state.streaming_left === "string" || typeof state.streaming_right === "string";
    body = (
      <div>
        {streaming
          ? ["left", "right"].map((side) => (
              <StreamingReply
                key={side}
                streaming={state["streaming_" + side]}
                otherName={optionName(side)}
                testId={"streaming-" + side}
              />
            ))
          : null}
        <MessageInput
          maxLength={state.max_message_chars}
          busy={streaming}
          onSend={(text, record) => sendAction({ action: "message", provenance: record }, text)}
        />
      </div>
    );
  } else {
    body = <div className="alert alert-secondary">{t("common.connecting")}</div>;
  }
  const instructions = (
    <div>
      <p>{t("pw_turn.instructions_1", { turns: state.num_turns || 6 })}</p>
      <p>{t("pw_turn.instructions_2")}</p>
    </div>
  );
  return (
    <TaskShell mephisto={screenedOut} title={t("pw_turn.title")} instructions={instructions}>
      {state.phase !== "onboarding" ? (
        <div onScrollCapture={screen.onScroll}>
          <TurnHistory history={state.history} />
        </div>
      ) : null}
      {warning}
      {body}
    </TaskShell>
  );
}

ReactDOM.render(<PairwiseTurnApp />, document.getElementById("app"));
