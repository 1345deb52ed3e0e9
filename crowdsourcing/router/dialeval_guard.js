/* What the node router lets through (parlai_dialeval/compat/mephisto_router.py puts this file beside Mephisto's
 * server.js and hooks it in): every packet and every POST of a participant's page must carry the token
 * this router issued for its agent id; only the Mephisto server's own socket may speak for the system.
 *
 * token(agent id) = HMAC-SHA256(secret, "agent:" + agent id), hex. The secret is a file the Python side
 * writes next to server.js at build time (mode 0600); the router gives a page its token inside the
 * agent_details answer to POST /request_agent (or /submit_onboarding), and the page sends it back with
 * every packet (`agent_token`) and POST body. A refused packet or request is logged, never routed.
 */
"use strict";

const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const door = require("./dialeval_door"); // shape, depth and text of what pages send

const SYSTEM_ID = "mephisto";
// Frames from pages: a person's chat message is far below this; the router passes page packets on to
// the Mephisto server, whose websocket client refuses frames over 1 MiB and drops its whole channel then.
const PAGE_FRAME_LIMIT = 512 * 1024;
// Frames from the Mephisto server (agent_details with a task's initial data) may be larger.
const MAX_PAYLOAD = 16 * 1024 * 1024;
const BODY_LIMIT = "512kb";
// A page sends a heartbeat every 6 s and a packet per action; far more than this per second is a flood.
const PAGE_PACKETS_PER_SECOND = 50;
// Bytes an agent's pages may send the server, over all its sockets: a token bucket. A person's largest act
// (a 5,000-character answer) is ~20 KB; without it one participant could push 50 frames of 512 KiB a
// second into the server's memory and Mephisto's saved state (which rewrites it on every act).
const AGENT_BYTES_PER_SECOND = 64 * 1024;
const AGENT_BYTES_BURST = 1024 * 1024;
const agentBytes = new Map(); // agent id (token checked) -> { bytes: what it may still send, last: ms }
const LOG_EVERY = 100; // after the first 50 refusals of a socket (or of all POSTs), log one in LOG_EVERY (a flood must not fill the disk)

const SYSTEM_PACKETS = new Set([
  "request_statuses",
  "client_bound_live_update",
  "update_status",
  "agent_details",
]);
const PAGE_PACKETS = new Set(["alive", "heartbeat", "mephisto_bound_live_update", "log_error"]);

const SECRET = fs.readFileSync(path.join(__dirname, "dialeval_router_secret"));
if (SECRET.length < 32) {
  throw new Error("dialeval_router_secret is shorter than 32 bytes");
}

// Packets for the Mephisto server kept while it is not connected (a relaunch after a crash): bounded, so a
// flood of requests during the gap cannot exhaust the router's memory; pages resend what was not confirmed.
const HELD_BYTES_LIMIT = 32 * 1024 * 1024;
const BUSY_RETRY_AFTER_S = 5; // what a page refused for a full queue is told to wait before asking again
const HELD = Symbol("held bytes"); // on a kept packet: its size (a Symbol key is never serialised)
const held = { bytes: 0, refused: 0 };

const submitted = new Set(); // agent ids whose unit was submitted: a replayed submission is refused
// A page's error report: Mephisto's server logs it whole through rich, whose line wrapping takes time
// quadratic in the text (40 KB: 18 s) on the event loop that serves every participant.
const ERROR_LOG_BYTES = 2 * 1024;
const ERROR_LOGS_PER_AGENT = 10; // our pages send none; mephisto-task's handleFatalError sends one
const errorLogs = new Map(); // agent id (token checked) -> error reports passed on
const posts = { refused: 0 }; // refused POSTs, counted together for the log's throttle

function token(agent_id) {
  return crypto.createHmac("sha256", SECRET).update("agent:" + String(agent_id)).digest("hex");
}

function valid(agent_id, given) {
  if (typeof agent_id !== "string" || typeof given !== "string") {
    return false;
  }
  const expected = Buffer.from(token(agent_id));
  const actual = Buffer.from(given);
  return actual.length === expected.length && crypto.timingSafeEqual(actual, expected);
}

function shorten(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 80 ? text.slice(0, 80) + "..." : text;
}

function refuse(where, reason, subject, counter) {
  const n = ++counter.refused;
  if (n <= 50 || n % LOG_EVERY === 0) {
    console.log(`[dialeval-router] refused ${where}: ${reason} (subject ${shorten(subject)}, refusal ${n} here)`);
  }
  return null;
}

