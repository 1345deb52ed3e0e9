// When a page may say "the study's server is not answering". mephisto-task 2.0.4 (socket_handler.jsx) says it once
// the router's last word from the server, as this page last heard it, is over 20 s old, and checks that before it
// sends its next heartbeat. A page whose timers were held (a phone's browser in the background or its screen
// locked, a frozen tab, a starved renderer) judged on news from before the pause and told a participant whose
// server was fine to reload (30 s held: the message every time). Here the socket's config gives that limit: after a
// pause, none until two heartbeats have had their answer; a server that is really gone is named 13 s later.
import { useMephistoSocket } from "mephisto-task";

const SILENCE_LIMIT_MS = 20 * 1000; // mephisto-task's CONNECTION_DEAD_MEPHISTO_PING
const HEARTBEAT_MS = 6 * 1000; // mephisto-task's HEARTBEAT_TIME
const TICK_MS = 1000;
const PAUSED_MS = 3 * TICK_MS; // a tick this late: the page was held

let lastTick = Date.now();
let patientUntil = 0;

function tick(now) {
  if (now - lastTick > PAUSED_MS) {
    patientUntil = now + 2 * HEARTBEAT_MS + TICK_MS;
  }
  lastTick = now;
}

// The limit at this moment; read by mephisto-task at each check, which may run before this page's own tick after
// a pause (both timers overdue), so the check notices the pause itself.
function silenceLimit() {
  const now = Date.now();
  tick(now);
  return now < patientUntil ? Infinity : SILENCE_LIMIT_MS;
}

const socketConfig = {
  get connectionDeadMephistoPing() {
    return silenceLimit();
  },
};

// useMephistoLiveTask's `customConnectionHook`: mephisto-task's own socket, with the limit above.
export function usePatientSocket(props) {
  return useMephistoSocket({ ...props, config: socketConfig });
}

if (typeof window !== "undefined") {
  window.setInterval(() => tick(Date.now()), TICK_MS);
}
