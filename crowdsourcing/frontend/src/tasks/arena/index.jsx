// Arena battles (crowdsourcing/arena/worlds.py). The world sends task_data.phase: prompt -> answering -> vote ->
// voted -> (answering | revealed) -> (prompt | done), the current battle's turns blind (sides "a"/"b"), the two
// replies as they stream (streaming_a/_b, finished_a/_b), and the models' names only once the battle has ended
// (revealed). The page sends a chat message ({action: "message"}), {action: "vote", choice}, {action: "end"} or
// {action: "finish"}. One text box serves the whole session: what is typed while the models answer waits under it
// and goes out when the battle can take it (after the vote). Each prompt and each vote carries the page's record of
// how it was made (`provenance`: answerRecord.js, as on every task's page); an attention battle's vote says which
// answer to give (task_data.attention, crowdsourcing/platform/checks.py).
import React from "react";
import ReactDOM from "react-dom";
import {
  useLiveTask,
  useSendOnce,
  TaskShell,
  SubmitPanel,
  MessageInput,
  StreamingReply,
  t,
  usePageOptions,
  serverText,
  BotText,
  useScreenRecord,
  AttentionInstruction,
} from "../../components";
import "./arena.css";

const SIDES = ["a", "b"];
const sideName = (side) => t(side === "a" ? "arena.model_a" : "arena.model_b");
const VOTES = [
  ["a", "arena.a_better"],
  ["b", "arena.b_better"],
  ["tie", "arena.tie"],
  ["both_bad", "arena.both_bad"],
];
const voteLabel = (choice) => t((VOTES.find(([key]) => key === choice) || [null, "arena.tie"])[1]);

// One side's reply: its name above, the text as safe markdown in its own direction (BotText), a mark when the
// length limit cut it.
function Reply({ side, reply }) {
  return (
    <div className="dialeval-bubble dialeval-bubble-other dialeval-arena-reply" data-testid={"reply-" + side}>
      <BotText text={reply.text} />
      {reply.cut ? (
        <span className="dialeval-cut" data-testid="reply-cut">
          {" "}
          {t("chat.cut")}
        </span>
      ) : null}
    </div>
  );
}

function Turn({ turn, index, live }) {
  return (
    <section className="dialeval-arena-turn" aria-label={t("arena.turn", { turn: index + 1 })}>
      <div className="dialeval-msg-self">
        <span className="dialeval-bubble dialeval-bubble-self">
          <b>{t("common.you")}:</b> <bdi data-testid="prompt">{turn.prompt}</bdi>
        </span>
      </div>
      <div className="row dialeval-arena-sides">
        {SIDES.map((side) => (
          <div className="col-md-6 dialeval-arena-side" key={side} data-testid={"side-" + side}>
            <h2 className="h6">{sideName(side)}</h2>
            {turn.replies ? (
              <Reply side={side} reply={turn.replies[side]} />
            ) : live && live["finished_" + side] ? (
              <div>
                <Reply side={side} reply={{ text: live["streaming_" + side] || "", cut: false }} />
                <p className="dialeval-note" data-testid={"finished-" + side}>
                  {t("arena.side_finished", { name: sideName(side) })}
                </p>
              </div>
            ) : live ? (
              <StreamingReply streaming={live["streaming_" + side] ?? ""} otherName={sideName(side)} testId={"streaming-" + side} />
            ) : null}
          </div>
        ))}
      </div>
      {turn.vote ? (
        <p className="dialeval-note" data-testid="your-vote">
          {t("arena.your_vote", { vote: voteLabel(turn.vote) })}
        </p>
      ) : null}
    </section>
  );
}

// `screen`: the vote screen's record (answerRecord.js), restarted when both replies are complete
function VotePanel({ state, sendAction, screen }) {
  const [pending, sendOnce] = useSendOnce(state);
  const locked = state.phase !== "vote";
  const vote = (choice) => {
    screen.changed();
    sendOnce(() => sendAction({ action: "vote", choice, provenance: screen.take() }));
  };
  return (
    <fieldset className="dialeval-arena-vote" data-testid="vote-panel">
      <legend className="h6">
        {state.attention ? <AttentionInstruction text={t("check.choose", { option: `"${voteLabel(state.attention.choose)}"` })} /> : t("arena.question")}
      </legend>
      <div className="dialeval-arena-buttons">
        {VOTES.map(([choice, label]) => (
          <button
            key={choice}
            className="btn btn-outline-primary"
            data-testid={"vote-" + choice}
            disabled={locked || pending}
            onClick={() => vote(choice)}
          >
            {t(label)}
          </button>
        ))}
      </div>
      {locked ? (
        <p className="dialeval-note" data-testid="vote-locked">
          {t("arena.vote_locked")}
        </p>
      ) : null}
    </fieldset>
  );
}

