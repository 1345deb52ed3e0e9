// The dialogue so far as the world sends it: blind turns, speaker "human" or "bot".
import React from "react";
import { t } from "./i18n";

export function TurnHistory({ history }) {
  return (
    <div className="dialeval-chat-log" data-testid="history" tabIndex={0} role="log" aria-label={t("common.history")}>
      {(history || []).map((turn, idx) => (
        <div key={idx} className={turn.speaker === "human" ? "dialeval-msg-self" : "dialeval-msg-other"}>
          <span className={"dialeval-bubble " + (turn.speaker === "human" ? "dialeval-bubble-self" : "dialeval-bubble-other")}>
            <b>{t(turn.speaker === "human" ? "common.you" : "common.partner")}:</b> <bdi data-testid="history-turn">{turn.text}</bdi>
          </span>
        </div>
      ))}
    </div>
  );
}
