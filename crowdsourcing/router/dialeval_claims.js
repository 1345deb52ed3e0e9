/* Who may take a place, and keep it (issue 38). parlai_dialeval/compat/mephisto_router.py hooks this module
 * into Mephisto's server.js beside dialeval_guard.js and writes its settings, dialeval_claims.json, next to it.
 *
 * A registration (provider_data.agent_registration_id: `<assignment>-<worker>` on the mock provider,
 * `SESSION_ID-PROLIFIC_PID` on Prolific) travels in the participant's URL, so it is no secret; Mephisto answers
 * a request naming a known one with that agent, a fresh token and its past messages. So a registration is
 * bound at its first POST /request_agent to a secret of the page that made it (`dialeval_secret`: the page
 * makes one and keeps it in localStorage, frontend/src/components/transport.js; a client that sent none is
 * given one, `registration_secret` in the answer); every later request naming it, or naming its worker under
 * another registration, must send that secret, else it is refused (403) and never reaches Mephisto: the page
 * keeps one secret per worker, so a worker's pages in one browser hold all its registrations. The server gets the secret's SHA-256 (`dialeval_claim`),
 * never the secret, and keeps it in the run folder: a relaunch after a crash starts with the claims of the
 * interrupted run (`preload`), so the genuine participant gets their unit back and nobody else does.
 *
 * Places cannot be taken in bulk: a source (an IPv4 address, an IPv6 /64, as dialeval_sources.js's source_of names it)
 * takes at most `claims_per_source` new registrations per `window_seconds` (a share of the study's places,
 * compat/mephisto_router.py claims_per_source), the lab's own addresses `lab_places` (0: no limit); and an agent whose page opens no socket within
 * `first_socket_seconds` of being given out is reported disconnected, which gives its unit back (live tasks
 * only: a static task's page never opens one, and there it is 0, off).
 */
"use strict";

const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const door = require("./dialeval_door"); // the answer that gives no place
const addresses = require("./dialeval_sources"); // whose address a request comes from

const CONFIG = JSON.parse(fs.readFileSync(path.join(__dirname, "dialeval_claims.json"), "utf8"));
const SECRET_FIELD = "dialeval_secret"; // page -> router, in provider_data
const CLAIM_FIELD = "dialeval_claim"; // router -> server: SHA-256 of the secret
const ISSUED_FIELD = "registration_secret"; // router -> a page that sent no secret, once
const SOURCE_FIELD = "dialeval_source"; // router -> server: the source the registration came from (a crowd
// provider's budget of calls on strangers' behalf, parlai_dialeval/providers/prolific/verify.py source_of)
const SECRET_FORM = /^[A-Za-z0-9_-]{32,128}$/;
const HELD = "This study is already open for you in another browser or tab: please go on there. " +
  "If you did not open it elsewhere, contact the researcher.";
const BUSY = "Too many people have just started this study from your network. Please try again in a few minutes.";
const LOG_EVERY = 100; // after the first 50 refusals, one line in LOG_EVERY: a flood must not fill the disk

const claims = new Map(); // registration -> { hash (hex), agent_id }
const workers = new Map(); // worker name -> hash of the secret of its first registration
const byAgent = new Map(); // agent id -> its claim (an onboarding agent's claim passes to its unit's agent)
const givenAt = new Map(); // agent id -> ms it was given to a page; removed by that page's first alive
const sources = new Map(); // source -> ms of its new claims within the window
const counter = { refused: 0 };

const preload = CONFIG.preload || {};
for (const [registration, hash] of Object.entries(preload.registrations || {})) {
  claims.set(registration, { hash, agent_id: null });
}
for (const [worker, hash] of Object.entries(preload.workers || {})) {
  workers.set(worker, hash);
}

function digest(secret) {
  return crypto.createHash("sha256").update(secret).digest("hex");
}

function holds(hash, secret) {
  if (typeof secret !== "string") {
    return false;
  }
  const expected = Buffer.from(hash, "hex");
  const actual = Buffer.from(digest(secret), "hex");
  return actual.length === expected.length && crypto.timingSafeEqual(actual, expected);
}

// New places ``req``'s source may take per window: the study's share (claims_per_source, 0: no limit), or for
// the lab's own addresses (router_lab_addresses) lab_places (0: no limit).
function place_limit(req) {
  return addresses.from_lab(req) ? CONFIG.lab_places || 0 : CONFIG.claims_per_source;
}

// Seconds until ``from`` may claim again, or 0 (and the claim is counted, until ``refund``).
function wait_for_claim(from, limit, now) {
  if (!(limit > 0)) {
    return 0;
  }
  const window = CONFIG.window_seconds * 1000;
  const recent = (sources.get(from) || []).filter((at) => now - at < window);
  if (recent.length >= limit) {
    sources.set(from, recent);
    return Math.ceil((recent[0] + window - now) / 1000);
  }
  recent.push(now);
  sources.set(from, recent);
  if (sources.size > 10000) {  // many sources, each gone quiet: forget those outside the window
    for (const [key, times] of sources) {
      if (now - times[times.length - 1] >= window) {
        sources.delete(key);
      }
    }
  }
  return 0;
}