// The packet a socket sent, parsed and checked, its token removed; null when refused (and logged).
function admit(socket, raw) {
  const now = Date.now();
  if (!socket.dialeval) {
    socket.dialeval = { refused: 0, second: now, count: 0, system: false };
  }
  const state = socket.dialeval;
  if (now - state.second >= 1000) {
    state.second = now;
    state.count = 0;
  }
  state.count += 1;
  if (!state.system && state.count > PAGE_PACKETS_PER_SECOND) {
    return refuse("packet", `more than ${PAGE_PACKETS_PER_SECOND} packets in a second`, "", state);
  }
  if (!state.system && raw.length > PAGE_FRAME_LIMIT) {
    return refuse("packet", `frame of ${raw.length} bytes (limit ${PAGE_FRAME_LIMIT})`, "", state);
  }
  const nesting = door.nesting_refusal(raw);
  if (nesting !== null) {
    return refuse("packet", nesting, "", state);
  }
  let packet;
  try {
    packet = JSON.parse(raw);
  } catch (error) {
    return refuse("packet", "not JSON", "", state);
  }
  if (packet === null || typeof packet !== "object" || Array.isArray(packet)) {
    return refuse("packet", "not a JSON object", "", state);
  }
  const type = packet.packet_type;
  if (state.system) {
    return packet;
  }
  if (SYSTEM_PACKETS.has(type)) {
    return refuse("packet", `${shorten(type)} from a socket that is not the Mephisto server's`, packet.subject_id, state);
  }
  const given = packet.agent_token !== undefined ? packet.agent_token : (packet.data || {}).agent_token;
  delete packet.agent_token;
  if (type === "alive" && packet.subject_id === SYSTEM_ID) {
    if (!valid(SYSTEM_ID, given)) {
      return refuse("packet", "system alive without the server's token", SYSTEM_ID, state);
    }
    state.system = true;
    return packet;
  }
  if (!PAGE_PACKETS.has(type)) {
    return refuse("packet", `unknown packet type ${shorten(type)}`, packet.subject_id, state);
  }
  if (!valid(packet.subject_id, given)) {
    return refuse("packet", `${type} with a missing or forged token`, packet.subject_id, state);
  }
  if (type === "mephisto_bound_live_update" && (packet.data === null || typeof packet.data !== "object" || Array.isArray(packet.data))) {
    return refuse("packet", "live update without a data object", packet.subject_id, state);
  }
  // the server looks the update id up in a set of those seen: a list or an object raised there
  if (type === "mephisto_bound_live_update" && packet.data.update_id != null && typeof packet.data.update_id !== "string") {
    return refuse("packet", "live update with an update_id that is not a string", packet.subject_id, state);
  }
  const malformed = door.packet_refusal(type, packet);
  if (malformed !== null) {
    door.tell_refused(socket, packet, malformed);
    return refuse("packet", malformed, packet.subject_id, state);
  }
  if (!within_byte_budget(packet.subject_id, raw.length, now)) {
    return refuse("packet", `agent sends more than ${AGENT_BYTES_PER_SECOND} bytes a second`, packet.subject_id, state);
  }
  return packet;
}

function within_byte_budget(agent_id, size, now) {
  const budget = agentBytes.get(agent_id) || { bytes: AGENT_BYTES_BURST, last: now };
  budget.bytes = Math.min(AGENT_BYTES_BURST, budget.bytes + ((now - budget.last) / 1000) * AGENT_BYTES_PER_SECOND);
  budget.last = now;
  agentBytes.set(agent_id, budget);
  if (budget.bytes < size) {
    return false;
  }
  budget.bytes -= size;
  return true;
}

// The agent_details answer for a page, with the token of the agent id it names.
function with_token(packet) {
  const agent_id = packet.data && packet.data.agent_id;
  if (typeof agent_id === "string" && agent_id !== "") {
    packet.data.agent_token = token(agent_id);
  }
  return packet;
}

// Express middleware of the POSTs a page makes as an agent: the body's USED_AGENT_ID must come with
// its token (inside provider_data for /submit_onboarding); a unit is submitted once.
function post_check(req, res, next) {
  const body = req.body !== null && typeof req.body === "object" ? req.body : {};
  const fields = req.path === "/submit_onboarding" ? body.provider_data : body;
  const where = "POST " + req.path;
  if (fields === null || typeof fields !== "object" || Array.isArray(fields)) {
    refuse(where, "no agent fields in the body", "", posts);
    return res.status(400).json({ status: "refused", reason: "malformed request" });
  }
  const agent_id = fields.USED_AGENT_ID;
  const given = fields.agent_token;
  delete fields.agent_token;
  if (!valid(agent_id, given)) {
    refuse(where, "missing or forged token", agent_id, posts);
    return res.status(403).json({ status: "refused", reason: "this page's session is not valid" });
  }
  // what the server's agent state takes as submitted (server.js makes a missing one {}): static tasks raise on
  // anything but an object, logging the whole packet
  const onboarding = req.path === "/submit_onboarding" ? fields.onboarding_data : undefined;
  if (onboarding && (typeof onboarding !== "object" || Array.isArray(onboarding))) {
    refuse(where, "onboarding_data that is not a JSON object", agent_id, posts);
    return res.status(400).json({ status: "refused", reason: "malformed submission" });
  }
  if (req.path === "/submit_metadata") {
    // Mephisto's handle_metadata_submit raises on a malformed one and keeps every one in the agent's state
    refuse(where, "tips and feedback are not collected", agent_id, posts);
    return res.status(403).json({ status: "refused", reason: "this study collects no tips or feedback" });
  }
  if (req.path === "/log_error") {
    return error_log_check(req, res, next, agent_id);
  }
  if (req.path === "/submit_task") {
    // what Mephisto's server.js will send as the unit's data: final_string_data parsed when given
    let data = body.final_data;
    if (body.final_string_data) {
      try {
        data = JSON.parse(body.final_string_data);
      } catch (error) {
        refuse(where, "final_string_data is not JSON", agent_id, posts);
        return res.status(400).json({ status: "refused", reason: "malformed submission" });
      }
    }
    // Static tasks' agent state raises on anything else, after the unit was marked submitted.
    if (data === null || typeof data !== "object" || Array.isArray(data)) {
      refuse(where, "final data that is not a JSON object", agent_id, posts);
      return res.status(400).json({ status: "refused", reason: "malformed submission" });
    }
    // Mephisto's _on_submit_unit copies /tmp/<filename> into the agent's folder for each of `files` (any
    // path, `../` too); no task of ours takes files (multer is gone), so none may be named.
    if (Object.prototype.hasOwnProperty.call(data, "files")) {
      refuse(where, "final data with files", agent_id, posts);
      return res.status(400).json({ status: "refused", reason: "files are not accepted" });
    }
    if (submitted.has(agent_id)) {
      refuse(where, "unit already submitted (replay)", agent_id, posts);
      return res.status(409).json({ status: "refused", reason: "already submitted" });
    }
    submitted.add(agent_id);
  }
  next();
}

