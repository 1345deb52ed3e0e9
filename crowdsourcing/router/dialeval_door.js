/* The router's door for what strangers and participants send before anything reaches the Mephisto server
 * (parlai_dialeval/compat/mephisto_door.py puts this file beside server.js, writes dialeval_door.json with the
 * address to listen on, and hooks it in; dialeval_guard.js calls it for every page packet). docs/security.md
 * lists each route and packet type and which check here covers it.
 *
 * - every request is counted per source (a token bucket): a stranger cannot flood the routes that need no
 *   session (GET /task_config.json, static files, /request_agent, forged POSTs); a submission of finished work
 *   past the budget waits for it instead of being refused; the source is the peer's address (an IPv6 /64), or,
 *   from a proxy the researcher named, the address that proxy names (dialeval_sources.js); the lab's own
 *   addresses have no per-source budget;
 * - so is every websocket upgrade (Express never sees those), and a source holds at most
 *   SOURCE_SOCKETS open sockets: a stranger cannot hold thousands of idle sockets open;
 * - a mismatching `mephisto_task_version` is passed on short and at most once a minute (Mephisto's server
 *   logged each, whole, through rich: 30 requests of 16 KB stalled it for two minutes);
 * - every page packet is checked for shape, nesting depth and text before it is forwarded, by the same
 *   rules as the POST bodies: a packet Mephisto's server cannot read made it restart its link to the router,
 *   and the packets in flight were lost;
 * - malformed bodies get a generic error (no stack, no paths), and no X-Powered-By header.
 */
"use strict";

const fs = require("fs");
const path = require("path");
const addresses = require("./dialeval_sources"); // whose address a request comes from

const CONFIG = JSON.parse(fs.readFileSync(path.join(__dirname, "dialeval_door.json"), "utf8"));
const HOST = CONFIG.host;


// Requests per source: a page loads ~5 files and POSTs twice per unit; a lab of 50 people behind one NAT
// loading at once stays within the burst.
// (dialeval_door.json may set others: the router tests, a study behind one proxy without X-Forwarded-For)
const SOURCE_REQUESTS_PER_SECOND = CONFIG.source_requests_per_second || 40;
const SOURCE_REQUESTS_BURST = CONFIG.source_requests_burst || 400;
const SOURCE_LIMIT_RETRY_S = 5;
const SOURCES_KEPT = 100000; // buckets kept at most (a spoofing flood cannot grow the map without bound)
const sources = new Map(); // source address -> { tokens, last: ms }
// Open sockets per source: a page holds one (two for a moment while it reconnects), the Mephisto server one;
// a lab of 50 people behind one NAT stays well within.
const SOURCE_SOCKETS = CONFIG.source_sockets || 100;
const openSockets = new Map(); // source address -> sockets open now
// Finished work is never refused for rate: past its source's budget a submission waits (wait_for_budget).
const FINISHED_WORK = new Set(["/submit_task", "/submit_onboarding"]);
const SUBMISSIONS_WAITING = 200; // per source; a lab's hundreds of participants do not submit in one second
const WAITING_IN_ALL = 5000;
const waiting = new Map(); // source -> [{ req, next }] submissions waiting for its budget, in arrival order
let waitingInAll = 0;
let drainTimer = null;

// A page's act is an object a few levels deep (task_data.values = [...]): far below this.
const MAX_DEPTH = 32;
// Stated limits (docs/security.md; compat/mephisto_door.py writes them): characters of an id in a request for a
// place (worker, assignment, study, session), and of any text in a page's act (every task's own limits are lower
// and enforced by its world, which says so on the page).
const ID_CHARS = CONFIG.id_chars;
const TEXT_CHARS = CONFIG.text_chars;
const UNSTORABLE = "It contains characters the study cannot store. Please type it again."; // after "Not sent:"
const VERSION_PATTERN = /^[0-9A-Za-z.+-]{1,32}$/;
const VERSION_REPORT_EVERY_MS = 60 * 1000;
let lastVersionReport = 0;

// The same limits as POST /log_error's (dialeval_guard.js): Mephisto's server logs an error report whole.
const ERROR_LOG_BYTES = 2 * 1024;
const ERROR_LOGS_PER_AGENT = 10;
const socketErrorLogs = new Map(); // agent id -> error reports passed on over sockets

const LOG_EVERY = 100;
const refusals = { count: 0 };

