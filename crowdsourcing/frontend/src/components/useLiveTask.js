// Connects a worker page to its Mephisto live task and keeps two things in React state:
// `messages` (every chat line, in order) and `state` (the latest task_data the world sent,
// merged). Worlds drive the page by sending task_data; pages answer with sendAction.
import React from "react";
import { useMephistoLiveTask, AGENT_STATUS, STATUS_TO_TEXT_MAP } from "mephisto-task";
import { onAcknowledged, onRefused } from "./transport";

const INACTIVE = [
  AGENT_STATUS.DISCONNECT,
  AGENT_STATUS.RETURNED,
  AGENT_STATUS.EXPIRED,
  AGENT_STATUS.TIMEOUT,
  AGENT_STATUS.PARTNER_DISCONNECT,
  AGENT_STATUS.MEPHISTO_DISCONNECT,
];

export function useLiveTask() {
  // A message the worker sent stays `pending` until the server confirms it stored it (transport.js).
  const [messages, addMessage] = React.useReducer((previous, message) => {
    if (message === false) {
      return [];
    }
    if (message.dialevalAcked) {
      return previous.map((m) => (m.pending && message.dialevalAcked.includes(m.update_id) ? { ...m, pending: false } : m));
    }
    if (message.dialevalRefused) { // not stored: shown as not sent, with the reason (ChatLog)
      const { ids, reason } = message.dialevalRefused;
      return previous.map((m) => (m.pending && ids.includes(m.update_id) ? { ...m, pending: false, refused: reason || "" } : m));
    }
    return [...previous, message];
  }, []);
  React.useEffect(() => onAcknowledged((ids) => addMessage({ dialevalAcked: ids })), []);
  React.useEffect(() => onRefused((ids, reason) => addMessage({ dialevalRefused: { ids, reason } })), []);
  const [state, updateState] = React.useReducer((old, update) => ({ ...old, ...update }), {});
  const [inactiveText, setInactiveText] = React.useState(null);

  const mephisto = useMephistoLiveTask({
    onStatusUpdate: ({ status }) => {
      if (INACTIVE.includes(status)) {
        setInactiveText(STATUS_TO_TEXT_MAP[status] || "This task has ended.");
      }
    },
    onLiveUpdate: (message) => {
      if (message.task_data && Object.keys(message.task_data).length > 0) {
        if (message.task_data.clear_messages) {
          addMessage(false);
        }
        updateState(message.task_data);
      }
      if (message.text) {
        addMessage(message);
      }
    },
  });
  const { agentId, connect, sendLiveUpdate } = mephisto;

  React.useEffect(() => {
    if (agentId) {
      connect(agentId);
    }
  }, [agentId]);

  const sendAction = React.useCallback(
    (taskData, text = "") => {
      const message = { id: agentId, text, task_data: taskData, episode_done: false };
      return sendLiveUpdate(message).then((sent) => {
        if (text) {
          addMessage({ ...sent, pending: true });
        }
      });
    },
    [agentId, sendLiveUpdate]
  );

  return { ...mephisto, messages, state, inactiveText, sendAction };
}

// For buttons that send an answer to the world: after one click the button stays disabled until the
// world answers with a new state (its next step, or a warning), so a double click sends one answer.
export function useSendOnce(state) {
  const [pending, setPending] = React.useState(false);
  React.useEffect(() => setPending(false), [state]);
  const sendOnce = (send) => {
    setPending(true);
    send();
  };
  return [pending, sendOnce];
}
