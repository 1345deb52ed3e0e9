// The dialogue so far as the world sends it: blind turns, speaker "human" or "bot".
import React from "react";

export function TurnHistory({ history }) {
  return (
    <div className="dialeval-chat-log" data-testid="history" tabIndex={0} role="log" aria-label="The conversation so far">
      {(history || []).map((turn, idx) => (
        <div key={idx} className={turn.speaker === "human" ? "dialeval-msg-self" : "dialeval-msg-other"}>
          <span className={"dialeval-bubble " + (turn.speaker === "human" ? "dialeval-bubble-self" : "dialeval-bubble-other")}>
            <b>{turn.speaker === "human" ? "You" : "Partner"}:</b> <bdi data-testid="history-turn">{turn.text}</bdi>
          </span>
        </div>
      ))}
    </div>
  );
}
