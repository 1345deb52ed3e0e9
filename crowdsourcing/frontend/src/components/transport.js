// The page's side of the router's session binding (crowdsourcing/router/dialeval_guard.js): the router
// answers POST /request_agent (and /submit_onboarding) with agent_details carrying `agent_token`, and
// refuses every later packet or POST of that agent without it. mephisto-task 2.0.4 knows nothing of the
// token, so this module adds it underneath: to each websocket packet the page sends (a WebSocket
// subclass) and to each POST body naming USED_AGENT_ID (an interceptor on mephisto-task's axios). The
// same subclass keeps what the server has not acknowledged yet and sends it again after a reconnect, a
// reload, or a few seconds without its acknowledgement; and, the other way, tells the router what it has received
// of what the router sent (dialeval_seen), so that a new socket gets what a dropping one lost.
// Importing it once (components/index.js) installs both before any task connects.
import { axiosInstance } from "mephisto-task";

const tokens = new Map(); // agent id -> token issued by the router

let currentAgent = null; // the agent this page was last given (a new one after a relaunch of the server)

function remember(packet) {
  const data = packet && packet.data;
  if (data && typeof data.agent_id === "string" && typeof data.agent_token === "string") {
    tokens.set(data.agent_id, data.agent_token);
    currentAgent = data.agent_id;
  }
}

function withToken(fields) {
  if (fields && typeof fields === "object" && tokens.has(fields.USED_AGENT_ID)) {
    return { ...fields, agent_token: tokens.get(fields.USED_AGENT_ID) };
  }
  return fields;
}

// A registration (in the page's address) and its worker are bound by the router to a secret of the page that
// first asked for them (crowdsourcing/router/dialeval_claims.js): the page makes one per worker, keeps it in
// localStorage (it outlives a reload, a closed tab and a relaunch of the server) and sends it with every request
// for an agent; a router that was sent none answers with one of its own (registration_secret), kept the same way.
const SECRET_PREFIX = "dialeval_secret:"; // + "worker:NAME" (or "registration:ID" without a worker name)
const secrets = new Map(); // key -> secret, where storage is refused

function storedSecret(key, given) {
  try {
    if (given) {
      window.localStorage.setItem(SECRET_PREFIX + key, given);
    }
    return window.localStorage.getItem(SECRET_PREFIX + key);
  } catch (error) {
    if (given) {
      secrets.set(key, given);
    }
    return secrets.get(key) || null; // storage refused (private mode): kept while the page lives
  }
}

function pageSecret(key) {
  const bytes = new Uint8Array(32);
  window.crypto.getRandomValues(bytes);
  const made = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return storedSecret(key) || storedSecret(key, made) || made;
}

function secretKey(config) {
  let body = config && config.data;
  try {
    body = typeof body === "string" ? JSON.parse(body) : body;
  } catch (error) {
    return null;
  }
  const data = body && body.provider_data;
  const requested = config && String(config.url).endsWith("/request_agent") && data;
  if (!requested || typeof data.agent_registration_id !== "string") {
    return null;
  }
  return typeof data.worker_name === "string" && data.worker_name ? "worker:" + data.worker_name
    : "registration:" + data.agent_registration_id;
}

// The way back after a browser died (dialeval_claims.js): the page of a session shows its resume code (the router
// gives it with the agent); a page refused because the session is held elsewhere may offer the code the participant
// noted (ResumeForm in Resume.jsx), kept for this page address until the router has given the session back. Asked
// while the first page was heard too recently, the router names the seconds until it may be (WAIT_FIELD): the code is
// kept and the page asks again by itself then (ReclaimWait); a code refused for good is forgotten, the form asks anew.
const CODE_FIELD = "dialeval_resume_code";
const CODE_KEY = CODE_FIELD + window.location.search;
const WAIT_FIELD = "dialeval_reclaim_wait";
// code: this page's own resume code; offered: the code form is open to it; tried: the code its refused request
// carried; wait: the seconds the router named before it may take the session
const way = { code: null, offered: false, tried: null, wait: null };

export function resumeCode() {
  return way.code;
}

export function reclaimOffered() {
  return way.offered;
}

export function triedCode() {
  return way.tried;
}

