// Live-chat direct assessment (Ji et al. 2022): topic entry, chat, seven 0-100 statements per
// chatbot, feedback at the end. The world (crowdsourcing/live_chat_da/worlds.py) drives the
// phases through task_data; this page only renders them and sends the worker's actions back.
import React from "react";
import ReactDOM from "react-dom";
import {
  useLiveTask,
  useSendOnce,
  ChatLog,
  ContinuousSlider,
  TaskShell,
  SubmitPanel,
  MessageInput,
  t,
  usePageOptions,
  serverText,
  useScreenRecord,
  useTextRecord,
  useDraft,
  isPercent,
  isText,
} from "../../components";
import { Instructions } from "./Instructions.jsx";

const ATTITUDES = ["like", "ambivalent", "dislike"];

// The answers of the topic, rating and feedback screens are drafts kept for the page (useDraft) until they are sent:
// a reload, Back or Forward finds them again.
function TopicForm({ state, sendAction }) {
  const [topic, setTopic, forgetTopic] = useDraft("topic:" + state.slot, "", isText);
  const [attitude, setAttitude, forgetAttitude] = useDraft("attitude:" + state.slot, null, (v) => ATTITUDES.includes(v));
  const [pending, sendOnce] = useSendOnce(state);
  const fixedTopic = state.ice_breaker ? state.persona : null;
  const ready = (fixedTopic || topic.trim()) && attitude;
  return (
    <div data-testid="topic-form">
      <h2 className="h5">{t("live_chat.slot", { slot: state.slot + 1, slots: state.num_slots })}</h2>
      {fixedTopic ? (
        <p>
          {t("live_chat.fixed_topic")} <bdi data-testid="ice-breaker">{fixedTopic}</bdi>
        </p>
      ) : (
        <div className="form-group">
          <label htmlFor="topic-input">{t("live_chat.topic_question")}</label>
          <input
            id="topic-input"
            className="form-control"
            placeholder={t("live_chat.topic_example")}
            value={topic}
            onChange={(e) => setTopic(e.target.value)}
          />
        </div>
      )}
      <fieldset className="form-group">
        <legend className="col-form-label">{t("live_chat.attitude_question")}</legend>
        {ATTITUDES.map((value) => (
          <div className="form-check" key={value}>
            <input
              className="form-check-input"
              type="radio"
              name="attitude"
              id={"attitude-" + value}
              checked={attitude === value}
              onChange={() => setAttitude(value)}
            />
            <label className="form-check-label" htmlFor={"attitude-" + value}>
              {t("live_chat." + value)}
            </label>
          </div>
        ))}
      </fieldset>
      {state.warning ? <div className="alert alert-warning">{serverText(state.warning)}</div> : null}
      <button
        className="btn btn-primary"
        data-testid="start-chat"
        disabled={pending || !ready}
        onClick={() =>
          sendOnce(() => {
            sendAction({ action: "topic", topic: fixedTopic || topic.trim(), attitude });
            forgetTopic();
            forgetAttitude();
          })
        }
      >
        {t("live_chat.start")}
      </button>
    </div>
  );
}

function ChatPanel({ state, messages, sendAction }) {
  const [changingTopic, setChangingTopic] = React.useState(false);
  const [newTopic, setNewTopic] = React.useState("");
  const [pending, sendOnce] = useSendOnce(state);
  // The server counts the inputs and judges "Next chatbot" (a count kept by the page would restart
  // at 0 when the tab is reopened); its refusal arrives as state.warning, cleared by its next reply.
  const enough = (state.inputs || 0) >= (state.min_inputs || 0);
  return (
    <div data-testid="chat-panel">
      <div className="dialeval-topic-bar">
        <span>
          {t("live_chat.slot", { slot: state.slot + 1, slots: state.num_slots })}. {t("live_chat.current_topic")}{" "}
          <b>
            <bdi data-testid="current-topic">{state.topic}</bdi>
          </b>
        </span>
        <span className={enough ? "dialeval-go-on" : ""} data-testid="input-count">
          {t("live_chat.inputs", { inputs: state.inputs || 0, minimum: state.min_inputs || 0 })}
        </span>
      </div>
      <ChatLog messages={messages} botId={state.bot_id} streaming={state.streaming} />
      {state.warning ? (
        <div className="alert alert-warning" data-testid="warning">
          {serverText(state.warning)}
        </div>
      ) : null}
      <MessageInput
        placeholder={t("live_chat.message_placeholder")}
        maxLength={state.max_message_chars}
        busy={typeof state.streaming === "string"}
        queue
        onSend={(text, record) => sendAction({ action: "message", provenance: record }, text)}
      />
      {enough ? (
        <p className="dialeval-go-on" role="status" data-testid="may-go-on" style={{ marginTop: 8 }}>
          {t("live_chat.go_on")}
        </p>
      ) : null}
      <div className="dialeval-input-row" style={{ marginTop: 8 }}>
        <button className="btn btn-outline-secondary" data-testid="topic-button" onClick={() => setChangingTopic(!changingTopic)}>
          {t("live_chat.topic_button")}
        </button>
        <button
          className={enough ? "btn btn-success" : "btn btn-outline-secondary"}
          data-testid="next-chatbot"
          disabled={pending}
          onClick={() => sendOnce(() => sendAction({ action: "next" }))}
        >
          {t("live_chat.next")}
        </button>
      </div>
      {changingTopic ? (
        // a form, so Enter in the box sends the new topic as the button does (it did nothing: the change was lost)
        <form
          className="dialeval-input-row"
          style={{ marginTop: 8 }}
          data-testid="topic-change-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (!newTopic.trim()) return;
            sendAction({ action: "topic_change", topic: newTopic.trim() });
            setNewTopic("");
            setChangingTopic(false);
          }}
        >
          <input className="form-control" aria-label={t("live_chat.new_topic")} placeholder={t("live_chat.new_topic")} value={newTopic} onChange={(e) => setNewTopic(e.target.value)} />
          <button type="submit" className="btn btn-secondary" disabled={!newTopic.trim()}>
            {t("live_chat.update_topic")}
          </button>
        </form>
      ) : null}
    </div>
  );
}

