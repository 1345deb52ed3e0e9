/* Prolific wrapper for Mephisto's worker page (parlai_dialeval). ProlificProvider renders a copy of this
 * file for each launch, filling in the address participants go back to; the copy is what the router serves.
 * Participants arrive from Prolific with PROLIFIC_PID, STUDY_ID and SESSION_ID in the URL. The completion
 * code is not here: the server completes the submission on Prolific once it has accepted the work. */
var DIALEVAL_PROLIFIC = { completionUrl: "__COMPLETION_URL__" };

function getProlificParam(name) {
  return new URLSearchParams(window.location.search).get(name);
}

function getWorkerName() {
  return getProlificParam("PROLIFIC_PID");
}

function getAssignmentId() {
  // A Prolific submission (SESSION_ID) plays the part of an MTurk assignment.
  return getProlificParam("SESSION_ID");
}

function getAgentRegistration() {
  return {
    worker_name: getWorkerName(),
    agent_registration_id: getAssignmentId() + "-" + getWorkerName(),
    assignment_id: getAssignmentId(),
    study_id: getProlificParam("STUDY_ID"),
    provider_type: "prolific",
  };
}

function handleSubmitToProvider(task_data) {
  // Called once the work is sent: back to Prolific, where the server has completed (or is completing) it.
  window.location.assign(DIALEVAL_PROLIFIC.completionUrl);
  return true;
}

// Mephisto's pages read and watch settings through window._MEPHISTO_CONFIG_ (get, set, EVENT_EMITTER).
var events = {
  handlers: {},
  emit: function (name) {
    var args = Array.prototype.slice.call(arguments, 1);
    (this.handlers[name] || []).slice().forEach(function (fn) { fn.apply(null, args); });
  },
  on: function (name, fn) {
    var self = this;
    (self.handlers[name] = self.handlers[name] || []).push(fn);
    return function () { self.handlers[name] = self.handlers[name].filter(function (h) { return h !== fn; }); };
  },
};

window._MEPHISTO_CONFIG_ = window._MEPHISTO_CONFIG_ || {};
window._MEPHISTO_CONFIG_.EVENT_EMITTER = events;
window._MEPHISTO_CONFIG_.get = function (property) {
  if (!(property in window._MEPHISTO_CONFIG_)) throw new Error(property + " does not exist in window.MEPHISTO_CONFIG");
  return window._MEPHISTO_CONFIG_[property];
};
window._MEPHISTO_CONFIG_.set = function (property, value) {
  window._MEPHISTO_CONFIG_[property] = value;
  events.emit(property, value);
};
window._MEPHISTO_CONFIG_.AUTO_SUBMIT_ERRORS = false;
window._MEPHISTO_CONFIG_.ADD_ERROR_HANDLING = false;
window._MEPHISTO_CONFIG_.ERROR_REPORT_TO_EMAIL = null;
