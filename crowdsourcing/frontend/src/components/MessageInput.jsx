// The text box + Send button of every chat page; Enter sends too. Blank messages are never sent.
import React from "react";

export function MessageInput({ onSend, placeholder = "Type your reply" }) {
  const [text, setText] = React.useState("");
  const send = () => {
    if (text.trim()) {
      onSend(text.trim());
      setText("");
    }
  };
  return (
    <div className="dialeval-input-row">
      <input
        className="form-control response-text-input"
        placeholder={placeholder}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => e.key === "Enter" && send()}
      />
      <button className="btn btn-primary submit-response" onClick={send}>
        Send
      </button>
    </div>
  );
}