// The seven statements; with an attention check (state.attention: {value, position}) an eighth slider among
// them asks for a stated value instead (crowdsourcing/platform/checks.py).
function RatingForm({ state, messages, sendAction }) {
  const statements = state.statements || [];
  const [values, setValues, forgetValues] = useDraft("rating:" + state.slot, statements.map(() => null),
    (v) => Array.isArray(v) && v.length === statements.length && v.every((x) => x === null || isPercent(x)));
  const attention = state.attention || null;
  const [checked, setChecked, forgetChecked] = useDraft("attention:" + state.slot, null, isPercent);
  const done = values.every((v) => v !== null) && (!attention || checked !== null);
  const [pending, sendOnce] = useSendOnce(state);
  const screen = useScreenRecord();
  const sliders = statements.map((statement, idx) => (
    <ContinuousSlider
      key={state.slot + "-" + idx}
      name={String(idx)}
      statement={serverText(statement)}
      value={values[idx]}
      onChange={(v) => setValues(values.map((old, i) => (i === idx ? v : old)))}
    />
  ));
  if (attention) {
    sliders.splice(Math.min(attention.position || 0, sliders.length), 0, (
      <ContinuousSlider
        key={state.slot + "-attention"}
        name="attention"
        statement={t("check.slider", { value: attention.value })}
        value={checked}
        onChange={setChecked}
        left="0"
        right="100"
      />
    ));
  }
  return (
    <div data-testid="rating-form">
      {messages.length ? (
        <details className="dialeval-reread" onToggle={screen.reread} onScrollCapture={screen.onScroll}>
          <summary>{t("live_chat.reread")}</summary>
          <ChatLog messages={messages} botId={state.bot_id} />
        </details>
      ) : null}
      <h2 className="h5">{t("live_chat.rate_question")}</h2>
      {sliders}
      {done ? null : <p className="dialeval-note">{t("live_chat.move_every_slider")}</p>}
      {state.warning ? <div className="alert alert-warning">{serverText(state.warning)}</div> : null}
      <button
        className="btn btn-primary"
        data-testid="submit-ratings"
        disabled={pending || !done}
        onClick={() =>
          sendOnce(() => {
            sendAction({ action: "rating", values, provenance: screen.take(), ...(attention ? { attention: checked } : {}) });
            forgetValues();
            forgetChecked();
          })
        }
      >
        {t("live_chat.rate_next")}
      </button>
    </div>
  );
}

function FailedPanel({ state, sendAction }) {
  const [pending, sendOnce] = useSendOnce(state);
  return (
    <div data-testid="failed-panel">
      <div className="alert alert-danger">{serverText(state.failure_text)}</div>
      <button className="btn btn-primary" data-testid="next-after-failure" disabled={pending} onClick={() => sendOnce(() => sendAction({ action: "next" }))}>
        {t("live_chat.continue")}
      </button>
    </div>
  );
}

function FeedbackForm({ state, sendAction }) {
  const [feedback, setFeedback, forgetFeedback] = useDraft("feedback", "", isText);
  const [pending, sendOnce] = useSendOnce(state);
  const record = useTextRecord("feedback"); // kept with the draft: a text brought back by a reload stays accounted for
  return (
    <div data-testid="feedback-form">
      <label htmlFor="feedback">{t("live_chat.feedback")}</label>
      <textarea id="feedback" ref={record.ref} className="form-control" rows="4" value={feedback} onChange={(e) => setFeedback(e.target.value)} />
      <button
        className="btn btn-primary"
        style={{ marginTop: 8 }}
        data-testid="send-feedback"
        disabled={pending}
        onClick={() =>
          sendOnce(() => {
            sendAction({ action: "feedback", feedback, provenance: record.take() });
            forgetFeedback();
          })
        }
      >
        {t("live_chat.finish")}
      </button>
    </div>
  );
}

function LiveChatApp() {
  const live = useLiveTask();
  const { state, messages, sendAction, taskConfig } = live;
  usePageOptions(taskConfig);
  let body;
  if (state.task_done) {
    body = <SubmitPanel mephisto={live} />;
  } else if (state.phase === "topic") {
    body = <TopicForm key={state.slot} state={state} sendAction={sendAction} />;
  } else if (state.phase === "chat") {
    body = <ChatPanel key={state.slot} state={state} messages={messages} sendAction={sendAction} />;
  } else if (state.phase === "rate") {
    body = <RatingForm key={state.slot} state={state} messages={messages} sendAction={sendAction} />;
  } else if (state.phase === "failed") {
    body = <FailedPanel state={state} sendAction={sendAction} />;
  } else if (state.phase === "feedback") {
    body = <FeedbackForm state={state} sendAction={sendAction} />;
  } else {
    body = <div className="alert alert-secondary">{t("live_chat.connecting")}</div>;
  }
  const numSlots = state.num_slots || (taskConfig && taskConfig.frontend_task_opts && taskConfig.frontend_task_opts.num_slots) || 6;
  return (
    <TaskShell mephisto={live} title={t("live_chat.title")} instructions={<Instructions numSlots={numSlots} minInputs={state.min_inputs || 10} />}>
      {body}
    </TaskShell>
  );
}

ReactDOM.render(<LiveChatApp />, document.getElementById("app"));
