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
 * A way back for a participant whose browser died (issue 50, item 10): once the page of a registration has been
 * silent (no heartbeat, no socket) for `reclaim_seconds`, a request naming that registration from another browser is
 * let in with the resume code the first page showed (`dialeval_resume_code`, derived from the registration's claim),
 * or, where the provider verified the identity itself (`reclaim_by_identity`: Prolific's PROLIFIC_PID and SESSION_ID,
 * checked against Prolific at the first arrival), without one. The registration is then bound to the new page's
 * secret and its silence counted afresh; Mephisto's reconnect path gives the new page the same agent, its work so
 * far included. Before that time, or with a wrong code (at most `MAX_CODE_TRIES` per registration), nothing.
 * docs/security.md ("Identity and places") weighs it.
 *
 * Places cannot be taken in bulk: a source (an IPv4 address, an IPv6 /64, as dialeval_sources.js's source_of names it)
 * takes at most `claims_per_source` new registrations per `window_seconds` (a share of the study's places,
 * compat/mephisto_router.py claims_per_source), the lab's own addresses `lab_places` (0: no limit); and an agent whose page opens no socket within
 * `first_socket_seconds` of being given out is reported disconnected, which gives its unit back (live tasks
 * only: a static task's page never opens one, and there it is 0, off).
 *
 * A source whose new registrations the crowd provider refused `refusals_per_source` times within a minute (made-up
 * Prolific sessions: compat/mephisto_arrivals.py marks such an answer `dialeval_refused`) is refused here for the rest
 * of that minute, before the server: each refusal cost the server a check (the Prolific flood of issue 52: 26 a
 * second from one address took a fifth of a core), and the provider would refuse them all anyway (its budget of
 * checks per source is as many a minute). Honest arrivals are not refused by the provider, so they are not counted.
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
// the texts of the way back (their translations: frontend/src/i18n, "server.*")
const HELD_RECLAIMABLE = "This study is already open for you in another browser or tab: please go on there.";
const RECLAIM_WAIT = "This study was open for you in another browser a moment ago. If that browser has closed, " +
  "try again in {seconds} seconds.";
const RECLAIM_WRONG = "That code is not the one this study showed you. Please check it and try again.";
const CODE_FIELD = "dialeval_resume_code"; // page -> router, in provider_data; router -> page, in agent_details
const RECLAIM_FIELD = "dialeval_reclaim"; // router -> a refused page: the way back is open to it (the code form)
// router -> a page refused as too soon (RECLAIM_WAIT): the seconds it waits before asking again by itself, its code
// kept (frontend/src/components/Resume.jsx ReclaimWait); asking again then costs none of the registration's code tries
const WAIT_FIELD = "dialeval_reclaim_wait";
const MAX_CODE_TRIES = 10; // wrong codes a registration takes; then only the page holding its secret gets in
const CODE_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"; // no 0/O, 1/I: read off a screen and typed back
const BUSY = "Too many people have just started this study from your network. Please try again in a few minutes.";
const LOG_EVERY = 100; // after the first 50 refusals, one line in LOG_EVERY: a flood must not fill the disk
const REFUSED_FIELD = "dialeval_refused"; // server -> router: the provider refused the identity (mephisto_arrivals.py)
const REFUSALS_WINDOW_MS = 60 * 1000;

const claims = new Map(); // registration -> { hash (hex), agent_id }
const workers = new Map(); // worker name -> hash of the secret of its first registration
const byAgent = new Map(); // agent id -> its claim (an onboarding agent's claim passes to its unit's agent)
const givenAt = new Map(); // agent id -> ms it was given to a page; removed by that page's first alive
const sources = new Map(); // source -> ms of its new claims within the window
const refusals = new Map(); // source -> ms of the provider's refusals of its new registrations within the minute
const heardAt = new Map(); // agent id -> ms its page last spoke (alive, heartbeat)
const codeTries = new Map(); // registration -> wrong resume codes given
const startedAt = Date.now(); // a claim carried over from an interrupted run: its page silent since the router started
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
  const recent = recent_times(sources, from, window, now);
  const wait = seconds_until_room(recent, limit, window, now);
  if (wait === 0) {
    recent.push(now);
  }
  return wait;
}

// Seconds until ``recent`` (ms times within ``window`` before ``now``, oldest first) holds fewer than ``limit``;
// 0 when it does now.
function seconds_until_room(recent, limit, window, now) {
  return recent.length >= limit ? Math.ceil((recent[0] + window - now) / 1000) : 0;
}

// The ms times of ``list`` within ``window`` ms before ``now`` (older ones dropped); ``map`` is pruned of sources
// gone quiet once it holds more than 10,000 (a spoofing flood cannot grow it without bound).
function recent_times(map, from, window, now) {
  const recent = (map.get(from) || []).filter((at) => now - at < window);
  map.set(from, recent);
  if (map.size > 10000) {
    for (const [key, times] of map) {
      if (key !== from && (times.length === 0 || now - times[times.length - 1] >= window)) {
        map.delete(key);
      }
    }
  }
  return recent;
}

// A counted claim that got no place (none free, server busy): a person asking again is not held back by it.
function refund(from, at) {
  const times = sources.get(from) || [];
  const index = times.indexOf(at);
  if (index >= 0) {
    times.splice(index, 1);
  }
}

// The code a registration's page shows, for the way back: 8 characters of the SHA-256 of the registration and its
// claim (the hash of the page's secret, which never leaves the router and the server), as ABCD-EFGH.
function resume_code(registration, hash) {
  const bytes = crypto.createHash("sha256").update(`resume:${registration}:${hash}`).digest();
  const letters = Array.from(bytes.subarray(0, 8), (byte) => CODE_ALPHABET[byte % CODE_ALPHABET.length]).join("");
  return letters.slice(0, 4) + "-" + letters.slice(4);
}

function same_code(given, expected) {
  const typed = Buffer.from(typeof given === "string" ? given.toUpperCase().replace(/[^0-9A-Z]/g, "") : "");
  const wanted = Buffer.from(expected.replace("-", ""));
  return typed.length === wanted.length && crypto.timingSafeEqual(typed, wanted);
}

// Seconds the page holding ``claim`` has been silent.
function silent_seconds(claim, now) {
  const heard = claim.agent_id !== null ? heardAt.get(claim.agent_id) : undefined;
  return (now - (heard !== undefined ? heard : claim.agent_id !== null ? now : startedAt)) / 1000;
}

// The way back (see the top of this file): null when ``data`` may take over ``claim`` of ``registration`` now (it is
// then bound to the secret the request brings), else [HTTP status, reason, what to log, seconds to wait (too soon)].
function reclaim_refusal(registration, claim, data, now) {
  if (!(CONFIG.reclaim_seconds > 0)) {
    return [403, HELD, "registration held by another page (no or wrong secret)"];
  }
  const silent = silent_seconds(claim, now);
  const code = data[CODE_FIELD];
  if (silent < CONFIG.reclaim_seconds) {
    const wait = Math.ceil(CONFIG.reclaim_seconds - silent);
    return code === undefined && !CONFIG.reclaim_by_identity
      ? [403, HELD_RECLAIMABLE, "registration held by another page (no or wrong secret)"]
      : [403, RECLAIM_WAIT.replace("{seconds}", String(wait)), `way back asked while its page was heard ${Math.floor(silent)} s ago`,
        wait];
  }
  if (CONFIG.reclaim_by_identity) {
    return null;
  }
  const tries = codeTries.get(registration) || 0;
  if (code === undefined || tries >= MAX_CODE_TRIES) {
    return [403, tries >= MAX_CODE_TRIES ? HELD : HELD_RECLAIMABLE, tries >= MAX_CODE_TRIES
      ? "registration held by another page (way back closed after wrong codes)" : "registration held by another page (no or wrong secret)"];
  }
  if (!same_code(code, resume_code(registration, claim.hash))) {
    codeTries.set(registration, tries + 1);
    return [403, RECLAIM_WRONG, `wrong resume code (${tries + 1} of ${MAX_CODE_TRIES})`];
  }
  return null;
}

// A registration taken back by a new page: bound to its secret (its worker too), its silence counted afresh.
function rebind(registration, worker, claim, secret, now) {
  const old = claim.hash;
  claim.hash = digest(secret);
  if (worker !== null && workers.get(worker) === old) {
    workers.set(worker, claim.hash);
  }
  if (claim.agent_id !== null) {
    heardAt.set(claim.agent_id, now);
  }
  codeTries.delete(registration);
  console.log(`[dialeval-router] registration ${JSON.stringify(registration).slice(0, 80)} taken back by a new page ` +
              `after ${CONFIG.reclaim_by_identity ? "its identity was verified" : "its resume code"}`);
}

function refuse(res, status, reason, why, subject, wait) {
  const n = ++counter.refused;
  if (n <= 50 || n % LOG_EVERY === 0) {
    console.log(`[dialeval-router] refused POST /request_agent: ${why} (registration ${JSON.stringify(subject).slice(0, 80)}, refusal ${n})`);
  }
  // agent_details-shaped, so that mephisto-task shows the reason on the page (transport.js passes it on)
  const answer = door.agent_refusal(reason);
  if (CONFIG.reclaim_seconds > 0 && reason !== HELD && !CONFIG.reclaim_by_identity && status === 403) {
    answer.data[RECLAIM_FIELD] = "code"; // the page offers the form for the code
  }
  if (wait !== undefined) {
    answer.data[WAIT_FIELD] = wait;
  }
  return res.status(status).json(answer);
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
  const at = Date.now();
  delete data[SECRET_FIELD];
  delete data[CLAIM_FIELD];
  data[SOURCE_FIELD] = addresses.source_of(req); // whatever the page put there is replaced
  let claim = claims.get(registration);
  let issued = null;
  const fresh = claim === undefined;
  const bound = fresh && worker !== null ? workers.get(worker) : fresh ? undefined : claim.hash;
  if (bound !== undefined && !holds(bound, secret)) {
    const refusal = fresh ? [403, HELD, "worker held by another page (no or wrong secret)"]
      : reclaim_refusal(registration, claim, data, at);
    if (refusal !== null) {
      delete data[CODE_FIELD];
      return refuse(res, refusal[0], refusal[1], refusal[2], registration, refusal[3]);
    }
    if (typeof secret !== "string" || !SECRET_FORM.test(secret)) {
      issued = crypto.randomBytes(32).toString("hex");
    }
    rebind(registration, worker, claim, issued || secret, at);
  }
  delete data[CODE_FIELD];
  const freshWorker = worker !== null && !workers.has(worker);
  const from = addresses.source_of(req);
  if (fresh && CONFIG.refusals_per_source > 0 && !addresses.from_lab(req)) {
    const refused = recent_times(refusals, from, REFUSALS_WINDOW_MS, at);
    const wait = seconds_until_room(refused, CONFIG.refusals_per_source, REFUSALS_WINDOW_MS, at);
    if (wait > 0) {
      res.set("Retry-After", String(wait));
      return refuse(res, 429, BUSY, `the provider refused ${refused.length} new registrations from ${from} ` +
                    "within a minute", registration);
    }
  }
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
    if (packet && packet.data && packet.data[REFUSED_FIELD] !== undefined) {
      delete packet.data[REFUSED_FIELD]; // for the router alone
      if (fresh && CONFIG.refusals_per_source > 0) {
        const now = Date.now();
        recent_times(refusals, from, REFUSALS_WINDOW_MS, now).push(now);
      }
    }
    if (typeof agent_id === "string" && agent_id !== "") {
      given_out(agent_id, claim);
      if (issued !== null) {
        packet.data[ISSUED_FIELD] = issued;
      }
      if (CONFIG.reclaim_seconds > 0) {
        packet.data[CODE_FIELD] = resume_code(registration, claim.hash);
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
  heardAt.set(agent_id, Date.now());
}

// A page's heartbeat for this agent (token checked): it is there.
function heard(agent_id) {
  heardAt.set(agent_id, Date.now());
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

module.exports = { abandoned, connected, heard, onboarding_check, request_check };
