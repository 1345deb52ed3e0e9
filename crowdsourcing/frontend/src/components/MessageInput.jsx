// The text box + Send button of every chat page; Enter sends too. Blank messages are never sent, nor
// anything while `disabled` (a bot reply still arriving): the worker may type, not send.
import React from "react";

export function MessageInput({ onSend, placeholder = "Type your reply", disabled = false }) {
  const [text, setText] = React.useState("");
  const send = () => {
    if (text.trim() && !disabled) {
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
      <button className="btn btn-primary submit-response" onClick={send} disabled={disabled}>
        Send
      </button>
    </div>
  );
}