// A counted claim that got no place (none free, server busy): a person asking again is not held back by it.
function refund(from, at) {
  const times = sources.get(from) || [];
  const index = times.indexOf(at);
  if (index >= 0) {
    times.splice(index, 1);
  }
}

function refuse(res, status, reason, why, subject) {
  const n = ++counter.refused;
  if (n <= 50 || n % LOG_EVERY === 0) {
    console.log(`[dialeval-router] refused POST /request_agent: ${why} (registration ${JSON.stringify(subject).slice(0, 80)}, refusal ${n})`);
  }
  return res.status(status).json(door.agent_refusal(reason));
}

function given_out(agent_id, claim) {
  claim.agent_id = agent_id;
  byAgent.set(agent_id, claim);
  if (CONFIG.first_socket_seconds > 0) {
    givenAt.set(agent_id, Date.now());
  }
}

// Express middleware of POST /request_agent, before dialeval_guard.js's registration_check (which refuses
// a malformed body: those are passed on untouched).
function request_check(req, res, next) {
  const data = req.body !== null && typeof req.body === "object" ? req.body.provider_data : undefined;
  if (data === null || typeof data !== "object" || typeof data.agent_registration_id !== "string") {
    return next();
  }
  const registration = data.agent_registration_id;
  const worker = typeof data.worker_name === "string" ? data.worker_name : null;
  const secret = data[SECRET_FIELD];
  delete data[SECRET_FIELD];
  delete data[CLAIM_FIELD];
  data[SOURCE_FIELD] = source(req); // whatever the page put there is replaced
  let claim = claims.get(registration);
  let issued = null;
  const fresh = claim === undefined;
  const bound = fresh && worker !== null ? workers.get(worker) : fresh ? undefined : claim.hash;
  if (bound !== undefined && !holds(bound, secret)) {
    return refuse(res, 403, HELD, `${fresh ? "worker" : "registration"} held by another page (no or wrong secret)`,
                  registration);
  }
  const freshWorker = worker !== null && !workers.has(worker);
  const from = addresses.source_of(req);
  const at = Date.now();
  if (fresh) {
    const limit = place_limit(req);
    const wait = wait_for_claim(from, limit, at);
    if (wait > 0) {
      res.set("Retry-After", String(wait));
      return refuse(res, 429, BUSY, `more than ${limit} new registrations from ${from} ` +
                    `in ${CONFIG.window_seconds} s`, registration);
    }
    const own = bound !== undefined || (typeof secret === "string" && SECRET_FORM.test(secret)) ? secret : null;
    issued = own === null ? crypto.randomBytes(32).toString("hex") : null;
    claim = { hash: digest(own || issued), agent_id: null };
    claims.set(registration, claim);
    if (freshWorker) {
      workers.set(worker, claim.hash);
    }
  }
  data[CLAIM_FIELD] = claim.hash;
  const json = res.json.bind(res);
  res.json = (packet) => {
    const agent_id = packet && packet.data ? packet.data.agent_id : null;
    if (typeof agent_id === "string" && agent_id !== "") {
      given_out(agent_id, claim);
      if (issued !== null) {
        packet.data[ISSUED_FIELD] = issued;
      }
    } else if (fresh && claim.agent_id === null && claims.get(registration) === claim) {
      claims.delete(registration); // no place given (none free, busy): the registration stays unbound
      refund(from, at);
      if (freshWorker && workers.get(worker) === claim.hash) {
        workers.delete(worker);
      }
    }
    return json(packet);
  };
  return next();
}

// Express middleware of POST /submit_onboarding: the unit's agent it answers with keeps the onboarding
// agent's claim (the page's token is checked by dialeval_guard.js's post_check after this).
function onboarding_check(req, res, next) {
  const fields = req.body !== null && typeof req.body === "object" ? req.body.provider_data : undefined;
  const claim = fields !== null && typeof fields === "object" ? byAgent.get(fields.USED_AGENT_ID) : undefined;
  if (claim !== undefined) {
    const json = res.json.bind(res);
    res.json = (packet) => {
      const agent_id = packet && packet.data ? packet.data.agent_id : null;
      if (typeof agent_id === "string" && agent_id !== "" && agent_id !== fields.USED_AGENT_ID) {
        given_out(agent_id, claim);
      }
      return json(packet);
    };
  }
  return next();
}

// A page's socket announced this agent (its token checked by dialeval_guard.js's admit).
function connected(agent_id) {
  givenAt.delete(agent_id);
}

// Whether the router should report this agent disconnected: given out longer than first_socket_seconds ago
// and its page never opened a socket (server.js's ensure_live_connection, for an agent it never heard from).
function abandoned(agent) {
  const at = givenAt.get(agent.agent_id);
  if (at === undefined || agent.is_alive || Date.now() - at < CONFIG.first_socket_seconds * 1000) {
    return false;
  }
  givenAt.delete(agent.agent_id);
  console.log(`[dialeval-router] agent ${agent.agent_id}: no socket within ${CONFIG.first_socket_seconds} s, its place is given back`);
  return true;
}

module.exports = { abandoned, connected, onboarding_check, request_check };