function ArenaApp() {
  const live = useLiveTask();
  const { state, sendAction, taskConfig, messages } = live;
  usePageOptions(taskConfig);
  const [pendingEnd, sendOnce] = useSendOnce(state);
  const phase = state.phase;
  const screen = useScreenRecord(); // the vote screen's record, from when both replies are complete
  React.useEffect(() => {
    if (phase === "vote") screen.restart();
  }, [phase, state.battle, (state.turns || []).length]);
  if (state.task_done || phase === "done") {
    return (
      <TaskShell mephisto={live} title={t("arena.done_title")} instructions={<Instructions state={state} />}>
        <SubmitPanel mephisto={live} />
      </TaskShell>
    );
  }
  const turns = state.turns || [];
  const answering = phase === "answering";
  // the box takes a message when the battle can: first prompt, next turn after a vote, a new battle's prompt
  const open = phase === "prompt" || (phase === "voted" && state.can_continue) || (phase === "revealed" && state.can_start);
  const label = phase === "voted" ? t("arena.continue_label") : phase === "revealed" ? t("arena.new_label") : t("arena.prompt_label");
  // the box stays while what is typed can still go somewhere (this battle's next turn or a later battle); after the
  // last vote it would hold a message that is never sent
  const laterBattle = (state.battle || 0) < state.max_battles && !state.certified;
  const textWanted = phase === "prompt" || (phase === "revealed" ? state.can_start : turns.length < state.max_turns || laterBattle);
  const unconfirmed = messages.filter((m) => m.pending);
  return (
    <TaskShell mephisto={live} title={t("arena.title")} instructions={<Instructions state={state} />}>
      {phase ? (
        <p data-testid="battle-count">
          {t("arena.battle", { battle: state.battle, max: state.max_battles })} {t("arena.progress", { done: state.battles_done, min: state.min_battles })}
        </p>
      ) : (
        <div className="alert alert-secondary">{t("common.connecting")}</div>
      )}
      {state.warning ? (
        <div className="alert alert-warning" data-testid="warning" role="status">
          {serverText(state.warning)}
        </div>
      ) : null}
      <div className="dialeval-arena-battle" data-testid="battle" role="log" aria-label={t("arena.battle_log")} onScrollCapture={screen.onScroll}>
        {turns.map((turn, index) => (
          <Turn key={index} turn={turn} index={index} live={answering && index === turns.length - 1 ? state : null} />
        ))}
        {unconfirmed.map((m, index) => (
          <div className="dialeval-msg-self" key={"pending-" + index}>
            <span className="dialeval-bubble dialeval-bubble-self">
              <b>{t("common.you")}:</b> <bdi>{m.text}</bdi>
            </span>
            <small className="dialeval-pending" data-testid="msg-pending">
              {t("chat.sending")}
            </small>
          </div>
        ))}
      </div>
      {phase === "answering" || phase === "vote" ? <VotePanel state={state} sendAction={sendAction} screen={screen} /> : null}
      {phase === "voted" ? (
        <div className="dialeval-arena-after" data-testid="after-vote">
          <p className="dialeval-note" role="status" data-testid="vote-saved">
            {t("arena.vote_saved")} {state.can_continue ? t("arena.go_on") : state.max_turns === 1 ? t("arena.turns_done_one") : t("arena.turns_done", { turns: state.max_turns })}
          </p>
          <button className="btn btn-primary" data-testid="end-battle" disabled={pendingEnd} onClick={() => sendOnce(() => sendAction({ action: "end" }))}>
            {t("arena.end")}
          </button>
        </div>
      ) : null}
      {phase === "revealed" && state.revealed ? (
        <div className="dialeval-arena-revealed" data-testid="revealed" role="status">
          {state.battle_failed ? <p>{t("arena.failed_battle")}</p> : null}
          <p>
            <b>{t("arena.model_a")}:</b> <Revealed side="a" name={state.revealed.a} /> · <b>{t("arena.model_b")}:</b>{" "}
            <Revealed side="b" name={state.revealed.b} />
          </p>
          <p className="dialeval-note">
            {state.certified ? t("arena.certified") : state.can_start ? t("arena.next") : t("arena.all_done", { max: state.max_battles })}
          </p>
        </div>
      ) : null}
      {phase === "revealed" && state.can_finish ? (
        <button className="btn btn-success mb-2" data-testid="finish" disabled={pendingEnd} onClick={() => sendOnce(() => sendAction({ action: "finish" }))}>
          {t("arena.finish")}
        </button>
      ) : null}
      {phase && open ? <p className="dialeval-arena-label">{label}</p> : null}
      {phase && textWanted ? (
        <MessageInput
          label={label}
          placeholder={t("arena.placeholder")}
          maxLength={state.max_message_chars}
          busy={!open}
          queue
          queuedNote={t("arena.queued")}
          onSend={(text, record) => sendAction({ action: "message", provenance: record }, text)}
        />
      ) : null}
    </TaskShell>
  );
}

// A side's name once the battle has ended; null: a gold battle's clearly broken test reply (no model's)
function Revealed({ side, name }) {
  return name === null || name === undefined ? (
    <span data-testid={"name-" + side}>{t("arena.test_reply")}</span>
  ) : (
    <bdi data-testid={"name-" + side}>{name}</bdi>
  );
}

// the catalogues have no plural forms: one turn, one battle and an exact number of battles have sentences of their own
function Instructions({ state }) {
  const turns = state.max_turns || 3;
  const [min, max] = [state.min_battles || 1, state.max_battles || 1];
  const battles = min !== max ? t("arena.instructions_3", { min, max }) : min === 1 ? t("arena.instructions_3_one") : t("arena.instructions_3_exact", { min });
  return (
    <div>
      <p>{t("arena.instructions_1")}</p>
      <p>{turns === 1 ? t("arena.instructions_2_one") : t("arena.instructions_2", { turns })}</p>
      <p>
        {battles} {t("arena.instructions_names")}
      </p>
    </div>
  );
}

ReactDOM.render(<ArenaApp />, document.getElementById("app"));