// {seconds, code}: the router takes this page's request (with its code, if one) only after that many seconds; else null
export function reclaimWait() {
  return way.wait === null ? null : { seconds: way.wait, code: way.tried };
}

export function offerResumeCode(code) {
  try {
    window.sessionStorage.setItem(CODE_KEY, code);
  } catch (error) {
    return false; // storage refused: the code cannot outlive the reload that sends it
  }
  window.location.reload();
  return true;
}

function offeredCode() {
  try {
    const code = window.sessionStorage.getItem(CODE_KEY);
    return typeof code === "string" && code ? code : null;
  } catch (error) {
    return null;
  }
}

function forgetOfferedCode() {
  try {
    window.sessionStorage.removeItem(CODE_KEY);
  } catch (error) {
    // storage refused: nothing was kept
  }
}

axiosInstance.interceptors.request.use((config) => {
  const body = config.data;
  const key = secretKey(config);
  if (key !== null) {
    const sent = typeof body === "string" ? JSON.parse(body) : body; // a string when asked again (busyRetry)
    const code = offeredCode();
    config.data = { ...sent, provider_data: { ...sent.provider_data, dialeval_secret: pageSecret(key),
      ...(code ? { [CODE_FIELD]: code } : {}) } };
    return config;
  }
  if (body && typeof body === "object") {
    config.data = body.provider_data && body.provider_data.USED_AGENT_ID !== undefined
      ? { ...body, provider_data: withToken(body.provider_data) }
      : withToken(body);
  }
  return config;
});

// The router answers a request for an agent (or an onboarding submission) 503 "busy" when it cannot keep it
// while a relaunched server is away (dialeval_guard.js's hold), and a submission of finished work when too many
// of its address's wait for their turn (dialeval_door.js's wait_for_budget): ask again after its Retry-After,
// with jitter so a crowd does not come back at once, for a few minutes; mephisto-task would otherwise wait for
// ever (or lose the submission).
const BUSY_PATHS = ["/request_agent", "/submit_onboarding", "/submit_task"];
const BUSY_TRIES = 36;

function busyRetry(error) {
  const { config, response } = error;
  // refused by the router's claims (held by another page, too many from this network): mephisto-task shows
  // failure_reason on the page, which it reads from an answer, not from an error
  const refused = response && (response.status === 403 || response.status === 429) && response.data &&
    response.data.data && typeof response.data.data.failure_reason === "string";
  if (refused && secretKey(config) !== null) {
    const details = response.data.data;
    way.offered = details.dialeval_reclaim === "code"; // the way back, when it is open
    way.tried = offeredCode();
    way.wait = Number.isInteger(details[WAIT_FIELD]) && details[WAIT_FIELD] > 0 ? details[WAIT_FIELD] : null;
    if (way.wait === null && response.status === 403) {
      forgetOfferedCode(); // a wrong code, or the way back closed: not sent again with the next load
    }
    return Promise.resolve(response);
  }
  const busy = response && response.status === 503 && response.data && response.data.status === "busy";
  if (!busy || !config || !BUSY_PATHS.some((path) => String(config.url).endsWith(path))) {
    return Promise.reject(error);
  }
  config.dialevalTries = (config.dialevalTries || 0) + 1;
  if (config.dialevalTries > BUSY_TRIES) {
    return Promise.reject(error);
  }
  const seconds = Number(response.headers["retry-after"]) || 5;
  const delay = seconds * 1000 * (1 + Math.random());
  return new Promise((resolve) => setTimeout(resolve, delay)).then(() => axiosInstance(config));
}

axiosInstance.interceptors.response.use((response) => {
  remember(response.data);
  const details = (response.data && response.data.data) || {};
  const issued = details.registration_secret;
  const key = secretKey(response.config);
  if (typeof issued === "string" && key !== null) {
    storedSecret(key, issued);
  }
  if (key !== null) {
    way.offered = details.dialeval_reclaim === "code";
    if (typeof details[CODE_FIELD] === "string") {
      way.code = details[CODE_FIELD];
      forgetOfferedCode(); // the session is this page's now
    }
  }
  return response;
}, busyRetry);

