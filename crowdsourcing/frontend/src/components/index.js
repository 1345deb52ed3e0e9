// Shared worker-page components: import from "../../components" in src/tasks/<task>/index.jsx.
import "./transport"; // the router's session tokens on every packet and POST (first: before any task connects)
import "bootstrap/dist/css/bootstrap.min.css";
import "bootstrap-chat/styles.css";
import "./styles.css";

export { useLiveTask, useSendOnce } from "./useLiveTask";
export { ChatLog, StreamingReply } from "./ChatLog";
export { ContinuousSlider } from "./ContinuousSlider";
export { TaskShell, SubmitPanel, SubmitOnceButton } from "./TaskShell";
export { SubmitOutcome, useSubmitWork } from "./Submit";
export { useDraft, isPercent, isText } from "./pageStore";
export { MessageInput } from "./MessageInput";
export { t, tList, useLanguage, serverText } from "./i18n";
export { usePageOptions } from "./pageOptions";
export { BotText } from "./BotText";
export { TurnHistory } from "./TurnHistory";
export { ScreenedOut } from "./Onboarding";
export { useTextRecord, useScreenRecord } from "./answerRecord";
export { AttentionInstruction } from "./Checks";