// POST /log_error (token checked): an object, short, and a few per agent.
function error_log_check(req, res, next, agent_id) {
  const where = "POST /log_error";
  const error = req.body.error_data;
  if (error === null || typeof error !== "object" || Array.isArray(error)) {
    refuse(where, "error_data that is not a JSON object", agent_id, posts);
    return res.status(400).json({ status: "refused", reason: "malformed error report" });
  }
  const size = Buffer.byteLength(JSON.stringify(error));
  if (size > ERROR_LOG_BYTES) {
    refuse(where, `error_data of ${size} bytes (limit ${ERROR_LOG_BYTES})`, agent_id, posts);
    return res.status(413).json({ status: "refused", reason: "error report too long" });
  }
  const count = (errorLogs.get(agent_id) || 0) + 1;
  errorLogs.set(agent_id, count);
  if (count > ERROR_LOGS_PER_AGENT) {
    refuse(where, `more error logs than ${ERROR_LOGS_PER_AGENT} from one agent`, agent_id, posts);
    return res.status(429).json({ status: "refused", reason: "too many error reports" });
  }
  next();
}

// POST /request_agent: Mephisto's server reads provider_data.agent_registration_id and worker_name unchecked
// (a missing or non-string one raised there); the pages' wrap_crowd_source.js send only strings (or null).
function registration_check(req, res, next) {
  const body = req.body !== null && typeof req.body === "object" ? req.body : {};
  const data = body.provider_data;
  if (data === null || typeof data !== "object" || Array.isArray(data) || typeof data.agent_registration_id !== "string") {
    refuse("POST /request_agent", "provider_data without an agent_registration_id string", "", posts);
    return res.status(400).json({ status: "refused", reason: "malformed request" });
  }
  if (typeof data.worker_name !== "string" || data.worker_name === "" ||
      !Object.values(data).every((value) => value === null || typeof value === "string")) {
    refuse("POST /request_agent", "provider_data without a worker_name string, or with a value that is no string",
           data.agent_registration_id, posts);
    return res.status(400).json({ status: "refused", reason: "malformed request" });
  }
  next();
}

// Keep a packet for the Mephisto server in ``queue`` until it connects, within HELD_BYTES_LIMIT in all
// (a packet kept again while the server is still away is not counted twice); false when refused. A refused
// packet that a page's POST waits on (``pending``: request id -> response) is answered 503 "busy", which
// the page's transport.js retries after Retry-After: else that page would wait for ever.
function hold(queue, packet, pending) {
  if (packet[HELD] === undefined) {
    const size = Buffer.byteLength(JSON.stringify(packet));
    if (held.bytes + size > HELD_BYTES_LIMIT) {
      refuse("packet for the server", `no server connected and ${held.bytes} bytes already kept`, packet.subject_id, held);
      const request_id = packet.data && packet.data.request_id;
      const res = pending && typeof request_id === "string" ? pending[request_id] : undefined;
      if (res !== undefined) {
        delete pending[request_id];
        res.set("Retry-After", String(BUSY_RETRY_AFTER_S));
        res.status(503).json({ status: "busy", reason: "the study's server is restarting, try again shortly" });
      }
      return false;
    }
    packet[HELD] = size;
    held.bytes += size;
  }
  queue.push(packet);
  return true;
}

// A kept packet is on its way to the server: its bytes no longer count.
function release(packet) {
  if (packet[HELD] !== undefined) {
    held.bytes -= packet[HELD];
    delete packet[HELD];
  }
}

// Uploads are not accepted (no task of this project takes files), so nothing is ever served back.
function no_files(req, res) {
  res.status(404).end();
}

module.exports = {
  BODY_LIMIT,
  MAX_PAYLOAD,
  admit,
  hold,
  no_files,
  post_check,
  registration_check,
  release,
  token,
  with_token,
};
