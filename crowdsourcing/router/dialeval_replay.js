/* What the router sent a page, kept until the page has it (issue 50, item 13). parlai_dialeval/compat/mephisto_router.py
 * hooks this module into Mephisto's server.js.
 *
 * A socket that is dropping (a lost connection, a phone switching networks) still looks open to the router for a
 * while: what it sends then (a bot's reply) is lost, and the page, which asked for nothing when it reconnected,
 * waited for a reply that had come. So each live update for a page is numbered per agent (`dialeval_seq`) and kept;
 * the page says on each heartbeat how far it has everything (`dialeval_seen`, frontend/src/components/transport.js)
 * and what it has is forgotten; the `alive` of the page's next socket says the same, and everything after it is sent
 * again into that socket. The page drops a number it already had. A page that loads afresh sends no number: the
 * server gives it the whole task so far with its agent, and nothing is replayed.
 *
 * Bounded: per agent the newest KEEP_PACKETS packets and KEEP_BYTES bytes, and an agent whose page has said nothing
 * for FORGET_AFTER_MS is forgotten (its page is gone; if it comes back it loads afresh).
 */
"use strict";

const SEQ = "dialeval_seq"; // router -> page, on a live update
const SEEN = "dialeval_seen"; // page -> router, in a heartbeat's or an alive's data
const KEEP_PACKETS = 1000;
const KEEP_BYTES = 2 * 1024 * 1024;
const FORGET_AFTER_MS = 30 * 60 * 1000;
const SIZE = Symbol("bytes"); // on a kept packet: its size (a Symbol key is never serialised)

const kept = new Map(); // agent id -> { next, bytes, heard (ms), packets: [packet ...] oldest first }

function entry_of(agent_id, now) {
  let entry = kept.get(agent_id);
  if (entry === undefined) {
    entry = { next: 1, bytes: 0, heard: now, packets: [] };
    kept.set(agent_id, entry);
    if (kept.size % 100 === 0) {
      forget_silent(now);
    }
  }
  return entry;
}

function forget_silent(now) {
  for (const [agent_id, entry] of kept) {
    if (now - entry.heard > FORGET_AFTER_MS) {
      kept.delete(agent_id);
    }
  }
}

function drop_through(entry, seen) {
  while (entry.packets.length > 0 && entry.packets[0][SEQ] <= seen) {
    entry.bytes -= entry.packets.shift()[SIZE];
  }
}

// A live update about to go to a page: numbered and kept.
function number(packet) {
  if (packet.packet_type !== "client_bound_live_update" || typeof packet.subject_id !== "string") {
    return;
  }
  const entry = entry_of(packet.subject_id, Date.now());
  packet[SEQ] = entry.next++;
  packet[SIZE] = Buffer.byteLength(JSON.stringify(packet.data || null));
  entry.packets.push(packet);
  entry.bytes += packet[SIZE];
  while (entry.packets.length > KEEP_PACKETS || (entry.bytes > KEEP_BYTES && entry.packets.length > 1)) {
    entry.bytes -= entry.packets.shift()[SIZE];
  }
}

function seen_of(packet) {
  const seen = packet.data !== null && typeof packet.data === "object" ? packet.data[SEEN] : undefined;
  return Number.isSafeInteger(seen) && seen >= 0 ? seen : null;
}

// A page's heartbeat (its token checked): what it has is forgotten.
function heard(packet) {
  const entry = kept.get(packet.subject_id);
  if (entry === undefined) {
    return;
  }
  entry.heard = Date.now();
  const seen = seen_of(packet);
  if (seen !== null) {
    drop_through(entry, seen);
  }
}

// A page's new socket is linked to its agent (`alive`, token checked): what the page has not had goes to ``send``, in
// order. An alive without a number is a page loaded afresh, which the server gave everything so far: nothing is sent
// again, and what was kept is forgotten (the page counts from the next number it gets).
function resume(packet, send) {
  const entry = kept.get(packet.subject_id);
  const seen = seen_of(packet);
  if (entry !== undefined && seen === null) {
    entry.packets = [];
    entry.bytes = 0;
  }
  if (entry === undefined || seen === null) {
    return 0;
  }
  entry.heard = Date.now();
  drop_through(entry, seen);
  for (const kept_packet of entry.packets) {
    send(kept_packet);
  }
  return entry.packets.length;
}

// A unit submitted: nothing more for its page.
function forget(agent_id) {
  kept.delete(agent_id);
}

module.exports = { forget, heard, number, resume, SEQ };