// Text Mephisto's server cannot store or export: an unpaired surrogate (its UTF-8 encoder raised and the
// request was never answered; export dropped the unit), or a control character no person types.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/; // tab, newline, return allowed
const CONTROL_IN_NAME = /[\u0000-\u001F\u007F-\u009F]/;
// identity fields of POST /request_agent, shown as one line wherever a worker is named
const NAME_FIELDS = new Set(["worker_name", "agent_registration_id", "assignment_id", "hit_id", "study_id",
  "session_id", "provider_type"]);

function log(reason, where) {
  const n = ++refusals.count;
  if (n <= 50 || n % LOG_EVERY === 0) {
    console.log(`[dialeval-router] refused ${where}: ${reason} (refusal ${n} at the door)`);
  }
}

function within_source_limit(source, now) {
  let bucket = sources.get(source);
  if (bucket === undefined) {
    if (sources.size >= SOURCES_KEPT) {
      sources.delete(sources.keys().next().value); // the oldest source
    }
    bucket = { tokens: SOURCE_REQUESTS_BURST, last: now };
    sources.set(source, bucket);
  }
  bucket.tokens = Math.min(SOURCE_REQUESTS_BURST, bucket.tokens + ((now - bucket.last) / 1000) * SOURCE_REQUESTS_PER_SECOND);
  bucket.last = now;
  if (bucket.tokens < 1) {
    return false;
  }
  bucket.tokens -= 1;
  return true;
}

function per_source(req, res, next) {
  const address = addresses.client_address(req);
  if (addresses.lab_address(address)) {
    return next();
  }
  const source = addresses.source_key(address);
  const finished = req.method === "POST" && FINISHED_WORK.has(req.path);
  // submissions waiting for this source's budget are served first: its other requests wait their turn
  if (!waiting.has(source) && within_source_limit(source, Date.now())) {
    return next();
  }
  if (finished) {
    return wait_for_budget(source, req, res, next);
  }
  log(`more than ${SOURCE_REQUESTS_PER_SECOND} requests a second from one source`, `${req.method} request`);
  res.set("Retry-After", String(SOURCE_LIMIT_RETRY_S));
  return res.status(429).json({ status: "refused", reason: "too many requests, try again shortly" });
}

// A submission of finished work past its source's budget waits for the source's next request token, in arrival
// order, instead of being refused (a lab behind one address must always hand its work in). Bounded: past
// SUBMISSIONS_WAITING for its source (or WAITING_IN_ALL), 503 "busy" with Retry-After, which the page retries.
function wait_for_budget(source, req, res, next) {
  const queue = waiting.get(source) || [];
  if (queue.length >= SUBMISSIONS_WAITING || waitingInAll >= WAITING_IN_ALL) {
    log(`more than ${SUBMISSIONS_WAITING} submissions waiting for one source's budget`, `POST ${req.path}`);
    res.set("Retry-After", String(SOURCE_LIMIT_RETRY_S));
    return res.status(503).json({ status: "busy", reason: "the study's server is busy, your work is sent again shortly" });
  }
  queue.push({ req, next });
  waiting.set(source, queue);
  waitingInAll += 1;
  if (drainTimer === null) {
    drainTimer = setTimeout(drain_waiting, 1000 / SOURCE_REQUESTS_PER_SECOND);
  }
}

function drain_waiting() {
  drainTimer = null;
  const now = Date.now();
  for (const [source, queue] of waiting) {
    while (queue.length > 0 && within_source_limit(source, now)) {
      const { req, next } = queue.shift();
      waitingInAll -= 1;
      if (!req.socket.destroyed) { // the page gave up meanwhile: nothing to answer
        next();
      }
    }
    if (queue.length === 0) {
      waiting.delete(source);
    }
  }
  if (waiting.size > 0) {
    drainTimer = setTimeout(drain_waiting, 1000 / SOURCE_REQUESTS_PER_SECOND);
  }
}

