// The dialogue so far as the world sends it: blind turns, speaker "human" or "bot" (a bot's text as markdown,
// BotText.jsx). Nothing while there is no turn yet (an empty box said nothing); scrolled to its last turn whenever
// one comes, inside its own box (the page itself does not jump).
import React from "react";
import { BotText } from "./BotText";
import { t } from "./i18n";

export function TurnHistory({ history }) {
  const box = React.useRef(null);
  const turns = history || [];
  React.useEffect(() => {
    if (box.current) {
      box.current.scrollTop = box.current.scrollHeight;
    }
  }, [turns.length]);
  if (turns.length === 0) {
    return null;
  }
  return (
    <div className="dialeval-chat-log" data-testid="history" tabIndex={0} role="log" aria-label={t("common.history")} ref={box}>
      {turns.map((turn, idx) => (
        <div key={idx} className={turn.speaker === "human" ? "dialeval-msg-self" : "dialeval-msg-other"}>
          <div className={"dialeval-bubble " + (turn.speaker === "human" ? "dialeval-bubble-self" : "dialeval-bubble-other")}>
            <b>{t(turn.speaker === "human" ? "common.you" : "common.partner")}:</b>{" "}
            {turn.speaker === "human" ? <bdi data-testid="history-turn">{turn.text}</bdi> : <BotText text={turn.text} testid="history-turn" />}
          </div>
        </div>
      ))}
    </div>
  );
}
