// The text box + Send button of every chat page; Enter sends too. Blank messages are never sent, nor
// messages over `maxLength` characters (the world's limit, sent in its state): the page says so instead.
// While `busy` (a bot reply still arriving) nothing typed is lost or merged with the next draft: with
// `queue` (live chat, where the chat goes on after the reply) a message waits in a queue of one, shown
// under the box with `queuedNote`, and goes out when the reply ends; otherwise (the reply is rated next) it stays in the
// box, and the page says why.
import React from "react";
import { t } from "./i18n";
import { useTextRecord } from "./answerRecord";

export function MessageInput({ onSend, placeholder = t("input.placeholder"), label = t("input.label"), maxLength, busy = false, queue = false, queuedNote = t("input.queued") }) {
  const [text, setText] = React.useState("");
  const [queued, setQueued] = React.useState(null);
  const [note, setNote] = React.useState(null);
  const tooLong = maxLength && text.trim().length > maxLength;
  const record = useTextRecord(); // how the message was made, sent with it (answerRecord.js)
  React.useEffect(() => {
    if (!busy && queued !== null) {
      onSend(queued.message, queued.record);
      setQueued(null);
      setNote(null);
    }
  }, [busy, queued]);
  const send = () => {
    const message = text.trim();
    if (!message || tooLong) {
      return;
    }
    if (!busy) {
      onSend(message, record.take());
    } else if (!queue) {
      setNote(t("input.wait"));
      return;
    } else if (queued === null) {
      setQueued({ message, record: record.take() });
    } else {
      setNote(t("input.queue_full"));
      return;
    }
    setText("");
    setNote(null);
  };
  return (
    <div>
      <div className="dialeval-input-row">
        <input
          ref={record.ref}
          className="form-control response-text-input"
          aria-label={label}
          placeholder={placeholder}
          value={text}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.repeat) {
              e.preventDefault();
              send();
            }
          }}
        />
        <button className="btn btn-primary submit-response" onClick={send} disabled={!!tooLong}>
          {t("input.send")}
        </button>
      </div>
      {queued !== null ? (
        <p className="dialeval-queued" data-testid="msg-queued" role="status">
          {queuedNote} <bdi>{queued.message}</bdi>
        </p>
      ) : null}
      {note ? (
        <p className="dialeval-note" data-testid="queue-full" role="status">
          {note}
        </p>
      ) : null}
      {tooLong ? (
        <div className="alert alert-warning" data-testid="too-long">
          {t("input.too_long", { length: text.trim().length.toLocaleString("en"), limit: maxLength.toLocaleString("en") })}
        </div>
      ) : null}
    </div>
  );
}
