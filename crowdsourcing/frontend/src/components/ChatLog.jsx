// The conversation so far. A participant's text is passed to React as a child, never as HTML, so whatever they
// type is shown literally; a bot's is safe markdown (BotText.jsx: no HTML, no links); each text in its own
// direction (<bdi>, dir="auto": a right-to-left message, or a U+202E in one, never reorders what follows).
// Speakers are told apart by the server's names (the bot's and "System"), never by the page's agent
// id: after a reload Mephisto replays the worker's own messages renamed by its ParlAI wrapper.
// Our own bubble rather than bootstrap-chat's ChatMessage: that one floats inside a flex row (so both
// speakers sat on the left) and marks every message role="alert" (a screen reader interrupted per line).
import React from "react";
import { BotText } from "./BotText";
import { serverText, t } from "./i18n";
import { slowReplyAfter } from "./pageOptions";

// `fromBot`: the text is a chatbot's, shown as markdown
export function Bubble({ isSelf, name, text, fromBot = false, children }) {
  return (
    <div className={"dialeval-bubble " + (isSelf ? "dialeval-bubble-self" : "dialeval-bubble-other")}>
      <b>{name}</b>: {fromBot ? <BotText text={text} /> : <bdi>{text}</bdi>}
      {children}
    </div>
  );
}

// Seconds since `active` became true (0 while false), ticking once a second.
function useSecondsActive(active) {
  const [seconds, setSeconds] = React.useState(0);
  React.useEffect(() => {
    setSeconds(0);
    if (!active) {
      return undefined;
    }
    const started = Date.now();
    const timer = setInterval(() => setSeconds(Math.floor((Date.now() - started) / 1000)), 1000);
    return () => clearInterval(timer);
  }, [active]);
  return seconds;
}

// `streaming` (the world's task_data.streaming): the bot's reply as it arrives, shown as a bubble after
// the log; "" shows a typing indicator; null/undefined shows nothing (the whole reply then arrives as
// a message of its own, so it appears once). A reply slower than the server's threshold (pageOptions.js) gets a
// calm note.
export function StreamingReply({ streaming, otherName = t("chat.chatbot"), testId = "bot-streaming" }) {
  const waiting = useSecondsActive(typeof streaming === "string");
  if (typeof streaming !== "string") {
    return null;
  }
  const slowSeconds = slowReplyAfter();
  const slow =
    slowSeconds !== null && waiting >= slowSeconds ? (
      <p className="dialeval-note" data-testid="slow-reply">
        {t("chat.slow")}
      </p>
    ) : null;
  if (!streaming) {
    return (
      <div>
        <p className="dialeval-typing" data-testid="bot-typing">
          {t("chat.typing", { name: otherName })}
        </p>
        {slow}
      </div>
    );
  }
  return (
    // not "dialeval-msg-other": that class marks the log's whole messages, which this is not yet
    <div className="dialeval-msg-streaming" data-testid={testId}>
      <Bubble isSelf={false} name={otherName} text={streaming} fromBot />
      {slow}
    </div>
  );
}

export function ChatLog({ messages, botId, selfName = t("chat.you"), otherName = t("chat.chatbot"), streaming = null }) {
  const end = React.useRef(null);
  React.useEffect(() => {
    if (end.current && end.current.scrollIntoView) {
      end.current.scrollIntoView({ block: "end" });
    }
  }, [messages.length, streaming]);
  return (
    // focusable: a keyboard user scrolls the log with the arrow keys once it is longer than its box
    <div className="dialeval-chat-log" data-testid="chat-log" tabIndex={0}>
      {/* role=log: a screen reader announces each new message once, politely; the reply as it streams is
          left out of it (it would be read word by word) and is announced when it arrives whole */}
      <div role="log" aria-live="polite" aria-label={t("chat.conversation")}>
        {messages.map((message, idx) => {
          const isSelf = message.id !== botId && message.id !== "System";
          return (
            <div className={isSelf ? "dialeval-msg-self" : "dialeval-msg-other"} key={idx}>
              <Bubble isSelf={isSelf} name={isSelf ? selfName : message.id === "System" ? "System" : otherName} text={message.text}
                fromBot={message.id === botId}>
                {message.dialeval_cut ? (
                  <span className="dialeval-cut" data-testid="reply-cut">
                    {" "}
                    {t("chat.cut")}
                  </span>
                ) : null}
              </Bubble>
              {isSelf && message.pending ? (
                // Not yet confirmed stored by the server (useLiveTask); resent until it is.
                <small className="dialeval-pending" data-testid="msg-pending">
                  {t("chat.sending")}
                </small>
              ) : null}
              {isSelf && typeof message.refused === "string" ? (
                // Refused by the server, never stored: the participant is told, in the page's language.
                <small className="dialeval-refused" data-testid="msg-refused" role="alert">
                  {t("chat.not_sent")} {serverText(message.refused)}
                </small>
              ) : null}
            </div>
          );
        })}
      </div>
      <StreamingReply streaming={streaming} otherName={otherName} />
      <div ref={end} />
    </div>
  );
}
