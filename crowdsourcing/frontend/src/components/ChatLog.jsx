// The conversation so far. Text is passed to React as a child, never as HTML, so whatever a
// worker or a bot types is shown literally (no markup or script is ever interpreted).
import React from "react";
import { ChatMessage } from "bootstrap-chat";

export function ChatLog({ messages, selfId, selfName = "You", otherName = "Chatbot" }) {
  const end = React.useRef(null);
  React.useEffect(() => {
    if (end.current && end.current.scrollIntoView) {
      end.current.scrollIntoView({ block: "end" });
    }
  }, [messages.length]);
  return (
    <div className="dialeval-chat-log" data-testid="chat-log">
      {messages.map((message, idx) => {
        const isSelf = message.id === selfId;
        return (
          <div className={isSelf ? "dialeval-msg-self" : "dialeval-msg-other"} key={idx}>
            <ChatMessage
              isSelf={isSelf}
              agentName={isSelf ? selfName : message.id === "System" ? "System" : otherName}
              message={message.text}
            />
          </div>
        );
      })}
      <div ref={end} />
    </div>
  );
}
