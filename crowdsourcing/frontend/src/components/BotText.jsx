// A chatbot's text as safe markdown: bold, italics, lists, code, tables and quotes, as chat models write them
// ("**Preheat the oven**" showed raw). markdown-it (npm, in the lockfile) with HTML off, so a tag in a reply is
// shown as text and never interpreted; links, images and link references off too, so a reply offers the
// participant nothing to click or load. Its own direction (dir="auto", as <bdi> gives a participant's text).
// The dashboard renders the same subset (parlai_dialeval/dashboard/markdown.py).
import React from "react";
import MarkdownIt from "markdown-it";

const markdown = new MarkdownIt("default", { html: false, linkify: false, typographer: false, breaks: true }).disable([
  "link",
  "image",
  "autolink",
  "reference",
]);

export function BotText({ text, testid }) {
  const html = markdown.render(typeof text === "string" ? text : String(text === undefined || text === null ? "" : text));
  return <div className="dialeval-md" dir="auto" data-testid={testid} dangerouslySetInnerHTML={{ __html: html }} />;
}