// ws's verifyClient for every upgrade: the request bucket, then the open sockets of its source (counted until
// the connection's TCP socket closes, whether or not the handshake completes).
function admit_socket(info, done) {
  const address = addresses.client_address(info.req);
  if (addresses.lab_address(address)) {
    return done(true);
  }
  const source = addresses.source_key(address);
  const open = openSockets.get(source) || 0;
  let refusal = null;
  if (!within_source_limit(source, Date.now())) {
    refusal = `more than ${SOURCE_REQUESTS_PER_SECOND} requests a second from one source`;
  } else if (open >= SOURCE_SOCKETS) {
    refusal = `more than ${SOURCE_SOCKETS} open sockets from one source`;
  }
  if (refusal !== null) {
    log(refusal, "websocket upgrade");
    return done(false, 429, "Too Many Requests", { "Retry-After": String(SOURCE_LIMIT_RETRY_S) });
  }
  openSockets.set(source, open + 1);
  info.req.socket.once("close", () => {
    const left = (openSockets.get(source) || 1) - 1;
    if (left > 0) {
      openSockets.set(source, left);
    } else {
      openSockets.delete(source);
    }
  });
  done(true);
}

// Right after `const app = express()`: before any body is parsed.
function harden(app) {
  app.disable("x-powered-by");
  app.use(per_source);
}

// The depth of the deepest array or object in a JSON text (Buffer or string), without parsing it, or
// MAX_DEPTH + 1 as soon as it is deeper: the router's JSON.stringify (and Mephisto's json.loads) recurse,
// and threw on a packet nested deep enough.
function nesting(raw) {
  const bytes = typeof raw === "string" ? Buffer.from(raw) : raw;
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === 92) {
        i++; // backslash: skip the escaped character
      } else if (c === 34) {
        inString = false;
      }
    } else if (c === 34) {
      inString = true;
    } else if (c === 123 || c === 91) {
      depth++;
      if (depth > MAX_DEPTH) {
        return depth; // no need to read further
      }
      if (depth > deepest) {
        deepest = depth;
      }
    } else if (c === 125 || c === 93) {
      depth--;
    }
  }
  return deepest;
}

function nesting_refusal(raw) {
  return nesting(raw) > MAX_DEPTH ? `nested more than ${MAX_DEPTH} levels deep` : null;
}

// The first string of ``value`` (keys too) Mephisto's server cannot take, as "field: reason"; null if none; a
// text longer than ``longest`` characters too. Iterative: a body nested past MAX_DEPTH is refused, never recursed into.
function text_refusal(value, where, longest = Infinity) {
  const stack = [[value, where, 0, false]];
  while (stack.length > 0) {
    const [item, at, depth, name] = stack.pop();
    if (depth > MAX_DEPTH) {
      return `${at}: nested more than ${MAX_DEPTH} levels deep`;
    }
    if (typeof item === "string") {
      if (LONE_SURROGATE.test(item)) {
        return `${at}: text with an unpaired surrogate (not valid Unicode)`;
      }
      if ((name ? CONTROL_IN_NAME : CONTROL_IN_TEXT).test(item)) {
        return `${at}: text with a control character`;
      }
      if (item.length > longest) {
        return `${at}: text of ${item.length} characters (limit ${longest})`;
      }
    } else if (item !== null && typeof item === "object") {
      for (const key of Object.keys(item)) {
        if (LONE_SURROGATE.test(key) || CONTROL_IN_NAME.test(key)) {
          return `${at}: a key with an unpaired surrogate or a control character`;
        }
        const isName = name || (at === "body.provider_data" && NAME_FIELDS.has(key));
        stack.push([item[key], `${at}.${key.slice(0, 40)}`, depth + 1, isName]);
      }
    }
  }
  return null;
}

// After the body parsers, before the routes: a body the server could not store is refused, naming its field;
// a request for a place whose ids are longer than the stated limit is refused with a sentence the page shows.
function after_parsing(app) {
  app.use((req, res, next) => {
    const reason = req.method === "POST" ? text_refusal(req.body, "body") : null;
    if (reason !== null) {
      log(reason, "POST " + req.path);
      return res.status(400).json({ status: "refused", reason: "malformed request: " + reason });
    }
    const long = req.method === "POST" && req.path === "/request_agent" ? long_id(req.body) : null;
    if (long !== null) {
      log(`provider_data.${long.key} of ${long.length} characters (limit ${long.limit})`, "POST /request_agent");
      return res.status(403).json(agent_refusal(`This study link is not valid: an id in it is longer than ` +
        `${long.limit.toLocaleString("en-US")} characters. Please open the study from the link you were given.`));
    }
    next();
  });
}

