// The instructions of Ji et al. (2022), Figure 5, with the number of chatbots and the minimum
// number of inputs taken from the task's configuration; a three-line summary first, the paper's full
// list folded under it (thirteen points at once were more than people read).
import React from "react";

export function Instructions({ numSlots, minInputs }) {
  return (
    <div data-testid="instructions">
      <p>
        Talk with {numSlots} chatbots, one at a time, as you would with a person. For each: choose a topic, type at least {minInputs}{" "}
        messages, then say what you think of the chatbot.
      </p>
      <details>
        <summary>All the instructions</summary>
        <FullInstructions numSlots={numSlots} minInputs={minInputs} />
      </details>
    </div>
  );
}

function FullInstructions({ numSlots, minInputs }) {
  return (
    <ol className="small">
      <li>Your task is to have {numSlots} conversations with a chatbot, and a different chatbot will talk to you in each conversation.</li>
      <li>Before each conversation, you should think of a topic to talk about with the chatbot (your choice of topic). You will be asked to enter this topic before the conversation starts.</li>
      <li>The current topic will be displayed to you throughout the conversation.</li>
      <li>If the chatbot changes the topic to a new one, you should record this by updating the conversation topic using the Topic button (bottom left).</li>
      <li>You are also allowed to change the topic, you should use the same button to do this (bottom left).</li>
      <li>At the end of each conversation, you should tell us what you think about the chatbot.</li>
      <li>In each conversation, you should type in a minimum of {minInputs} inputs/sentences.</li>
      <li>
        The purpose of these HITs where you will generate conversations with chatbots is to test how realistic their conversations are with users.
        In order for your data to be useful to us we require that your half of the conversation is also realistic. For example, your data will not be
        useful to us if you do the following: User: Hi / Bot: Hi / User: Hi / Bot: Hi ... and so on.
      </li>
      <li>
        Another example, if you are too repetitive or your responses are not appropriate given what the chatbot has just said, this will not be a
        useful test for them. For example, the following conversation is not ok: User: Hi / Bot: Hi / User: wow (not appropriate response) / Bot: I saw
        a good movie last night / User: wow (repetitive) / Bot: Do you like football? / User: I have two children and one dog. (not appropriate
        response) ... and so on.
      </li>
      <li>
        We need realistic conversations, so please do your best to talk to the bot as if the bot was another person you actually want to talk to.
        Obvious attempts to game the process and ones that don&apos;t make a real effort will unfortunately be rejected.
      </li>
      <li>The chatbot may take a few seconds to respond, please be patient.</li>
      <li>Please use Chrome and avoid special symbols if possible.</li>
      <li>There is a feedback box at the end of the HIT. If you encounter any problems, please enter them in this box.</li>
    </ol>
  );
}
