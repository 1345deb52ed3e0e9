// The text box + Send button of every chat page; Enter sends too. Blank messages are never sent, nor
// messages over `maxLength` characters (the world's limit, sent in its state): the page says so instead;
// nor anything while `disabled` (a bot reply still arriving): the worker may type, not send.
import React from "react";

export function MessageInput({ onSend, placeholder = "Type your reply", maxLength, disabled = false }) {
  const [text, setText] = React.useState("");
  const tooLong = maxLength && text.trim().length > maxLength;
  const send = () => {
    if (text.trim() && !tooLong && !disabled) {
      onSend(text.trim());
      setText("");
    }
  };
  return (
    <div>
      <div className="dialeval-input-row">
        <input
          className="form-control response-text-input"
          placeholder={placeholder}
          value={text}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => e.key === "Enter" && send()}
        />
        <button className="btn btn-primary submit-response" onClick={send} disabled={!!tooLong || disabled}>
          Send
        </button>
      </div>
      {tooLong ? (
        <div className="alert alert-warning" data-testid="too-long">
          Your message is {text.trim().length.toLocaleString("en")} characters long; the limit is{" "}
          {maxLength.toLocaleString("en")}. Please shorten it.
        </div>
      ) : null}
    </div>
  );
}