// Messages acknowledged end to end: the server confirms each act once the world has stored it
// (parlai_dialeval/compat/mephisto_router.py, a live update {dialeval_ack: [update ids]}). Until then the act
// stays in `outbox` and is sent again on every new socket of this page (mephisto-task opens one after a
// drop); the server drops a copy it already has by its update id.
// The outbox outlives a reload of the tab (sessionStorage, per page address): after the server crashed and
// was relaunched the reloaded page gets a new agent, and the acts the old one never confirmed go to it,
// naming the agent they were first sent to (SENT_TO_KEY). The relaunched world takes them only when it
// carries on that agent's unit, and drops a copy of an act it had stored (crowdsourcing/platform/session_world.py).
const ACK_KEY = "dialeval_ack";
const SENT_TO_KEY = "dialeval_sent_to";
const STORE_KEY = "dialeval_outbox" + window.location.search;
const RESEND_AFTER_OPEN_MS = 500; // after mephisto-task's own `alive` on the new socket
// An act still unconfirmed this long is sent again on the same socket (then after twice as long, up to a
// minute): a socket that never dropped can still lose one (the server's own link to the router restarted).
// The world's confirmation follows its reply to the act, so this is well past a reply's usual time.
const RESEND_UNCONFIRMED_MS = 8000;
const RESEND_UNCONFIRMED_MAX_MS = 60000;
// the answer to an act that will not be stored: from the router's door (dialeval_door.js) or the world
// (compat/mephisto_router.py refuse_taken), with the reason, which the page shows beside the message
const REFUSED_KEY = "dialeval_refused";
const resendDue = new Map(); // update id -> { at: ms, wait: ms }, for acts sent on an open socket
const outbox = loadOutbox(); // update id -> packet (without token), insertion order = sending order
const ackListeners = new Set();
const refusalListeners = new Set();

function loadOutbox() {
  try {
    return new Map(JSON.parse(window.sessionStorage.getItem(STORE_KEY) || "[]"));
  } catch (error) {
    return new Map(); // storage refused or unreadable: the outbox lives as long as the page
  }
}

function storeOutbox() {
  try {
    window.sessionStorage.setItem(STORE_KEY, JSON.stringify([...outbox]));
  } catch (error) {
    // storage refused (private mode, full): the outbox still covers reconnects without a reload
  }
}

function readdressed(packet) {
  if (!currentAgent || packet.subject_id === currentAgent) {
    return packet;
  }
  const sentTo = packet.data[SENT_TO_KEY] || packet.subject_id;
  return { ...packet, subject_id: currentAgent, data: { ...packet.data, id: currentAgent, [SENT_TO_KEY]: sentTo } };
}

export function onAcknowledged(listener) {
  ackListeners.add(listener);
  return () => ackListeners.delete(listener);
}

// listener(update ids, reason): acts the server will not store, and why (a sentence for the participant)
export function onRefused(listener) {
  refusalListeners.add(listener);
  return () => refusalListeners.delete(listener);
}

function forget(id) {
  outbox.delete(id);
  resendDue.delete(id);
  storeOutbox();
}

function signed(packet) {
  return tokens.has(packet.subject_id) ? { ...packet, agent_token: tokens.get(packet.subject_id) } : packet;
}

// What the router sent this page, numbered per agent (dialeval_seq, crowdsourcing/router/dialeval_replay.js): the
// page says on each heartbeat how far it has everything (dialeval_seen), and on the `alive` of a new socket, so the
// router sends again what the page has not had (a bot's reply sent while the old socket was dropping), once.
const SEQ_KEY = "dialeval_seq";
const SEEN_KEY = "dialeval_seen";
// agent id -> { upTo: every packet up to this number had, above: Set of later ones had, fresh: nothing had yet }
const received = new Map();

function receivedOnce(agent, seq) {
  const got = received.get(agent) || { upTo: 0, above: new Set(), fresh: true };
  received.set(agent, got);
  if (got.fresh) {
    // the first number this page gets: what came before it the server gave the page with its agent
    got.fresh = false;
    got.upTo = seq - 1;
  }
  if (seq <= got.upTo || got.above.has(seq)) {
    return false;
  }
  got.above.add(seq);
  while (got.above.has(got.upTo + 1)) {
    got.upTo += 1;
    got.above.delete(got.upTo);
  }
  return true;
}