// The first identity field of a request for a place longer than ID_CHARS characters (a registration: two ids
// and a dash) as { key, length, limit }, or null. Every Prolific, MTurk and mock id is far shorter.
function long_id(body) {
  const data = body !== null && typeof body === "object" ? body.provider_data : null;
  if (data === null || typeof data !== "object") {
    return null;
  }
  for (const key of NAME_FIELDS) {
    const limit = key === "agent_registration_id" ? 2 * ID_CHARS + 1 : ID_CHARS;
    if (typeof data[key] === "string" && data[key].length > limit) {
      return { key, length: data[key].length, limit };
    }
  }
  return null;
}

// An answer to POST /request_agent that gives no place, shaped as agent_details so that mephisto-task shows
// ``reason`` on the page (the frontend's transport.js passes a 403 or 429 of this shape on as an answer).
function agent_refusal(reason) {
  return { status: "refused", reason, packet_type: "agent_details",
           data: { agent_id: null, worker_id: null, failure_reason: reason } };
}

// Last: what Express would answer with its own page (a stack trace with the router's paths).
function errors(app) {
  app.use((req, res) => res.status(404).json({ status: "not found" }));
  // eslint-disable-next-line no-unused-vars
  app.use((error, req, res, next) => {
    const status = Number.isInteger(error.status) && error.status >= 400 && error.status < 500 ? error.status : 500;
    log(`${status} ${String(error.type || error.name || "error").slice(0, 60)}`, `${req.method} request`);
    const reason = status === 413 ? "request too large" : status === 500 ? "the server could not answer" : "malformed request";
    res.status(status).json({ status: "refused", reason });
  });
}

// What /task_config.json passes on as the page's mephisto-task version: the page's own when it is short and
// plain and no mismatch was reported in the last minute (one report says the page is stale), else ours.
function reported_version(given, ours) {
  const now = Date.now();
  if (given === ours || typeof given !== "string" || !VERSION_PATTERN.test(given) ||
      now - lastVersionReport < VERSION_REPORT_EVERY_MS) {
    return ours;
  }
  lastVersionReport = now;
  return given;
}

// A page packet of a known type whose token was checked: why Mephisto's server could not take it, or null.
function packet_refusal(type, packet) {
  const data = packet.data;
  if (packet.client_timestamp != null && typeof packet.client_timestamp !== "number") {
    return "client_timestamp that is not a number"; // the server subtracts it from its own times
  }
  if (type === "log_error") {
    if (data === null || typeof data !== "object" || Array.isArray(data)) {
      return "log_error without a data object";
    }
    const size = Buffer.byteLength(JSON.stringify(data));
    if (size > ERROR_LOG_BYTES) {
      return `log_error data of ${size} bytes (limit ${ERROR_LOG_BYTES})`;
    }
    const count = (socketErrorLogs.get(packet.subject_id) || 0) + 1;
    socketErrorLogs.set(packet.subject_id, count);
    if (count > ERROR_LOGS_PER_AGENT) {
      return `more error logs than ${ERROR_LOGS_PER_AGENT} from one agent`;
    }
  }
  if ((type === "alive" || type === "heartbeat") && data != null && (typeof data !== "object" || Array.isArray(data))) {
    return `${type} whose data is not an object`;
  }
  return text_refusal(data === undefined ? null : data, "data", type === "mephisto_bound_live_update" ? TEXT_CHARS : Infinity);
}

// What the page shows beside an act the door refused (catalogued as the page's "server.*" texts, so translated).
function notice_for(reason) {
  const long = /text of (\d+) characters \(limit (\d+)\)/.exec(reason);
  if (long !== null) {
    const [length, limit] = [Number(long[1]), Number(long[2])].map((n) => n.toLocaleString("en-US"));
    return `Your message is ${length} characters long; the limit is ${limit}. Please shorten it.`;
  }
  return UNSTORABLE;
}

// Tell the page which of its acts was refused (transport.js takes it out of the acts it resends) and why.
function tell_refused(socket, packet, reason) {
  const update_id = packet.data && typeof packet.data.update_id === "string" ? packet.data.update_id : null;
  if (packet.packet_type !== "mephisto_bound_live_update" || update_id === null || socket.readyState !== 1) {
    return;
  }
  socket.send(JSON.stringify({ packet_type: "client_bound_live_update", subject_id: packet.subject_id,
    data: { dialeval_refused: [update_id], reason: notice_for(reason) } }));
}

module.exports = {
  HOST,
  admit_socket,
  after_parsing,
  agent_refusal,
  errors,
  harden,
  nesting_refusal,
  packet_refusal,
  reported_version,
  tell_refused,
};
