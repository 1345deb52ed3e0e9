/* Whose address a request comes from (docs/security.md, "Whose address"), for the budgets of dialeval_door.js and
 * the places of dialeval_claims.js. Settings in dialeval_door.json (parlai_dialeval/compat/mephisto_door.py
 * door_config, from mephisto.blueprint.router_trusted_proxies, router_proxy_header and router_lab_addresses).
 *
 * The source is the peer's address; a forwarding header is read only from a peer the researcher named as a
 * proxy, and then only right of the last named proxy: before issue 52 any loopback peer's X-Forwarded-For was
 * believed, so one client rotating it opened 300 of 300 sockets.
 */
"use strict";

const fs = require("fs");
const net = require("net");
const path = require("path");

const CONFIG = JSON.parse(fs.readFileSync(path.join(__dirname, "dialeval_door.json"), "utf8"));
// Whose word on the client's address is taken: by default nobody's, so a header a client writes itself never
// names its source.
const TRUSTED_PROXIES = address_list(CONFIG.trusted_proxies);
const PROXY_HEADER = String(CONFIG.proxy_header || "x-forwarded-for").toLowerCase();
const PROXY_HOPS_READ = 32; // addresses of a forwarding header read at most (from its right end)
// The lab's own addresses: its participants share one address, so no per-source budget applies to them
// (requests, sockets; places in dialeval_claims.js take router_lab_places).
const LAB_ADDRESSES = address_list(CONFIG.lab_addresses);

// A net.BlockList of addresses and networks ("192.0.2.7", "10.0.0.0/8", "2001:db8::/32"), checked by the Python
// side before the router is built (compat/mephisto_door.py door_config).
function address_list(entries) {
  const list = new net.BlockList();
  for (const entry of entries || []) {
    const [address, bits] = String(entry).split("/");
    const type = net.isIPv6(address) ? "ipv6" : "ipv4";
    if (bits === undefined) {
      list.addAddress(address, type);
    } else {
      list.addSubnet(address, Number(bits), type);
    }
  }
  return list;
}

// An address as written by a socket or a proxy, plain: "::ffff:192.0.2.7" -> "192.0.2.7", "[2001:db8::1]:443" ->
// "2001:db8::1", "192.0.2.7:5000" -> "192.0.2.7", a zone removed; "" when it is no IP address ("unknown", "_hidden").
function plain_address(text) {
  let address = String(text || "").trim().replace(/^"|"$/g, "");
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracketed) {
    address = bracketed[1];
  } else if (/^[0-9.]+:\d+$/.test(address)) {
    address = address.slice(0, address.lastIndexOf(":"));
  }
  address = address.split("%")[0];
  if (address.toLowerCase().startsWith("::ffff:") && net.isIPv4(address.slice(7))) {
    address = address.slice(7);
  }
  return net.isIP(address) ? address : "";
}

function listed(list, address) {
  const version = net.isIP(address);
  return version !== 0 && list.check(address, version === 4 ? "ipv4" : "ipv6");
}

// The addresses the forwarding header names, left (the first client) to right (the last proxy's peer), the last
// PROXY_HOPS_READ at most. `Forwarded` (RFC 7239): the for= of each element; any other header (X-Forwarded-For,
// X-Real-IP, CF-Connecting-IP): a comma-separated list. A node joins repeated headers with ", ".
function forwarded_chain(req) {
  const value = req.headers[PROXY_HEADER];
  const text = Array.isArray(value) ? value.join(",") : String(value || "");
  const items = text.split(",").slice(-PROXY_HOPS_READ);
  if (PROXY_HEADER !== "forwarded") {
    return items.map(plain_address);
  }
  return items.map((element) => {
    const pair = element.split(";").map((p) => p.trim()).find((p) => p.toLowerCase().startsWith("for="));
    return pair === undefined ? "" : plain_address(pair.slice(4));
  });
}

// The address a request comes from: its peer, unless the peer is a proxy the researcher named; then, walking the
// proxy's header from its right end (the address each proxy saw), the first address that is not a named proxy.
// Entries left of it were written by the client (X-Forwarded-For from a browser or a script goes through
// cloudflared, ngrok and most proxies, which append to it) and are never read. An entry that is no address
// (`unknown`, an obfuscated name) stops the walk at the proxy that wrote it.
function client_address(req) {
  let address = plain_address(req.socket.remoteAddress) || String(req.socket.remoteAddress || "");
  if (!listed(TRUSTED_PROXIES, address)) {
    return address;
  }
  const chain = forwarded_chain(req);
  for (let i = chain.length - 1; i >= 0 && listed(TRUSTED_PROXIES, address); i--) {
    if (chain[i] === "") {
      break;
    }
    address = chain[i];
  }
  return address;
}

// The key of a source's budgets: an IPv4 address, or an IPv6 address's /64 (one host may hold a whole /64).
function source_key(address) {
  if (!net.isIPv6(address)) {
    return address;
  }
  const [head, tail] = address.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return groups.slice(0, 4).join(":") + "::/64";
}

function source_of(req) {
  return source_key(client_address(req));
}

// Whether the request comes from the lab's own address (router_lab_addresses): no per-source budget there.
function from_lab(req) {
  return listed(LAB_ADDRESSES, client_address(req));
}

// Whether ``address`` (as client_address gives it) is one of the lab's own.
function lab_address(address) {
  return listed(LAB_ADDRESSES, address);
}

module.exports = { client_address, from_lab, lab_address, source_key, source_of };
