// ChatEval A/B next-utterance test (Lee et al. 2020, 2.1 + Appendix A): a static task. initialTaskData
// holds the question and `shown` items (context, response_a, response_b; A/B order already
// randomised, identical pairs never sent). The worker answers A, B or tie for each and submits
// {answers: {item_id: {choice, duration}}}.
import React from "react";
import ReactDOM from "react-dom";
import { useMephistoTask } from "mephisto-task";
import { TaskShell } from "../../components";

const OPTIONS = [
  ["a", "A is better"],
  ["b", "B is better"],
  ["tie", "Tie"],
];

function Item({ item, index, answer, onChange }) {
  const shownAt = React.useRef(Date.now());
  return (
    <div className="card p-2 mb-3" data-testid="ab-item">
      <div className="text-muted">Conversation {index + 1}</div>
      {item.context.map((turn, i) => (
        <div key={i}>{turn}</div>
      ))}
      <div className="mt-2">
        <b>A:</b> <span data-testid="response-a">{item.response_a}</span>
      </div>
      <div>
        <b>B:</b> <span data-testid="response-b">{item.response_b}</span>
      </div>
      <div className="mt-1">
        {OPTIONS.map(([value, label]) => (
          <label key={value} className="mr-3">
            <input
              type="radio"
              name={"ab-" + item.item_id}
              data-testid={"ab-" + index + "-" + value}
              checked={answer === value}
              onChange={() => onChange(value, (Date.now() - shownAt.current) / 1000)}
            />{" "}
            {label}
          </label>
        ))}
      </div>
    </div>
  );
}

function AbApp() {
  const mephisto = useMephistoTask();
  const { initialTaskData, handleSubmit } = mephisto;
  const [answers, setAnswers] = React.useState({});
  const [submitted, setSubmitted] = React.useState(false);
  const items = (initialTaskData && initialTaskData.shown) || [];
  let body;
  if (submitted) {
    body = <div className="alert alert-success" data-testid="done">Thank you, your answers were submitted.</div>;
  } else if (!initialTaskData) {
    body = <div className="alert alert-secondary">Loading...</div>;
  } else {
    const complete = items.every((item) => answers[item.item_id]);
    body = (
      <div>
        <p>
          <b data-testid="question">{initialTaskData.question}</b>
        </p>
        {items.map((item, index) => (
          <Item
            key={item.item_id}
            item={item}
            index={index}
            answer={answers[item.item_id] && answers[item.item_id].choice}
            onChange={(choice, duration) => setAnswers({ ...answers, [item.item_id]: { choice, duration } })}
          />
        ))}
        <button
          className="btn btn-primary"
          data-testid="submit-ab"
          disabled={!complete}
          onClick={() => {
            setSubmitted(true);
            handleSubmit({ answers });
          }}
        >
          Submit
        </button>
      </div>
    );
  }
  const instructions = (
    <p>
      Each box shows the start of a conversation and two possible next replies, A and B. Choose the better reply, or Tie
      if they are equally good (or equally bad).
    </p>
  );
  return (
    <TaskShell mephisto={{ ...mephisto, inactiveText: null }} title="Which reply is better?" instructions={instructions}>
      {body}
    </TaskShell>
  );
}

ReactDOM.render(<AbApp />, document.getElementById("app"));
