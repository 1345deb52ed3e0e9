// Connects a worker page to its Mephisto live task and keeps two things in React state:
// `messages` (every chat line, in order) and `state` (the latest task_data the world sent,
// merged). Worlds drive the page by sending task_data; pages answer with sendAction.
import React from "react";
import { useMephistoLiveTask, AGENT_STATUS } from "mephisto-task";
import { t } from "./i18n";
import { usePatientSocket } from "./serverSilence";
import { onAcknowledged, onEnded, onRefused } from "./transport";

// Mephisto's statuses that end the task for this page -> our own words (the catalogue's, in the study's language),
// never mephisto-task's stock texts ("Our server appears to have gone down..."). The server says when the
// researcher stopped the study (transport.js onEnded): that is said, whatever status follows.
const ENDED = {
  [AGENT_STATUS.DISCONNECT]: "ended.disconnected",
  [AGENT_STATUS.RETURNED]: "ended.other",
  [AGENT_STATUS.EXPIRED]: "ended.expired",
  [AGENT_STATUS.TIMEOUT]: "ended.timed_out",
  [AGENT_STATUS.PARTNER_DISCONNECT]: "ended.other",
  [AGENT_STATUS.MEPHISTO_DISCONNECT]: "ended.server_gone",
};

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
  const [stopped, setStopped] = React.useState(false);
  React.useEffect(() => onEnded(() => setStopped(true)), []);

  const mephisto = useMephistoLiveTask({
    customConnectionHook: usePatientSocket,
    onStatusUpdate: ({ status }) => {
      if (status in ENDED) {
        setInactiveText(t(ENDED[status]));
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

  return { ...mephisto, messages, state, inactiveText: stopped ? t("ended.stopped") : inactiveText, sendAction };
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