// heartbeats and a new socket's `alive` carry how far this page has what the router sent (not on the first socket
// of a page: a loaded page gets everything so far from the server with its agent)
function withSeen(packet) {
  const type = packet.packet_type;
  const got = received.get(packet.subject_id);
  if ((type !== "heartbeat" && type !== "alive") || got === undefined) {
    return packet;
  }
  return { ...packet, data: { ...(packet.data || {}), [SEEN_KEY]: got.upTo } };
}

// The researcher ended the study (crowdsourcing/platform/runner.py tells each page still in it): the page says so.
const ENDED_KEY = "dialeval_ended";
const endedListeners = new Set();

export function onEnded(listener) {
  endedListeners.add(listener);
  return () => endedListeners.delete(listener);
}

const PageSocket = class extends window.WebSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("open", () => window.setTimeout(() => this.resend(), RESEND_AFTER_OPEN_MS));
    this.unconfirmedTimer = window.setInterval(() => this.resendUnconfirmed(), 1000);
    this.addEventListener("close", () => window.clearInterval(this.unconfirmedTimer));
  }

  resendUnconfirmed() {
    const now = Date.now();
    for (const [id, packet] of outbox) {
      const due = resendDue.get(id);
      if (this.readyState !== window.WebSocket.OPEN || due === undefined || due.at > now) {
        continue;
      }
      resendDue.set(id, { at: now + due.wait, wait: Math.min(2 * due.wait, RESEND_UNCONFIRMED_MAX_MS) });
      super.send(JSON.stringify(signed(readdressed(packet))));
    }
  }

  resend() {
    for (const [id, packet] of outbox) {
      if (this.readyState !== window.WebSocket.OPEN) {
        return;
      }
      super.send(JSON.stringify(signed(readdressed(packet))));
      if (!resendDue.has(id)) { // kept across a reload: from now on resent as if sent now
        resendDue.set(id, { at: Date.now() + RESEND_UNCONFIRMED_MS, wait: 2 * RESEND_UNCONFIRMED_MS });
      }
    }
  }

  send(text) {
    let packet;
    try {
      packet = JSON.parse(text);
    } catch (error) {
      return super.send(text);
    }
    if (packet && packet.packet_type === "mephisto_bound_live_update" && packet.data && packet.data.update_id) {
      outbox.set(packet.data.update_id, packet);
      resendDue.set(packet.data.update_id, { at: Date.now() + RESEND_UNCONFIRMED_MS, wait: 2 * RESEND_UNCONFIRMED_MS });
      storeOutbox();
    }
    if (packet && packet.packet_type === "alive" && !received.has(packet.subject_id)) {
      received.set(packet.subject_id, { upTo: 0, above: new Set(), fresh: true }); // its next socket's alive says how far
      return super.send(JSON.stringify(signed(packet)));
    }
    return super.send(JSON.stringify(signed(packet && typeof packet === "object" ? withSeen(packet) : packet)));
  }

  // mephisto-task reads packets through onmessage: acknowledgements are taken out before it sees them.
  set onmessage(handler) {
    super.onmessage = (event) => {
      let packet = null;
      try {
        packet = JSON.parse(event.data);
      } catch (error) {
        // not ours to judge: mephisto-task gets it as it is
      }
      if (packet && typeof packet[SEQ_KEY] === "number" && !receivedOnce(packet.subject_id, packet[SEQ_KEY])) {
        return undefined; // had already: sent again on this socket after a drop
      }
      const live = packet && packet.packet_type === "client_bound_live_update" && packet.data;
      if (live && live[ENDED_KEY]) {
        endedListeners.forEach((listener) => listener(live[ENDED_KEY]));
        return undefined;
      }
      const acked = live && live[ACK_KEY];
      const refused = live && live[REFUSED_KEY];
      if (Array.isArray(refused)) {
        // never stored, so never to be resent: the router's door or the world said why, for the participant
        refused.forEach((id) => forget(id));
        refusalListeners.forEach((listener) => listener(refused, live.reason));
        return undefined;
      }
      if (Array.isArray(acked)) {
        acked.forEach((id) => forget(id));
        ackListeners.forEach((listener) => listener(acked));
        return undefined;
      }
      return handler && handler(event);
    };
  }

  get onmessage() {
    return super.onmessage;
  }
};

if (!window.WebSocket.dialevalTokens) {
  PageSocket.dialevalTokens = true;
  window.WebSocket = PageSocket;
}
