// The conversation so far. Text is passed to React as a child, never as HTML, so whatever a
// worker or a bot types is shown literally (no markup or script is ever interpreted).
// Speakers are told apart by the server's names (the bot's and "System"), never by the page's agent
// id: after a reload Mephisto replays the worker's own messages renamed by its ParlAI wrapper.
import React from "react";
import { ChatMessage } from "bootstrap-chat";

// `streaming` (the world's task_data.streaming): the bot's reply as it arrives, shown as a bubble after
// the log; "" shows a typing indicator; null/undefined shows nothing (the whole reply then arrives as
// a message of its own, so it appears once).
export function StreamingReply({ streaming, otherName = "Chatbot", testId = "bot-streaming" }) {
  if (typeof streaming !== "string") {
    return null;
  }
  if (!streaming) {
    return (
      <p className="text-muted dialeval-typing" data-testid="bot-typing">
        {otherName} is typing...
      </p>
    );
  }
  return (
    <div className="dialeval-msg-streaming" data-testid={testId}>
      <ChatMessage isSelf={false} agentName={otherName} message={streaming} />
    </div>
  );
}

export function ChatLog({ messages, botId, selfName = "You", otherName = "Chatbot", streaming = null }) {
  const end = React.useRef(null);
  React.useEffect(() => {
    if (end.current && end.current.scrollIntoView) {
      end.current.scrollIntoView({ block: "end" });
    }
  }, [messages.length, streaming]);
  return (
    <div className="dialeval-chat-log" data-testid="chat-log">
      {messages.map((message, idx) => {
        const isSelf = message.id !== botId && message.id !== "System";
        return (
          <div className={isSelf ? "dialeval-msg-self" : "dialeval-msg-other"} key={idx}>
            <ChatMessage
              isSelf={isSelf}
              agentName={isSelf ? selfName : message.id === "System" ? "System" : otherName}
              message={message.text}
            />
            {isSelf && message.pending ? (
              // Not yet confirmed stored by the server (useLiveTask); resent after a reconnect.
              <small className="text-muted" data-testid="msg-pending">
                sending...
              </small>
            ) : null}
          </div>
        );
      })}
      <StreamingReply streaming={streaming} otherName={otherName} />
      <div ref={end} />
    </div>
  );
}
