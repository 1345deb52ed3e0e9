// The text box + Send button of every chat page; Enter sends too. Blank messages are never sent, nor
// messages over `maxLength` characters (the world's limit, sent in its state): the page says so instead.
import React from "react";

export function MessageInput({ onSend, placeholder = "Type your reply", maxLength }) {
  const [text, setText] = React.useState("");
  const tooLong = maxLength && text.trim().length > maxLength;
  const send = () => {
    if (text.trim() && !tooLong) {
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
        <button className="btn btn-primary submit-response" onClick={send} disabled={!!tooLong}>
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
