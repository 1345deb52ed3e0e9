// The page's side of the router's session binding (crowdsourcing/router/dialeval_guard.js): the router
// answers POST /request_agent (and /submit_onboarding) with agent_details carrying `agent_token`, and
// refuses every later packet or POST of that agent without it. mephisto-task 2.0.4 knows nothing of the
// token, so this module adds it underneath: to each websocket packet the page sends (a WebSocket
// subclass) and to each POST body naming USED_AGENT_ID (an interceptor on mephisto-task's axios).
// Importing it once (components/index.js) installs both before any task connects.
import { axiosInstance } from "mephisto-task";

const tokens = new Map(); // agent id -> token issued by the router

function remember(packet) {
  const data = packet && packet.data;
  if (data && typeof data.agent_id === "string" && typeof data.agent_token === "string") {
    tokens.set(data.agent_id, data.agent_token);
  }
}

function withToken(fields) {
  if (fields && typeof fields === "object" && tokens.has(fields.USED_AGENT_ID)) {
    return { ...fields, agent_token: tokens.get(fields.USED_AGENT_ID) };
  }
  return fields;
}

axiosInstance.interceptors.request.use((config) => {
  const body = config.data;
  if (body && typeof body === "object") {
    config.data = body.provider_data && body.provider_data.USED_AGENT_ID !== undefined
      ? { ...body, provider_data: withToken(body.provider_data) }
      : withToken(body);
  }
  return config;
});

axiosInstance.interceptors.response.use((response) => {
  remember(response.data);
  return response;
});

const PageSocket = class extends window.WebSocket {
  send(text) {
    let packet;
    try {
      packet = JSON.parse(text);
    } catch (error) {
      return super.send(text);
    }
    if (packet && tokens.has(packet.subject_id)) {
      packet.agent_token = tokens.get(packet.subject_id);
    }
    return super.send(JSON.stringify(packet));
  }
};

if (!window.WebSocket.dialevalTokens) {
  PageSocket.dialevalTokens = true;
  window.WebSocket = PageSocket;
}
